"""Which files of a tree include which, and the group of files that must be left unchanged
together when one of them cannot be.

A file left as it was keeps its pthread calls; if a header it includes were rewritten to
rcl_mutex_t it would call pthread_mutex_lock on an rcl_mutex_t (an error in C++, a warning and
memory corruption in C).  So leaving a file unchanged leaves unchanged, to a fixpoint:
  * every changed header it includes, directly or through other headers, unless the compile
    check found that its original text compiles against them as rewritten (it uses none of their
    locks: the check's -Werror=incompatible-pointer-types makes a pthread call on an rcl_mutex_t
    an error), so that one file does not freeze a header every other file takes rewritten;
  * for a header: every changed file that includes it, directly or transitively;
  * every changed file that declares, at file scope, a name the file declares there with a pthread
    mutex or condvar type in the declaration (an `extern pthread_mutex_t m;`, a function taking a
    `pthread_mutex_t *`): objects and functions shared between files without a common header.
Files that did not change are never in a group: there is nothing to put back.
"""

import os
import re
from pathlib import Path, PurePath
from typing import Callable

from rclify.ctext.preprocessor import includes
from rclify.ctext.tokens import code_only, iter_tokens
from rclify.ctext.source_tree import SourceTree

_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
_NOT_NAMES = {
    "auto", "bool", "char", "const", "double", "enum", "extern", "float", "inline", "int", "long",
    "register", "restrict", "short", "signed", "static", "struct", "typedef", "union", "unsigned",
    "void", "volatile", "__restrict", "__attribute__", "__extension__", "_Thread_local", "__thread",
    "class", "constexpr", "mutable", "noexcept", "thread_local", "virtual", "pthread_mutex_t", "pthread_cond_t",
    "public", "private", "protected", "final", "override",
}


def include_dirs(root: Path, flags: list[str]) -> list[Path]:
    """The tree's root and the -I directories among flags (relative ones from the root)."""
    dirs = [root]
    for i, flag in enumerate(flags):
        value = flag[2:] if flag.startswith("-I") and len(flag) > 2 else (
            flags[i + 1] if flag == "-I" and i + 1 < len(flags) else None)
        if value:
            path = Path(value) if Path(value).is_absolute() else root / value
            dirs.append(path.resolve())
    return dirs


