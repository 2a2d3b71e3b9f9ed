"""`pthread_cleanup_pop(1)` running the pushed unlock is the region's unlock: where such a region
starts and ends (region_at), and its call site, which keeps the push, runs the section, then pops
without running the handler, since the section has unlocked.

    push(unlock, &m); lock(&m); S; pop(1);      lock(&m); push(unlock, &m); S; pop(1);
  both become
    push(unlock, &m); <S run under m>; pop(0);

Sound when S reaches no cancellation point and leaves only through the pop (a jump out of a
push/pop pair is undefined in POSIX and is refused here): in the original the lock is held from
the lock to the pop's unlock and the handler cannot run in between, since nothing there acts on a
deferred cancel (the lock and push calls are no cancellation points); in the result the section
takes and releases m by itself, and pop(0) removes the handler without running it, as pop(1) did
after it ran.  The push stays where it was, so a thread cancelled before or after still runs
nothing of S, as before.  What a cancellation point is, and the check of every other region
inside a push/pop pair: cancellation_cleanups.py.
"""

import re
from dataclasses import dataclass

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile, statement_range as stmt_range
from rclify.ctext.cursors import child_nodes, preorder
from rclify.ctext.tokens import call_arguments, code_only
from rclify.transform.region_checks import finish_region
from rclify.transform.cancellation_cleanups import asynchronous, cancellation_point_reached, handler_call
from rclify.transform.lock_statements.calls import classify
from rclify.transform.refusals import Reason
from rclify.transform.region_walk import RegionAnalysis
from rclify.transform.regions import Region
from rclify.transform.shapes.shape import Shape, StatementAt, Writing
from rclify.transform.vocabulary import LockOp, Vocabulary

K = ci.CursorKind

_PUSH = re.compile(r"pthread_cleanup_push\s*\(")
_POP = re.compile(r"pthread_cleanup_pop\s*\(\s*(\w+)\s*\)")


@dataclass
class PopRelease:
    """What a cleanup-pop region's call site needs (Shape.data)."""

    push: str  # `pthread_cleanup_push(unlock, &m);`: kept before the call, popped without running


class CleanupPop(Shape):
    name = "cleanup-pop"
    fixture = "cleanup_pop_unlock"

    def applies(self, region: Region) -> bool:
        return self.data(region) is not None

    def region_at(self, at: StatementAt) -> Region | None:
        if at.op is None:
            return None
        popped = _pop_released_region(at.parsed, at.vocab, at.function, at.compound, at.children, at.i, at.op)
        if popped is None:
            return None
        finish_region(*popped)
        return popped[0]

    def call_site(self, writing: Writing, call: str) -> str:
        return f"{self.data(writing.region).push}\n{writing.indent}{call} pthread_cleanup_pop(0);"


SHAPE = CleanupPop()


def _pop_released_region(parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor, compound: ci.Cursor,
                         children: list[ci.Cursor], i: int, op: LockOp) -> tuple[Region, RegionAnalysis] | None:
    """The region of the lock statement children[i] when a `pthread_cleanup_pop(1)` running its
    own unlock as the handler releases it (see the module), with the analysis of its section;
    None for any other shape."""
    if op.kind != "lock":
        return None
    lock_start, lock_end = stmt_range(parsed, children[i])
    pair = _pair_after_lock(parsed, children, i) or _pair_around_lock(parsed, compound, children, i)
    if pair is None:
        return None
    push_start, push_end, home, statements, pop_start, pop_end = pair
    push = code_only(parsed.text(push_start, push_end))
    handler = handler_call(push, push.index("("))
    released = classify(handler, vocab) if handler else None
    pop = _POP.match(parsed.text(pop_start, pop_end))
    if released is None or released.kind != "unlock" or released.key != op.key or pop is None \
            or not pop.group(1).isdigit() or int(pop.group(1)) == 0:
        return None
    start = min(lock_start, push_start)
    body_start = push_end if lock_start < push_start else lock_end
    region = Region(parsed, function, home, op, start, body_start, pop_start, pop_end, children[i].extent.start.line)
    region.body_end_stmt = pop_end
    SHAPE.keep(region, PopRelease(parsed.text(push_start, push_end).strip()))
    analysis = RegionAnalysis(parsed, vocab, op.key)
    analysis.block(statements, is_switch_body=False)
    if analysis.exits:  # leaving a push/pop pair by a jump is undefined: never moved
        analysis.refuse(Reason.CANCELLATION_CLEANUP, region.line)
    if asynchronous(parsed) or cancellation_point_reached(region, vocab):
        analysis.refuse(Reason.CANCELLATION_CLEANUP, region.line, first=True)
    return region, analysis


def _statement_end(parsed: ParsedFile, end: int) -> int:
    """end, past the `;` that follows it (a push or pop invocation's own)."""
    rest = parsed.text(end, end + 64)
    m = re.match(r"\s*;", rest)
    return end + m.end() if m else end


def _pop_child(parsed: ParsedFile, children: list[ci.Cursor]) -> tuple[int, int] | None:
    """(start, end past its `;`) of the pop a push block's statements end with (glibc: the pop's
    empty `do { } while (0)` is the block's last statement)."""
    if not children:
        return None
    start, end = stmt_range(parsed, children[-1])
    if not _POP.match(parsed.text(start, end)):
        return None
    return start, _statement_end(parsed, end)


def _pair_after_lock(parsed: ParsedFile, children: list[ci.Cursor], i: int):
    """`lock(&m); push(..); S; pop(1);`: the push/pop pair is the lock's next statement."""
    if i + 1 >= len(children) or children[i + 1].kind != K.DO_STMT:
        return None
    pair_start, _ = stmt_range(parsed, children[i + 1])
    if not _PUSH.match(parsed.text(pair_start, pair_start + 64)):
        return None
    for home in (n for n in preorder(children[i + 1]) if n.kind == K.COMPOUND_STMT):
        inner = child_nodes(home)
        if (pop := _pop_child(parsed, inner)) is not None:
            push_end = _push_end(parsed, pair_start)
            statements = [c for c in inner[:-1] if stmt_range(parsed, c)[0] >= push_end]
            return pair_start, push_end, home, statements, *pop
    return None


def _pair_around_lock(parsed: ParsedFile, compound: ci.Cursor, children: list[ci.Cursor], i: int):
    """`push(..); lock(&m); S; pop(1);`: the lock's block is the push/pop pair's own."""
    pair_start = compound.extent.start.offset
    if not _PUSH.match(parsed.text(pair_start, pair_start + 64)):
        return None
    pop = _pop_child(parsed, children)
    push_end = _push_end(parsed, pair_start)
    if pop is None or any(stmt_range(parsed, c)[0] >= push_end for c in children[:i]):
        return None  # the lock is not the pair's first statement
    return pair_start, push_end, compound, children[i + 1 : -1], *pop


def _push_end(parsed: ParsedFile, push_start: int) -> int:
    """Just past `pthread_cleanup_push(routine, arg);`."""
    text = parsed.text(push_start, push_start + 4096)
    found = call_arguments(code_only(text), text.index("(")) if "(" in text else None
    return _statement_end(parsed, push_start + found[1]) if found else push_start
