"""Finding critical regions in a function and deciding whether each can be extracted.

A region starts at a lock statement and ends where the lock is released on every path: at the
unlock statement in the same block, or at a statement all of whose paths release it (an `if`
whose branches both unlock, a `switch` whose cases do).  Every other unlock inside the region
is an *early exit*: the statements after it in its block, up to the jump that ends them, are
its *tail* and will run in the caller after the extracted function returns that exit's flag.

A region that cannot be extracted safely gets a `problem` (a reason from REASONS) and is left
as lock/unlock calls, which the runtime runs in hybrid mode (rclify/transform/refusals.py).
"""

from dataclasses import dataclass, field

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile, statement_range as stmt_range
from rclify.ctext.preprocessor import splits_conditional
from rclify.ctext.tokens import identifiers_used, tokenize
from rclify.transform.refusals import Reason
from rclify.transform.vocabulary import LockOp, Vocabulary, classify

K = ci.CursorKind

HELD, RELEASED = "held", "released"
_LOOPS = (K.FOR_STMT, K.WHILE_STMT, K.DO_STMT)
_SETJMP = {"setjmp", "_setjmp", "sigsetjmp", "__sigsetjmp", "longjmp", "siglongjmp", "_longjmp"}
_VA = {"va_start", "va_arg", "va_end", "va_copy", "__builtin_va_start", "__builtin_va_arg", "__builtin_va_end"}


@dataclass
class Exit:
    """An unlock inside the region followed by code that runs after the section."""

    flag: int
    unlock_start: int
    tail_start: int  # just after the unlock statement
    tail_end: int  # end of the tail (after its final jump, or the end of its block)
    ends_with_jump: bool = False  # the tail ends with return/goto/break/continue
    drop_final_break: bool = False  # the tail's last `break` leaves the region's last statement
    result: str = ""  # keeps the unlock's result variable ("rc = 0;"), run before the tail


@dataclass
class Region:
    parsed: ParsedFile
    function: ci.Cursor
    compound: ci.Cursor  # block holding the lock statement
    lock: LockOp
    start: int  # lock statement start: the replaced range is [start, end)
    lock_end: int  # just after the lock statement
    body_end: int  # body is [lock_end, body_end)
    end: int
    line: int
    exits: list[Exit] = field(default_factory=list)
    problems: list[tuple[str, int]] = field(default_factory=list)  # (reason, line)
    is_trylock: bool = False
    body_end_stmt: int = 0  # end of the statement that closes the section
    after: tuple[int, int] | None = None  # trylock: rest of the then-block, run in the caller
    otherwise: tuple[int, int] | None = None  # trylock: the else branch, run when busy
    end_result: str = ""  # keeps the final unlock's result variable

    @property
    def extractable(self) -> bool:
        return not self.problems

    @property
    def home(self) -> ci.Cursor:
        """The block whose statements the section is made of."""
        if self.is_trylock:
            return list(next(c for c in self.compound.walk_preorder()
                             if c.kind == K.IF_STMT and c.extent.start.offset == self.start).get_children())[1]
        return self.compound

    @property
    def later(self) -> tuple[int, int]:
        """Where the home block goes on after the section (hoisted variables may be used there)."""
        if self.is_trylock and self.after is not None:
            return self.after
        return self.end, self.compound.extent.end.offset

    def contains(self, other: "Region") -> bool:
        return self.lock_end <= other.start and other.end <= self.body_end


def unlabeled(cursor: ci.Cursor) -> ci.Cursor:
    while cursor.kind in (K.CASE_STMT, K.DEFAULT_STMT, K.LABEL_STMT):
        cursor = list(cursor.get_children())[-1]
    return cursor


class _Construct:
    """A loop or switch inside the region: targets of break/continue."""

    def __init__(self, cursor: ci.Cursor):
        self.cursor = cursor
        self.is_loop = cursor.kind in _LOOPS
        self.breaks_held = False
        self.breaks_released = False


