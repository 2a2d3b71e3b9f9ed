"""Cursors listed by a small C library beside the bindings (cursor_lists.c says why): a cursor's
children, and a translation unit's top-level cursors of some kinds with their file and offsets.

The library is compiled with the system's gcc (which the transform needs anyway) on first use,
into the per-user cache beside the runtime's build (runtime_build.CACHE_DIR), one file per source
and compiler; a second rclify compiling it at the same time writes its own file and renames it
over (the same bytes)."""

import ctypes
import functools
import hashlib
import os
import shutil
import struct
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import clang.cindex as ci

from rclify.errors import BuildError, ToolMissingError

SOURCE = Path(__file__).resolve().parent / "cursor_lists.c"


class _Libclang(ctypes.Structure):
    """struct libclang: the bindings' functions, by address (the order of cursor_lists.c)."""
    _fields_ = [(name, ctypes.c_void_p) for name in (
        "visit_children", "cursor_location", "cursor_extent", "range_start", "range_end",
        "instantiation_location", "is_from_main_file", "is_definition", "hash_cursor", "cursor_spelling",
        "c_string", "dispose_string")]


_FUNCTIONS = ("clang_visitChildren", "clang_getCursorLocation", "clang_getCursorExtent", "clang_getRangeStart",
              "clang_getRangeEnd", "clang_getInstantiationLocation", "clang_Location_isFromMainFile",
              "clang_isCursorDefinition", "clang_hashCursor", "clang_getCursorSpelling", "clang_getCString",
              "clang_disposeString")


class _TopLevelEntry(ctypes.Structure):
    """struct top_level_entry."""
    _fields_ = [("cursor", ci.Cursor), ("file", ctypes.c_void_p), ("start", ctypes.c_uint),
                ("end", ctypes.c_uint), ("from_main_file", ctypes.c_int), ("is_definition", ctypes.c_int)]


class _ChildEntry(ctypes.Structure):
    """struct child_entry."""
    _fields_ = [("cursor", ci.Cursor), ("start", ctypes.c_uint), ("end", ctypes.c_uint)]


class _SubtreeNode(ctypes.Structure):
    """struct subtree_node."""
    _fields_ = [("cursor", ci.Cursor), ("start", ctypes.c_uint), ("end", ctypes.c_uint), ("hash", ctypes.c_uint),
                ("first_child", ctypes.c_int), ("child_count", ctypes.c_int), ("unused", ctypes.c_int)]


# the entries are read back as plain tuples (struct.iter_unpack), not as ctypes objects: a field
# read through ctypes makes an object, and a unit lists about 12,000 top-level cursors
_TOP_LEVEL = struct.Struct("@i28xPIIii")  # kind, file, start, end, from_main_file, is_definition
_CHILD = struct.Struct("@32xII")  # start, end
_NODE = struct.Struct("@32xIIIii4x")  # start, end, hash, first_child, child_count
assert _TOP_LEVEL.size == ctypes.sizeof(_TopLevelEntry) and _CHILD.size == ctypes.sizeof(_ChildEntry)
assert _NODE.size == ctypes.sizeof(_SubtreeNode)


@dataclass
class TopLevelListing:
    """A unit's top-level cursors of some kinds, as listed: a row per cursor (its kind's number,
    its file's handle, 0 for none, its extent's start and end offsets, whether it is in the unit's
    main file, whether it is a definition); cursor(i) makes row i's Cursor."""
    rows: list[tuple[int, int, int, int, int, int]]
    tu: ci.TranslationUnit
    _out: ctypes.Array

    def cursor(self, index: int) -> ci.Cursor:
        made = ci.Cursor.from_buffer_copy(self._out, index * _TOP_LEVEL.size)
        made._tu = self.tu  # as the bindings do: a cursor keeps its translation unit alive
        return made


@dataclass
class _Library:
    lib: ctypes.CDLL
    libclang: _Libclang  # kept: the C side reads it at every call


_LOADING = threading.Lock()  # the analysis parses units on several threads: one compiles and loads


def _library() -> _Library:
    with _LOADING:
        return _loaded()


@functools.cache
def _loaded() -> _Library:
    lib = ctypes.CDLL(str(_built()))
    lib.rclify_children.argtypes = [ctypes.POINTER(_Libclang), ci.Cursor, ctypes.POINTER(_ChildEntry),
                                    ctypes.c_long]
    lib.rclify_children.restype = ctypes.c_long
    lib.rclify_subtree.argtypes = [ctypes.POINTER(_Libclang), ci.Cursor, ctypes.POINTER(_SubtreeNode), ctypes.c_long]
    lib.rclify_subtree.restype = ctypes.c_long
    lib.rclify_top_level.argtypes = [ctypes.POINTER(_Libclang), ci.Cursor, ctypes.POINTER(ctypes.c_int),
                                     ctypes.c_int, ctypes.c_int, ctypes.POINTER(_TopLevelEntry), ctypes.c_long]
    lib.rclify_top_level.restype = ctypes.c_long
    lib.rclify_top_level_spellings.argtypes = [ctypes.POINTER(_Libclang), ci.Cursor, ctypes.c_int,
                                               ctypes.c_char_p, ctypes.c_long]
    lib.rclify_top_level_spellings.restype = ctypes.c_long
    libclang = _Libclang(*(ctypes.cast(getattr(ci.conf.lib, name), ctypes.c_void_p).value for name in _FUNCTIONS))
    return _Library(lib, libclang)


