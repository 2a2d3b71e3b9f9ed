"""Unlock/relock windows inside a region (`lock; A; unlock; B; lock; C; unlock`: regions.Window):
one resumable section.  Each window's unlock becomes a return of a flag that has the caller run
B (text), then call the section again, which resumes at the window's label (dispatch, statement).
What the caller and the section share across a window must survive it: a local live across a
window that could not be hoisted is refused (check_locals)."""

from rclify.ctext.preprocessor import guards_at, same_condition
from rclify.transform import hoisting
from rclify.transform.function_locals import Declarations
from rclify.transform.refusals import Reason, Refusal
from rclify.transform.regions import Region, Window
from rclify.transform.shapes.conditional_lock import condition_of
from rclify.transform.shapes.shape import Shape


class Windows(Shape):
    name = "windows"
    fixture = "conditional_windows"

    def applies(self, region: Region) -> bool:
        return bool(region.windows)


SHAPE = Windows()


def statement(renderer, region: Region, k: int, w: Window) -> str:
    """What window k becomes in the section: the unlock wrapper's work, the flag that has the
    caller run B, and the label the next run resumes at, after which the relock's result and its
    wrapper's work."""
    unlock_work = f"{w.unlock_op.work} " if w.unlock_op.work else ""
    relock = " ".join(x for x in (w.relock_op.result, w.relock_op.work) if x)
    return (f"{{ {unlock_work}return {len(region.exits) + k}; }}\n"
            f"rclify_window_{k}: ;{' ' + relock if relock else ''}\n#line {renderer.line(w.relock_end)}\n")


def dispatch(region: Region) -> str:
    """The section's first lines: a run after window k jumps to its label (each test under the
    #if blocks its window sits in)."""
    out = []
    for k, w in enumerate(region.windows, 1):
        under = guards(region, w)
        out += [*under, f"    if (rclify_resume == {k})\n        goto rclify_window_{k};", *["#endif"] * len(under)]
    return "\n".join(out) + "\n"


def text(renderer, region: Region, w: Window) -> str:
    """B of a window, run by the caller, with the unlock's result kept (`err = 0;`)."""
    result = f"{w.unlock_op.result} " if w.unlock_op.result else ""
    blanks = [(a, b, "\n") for a, b in region.blank_directives]
    return result + renderer.render_range(*w.released, blanks).strip()


def guards(region: Region, w: Window) -> list[str]:
    """The #if lines a window sits under inside the region (its code in the section, its B in
    the caller exist under them), but the region's own optional-locking condition: everything
    generated for the region is already under it."""
    return [g for g in guards_at(region.parsed.data, w.unlock_start, since=region.lock_end)
            if not (condition_of(region) and same_condition(g, condition_of(region)))]


def check_locals(region: Region, decls: Declarations, hoisted: set[int]) -> None:
    """A local live across a window (hoisting.live_across_windows) that could not be hoisted (a
    `for`'s own variable): refused."""
    if any(v.hash not in hoisted for v in hoisting.live_across_windows(region, decls)):
        raise Refusal(Reason.LOCAL_ACROSS_WINDOW)
