"""A bare block `{ T x = ...; unlock(&m); use(x); }` of the home block in which the section ends
(unlock_in_bare_block, asked by region_close.py's walk to the unlock): the section takes what precedes the
unlock in it, the caller the rest.  The block's `{` stays in the caller: the call site opens it,
the rest of the block closes it."""

import clang.cindex as ci

from rclify.ctext.cursors import child_nodes, preorder
from rclify.transform.region_walk import RegionAnalysis
from rclify.transform.regions import Region, unlabeled
from rclify.transform.shapes.shape import Shape, Writing

K = ci.CursorKind


class OpenBlock(Shape):
    name = "open-block"
    fixture = "conditional_bare_block"

    def applies(self, region: Region) -> bool:
        return region.open_block is not None

    def body(self, writing: Writing) -> str:
        region, render = writing.region, writing.renderer.render_range
        lbrace = region.open_block.extent.start.offset
        return render(region.lock_end, lbrace, writing.edits) + render(lbrace + 1, region.body_end, writing.edits)

    def call_site(self, writing: Writing, call: str) -> str:
        return "{ " + call


SHAPE = OpenBlock()


def unlock_in_bare_block(analysis: RegionAnalysis, child: ci.Cursor, key: str) -> int | None:
    """The index of the unlock of key among a bare block's statements, when the block is a
    statement of its own (not a loop's or an if's body), that unlock is its first statement that
    takes or releases key, and it is no statement's branch; else None."""
    if child.kind != K.COMPOUND_STMT:
        return None
    for i, stmt in enumerate(child_nodes(child)):
        op = analysis.op_of(unlabeled(stmt))
        if op is not None and op.key == key:
            return i if op.kind == "unlock" and unlabeled(stmt) is stmt else None
        if any(c.kind == K.CALL_EXPR and (o := analysis.op_of(c)) is not None and o.key == key
               for c in preorder(stmt)):
            return None  # this lock taken or released deeper in the block first: not our shape
    return None
