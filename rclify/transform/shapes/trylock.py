"""`if (pthread_mutex_trylock(&m) == 0) { ...; unlock; ... } [else ...]`: the section is the
then-block up to its unlock; the rest of the then-block and the else branch run in the caller,
told by the section whether it got the lock (render.py's call site, paper Algorithm 3)."""

import clang.cindex as ci

from rclify.transform.regions import Region
from rclify.transform.shapes.shape import Shape, StatementAt

K = ci.CursorKind


class Trylock(Shape):
    name = "trylock"
    fixture = "trylock_then_else"

    def applies(self, region: Region) -> bool:
        return region.is_trylock

    def region_at(self, at: StatementAt) -> Region | None:
        if at.op is not None or at.statement.kind != K.IF_STMT:
            return None
        from rclify.transform import region_bounds  # its bounds move here next (issue 23)
        return region_bounds._trylock_region_at(at.parsed, at.vocab, at.function, at.compound, at.statement)


SHAPE = Trylock()