class IncludeGraph:
    """Which files of the tree each file includes (`direct`, by relative path), read from the
    #include directives of their text (every branch of an #if counts: a superset of what any
    configuration includes).  Asked for a file's own includes (`includes`), what it includes
    through other files too (`closure`), and the other way, the files that include it, directly
    (`direct_includers`) or through other files (`includers`).  Two ways to tell the file a
    directive names, the same queries over either:

      by_path       as the compiler looks for it: `"x"` beside the includer, then `"x"` and `<x>`
                    in the root and the -I directories of flags (the compile check's: what
                    must stay unchanged together);
      by_base_name  `"…/x"`: every header of the tree named x, wherever it is.  Without any
                    flags, so a header found through an -I directory (libuv's `"uv-common.h"` in
                    src/, included from src/unix/) or through a path from another directory
                    (`"sys/lock.h"` for compat/sys/lock.h) is reached; two headers of one name are
                    both reached.  Built once per transform (pipeline.py) and asked by the
                    analysis (which C files reach a header that locks: analyse.py; which include a
                    header whose functions lock: header_sections.py), the lock table (the struct
                    types a file sees: struct_instances.py) and the compile check (the C files a
                    header with extracted code is compiled through: compile_check.py).
    """

    def __init__(self, direct: dict[str, set[str]]):
        self.direct = direct  # relative path -> the tree files it includes (never itself)
        self._closure: dict[str, set[str]] = {}
        self._direct_includers: dict[str, set[str]] | None = None  # rel -> the files naming it, once asked

    @classmethod
    def by_path(cls, root: Path, files: list[Path], flags: list[str],
                text: Callable[[Path], str] | None = None) -> "IncludeGraph":
        """text: a file's text (SourceTree.text), else read here."""
        root = root.resolve()
        dirs = include_dirs(root, flags)
        known = {p.resolve(): str(p.resolve().relative_to(root)) for p in files}

        def named(path: Path, delimiter: str, name: str) -> set[str]:
            where = ([path.parent] if delimiter == '"' else []) + dirs
            return {next((known[c] for d in where if (c := (d / name).resolve()) in known), None)} - {None}

        read = text or (lambda path: path.read_text(encoding="utf-8", errors="surrogateescape"))
        return cls({rel: _included(path, rel, read(path), named) for path, rel in known.items()})

    @classmethod
    def by_base_name(cls, tree: SourceTree, files: list[Path] | None = None) -> "IncludeGraph":
        """Over files (default: the tree's); a header is any file but a C source (.c)."""
        files = tree.files if files is None else files
        return cls.by_base_name_of({tree.rel(path): tree.text(path) for path in files})

    @classmethod
    def by_base_name_of(cls, texts: dict[str, str]) -> "IncludeGraph":
        """by_base_name over {relative path: text} (the lock table's texts)."""
        headers: dict[str, set[str]] = {}
        for rel in texts:
            if PurePath(rel).suffix != ".c":
                headers.setdefault(PurePath(rel).name, set()).add(rel)

        def named(path: Path, delimiter: str, name: str) -> set[str]:
            return headers.get(PurePath(name).name, set()) if delimiter == '"' else set()

        return cls({rel: _included(Path(rel), rel, text, named) for rel, text in texts.items()})

    def includes(self, rel: str) -> set[str]:
        """The tree files rel's own directives name (not through other files)."""
        return self.direct.get(rel, set())

    def direct_includers(self, rel: str) -> set[str]:
        """The files whose own directives name rel."""
        if self._direct_includers is None:
            self._direct_includers = {}
            for f, included in self.direct.items():
                for h in included:
                    self._direct_includers.setdefault(h, set()).add(f)
        return self._direct_includers.get(rel, set())

    def closure(self, rel: str) -> set[str]:
        """Every tree file rel includes, directly or through other files."""
        if rel not in self._closure:
            seen, todo = set(), list(self.direct.get(rel, ()))
            while todo:
                f = todo.pop()
                if f not in seen:
                    seen.add(f)
                    todo.extend(self.direct.get(f, ()))
            self._closure[rel] = seen - {rel}
        return self._closure[rel]

    def includers(self, rel: str) -> set[str]:
        """Every file that includes rel, directly or through other files."""
        return {f for f in self.direct if rel in self.closure(f)}


def files_included(root: Path, texts: dict[str, str], have: set[str]) -> list[str]:
    """Every file under root (any name: lock_alloc.incl, iana_ports.inc, x.def; a directory left
    out of the transform too) that texts ({relative path: text}) include, directly or through
    each other, as far as base names tell, except those in have; relative paths, sorted.  What
    the compile check's staging copy must hold besides the sources for their units to compile as
    the tree's do: a superset (two files of one name both come), never a file the tree lacks."""
    by_name: dict[str, list[str]] = {}
    for directory, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            by_name.setdefault(name, []).append(os.path.relpath(os.path.join(directory, name), root))
    found: set[str] = set()
    todo = list(texts.values())
    while todo:
        for _, name in includes(todo.pop()):
            for rel in by_name.get(PurePath(name).name, ()):
                if rel in have or rel in found or not (root / rel).is_file():
                    continue
                found.add(rel)
                try:
                    todo.append((root / rel).read_text(encoding="utf-8", errors="surrogateescape"))
                except OSError:  # unreadable: the compile reports it as the original's would
                    pass
    return sorted(found)


def _included(path: Path, rel: str, text: str, named: Callable[[Path, str, str], set[str]]) -> set[str]:
    """The tree files path's directives name (named: a directive's files), itself aside."""
    return {hit for delimiter, name in includes(text) for hit in named(path, delimiter, name)} - {rel}


