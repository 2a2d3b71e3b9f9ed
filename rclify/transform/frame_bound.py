"""Code a section may not take into another function: what belongs to the frame it runs in.

A section's code runs in the section's function (under RCL, on a server thread's stack): memory
alloca gives is that frame's, freed when the section returns; the frame and return addresses are
that frame's.  Such a section stays hybrid (Reason.ALLOCA, Reason.FRAME_ADDRESS).
"""

from rclify.transform.refusals import Reason, Refusal
from rclify.transform.regions import Region
from rclify.transform.thread_safe_calls import FRAME_ADDRESSES, STACK_ALLOCATION


def check(region: Region) -> None:
    """Refuses a section that calls alloca or names its frame (Reason.ALLOCA, FRAME_ADDRESS); the
    code that runs in the caller (exits' tails, windows) may.  Read from the AST, so a macro that
    expands to them is seen too."""
    for node in region.section_calls():
        if node.spelling in STACK_ALLOCATION:
            raise Refusal(Reason.ALLOCA)
        if node.spelling in FRAME_ADDRESSES:
            raise Refusal(Reason.FRAME_ADDRESS)
