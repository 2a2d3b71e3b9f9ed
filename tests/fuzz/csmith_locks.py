"""Csmith programs with lock regions inserted around random statement ranges.

Csmith (Debian `csmith`) writes deterministic single-threaded programs that print a checksum of all
their globals, full of pointers to locals, structs, unions, bit-fields, `volatile` and `goto`.
regions.py wraps random ranges of whole statements of one block in `pthread_mutex_lock(&fz_mN)` ..
`pthread_mutex_unlock(&fz_mN)`, each range its own mutex (Csmith's call graph has no recursion, so
no region can take its own lock twice), every jump leaving a range preceded by its unlocks.
"""

from __future__ import annotations

import random
import subprocess
import tempfile
from pathlib import Path

from rclify.ctext.cparse import _gcc_include_dir
from tests.fuzz import regions

CSMITH_INCLUDE = "/usr/include/csmith"
CSMITH_OPTIONS = ["--max-funcs", "5", "--max-block-size", "4", "--max-block-depth", "3"]
# the lock declarations go after csmith.h's include, with abort()'s header for the checked locks
PRELUDE = regions.Prelude("\n#include <pthread.h>\n#include <stdlib.h>\n", after=b'#include "csmith.h"')


def csmith_source(seed: int) -> str:
    # in a directory of its own: csmith writes platform.info into its working directory
    with tempfile.TemporaryDirectory(prefix="rclify-csmith-") as scratch:
        return subprocess.run(["csmith", "--seed", str(seed), *CSMITH_OPTIONS], capture_output=True,
                              text=True, check=True, timeout=60, cwd=scratch).stdout


def insert_locks(path: Path, rng: random.Random, density: float = 0.35, max_regions: int = 12) -> int:
    """Rewrites path (a Csmith program) with lock regions; returns how many."""
    args = ["-std=gnu11", "-isystem", _gcc_include_dir(), f"-I{CSMITH_INCLUDE}", "-w"]
    return regions.insert_locks(path, rng, args, PRELUDE, density, max_regions)
