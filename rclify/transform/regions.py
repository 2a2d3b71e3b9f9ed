"""Critical regions: what one is, and reading its statements to decide whether it can be extracted.

A region starts at a lock statement and ends where the lock is released on every path: at the
unlock statement in the same block, or at a statement all of whose paths release it (an `if`
whose branches both unlock, a `switch` whose cases do).  Every other unlock inside the region
is an *early exit*: the statements after it in its block, up to the jump that ends them, are
its *tail* and will run in the caller after the extracted function returns that exit's flag.

An unlock followed, in the same block, by statements and a relock of the lock (`unlock(&m);
join(t); lock(&m);` inside an `if` of a loop of the region) is a *window*: the section returns
its flag there, the caller runs the statements between unlock and relock, unlocked, and runs
the section again, which goes on after the relock (render.py: a resumable section).

A region that cannot be extracted safely gets a `problem` (a reason from REASONS) and is left
as lock/unlock calls, which the runtime runs in hybrid mode (rclify/transform/refusals.py).
"""

from dataclasses import dataclass, field

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile, statement_range as stmt_range
from rclify.ctext.cursors import child_nodes, preorder
from rclify.transform.lock_statements.calls import classify
from rclify.transform.lock_statements.checked import NO_RETURN, checks_result
from rclify.transform.lock_statements.guards import guard_lock
from rclify.transform.lock_statements.scoped import scoped_lock_shape
from rclify.transform.macro_sections import MacroSection
from rclify.transform.refusals import Reason
from rclify.transform.vocabulary import LockOp, Vocabulary, Wrapper

K = ci.CursorKind

HELD, RELEASED = "held", "released"
_LOOPS = (K.FOR_STMT, K.WHILE_STMT, K.DO_STMT)
SETJMP = {"setjmp", "_setjmp", "sigsetjmp", "__sigsetjmp", "longjmp", "siglongjmp", "_longjmp"}
VA = {"va_start", "va_arg", "va_end", "va_copy", "__builtin_va_start", "__builtin_va_arg", "__builtin_va_end"}


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
    work: str = ""  # the unlock wrapper's work, run in the section before it returns the flag
    work_of: Wrapper | None = None  # that wrapper
    value: str = ""  # a return under a lock guard: its value, computed in the section


@dataclass
class Window:
    """`unlock(&m); B; lock(&m);` inside the region, in one block: B runs in the caller between
    two runs of the section, the second resuming after the relock (render.py)."""

    unlock_start: int
    released: tuple[int, int]  # B: from the end of the unlock to the relock
    relock_end: int  # end of the relock (and of a statement checking its result)
    line: int  # the unlock's line
    unlock_op: LockOp
    relock_op: LockOp


class Refusable:
    """What holds a region's reasons to stay hybrid (`problems`, (reason, line) pairs: none, it is
    extracted): the region, and the walk of its statements before the region gets them.  Every
    refusal of every step goes through refuse()."""

    problems: list[tuple[Reason, int]]

    def refuse(self, reason: Reason, line: int, first: bool = False) -> None:
        """Leaves the region hybrid for reason, found at line.  first: the reason the report gives
        before the others, one that makes them moot (a parse error, a file the build does not
        compile, a lock kept posix, generated code that does not compile)."""
        if first:
            self.problems.insert(0, (reason, line))
        else:
            self.problems.append((reason, line))


