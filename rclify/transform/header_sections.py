"""Critical sections in the functions a header defines (static inline ones, typically).

libclang sees a header's functions inside each C file that includes it.  Each header is taken
once, from the first C file (by path; files the build compiles first) whose translation unit
defines a function of it that may lock, as a ParsedFile of its own (cparse.view), so its regions are found, reported with the
header as their file, and extracted there: the generated functions are `static inline` (no
unused-function warning in the files that do not call them) and placed, with their context
structs, before the enclosing function, under the header's include guard, so each translation
unit defines them once.

A header region is refused (Reason.IN_HEADER) when that is not safe: the header has no include
guard (`#ifndef X` / `#define X` ... `#endif` around the whole file, or `#pragma once`), or the
lock is taken through a wrapper function of a C file (its accessor is defined next to the wrapper,
with a weak fallback in each caller file: neither can live in a header; a header's own wrappers
have `static inline` accessors next to them, which the header's sections use).
"""

import re
from pathlib import Path
from typing import Callable

import clang.cindex as ci

from rclify.ctext import cparse
from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import top_level
from rclify.ctext.preprocessor import logical_lines
from rclify.ctext.tokens import code_only
from rclify.ctext.includes import IncludeGraph
from rclify.transform.refusals import Reason
from rclify.transform.regions import Region
from rclify.ctext.source_tree import SourceTree

K = ci.CursorKind


def header_views(parsed: dict[Path, ParsedFile], tree: SourceTree, names: set[str],
                 built: Callable[[Path], bool] = lambda _: True) -> dict[Path, ParsedFile]:
    """{resolved header path: its view} for the headers under root that define a function
    whose text names a lock operation (names), each seen through a C file the build compiles
    where one includes it (libuv's src/win/fs-fd-hash-inl.h has none: its view's includer is a
    file no compile check can verify)."""
    wanted = [n.encode() for n in names]
    views: dict[Path, ParsedFile] = {}
    resolved: dict[str, Path | None] = {}  # libclang's file name -> a header under root, or None
    data: dict[Path, bytes] = {}
    for path in sorted(parsed, key=lambda p: (not built(p), p)):
        pf = parsed[path]
        for name, fn in top_level(pf.tu).function_definitions:
            if name is None:
                continue
            if name not in resolved:
                real = Path(name).resolve()
                resolved[name] = real if tree.under(name) is not None and real not in parsed else None
            header = resolved[name]
            if header is None or header in views:
                continue
            if header not in data:
                data[header] = tree.data(tree.under(name))
            text = data[header][fn.extent.start.offset : fn.extent.end.offset]
            if any(n in text for n in wanted):
                view = cparse.view(pf, name, data[header])
                view.guard_line = include_guard(data[header].decode("utf-8", errors="surrogateescape"))
                view.includer = path
                views[header] = view
    return views


def includes_locking_header(tree: SourceTree, graph: IncludeGraph, names: set[str], files: list[Path]):
    """A test for C files: does it #include a header (.h) of files that names a lock operation
    outside its #define lines (in a function it defines)?  Directly, `"…/x"` naming every header
    of the name (graph: by base name, IncludeGraph.by_base_name)."""
    locking = set()
    for path in files:
        if path.suffix != ".h":
            continue
        text = tree.text(path)
        if not any(n in text for n in names):
            continue
        code = "\n".join(line for _, _, line in logical_lines(code_only(text))
                         if not re.match(r"\s*#\s*define\b", line))
        if any(re.search(rf"\b{re.escape(n)}\b", code) for n in names):
            locking.add(tree.rel(path))
    if not locking:
        return lambda path: False
    return lambda path: not graph.includes(tree.rel(path)).isdisjoint(locking)


_IFNDEF = re.compile(r"^#\s*ifndef\s+(\w+)\s*$|^#\s*if\s+!\s*defined\s*\(?\s*(\w+)\s*\)?\s*$")
_DEFINE = re.compile(r"^#\s*define\s+(\w+)\b")
_PRAGMA_ONCE = re.compile(r"^#\s*pragma\s+once\b")


def include_guard(text: str) -> str | None:
    """The #ifndef line of the header's include guard ("" for `#pragma once`), or None when it
    has none (the whole file must be inside the guard)."""
    lines = [(code.strip(), raw) for (_, _, code), (_, _, raw) in zip(logical_lines(code_only(text)),
                                                                      logical_lines(text)) if code.strip()]
    if any(_PRAGMA_ONCE.match(line) for line, _ in lines):
        return ""
    if len(lines) < 3:
        return None
    opening, define = _IFNDEF.match(lines[0][0]), _DEFINE.match(lines[1][0])
    if not opening or not define or (opening.group(1) or opening.group(2)) != define.group(1):
        return None
    depth = 0
    for i, (line, _) in enumerate(lines):
        if re.match(r"#\s*if", line):
            depth += 1
        elif re.match(r"#\s*endif\b", line):
            depth -= 1
            if depth == 0:
                return lines[0][1].strip() if i == len(lines) - 1 else None
    return None


def refuse_unsafe(view: ParsedFile, regions: list[Region]) -> None:
    """Header regions that cannot be extracted in the header get Reason.IN_HEADER."""
    for region in regions:
        wrapper = region.lock.wrapper
        if view.guard_line is None or (wrapper is not None and not wrapper.in_header):
            region.refuse(Reason.IN_HEADER, region.line)