class RegionAnalysis:
    """Walks one region's statements in the held state, collecting exits and problems."""

    def __init__(self, parsed: ParsedFile, vocab: Vocabulary, key: str):
        self.parsed = parsed
        self.vocab = vocab
        self.key = key
        self.exits: list[Exit] = []
        self.problems: list[tuple[str, int]] = []
        self.constructs: list[_Construct] = []
        self.gotos_held: list[tuple[str, int]] = []
        self.other_locks: list[str] = []

    def problem(self, reason: Reason, cursor: ci.Cursor) -> None:
        self.problems.append((reason, cursor.extent.start.line))

    def op_of(self, cursor: ci.Cursor) -> LockOp | None:
        start, end = stmt_range(self.parsed, cursor)
        if _may_be_lock(cursor):
            return classify(self.parsed.text(start, end), self.vocab)
        return None

    # -- statements ------------------------------------------------------------------------
    def stmt(self, cursor: ci.Cursor) -> set[str]:
        """Fallthrough states after cursor, entered with the lock held."""
        op = self.op_of(cursor)
        if op is not None:
            return self._lock_statement(op, cursor)
        kind = cursor.kind
        children = list(cursor.get_children())
        if kind == K.COMPOUND_STMT:
            return self.block(children, is_switch_body=False)
        if kind == K.IF_STMT:
            self.expression(children[0])
            states = self.branch(children[1])
            states |= self.branch(children[2]) if len(children) > 2 else {HELD}
            if HELD in states and RELEASED in states:
                self.problem(Reason.UNBALANCED_REGION, cursor)
            return states
        if kind in _LOOPS or kind == K.SWITCH_STMT:
            return self.construct(cursor, children)
        if kind == K.RETURN_STMT:
            self.problem(Reason.RETURN_WHILE_LOCKED, cursor)
            return set()
        if kind == K.GOTO_STMT:
            self.gotos_held.append((_goto_label(cursor), cursor.extent.start.line))
            return set()
        if kind == K.INDIRECT_GOTO_STMT:
            self.problem(Reason.COMPUTED_GOTO, cursor)
            return set()
        if kind in (K.BREAK_STMT, K.CONTINUE_STMT):
            target = self.jump_target(kind)
            if target is None:
                self.problem(Reason.JUMP_OUT_WHILE_LOCKED, cursor)
            elif kind == K.BREAK_STMT:
                target.breaks_held = True
            return set()
        if kind in (K.LABEL_STMT, K.CASE_STMT, K.DEFAULT_STMT):
            return self.stmt(children[-1])
        self.expression(cursor)
        return {HELD}

    def expression(self, cursor: ci.Cursor) -> None:
        """Any other statement: it must not hide a lock operation rclify did not recognise."""
        for node in cursor.walk_preorder():
            if node.kind == K.CALL_EXPR and node.spelling in self.vocab.names():
                self.problem(Reason.UNRECOGNIZED_LOCK_SHAPE, node)
                return

    def branch(self, cursor: ci.Cursor) -> set[str]:
        op = self.op_of(cursor)
        if op is not None and op.key == self.key and op.kind == "unlock":
            start, end = stmt_range(self.parsed, cursor)
            self._add_exit(start, end, end, ends_with_jump=False, result=op.result)
            return {RELEASED}
        return self.stmt(cursor)

    def construct(self, cursor: ci.Cursor, children: list[ci.Cursor]) -> set[str]:
        construct = _Construct(cursor)
        self.constructs.append(construct)
        try:
            body = children[-1]
            for child in children[:-1]:
                self.expression(child)
            if cursor.kind == K.SWITCH_STMT and body.kind == K.COMPOUND_STMT:
                end_states = self.block(list(body.get_children()), is_switch_body=True)
            else:
                end_states = self.stmt(body)
        finally:
            self.constructs.pop()
        if RELEASED in end_states:
            self.problem(Reason.UNBALANCED_REGION, cursor)
        states = set()
        if construct.breaks_held:
            states.add(HELD)
        if construct.breaks_released:
            states.add(RELEASED)
        if cursor.kind == K.SWITCH_STMT:
            states |= end_states or set()
            if not any(c.kind == K.DEFAULT_STMT for c in cursor.walk_preorder()):
                states.add(HELD)
        elif not _loop_is_infinite(cursor, children):
            states.add(HELD)
        if HELD in states and RELEASED in states:
            self.problem(Reason.UNBALANCED_REGION, cursor)
        return states

    def jump_target(self, kind: ci.CursorKind) -> _Construct | None:
        for construct in reversed(self.constructs):
            if kind == K.BREAK_STMT or construct.is_loop:
                return construct
        return None

    def _lock_statement(self, op: LockOp, cursor: ci.Cursor) -> set[str]:
        if op.key == self.key:
            if op.kind == "unlock":
                return {RELEASED}  # reached only for an unlock that is not a block's statement
            self.problem(Reason.RELOCK_WHILE_HELD, cursor)
            return {HELD}
        if op.kind == "lock":
            self.other_locks.append(op.key)
        elif op.kind == "unlock":
            if self.other_locks and self.other_locks[-1] == op.key:
                self.other_locks.pop()
            else:
                self.problem(Reason.HAND_OVER_HAND, cursor)
        else:
            self.problem(Reason.TRYLOCK, cursor)
        return {HELD}

    # -- blocks ----------------------------------------------------------------------------
    def block(self, children: list[ci.Cursor], is_switch_body: bool) -> set[str]:
        """A nested block entered with the lock held."""
        state = {HELD}
        i = 0
        while i < len(children):
            child = children[i]
            if child.kind in (K.CASE_STMT, K.DEFAULT_STMT) and is_switch_body:
                if RELEASED in state:
                    self.problem(Reason.UNBALANCED_REGION, child)
                state = {HELD}
            elif child.kind == K.LABEL_STMT and not state:
                state = {HELD}  # only reachable by a goto, checked against the region later
            if not state:
                i += 1
                continue
            if RELEASED in state:
                self.problem(Reason.UNBALANCED_REGION, child)
                return state
            inner = unlabeled(child)
            op = self.op_of(inner)
            if op is not None and op.key == self.key and op.kind == "unlock":
                i = self._tail(children, i, op.result)
                state = set() if self.exits[-1].ends_with_jump else {RELEASED}
                continue
            state = self.stmt(child)
            i += 1
        return state

    def _tail(self, children: list[ci.Cursor], i: int, result: str) -> int:
        """Records the exit whose unlock is children[i]; returns the index after its tail."""
        unlock_start, tail_start = stmt_range(self.parsed, unlabeled(children[i]))
        j = i + 1
        tail_end = tail_start
        ends_with_jump = False
        while j < len(children):
            child = children[j]
            if child.kind in (K.CASE_STMT, K.DEFAULT_STMT, K.LABEL_STMT):
                break
            tail_end = stmt_range(self.parsed, child)[1]
            self._check_tail_statement(child)
            j += 1
            if child.kind in (K.RETURN_STMT, K.GOTO_STMT, K.BREAK_STMT, K.CONTINUE_STMT) or _no_return(child):
                ends_with_jump = True
                if child.kind == K.BREAK_STMT and self.constructs:
                    self.constructs[-1].breaks_released = True
                    self._add_exit(unlock_start, tail_start, tail_end, True, drop_final_break=True, result=result)
                    return j
                if child.kind == K.CONTINUE_STMT and self.jump_target(K.CONTINUE_STMT):
                    self.problem(Reason.JUMP_IN_TAIL, child)
                break
        self._add_exit(unlock_start, tail_start, tail_end, ends_with_jump, result=result)
        return j

    def _check_tail_statement(self, cursor: ci.Cursor) -> None:
        """Tails run after the section, in the caller: they must not re-take this lock or jump
        to constructs that the section owns."""
        def visit(node: ci.Cursor, inner_breakable: bool, inner_loop: bool) -> None:
            if node.kind in (K.BREAK_STMT, K.CONTINUE_STMT):
                own = inner_breakable if node.kind == K.BREAK_STMT else inner_loop
                if not own and self.jump_target(node.kind) is not None and node is not cursor:
                    self.problem(Reason.JUMP_IN_TAIL, node)
            if node.kind == K.CALL_EXPR and node.spelling in self.vocab.names():
                text = self.parsed.text(*stmt_range(self.parsed, node))
                op = classify(text, self.vocab)
                if op is not None and op.key == self.key:
                    self.problem(Reason.RELOCK_WHILE_HELD, node)
            for child in node.get_children():
                visit(child,
                      inner_breakable or node.kind in _LOOPS or node.kind == K.SWITCH_STMT,
                      inner_loop or node.kind in _LOOPS)

        visit(cursor, False, False)

    def _add_exit(self, unlock_start: int, tail_start: int, tail_end: int, ends_with_jump: bool,
                  drop_final_break: bool = False, result: str = "") -> None:
        self.exits.append(
            Exit(len(self.exits) + 1, unlock_start, tail_start, tail_end, ends_with_jump, drop_final_break, result)
        )


