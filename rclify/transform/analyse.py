"""libclang over a tree: the lock vocabulary first, then every function's regions.

Two passes, because a wrapper defined in one file (thread.c's item_lock) is used in others:
  1. the files that lock are parsed and their macros and wrappers added to the vocabulary, to a
     fixpoint (a file that locks only through the program's wrappers is found as they are);
  2. regions_of(): every function's regions, read with that vocabulary.
Headers that define functions which lock are seen through the first C file that includes them,
one the build compiles where one does (header_sections.py).  complete_call_graph() then parses the other
C files that define functions the locking files call, for the thread-local state analysis
(thread_state.py) only.
"""

import re
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import clang.cindex as ci

from rclify import pthread_api
from rclify.ctext import cparse
from rclify.ctext.cparse import ParsedFile
from rclify.ctext.cursors import top_level
from rclify.ctext.tokens import any_of, code_only
from rclify.errors import ParseError
from rclify.transform.ops_tables import read_tables
from rclify.transform.header_sections import header_views, includes_locking_header
from rclify.ctext.includes import IncludeGraph
from rclify.transform.region_bounds import find_regions
from rclify.transform.regions import Region
from rclify.ctext.source_tree import SourceTree
from rclify.transform.thread_state import ThreadState, defines_any, mentions_any
from rclify.transform.vocabulary import Vocabulary
from rclify.transform.vocabulary_inference import add_macros, add_wrappers

K = ci.CursorKind


@dataclass
class Analysis:
    source: SourceTree  # the tree's files as read once (ctext/source_tree.py)
    parsed: dict[Path, ParsedFile] = field(default_factory=dict)
    vocab: Vocabulary = field(default_factory=Vocabulary)
    failures: dict[str, str] = field(default_factory=dict)  # relative path -> libclang's error
    stubbed_headers: list[str] = field(default_factory=list)  # not found, parsed as empty
    headers: dict[Path, ParsedFile] = field(default_factory=dict)  # headers with functions that lock
    call_graph_only: dict[Path, ParsedFile] = field(default_factory=dict)  # parsed for their functions
    flags_for: Callable[[Path], list[str]] = lambda path: []  # a file's build flags (build_flags/)
    stub_dir: Path | None = None  # where the empty stubs are: removed by cleanup()

    def cleanup(self) -> None:
        if self.stub_dir is not None:
            shutil.rmtree(self.stub_dir, ignore_errors=True)

    def parse_all(self, paths: list[Path], jobs: int, progress: Callable[[str], None],
                  into: dict[Path, ParsedFile] | None = None) -> None:
        """Parses paths in parallel into `into` (default: parsed); failures are recorded."""
        into = self.parsed if into is None else into
        stub_dir = self.stub_dir

        def parse_one(path: Path):
            try:
                return path, cparse.parse(path, self.flags_for(path), stub_dir, data=self.source.data(path))
            except ParseError as err:
                return path, err

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            # the largest first, so that no thread is left parsing a large file alone at the end;
            # read back in the given order (the order every later step sees the files in)
            started = {path: pool.submit(parse_one, path)
                       for path in sorted(paths, key=lambda p: -len(self.source.data(p)))}
            for i, (path, parsed) in enumerate((started[path].result() for path in paths), 1):
                if isinstance(parsed, ParseError):
                    if into is self.parsed:  # a file read for the call graph only is not reported
                        self.failures[self.source.rel(path)] = str(parsed)
                    continue
                into[path] = parsed
                if i % 10 == 0 or i == len(paths):
                    progress(f"libclang: parsed {i}/{len(paths)} files")


@dataclass
class FunctionRegions:
    function: ci.Cursor
    regions: list[Region] = field(default_factory=list)


def analyse(root: Path, files: list[Path], flags_for: Callable[[Path], list[str]], jobs: int,
            progress: Callable[[str], None], built: Callable[[Path], bool] = lambda _: True,
            source: SourceTree | None = None, includes: IncludeGraph | None = None) -> Analysis:
    """Parses the C files that lock (files spatch could not parse too: they are reported);
    built says which C files the build compiles (headers are seen through those first); source:
    the files as the transform read them (else read here); includes: their include graph by base
    name (the pipeline's; else built here)."""
    source = source or SourceTree(root, files)
    includes = includes or IncludeGraph.by_base_name(source, files)
    result = Analysis(source, flags_for=flags_for, stub_dir=Path(tempfile.mkdtemp(prefix="rclify-stubs-")))
    candidates = [f for f in files if f.suffix == ".c"]
    lock_names = {name for name, kind in pthread_api.LOCK_OPERATIONS.items() if kind in ("lock", "unlock", "trylock")}
    with_header = includes_locking_header(source, includes, lock_names, files)  # functions of headers lock too
    tree = _TreeText(files, source, includes)
    seeds = tree.naming(_MUTEX_FUNCTION.search)  # lock macros of headers
    todo = [f for f in candidates if f in seeds or with_header(f)]
    while todo:
        result.parse_all(todo, jobs, progress)
        for path in todo:  # every file's macros before any file's wrappers
            if path in result.parsed:
                add_macros(result.parsed[path], source, result.vocab)
                read_tables(result.parsed[path], source, result.vocab.tables)  # `OPS.acquire(l)`
        result.vocab.resolve()  # `#define OPS mr_ptmutex_ops` names a table that holds a lock function
        known = -1
        while known != len(result.vocab.wrappers):  # a wrapper over one found in a later file
            known = len(result.vocab.wrappers)      # (libuv's before_fork over uv_mutex_lock)
            for parsed in result.parsed.values():
                add_wrappers(parsed, source, result.vocab)
        names = set(result.vocab.macros) | set(result.vocab.wrappers) | result.vocab.locking_tables()
        using = tree.naming(_naming(names), _used_in_a_body(names))  # or their headers' functions
        todo = [f for f in candidates if f not in result.parsed and f in using]
    # sorted: files parsed in parallel share the stub directory, so which of them finds a header
    # missing first (and lists it) depends on timing
    result.stubbed_headers = sorted({h for parsed in result.parsed.values() for h in parsed.stubbed})
    result.headers = header_views(result.parsed, source, result.vocab.names(), built)
    return result