@dataclass
class Region(Refusable):
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
    problems: list[tuple[Reason, int]] = field(default_factory=list)  # (reason, line): Refusable
    is_trylock: bool = False
    body_end_stmt: int = 0  # end of the statement that closes the section
    after: tuple[int, int] | None = None  # trylock: rest of the then-block, run in the caller
    otherwise: tuple[int, int] | None = None  # trylock: the else branch, run when busy
    end_result: str = ""  # keeps the final unlock's result variable
    # `#if THREADS` line when every lock and unlock of the region sits alone in such a block:
    # start/lock_end/body_end/end and the exits' unlock spans then cover the blocks (render.py)
    conditional_lock: str = ""
    # what else those blocks hold: statements before the lock in its block, after the final unlock
    # in its block; kept in place around the call under the condition (render.py)
    conditional_before: tuple[int, int] | None = None
    conditional_after: tuple[int, int] | None = None
    end_work: str = ""  # the final unlock wrapper's work, run at the end of the section
    end_work_of: Wrapper | None = None  # that wrapper
    # the final unlock is labeled (`out_unlock: unlock(&m);`, gotos of the section jump there): the
    # label stays in the section, at its end
    end_label: bool = False
    # variables the region's unlocks increment in their argument (`unlock(&slots[i++].m);`), in the
    # caller after the section (LockOp.effect_vars; plan.check_unlock_effects)
    unlock_effects: list[str] = field(default_factory=list)
    ends_by_exit: bool = False  # no path reaches the end of the section (a lock guard's block that returns)
    loop: object | None = None  # a loop-carried section's pieces (loop_regions.LoopParts)
    # a bare block `{ T x = ...; unlock(&m); use(x); }` of the home block in which the section
    # ends: the section takes what precedes the unlock in it, the caller the rest (render.py)
    open_block: ci.Cursor | None = None
    # its unlock's and relock's `#if THREADS` / `#endif` lines, left out of the pieces written under
    # the condition (conditional_lock)
    blank_directives: list[tuple[int, int]] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)  # unlock/relock pairs inside (Window)
    # `va_start(ap, x); v = va_arg(ap, T); va_end(ap);` of the region, run before the lock by the
    # caller (region_bounds._variadic_reads)
    lifted: tuple[int, int] | None = None
    # a statement macro's section: its text is the expansion's
    expansion: MacroSection | None = None
    unrecognized: str = ""  # with an unrecognized-lock-shape refusal: what was not recognised
    # `pthread_cleanup_push(unlock, &m);` of a section its `pthread_cleanup_pop(1)` releases: the call
    # site keeps the push and pops without running the handler (cancellation_cleanups.py)
    released_by_pop: str = ""

    def unlocked_spans(self) -> list[tuple[int, int]]:
        """What runs in the caller, unlocked, though inside [lock_end, body_end): exits' tails,
        windows' B, variadic reads run before the lock, a loop-carried section's B."""
        spans = [(e.tail_start, e.tail_end) for e in self.exits] + [w.released for w in self.windows]
        spans += [self.lifted] if self.lifted is not None else []
        return spans + [self.loop.released] if self.loop is not None else spans

    def section_calls(self) -> list[ci.Cursor]:
        """The calls the section itself makes (macros expanded), not those of the code that runs
        in the caller (unlocked_spans)."""
        tails = self.unlocked_spans()
        return [n for n in self.parsed.nodes_of(self.compound, K.CALL_EXPR)
                if self.lock_end <= n.extent.start.offset < self.body_end
                and not any(s <= n.extent.start.offset < e for s, e in tails)]

    def wrappers_called(self) -> list[Wrapper]:
        """The wrappers whose generated functions the section and its call site call themselves:
        the accessor of the wrapper it locks through (not of those it goes through: that accessor
        calls theirs, in its own file), the work functions of the wrappers that take and release it."""
        found = [self.lock.wrapper, self.end_work_of, *(e.work_of for e in self.exits)]
        return list({w.name: w for w in found if w is not None}.values())

    def wrappers_used(self) -> list[Wrapper]:
        """The wrappers whose generated functions the section uses: those it calls, and the inner
        wrappers of the chain the lock's accessor goes through."""
        found = [*(self.lock.wrapper.chain() if self.lock.wrapper else []), *self.wrappers_called()]
        return list({w.name: w for w in found}.values())

    @property
    def extractable(self) -> bool:
        return not self.problems

    @property
    def home(self) -> ci.Cursor:
        """The block whose statements the section is made of."""
        if self.is_trylock:
            return list(child_nodes(next(c for c in preorder(self.compound)
                             if c.kind == K.IF_STMT and c.extent.start.offset == self.start)))[1]
        return self.compound

    @property
    def later(self) -> tuple[int, int]:
        """Where the home block goes on after the section (hoisted variables may be used there)."""
        if self.is_trylock and self.after is not None:
            return self.after
        return self.end, self.compound.extent.end.offset

    def contains(self, other: "Region") -> bool:
        return self.lock_end <= other.start and other.end <= self.body_end


