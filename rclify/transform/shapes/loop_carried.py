"""A worker loop that unlocks and relocks in its body (loop_regions.py): one section per round,
its body written by the renderer's _loop_body (P and the loop's first clause on the first run; D,
the step and the test on the next ones; A; then the flag that runs B in the caller).  A hoisted
declaration cannot be placed in such a body: refused."""

from rclify.transform.refusals import Reason, Refusal
from rclify.transform.regions import Region
from rclify.transform.shapes.shape import Shape, Writing


class LoopCarried(Shape):
    name = "loop-carried"
    fixture = "conditional_loop_carried"

    def applies(self, region: Region) -> bool:
        return region.loop is not None

    def body(self, writing: Writing) -> str:
        if writing.hoists:
            raise Refusal(Reason.HOIST_NOT_SIMPLE)
        return writing.renderer._loop_body(writing.region, writing.exit_edits)


SHAPE = LoopCarried()
