"""What is checked over a region once its bounds are known (region_bounds.py finds them).

finish_region, run on each region once its end is known, gives it the exits and windows of its walk
(region_walk.py) and its problems, with those only the whole region shows: a lock still held at
its end (hand-over-hand), setjmp/longjmp, va_list (but for the variadic reads, variadic_reads,
that may run before the lock), gotos taken with the lock held to a label outside it, a window cut
by an #if block.  Once every region of a function is known: exits inside nested sections, labels
targeted from outside, #if blocks split (unless every lock and unlock sits alone in an #if block
testing the same thing: the region is widened to take them in).
"""

import re

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile, statement_range as stmt_range
from rclify.ctext.cursors import preorder
from rclify.ctext.preprocessor import (ConditionalBlock, conditional_around, conditional_block, same_condition,
                                       splits_conditional)
from rclify.ctext.tokens import identifiers_used
from rclify.transform.refusals import Reason
from rclify.transform.region_walk import RegionAnalysis
from rclify.transform.regions import Region, goto_label, no_return_call

K = ci.CursorKind

SETJMP = {"setjmp", "_setjmp", "sigsetjmp", "__sigsetjmp", "longjmp", "siglongjmp", "_longjmp"}
VA = {"va_start", "va_arg", "va_end", "va_copy", "__builtin_va_start", "__builtin_va_arg", "__builtin_va_end"}


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


_VA_START = re.compile(r"va_start\(\w+,\w+\);")
_VA_ARG = re.compile(r"\w+=va_arg\(\w+,[\w\s*]+\);")
_VA_END = re.compile(r"va_end\(\w+\);")


def variadic_reads(parsed: ParsedFile, region: Region, analysis: RegionAnalysis,
                   following: list[ci.Cursor]) -> tuple[int, int] | None:
    """`va_start(ap, last); x = va_arg(ap, T); ... va_end(ap);` among the region's own statements
    (libmicrohttpd's MHD_set_connection_option): reading the function's own arguments into its
    locals touches nothing another thread sees, so these statements may run before the lock
    (va_start cannot move into the section's function).  Their span when every path of the
    region reaches them (no exit, return or goto before) and nothing before them in the region
    uses the va_list or the locals they set; else None (the region stays hybrid: va_list)."""
    spans = [stmt_range(parsed, c) for c in following if c.extent.start.offset < region.body_end]
    texts = [re.sub(r"\s+", "", parsed.text(*span)) for span in spans]
    first = next((i for i, t in enumerate(texts) if _VA_START.fullmatch(t)), None)
    if first is None:
        return None
    last = next((i for i in range(first + 1, len(texts)) if not _VA_ARG.fullmatch(texts[i])), None)
    if last is None or not _VA_END.fullmatch(texts[last]):
        return None
    lifted = (spans[first][0], spans[last][1])
    rest = parsed.text(region.lock_end, lifted[0]) + parsed.text(lifted[1], region.body_end)
    if identifiers_used(rest) & VA:
        return None  # the va_list used elsewhere in the region too
    va_list = texts[first][len("va_start("):].split(",")[0]
    set_here = {va_list} | {t.split("=")[0] for t in texts[first + 1 : last]}
    if identifiers_used(parsed.text(region.lock_end, lifted[0])) & set_here:
        return None
    if any(e.unlock_start < lifted[0] for e in analysis.exits) or any(
            n.kind in (K.RETURN_STMT, K.GOTO_STMT, K.INDIRECT_GOTO_STMT) or no_return_call(n)
            for c in following[:first] for n in preorder(c)):
        return None  # some path would not reach them: va_arg must not run there
    return lifted


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
        if splits_conditional(parsed.text(region.start, region.end)) and not _widen_to_conditional_locks(parsed, region):
            region.refuse(Reason.PREPROCESSOR_CONDITIONAL, region.line)


def _widen_to_conditional_locks(parsed: ParsedFile, region: Region) -> bool:
    """`#if THREADS / lock / #endif ... #if THREADS / unlock / #endif`: when the lock, the final
    unlock and every exit's unlock each sit in an #if block testing the same thing, the region
    takes the blocks in (the section exists under that condition, render.py) and returns True.
    The lock's block may hold statements before it (`mhd_assert(...); lock(&m);`), the final
    unlock's statements after it (`unlock(&m); destroy(&m);`): they stay where they are, under
    the condition; the final unlock's block may also open inside the region (its statements
    before the unlock are the section's); an exit's unlock must be alone in its block (its tail
    runs in the caller)."""
    data = parsed.data
    lock = conditional_block(data, region.start, region.lock_end)
    if lock is None or region.is_trylock or data[region.lock_end:lock.body_end].strip():
        return False
    has_end = region.body_end < region.end
    final = conditional_block(data, region.body_end, region.end) if has_end else None
    if has_end and (final is None or not same_condition(final.line, lock.line)):
        return False
    # the final unlock's block may open before it, inside the section (libmicrohttpd's
    # close_all_connections: `#if THREADS / join the threads / unlock / #endif`): its statements
    # there are the section's, its #if line goes from the section, written under the condition
    final_opens_inside = final is not None and bool(data[final.body_start:region.body_end].strip())
    blocks = [conditional_around(data, e.unlock_start, e.tail_start) for e in region.exits]
    if any(b is None or not same_condition(b.line, lock.line) for b in blocks):
        return False
    inner: list[ConditionalBlock] = []  # a loop-carried section's unlock and relock blocks
    if region.loop is not None:
        inner = [conditional_block(data, *region.loop.unlock), conditional_block(data, *region.loop.relock)]
        if any(b is None or not same_condition(b.line, lock.line) for b in inner):
            return False
    new_end = final.end if final is not None else region.end
    if splits_conditional(parsed.text(lock.start, new_end)):
        return False
    if data[lock.body_start:region.start].strip():
        region.conditional_before = (lock.body_start, region.start)
    region.start, region.lock_end = lock.start, lock.end
    if final is not None:
        if data[region.end:final.body_end].strip():
            region.conditional_after = (region.end, final.body_end)
        if final_opens_inside:
            region.end = final.end
        else:
            region.body_end, region.end = final.start, final.end
    for exit_, block in zip(region.exits, blocks):
        exit_.unlock_start, exit_.tail_start = block.start, block.end
    region.body_end_stmt = region.end
    region.conditional_lock = lock.line
    # under the condition the section is written for, the loop's own #if lines of it go
    # (the unlock's block ends in the unlocked part, the relock's starts there)
    region.blank_directives = sorted({span for b in inner for span in ((b.start, b.body_start), (b.body_end, b.end))}
                                     | ({(final.start, final.body_start)} if final_opens_inside else set()))
    if region.loop is not None:  # its prelude and its part after the loop end at the blocks now
        loop = region.loop
        loop.prelude = (region.lock_end, loop.prelude[1])
        if loop.after is not None:
            loop.after = (loop.after[0], region.body_end)
    return True


def _unique(problems: list[tuple[str, int]]) -> list[tuple[str, int]]:
    seen, out = set(), []
    for p in problems:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out