# Calls that do not return end a tail the way a jump does.
NO_RETURN = {"exit", "_exit", "_Exit", "abort", "quick_exit", "pthread_exit", "err", "errx", "verr",
             "verrx", "longjmp", "siglongjmp", "__assert_fail", "__builtin_trap", "__builtin_unreachable"}


def _no_return(cursor: ci.Cursor) -> bool:
    node = cursor
    while node.kind in (K.UNEXPOSED_EXPR, K.CSTYLE_CAST_EXPR, K.PAREN_EXPR) and list(node.get_children()):
        node = list(node.get_children())[0]
    return node.kind == K.CALL_EXPR and node.spelling in NO_RETURN


def _goto_label(cursor: ci.Cursor) -> str:
    for child in cursor.get_children():
        if child.kind == K.LABEL_REF:
            return child.spelling
    return ""


def _loop_is_infinite(cursor: ci.Cursor, children: list[ci.Cursor]) -> bool:
    tokens = [t.spelling for t in cursor.get_tokens()]
    if cursor.kind == K.FOR_STMT:
        # for (init; ; step): an empty condition
        try:
            first = tokens.index(";")
            return tokens[first + 1] == ";"
        except (ValueError, IndexError):
            return False
    if cursor.kind == K.WHILE_STMT:
        return tokens[1:4] in (["(", "1", ")"], ["(", "true", ")"])
    if cursor.kind == K.DO_STMT:
        return tokens[-4:] in (["while", "(", "1", ")"], ["while", "(", "true", ")"])
    return False


