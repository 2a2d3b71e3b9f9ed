"""`WITH_LOCK(m) { ... }` (lock_statements.scoped_lock): a `for` that locks in its first clause
and unlocks in its third; the section is its body."""

import clang.cindex as ci

from rclify.ctext.cparse import ParsedFile
from rclify.transform.regions import Region
from rclify.transform.shapes.shape import Shape, StatementAt
from rclify.transform.vocabulary import Vocabulary


class Scoped(Shape):
    name = "scoped"
    fixture = "macro_scoped_for"

    def applies(self, region: Region) -> bool:
        return region.started_by == self.name

    def region_at(self, at: StatementAt) -> Region | None:
        if at.op is not None:
            return None
        from rclify.transform import region_bounds  # its bounds move here next (issue 23)
        return region_bounds._scoped_region_at(at.parsed, at.vocab, at.function, at.compound, at.statement)

    def regions_in(self, parsed: ParsedFile, vocab: Vocabulary, function: ci.Cursor,
                   body: ci.Cursor) -> list[Region]:
        from rclify.transform import region_bounds  # its bounds move here next (issue 23)
        return region_bounds._scoped_bodies(parsed, vocab, function, body)


SHAPE = Scoped()
