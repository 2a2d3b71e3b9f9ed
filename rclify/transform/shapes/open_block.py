"""A bare block `{ T x = ...; unlock(&m); use(x); }` of the home block in which the section ends
(region_bounds.py): the section takes what precedes the unlock in it, the caller the rest.  The
block's `{` stays in the caller: the call site opens it, the rest of the block closes it."""

from rclify.transform.regions import Region
from rclify.transform.shapes.shape import Shape, Writing


class OpenBlock(Shape):
    name = "open-block"
    fixture = "conditional_bare_block"

    def applies(self, region: Region) -> bool:
        return region.open_block is not None

    def body(self, writing: Writing) -> str:
        region, render = writing.region, writing.renderer._render_range
        lbrace = region.open_block.extent.start.offset
        return render(region.lock_end, lbrace, writing.edits) + render(lbrace + 1, region.body_end, writing.edits)

    def call_site(self, writing: Writing, call: str) -> str:
        return "{ " + call


SHAPE = OpenBlock()
