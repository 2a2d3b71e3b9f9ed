"""The macros one translation unit's preprocessor defined, in the order it read them: which
definition of a name is in force at a point of the unit (the last one read before it).

libclang lists a unit's preprocessing entities, macro definitions and macro uses, in the order the
preprocessor met them (a header's at its #include): only the #if branches the unit compiles are in
it, and a name defined twice (`#undef` then `#define`) is there twice.  (Declarations are listed
after all of them: a function's own row says nothing of where it is.)  A point of a file is the
first macro use or definition of that file at or after it: whatever was defined before that entity
is in force there.  A function that uses a macro (every lock statement through a macro does) has
one in its body.  `#undef` leaves no entity: a name undefined and not defined again still reads as
its last definition.
"""

import bisect
from dataclasses import dataclass, field
from pathlib import Path

import clang.cindex as ci

from rclify.ctext.cursors import TopLevel, top_level

_ENTITIES = {ci.CursorKind.MACRO_DEFINITION.value, ci.CursorKind.MACRO_INSTANTIATION.value}


@dataclass
class UnitMacros:
    listed: TopLevel
    # name -> the rows of its definitions in the unit's sequence, and their sites (file, offset)
    rows: dict[str, list[int]] = field(default_factory=dict)
    sites: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    _entities: dict[str, tuple[list[int], list[int]]] = field(default_factory=dict)  # file -> (starts, rows)

    def defines(self, name: str) -> bool:
        return name in self.rows

    def in_force(self, name: str, before: int | None = None) -> tuple[str, int] | None:
        """The site of name's definition in force before row `before` (None: at the unit's end)."""
        rows = self.rows.get(name)
        if not rows:
            return None
        at = len(rows) if before is None else bisect.bisect_left(rows, before)
        return self.sites[name][at - 1] if at else None

    def point(self, path: Path, offset: int) -> int | None:
        """The row of the first macro use or definition in path at or after offset: what is in
        force at offset is what was defined before it (None: no such entity, the unit's end)."""
        here = str(path)
        if here not in self._entities:
            starts, rows = [], []
            for row, (kind, file, start, *_) in enumerate(self.listed.listing.rows):
                if kind in _ENTITIES and file and self.listed.file_name(file) == here:
                    starts.append(start)
                    rows.append(row)
            self._entities[here] = (starts, rows)
        starts, rows = self._entities[here]
        at = bisect.bisect_left(starts, offset)
        return rows[at] if at < len(rows) else None


def unit_macros(tu: ci.TranslationUnit) -> UnitMacros:
    """The unit's macro definitions that are in a file (not builtins nor -D flags), by name."""
    try:
        return tu._rclify_unit_macros
    except AttributeError:
        pass
    listed = top_level(tu)
    found = UnitMacros(listed)
    for definition in listed.macro_definitions:
        if definition.file is not None:
            found.rows.setdefault(definition.name, []).append(definition.row)
            found.sites.setdefault(definition.name, []).append((definition.file, definition.start))
    tu._rclify_unit_macros = found
    return found
