"""GCC's `gcc.c-torture/execute` programs with lock regions inserted: a source the fuzzer's authors
did not write.

The suite's programs are written to cover the language's corners (compound literals, attributes,
statement expressions, bit-fields, VLAs, `__builtin_*`...), and check themselves: each `abort()`s
on a wrong result and exits 0 otherwise.  They come from Debian's `gcc-12-source` package (a
tarball under /usr/src/gcc-12/), installed with apt when missing; only the suite's top folder is
extracted, once, into the user cache (never committed).

Which programs qualify (`candidates`): the top folder's `*.c` (not `builtins/` or `ieee/`, which
need their harness), without DejaGnu directives that ask for other options or target features
(`dg-options`, `dg-additional-options`, `dg-add-options`, `dg-require-*`, `dg-skip-if`,
`dg-xfail-*`), without a `#include "..."` of the suite's own files, with a `main`.  Each skipped
program counts under its first reason (`skipped`).  What only running shows (the program does not
build with the fuzzer's `cc -O0 -pthread`, aborts, parses with libclang errors, gets no region,
or its variant with regions inserted builds, exits or prints otherwise than the program) is the
campaign's discard, counted by cause.

A variant (`make_program`): one program drawn from the candidates, copied as it is into the
campaign's pristine folder (the reference) and with lock regions inserted (regions.py, at a
higher density than Csmith's: the torture programs' blocks are short) into the tree to transform.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import platformdirs

from rclify.ctext.cparse import _gcc_include_dir
from tests.fuzz import regions

PACKAGE = "gcc-12-source"
TARBALLS = Path("/usr/src/gcc-12")  # gcc-<version>-dfsg.tar.xz
SUITE = "gcc/testsuite/gcc.c-torture/execute"
CACHE = Path(platformdirs.user_cache_dir("rclify")) / "torture"
DENSITY = 0.8  # share of a function's blocks given a region (Csmith's: 0.35)
# the lock declarations at the top: abort() declared as the suite's programs do (stdlib.h would
# clash with some of their own declarations of malloc and friends)
PRELUDE = regions.Prelude("#include <pthread.h>\nextern void abort (void);\n")
# what gcc accepts from old C and clang 16 calls errors: implicit int, undeclared functions
PARSE_ARGS = ["-std=gnu17", "-isystem", _gcc_include_dir(), "-w", "-Wno-error=implicit-int",
              "-Wno-error=implicit-function-declaration", "-Wno-error=int-conversion"]

# A directive in the program's comments that makes it someone else's program, with its reason.
DIRECTIVES = (
    (re.compile(r"\{\s*dg-(?:additional-)?options\b|\{\s*dg-add-options\b"), "dg-options"),
    (re.compile(r"\{\s*dg-require-[a-z-]+"), "dg-require"),
    (re.compile(r"\{\s*dg-skip-if\b"), "dg-skip-if"),
    (re.compile(r"\{\s*dg-xfail-[a-z-]+"), "dg-xfail"),
)
LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s*"', re.M)
MAIN = re.compile(r"\bmain\s*\(")


class SuiteMissing(Exception):
    """The torture suite is not here and cannot be installed (not Debian, not root, no network)."""


@dataclass(frozen=True)
class Suite:
    name: str  # the tarball's release, gcc-12.2.0
    folder: Path  # the extracted execute/ folder


def _tarball() -> Path | None:
    found = sorted(TARBALLS.glob("gcc-*.tar.xz"))
    return found[-1] if found else None


def _install() -> None:
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise SuiteMissing(f"{TARBALLS} has no GCC tarball; install Debian's {PACKAGE} "
                           "(apt-get install gcc-12-source, as root)")
    got = subprocess.run(["apt-get", "install", "-y", "-q", PACKAGE], capture_output=True, text=True,
                         timeout=900, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    if got.returncode != 0 or _tarball() is None:
        raise SuiteMissing(f"apt-get install {PACKAGE} failed: {got.stderr.strip()[-300:]}")


def ensure_suite(cache: Path = CACHE) -> Suite:
    """The suite's execute/ folder, extracted into cache from the installed tarball (installed
    first when missing).  Extracted into a scratch folder then renamed: two campaigns starting at
    once both get a whole one."""
    tarball = _tarball()
    if tarball is None:
        _install()
        tarball = _tarball()
    name = tarball.name.split(".tar")[0].removesuffix("-dfsg")  # the tarball's top folder
    folder = cache / name / "execute"
    if folder.is_dir():
        return Suite(name, folder)
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="extract-", dir=cache) as scratch:
        prefix = f"{name}/{SUITE}/"
        with tarfile.open(tarball) as tar:
            tar.extractall(scratch, members=(m for m in tar if m.name.startswith(prefix)), filter="data")
        if not (Path(scratch) / prefix).is_dir():
            raise SuiteMissing(f"{tarball} has no {prefix}")
        (cache / name).mkdir(exist_ok=True)
        try:
            os.rename(Path(scratch) / prefix, folder)
        except OSError:
            if not folder.is_dir():
                raise
    return Suite(name, folder)


def skip_reason(text: str) -> str:
    """Why a program of the suite does not qualify ("" when it does)."""
    for pattern, reason in DIRECTIVES:
        if pattern.search(text):
            return reason
    if LOCAL_INCLUDE.search(text):
        return "local-include"
    if not MAIN.search(text):
        return "no-main"
    return ""


@lru_cache(maxsize=None)
def survey(folder: Path) -> tuple[tuple[str, ...], dict[str, int]]:
    """The qualifying programs' names (sorted) and the skipped ones' count by reason."""
    kept, skipped = [], {}
    for path in sorted(folder.glob("*.c")):
        reason = skip_reason(path.read_text(errors="replace"))
        if reason:
            skipped[reason] = skipped.get(reason, 0) + 1
        else:
            kept.append(path.name)
    return tuple(kept), skipped


def make_variant(suite: Suite, rng: random.Random, folder: Path, pristine: Path) -> dict:
    """Draws a program, writes it unchanged into pristine/ and with regions into folder/; returns
    its origin (how to make it again) with `regions`, or `discarded` (its cause) when libclang
    cannot parse it or no region fits."""
    names, _ = survey(suite.folder)
    name, seed = rng.choice(names), rng.getrandbits(48)
    origin = {"torture": name, "suite": suite.name, "insert_seed": seed, "density": DENSITY}
    folder.mkdir(parents=True, exist_ok=True)
    pristine.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(suite.folder / name, pristine / name)
    shutil.copyfile(suite.folder / name, folder / name)
    try:
        origin["regions"] = regions.insert_locks(folder / name, random.Random(seed), PARSE_ARGS, PRELUDE,
                                                 density=DENSITY)
    except regions.ParseErrors as err:
        origin["discarded"] = "clang-parse-error"
        origin["parse_error"] = str(err)
        return origin
    if origin["regions"] == 0:
        origin["discarded"] = "no-region"
    return origin
