"""What is checked over a region once its bounds are known (region_bounds.py finds them).

finish_region, run on each region once its end is known, gives it the exits and windows of its walk
(region_walk.py) and its problems, with those only the whole region shows: a lock still held at
its end (hand-over-hand), setjmp/longjmp, va_list (but for the variadic reads, variadic_reads,
that may run before the lock), gotos taken with the lock held to a label outside it, a window cut
by an #if block.  Once every region of a function is known: exits inside nested sections, labels
targeted from outside, #if blocks split (unless every lock and unlock sits alone in an #if block
testing the same thing: the region is widened to take them in).

The shapes whose bounds finish their regions call finish_region; this module asks two shapes'
steps (conditional_lock, variadic_reads.VA).  No import cycle: importing a shape imports no
other (the registry is shapes/registry.py).
"""

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import preorder
from rclify.ctext.preprocessor import splits_conditional
from rclify.ctext.tokens import identifiers_used
from rclify.transform.refusals import Reason
from rclify.transform.region_walk import RegionAnalysis
from rclify.transform.regions import Region, goto_label
from rclify.transform.shapes import conditional_lock
from rclify.transform.shapes.variadic_reads import VA

K = ci.CursorKind

SETJMP = {"setjmp", "_setjmp", "sigsetjmp", "__sigsetjmp", "longjmp", "siglongjmp", "_longjmp"}


def finish_region(region: Region, analysis: RegionAnalysis) -> None:
    """The checks over the whole region once its end is known; its exits and problems."""
    parsed = region.parsed
    if analysis.other_locks:
        analysis.refuse(Reason.HAND_OVER_HAND, region.line)
    names = identifiers_used(parsed.text(region.lock_end, region.body_end))
    if names & SETJMP:
        analysis.refuse(Reason.SETJMP, region.line)
    if region.lifted is not None:  # run before the lock (variadic_reads)
        names = identifiers_used(parsed.text(region.lock_end, region.lifted[0])
                                 + parsed.text(region.lifted[1], region.body_end))
    if names & VA:
        analysis.refuse(Reason.VA_LIST, region.line)
    for label, line in analysis.gotos_held:
        target = _label_offset(region.function, label)
        if target is None or not (region.lock_end <= target < region.body_end):
            analysis.refuse(Reason.JUMP_OUT_WHILE_LOCKED, line)
    region.exits = analysis.exits
    region.windows = analysis.windows
    region.unrecognized = region.unrecognized or analysis.unrecognized
    region.unlock_effects += analysis.unlock_effects
    for window in region.windows:  # its pieces go to two functions: no #if block may span them
        if splits_conditional(parsed.text(window.unlock_start, window.relock_end)):
            analysis.refuse(Reason.PREPROCESSOR_CONDITIONAL, window.line)
    region.problems = _unique(analysis.problems)


def check_nested_exits(regions: list[Region]) -> None:
    """A scoped lock statement's or a lock guard's exit (a jump that releases the lock: continue,
    return, break, goto) inside a section nested in it would leave the nested section's function,
    not its own: the outer one stays hybrid."""
    for region in regions:
        for inner in regions:
            if inner is not region and region.contains(inner) and any(
                    inner.start <= e.unlock_start < inner.end for e in region.exits):
                region.refuse(Reason.EXIT_IN_NESTED_SECTION, region.line)
                break


def _label_offset(function: ci.Cursor, label: str) -> int | None:
    for node in preorder(function):
        if node.kind == K.LABEL_STMT and node.spelling == label:
            return node.extent.start.offset
    return None


def check_labels(parsed: ParsedFile, function: ci.Cursor, regions: list[Region]) -> None:
    """A label inside a region must not be the target of a goto from outside it."""
    labels = {n.spelling: n.extent.start.offset for n in preorder(function) if n.kind == K.LABEL_STMT}
    gotos = [(n.extent.start.offset, goto_label(n)) for n in preorder(function) if n.kind == K.GOTO_STMT]
    for region in regions:
        for goto_at, label in gotos:
            target = labels.get(label)
            if target is None:
                continue
            inside = region.lock_end <= target < region.body_end
            in_tail = any(e.tail_start <= goto_at < e.tail_end for e in region.exits)  # runs unlocked
            from_inside = region.lock_end <= goto_at < region.body_end and not in_tail
            if inside and not from_inside:
                region.refuse(Reason.LABEL_TARGETED_FROM_OUTSIDE, region.line)
                break


def check_preprocessor(parsed: ParsedFile, regions: list[Region]) -> None:
    for region in regions:
        if splits_conditional(parsed.text(region.start, region.end)) and not conditional_lock.widen_to_conditional_locks(parsed, region):
            region.refuse(Reason.PREPROCESSOR_CONDITIONAL, region.line)


def _unique(problems: list[tuple[str, int]]) -> list[tuple[str, int]]:
    seen, out = set(), []
    for p in problems:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out