def shared_lock_names(text: str) -> set[str]:
    """Names of objects and functions declared at file scope (namespaces and extern "C" blocks
    count as file scope), not static, by a declaration that mentions pthread_mutex_t or
    pthread_cond_t or a type that holds one; parameters and initializers excluded.  Type names
    (typedef names, struct tags) are not among them: they have no linkage, and two programs of one
    tree (a library's example and its test) each declaring a `queue_t` share nothing through it;
    an object or function of that type is still a name.  A superset (macros may come along), which
    only makes a group larger."""
    names: set[str] = set()
    lock_types = {"pthread_mutex_t", "pthread_cond_t"}
    chunk: list = []
    depth, body_locks, carried = 0, False, False  # braces of function and struct bodies, initializers
    for tok in iter_tokens(_DIRECTIVE.sub(" ", code_only(text))):
        if depth:
            depth += (tok.text == "{") - (tok.text == "}")
            body_locks = body_locks or tok.text in lock_types
            if depth == 0 and body_locks and chunk:  # a struct holding a lock: its tag is a lock type
                lock_types |= _declared(chunk)
                carried = True  # what follows `}` is declared with it (`} name;` of a typedef too)
            elif depth == 0:
                chunk = []
            continue
        if tok.text == "}":  # the end of a namespace or extern "C" block
            chunk, carried = [], False
            continue
        if tok.text not in (";", "{"):
            chunk.append(tok)
            continue
        if carried or any(t.text in lock_types for t in chunk):
            declared = _declared(chunk) if not any(t.text == "static" for t in chunk) else set()
            if chunk and chunk[0].text == "typedef":
                lock_types |= declared  # a type's name: no linkage, each file has its own
            else:
                names |= declared - _tags(chunk) - lock_types  # the type a declaration is written with too
        carried = False
        if tok.text == "{" and not _opens_scope(chunk):
            depth, body_locks = 1, False
            if chunk and chunk[0].text in ("struct", "union", "class", "typedef"):
                continue  # keep the chunk: a struct's tag is named when its body holds a lock
        chunk = []
    return names


def _tags(chunk: list) -> set[str]:
    """The struct, union, enum and class tags a declaration names (`struct ledger *get(void)`)."""
    return {tok.text for prev, tok in zip(chunk, chunk[1:])
            if prev.text in ("struct", "union", "enum", "class") and tok.kind == "ident"}


def _opens_scope(chunk: list) -> bool:
    words = [t.text for t in chunk]
    return words[:1] == ["namespace"] or (words[:1] == ["extern"] and len(words) == 2 and words[1].startswith('"'))


def _declared(chunk: list) -> set[str]:
    """The identifiers of a declaration outside parentheses (parameters) and initializers."""
    out, nesting, initializer = set(), 0, False
    for tok in chunk:
        nesting += (tok.text in "([{") - (tok.text in ")]}")
        if nesting == 0 and tok.text in ("=", ","):
            initializer = tok.text == "="
        elif nesting == 0 and not initializer and tok.kind == "ident" and tok.text not in _NOT_NAMES:
            out.add(tok.text)
    return out


def left_unchanged_group(seeds: dict[str, str], changed: set[str], graph: IncludeGraph,
                         texts: dict[str, str], alone: frozenset[str] = frozenset()) -> dict[str, str]:
    """{file: why} of every changed file to leave as it was with the seeds ({file: why}): the
    fixpoint described in this module's docstring.  texts: the original text of each file.
    alone: files whose original text the compile check found to compile against the rewritten
    headers it includes (compile_check.Staging.leave_unchanged): those headers stay rewritten for
    every other file (one file that cannot take the transform does not freeze a shared header)."""
    group = dict(seeds)
    names = {rel: shared_lock_names(texts[rel]) for rel in changed if rel in texts}
    todo = list(seeds)
    while todo:
        rel = todo.pop()
        linked = [] if rel in alone else [(h, f"included by {rel}, left unchanged") for h in graph.closure(rel)]
        if rel in graph.direct and Path(rel).suffix in (".h", ".hpp", ".hh", ".hxx"):
            linked += [(f, f"includes {rel}, left unchanged") for f in graph.includers(rel)]
        mine = names.get(rel) or shared_lock_names(texts.get(rel, ""))
        linked += [(f, f"declares {', '.join(sorted(mine & theirs))} as {rel} does, left unchanged")
                   for f, theirs in names.items() if mine & theirs]
        for other, why in linked:
            if other in changed and other not in group:
                group[other] = why
                todo.append(other)
    return group
