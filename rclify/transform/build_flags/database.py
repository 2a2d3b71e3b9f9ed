"""Step 1 of knowing the build (build_flags/__init__.py): a compile database, clang's JSON
Compilation Database (compile_commands.json), read into BuildFlags: each listed file's own flags,
the flags the files of each directory share, and those every file has; analysis_flags keeps of a
compiler command line what the preprocessor and parser see.  The build scripts' databases
(build_scripts.py) are read here too.
"""

import json
import os
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from rclify.errors import UsageError

DATABASE = "compile_commands.json"
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


def from_database(root: Path, database_dir: Path | None) -> BuildFlags | None:
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
