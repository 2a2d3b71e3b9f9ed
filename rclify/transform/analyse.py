"""libclang over a tree: the lock vocabulary first, then every function's regions.

Two passes, because a wrapper defined in one file (thread.c's item_lock) is used in others:
  1. the files that lock are parsed and their macros and wrappers added to the vocabulary, to a
     fixpoint (a file that locks only through the program's wrappers is found as they are);
  2. regions_of(): every function's regions, read with that vocabulary.
"""

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
import shutil
import tempfile
from typing import Callable

import clang.cindex as ci

from rclify.ctext import cparse
from rclify.ctext.cparse import ParsedFile
from rclify.errors import ParseError
from rclify.transform.region_bounds import find_regions
from rclify.transform.regions import Region
from rclify.transform.vocabulary import Vocabulary, add_macros, add_wrappers

K = ci.CursorKind


@dataclass
class Analysis:
    parsed: dict[Path, ParsedFile] = field(default_factory=dict)
    vocab: Vocabulary = field(default_factory=Vocabulary)
    failures: dict[str, str] = field(default_factory=dict)  # relative path -> libclang's error
    stubbed_headers: list[str] = field(default_factory=list)  # not found, parsed as empty
    stub_dir: Path | None = None  # where the empty stubs are: removed by cleanup()

    def cleanup(self) -> None:
        if self.stub_dir is not None:
            shutil.rmtree(self.stub_dir, ignore_errors=True)


@dataclass
class FunctionRegions:
    function: ci.Cursor
    regions: list[Region] = field(default_factory=list)


def _mentions(path: Path, names: set[str]) -> bool:
    text = path.read_bytes()
    return any(name.encode() in text for name in names)


def analyse(root: Path, files: list[Path], flags_for: Callable[[Path], list[str]], jobs: int,
            progress: Callable[[str], None]) -> Analysis:
    """Parses the C files that lock (files spatch could not parse too: they are reported)."""
    result = Analysis()
    candidates = [f for f in files if f.suffix == ".c"]
    stub_dir = result.stub_dir = Path(tempfile.mkdtemp(prefix="rclify-stubs-"))

    def parse_one(path: Path):
        try:
            return path, cparse.parse(path, flags_for(path), stub_dir)
        except ParseError as err:
            return path, err

    def parse_all(paths):
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            for i, (path, parsed) in enumerate(pool.map(parse_one, paths), 1):
                if isinstance(parsed, ParseError):
                    result.failures[str(path.relative_to(root))] = str(parsed)
                    continue
                result.parsed[path] = parsed
                if i % 10 == 0 or i == len(paths):
                    progress(f"libclang: parsed {i}/{len(paths)} files")

    todo = _seed(files)
    while todo:
        parse_all(todo)
        for add in (add_macros, add_wrappers):  # every file's macros before any file's wrappers
            for path in todo:
                if path in result.parsed:
                    add(result.parsed[path], root, result.vocab)
        names = set(result.vocab.macros) | set(result.vocab.wrappers)
        todo = [f for f in candidates if f not in result.parsed and _mentions(f, names)]
    for parsed in result.parsed.values():
        result.stubbed_headers.extend(h for h in parsed.stubbed if h not in result.stubbed_headers)
    return result


_QUOTED_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def _seed(files: list[Path]) -> list[Path]:
    """The C files to parse first: those naming the pthread mutex API, and those including (through
    any chain of the tree's headers) a header that does, where lock macros are usually defined
    (libmicrohttpd's mhd_locks.h, reached through internal.h).  The fixpoint finds the rest."""
    texts = {f: f.read_bytes() for f in files}
    locking = {f.name for f in files if f.suffix != ".c" and b"pthread_mutex" in texts[f]}
    includes = {f: {Path(name.decode(errors="replace")).name for name in _QUOTED_INCLUDE.findall(texts[f])}
                for f in files}
    changed = True
    while changed:  # a header including a locking header is one too
        changed = False
        for f in files:
            if f.suffix != ".c" and f.name not in locking and includes[f] & locking:
                locking.add(f.name)
                changed = True
    return [f for f in files if f.suffix == ".c" and (b"pthread_mutex" in texts[f] or includes[f] & locking)]


def _may_lock(parsed: ParsedFile, fn: ci.Cursor, names: set[bytes]) -> bool:
    """A cheap text test before the AST walk: most functions never name a lock operation."""
    text = parsed.data[fn.extent.start.offset : fn.extent.end.offset]
    return any(name in text for name in names)


def regions_of(parsed: ParsedFile, vocab: Vocabulary) -> list[FunctionRegions]:
    names = {n.encode() for n in vocab.names()}
    out = []
    for fn in parsed.tu.cursor.get_children():
        if fn.kind != K.FUNCTION_DECL or not fn.is_definition() or not parsed.is_here(fn):
            continue
        if fn.spelling in vocab.wrappers:
            continue  # a wrapper's lock is released by another wrapper, by design
        if not _may_lock(parsed, fn, names):
            continue
        regions = find_regions(parsed, fn, vocab)
        if regions:
            out.append(FunctionRegions(fn, regions))
    return out
