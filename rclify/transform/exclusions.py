"""The parts of a tree the transform leaves alone: what the user names (`--exclude PATH`, or
`exclude = [...]` in the [transform] table of rclify.toml) and, by default, vendored code: a
directory that is plainly another project's (VENDOR_DIRECTORIES' children, a nested project with
its own build and licence, a git submodule).  Their files are neither analysed nor rewritten;
their lock calls are reported, left alone, with the reason (call_sites.LEFT_ALONE's "excluded").

Why vendored code is left alone by default: it is not the program's to change (an update of the
vendored copy would undo the transform, or conflict with it), the user asked for the program's
own locks; and an allocator among it must not run on the runtime at all: the runtime allocates
(RCL servers' and combining locks' per-thread records, lazily, on a thread's first lock) through
malloc, which is then the vendored allocator (jemalloc in redis's deps/), whose mutexes, moved
onto the runtime, would be taken again from inside the runtime's own allocation.
"""

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePath

from rclify.ctext.languages import is_cxx
from rclify.ctext.source_tree import SourceTree
from rclify.ctext.tokens import code_only
from rclify.errors import UsageError
from rclify.pthread_api import LOCK_OPERATIONS
from rclify.transform.call_sites import CallSite

CONFIG_FILE = "rclify.toml"  # its [transform] table: exclude = ["deps/x", ...], include_vendored = true

# Directories whose every child is a vendored project (redis's deps/, Chromium's third_party/)
VENDOR_DIRECTORIES = frozenset({"deps", "third_party", "third-party", "thirdparty", "vendor", "vendored",
                                "3rdparty"})
# A nested project: its own build files and its own licence, side by side
BUILD_FILES = frozenset({"Makefile", "makefile", "GNUmakefile", "Makefile.in", "Makefile.am", "CMakeLists.txt",
                         "configure", "configure.ac", "configure.in", "meson.build", "SConstruct"})
_LICENCE = re.compile(r"^(?:COPYING|LICEN[CS]E|COPYRIGHT)(?:[._-]\w+)*$", re.I)

INCLUDE_VENDORED = "--include-vendored to transform it"


@dataclass(frozen=True)
class Excluded:
    path: str  # relative to the tree's root: a directory or a file
    why: str  # for the summary: "vendored: own build and licence; --include-vendored to transform it"


def find(root: Path, given: list[str], include_vendored: bool) -> list[Excluded]:
    """What the transform of the tree at root leaves alone: the paths given (--exclude), those of
    rclify.toml's [transform] exclude, and (unless include_vendored, or rclify.toml's
    include_vendored) the vendored directories.  A path that names nothing in the tree is an
    error (a typo would otherwise transform what the user meant to keep)."""
    table = _config(root)
    include_vendored = include_vendored or bool(table.get("include_vendored", False))
    out = [Excluded(_relative(root, p, "--exclude"), "--exclude") for p in given]
    out += [Excluded(_relative(root, p, f"{CONFIG_FILE} [transform] exclude"), f"{CONFIG_FILE} exclude")
            for p in table.get("exclude", [])]
    if not include_vendored:
        named = {e.path for e in out}
        out += [e for e in vendored(root) if not any(_within(e.path, n) for n in named)]
    return out


def vendored(root: Path) -> list[Excluded]:
    """The tree's plainly vendored directories, outermost only, each with why."""
    submodules = _submodules(root)
    found = []
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        here = Path(directory)
        rel = str(here.relative_to(root))
        why = None
        if rel in submodules:
            why = "vendored: a git submodule"
        elif here != root and BUILD_FILES & set(names) and any(_LICENCE.match(n) for n in names):
            why = "vendored: own build and licence"
        elif here != root and here.parent != root and here.parent.name in VENDOR_DIRECTORIES:
            why = f"vendored: under {here.parent.relative_to(root)}/"
        if why is not None:
            found.append(Excluded(rel, f"{why}; {INCLUDE_VENDORED}"))
            dirs[:] = []
        elif here.name in VENDOR_DIRECTORIES and here != root and any(_is_source(n) for n in names):
            found.append(Excluded(rel, f"vendored: a {here.name}/ directory; {INCLUDE_VENDORED}"))
            dirs[:] = []
    return found


def split(tree: SourceTree, excluded: list[Excluded]) -> tuple[SourceTree, dict[str, list[str]]]:
    """The tree without the excluded files, and {excluded path: the source files under it}
    (paths with no source file left out: nothing to say about them)."""
    kept, left = [], {}
    for path in tree.files:
        rel = tree.rel(path)
        owner = next((e.path for e in excluded if _within(rel, e.path)), None)
        if owner is None:
            kept.append(path)
        else:
            left.setdefault(owner, []).append(rel)
    return (SourceTree(tree.root, kept) if len(kept) != len(tree.files) else tree), left


_LOCK_CALL = re.compile(r"\b(" + "|".join(sorted(LOCK_OPERATIONS, key=len, reverse=True)) + r")\s*\(")


def call_sites(tree: SourceTree, files: list[str]) -> list[CallSite]:
    """The pthread lock, unlock and trylock calls of excluded files, each left alone ("excluded"),
    read from their text (comments and strings aside; a call in a #define's body counted there:
    nothing of an excluded file is expanded)."""
    sites = []
    for rel in files:
        text = code_only(tree.text(rel))
        for m in _LOCK_CALL.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            sites.append(CallSite(rel, line, LOCK_OPERATIONS[m.group(1)], left_alone="excluded"))
    return sites


def _config(root: Path) -> dict:
    path = root / CONFIG_FILE
    if not path.is_file():
        return {}
    try:
        table = tomllib.loads(path.read_text()).get("transform", {})
    except tomllib.TOMLDecodeError as err:
        raise UsageError(f"{path}: {err}") from None
    if not isinstance(table, dict):
        raise UsageError(f"{path}: [transform] is not a table")
    if not isinstance(table.get("exclude", []), list) or not all(isinstance(p, str) for p in table.get("exclude", [])):
        raise UsageError(f"{path}: [transform] exclude is not a list of paths")
    if not isinstance(table.get("include_vendored", False), bool):
        raise UsageError(f"{path}: [transform] include_vendored is not true or false")
    return table


def _relative(root: Path, given: str, origin: str) -> str:
    """A path given relative to the tree's root (or absolute, inside it), as a relative path."""
    path = Path(given)
    full = (path if path.is_absolute() else root / path).resolve()
    if not full.is_relative_to(root.resolve()) or full == root.resolve():
        raise UsageError(f"{origin} {given}: not a path inside the tree {root} (nothing was changed)")
    if not full.exists():
        raise UsageError(f"{origin} {given}: no such file or directory in the tree {root} "
                         "(paths are relative to the tree's root; nothing was changed)")
    return str(full.relative_to(root.resolve()))


def _within(rel: str, path: str) -> bool:
    return rel == path or PurePath(rel).is_relative_to(path)


def _is_source(name: str) -> bool:
    return name.endswith((".c", ".h")) or is_cxx(name)


def _submodules(root: Path) -> set[str]:
    """The paths .gitmodules names (`path = deps/x`)."""
    try:
        text = (root / ".gitmodules").read_text(errors="replace")
    except OSError:
        return set()
    return {m.group(1).strip().rstrip("/") for m in re.finditer(r"^\s*path\s*=\s*(.+)$", text, re.M)}
