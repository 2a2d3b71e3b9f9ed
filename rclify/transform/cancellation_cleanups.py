"""Sections under `pthread_cleanup_push(unlock, &m)`: when they may be extracted, and the shape
closed by `pthread_cleanup_pop(1)`.

A thread cancelled while it holds m runs the handler, which unlocks m: it must be cancelled where
it waits, on its own thread, holding the lock.  A section on an RCL server would never see the
cancel (squashfs-tools cancels its workers while they wait on a condvar: the canceller's
pthread_join hung).  A section that reaches no cancellation point (cancellation_point_reached) is
extracted all the same: a deferred cancel never lands while the lock is held, in the original or
on a server, so the handler finds the lock as it would have (taken only by code outside the
section, which stays where it was).  Asynchronous cancellation (PTHREAD_CANCEL_ASYNCHRONOUS
anywhere in the file) lands anywhere: every such section stays hybrid.

`pthread_cleanup_pop(1)` runs the handler, so where the pushed handler is the region's own unlock
the pop is the region's unlock (pop_released_region):

    push(unlock, &m); lock(&m); S; pop(1);      lock(&m); push(unlock, &m); S; pop(1);
  both become
    push(unlock, &m); <S run under m>; pop(0);

Sound when S reaches no cancellation point and leaves only through the pop (a jump out of a
push/pop pair is undefined in POSIX and is refused here): in the original the lock is held from
the lock to the pop's unlock and the handler cannot run in between, since nothing there acts on a
deferred cancel (the lock and push calls are no cancellation points); in the result the section
takes and releases m by itself, and pop(0) removes the handler without running it, as pop(1) did
after it ran.  The push stays where it was, so a thread cancelled before or after still runs
nothing of S, as before.
"""

import re

import clang.cindex as ci

from rclify import pthread_api
from rclify.ctext.cparse import ParsedFile, statement_range as stmt_range
from rclify.ctext.cursors import child_nodes, preorder
from rclify.ctext.tokens import call_arguments, code_only
from rclify.transform.lock_statements.calls import classify
from rclify.transform.refusals import Reason
from rclify.transform.region_walk import RegionAnalysis
from rclify.transform.regions import Region
from rclify.transform.thread_safe_calls import PURE, SETS_ERRNO
from rclify.transform.vocabulary import LockOp, Vocabulary

K = ci.CursorKind

_CLEANUP = re.compile(r"\bpthread_cleanup_(push|pop)\s*\(")
_PUSH = re.compile(r"pthread_cleanup_push\s*\(")
_POP = re.compile(r"pthread_cleanup_pop\s*\(\s*(\w+)\s*\)")

# what a section may call and reach no cancellation point: functions that never block (the
# server allowlist's, but the condvar waits) and the compiler's builtins
_NOT_CANCELLATION_POINTS = (PURE | SETS_ERRNO) - pthread_api.WAITS


def cancellation_point_reached(region: Region, vocab: Vocabulary) -> bool:
    """May the section reach a cancellation point (a condvar wait, I/O, a sleep, or anything not
    known not to)?  Any call through a pointer, of a function of the tree or of an unknown one
    counts as reaching one."""
    return any(not (n.spelling in _NOT_CANCELLATION_POINTS or n.spelling.startswith("__builtin_")
                    or n.spelling in vocab.names()) for n in region.section_calls())


def asynchronous(parsed: ParsedFile) -> bool:
    """Does the file turn on asynchronous cancellation (a cancel lands anywhere, not at points)?"""
    return b"PTHREAD_CANCEL_ASYNCHRONOUS" in parsed.data


def check_cancellation_cleanups(parsed: ParsedFile, vocab: Vocabulary, body: ci.Cursor, regions: list[Region]) -> None:
    """A region inside `pthread_cleanup_push(unlock, &m) ... pthread_cleanup_pop(...)` on its own
    lock, closed by its own unlock, stays hybrid (cancellation-cleanup) when its section may reach a
    cancellation point or the file cancels asynchronously (see the module)."""
    start = body.extent.start.offset
    code = code_only(parsed.text(start, max((r.start for r in regions), default=start)))
    if "pthread_cleanup_push" not in code:
        return
    for region in regions:
        for call in _open_pushes(code, start, region.start):
            op = classify(call, vocab) if call else None
            if op is not None and op.kind == "unlock" and op.key == region.lock.key:
                if asynchronous(parsed) or region.problems or cancellation_point_reached(region, vocab):
                    region.refuse(Reason.CANCELLATION_CLEANUP, region.line, first=True)
                break


def _open_pushes(code: str, start: int, at: int) -> list[str]:
    """The pthread_cleanup_push calls still open at offset at of the function (code: its body's
    text from offset start), as `routine(arg);` ("" where not of that form)."""
    pushes: list[str] = []
    for m in _CLEANUP.finditer(code, 0, max(0, at - start)):
        if m.group(1) == "pop":
            if pushes:
                pushes.pop()
            continue
        pushes.append(_handler_call(code, m.end() - 1))
    return pushes


def _handler_call(code: str, open_paren: int) -> str:
    """`routine(arg);` of the push whose `(` is at open_paren ("" when not of that form)."""
    found = call_arguments(code, open_paren)
    args = found[0] if found else []
    routine = re.search(r"([A-Za-z_]\w*)\s*$", args[0]) if len(args) == 2 else None
    return f"{routine.group(1)}({args[1]});" if routine else ""


def pop_released_region(parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor, compound: ci.Cursor,
                        children: list[ci.Cursor], i: int, op: LockOp) -> tuple[Region, RegionAnalysis] | None:
    """The region of the lock statement children[i] when a `pthread_cleanup_pop(1)` running its
    own unlock as the handler releases it (see the module), with the analysis of its section for
    region_bounds to finish; None for any other shape."""
    if op.kind != "lock":
        return None
    lock_start, lock_end = stmt_range(parsed, children[i])
    pair = _pair_after_lock(parsed, children, i) or _pair_around_lock(parsed, compound, children, i)
    if pair is None:
        return None
    push_start, push_end, home, statements, pop_start, pop_end = pair
    push = code_only(parsed.text(push_start, push_end))
    handler = _handler_call(push, push.index("("))
    released = classify(handler, vocab) if handler else None
    pop = _POP.match(parsed.text(pop_start, pop_end))
    if released is None or released.kind != "unlock" or released.key != op.key or pop is None \
            or not pop.group(1).isdigit() or int(pop.group(1)) == 0:
        return None
    start = min(lock_start, push_start)
    body_start = push_end if lock_start < push_start else lock_end
    region = Region(parsed, function, home, op, start, body_start, pop_start, pop_end, children[i].extent.start.line)
    region.body_end_stmt = pop_end
    region.released_by_pop = parsed.text(push_start, push_end).strip()
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
