"""Every lock and unlock of the region alone in an `#if THREADS` block (widen_to_conditional_locks,
asked by region_checks.py of a region that splits an #if pair): the section exists where the locks do; elsewhere the original text stays (its lock blocks compile to
nothing there).  What else the blocks hold stays in place around the call, under the condition:
the lock's block's other statements before it, the final unlock's block's after it."""

from dataclasses import dataclass

from rclify.ctext.cparse import ParsedFile
from rclify.ctext.preprocessor import (ConditionalBlock, conditional_around, conditional_block, same_condition,
                                       splits_conditional)
from rclify.transform.regions import Region
from rclify.transform.shapes.shape import Shape, Writing


@dataclass
class ConditionalBlocks:
    """What a region widened to its #if blocks keeps for its rendering (Shape.data)."""

    line: str  # the `#if THREADS` line: the section and its call exist under it
    # what else the blocks hold, kept in place around the call under the condition: statements
    # before the lock in its block, after the final unlock in its block
    before: tuple[int, int] | None = None
    after: tuple[int, int] | None = None


class ConditionalLock(Shape):
    name = "conditional-lock"
    fixture = "conditional_lock_blocks"

    def applies(self, region: Region) -> bool:
        return self.data(region) is not None

    def conditions(self, region: Region) -> list[str]:
        return [self.data(region).line]

    def call_site(self, writing: Writing, call: str) -> str:
        region, renderer = writing.region, writing.renderer
        blocks = self.data(region)
        before = after = ""
        if blocks.before:
            a, b = blocks.before
            before = f"#line {renderer.line(a)}\n{renderer.parsed.text(a, b).rstrip()}\n"
        if blocks.after:
            a, b = blocks.after
            text = renderer.parsed.text(a, b)
            text = text[text.rfind("\n", 0, len(text) - len(text.lstrip())) + 1:]  # from its first code line
            after = f"\n#line {renderer.code_line(a)}\n{text.rstrip()}"
        return renderer.or_original(region, blocks.line, f"{before}{call}{after}")


SHAPE = ConditionalLock()


def widen_to_conditional_locks(parsed: ParsedFile, region: Region) -> bool:
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
    kept = ConditionalBlocks(lock.line)
    if data[lock.body_start:region.start].strip():
        kept.before = (lock.body_start, region.start)
    region.start, region.lock_end = lock.start, lock.end
    if final is not None:
        if data[region.end:final.body_end].strip():
            kept.after = (region.end, final.body_end)
        if final_opens_inside:
            region.end = final.end
        else:
            region.body_end, region.end = final.start, final.end
    for exit_, block in zip(region.exits, blocks):
        exit_.unlock_start, exit_.tail_start = block.start, block.end
    region.body_end_stmt = region.end
    SHAPE.keep(region, kept)
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


def condition_of(region: Region) -> str:
    """The `#if THREADS` line of a region widened to its #if blocks; "" for any other."""
    blocks = SHAPE.data(region)
    return blocks.line if blocks is not None else ""
