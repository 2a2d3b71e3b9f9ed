"""Steps 2-4 of knowing the build (build_flags/__init__.py): the tree's own build scripts (CMake,
Meson, ./configure, make under bear), run in scratch directories or scratch copies of the tree,
and the compile database they give, mapped back onto the tree.  The tree itself is not touched,
but a script may do anything: a dry run without --configure runs none of them.
"""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable

from rclify import scratch_copy
from rclify.transform.build_flags import dry_run, guess
from rclify.transform.build_flags.database import DATABASE, BuildFlags, read_database

CONFIGURE_TIMEOUT = 600  # seconds: configure scripts of large trees take minutes on 2 cores


# -- 2. CMake, Meson: a scratch build for the generator's database -------------------------------

def from_cmake(root: Path, progress: Callable[[str], None]) -> BuildFlags | None:
    if not (root / "CMakeLists.txt").is_file():
        return None
    return _generated_database(root, "CMake", "configuring with CMake", "cmake failed", progress, lambda build: [
        "cmake", "-S", str(root), "-B", str(build), "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"])


def from_meson(root: Path, progress: Callable[[str], None]) -> BuildFlags | None:
    if not (root / "meson.build").is_file():
        return None
    return _generated_database(root, "Meson", "setting up with Meson", "meson setup failed", progress,
                               lambda build: ["meson", "setup", str(build), str(root)])


def _generated_database(root: Path, tool: str, doing: str, failed: str, progress: Callable[[str], None],
                        command: Callable[[Path], list[str]]) -> BuildFlags | None:
    """The build generator run in a scratch directory for its compile_commands.json (None, said
    why, when the tool is missing or fails: the next way is tried)."""
    if shutil.which(command(Path())[0]) is None:
        return None
    build = Path(tempfile.mkdtemp(prefix=f"rclify-{tool.lower()}-"))
    progress(f"build flags: no {DATABASE}; {doing} in a scratch directory ({build})")
    proc = subprocess.run(command(build), capture_output=True, text=True, timeout=CONFIGURE_TIMEOUT)
    if proc.returncode != 0 or not (build / DATABASE).is_file():
        shutil.rmtree(build, ignore_errors=True)
        progress(f"warning: {failed} ({_last_line(proc.stderr or proc.stdout)}); trying the next way")
        return None
    flags = read_database(build / DATABASE, root, f"{tool}'s {DATABASE} (scratch build)")
    flags.scratch.append(build)
    return flags


# -- 3. autotools ------------------------------------------------------------------------------------

def _config_headers(root: Path) -> list[str]:
    """The headers configure generates (AC_CONFIG_HEADERS), relative to the root."""
    script = root / "configure.ac" if (root / "configure.ac").is_file() else root / "configure.in"
    try:
        text = script.read_text(errors="replace")
    except OSError:
        return []
    names = []
    for m in re.finditer(r"A[CM]_CONFIG_HEADERS?\(\s*\[?([^\]\),]+)", text):
        names += [name.split(":")[0] for name in m.group(1).split()]
    return names


def from_configure(root: Path, progress: Callable[[str], None]) -> BuildFlags | None:
    headers = _config_headers(root)
    if not (root / "configure").is_file() or not headers or all((root / h).exists() for h in headers):
        return _configured(root, headers) if headers and all((root / h).exists() for h in headers) else None
    scratch = Path(tempfile.mkdtemp(prefix="rclify-configure-"))
    copy = scratch / root.name
    progress(f"build flags: the tree is not configured (no {', '.join(headers)}): running ./configure "
             f"in a scratch copy ({copy}); the tree itself is not touched")
    scratch_copy.copy_tree(root, copy, shutil.ignore_patterns(".git", ".rclify"))  # FIFOs, unreadable files left out
    proc = subprocess.run(["sh", "./configure"], cwd=copy, capture_output=True, text=True,
                          timeout=CONFIGURE_TIMEOUT)
    if proc.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        progress(f"warning: ./configure failed ({_last_line(proc.stderr or proc.stdout)}); guessing the flags")
        return None
    if any((copy / name).is_file() for name in MAKEFILES):
        # the build configure wrote: its own flags (apr's -I include/arch/unix, -D_GNU_SOURCE),
        # which no guess finds, and the headers it generates
        built = _make_database(root, scratch, copy, copy, progress)
        if built is not None:
            built.source += " after ./configure"
            return built
    flags = _configured(root, headers, copy)
    flags.source += " (configured in a scratch copy)"
    flags.scratch.append(scratch)
    return flags


def _configured(root: Path, headers: list[str], generated_in: Path | None = None) -> BuildFlags:
    guessed = guess.guessed(root)
    if generated_in is None:
        dirs = sorted({str((root / h).parent) for h in headers})
        return BuildFlags(f"autotools ({', '.join(headers)})",
                          ["-DHAVE_CONFIG_H", *[f"-I{d}" for d in dirs], *guessed.default])
    # the scratch copy is a whole copy of the tree: searched after the tree's own directories
    # (-idirafter), it gives the headers configure generated and nothing else; searched first, every
    # header of the tree resolved into the copy, and the analysis saw none of the tree's
    dirs = sorted({str((generated_in / h).parent) for h in headers} | _generated_header_dirs(root, generated_in))
    return BuildFlags(f"autotools ({', '.join(headers)})",
                      ["-DHAVE_CONFIG_H", *guessed.default, *[x for d in dirs for x in ("-idirafter", d)]])


