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
     configure wrote gives the build's own flags there (as 4: its dry run, else under bear);
  4. a plain Makefile: its dry run (`make -n`, dry_run.py) in a scratch copy gives the compiles,
     sub-makes included, building nothing; only when a file that locks includes a header the build
     would make, the tree's own build (`make`) runs under bear in a scratch copy, and the
     database bear records is read (zstd defines ZSTD_MULTITHREAD there, which no guess finds);
  5. a guess: the tree's root and every directory holding a header that some file includes.
Scratch directories live until the transform ends (the compile check needs them too).  Flags the
user gives after `--` come last, on top of any of these.  2-4 run the tree's own build scripts
(in scratch copies, but a script may do anything): find(run_build=False), a dry run without
--configure, skips them and says so.
"""

from pathlib import Path
from typing import Callable

from rclify import pthread_api
from rclify.transform.build_flags import guess
from rclify.transform.build_flags.build_scripts import from_cmake, from_configure, from_make, from_meson
from rclify.transform.build_flags.database import BuildFlags, analysis_flags, from_database, read_database

__all__ = ["BuildFlags", "analysis_flags", "find", "read_database"]


def find(root: Path, database_dir: Path | None, extra: list[str], progress: Callable[[str], None],
         run_build: bool = True) -> BuildFlags:
    root = root.resolve()
    flags = from_database(root, database_dir)
    if flags is None and run_build:
        flags = _covering(from_cmake(root, progress), root, progress) \
            or _covering(from_meson(root, progress), root, progress) \
            or from_configure(root, progress) or from_make(root, progress)
    elif flags is None and any((root / name).is_file() for name in ("CMakeLists.txt", "meson.build", "configure",
                                                                     "Makefile", "makefile", "GNUmakefile")):
        progress("build flags: the tree's build scripts are not run for a dry run (give --configure to run "
                 "them in a scratch copy, or -p DIR); guessing")
    flags = flags or guess.guessed(root)
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