_MAX_CALL_GRAPH_ROUNDS = 4


def complete_call_graph(root: Path, files: list[Path], analysis: Analysis, roots: set[str], jobs: int,
                        progress: Callable[[str], None], built: Callable[[Path], bool] = lambda _: True
                        ) -> ThreadState:
    """The thread-local state analysis over the locking files and, parsed for it, the tree's C
    files that define the functions sections reach (declared in the tree's headers, defined
    elsewhere), to a fixpoint (a few rounds at most).  roots: the functions sections call.
    Only files the build compiles (`built`) define functions: libuv's src/win/thread.c defines
    uv_mutex_lock too, with EnterCriticalSection, which a Linux build never runs."""
    state = ThreadState(root)
    state.add([p for p in [*analysis.parsed.values(), *analysis.call_graph_only.values()]
               if p.path.suffix != ".c" or built(p.path)])
    candidates = [f for f in files if f.suffix == ".c" and built(f)]
    tried: set[str] = set()
    tried_words: set[str] = set()
    for _ in range(_MAX_CALL_GRAPH_ROUNDS):
        names = state.wanted(roots) - tried
        tried |= names
        words = state.pointer_words(roots) - tried_words  # files that may store into a pointer called
        tried_words |= words
        todo = [f for f in candidates if f not in analysis.parsed and f not in analysis.call_graph_only
                and ((names and defines_any(analysis.source.data(f), names))
                     or (words and mentions_any(analysis.source.data(f), words)))]
        if not todo:
            break
        progress(f"libclang: {len(todo)} more files, for the functions that sections call")
        new: dict[Path, ParsedFile] = {}
        analysis.parse_all(todo, jobs, progress, into=new)
        analysis.call_graph_only.update(new)
        state.add(list(new.values()))
    return state


def _may_lock(parsed: ParsedFile, fn: ci.Cursor, names: set[bytes]) -> bool:
    """A cheap text test before the AST walk: most functions never name a lock operation."""
    text = parsed.data[fn.extent.start.offset : fn.extent.end.offset]
    return any(name in text for name in names)


def regions_of(parsed: ParsedFile, vocab: Vocabulary) -> list[FunctionRegions]:
    """Each function's regions, read with the vocabulary its unit has in force where it starts."""
    names = {n.encode() for n in vocab.names()}  # every unit's: a unit's own reading only drops names
    out = []
    for fn in top_level(parsed.tu).functions_in(parsed.path):
        if fn.spelling in vocab.wrappers:
            continue  # a wrapper's lock is released by another wrapper, by design
        if not _may_lock(parsed, fn, names):
            continue
        regions = find_regions(parsed, fn, vocab.for_file(parsed, fn))
        if regions:
            out.append(FunctionRegions(fn, regions))
    return out


class _TreeText:
    """The tree's files as bytes, and the tree's headers each includes (graph: by base name)."""

    def __init__(self, files: list[Path], source: SourceTree, graph: IncludeGraph):
        self.files = files
        self.texts = {f: source.data(f) for f in files}
        self.rel = {f: source.rel(f) for f in files}
        self.graph = graph

    def naming(self, names: Callable[[bytes], object], in_header: Callable[[bytes], object] | None = None
               ) -> set[Path]:
        """The C files whose text names what names() finds, or that include (through any chain of
        the tree's headers) a header where in_header() (default: names()) does.  Seeds: a pthread
        mutex function, where lock macros are usually defined (libmicrohttpd's mhd_locks.h,
        reached through internal.h).  The type alone does not count: libuv's uv/unix.h, `typedef
        pthread_mutex_t uv_mutex_t` and included by all its 278 files, made every file a seed (a
        minute of parsing).  Then the tree's lock macros and wrappers: libuv's win/fs.c locks
        through fs-fd-hash-inl.h's functions only."""
        in_header = in_header or names
        found = {self.rel[f] for f in self.files if f.suffix != ".c" and in_header(self.texts[f])}
        return {f for f in self.files if f.suffix == ".c"
                and (names(self.texts[f]) or self.graph.closure(self.rel[f]) & found)}


def _naming(names: set[str]) -> Callable[[bytes], bool]:
    wanted = [n.encode() for n in names]
    return lambda text: any(n in text for n in wanted)


def _used_in_a_body(names: set[str]) -> Callable[[bytes], bool]:
    """A test for a header's text: does it name one of names inside braces (a function's body),
    where a prototype (uv.h's `void uv_mutex_lock(uv_mutex_t*);`) does not count?  A C++
    `extern "C" {` opens no body."""
    quick = _naming(names)
    pattern = re.compile(rf"\b(?:{any_of(names)})\b|extern\s*\"\s*\"\s*\{{|[{{}}]")

    def test(text: bytes) -> bool:
        if not names or not quick(text):
            return False
        depth = 0
        for m in pattern.finditer(code_only(text.decode("utf-8", errors="surrogateescape"))):
            token = m.group()
            if token == "{":
                depth += 1
            elif token == "}":
                depth = max(0, depth - 1)
            elif not token.startswith("extern") and depth > 0:
                return True
        return False

    return test


_MUTEX_FUNCTION = re.compile(rb"\bpthread_mutex_(?!t\b)\w")  # pthread_mutex_lock, _init, ...: not the type
