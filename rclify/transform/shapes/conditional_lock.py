"""Every lock and unlock of the region alone in an `#if THREADS` block (region_checks.py): the
section exists where the locks do; elsewhere the original text stays (its lock blocks compile to
nothing there).  What else the blocks hold stays in place around the call, under the condition:
the lock's block's other statements before it, the final unlock's block's after it."""

from rclify.transform.regions import Region
from rclify.transform.shapes.shape import Shape, Writing


class ConditionalLock(Shape):
    name = "conditional-lock"
    fixture = "conditional_lock_blocks"

    def applies(self, region: Region) -> bool:
        return bool(region.conditional_lock)

    def call_site(self, writing: Writing, call: str) -> str:
        region, renderer = writing.region, writing.renderer
        before = after = ""
        if region.conditional_before:
            a, b = region.conditional_before
            before = f"#line {renderer._line(a)}\n{renderer.parsed.text(a, b).rstrip()}\n"
        if region.conditional_after:
            a, b = region.conditional_after
            text = renderer.parsed.text(a, b)
            text = text[text.rfind("\n", 0, len(text) - len(text.lstrip())) + 1:]  # from its first code line
            after = f"\n#line {renderer._code_line(a)}\n{text.rstrip()}"
        return renderer._or_original(region, region.conditional_lock, f"{before}{call}{after}")


SHAPE = ConditionalLock()
