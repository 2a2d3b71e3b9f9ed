"""Parsing C files with libclang, tolerant of what a not-yet-configured tree lacks.

The PyPI libclang wheel has no builtin headers (stddef.h, stdarg.h...): the system gcc's are used,
but for <stdatomic.h>, which only gcc reads: rclify's own (clang_headers/) is seen first.
A project header that does not exist yet (config.h before ./configure) is replaced by an empty
stub so the rest of the file still parses; functions whose bodies still have errors are not
analysed (the caller refuses their regions with a reason).
"""

import functools
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import clang.cindex as ci

from rclify.ctext.cursors import macro_use_ranges, offsets, preorder
from rclify.ctext.tokens import skip_to_semicolon
from rclify.errors import ParseError, ToolMissingError

_CLANG_HEADERS = Path(__file__).resolve().parent / "clang_headers"
_GCC_WARNINGS_NOT_ERRORS = ["-Wno-error=implicit-function-declaration", "-Wno-error=implicit-int",
                            "-Wno-error=int-conversion", "-Wno-error=incompatible-function-pointer-types"]
_MISSING = re.compile(r"'([^']+)' file not found")


@functools.cache
def _gcc_include_dir() -> str:
    try:
        out = subprocess.run(["gcc", "-print-file-name=include"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        raise ToolMissingError("gcc is needed for its builtin headers: apt-get install gcc") from None
    return out.stdout.strip()


@functools.cache
def _index() -> ci.Index:
    return ci.Index.create()


@dataclass
class ParsedFile:
    path: Path
    data: bytes  # the file's bytes: libclang offsets index into them
    tu: ci.TranslationUnit
    stubbed: list[str] = field(default_factory=list)  # headers replaced by empty stubs
    error_lines: set[int] = field(default_factory=set)  # lines of this file with errors
    macro_uses: list[tuple[int, int]] = field(default_factory=list)  # macro invocation ranges here
    # a header's include guard (its #ifndef line, "" for #pragma once; None: unguarded or not a
    # header): not a condition, the code under it is compiled whenever the file is
    guard_line: str | None = None
    includer: Path | None = None  # a header's view: the C file it was seen through
    _nodes: dict = field(default_factory=dict, repr=False, compare=False)  # nodes_of's

    def nodes_of(self, cursor: ci.Cursor, kind: ci.CursorKind) -> list[ci.Cursor]:
        """The nodes of one kind under cursor, in preorder, walked once per cursor and kind (each
        region of a function asks for its block's calls: a walk is slow through the bindings)."""
        key = (cursor.extent.start.offset, cursor.extent.end.offset, kind)
        if key not in self._nodes:
            self._nodes[key] = [n for n in preorder(cursor) if n.kind == kind]
        return self._nodes[key]

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", errors="surrogateescape")

    def is_here(self, cursor: ci.Cursor) -> bool:
        loc = cursor.location
        return loc.file is not None and Path(loc.file.name) == self.path

    def first_error_in(self, cursor: ci.Cursor) -> int | None:
        """The first line of cursor's extent with a libclang error, or None."""
        ext = cursor.extent
        return min((line for line in self.error_lines if ext.start.line <= line <= ext.end.line), default=None)


def parse(path: Path, flags: list[str], stub_dir: Path | None = None, cxx: bool = False,
          data: bytes | None = None) -> ParsedFile:
    """Parses path with flags (-I/-D...), stubbing project headers that cannot be found; as C++
    (the compiler's default standard) when cxx is set, else as C (gnu11).  data: the file's
    bytes, where the caller has read them (libclang reads the file itself)."""
    path = path.resolve()
    data = path.read_bytes() if data is None else data
    own_stubs = stub_dir is None
    stub_root = Path(tempfile.mkdtemp(prefix="rclify-stubs-")) if own_stubs else stub_dir
    # C as gcc takes it: what clang 16+ made errors (an undeclared function, implicit int, int from
    # a pointer) gcc 12 only warns about, and a tree that builds with gcc has them (old C)
    language = ["-x", "c++"] if cxx else ["-x", "c", "-std=gnu11", *_GCC_WARNINGS_NOT_ERRORS]
    # rclify's own <stdatomic.h> first (clang_headers/: gcc's is written for gcc only), then gcc's
    args = [*language, "-ferror-limit=0", *([] if cxx else ["-isystem", str(_CLANG_HEADERS)]),
            "-isystem", _gcc_include_dir(),
            f"-I{path.parent}", *flags, f"-I{stub_root}"]
    stubbed: list[str] = []
    for _ in range(8):  # each round stubs the headers the previous one could not find
        try:
            tu = _index().parse(str(path), args=args, options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)
        except ci.TranslationUnitLoadError as err:
            raise ParseError(f"{path}: libclang could not parse the file ({err})") from None
        missing = [m.group(1) for d in tu.diagnostics if (m := _MISSING.search(d.spelling))]
        new = [name for name in missing if name not in stubbed and not name.startswith("/")]
        if not new:
            break
        for name in new:
            stub = stub_root / name
            stub.parent.mkdir(parents=True, exist_ok=True)
            stub.touch()
            stubbed.append(name)
    if own_stubs:  # libclang has read the stubs: nothing refers to the files any more
        shutil.rmtree(stub_root, ignore_errors=True)
    return _file_in(tu, path, data, stubbed)


def view(parsed: ParsedFile, name: str, data: bytes | None = None) -> ParsedFile:
    """Another file of parsed's translation unit (a header it includes, as libclang names it),
    seen as a ParsedFile of its own: offsets, errors and macro uses are that file's.  data: its
    bytes, where the caller has them (the source tree's)."""
    path = Path(name)
    return _file_in(parsed.tu, path, path.read_bytes() if data is None else data, [])


def _file_in(tu: ci.TranslationUnit, path: Path, data: bytes, stubbed: list[str]) -> ParsedFile:
    error_lines = {
        d.location.line
        for d in tu.diagnostics
        if d.severity >= ci.Diagnostic.Error and d.location.file and Path(d.location.file.name) == path
    }
    macro_uses = macro_use_ranges(tu, path)
    return ParsedFile(path, data, tu, stubbed, error_lines, macro_uses)


def statement_range(parsed: ParsedFile, cursor: ci.Cursor) -> tuple[int, int]:
    """Offsets of a statement with its closing `;` (libclang's extent stops before it)."""
    start, end = offsets(cursor)
    if start == end and cursor.location.file is not None:
        # a statement whose tokens all come from a macro's argument inside another macro's body
        # (`#define LOCK2(l) W(pthread_mutex_lock(l))`, `#define W(f) f`): libclang gives it an
        # empty extent at the invocation; the statement is the invocation
        end = next((e + 1 for s, e in parsed.macro_uses if s == start), end)
    return start, skip_to_semicolon(parsed.data, end)