def _generated_header_dirs(root: Path, copy: Path) -> set[str]:
    """The scratch copy's directories holding headers the tree lacks: those configure wrote besides
    its config headers (apr's include/apr.h from apr.h.in, AC_CONFIG_FILES)."""
    out = set()
    for directory, dirs, files in os.walk(copy):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        here = Path(directory)
        if any(name.endswith(".h") and not (root / (here / name).relative_to(copy)).exists() for name in files):
            out.add(str(here))
    return out


# -- 4. a plain Makefile, built under bear -----------------------------------------------------------

MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
BUILD_TIMEOUT = 900  # seconds for the tree's own build in the scratch copy


def _make_directory(root: Path) -> Path | None:
    """Where the tree's make runs: its root, or the one folder under it with a Makefile when the
    root has none (squashfs-tools' package keeps its sources and Makefile in squashfs-tools/)."""
    if any((root / name).is_file() for name in MAKEFILES):
        return root
    found = [d for d in sorted(root.iterdir()) if d.is_dir() and not d.name.startswith(".")
             and any((d / name).is_file() for name in MAKEFILES)]
    return found[0] if len(found) == 1 else None


def from_make(root: Path, progress: Callable[[str], None]) -> BuildFlags | None:
    where = _make_directory(root)
    if where is None:
        return None
    scratch = Path(tempfile.mkdtemp(prefix="rclify-make-"))
    copy = scratch / root.name
    scratch_copy.copy_tree(root, copy, shutil.ignore_patterns(".git", ".rclify"))  # FIFOs, unreadable files left out
    flags = _make_database(root, scratch, copy, copy / where.relative_to(root), progress)
    if flags is None:
        shutil.rmtree(scratch, ignore_errors=True)
    return flags


def _make_database(root: Path, scratch: Path, copy: Path, where: Path,
                   progress: Callable[[str], None]) -> BuildFlags | None:
    """The compile database of the tree's make in where (inside copy, a scratch copy of root):
    from its dry run (`make -n`, dry_run.py) where that prints the compiles and the files that lock
    include no header only the build makes; else from the whole build under bear."""
    inside = f" in {where.relative_to(copy)}/" if where != copy else ""
    progress(f"build flags: the tree's `make -n`{inside} (a dry run: nothing is built) in a scratch copy ({copy})")
    entries, why = dry_run.run(where)
    missing = dry_run.needs_build(entries) if entries else []
    if entries and not missing:
        return _database_of(root, scratch, copy, entries, f"make -n ({len(entries)} compiles of a dry run: "
                                                          "nothing built)")
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        why = f"the files that lock include headers only the build makes ({shown})"
    if shutil.which("bear") is None:
        progress(f"warning: {why}; bear is not installed (apt-get install bear) to record the build, "
                 "so the flags are guessed")
        return None
    if not missing:
        progress(f"build flags: {why}: the whole build instead")
        return _make_under_bear(root, scratch, copy, where, progress)
    # the build runs until those headers exist (redis: jemalloc's configure, not its compiles and
    # the program's), and the dry run's compiles then serve; a build that ends first gives its own
    progress(f"build flags: {why}: the build runs until they exist")
    started, answers = time.monotonic(), []

    def made() -> bool:  # twice in a row: a header being written when first found is complete the next time
        answers.append(not dry_run.needs_build(entries))
        return answers[-2:] == [True, True]

    built = _make_under_bear(root, scratch, copy, where, progress, until=made)
    if built is not _STOPPED:
        return built
    return _database_of(root, scratch, copy, entries, f"make -n ({len(entries)} compiles of a dry run), after "
                                                      f"{time.monotonic() - started:.0f}s of the build made the "
                                                      f"headers it needs ({shown})")


_STOPPED = object()  # _make_under_bear's result when its until() came true before the build ended
_WATCH_EVERY = 3.0  # seconds between two asks of until()


def _make_under_bear(root: Path, scratch: Path, copy: Path, where: Path,
                     progress: Callable[[str], None], until: Callable[[], bool] | None = None):
    """The compile database of the tree's own make run in where (inside copy, a scratch copy of
    root under scratch) under bear, mapped back onto the tree; None when make recorded nothing
    (scratch is then the caller's to remove); _STOPPED when until (asked every few seconds) came
    true first: the build is stopped there."""
    inside = f" in {where.relative_to(copy)}/" if where != copy else ""
    progress(f"build flags: running the tree's own `make`{inside} under bear in a scratch copy "
             f"({copy}); the tree itself is not touched")
    recorded = scratch / DATABASE
    jobs = str(max(1, len(os.sched_getaffinity(0))))
    # -k: a build that fails late has compiled most files already; -B the second time: a tree
    # already built (its objects copied too) has nothing to compile, and bear nothing to record
    for always in ([], ["-B"]):
        rc, output = _run_until(["bear", "--output", str(recorded), "--", "make", "-k", *always, "-j", jobs],
                                where, scratch / "make.log", until)
        if rc is _STOPPED:
            return _STOPPED
        failed = rc != 0
        entries = _entries(recorded)
        if entries or rc is None:
            break
        progress("build flags: make compiled nothing (the tree is built already?): again with make -B")
    if not entries:
        why = "timed out" if rc is None else _last_line(output)
        progress(f"warning: make under bear recorded no compilation ({why}); guessing the flags")
        return None
    if failed:
        progress(f"warning: make in the scratch copy failed part way; using the {len(entries)} compilations it recorded")
    return _database_of(root, scratch, copy, entries, f"make under bear ({DATABASE} of a scratch build)")


