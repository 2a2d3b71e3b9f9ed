"""Where a section runs: on its caller's thread (rcl_execute_local) when it may use
thread-local state, and why; lock_config.h's per-section overrides (SectionOverride) have the
last word."""

from dataclasses import dataclass

from rclify.ctext.cursors import offsets, preorder
from rclify.lock_config import SectionOverride
from rclify.transform.regions import Region
from rclify.transform.thread_state import WAIT_CALLS, ThreadState


@dataclass
class Placement:
    """Where a section runs, and why."""

    local: bool  # on the caller's thread (rcl_execute_local)
    because: str = ""  # what the analysis found thread-bound ("" when nothing)
    override: SectionOverride | None = None  # lock_config.h's decision, which wins
    may_wait: bool = False  # waits on a condvar: never on a combiner (rcl_execute_may_wait)


def runs_on_caller_thread(region: Region, state: ThreadState, section: str,
                          overrides: dict[str, SectionOverride] | None = None) -> Placement:
    """Does the section (named `section`, rclify_cs_<section>) run on its caller's thread?  Yes
    when the analysis cannot show it uses no thread-local state (thread_state.py), unless
    lock_config.h says otherwise for this section."""
    tails = region.unlocked_spans()
    nodes = [n for n in preorder(region.home)
             if region.lock_end <= offsets(n)[0] < region.body_end
             and not any(s <= offsets(n)[0] < e for s, e in tails)]  # tails (and B) run in the caller
    because = state.section_cause(nodes) or ""
    may_wait = state.waits_on_condvar(nodes)
    for wrapper in region.wrappers_used():  # a wrapper's work runs in the section too
        because = because or (state.callee_cause(wrapper.name) or "" if wrapper.work else "")
        may_wait = may_wait or bool(wrapper.work and state.reachable({wrapper.name}) & WAIT_CALLS)
    override = (overrides or {}).get(section)
    if override is not None:
        return Placement(not override.on_server, because, override, may_wait)
    return Placement(bool(because), because, None, may_wait)