def children(cursor: ci.Cursor, capacity: int = 64) -> list[tuple[ci.Cursor, int, int]]:
    """cursor's children as Cursor.get_children lists them, each with its extent's start and end
    offsets (as `child.extent.start.offset` gives them)."""
    library = _library()
    while True:
        out = (_ChildEntry * capacity)()
        count = library.lib.rclify_children(ctypes.byref(library.libclang), cursor, out, capacity)
        if count <= capacity:
            break
        capacity = count
    tu = cursor._tu
    listed = []
    for i, (start, end) in enumerate(_CHILD.iter_unpack(memoryview(out).cast("B")[: count * _CHILD.size])):
        child = ci.Cursor.from_buffer_copy(out, i * _CHILD.size)
        child._tu = tu  # as the bindings do: a cursor keeps its translation unit alive
        listed.append((child, start, end))
    return listed


def subtree(root: ci.Cursor, capacity: int = 1024) -> list[tuple[ci.Cursor, int, int, int, int, int]]:
    """Every node under root, root first (root's row has root itself), in one call: a row per node
    with its cursor, its extent's start and end offsets, its hash (Cursor.hash's), and where its
    children are: rows first .. first + count - 1."""
    library = _library()
    while True:
        out = (_SubtreeNode * capacity)()
        count = library.lib.rclify_subtree(ctypes.byref(library.libclang), root, out, capacity)
        if count >= 0:
            break
        capacity *= 4
    tu = root._tu
    rows = []
    for i, (start, end, hash_, first, n) in enumerate(_NODE.iter_unpack(memoryview(out).cast("B")[: count * _NODE.size])):
        if i == 0:
            cursor = root
        else:
            cursor = ci.Cursor.from_buffer_copy(out, i * _NODE.size)
            cursor._tu = tu  # as the bindings do: a cursor keeps its translation unit alive
        rows.append((cursor, start, end, hash_, first, n))
    return rows


def top_level(tu: ci.TranslationUnit, kinds: list[ci.CursorKind], definitions_of: ci.CursorKind | None = None,
              capacity: int = 16384) -> TopLevelListing:
    """The unit's top-level cursors of these kinds, in order, each with its file and offsets; of
    the kind definitions_of, only those that are definitions."""
    library = _library()
    wanted = (ctypes.c_int * len(kinds))(*(k.value for k in kinds))
    while True:
        out = (_TopLevelEntry * capacity)()
        count = library.lib.rclify_top_level(ctypes.byref(library.libclang), tu.cursor, wanted, len(kinds),
                                             definitions_of.value if definitions_of is not None else -1,
                                             out, capacity)
        if count <= capacity:
            break
        capacity = count
    kept = (_TopLevelEntry * count)()  # the listing stays with the unit: no room to spare
    ctypes.memmove(kept, out, count * _TOP_LEVEL.size)
    return TopLevelListing(list(_TOP_LEVEL.iter_unpack(memoryview(kept).cast("B"))), tu, kept)


def top_level_spellings(tu: ci.TranslationUnit, kind: ci.CursorKind, capacity: int = 1 << 17) -> list[str]:
    """The spellings of the unit's top-level cursors of one kind, in order (the order of
    top_level's rows of that kind): a macro definition's is the macro's name."""
    library = _library()
    while True:
        out = ctypes.create_string_buffer(capacity)
        length = library.lib.rclify_top_level_spellings(ctypes.byref(library.libclang), tu.cursor, kind.value,
                                                        out, capacity)
        if length <= capacity:
            break
        capacity = length
    return out.raw[:length].decode("utf-8", errors="surrogateescape").split("\0")[:-1]


def _built() -> Path:
    """The compiled library in the cache, compiled now where it is not there yet."""
    from rclify.runtime_build import CACHE_DIR  # platformdirs: only when a unit is first listed

    compiler = os.environ.get("CC") or "gcc"
    found = shutil.which(compiler)
    if found is None:
        raise ToolMissingError(f"{compiler} is needed to compile rclify's cursor lister: apt-get install gcc")
    real = os.path.realpath(found)
    stat = os.stat(real)
    key = hashlib.sha256(SOURCE.read_bytes() + f"\n{real}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    target = CACHE_DIR / f"cursor-lists-{key}.so"
    if target.exists():
        return target
    try:
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise BuildError(f"cannot create rclify's cache directory {CACHE_DIR}: {err.strerror} "
                         "(set XDG_CACHE_HOME to a writable directory)") from None
    scratch = target.with_name(f".{target.name}.{os.getpid()}.tmp")  # another process: its own
    proc = subprocess.run([compiler, "-std=c11", "-O2", "-shared", "-fPIC", "-o", str(scratch), str(SOURCE)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        scratch.unlink(missing_ok=True)
        raise BuildError(f"compiling {SOURCE} failed:\n{proc.stderr[-4000:]}")
    os.replace(scratch, target)
    return target