# -- finding regions in a function ----------------------------------------------------------

def find_regions(parsed: ParsedFile, function: ci.Cursor, vocab: Vocabulary) -> list[Region]:
    """Every region of the function, outermost first, each with its problems (if any)."""
    body = next((c for c in function.get_children() if c.kind == K.COMPOUND_STMT), None)
    if body is None:
        return []
    regions: list[Region] = []
    lock_statements: list[tuple[int, int]] = []  # blocks inside these are a macro's braces
    for compound in (n for n in body.walk_preorder() if n.kind == K.COMPOUND_STMT):
        if any(s <= compound.extent.start.offset < e for s, e in lock_statements):
            continue
        children = list(compound.get_children())
        for i, child in enumerate(children):
            inner = unlabeled(child)
            start, end = stmt_range(parsed, inner)
            op = classify(parsed.text(start, end), vocab) if _may_be_lock(inner) else None
            if op is None:
                if inner.kind == K.IF_STMT:
                    trylock = _trylock_region_at(parsed, vocab, function, compound, inner)
                    if trylock is not None:
                        regions.append(trylock)
                continue
            lock_statements.append((start, end))
            if op.kind == "unlock":
                continue
            region = _region_at(parsed, vocab, function, compound, children, i, op, compound == body)
            regions.append(region)
    _check_labels(parsed, function, regions)
    _check_preprocessor(parsed, regions)
    if parsed.has_errors_in(function):
        for region in regions:
            region.problems.insert(0, (Reason.PARSE_ERRORS, region.line))
    return sorted(regions, key=lambda r: r.start)


