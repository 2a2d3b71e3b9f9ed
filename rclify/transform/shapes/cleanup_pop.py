"""`pthread_cleanup_pop(1)` running the pushed unlock is the region's unlock
(cancellation_cleanups.py): the call site keeps the push, runs the section, then pops without
running the handler, since the section has unlocked."""

from rclify.transform.regions import Region
from rclify.transform.shapes.shape import Shape, Writing


class CleanupPop(Shape):
    name = "cleanup-pop"
    fixture = "cleanup_pop_unlock"

    def applies(self, region: Region) -> bool:
        return bool(region.released_by_pop)

    def call_site(self, writing: Writing, call: str) -> str:
        return f"{writing.region.released_by_pop}\n{writing.indent}{call} pthread_cleanup_pop(0);"


SHAPE = CleanupPop()