def _run_until(command: list[str], where: Path, log: Path, until: Callable[[], bool] | None):
    """command run in where, its output in log: (exit status, output); (None, output) past
    BUILD_TIMEOUT; (_STOPPED, output) when until() came true first.  Stopped or timed out, its
    whole process group is ended (make's children, bear's)."""
    started = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, cwd=where, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            while True:
                try:
                    rc = proc.wait(timeout=_WATCH_EVERY if until is not None else BUILD_TIMEOUT)
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() - started > BUILD_TIMEOUT:
                        rc = None
                        break
                    if until is not None and until():
                        rc = _STOPPED
                        break
        finally:
            if proc.poll() is None:
                _end_group(proc)
    return rc, log.read_text(errors="replace")


def _end_group(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=5)
            break
        except subprocess.TimeoutExpired:
            continue
    proc.wait()


def _database_of(root: Path, scratch: Path, copy: Path, entries: list[dict], source: str) -> BuildFlags:
    """BuildFlags of compile database entries recorded in copy, mapped onto the tree."""
    mapped = scratch / "mapped.json"
    generated = sorted(_generated_header_dirs(root, copy))
    mapped.write_text(json.dumps([_mapped(entry, copy, root, generated) for entry in entries]))
    flags = read_database(mapped, root, source)
    flags.scratch.append(scratch)  # generated headers the flags name stay there
    return flags


def _entries(path: Path) -> list[dict]:
    try:
        entries = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return []
    return [e for e in entries if isinstance(e, dict) and "file" in e]


def _mapped(entry: dict, copy: Path, root: Path, generated: list[str] = ()) -> dict:
    """A database entry of the scratch copy, in the tree's terms: its directory, file and every
    path argument that exists in the tree too; generated: the copy's directories holding headers
    the build wrote (config.h, apr.h), searched after every other (-idirafter), so a header the
    tree has resolves in the tree and one only the build wrote in the copy.  An include directory
    moved into the tree is searched in the copy too, last: `<jemalloc/jemalloc.h>` through redis's
    `-I../deps/jemalloc/include`, whose jemalloc/jemalloc.h jemalloc's configure wrote in the copy."""
    also = []  # the copy's include directories whose words were moved into the tree

    def tree_path(word: str) -> str:
        if str(copy) not in word:
            return word
        moved = word.replace(str(copy), str(root))
        for prefix in (*_PATH_OPTIONS, ""):
            if moved.startswith(prefix) and Path(moved[len(prefix):]).exists():
                if prefix in ("-I", "-isystem", "-iquote", "") and Path(word[len(prefix):]).is_dir():  # "": `-I DIR`
                    also.append(word[len(prefix):])
                return moved
        return word
    out = dict(entry)
    directory = Path(entry.get("directory", "") or copy)
    out["directory"] = str(directory).replace(str(copy), str(root))
    out["file"] = entry["file"].replace(str(copy), str(root))
    if "arguments" in entry:
        words = [tree_path(w) for w in _absolute_paths(entry["arguments"], directory)]
    else:
        words = [tree_path(w) for w in _absolute_paths(shlex.split(entry.get("command", "")), directory)]
    words += [x for d in [*generated, *dict.fromkeys(also)] for x in ("-idirafter", d)]
    if "arguments" in entry:
        out["arguments"] = words
    elif "command" in entry:
        out["command"] = shlex.join(words)
    return out


_PATH_OPTIONS = ("-I", "-include", "-isystem", "-iquote", "-idirafter", "-imacros")


def _absolute_paths(words: list[str], directory: Path) -> list[str]:
    """words with the relative paths of its path options made absolute in directory: fio's
    `-include config-host.h`, generated by its build, is found in the scratch copy, where read
    against the tree's directory it named a missing file (no file compiled in the compile check,
    which then had nothing to compare)."""
    out, i = [], 0
    while i < len(words):
        word = words[i]
        option = next((o for o in _PATH_OPTIONS if word.startswith(o)), None)
        if option is None:
            out.append(word)
        elif word == option and i + 1 < len(words):
            value = words[i + 1]
            out += [word, value if os.path.isabs(value) else str(directory / value)]
            i += 1
        elif word != option:
            value = word[len(option):]
            out.append(word if os.path.isabs(value) else option + str(directory / value))
        else:
            out.append(word)
        i += 1
    return out


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:160] if lines else "no output"
