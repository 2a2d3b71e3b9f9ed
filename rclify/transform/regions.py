"""Critical regions: what one is (Region, its exits and windows, why it stays hybrid), and the
statement shapes that bound one (a tail's extent, a label's statement, a call that does not return,
a statement that may be a lock statement, a scoped lock statement).

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
RegionAnalysis (region_walk.py) reads a region's statements to find them; region_bounds.py finds
where each region starts and ends (asking the shapes of shapes.STARTS, each idiom's bounds in its
shape's module), region_checks.py checks it whole once its end is known.

What one shape alone reads of a region (where the region starts, or a piece of text it writes in
the call site: the flag of a flag-conditional region, the push a cleanup-pop region keeps, the
#if line and the statements kept around the call of a region widened to its #if blocks) is
that shape's own small dataclass, in its module, kept in the one slot `Region.shape_data` under
the shape's name (Shape.data, Shape.keep): a dict rather than one object, since a region may have
several shapes at once (a loop-carried section under a conditional lock, a statement macro with
variadic reads), each with its own.  A field that the generic machinery reads too (render.py's
generic parts, plan.py, hoisting.py, region_checks.py, region_records.py's report, Region's own
methods) stays a field of Region, so that this code need not know the shape: `is_trylock` and
the trylock's `after` (`home`, `later`, the call site's dispatch), `otherwise` (that dispatch),
`loop` and `lifted` (`unlocked_spans`, the resumable call site, the report), `blank_directives`
(the edits of every section), `open_block` (hoisting.py), `expansion` (plan.py's captures, the
report).
"""

from dataclasses import dataclass, field

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import child_nodes, preorder
from rclify.transform.lock_statements.checked import NO_RETURN
from rclify.transform.lock_statements.scoped import scoped_lock_shape
from rclify.transform.macro_sections import MacroSection
from rclify.transform.refusals import Reason
from rclify.transform.vocabulary import LockOp, Vocabulary, Wrapper

K = ci.CursorKind


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
    end_work: str = ""  # the final unlock wrapper's work, run at the end of the section
    end_work_of: Wrapper | None = None  # that wrapper
    # the final unlock is labeled (`out_unlock: unlock(&m);`, gotos of the section jump there): the
    # label stays in the section, at its end
    end_label: bool = False
    # variables the region's unlocks increment in their argument (`unlock(&slots[i++].m);`), in the
    # caller after the section (LockOp.effect_vars; plan.check_unlock_effects)
    unlock_effects: list[str] = field(default_factory=list)
    ends_by_exit: bool = False  # no path reaches the end of the section (a lock guard's block that returns)
    loop: object | None = None  # a loop-carried section's pieces (shapes.loop_carried.LoopParts)
    # a bare block `{ T x = ...; unlock(&m); use(x); }` of the home block in which the section
    # ends: the section takes what precedes the unlock in it, the caller the rest (render.py)
    open_block: ci.Cursor | None = None
    # where every lock and unlock of the region sits alone in an `#if THREADS` block (its start,
    # lock_end, body_end, end and exits' unlock spans then cover the blocks: shapes/conditional_lock.py),
    # the #if / #endif lines left out of the pieces written under the condition: a loop-carried
    # section's unlock's and relock's, a final unlock's block opening inside the section
    blank_directives: list[tuple[int, int]] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)  # unlock/relock pairs inside (Window)
    # `va_start(ap, x); v = va_arg(ap, T); va_end(ap);` of the region, run before the lock by the
    # caller (shapes/variadic_reads.py: lifted_reads)
    lifted: tuple[int, int] | None = None
    # a statement macro's section: its text is the expansion's
    expansion: MacroSection | None = None
    unrecognized: str = ""  # with an unrecognized-lock-shape refusal: what was not recognised
    # the name of the shape whose bounds found the region (shapes.STARTS: region_at, regions_in;
    # "": a lock statement's own region, region_bounds.py's)
    started_by: str = ""
    # what each shape read of the region for its own rendering, by the shape's name: its own small
    # dataclass (see the module)
    shape_data: dict[str, object] = field(default_factory=dict)

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


# -- statements that may open a region (the walk's, and find_regions') -----------------------


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
