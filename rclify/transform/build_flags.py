"""Know the build: the flags each file is compiled with, so the analysis sees what the compiler sees.

In order, the first that applies:
  1. a compile database: compile_commands.json given with `-p DIR`, or found at the tree's root or
     in build/ (clang-tidy's convention);
  2. CMake: a tree with CMakeLists.txt is configured in a scratch build directory with
     CMAKE_EXPORT_COMPILE_COMMANDS, and that database is read; Meson likewise: a tree with
     meson.build is set up (`meson setup`) in a scratch build directory, which always has one;
  2b. a CMake or Meson database that compiles none of the files using the pthread lock API, in a
     tree that has configure or a Makefile too, is another platform's build (apr): the next way;
  3. autotools: a tree with a configure script but no configuration is configured in a scratch
     copy; its generated headers (config.h, MHD_config.h, ...) are found there, and the Makefile
     configure wrote runs under bear there (as 4) for the build's own flags;
  4. a plain Makefile: the tree's own build (`make`) runs under bear in a scratch copy, and the
     database bear records is read (zstd defines ZSTD_MULTITHREAD there, which no guess finds);
  5. a guess: the tree's root and every directory holding a header that some file includes.
Scratch directories live until the transform ends (the compile check needs them too).  Flags the
user gives after `--` come last, on top of any of these.  2-4 run the tree's own build scripts
(in scratch copies, but a script may do anything): find(run_build=False), a dry run without
--configure, skips them and says so.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rclify import pthread_api
from rclify.ctext.preprocessor import quoted_includes
from rclify.errors import UsageError

DATABASE = "compile_commands.json"
CONFIGURE_TIMEOUT = 600  # seconds: configure scripts of large trees take minutes on 2 cores
_KEPT_WITH_VALUE = ("-I", "-D", "-U", "-include", "-isystem", "-iquote", "-idirafter")


@dataclass
class BuildFlags:
    source: str  # how they were found, for the progress line and the report
    default: list[str]  # for a file the database does not list, in no directory it lists files of
    per_file: dict[Path, list[str]] = field(default_factory=dict)
    scratch: list[Path] = field(default_factory=list)  # removed by cleanup()
    # a compile database: {directory: the flags every file it lists there and below shares}
    by_directory: dict[Path, list[str]] = field(default_factory=dict)

    def for_file(self, path: Path) -> list[str]:
        """A listed file's own flags; for another file (a header; a C file the build does not
        compile: xz's crc32_small.c beside the crc32_fast.c it builds, microlzma_decoder.c where
        CMake leaves it out) those its nearest directory's listed files share: the include
        paths of the library it belongs to, which the flags common to the whole build (a
        library's and its programs') lack."""
        path = Path(path).resolve()
        if path in self.per_file:
            return self.per_file[path]
        for directory in path.parents:
            if directory in self.by_directory:
                return self.by_directory[directory]
        return self.default

    def built(self, path: Path) -> bool:
        """Does the build compile this C file?  Known only from a compile database."""
        return not self.per_file or Path(path).resolve() in self.per_file

    def cleanup(self) -> None:
        for directory in self.scratch:
            shutil.rmtree(directory, ignore_errors=True)


def find(root: Path, database_dir: Path | None, extra: list[str], progress: Callable[[str], None],
         run_build: bool = True) -> BuildFlags:
    root = root.resolve()
    flags = _from_database(root, database_dir)
    if flags is None and run_build:
        flags = _covering(_from_cmake(root, progress), root, progress) \
            or _covering(_from_meson(root, progress), root, progress) \
            or _from_configure(root, progress) or _from_make(root, progress)
    elif flags is None and any((root / name).is_file() for name in ("CMakeLists.txt", "meson.build", "configure",
                                                                     "Makefile", "makefile", "GNUmakefile")):
        progress("build flags: the tree's build scripts are not run for a dry run (give --configure to run "
                 "them in a scratch copy, or -p DIR); guessing")
    flags = flags or _guessed(root)
    flags.default = [*flags.default, *extra]
    flags.per_file = {path: [*f, *extra] for path, f in flags.per_file.items()}
    flags.by_directory = {path: [*f, *extra] for path, f in flags.by_directory.items()}
    progress(f"build flags: {flags.source}")
    return flags


def _covering(flags: BuildFlags | None, root: Path, progress: Callable[[str], None]) -> BuildFlags | None:
    """flags, unless they come from a build script that compiles none of the tree's C files using
    the pthread mutex or condvar API while another build script (configure, a Makefile) is there:
    that script is another platform's (apr's CMakeLists.txt builds the Windows sources), and the
    analysis would read the files that matter with flags guessed for them."""
    if flags is None or not any((root / n).is_file() for n in ("configure", "Makefile", "makefile", "GNUmakefile")):
        return flags
    users = [p for p in root.rglob("*.c") if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
             and pthread_api.CALL.search(p.read_text(errors="replace"))]
    if not users or any(p.resolve() in flags.per_file for p in users):
        return flags
    progress(f"build flags: {flags.source} compiles none of the {len(users)} C files that use pthread mutexes or "
             f"condvars (another platform's build?); trying the tree's other build scripts")
    flags.cleanup()
    return None


# -- 1. a compile database -------------------------------------------------------------------------

def _from_database(root: Path, database_dir: Path | None) -> BuildFlags | None:
    if database_dir is not None:
        path = Path(database_dir) / DATABASE if Path(database_dir).is_dir() else Path(database_dir)
        if not path.is_file():
            raise UsageError(f"-p {database_dir}: no {DATABASE} there")
        return read_database(path, root, f"{path}")
    for candidate in (root / DATABASE, root / "build" / DATABASE):
        if candidate.is_file():
            return read_database(candidate, root, f"{candidate.relative_to(root)}")
    return None


def read_database(path: Path, root: Path, name: str) -> BuildFlags:
    try:
        entries = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UsageError(f"{path}: not a readable compile database ({err})") from None
    _check_entries(path, entries)
    per_file: dict[Path, list[str]] = {}
    missing, several = [], set()
    for entry in entries:
        directory = (path.parent / entry.get("directory", ".")).resolve()  # relative: from the database
        file = (directory / entry["file"]).resolve()
        if not file.exists():
            missing.append(str(entry["file"]))
            continue
        words = entry.get("arguments") or shlex.split(entry.get("command", ""))
        flags = analysis_flags(words[1:], directory)
        # libtool compiles each file twice, with -DPIC and without: one configuration
        if file in per_file and [f for f in flags if f != "-DPIC"] != [f for f in per_file[file] if f != "-DPIC"]:
            several.add(file)
            if _with_threads(per_file[file]) and not _with_threads(flags):
                continue  # built static without threads and shared with them: the threaded one
        per_file[file] = flags
    if missing and not per_file:
        raise UsageError(f"{path} names only files that do not exist (first: {missing[0]}): "
                         "regenerate it, or remove it to let rclify find the flags")
    default = [f"-I{root}", *_common(per_file.values())]
    note = (f"; {len(several)} compiled in several configurations: each analysed in one with threads, else its last"
            if several else "")
    return BuildFlags(f"{name} ({len(per_file)} files{note})", default, per_file,
                      by_directory=_by_directory(per_file, default))


_THREAD_MACRO = re.compile(r"-D\w*THREAD\w*(=(?!0\b)\S*)?$")


def _with_threads(flags: list[str]) -> bool:
    """Do these analysis flags build with threads: a -D naming threads, not turning them off
    (-DHAVE_THREADS, -DZSTD_MULTITHREAD; not -DNO_THREADS, -DTHREADS=0)?  (-pthread is no
    analysis flag: analysis_flags keeps what the preprocessor and parser see.)"""
    return any(_THREAD_MACRO.match(f) and not re.match(r"-D\w*(NO|DISABLE)\w*THREAD", f) for f in flags)


def _check_entries(path: Path, entries) -> None:
    """A compile database is a list of objects, each with a "file" and a "command" or "arguments"
    (clang's JSON Compilation Database); anything else is one line naming the first bad entry."""
    if not isinstance(entries, list):
        raise UsageError(f"{path}: not a compile database (a JSON list of entries expected, found a "
                         f"{type(entries).__name__})")
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise UsageError(f"{path}: entry {n} is not an object ({json.dumps(entry)[:40]})")
        if not isinstance(entry.get("file"), str) or not entry["file"]:
            raise UsageError(f"{path}: entry {n} has no \"file\"")
        arguments, command = entry.get("arguments"), entry.get("command")
        if not (isinstance(arguments, list) and arguments and all(isinstance(a, str) for a in arguments)) \
                and not isinstance(command, str):
            raise UsageError(f"{path}: entry {n} ({entry['file']}) has neither \"arguments\" nor \"command\"")
        if not isinstance(entry.get("directory", "."), str):
            raise UsageError(f"{path}: entry {n} ({entry['file']}): \"directory\" is not a string")


def _by_directory(per_file: dict[Path, list[str]], default: list[str]) -> dict[Path, list[str]]:
    """{directory: -I of the root, then the flags common to the listed files in it and below}, for
    each directory holding a listed file and each of its parents up to the common one (where
    they are the default)."""
    under: dict[Path, list[list[str]]] = {}
    for file, flags in per_file.items():
        for directory in file.parents:
            under.setdefault(directory, []).append(flags)
    out = {}
    for directory, lists in under.items():
        common = _common(lists)
        out[directory] = [default[0], *(f for f in common if f != default[0])]
    return out


def analysis_flags(words: list[str], directory: Path) -> list[str]:
    """The flags of a compiler command line that change what the preprocessor and parser see:
    include paths (made absolute), macros, forced includes, the C standard."""
    out, i = [], 0
    while i < len(words):
        word = words[i]
        option = next((o for o in _KEPT_WITH_VALUE if word == o or word.startswith(o)), None)
        if option is not None:
            value = word[len(option):] if word != option else (words[i + 1] if i + 1 < len(words) else "")
            i += 1 if word != option else 2
            if option in ("-I", "-include", "-isystem", "-iquote", "-idirafter"):
                value = str((directory / value).resolve()) if not os.path.isabs(value) else value
            out += [option + value] if option in ("-I", "-D", "-U") else [option, value]
            continue
        if word.startswith("-std="):
            out.append(word)
        i += 1
    return out


def _common(flag_lists) -> list[str]:
    """Flags every database entry has: the default for files it does not list (headers)."""
    lists = list(flag_lists)
    if not lists:
        return []
    return [f for f in lists[0] if all(f in other for other in lists[1:])]


# -- 2. CMake ----------------------------------------------------------------------------------------

def _from_cmake(root: Path, progress: Callable[[str], None]) -> BuildFlags | None:
    if not (root / "CMakeLists.txt").is_file() or shutil.which("cmake") is None:
        return None
    build = Path(tempfile.mkdtemp(prefix="rclify-cmake-"))
    progress(f"build flags: no {DATABASE}; configuring with CMake in a scratch directory ({build})")
    proc = subprocess.run(["cmake", "-S", str(root), "-B", str(build), "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"],
                          capture_output=True, text=True, timeout=CONFIGURE_TIMEOUT)
    if proc.returncode != 0 or not (build / DATABASE).is_file():
        shutil.rmtree(build, ignore_errors=True)
        progress(f"warning: cmake failed ({_last_line(proc.stderr or proc.stdout)}); trying the next way")
        return None
    flags = read_database(build / DATABASE, root, f"CMake's {DATABASE} (scratch build)")
    flags.scratch.append(build)
    return flags


def _from_meson(root: Path, progress: Callable[[str], None]) -> BuildFlags | None:
    if not (root / "meson.build").is_file() or shutil.which("meson") is None:
        return None
    build = Path(tempfile.mkdtemp(prefix="rclify-meson-"))
    progress(f"build flags: no {DATABASE}; setting up with Meson in a scratch directory ({build})")
    proc = subprocess.run(["meson", "setup", str(build), str(root)], capture_output=True, text=True,
                          timeout=CONFIGURE_TIMEOUT)
    if proc.returncode != 0 or not (build / DATABASE).is_file():
        shutil.rmtree(build, ignore_errors=True)
        progress(f"warning: meson setup failed ({_last_line(proc.stderr or proc.stdout)}); trying the next way")
        return None
    flags = read_database(build / DATABASE, root, f"Meson's {DATABASE} (scratch build)")
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


def _from_configure(root: Path, progress: Callable[[str], None]) -> BuildFlags | None:
    headers = _config_headers(root)
    if not (root / "configure").is_file() or not headers or all((root / h).exists() for h in headers):
        return _configured(root, headers) if headers and all((root / h).exists() for h in headers) else None
    scratch = Path(tempfile.mkdtemp(prefix="rclify-configure-"))
    copy = scratch / root.name
    progress(f"build flags: the tree is not configured (no {', '.join(headers)}): running ./configure "
             f"in a scratch copy ({copy}); the tree itself is not touched")
    shutil.copytree(root, copy, symlinks=True, ignore=shutil.ignore_patterns(".git", ".rclify"))
    proc = subprocess.run(["sh", "./configure"], cwd=copy, capture_output=True, text=True,
                          timeout=CONFIGURE_TIMEOUT)
    if proc.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        progress(f"warning: ./configure failed ({_last_line(proc.stderr or proc.stdout)}); guessing the flags")
        return None
    if any((copy / name).is_file() for name in MAKEFILES) and shutil.which("bear") is not None:
        # the build configure wrote: its own flags (apr's -I include/arch/unix, -D_GNU_SOURCE),
        # which no guess finds, and the headers it generates
        built = _make_under_bear(root, scratch, copy, copy, progress)
        if built is not None:
            built.source += " after ./configure"
            return built
    flags = _configured(root, headers, copy)
    flags.source += " (configured in a scratch copy)"
    flags.scratch.append(scratch)
    return flags


def _configured(root: Path, headers: list[str], generated_in: Path | None = None) -> BuildFlags:
    guessed = _guessed(root)
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


def _from_make(root: Path, progress: Callable[[str], None]) -> BuildFlags | None:
    where = _make_directory(root)
    if where is None:
        return None
    if shutil.which("bear") is None:
        progress("warning: a Makefile and no compile database; bear is not installed (apt-get install bear), "
                 "so the flags are guessed")
        return None
    scratch = Path(tempfile.mkdtemp(prefix="rclify-make-"))
    copy = scratch / root.name
    shutil.copytree(root, copy, symlinks=True, ignore=shutil.ignore_patterns(".git", ".rclify"))
    flags = _make_under_bear(root, scratch, copy, copy / where.relative_to(root), progress)
    if flags is None:
        shutil.rmtree(scratch, ignore_errors=True)
    return flags


def _make_under_bear(root: Path, scratch: Path, copy: Path, where: Path,
                     progress: Callable[[str], None]) -> BuildFlags | None:
    """The compile database of the tree's own make run in where (inside copy, a scratch copy of
    root under scratch) under bear, mapped back onto the tree; None when make recorded nothing
    (scratch is then the caller's to remove)."""
    inside = f" in {where.relative_to(copy)}/" if where != copy else ""
    progress(f"build flags: running the tree's own `make`{inside} under bear in a scratch copy "
             f"({copy}); the tree itself is not touched")
    recorded = scratch / DATABASE
    jobs = str(max(1, len(os.sched_getaffinity(0))))
    # -k: a build that fails late has compiled most files already; -B the second time: a tree
    # already built (its objects copied too) has nothing to compile, and bear nothing to record
    for always in ([], ["-B"]):
        try:
            proc = subprocess.run(["bear", "--output", str(recorded), "--", "make", "-k", *always, "-j", jobs],
                                  cwd=where, capture_output=True, text=True,
                                  errors="replace", timeout=BUILD_TIMEOUT)
            failed = proc.returncode != 0
        except subprocess.TimeoutExpired:
            failed, proc = True, None
        entries = _entries(recorded)
        if entries or proc is None:
            break
        progress("build flags: make compiled nothing (the tree is built already?): again with make -B")
    if not entries:
        why = "timed out" if proc is None else _last_line(proc.stderr or proc.stdout)
        progress(f"warning: make under bear recorded no compilation ({why}); guessing the flags")
        return None
    if failed:
        progress(f"warning: make in the scratch copy failed part way; using the {len(entries)} compilations it recorded")
    mapped = scratch / "mapped.json"
    generated = sorted(_generated_header_dirs(root, copy))
    mapped.write_text(json.dumps([_mapped(entry, copy, root, generated) for entry in entries]))
    flags = read_database(mapped, root, f"make under bear ({DATABASE} of a scratch build)")
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
    tree has resolves in the tree and one only the build wrote in the copy."""
    def tree_path(word: str) -> str:
        if str(copy) not in word:
            return word
        moved = word.replace(str(copy), str(root))
        for prefix in (*_PATH_OPTIONS, ""):
            if moved.startswith(prefix) and Path(moved[len(prefix):]).exists():
                return moved
        return word
    out = dict(entry)
    directory = Path(entry.get("directory", "") or copy)
    out["directory"] = str(directory).replace(str(copy), str(root))
    out["file"] = entry["file"].replace(str(copy), str(root))
    after = [x for d in generated for x in ("-idirafter", d)]
    if "arguments" in entry:
        out["arguments"] = [tree_path(w) for w in _absolute_paths(entry["arguments"], directory)] + after
    elif "command" in entry:
        out["command"] = shlex.join([tree_path(w) for w in _absolute_paths(shlex.split(entry["command"]), directory)]
                                    + after)
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


# -- 5. a guess --------------------------------------------------------------------------------------

def _guessed(root: Path) -> BuildFlags:
    """-I for the root and for every directory holding a header that some file includes by a
    name not found beside the including file."""
    headers: dict[str, set[Path]] = {}
    sources = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            path = Path(directory) / name
            if name.endswith((".h", ".hh", ".hpp")):
                headers.setdefault(name, set()).add(path)
            if name.endswith((".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp")):
                sources.append(path)
    dirs: set[Path] = set()
    for source in sources:
        if not source.is_file():  # a FIFO would block the read (run.source_files lists such files)
            continue
        try:
            text = source.read_text(errors="replace")
        except OSError:
            continue
        for name in quoted_includes(text):
            if (source.parent / name).exists():
                continue
            for header in headers.get(Path(name).name, ()):
                base = header.parents[len(Path(name).parts) - 1]
                if str(header).endswith(name):
                    dirs.add(base)
    dirs.discard(root)
    return BuildFlags(f"guessed ({len(dirs)} include directories)",
                      [f"-I{root}", *[f"-I{d}" for d in sorted(dirs)]])


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:160] if lines else "no output"
