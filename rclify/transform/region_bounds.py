"""Where a function's critical regions start and end: the walk over its blocks' statements.

Each statement is asked of the shapes of shapes.STARTS in order (Shape.region_at, given a
StatementAt): an idiom's region may start at any statement (a trylock's `if`, a scoped `for`, a
guard's declaration, a statement macro, a lock whose unlock a cleanup pop runs) and end at any
later one of its block.  A lock statement none of them starts opens a plain region, this
module's: it ends where the lock is released on every path, at the unlock statement in the same
block or at a statement all of whose paths release it (region_close.py walks to it; refused so,
a worker's loop, shapes/loop_carried.py, or a region with windows).  Then each shape's
regions_in (regions no block's statement starts), then timed locks (timed_locks.py: no shape,
always refused, asked last because a call inside another region is that region's).

RegionAnalysis (region_walk.py) walks what lies between; region_checks.py checks each region
once its end is known, and, once every region is known, the whole function (labels targeted
from outside, split #if pairs, cancellation cleanups).
"""

import dataclasses

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile, statement_range as stmt_range
from rclify.ctext.cursors import child_nodes, preorder
from rclify.transform.cancellation_cleanups import check_cancellation_cleanups
from rclify.transform.lock_statements.calls import classify
from rclify.transform.lock_statements.checked import checks_result
from rclify.transform.refusals import Reason
from rclify.transform.region_checks import check_labels, check_nested_exits, check_preprocessor, finish_region
from rclify.transform.region_close import close
from rclify.transform.regions import Region, may_be_lock, unlabeled
from rclify.transform.shapes import loop_carried
from rclify.transform.shapes.registry import STARTS
from rclify.transform.shapes.shape import StatementAt
from rclify.transform.timed_locks import timed_lock_regions
from rclify.transform.vocabulary import Vocabulary

K = ci.CursorKind


def find_regions(parsed: ParsedFile, function: ci.Cursor, vocab: Vocabulary) -> list[Region]:
    """Every region of the function, outermost first, each with its problems (if any)."""
    body = next((c for c in child_nodes(function) if c.kind == K.COMPOUND_STMT), None)
    if body is None:
        return []
    regions: list[Region] = []
    claimed: list[tuple[int, int]] = []  # lock statements, whole regions: blocks inside are a macro's braces
    relocks: set[int] = set()
    naming = vocab.naming()
    for compound in (n for n in preorder(body) if n.kind == K.COMPOUND_STMT):
        if any(s <= compound.extent.start.offset < e for s, e in claimed):
            continue
        children = child_nodes(compound)
        for i, child in enumerate(children):
            inner = unlabeled(child)
            start, end = stmt_range(parsed, inner)
            if any(s <= start < e for s, e in claimed):
                continue  # a statement of a macro's expansion whose invocation is a region already
            op = classify(parsed.text(start, end), vocab) \
                if may_be_lock(inner) and naming.search(parsed.data, start, end) else None
            if op is not None:
                claimed.append((start, end))
                if op.kind == "unlock" or start in relocks:
                    continue  # a loop-carried section's relock is part of it
            region = _region_started_at(StatementAt(parsed, vocab, function, compound, children, i, op,
                                                    compound == body), claimed)
            if region is None:
                continue
            regions.append(region)
            if region.loop is not None:
                relocks.add(region.loop.relock[0])
            if region.extractable:  # a window's relock is part of the region (an exit's would not be)
                relocks.update(w.released[1] for w in region.windows)
    for shape in STARTS:
        for region in shape.regions_in(parsed, vocab, function, body):
            region.started_by = shape.name
            regions.append(region)
    regions += timed_lock_regions(parsed, vocab, function, body, regions)
    check_nested_exits(regions)
    check_labels(parsed, function, regions)
    check_preprocessor(parsed, regions)
    check_cancellation_cleanups(parsed, vocab, body, regions)
    error_line = parsed.first_error_in(function)
    if error_line is not None:
        for region in regions:
            region.refuse(Reason.PARSE_ERRORS, error_line, first=True)
    return sorted(regions, key=lambda r: r.start)


def _region_started_at(at: StatementAt, claimed: list[tuple[int, int]]) -> Region | None:
    """The region of the first shape of STARTS that starts one at the statement; else a lock
    statement's own (_lock_statement_region); else None."""
    for shape in STARTS:
        region = shape.region_at(at)
        if region is not None:
            region.started_by = shape.name
            if shape.claims_statement:
                claimed.append(stmt_range(at.parsed, at.statement))
            return region
    return _lock_statement_region(at) if at.op is not None else None


def _lock_statement_region(at: StatementAt) -> Region:
    """The region a lock statement opens: to the unlock that releases it on every path
    (region_close.py); refused so, a worker's loop (shapes/loop_carried.py), else windows."""
    parsed, vocab, op, lock_cursor = at.parsed, at.vocab, at.op, at.statement
    start, lock_end = stmt_range(parsed, lock_cursor)
    region = Region(parsed, at.function, at.compound, op, start, lock_end, lock_end, lock_end,
                    lock_cursor.extent.start.line)
    if op.kind in ("trylock", "timedlock"):
        region.refuse(Reason.TRYLOCK if op.kind == "trylock" else Reason.TIMEDLOCK, region.line)
        return region
    following = at.following
    if following and checks_result(parsed.text(*stmt_range(parsed, following[0])), op):
        region.lock_end = stmt_range(parsed, following[0])[1]  # dead once the runtime has the lock
        following = following[1:]
    reason = Reason.LOCK_UNLOCK_IN_DIFFERENT_FUNCTIONS if at.in_function_body else Reason.UNBALANCED_REGION
    fresh = dataclasses.replace(region, exits=[], problems=[], windows=[], blank_directives=[],
                                shape_data={})
    close(parsed, vocab, region, following, reason)
    if region.problems and (loop := loop_carried.loop_region(parsed, vocab, region, following)) is not None:
        region.lifted = None  # a loop-carried section's pieces keep their text: va_list refused
        finish_region(region, loop)  # a worker's loop: unlocked and locked again in its body
    elif region.problems:
        # unlocked and relocked inside (windows), the plain region's shapes and a loop's aside
        close(parsed, vocab, fresh, following, reason, windows=True)
        if fresh.windows:  # extractable, or refused for what keeps its windows from being resumed
            return fresh
    return region
