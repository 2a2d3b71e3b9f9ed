"""libclang's tree, asked for once: every step of the analysis walks the same functions again,
so what is listed here is kept with its translation unit (an attribute of it: it goes when the
unit does), and a walk after the first costs no call into libclang.  On configured memcached,
711,000 child listings were two fifths of the transform's time before this cache.  The listing
itself is done in C (cursor_lists.py): the bindings list children through a Python callback per
child, and a unit's top level holds about 12,000 cursors, mostly the system headers' macros."""

import ctypes
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import clang.cindex as ci

from rclify.ctext import cursor_lists

K = ci.CursorKind


def child_nodes(cursor: ci.Cursor) -> tuple[ci.Cursor, ...]:
    """cursor's children (shared by every caller: a tuple, not to be changed).  The first time a
    node is asked, its whole subtree is listed (the walks go on down): every node of it keeps its
    children and offsets, and is known by its hash for another Cursor object of the same node."""
    try:
        return cursor._rclify_children  # a cursor listed here
    except AttributeError:
        pass
    listed = _cache(cursor._tu).children  # another Cursor object for the same node (referenced, ...)
    for known, found in listed.get(cursor.hash, ()):
        if known == cursor:  # a hash is not an identity: clang_equalCursors decides
            cursor._rclify_children = found
            return found
    if cursor.kind == K.TRANSLATION_UNIT:  # not a walk's subtree: all the headers' declarations
        found = []
        for child, start, end in cursor_lists.children(cursor):
            child._rclify_offsets = (start, end)
            found.append(child)
        cursor._rclify_children = tuple(found)
        listed.setdefault(cursor.hash, []).append((cursor, cursor._rclify_children))
        return cursor._rclify_children
    rows = cursor_lists.subtree(cursor)
    for node, start, end, hash_, first, count in reversed(rows):  # children before their parent
        node._rclify_offsets = (start, end)
        node._rclify_children = tuple(rows[j][0] for j in range(first, first + count))
        listed.setdefault(hash_, []).append((node, node._rclify_children))
    return cursor._rclify_children


def offsets(cursor: ci.Cursor) -> tuple[int, int]:
    """cursor.extent's start and end offsets: listed with the cursor where child_nodes listed it."""
    try:
        return cursor._rclify_offsets
    except AttributeError:
        extent = cursor.extent
        cursor._rclify_offsets = (extent.start.offset, extent.end.offset)
        return cursor._rclify_offsets


def preorder(cursor: ci.Cursor) -> list[ci.Cursor]:
    """cursor and every node under it, in Cursor.walk_preorder's order."""
    nodes, stack = [], [cursor]
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(reversed(child_nodes(node)))
    return nodes


def constant_value(expr: ci.Cursor) -> int | None:
    """The value of an integer constant expression (macros expanded), or None when libclang cannot
    evaluate it to one (clang_Cursor_Evaluate; the bindings do not wrap it)."""
    lib = _evaluation()
    result = lib.clang_Cursor_Evaluate(expr)
    if not result:
        return None
    try:
        return lib.clang_EvalResult_getAsLongLong(result) if lib.clang_EvalResult_getKind(result) == _EVAL_INT else None
    finally:
        lib.clang_EvalResult_dispose(result)


_EVAL_INT = 1  # CXEval_Int


def operator(cursor: ci.Cursor) -> str:
    """A binary, compound-assignment or unary operator's spelling ("=", "!=", "&", "++"), as
    libclang knows it (a macro's expansion included: its tokens would be the macro call's)."""
    lib = _evaluation()
    if cursor.kind == K.UNARY_OPERATOR:
        kind = lib.clang_getCursorUnaryOperatorKind(cursor)
        return _spelling(("unary", kind), lambda: lib.clang_getUnaryOperatorKindSpelling(kind))
    kind = lib.clang_getCursorBinaryOperatorKind(cursor)
    return _spelling(("binary", kind), lambda: lib.clang_getBinaryOperatorKindSpelling(kind))


def hidden(decl: ci.Cursor) -> bool:
    """Is the declaration's visibility hidden (its attribute, or -fvisibility=hidden): no code
    outside its shared object or program can name it?"""
    return _evaluation().clang_getCursorVisibility(decl) == _HIDDEN


_HIDDEN = 1  # CXVisibility_Hidden
_SPELLINGS: dict[tuple[str, int], str] = {}


def _spelling(key: tuple[str, int], get) -> str:
    if key not in _SPELLINGS:
        _SPELLINGS[key] = ci._CXString.from_result(get())
    return _SPELLINGS[key]


