"""libclang's tree, asked for once: the bindings list a cursor's children through a Python
callback per child and answer every attribute with a call through ctypes, and every step of the
analysis walks the same functions again.  What is listed here is kept with its translation unit
(an attribute of it: it goes when the unit does), so a walk after the first costs no call into
libclang.  On configured memcached, 711,000 child listings were two fifths of the transform's time."""

import ctypes
import functools
from dataclasses import dataclass, field
from pathlib import Path

import clang.cindex as ci

K = ci.CursorKind


def child_nodes(cursor: ci.Cursor) -> tuple[ci.Cursor, ...]:
    """cursor's children (shared by every caller: a tuple, not to be changed)."""
    listed = _cache(cursor._tu).children
    same_hash = listed.setdefault(cursor.hash, [])
    for known, found in same_hash:
        if known == cursor:  # a hash is not an identity: clang_equalCursors decides
            return found
    found = tuple(cursor.get_children())
    same_hash.append((cursor, found))
    return found


def preorder(cursor: ci.Cursor) -> list[ci.Cursor]:
    """cursor and every node under it, in Cursor.walk_preorder's order."""
    nodes, stack = [], [cursor]
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(reversed(child_nodes(node)))
    return nodes


@dataclass
class TopLevel:
    """A translation unit's top-level cursors that the analysis looks for, with the name of the
    file each is in (libclang's; None for a builtin), sorted out in one pass."""
    function_definitions: list[tuple[str | None, ci.Cursor]] = field(default_factory=list)
    macro_definitions: list[tuple[str | None, ci.Cursor]] = field(default_factory=list)
    macro_instantiations: list[ci.Cursor] = field(default_factory=list)  # their file: macro_uses_in

    def functions_in(self, path: Path) -> list[ci.Cursor]:
        """The function definitions written in the file path (ParsedFile.is_here's test)."""
        names = {name for name, _ in self.function_definitions if name is not None and Path(name) == path}
        return [fn for name, fn in self.function_definitions if name in names]


def top_level(tu: ci.TranslationUnit) -> TopLevel:
    cache = _cache(tu)
    if cache.top_level is None:
        found, names = TopLevel(), {}
        for cursor in child_nodes(tu.cursor):
            kind = cursor.kind
            if kind == K.MACRO_INSTANTIATION:
                found.macro_instantiations.append(cursor)
            elif kind == K.MACRO_DEFINITION:
                found.macro_definitions.append((_file_name(cursor, names), cursor))
            elif kind == K.FUNCTION_DECL and cursor.is_definition():
                found.function_definitions.append((_file_name(cursor, names), cursor))
        cache.top_level = found
    return cache.top_level


def macro_uses_in(tu: ci.TranslationUnit, path: Path) -> list[ci.Cursor]:
    """The macro instantiations written in the file path (of thousands, most are in headers)."""
    if tu.spelling == str(path):  # the main file: one cheap test each
        is_here = _is_from_main_file()
    else:
        here = str(path)

        def is_here(location: ci.SourceLocation) -> bool:
            return location.file is not None and location.file.name == here
    return [c for c in top_level(tu).macro_instantiations if is_here(c.location)]


def _file_name(cursor: ci.Cursor, names: dict[int, str]) -> str | None:
    """cursor.location.file.name without its File object and string for every cursor: thousands
    of macros are defined in a few headers; names caches each file's name by its handle."""
    handle = ci.c_object_p()
    ci.conf.lib.clang_getInstantiationLocation(cursor.location, ctypes.byref(handle), None, None, None)
    if not handle:
        return None
    key = ctypes.cast(handle, ctypes.c_void_p).value
    if key not in names:
        names[key] = ci.File(handle).name
    return names[key]


@dataclass
class _Cache:
    children: dict = field(default_factory=dict)  # cursor hash: [(cursor, its children)]
    top_level: TopLevel | None = None


def _cache(tu: ci.TranslationUnit) -> _Cache:
    try:
        return tu._rclify_cache
    except AttributeError:
        tu._rclify_cache = _Cache()
        return tu._rclify_cache


@functools.cache
def _is_from_main_file():
    """libclang's clang_Location_isFromMainFile, which the bindings do not declare."""
    function = ci.conf.lib.clang_Location_isFromMainFile
    function.argtypes, function.restype = [ci.SourceLocation], ctypes.c_int
    return function
