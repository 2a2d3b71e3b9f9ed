"""Code a section may not take into another function: what belongs to the frame it runs in.

A section's code runs in the section's function (under RCL, on a server thread's stack): memory
alloca gives is that frame's, freed when the section returns; the frame and return addresses are
that frame's.  Such a section stays hybrid (Reason.ALLOCA, Reason.FRAME_ADDRESS).
"""

import clang.cindex as ci

from rclify.transform.refusals import Reason, Refusal
from rclify.transform.regions import Region

K = ci.CursorKind

# Calls whose result is tied to the frame they run in: moved into the section's function they
# would allocate in, or name, its frame (under RCL, on the server's stack).
_STACK_ALLOCATION = {"alloca", "__builtin_alloca", "__builtin_alloca_with_align",
                     "__builtin_alloca_with_align_and_max"}
_FRAME_BOUND = {"__builtin_frame_address", "__builtin_return_address", "__builtin_stack_save",
                "__builtin_stack_restore", "__builtin_dwarf_cfa"}


def check(region: Region) -> None:
    """Refuses a section that calls alloca or names its frame (Reason.ALLOCA, FRAME_ADDRESS); the
    code that runs in the caller (exits' tails, windows) may.  Read from the AST, so a macro that
    expands to them is seen too."""
    tails = region.unlocked_spans()
    for node in region.parsed.nodes_of(region.compound, K.CALL_EXPR):
        at = node.extent.start.offset
        if not (region.lock_end <= at < region.body_end) or any(s <= at < e for s, e in tails):
            continue
        if node.spelling in _STACK_ALLOCATION:
            raise Refusal(Reason.ALLOCA)
        if node.spelling in _FRAME_BOUND:
            raise Refusal(Reason.FRAME_ADDRESS)
