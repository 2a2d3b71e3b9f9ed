"""C++ files in a C tree: which they are, their lock regions, the C++ form of the rewrite, and
their compile check.

A C tree often has a few C++ files sharing its headers.  Their lock API is rewritten like C's
(rewrite_api.py: spatch --c++ where it parses, the token-level text pass for the rest) so that a
header they share with C can be rewritten, and they are compile-checked with g++ before and after
(compile_check.py).  Their regions are not extracted (the extraction writes C): each lock call is listed
as a hybrid region, reason c++-source, found with libclang (-x c++); its calls run as
rcl_mutex_lock/unlock, which is correct on every algorithm.
"""

import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import clang.cindex as ci

from rclify.ctext.cursors import child_nodes
from rclify.ctext import cparse
from rclify.ctext.languages import is_cxx, is_cxx_source
from rclify.ctext.tokens import call_arguments, code_only
from rclify.errors import ParseError
from rclify.runtime_build import cflags
from rclify.transform.lock_statements.calls import classify
from rclify.transform.lock_statements.expansion import substitute
from rclify.transform.refusals import Reason
from rclify.transform.region_records import RegionRecord, WhyHybrid
from rclify.ctext.source_tree import SourceTree
from rclify.transform.vocabulary import Vocabulary

K = ci.CursorKind
_FUNCTIONS = {K.FUNCTION_DECL, K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR, K.CONVERSION_FUNCTION,
              K.FUNCTION_TEMPLATE}
_SCOPES = {K.NAMESPACE, K.CLASS_DECL, K.STRUCT_DECL, K.UNION_DECL, K.CLASS_TEMPLATE,
           K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION}
_LOCKS = {"pthread_mutex_lock": "lock", "pthread_mutex_trylock": "trylock"}


def cxx_compiles(tree: Path, rel: str, flags: list[str], original: Path | None = None) -> tuple[bool, str]:
    """g++ -fsyntax-only on tree/rel with the tree's headers and the runtime's.  original: the
    tree a staging copy was made from, searched last for files the copy lacks (.inl, .def...)."""
    after = [] if original is None else ["-idirafter", str((original / rel).parent), "-idirafter", str(original)]
    proc = subprocess.run(["g++", "-fsyntax-only", "-w", f"-I{tree}", *flags, *cflags(), *after, rel],
                          cwd=tree, capture_output=True, text=True)
    first = next((line for line in proc.stderr.splitlines() if ": error:" in line), proc.stderr[:300])
    return proc.returncode == 0, first


_CONFIG_REF = re.compile(r"\bRCL_CONFIG_REF\s*\(")


def config_refs_for_cxx(text: str) -> str:
    """RCL_CONFIG_REF(cfg) takes the address of a C compound literal, which C++ refuses ("taking
    address of rvalue"); in C++ text it becomes a lambda returning a static configuration."""
    code = code_only(text)
    for m in reversed(list(_CONFIG_REF.finditer(code))):
        found = call_arguments(code, m.end() - 1)
        if found is None or len(found[0]) != 1:
            continue
        cfg = text[m.end() : found[1] - 1].strip()
        text = (text[: m.start()] + "[]() -> const rcl_lock_config_t * { static const rcl_lock_config_t "
                f"rclify_config = {cfg}; return &rclify_config; }}()" + text[found[1] :])
    return text


def cxx_regions(tree: SourceTree, flags_for: Callable[[Path], list[str]], vocab: Vocabulary, jobs: int,
                failures: dict[str, str]) -> list[RegionRecord]:
    """One hybrid region record (reason c++-source) per lock or trylock call in the tree's C++
    sources and C++ headers (through a macro or a lock wrapper too).  A file libclang cannot
    parse is scanned for direct pthread calls instead, and named in failures."""
    sources = [f for f in tree.files if is_cxx_source(f)]
    if not sources:
        return []
    stub_dir = Path(tempfile.mkdtemp(prefix="rclify-stubs-"))
    ops = dict(_LOCKS) | {w.name: w.kind for w in vocab.wrappers.values() if w.kind in ("lock", "trylock")}
    ours = {str(f.resolve()): tree.rel(f) for f in tree.files if is_cxx(f)}

    def one(path: Path) -> list[tuple[int, RegionRecord]]:
        try:
            parsed = cparse.parse(path, flags_for(path), stub_dir, cxx=True)
        except ParseError as err:
            failures.setdefault(tree.rel(path), str(err))
            return _scanned(tree.text(path), tree.rel(path))
        return list(_walk(parsed.tu.cursor, "", ours, ops, vocab, tree))

    records: dict[tuple[str, int, int], RegionRecord] = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for found in pool.map(one, sources):
            for column, record in found:
                records.setdefault((record.file, record.line, column), record)
    return [records[k] for k in sorted(records)]


