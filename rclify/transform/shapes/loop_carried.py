"""A worker loop that unlocks and relocks in its body (loop_regions.py): one section per round.
Its body: P and the loop's first clause on the first run; D, the step and the test on the next
ones; A; then the flag that has the caller run B (released_text) before the section runs again.
A hoisted declaration cannot be placed in such a body: refused."""

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
        return _loop_body(writing.renderer, writing.region, writing.exit_edits)


SHAPE = LoopCarried()


def _loop_body(renderer, region: Region, exit_edits: list[tuple[int, int, str]]) -> str:
    parts = region.loop
    edits = exit_edits + [(a, b, "\n") for a, b in region.blank_directives]

    def text(span: tuple[int, int] | None) -> str:
        if span is None:
            return ""
        return f"#line {renderer.code_line(span[0])}\n" + renderer.render_range(*span, edits).strip("\n") + "\n"

    def expression(span: tuple[int, int] | None) -> str:
        return renderer.render_range(*span) if span is not None else ""

    run_b = len(region.exits) + 1
    step = f", {expression(parts.step)}" if parts.step is not None else ""
    test = f"if (!({expression(parts.test)}))\n            break;\n" if parts.test is not None else ""
    unlock_work = f"{parts.unlock_op.work}\n" if parts.unlock_op.work else ""
    relock_work = f"{parts.relock_op.work}\n" if parts.relock_op.work else ""
    relock_result = f"{parts.relock_op.result}\n" if parts.relock_op.result else ""
    # C89 trees (libuv builds with -std=gnu89): no declaration in a for's first clause
    lock_work = f"{region.lock.work}\n" if region.lock.work else ""
    return (f"    if (!rclify_resume) {{\n{lock_work}{text(parts.prelude)}"
            + (f"        {expression(parts.init)};\n" if parts.init is not None else "")
            + f"    }}\n    {{\n    int rclify_pass;\n    for (rclify_pass = rclify_resume; ; rclify_pass = 0{step}) {{\n"
            + f"        if (rclify_pass) {{\n{relock_result}{relock_work}{text(parts.retaken)}            continue;\n        }}\n"
            + f"        {test}{text(parts.held)}{unlock_work}        return {run_b};\n    }}\n    }}\n"
            + text(parts.after))


def released_text(renderer, region: Region) -> str:
    """B, run by the caller between two runs of a loop-carried section, with the mid-loop
    unlock's result kept (`err = 0;`)."""
    parts = region.loop
    result = f"{parts.unlock_op.result} " if parts.unlock_op.result else ""
    blanks = [(a, b, "\n") for a, b in region.blank_directives]
    return result + renderer.render_range(*parts.released, blanks).strip()