def _may_be_lock(cursor: ci.Cursor) -> bool:
    return cursor.kind in (K.COMPOUND_STMT, K.DO_STMT, K.IF_STMT, K.UNEXPOSED_STMT, K.DECL_STMT) \
        or cursor.kind.is_expression()


def _region_at(parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor, compound: ci.Cursor,
               children: list[ci.Cursor], i: int, op: LockOp, is_function_body: bool) -> Region:
    """The region a lock statement (children[i]) opens."""
    lock_cursor = unlabeled(children[i])
    start, lock_end = stmt_range(parsed, lock_cursor)
    region = Region(parsed, function, compound, op, start, lock_end, lock_end, lock_end,
                    lock_cursor.extent.start.line)
    if op.kind == "trylock":
        region.problems.append((Reason.TRYLOCK, region.line))
        return region
    following = children[i + 1 :]
    if following and _checks_result(parsed, following[0], op):
        region.lock_end = stmt_range(parsed, following[0])[1]  # dead once the runtime has the lock
        following = following[1:]
    reason = Reason.LOCK_UNLOCK_IN_DIFFERENT_FUNCTIONS if is_function_body else Reason.UNBALANCED_REGION
    _close(parsed, vocab, region, following, reason)
    return region


def _checks_result(parsed: ParsedFile, cursor: ci.Cursor, op: LockOp) -> bool:
    """`err = lock(&m); if (err) ...;` : is cursor that test (no else) of the result variable?"""
    if not op.result or cursor.kind != K.IF_STMT or len(list(cursor.get_children())) != 2:
        return False
    var = op.result.split("=")[0].split()[-1].lstrip("*")
    cond = [t.text for t in tokenize(parsed.text(*stmt_range(parsed, list(cursor.get_children())[0])))]
    return cond in ([var], [var, "!=", "0"], ["(", var, ")"])


def _trylock_region_at(parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor, compound: ci.Cursor,
                       if_stmt: ci.Cursor) -> Region | None:
    """`if (pthread_mutex_trylock(&m) == 0) { ...; unlock; ... } [else ...]`: the section is the
    then-block up to its unlock; the rest of the block and the else branch run in the caller."""
    children = list(if_stmt.get_children())
    if len(children) < 2 or children[1].kind != K.COMPOUND_STMT:
        return None
    op = _trylock_condition(parsed, children[0], vocab)
    if op is None:
        return None
    then = children[1]
    start, end = stmt_range(parsed, if_stmt)
    open_brace = then.extent.start.offset + 1
    region = Region(parsed, function, compound, op, start, open_brace, open_brace, end,
                    if_stmt.extent.start.line, is_trylock=True)
    _close(parsed, vocab, region, list(then.get_children()), Reason.UNBALANCED_REGION)
    # what stays in the caller: the then-block after the section, and the else branch
    region.after = (region.body_end_stmt, then.extent.end.offset - 1)
    if len(children) > 2:
        region.otherwise = stmt_range(parsed, children[2])
    region.end = end
    return region


