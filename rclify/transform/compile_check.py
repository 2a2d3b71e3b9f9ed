"""The API rewrite over the extracted text, in a staging copy of the tree, then a compile check.

Every changed C file is compiled (gcc -fsyntax-only) against the staged headers and the runtime's,
with every C file that includes (transitively) a changed header (whatever it names: an alias of
the pthread API in a header reaches files that never name it), and every C++ source that changed or includes a
changed header with g++.  Of a C file whose new text does not compile while its original does,
check() gives a Verdict: gcc's error and the extracted regions its errors are in.  The pipeline,
which owns each region's fate, renders the file again without them and hands it back (recheck),
a few rounds; else it asks for the API rewrite alone (api_rewrite_alone: its regions left hybrid,
reason generated-code-does-not-compile).  A file that still does not compile is left unchanged
(leave_unchanged), and with it every changed file that must then stay as it is for the tree to
stay consistent (rclify/ctext/includes.py: the headers it includes, their includers, files
sharing its lock declarations), but for a file whose original text compiles against the
rewritten headers it includes: it is left unchanged alone, its headers stay rewritten for the
others; all are reported.  The staging copy holds the tree's sources and every other file they
include, whatever its name (`.inc`, `.incl`, a vendored header).  Nothing here writes to the tree.
"""

import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rclify import atomic_file, lock_config
from rclify.ctext.spatch import MACRO_FILE
from rclify.progress import step
from rclify.runtime_build import cflags
from rclify.transform import rewrite_api
from rclify.ctext.languages import is_cxx_source, is_header
from rclify.transform.cxx import cxx_compiles
from rclify.transform.build_flags import BuildFlags
from rclify.ctext.includes import IncludeGraph, files_included, left_unchanged_group
from rclify.transform.kept_posix import KeptPosix
from rclify.lock_identity.lock_table import LockTable
from rclify.transform.refusals import Reason
from rclify.transform.report import Outcome
from rclify.ctext.source_tree import SourceTree


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="surrogateescape")


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8", errors="surrogateescape")


# A pthread call left on an rcl_mutex_t (or an rcl_* call the runtime does not declare) is only a
# warning for gcc 12 and would hang or crash at run time: here it is an error (gcc 14's default).
STRICT = ["-Werror=incompatible-pointer-types", "-Werror=implicit-function-declaration"]


def _gcc(tree: Path, rel: str, flags: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(["gcc", "-fsyntax-only", "-std=gnu11", *STRICT, f"-I{tree}", *flags, *cflags(), rel],
                          cwd=tree, capture_output=True, text=True)


_DIAGNOSTIC = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?:\d+:)? (?P<kind>(?:fatal )?error|note): (?P<message>.*)")


def error_lines(tree: Path, rel: str, stderr: str) -> dict[tuple[str, int], str]:
    """Where gcc reports errors in tree/rel (stderr: its compile's): {(file, line): the first error there}.  Lines, not
    messages, are compared: the rewritten text fails differently where the original fails (an
    undeclared PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP becomes a call of the undefined
    RCL_RECURSIVE_MUTEX_INITIALIZER), and #line keeps the original's line numbers, generated code
    included.  An error inside a macro's definition is placed where rel expands it."""
    out: dict[tuple[str, int], str] = {}
    current: tuple[tuple[str, int], str] | None = None
    for line in stderr.splitlines():
        m = _DIAGNOSTIC.match(line)
        if m is None:
            continue
        where = (m["file"].replace(str(tree) + "/", ""), int(m["line"]))
        if m["kind"] != "note":
            if current:
                out.setdefault(*current)
            current = (where, line)
        elif current and where[0] == rel and "in expansion of macro" in m["message"]:
            current = (where, current[1])
    if current:
        out.setdefault(*current)
    return out


# gcc's error lines: `file:line:col: error:` and `fatal error:` (a missing include), never a
# warning or note printed before them (the first line of stderr is often an old warning)
_ERROR = re.compile(r": (?:fatal )?error: ")


