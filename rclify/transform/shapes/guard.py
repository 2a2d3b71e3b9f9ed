"""`GUARD(m);` (lock_statements.guard_lock): a `__attribute__((cleanup))` variable that holds the
lock to the end of its block; the section is the rest of the block."""

from rclify.transform.regions import Region
from rclify.transform.shapes.shape import Shape, StatementAt


class Guard(Shape):
    name = "guard"
    fixture = "cleanup_guard"

    def applies(self, region: Region) -> bool:
        return region.started_by == self.name

    def region_at(self, at: StatementAt) -> Region | None:
        if at.op is not None:
            return None
        from rclify.transform import region_bounds  # its bounds move here next (issue 23)
        return region_bounds._guard_region_at(at.parsed, at.vocab, at.function, at.compound, at.children, at.i)


SHAPE = Guard()