def _walk(cursor: ci.Cursor, function: str, ours: dict[str, str], ops: dict[str, str], vocab: Vocabulary,
          tree: SourceTree):
    for child in child_nodes(cursor):
        loc = child.location
        if cursor.kind == K.TRANSLATION_UNIT and (loc.file is None or loc.file.name not in ours):
            continue  # system headers and the tree's C headers
        if child.kind in _FUNCTIONS and child.is_definition():
            yield from _walk(child, _qualified(child), ours, ops, vocab, tree)
            continue
        if child.kind == K.CALL_EXPR and child.spelling in ops and loc.file is not None and loc.file.name in ours:
            yield _record(child, function, ours[loc.file.name], ops[child.spelling], vocab, tree)
        yield from _walk(child, function, ours, ops, vocab, tree)


def _qualified(fn: ci.Cursor) -> str:
    names, scope = [fn.spelling], fn.semantic_parent
    while scope is not None and scope.kind in _SCOPES:
        if scope.spelling:  # an anonymous namespace has none
            names.append(scope.spelling)
        scope = scope.semantic_parent
    return "::".join(reversed(names))


def _source(cursor: ci.Cursor, tree: SourceTree) -> str:
    """The cursor's text as written (the tree's files as read once)."""
    ext = cursor.extent
    if ext.start.file is not None and ext.start.file.name == ext.end.file.name and ext.end.offset > ext.start.offset:
        name = ext.start.file.name
        rel = tree.under(name)
        data = tree.data(rel) if rel is not None else Path(name).read_bytes()
        return data[ext.start.offset : ext.end.offset].decode("utf-8", errors="surrogateescape")
    return "".join(t.spelling for t in cursor.get_tokens())


def _record(call: ci.Cursor, function: str, rel: str, kind: str, vocab: Vocabulary, tree: SourceTree
            ) -> tuple[int, RegionRecord]:
    """The call's column and its region record."""
    args = [_source(a, tree) for a in call.get_arguments()]
    lock = args[0] if args else ""
    via = ""
    written = _source(call, tree)
    if not written.startswith(call.spelling):  # through a macro: read as the C analysis reads it
        op = classify(written, vocab)
        via, lock = (op.via, op.mutex) if op is not None else (written.split("(")[0].strip(), written)
    elif call.spelling in vocab.wrappers:
        wrapper = vocab.wrappers[call.spelling]
        via, lock = wrapper.name, substitute(wrapper.expr, wrapper.params, args) or lock
    line = call.location.line
    return call.location.column, _hybrid(rel, line, function, lock, via, kind)


def _hybrid(rel: str, line: int, function: str, lock: str, via: str, kind: str) -> RegionRecord:
    return RegionRecord(rel, line, function, lock, via, kind, lock, why_hybrid=WhyHybrid.of(Reason.CXX_SOURCE, line))


_DIRECT = re.compile(r"\b(pthread_mutex_(?:lock|trylock))\s*\(")


def _scanned(text: str, rel: str) -> list[tuple[int, RegionRecord]]:
    """The lock calls of a file libclang could not parse, read from its text (no function name)."""
    code = code_only(text)
    out = []
    for m in _DIRECT.finditer(code):
        found = call_arguments(code, m.end() - 1)
        lock = found[0][0] if found and found[0] else ""
        line = code.count("\n", 0, m.start()) + 1
        out.append((m.start(), _hybrid(rel, line, "", lock, "", _LOCKS[m.group(1)])))
    return out
