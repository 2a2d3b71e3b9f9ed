"""Where a region that ends at an unlock of its block ends: the walk from its lock to the statement
that releases the lock on every path (close), shared by a lock statement's own region
(region_bounds.py) and a trylock's then-block (shapes/trylock.py).

It asks two shapes' steps (shapes/open_block.py, shapes/variadic_reads.py); the trylock shape asks
close.  No import cycle: the shapes' registry is shapes/registry.py, not the package (which
imports no shape).
"""

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile, statement_range as stmt_range
from rclify.ctext.cursors import child_nodes
from rclify.ctext.tokens import identifiers_used
from rclify.transform.region_checks import finish_region
from rclify.transform.refusals import Reason
from rclify.transform.region_walk import HELD, RELEASED, RegionAnalysis
from rclify.transform.regions import Region, tail_extent, unlabeled
from rclify.transform.shapes import open_block, variadic_reads
from rclify.transform.vocabulary import Vocabulary

K = ci.CursorKind


def close(parsed: ParsedFile, vocab: Vocabulary, region: Region, following: list[ci.Cursor],
           unended_reason: Reason, windows: bool = False) -> None:
    """Walks the statements after the lock until it is released on every path; records the
    region's end, its exits, its windows (when asked for) and its problems."""
    op = region.lock
    analysis = RegionAnalysis(parsed, vocab, op.key, windows=windows)
    ended = False
    i = -1
    while i + 1 < len(following):
        i += 1
        child = following[i]
        if child.kind in (K.CASE_STMT, K.DEFAULT_STMT):
            analysis.problem(Reason.LABEL_IN_REGION, child)
            break
        inner = unlabeled(child)
        child_op = analysis.op_of(inner)
        if child_op is not None and child_op.key == op.key and child_op.kind == "unlock" \
                and _held_label_after_exit(analysis, following, i) is not None:
            # `unlock; return; error: <locked>; unlock;`: a goto of the section reaches the label
            # with the lock held: this unlock and its tail are an exit, the section goes on there
            analysis.unlock_effects += child_op.effect_vars
            i = analysis.exit_at(following, i, child_op) - 1
            continue
        if child_op is not None and child_op.key == op.key and child_op.kind == "unlock":
            # `out_unlock: unlock(&m);`: a goto of the section to the label ends the section there
            region.end_label = inner is not child and child.kind == K.LABEL_STMT
            region.body_end = stmt_range(parsed, inner if region.end_label else child)[0]
            region.end = stmt_range(parsed, inner)[1]
            region.unlock_effects = list(child_op.effect_vars)
            region.end_result = child_op.result
            region.end_work = child_op.work
            region.end_work_of = child_op.wrapper if child_op.work else None
            ended = True
            break
        if (at := open_block.unlock_in_bare_block(analysis, child, op.key)) is not None:
            # `{ T x = ...; unlock(&m); use(x); }`: the section ends at that unlock (zstd's POOL_thread)
            block = child_nodes(child)
            if analysis.block(block[:at], is_switch_body=False) == {HELD}:
                unlock = unlabeled(block[at])
                unlock_op = analysis.op_of(unlock)
                region.body_end, region.end = stmt_range(parsed, block[at])[0], stmt_range(parsed, unlock)[1]
                region.end_result, region.end_work = unlock_op.result, unlock_op.work
                region.end_work_of = unlock_op.wrapper if unlock_op.work else None
                region.open_block = child
                ended = True
            break
        states = analysis.stmt(child)
        if states == {RELEASED} or not states:
            region.body_end = region.end = stmt_range(parsed, child)[1]
            # `while (1) { ... unlock; return v; }`: no path falls through, the section ends by its
            # exits only (the call site takes the last one unconditionally: no -Wreturn-type)
            region.ends_by_exit = not states and bool(analysis.exits) and not region.is_trylock
            ended = True
            break
        if RELEASED in states:
            break  # unbalanced: already reported
    if not ended and not analysis.problems:
        analysis.refuse(unended_reason, region.line)
    if not ended:
        region.body_end = region.end = region.lock_end
    region.body_end_stmt = region.end
    if ended and not region.is_trylock \
            and identifiers_used(parsed.text(region.lock_end, region.body_end)) & variadic_reads.VA:
        region.lifted = variadic_reads.lifted_reads(parsed, region, analysis, following)
    finish_region(region, analysis)


def _held_label_after_exit(analysis: RegionAnalysis, following: list[ci.Cursor], i: int) -> int | None:
    """The index of the statement after the unlock following[i] when it is `unlock; <tail>;
    jump;` followed by a label that a goto of the section, taken with the lock held, targets
    (nng's `goto error; ... unlock; return; error: cleanup; unlock;`); else None."""
    after, ends_with_jump = tail_extent(following, i)
    label = following[after] if ends_with_jump and after < len(following) else None
    held = {name for name, _ in analysis.gotos_held}
    return after if label is not None and label.kind == K.LABEL_STMT and label.spelling in held else None