def compiles(tree: Path, rel: str, flags: list[str]) -> tuple[bool, str]:
    """gcc -fsyntax-only on tree/rel, with its build flags, the tree's headers and the runtime's."""
    ok, first, _ = _compile(tree, rel, flags)
    return ok, first


def _compile(tree: Path, rel: str, flags: list[str]) -> tuple[bool, str, str]:
    """compiles(), with gcc's whole stderr (for error_lines)."""
    proc = _gcc(tree, rel, flags)
    first = next((line for line in proc.stderr.splitlines() if _ERROR.search(line)), proc.stderr[:300])
    return proc.returncode == 0, first, proc.stderr


_IN_FUNCTION = re.compile(r"^(?P<file>[^:]+): In function [‘'`](?P<name>\w+)[’']:")


def _errors_by_function(tree: Path, rel: str, flags: list[str]) -> list[tuple[str, int, str]]:
    """(function, line, message) of each error gcc reports in rel itself ('' for the function of
    an error outside any); a compile that fails with no such error gives one ('', 0, stderr)."""
    proc = _gcc(tree, rel, flags)
    if proc.returncode == 0:
        return []
    out, function = [], ""
    for line in proc.stderr.splitlines():
        if (m := _IN_FUNCTION.match(line)) is not None:
            function = m.group("name") if m.group("file") == rel else ""
        elif (m := re.match(rf"{re.escape(rel)}:(\d+):\d+: (?:fatal )?error: ", line)) is not None:
            out.append((function, int(m.group(1)), line))
        elif re.match(r"[^:\s]+: At top level:", line):
            function = ""
    first = next((line for line in proc.stderr.splitlines() if _ERROR.search(line)), proc.stderr[:300])
    return out or [("", 0, first)]


@dataclass
class Verdict:
    """A C file whose transformed text does not compile where its original does."""

    error: str  # gcc's first error the original does not have
    extracted: bool  # the file has extracted code (else only its API was rewritten)


