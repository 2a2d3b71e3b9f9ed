"""Reading a region's statements (RegionAnalysis): each statement, entered with the lock held, is
walked for the states it falls through in (HELD, RELEASED; none after a jump), adding to the
region's exits, windows and problems (regions.py says what those are).  Where the walk starts
and stops is region_bounds.py's, region_close.py's and the shapes' (shapes/: each idiom's
region_at); loop_carried.py and cleanup_pop.py walk their sections' pieces with it too.
"""

import re

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile, statement_range as stmt_range
from rclify.ctext.cursors import child_nodes, preorder
from rclify.transform.lock_statements.calls import classify
from rclify.transform.lock_statements.checked import checks_result
from rclify.transform.lock_statements.guards import guard_lock
from rclify.transform.refusals import Reason
from rclify.transform.regions import (Exit, Refusable, Window, goto_label, may_be_lock, no_return_call,
                                     scoped_statement, tail_extent, unlabeled)
from rclify.transform.vocabulary import LockOp, Vocabulary, Wrapper

K = ci.CursorKind

HELD, RELEASED = "held", "released"
_LOOPS = (K.FOR_STMT, K.WHILE_STMT, K.DO_STMT)


class Construct:
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
        self.constructs: list[Construct] = [Construct(scope)] if scope is not None else []
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
        construct = Construct(cursor)
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
        elif not loop_is_infinite(cursor, children):
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
        self.constructs.append(Construct(cursor))
        self.held_by_scope += 1
        try:
            states = self.stmt(body)
        finally:
            self.constructs.pop()
            self.held_by_scope -= 1
        if RELEASED in states:
            self.problem(Reason.UNBALANCED_REGION, cursor)
        return {HELD}

    def jump_target(self, kind: ci.CursorKind) -> Construct | None:
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
        tail_end = closing_directives_end(self.parsed.data, tail_start, tail_end)
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


def loop_is_infinite(cursor: ci.Cursor, children: list[ci.Cursor]) -> bool:
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


_CONDITIONAL = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|endif)\b", re.M)


def closing_directives_end(data: bytes, start: int, end: int) -> int:
    """end, moved past the directive lines that close conditionals the text [start, end) opens
    (`unlock; #ifndef X ... #endif` at the end of a block: the tail's last statement ends before
    its #endif, which must go with it), when only blank lines and directives come before them."""
    depth = 0
    for m in _CONDITIONAL.finditer(data, start, end):
        depth += -1 if m.group(1) == b"endif" else 1
    pos = end
    while depth > 0:
        line_end = data.find(b"\n", pos)
        line_end = len(data) if line_end < 0 else line_end
        line = data[pos:line_end].strip()
        if line and not line.startswith(b"#"):
            return end  # code before the closing directive: leave the text as it was
        m = _CONDITIONAL.match(data, pos, line_end) if line else None
        if m is not None:
            depth += -1 if m.group(1) == b"endif" else 1
        pos = line_end + 1
        if pos > len(data):
            return end
    return pos - 1 if pos - 1 > end else end