def tail_extent(children: list[ci.Cursor], i: int) -> tuple[int, bool]:
    """(the index after the tail of the unlock children[i], whether the tail ends with a jump):
    the statements after it up to a jump (return, goto, break, continue, a call that does not
    return), or up to a label (case, default, named) it falls into, or to the block's end."""
    for j in range(i + 1, len(children)):
        child = children[j]
        if child.kind in (K.CASE_STMT, K.DEFAULT_STMT, K.LABEL_STMT):
            return j, False
        if child.kind in (K.RETURN_STMT, K.GOTO_STMT, K.BREAK_STMT, K.CONTINUE_STMT) or no_return_call(child):
            return j + 1, True
    return len(children), False


def unlabeled(cursor: ci.Cursor) -> ci.Cursor:
    while cursor.kind in (K.CASE_STMT, K.DEFAULT_STMT, K.LABEL_STMT):
        cursor = child_nodes(cursor)[-1]
    return cursor


class _Construct:
    """A loop or switch inside the region: targets of break/continue."""

    def __init__(self, cursor: ci.Cursor):
        self.cursor = cursor
        self.is_loop = cursor.kind in _LOOPS
        self.breaks_held = False
        self.breaks_released = False


class RegionAnalysis(Refusable):
    """Walks one region's statements in the held state, collecting exits and problems."""

    def __init__(self, parsed: ParsedFile, vocab: Vocabulary, key: str, scope: ci.Cursor | None = None,
                 guard: tuple[int, int] | None = None, scope_breaks_release: bool = False,
                 windows: bool = False):
        """scope: the `for` of a scoped lock statement whose body is the region (its `continue`
        releases the lock and ends the region, its `break` leaves with the lock held; with
        scope_breaks_release, a run-once loop inside the scoped `for`, its `break` too).
        guard: the range of a lock guard's region (from its declaration to the end of its block):
        every jump out of it (return, break, continue, goto) releases the lock, an exit.
        windows: an unlock followed in its block by a relock is a Window (a plain region's)."""
        self.guard = guard
        self.parsed = parsed
        self.vocab = vocab
        self.key = key
        self.exits: list[Exit] = []
        self.problems: list[tuple[Reason, int]] = []
        self.constructs: list[_Construct] = [_Construct(scope)] if scope is not None else []
        self.scope = self.constructs[0] if scope is not None else None
        self.scope_breaks_release = scope_breaks_release
        self.gotos_held: list[tuple[str, int]] = []
        self.other_locks: list[str] = []
        self.unlock_effects: list[str] = []  # variables this lock's unlocks increment (exits, windows)
        self.depth = 0  # blocks entered below the region's own statements
        self.allow_windows = windows
        self.windows: list[Window] = []
        self.unrecognized = ""  # what an unrecognized-lock-shape refusal did not recognise
        # other locks held where we are through a scoped statement or a cleanup guard: a window
        # there would hold them across two runs of the section (two threads, under combining)
        self.held_by_scope = 0

    def problem(self, reason: Reason, cursor: ci.Cursor) -> None:
        self.refuse(reason, cursor.extent.start.line)

    def op_of(self, cursor: ci.Cursor) -> LockOp | None:
        start, end = stmt_range(self.parsed, cursor)
        if may_be_lock(cursor):
            return classify(self.parsed.text(start, end), self.vocab)
        return None

    # -- statements ------------------------------------------------------------------------
    def stmt(self, cursor: ci.Cursor) -> set[str]:
        """Fallthrough states after cursor, entered with the lock held."""
        op = self.op_of(cursor)
        if op is not None:
            return self._lock_statement(op, cursor)
        kind = cursor.kind
        children = child_nodes(cursor)
        if kind == K.COMPOUND_STMT:
            return self.block(children, is_switch_body=False)
        if kind == K.IF_STMT:
            self.expression(children[0])
            states = self.branch(children[1])
            states |= self.branch(children[2]) if len(children) > 2 else {HELD}
            if HELD in states and RELEASED in states:
                self.problem(Reason.UNBALANCED_REGION, cursor)
            return states
        if kind == K.FOR_STMT and (scoped := scoped_statement(self.parsed, cursor, self.vocab)) is not None:
            return self.scoped(cursor, scoped[0], scoped[1])
        if kind in _LOOPS or kind == K.SWITCH_STMT:
            return self.construct(cursor, children)
        if kind == K.RETURN_STMT:
            if self.guard is not None:  # the cleanup unlocks after the value is computed
                start, end = stmt_range(self.parsed, cursor)
                value = children[0] if children else None
                if value is None:
                    self._add_exit(start, start, end, ends_with_jump=True)
                else:
                    self._add_exit(start, end, end, ends_with_jump=True, value=self.parsed.text(
                        value.extent.start.offset, value.extent.end.offset))
                return set()
            self.problem(Reason.RETURN_WHILE_LOCKED, cursor)
            return set()
        if kind == K.GOTO_STMT:
            if self.guard is not None and not self._inside_guard(goto_label(cursor), cursor):
                start, end = stmt_range(self.parsed, cursor)
                self._add_exit(start, start, end, ends_with_jump=True)
                return set()
            self.gotos_held.append((goto_label(cursor), cursor.extent.start.line))
            return set()
        if kind == K.INDIRECT_GOTO_STMT:
            self.problem(Reason.COMPUTED_GOTO, cursor)
            return set()
        if kind in (K.BREAK_STMT, K.CONTINUE_STMT):
            target = self.jump_target(kind)
            if target is not None and target is self.scope:
                if kind == K.CONTINUE_STMT or self.scope_breaks_release:
                    # the third clause unlocks, the statement ends (xz's inner loop: after a break too)
                    start, end = stmt_range(self.parsed, cursor)
                    self._add_exit(start, end, end, ends_with_jump=False)
                else:
                    self.problem(Reason.JUMP_OUT_WHILE_LOCKED, cursor)
                return set()
            if target is None and self.guard is not None:  # leaves the guard's block: released
                start, end = stmt_range(self.parsed, cursor)
                self._add_exit(start, start, end, ends_with_jump=True)
            elif target is None:
                self.problem(Reason.JUMP_OUT_WHILE_LOCKED, cursor)
            elif kind == K.BREAK_STMT:
                target.breaks_held = True
            return set()
        if kind in (K.LABEL_STMT, K.CASE_STMT, K.DEFAULT_STMT):
            return self.stmt(children[-1])
        if kind == K.DECL_STMT and (guard := guard_lock(self.parsed.text(*stmt_range(self.parsed, cursor)),
                                                        self.vocab)) is not None:
            if guard.op.key == self.key:
                self.problem(Reason.RELOCK_WHILE_HELD, cursor)
            elif self.depth == 0:
                self.problem(Reason.HAND_OVER_HAND, cursor)  # released at the end of the block, after ours
            self.held_by_scope += 1  # until its block ends: counted to the region's end (conservative)
            return {HELD}
        self.expression(cursor)
        return {HELD}

    def expression(self, cursor: ci.Cursor) -> None:
        """Any other statement: it must not hide a lock operation rclify did not recognise."""
        for node in preorder(cursor):
            if node.kind == K.CALL_EXPR and node.spelling in self.vocab.names():
                self.problem(Reason.UNRECOGNIZED_LOCK_SHAPE, node)
                self.unrecognized = self.unrecognized or (
                    f"{node.spelling}() at line {node.extent.start.line} is part of a larger expression or statement, "
                    f"not a lock statement of its own")
                return

    def branch(self, cursor: ci.Cursor) -> set[str]:
        op = self.op_of(cursor)
        if op is not None and op.key == self.key and op.kind == "unlock" and self.guard is None:
            start, end = stmt_range(self.parsed, cursor)
            self._add_exit(start, end, end, ends_with_jump=False, result=op.result, work=op.work,
                       work_of=op.wrapper if op.work else None)
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
                end_states = self.block(child_nodes(body), is_switch_body=True)
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
            if not any(c.kind == K.DEFAULT_STMT for c in preorder(cursor)):
                states.add(HELD)
        elif not _loop_is_infinite(cursor, children):
            states.add(HELD)
        if HELD in states and RELEASED in states:
            self.problem(Reason.UNBALANCED_REGION, cursor)
        return states

    def _inside_guard(self, label: str, cursor: ci.Cursor) -> bool:
        node = None
        for child in child_nodes(cursor):
            if child.kind == K.LABEL_REF and child.referenced is not None:
                node = child.referenced
        if node is None or node.extent.start.file is None:
            return False
        return self.guard[0] <= node.extent.start.offset < self.guard[1]

    def scoped(self, cursor: ci.Cursor, op: LockOp, body: ci.Cursor) -> set[str]:
        """A scoped lock statement inside the region: another lock, held for its body only."""
        if op.key == self.key:
            self.problem(Reason.RELOCK_WHILE_HELD, cursor)
            return {HELD}
        self.constructs.append(_Construct(cursor))
        self.held_by_scope += 1
        try:
            states = self.stmt(body)
        finally:
            self.constructs.pop()
            self.held_by_scope -= 1
        if RELEASED in states:
            self.problem(Reason.UNBALANCED_REGION, cursor)
        return {HELD}

    def jump_target(self, kind: ci.CursorKind) -> _Construct | None:
        for construct in reversed(self.constructs):
            if kind == K.BREAK_STMT or construct.is_loop:
                return construct
        return None

    def _lock_statement(self, op: LockOp, cursor: ci.Cursor) -> set[str]:
        if op.key == self.key:
            if op.kind == "unlock" and self.guard is not None:
                self.problem(Reason.UNBALANCED_REGION, cursor)  # the guard's cleanup unlocks it again
                return {HELD}
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
            self.problem(Reason.TIMEDLOCK if op.kind == "timedlock" else Reason.TRYLOCK, cursor)
        return {HELD}

    # -- blocks ----------------------------------------------------------------------------
    def block(self, children: list[ci.Cursor], is_switch_body: bool) -> set[str]:
        """A nested block entered with the lock held."""
        self.depth += 1
        try:
            return self._block(children, is_switch_body)
        finally:
            self.depth -= 1

    def _block(self, children: list[ci.Cursor], is_switch_body: bool) -> set[str]:
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
            if op is not None and op.key == self.key and op.kind == "unlock" and self.guard is None:
                self.unlock_effects += op.effect_vars
                if (after := self._window(children, i, op)) is not None:
                    i = after
                    continue
                i = self.exit_at(children, i, op)
                state = set() if self.exits[-1].ends_with_jump else {RELEASED}
                continue
            state = self.stmt(child)
            i += 1
        return state

    def _window(self, children: list[ci.Cursor], i: int, op: LockOp) -> int | None:
        """When the unlock children[i] starts a window (its block relocks the lock further on,
        every statement between being plain unlocked work), records it and returns the index
        after the relock; else None (an exit).  B may return (it runs in the caller's function)
        but not break, continue or goto out of itself: the caller runs it inside its loop."""
        if not self.allow_windows or self.depth == 0:
            return None
        for j in range(i + 1, len(children)):
            child = children[j]
            if child.kind in (K.CASE_STMT, K.DEFAULT_STMT, K.LABEL_STMT):
                return None
            relock = self.op_of(child)
            if relock is not None and relock.key == self.key:
                if relock.kind != "lock":
                    return None
                break
            if child.kind in (K.BREAK_STMT, K.CONTINUE_STMT, K.GOTO_STMT, K.RETURN_STMT) or no_return_call(child):
                return None  # an exit's tail
        else:
            return None
        unlock_start, released_start = stmt_range(self.parsed, unlabeled(children[i]))
        released_end, relock_end = stmt_range(self.parsed, children[j])
        after = j + 1
        if after < len(children) and checks_result(self.parsed.text(*stmt_range(self.parsed, children[after])), relock):
            relock_end = stmt_range(self.parsed, children[after])[1]
            after += 1
        for child in children[i + 1 : j]:
            self._check_unlocked_statement(child, window=True)
        if self.other_locks or self.held_by_scope:
            self.problem(Reason.HAND_OVER_HAND, children[i])  # held across the window
        self.windows.append(Window(unlock_start, (released_start, released_end), relock_end,
                                   children[i].extent.start.line, op, relock))
        return after

    def exit_at(self, children: list[ci.Cursor], i: int, op: LockOp) -> int:
        """Records the exit whose unlock is children[i]; returns the index after its tail."""
        unlock_start, tail_start = stmt_range(self.parsed, unlabeled(children[i]))
        after, ends_with_jump = tail_extent(children, i)
        tail = children[i + 1 : after]
        tail_end = stmt_range(self.parsed, tail[-1])[1] if tail else tail_start
        for child in tail:
            self._check_unlocked_statement(child)
        last = tail[-1] if ends_with_jump else None
        if last is not None and last.kind == K.BREAK_STMT and self.constructs:
            self.constructs[-1].breaks_released = True
            self._add_exit(unlock_start, tail_start, tail_end, True, drop_final_break=True, result=op.result,
                           work=op.work, work_of=op.wrapper if op.work else None)
            return after
        if last is not None and last.kind == K.CONTINUE_STMT and self.jump_target(K.CONTINUE_STMT):
            self.problem(Reason.JUMP_IN_TAIL, last)
        self._add_exit(unlock_start, tail_start, tail_end, ends_with_jump, result=op.result, work=op.work,
                       work_of=op.wrapper if op.work else None)
        return after

    def _check_unlocked_statement(self, cursor: ci.Cursor, window: bool = False) -> None:
        """Statements run in the caller, unlocked (an exit's tail, a window's B): they must not
        re-take this lock or jump to constructs the section owns.  A window's B runs inside the
        loop that resumes the section: no break, continue or goto out of itself at all."""
        def visit(node: ci.Cursor, inner_breakable: bool, inner_loop: bool) -> None:
            if node.kind in (K.BREAK_STMT, K.CONTINUE_STMT):
                own = inner_breakable if node.kind == K.BREAK_STMT else inner_loop
                if not own and (window or self.jump_target(node.kind) is not None and node is not cursor):
                    self.problem(Reason.JUMP_IN_TAIL, node)
            if window and node.kind in (K.GOTO_STMT, K.INDIRECT_GOTO_STMT):
                self.problem(Reason.JUMP_IN_TAIL, node)
            if node.kind == K.CALL_EXPR and node.spelling in self.vocab.names():
                op = classify(self.parsed.text(*stmt_range(self.parsed, node)), self.vocab)
                if op is not None and op.key == self.key:
                    self.problem(Reason.RELOCK_WHILE_HELD, node)
            for child in child_nodes(node):
                visit(child,
                      inner_breakable or node.kind in _LOOPS or node.kind == K.SWITCH_STMT,
                      inner_loop or node.kind in _LOOPS)

        visit(cursor, False, False)

    def _add_exit(self, unlock_start: int, tail_start: int, tail_end: int, ends_with_jump: bool,
                  drop_final_break: bool = False, result: str = "", work: str = "",
                  work_of: Wrapper | None = None, value: str = "") -> None:
        self.exits.append(
            Exit(len(self.exits) + 1, unlock_start, tail_start, tail_end, ends_with_jump, drop_final_break, result,
                 work, work_of, value)
        )