@dataclass
class Staging:
    """A copy of the tree's C files with the extracted text in, where the API is rewritten and the
    result compiled; a context manager (the copy is removed on exit)."""

    tree: SourceTree  # the original files: read there, never written
    table: LockTable
    config_path: Path  # lock_config.h, where the tree will have it
    flags: BuildFlags  # each file's build flags (paths in the tree), and which C files the build compiles
    jobs: int
    outcome: Outcome
    progress: Callable[[str], None]
    kept: KeptPosix = field(default_factory=KeptPosix)  # locks that stay pthread ones; files left as they are
    macro_file: Path = MACRO_FILE  # spatch's: with the tree's declaration macros (ctext/tree_macros.py)
    by_base_name: IncludeGraph | None = None  # the tree's include graph by base name (the pipeline's, else stage()'s)
    # what stage() makes: the staging directory (__enter__), the files, lock_config.h there, the C
    # files and those with extracted text (relative paths), the include graph of the check (by path)
    dir: Path = field(init=False)
    files: list[Path] = field(init=False)
    config: Path = field(init=False)
    c_files: list[str] = field(init=False)
    extracted_in: set[str] = field(init=False)
    graph: IncludeGraph = field(init=False)

    @property
    def root(self) -> Path:
        return self.tree.root

    def __enter__(self) -> "Staging":
        self.dir = Path(tempfile.mkdtemp(prefix="rclify-stage-"))
        return self

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def stage(self, files: list[Path], rendered: dict[Path, str]) -> dict[str, str]:
        """Stages the rendered texts, rewrites the API, checks the headers with extracted code;
        returns {relative path: new text} of every file that changes (check() says which compile)."""
        self.files = files
        self.by_base_name = self.by_base_name or IncludeGraph.by_base_name(self.tree, files)
        rel_of = self.tree.rel
        for path in files:
            target = self.dir / rel_of(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            if path in rendered:
                _write(target, rendered[path])
            else:
                shutil.copy2(path, target)
        self._stage_included(files)
        root, config = self.root, self.config_path
        self.config = self.dir / config.relative_to(root) if config.is_relative_to(root) else config
        new_texts = self._rewrite([self.dir / rel_of(p) for p in files])
        changed = {}
        for path in files:
            rel = rel_of(path)
            text = new_texts.get(self.dir / rel)
            if text is None:
                text = _read(self.dir / rel)
            if text != self.tree.text(path):
                changed[rel] = text
                _write(self.dir / rel, text)
        self.config.parent.mkdir(parents=True, exist_ok=True)  # --config in a folder with no source file
        # a new file renamed into place: a link already at that name is replaced, never written
        # through to where it points (write_text would write in place into a FIFO or device)
        atomic_file.write_bytes(self.config, lock_config.render(self.outcome.locks).encode())
        self.c_files = [rel_of(p) for p in files if p.suffix == ".c"]
        self.extracted_in = {rel_of(p) for p in rendered}
        self._verify_headers(changed, self.extracted_in)
        return changed

    def _stage_included(self, files: list[Path]) -> None:
        """Copies into the staging copy every other file of the tree that the sources include
        (includes.files_included): a `.inc`, `.incl` or `.def` file, a header of a directory
        left out of the transform.  Without them a unit that includes one fails in the copy
        alone, and the file (and, before, every file sharing its headers) was left unchanged."""
        texts = {self.tree.rel(p): self.tree.text(p) for p in files}
        for rel in files_included(self.root, texts, set(texts)):
            target = self.dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(self.root / rel, target)

    def _rewrite(self, paths: list[Path]) -> dict[Path, str]:
        result = rewrite_api.rewrite_api(self.dir, paths, self.table.sites, self.config, self.jobs, kept=self.kept,
                                         macro_file=self.macro_file)
        outcome = self.outcome
        outcome.api_errors += [e for e in result.errors if e not in outcome.api_errors]
        outcome.api_notes += [n for n in result.notes if n not in outcome.api_notes]
        outcome.helper_calls_unwrapped += [n for n in result.unwrapped if n not in outcome.helper_calls_unwrapped]
        for rel, message in result.failures.items():
            outcome.failures.setdefault(rel, message)
        return result

    def _includers(self, header: str) -> list[str]:
        """The tree's C files that #include a file named like header (by its base name, directly),
        in the order of files (_verify_headers stops at the first that fails).  Read from the
        original texts: a staged one is the original with regions moved into functions, the API
        rewritten and an `#include "…/lock_config.h"` added (rewrite_api.add_include), so the
        same includes of the tree's headers (lock_config.h is none: source_tree.source_files)."""
        includers = self.by_base_name.direct_includers(header)
        return [rel for rel in self.c_files if rel in includers]

    def _verify_headers(self, changed: dict[str, str], extracted_in: set[str]) -> None:
        """A header with extracted sections is checked through every C file that includes it;
        when one that compiled no longer does, the header gets the API rewrite alone (its
        regions hybrid, generated-code-does-not-compile)."""
        for header in sorted(rel for rel in extracted_in if rel in changed and not rel.endswith(".c")):
            for rel in self._includers(header):
                ok, error = compiles(self.dir, rel, self._staged_flags(rel))
                if ok or not compiles(self.root, rel, self.flags.for_file(self.root / rel))[0]:
                    continue
                staged, original = self.dir / header, self.tree.text(header)
                _write(staged, original)
                text = self._rewrite([staged]).get(staged) or original
                if text != original:
                    changed[header] = text
                else:
                    changed.pop(header, None)
                _write(staged, text)
                for region in self.outcome.regions:
                    if region.file == header and region.extracted:
                        region.leave_hybrid(Reason.GENERATED_CODE_DOES_NOT_COMPILE, f"{rel}: {error}")
                self.progress(f"warning: {header}: its extracted code does not compile in {rel} ({error}); "
                              "regions left hybrid")
                break

    def check(self, changed: dict[str, str]) -> dict[str, Verdict]:
        """Compiles every file whose text or headers changed; {relative path: Verdict} of those
        that no longer compile."""
        self.graph = graph = IncludeGraph.by_path(self.root, self.files, self.flags.for_file(self.root), self.tree.text)  # tree-wide flags
        headers = {rel for rel in changed if is_header(rel)}
        # every C file whose preprocessed text may change: its own text, or a header it includes
        # (a header's `#define my_mutex_init pthread_mutex_init` beside its rewritten types breaks
        # files that name only the alias); of the latter, those the build compiles (apr's netware,
        # os2 and win32 files compile on no Linux machine, before or after)
        c_files = sorted({rel for rel in graph.direct if rel.endswith(".c") and (
            rel in changed or graph.closure(rel) & headers and self.flags.built(self.root / rel))}
            | {rel for h in headers if h in self.extracted_in for rel in self._includers(h)})
        cxx_files = sorted(rel for rel in graph.direct if is_cxx_source(rel)
                           and (rel in changed or graph.closure(rel) & headers))
        self.progress(f"checking that {len(c_files)} C files and {len(cxx_files)} C++ files whose text or "
                      "headers changed still compile (gcc / g++ -fsyntax-only)")
        # each file compiled once staged and, where that fails, once as it was, both in a pool of
        # jobs: the errors the original does not have are read from the same two compiles
        checked = c_files + cxx_files
        with ThreadPoolExecutor(max_workers=max(1, self.jobs)) as pool, \
                step(self.progress, "compile check", len(checked), "files compiled") as compiling:
            staged = {}
            for rel, result in zip(checked, pool.map(lambda rel: self._compiles(rel, self.dir), checked)):
                staged[rel] = result
                compiling.advance()
            failing = [rel for rel in checked if not staged[rel][0]]
            originals = dict(zip(failing, pool.map(lambda rel: self._compiles(rel, self.root), failing)))
        verdicts = {}
        for rel in failing:
            _, error, stderr = staged[rel]
            original_ok, original_error, original_stderr = originals[rel]
            if not original_ok:  # then only errors the original does not have are the transform's
                after = {} if is_cxx_source(rel) else error_lines(self.dir, rel, stderr)
                new = sorted(set(after) - set(error_lines(self.root, rel, original_stderr)))
                if not new:
                    self.outcome.unverified[rel] = original_error
                    continue
                error = after[new[0]]
            verdicts[rel] = Verdict(error, rel in self.extracted_in)
        return verdicts

    def _compiles(self, rel: str, tree: Path) -> tuple[bool, str, str]:
        """(compiles, first error, gcc's stderr: '' for a C++ file) of rel in tree (staged or original)."""
        flags = self.flags.for_file(self.root / rel) if tree == self.root else self._staged_flags(rel)
        if is_cxx_source(rel):
            return *cxx_compiles(tree, rel, flags, None if tree == self.root else self.root), ""
        return _compile(tree, rel, flags)

    def _staged_flags(self, rel: str) -> list[str]:
        """The file's flags with paths into the tree moved into the staging copy (changed headers)."""
        root = str(self.root)
        return [f.replace(root, str(self.dir), 1) if root in f else f for f in self.flags.for_file(self.root / rel)]

    def recheck(self, rel: str, text: str, refused: set[int]) -> dict[int, str] | None:
        """Stages text as rel's (rendered again without the regions starting at refused), with the
        API rewritten; None when it compiles, else the regions its errors are in (failing_regions)."""
        staged = self.dir / rel
        _write(staged, text)
        _write(staged, self._rewrite([staged]).get(staged) or text)
        return self.failing_regions(rel, refused)

    def failing_regions(self, rel: str, refused: set[int]) -> dict[int, str] | None:
        """None when staged rel compiles, else the extracted regions of rel (not refused already)
        that gcc's errors are in: an error is in the function gcc names (a section's,
        rclify_cs_<f>_<n>, or its caller's), at a line of the user's source (#line): of that
        function's regions (those capturing a name the error quotes, if any), the one starting
        last at or before the line."""
        errors = _errors_by_function(self.dir, rel, self._staged_flags(rel))
        if not errors:
            return None
        extracted = [r for r in self.outcome.regions if r.file == rel and r.extracted]
        failing = {}
        for function, line, message in errors:
            mine = [r for r in extracted if function in (r.function, r.function_extracted) and r.line not in refused]
            # a name the message quotes that one region captures tells it from its neighbours
            # (a call site is longer than its region: its lines run into the next region's)
            quoted = set(re.findall(r"[‘'](\w+)[’']", message))
            mine = [r for r in mine if quoted & set(r.section.context)] or mine
            before = [r for r in mine if r.line <= line]
            for region in [max(before, key=lambda r: r.line)] if before else mine:
                failing[region.line] = message
        return failing

    def keep_without(self, rel: str, refused: dict[int, str], changed: dict[str, str]) -> None:
        """rel's staged text, which compiles without the regions at refused, is its new text."""
        changed[rel] = _read(self.dir / rel)
        for region in self.outcome.regions:
            if region.file == rel and region.extracted and region.line in refused:
                region.leave_hybrid(Reason.GENERATED_CODE_DOES_NOT_COMPILE, refused[region.line])
        self.progress(f"warning: {rel}: the extracted code of {len(refused)} region{'s' if len(refused) != 1 else ''} "
                      f"does not compile ({next(iter(refused.values()))}); left hybrid, the file's other regions "
                      "extracted")

    def leave_unchanged(self, broken: dict[str, str], changed: dict[str, str]) -> None:
        """Every file that does not compile after the rewrite is left as it was, with every changed
        file that must then stay as it is too (includes.left_unchanged_group); their regions report
        file-left-unchanged.  A broken file whose original text compiles against the rewritten
        headers it includes is left unchanged alone: those headers stay rewritten for the files that
        compile with them.  Checked again once the group is staged (a header it froze for another
        file is back as it was), until no such file fails: the group only grows."""
        graph = self.graph
        texts = {rel: self.tree.text(rel) for rel in set(changed) | set(broken)}
        seeds = {rel: f"does not compile after the rewrite: {error}" for rel, error in broken.items()}
        for rel in broken:
            _write(self.dir / rel, texts[rel])
        alone = {rel for rel in broken if self._compiles_as_original(rel)}
        while True:
            group = left_unchanged_group(seeds, set(changed) | set(broken), graph, texts, frozenset(alone))
            for rel in group:
                _write(self.dir / rel, texts[rel])
            failing = {rel for rel in alone if not self._compiles_as_original(rel)}
            if not failing:
                break
            alone -= failing
        for rel, why in sorted(group.items()):
            changed.pop(rel, None)
            if rel in alone:
                why += " (alone: it compiles unchanged with the rewritten headers it includes, which stay rewritten)"
            self.outcome.unchanged[rel] = why
            for region in self.outcome.regions:
                if region.file == rel:
                    region.leave_hybrid(Reason.FILE_LEFT_UNCHANGED, why)
            self.progress(f"warning: {rel}: {why}; file left unchanged")

    def _compiles_as_original(self, rel: str) -> bool:
        """Does rel, staged with its original text, compile against the staged headers as well as
        it does in the tree: without errors, or (an original that fails with these flags) with no
        error the original lacks?"""
        if is_header(rel):
            return False  # compiled only through its includers
        ok, _, stderr = self._compiles(rel, self.dir)
        if ok:
            return True
        original_ok, _, original_stderr = self._compiles(rel, self.root)
        if original_ok or is_cxx_source(rel):
            return False
        return not set(error_lines(self.dir, rel, stderr)) - set(error_lines(self.root, rel, original_stderr))

    def api_rewrite_alone(self, rel: str, error: str, changed: dict[str, str]) -> bool:
        """Stages the original text with the API rewrite only; says whether that compiles (then its
        regions are hybrid: generated-code-does-not-compile, error)."""
        staged = self.dir / rel
        _write(staged, self.tree.text(rel))
        text = self._rewrite([staged]).get(staged)
        if text is None:
            return False
        _write(staged, text)
        if not compiles(self.dir, rel, self._staged_flags(rel))[0]:
            return False
        changed[rel] = text
        for region in self.outcome.regions:
            if region.file == rel and region.extracted:
                region.leave_hybrid(Reason.GENERATED_CODE_DOES_NOT_COMPILE, error)
        self.progress(f"warning: {rel}: extracted code does not compile ({error}); regions left hybrid")
        return True