def _evaluation():
    """libclang's evaluation, operator kinds and visibility (the bindings do not wrap them), set up
    once."""
    lib = ci.conf.lib
    if not getattr(lib, "_rclify_evaluation", False):
        lib.clang_Cursor_Evaluate.argtypes = [ci.Cursor]
        lib.clang_Cursor_Evaluate.restype = ctypes.c_void_p
        lib.clang_EvalResult_getKind.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_getKind.restype = ctypes.c_int
        lib.clang_EvalResult_getAsLongLong.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_getAsLongLong.restype = ctypes.c_longlong
        lib.clang_EvalResult_dispose.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_dispose.restype = None
        for name in ("clang_getCursorBinaryOperatorKind", "clang_getCursorUnaryOperatorKind",
                     "clang_getCursorVisibility"):
            getattr(lib, name).argtypes = [ci.Cursor]
            getattr(lib, name).restype = ctypes.c_int
        for name in ("clang_getBinaryOperatorKindSpelling", "clang_getUnaryOperatorKindSpelling"):
            getattr(lib, name).argtypes = [ctypes.c_int]
            getattr(lib, name).restype = ci._CXString
        lib._rclify_evaluation = True
    return lib


class MacroDefinition(NamedTuple):
    """A macro definition at a unit's top level: its file (libclang's name; None for a builtin),
    its name, where its extent starts, its row in the listing (TopLevel.cursor makes its Cursor)."""
    file: str | None
    name: str
    start: int
    row: int


@dataclass
class TopLevel:
    """A translation unit's top-level cursors that the analysis looks for, with the name of the
    file each is in (libclang's; None for a builtin), sorted out from one listing."""
    listing: cursor_lists.TopLevelListing
    function_definitions: list[tuple[str | None, ci.Cursor]] = field(default_factory=list)
    macro_definitions: list[MacroDefinition] = field(default_factory=list)  # thousands: no Cursor made
    file_names: dict[int, str | None] = field(default_factory=dict)  # a file's handle -> its name
    macro_uses: dict[str, list[tuple[int, int, int]]] = field(default_factory=dict)  # _macro_uses's, by file

    def cursor(self, row: int) -> ci.Cursor:
        return self.listing.cursor(row)

    def functions_in(self, path: Path) -> list[ci.Cursor]:
        """The function definitions written in the file path (ParsedFile.is_here's test)."""
        names = {name for name, _ in self.function_definitions if name is not None and Path(name) == path}
        return [fn for name, fn in self.function_definitions if name in names]

    def file_name(self, handle: int) -> str | None:
        if handle not in self.file_names:
            self.file_names[handle] = ci.File(ctypes.cast(handle, ci.c_object_p)).name if handle else None
        return self.file_names[handle]


_LISTED = [K.FUNCTION_DECL, K.MACRO_DEFINITION, K.MACRO_INSTANTIATION]
_FUNCTION, _DEFINITION, _INSTANTIATION = (k.value for k in _LISTED)


def top_level(tu: ci.TranslationUnit) -> TopLevel:
    cache = _cache(tu)
    if cache.top_level is None:
        listing = cursor_lists.top_level(tu, _LISTED, definitions_of=K.FUNCTION_DECL)
        found = TopLevel(listing)
        rows = listing.rows  # (kind, file, start, end, from the main file, a definition): a row each
        found.function_definitions = [(found.file_name(file), listing.cursor(i))
                                      for i, (kind, file, _, _, _, definition) in enumerate(rows)
                                      if kind == _FUNCTION and definition]
        definitions = [(i, file, start) for i, (kind, file, start, *_) in enumerate(rows) if kind == _DEFINITION]
        found.macro_definitions = [
            MacroDefinition(found.file_name(file), name, start, i)
            for (i, file, start), name in zip(definitions, cursor_lists.top_level_spellings(tu, K.MACRO_DEFINITION),
                                              strict=True)]
        cache.top_level = found
    return cache.top_level


def macro_uses_in(tu: ci.TranslationUnit, path: Path) -> list[ci.Cursor]:
    """The macro instantiations written in the file path (of thousands, most are in headers)."""
    found = top_level(tu)
    return [found.cursor(i) for _, _, i in _macro_uses(tu, path)]


def macro_use_ranges(tu: ci.TranslationUnit, path: Path) -> list[tuple[int, int]]:
    """The (start, end) offsets of macro_uses_in's instantiations, with no Cursor made."""
    return [(start, end) for start, end, _ in _macro_uses(tu, path)]


def _macro_uses(tu: ci.TranslationUnit, path: Path) -> list[tuple[int, int, int]]:
    """(start, end, row) of each instantiation in path: asked for a unit's main file and a few headers."""
    found = top_level(tu)
    here = str(path)
    if here not in found.macro_uses:
        rows = found.listing.rows
        if tu.spelling == here:  # the main file: clang_Location_isFromMainFile's answer
            found.macro_uses[here] = [(start, end, i) for i, (kind, _, start, end, main, _) in enumerate(rows)
                                      if kind == _INSTANTIATION and main]
        else:
            handles = {file for kind, file, *_ in rows if kind == _INSTANTIATION}
            wanted = {handle for handle in handles if found.file_name(handle) == here}
            found.macro_uses[here] = [(start, end, i) for i, (kind, file, start, end, _, _) in enumerate(rows)
                                      if kind == _INSTANTIATION and file in wanted]
    return found.macro_uses[here]


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