# Calls that do not return (lock_statements.checked.NO_RETURN) end a tail the way a jump does.


def no_return_call(cursor: ci.Cursor) -> bool:
    node = cursor
    while node.kind in (K.UNEXPOSED_EXPR, K.CSTYLE_CAST_EXPR, K.PAREN_EXPR) and child_nodes(node):
        node = child_nodes(node)[0]
    return node.kind == K.CALL_EXPR and node.spelling in NO_RETURN


def goto_label(cursor: ci.Cursor) -> str:
    for child in child_nodes(cursor):
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


def may_be_lock(cursor: ci.Cursor) -> bool:
    return cursor.kind in (K.COMPOUND_STMT, K.DO_STMT, K.IF_STMT, K.UNEXPOSED_STMT, K.DECL_STMT) \
        or cursor.kind.is_expression()


def scoped_statement(parsed: ParsedFile, cursor: ci.Cursor, vocab: Vocabulary) -> tuple[LockOp, ci.Cursor, ci.Cursor] | None:
    """(the lock, the body, the loop whose jumps end the section) of a scoped lock statement: a
    `for` whose header, as written (`WITH_LOCK(m)`, `mythread_sync(m)`), lock_statements.scoped_lock_shape
    reads as holding one lock for one run of the body.  The loop is the `for` itself (its
    `continue` ends the section, its `break` leaves with the lock held) or, where the body is in a
    run-once inner `for` (xz), that one (its `break` and `continue` both end the section)."""
    if cursor.kind != K.FOR_STMT:
        return None
    start = cursor.extent.start.offset
    body = child_nodes(cursor)[-1]
    candidates = [(body, cursor)]
    if body.kind == K.FOR_STMT:  # `for (...) for (...) BODY`, written or from one macro
        candidates.append((child_nodes(body)[-1], body))
    for real_body, loop in candidates:
        body_start = real_body.extent.start.offset
        if real_body.extent.start.file is None or real_body.extent.start.file.name != cursor.extent.start.file.name \
                or body_start <= start:
            continue
        shape = scoped_lock_shape(parsed.text(start, body_start), vocab)
        if shape is not None and shape[1] == (loop is not cursor):
            return shape[0], real_body, loop
    return None