def _trylock_condition(parsed: ParsedFile, cond: ci.Cursor, vocab: Vocabulary) -> LockOp | None:
    tokens = tokenize(parsed.text(cond.extent.start.offset, cond.extent.end.offset))
    texts = [t.text for t in tokens]
    if texts[-2:] == ["==", "0"]:
        call = tokens[:-2]
    elif texts[:2] == ["0", "=="]:
        call = tokens[2:]
    elif texts[:1] == ["!"]:
        call = tokens[1:]
    else:
        return None
    if not call:
        return None
    op = classify(parsed.text(cond.extent.start.offset + call[0].start, cond.extent.start.offset + call[-1].end), vocab)
    return op if op is not None and op.kind == "trylock" else None


def _close(parsed: ParsedFile, vocab: Vocabulary, region: Region, following: list[ci.Cursor],
           unended_reason: Reason) -> None:
    """Walks the statements after the lock until it is released on every path; records the
    region's end, its exits and its problems."""
    op = region.lock
    analysis = RegionAnalysis(parsed, vocab, op.key)
    ended = False
    for child in following:
        if child.kind in (K.CASE_STMT, K.DEFAULT_STMT):
            analysis.problem(Reason.LABEL_IN_REGION, child)
            break
        inner = unlabeled(child)
        child_op = analysis.op_of(inner)
        if child_op is not None and child_op.key == op.key and child_op.kind == "unlock":
            region.body_end, region.end = stmt_range(parsed, child)[0], stmt_range(parsed, inner)[1]
            region.end_result = child_op.result
            ended = True
            break
        states = analysis.stmt(child)
        if states == {RELEASED} or not states:
            region.body_end = region.end = stmt_range(parsed, child)[1]
            ended = True
            break
        if RELEASED in states:
            break  # unbalanced: already reported
    if not ended and not analysis.problems:
        analysis.problems.append((unended_reason, region.line))
    if not ended:
        region.body_end = region.end = region.lock_end
    region.body_end_stmt = region.end
    if analysis.other_locks:
        analysis.problems.append((Reason.HAND_OVER_HAND, region.line))
    names = identifiers_used(parsed.text(region.lock_end, region.body_end))
    if names & _SETJMP:
        analysis.problems.append((Reason.SETJMP, region.line))
    if names & _VA:
        analysis.problems.append((Reason.VA_LIST, region.line))
    for label, line in analysis.gotos_held:
        target = _label_offset(region.function, label)
        if target is None or not (region.lock_end <= target < region.body_end):
            analysis.problems.append((Reason.JUMP_OUT_WHILE_LOCKED, line))
    region.exits = analysis.exits
    region.problems = _unique(analysis.problems)


def _label_offset(function: ci.Cursor, label: str) -> int | None:
    for node in function.walk_preorder():
        if node.kind == K.LABEL_STMT and node.spelling == label:
            return node.extent.start.offset
    return None


def _check_labels(parsed: ParsedFile, function: ci.Cursor, regions: list[Region]) -> None:
    """A label inside a region must not be the target of a goto from outside it."""
    labels = {n.spelling: n.extent.start.offset for n in function.walk_preorder() if n.kind == K.LABEL_STMT}
    gotos = [(n.extent.start.offset, _goto_label(n)) for n in function.walk_preorder() if n.kind == K.GOTO_STMT]
    for region in regions:
        for goto_at, label in gotos:
            target = labels.get(label)
            if target is None:
                continue
            inside = region.lock_end <= target < region.body_end
            in_tail = any(e.tail_start <= goto_at < e.tail_end for e in region.exits)  # runs unlocked
            from_inside = region.lock_end <= goto_at < region.body_end and not in_tail
            if inside and not from_inside:
                region.problems.append((Reason.LABEL_TARGETED_FROM_OUTSIDE, region.line))
                break


def _check_preprocessor(parsed: ParsedFile, regions: list[Region]) -> None:
    for region in regions:
        if splits_conditional(parsed.text(region.start, region.end)):
            region.problems.append((Reason.PREPROCESSOR_CONDITIONAL, region.line))


def _unique(problems: list[tuple[str, int]]) -> list[tuple[str, int]]:
    seen, out = set(), []
    for p in problems:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out
