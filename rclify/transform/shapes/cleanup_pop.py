"""`pthread_cleanup_pop(1)` running the pushed unlock is the region's unlock
(cancellation_cleanups.py): the call site keeps the push, runs the section, then pops without
running the handler, since the section has unlocked."""

from rclify.transform import cancellation_cleanups, region_checks
from rclify.transform.regions import Region
from rclify.transform.shapes.shape import Shape, StatementAt, Writing


class CleanupPop(Shape):
    name = "cleanup-pop"
    fixture = "cleanup_pop_unlock"

    def applies(self, region: Region) -> bool:
        return bool(region.released_by_pop)

    def region_at(self, at: StatementAt) -> Region | None:
        if at.op is None:
            return None
        popped = cancellation_cleanups.pop_released_region(at.parsed, at.vocab, at.function, at.compound,
                                                           at.children, at.i, at.op)
        if popped is None:
            return None
        region_checks.finish_region(*popped)
        return popped[0]

    def call_site(self, writing: Writing, call: str) -> str:
        return f"{writing.region.released_by_pop}\n{writing.indent}{call} pthread_cleanup_pop(0);"


SHAPE = CleanupPop()
