"""Building a corpus program, original or transformed: the one build command both corpus tests use."""

import subprocess
from pathlib import Path

from rclify.ctext.languages import CXX_SOURCES


def build(tree: Path, cflags: list[str], libs: list[str]) -> subprocess.CompletedProcess:
    """cc -O1 -g -pthread -Wall *.c -o prog; with C++ sources, the C files are compiled with cc,
    the C++ ones with c++, and c++ links them."""
    flags = ["-O1", "-g", "-pthread", "-Wall", *cflags]
    c_files = sorted(p.name for p in tree.glob("*.c"))
    cxx_files = sorted(p.name for p in tree.iterdir() if p.suffix in CXX_SOURCES)
    if not cxx_files:
        return subprocess.run(["cc", *flags, *c_files, "-o", "prog", *libs],
                              cwd=tree, capture_output=True, text=True, timeout=120)
    for compiler, files in (("cc", c_files), ("c++", cxx_files)):
        for name in files:
            proc = subprocess.run([compiler, *flags, "-c", name, "-o", f"{name}.o"],
                                  cwd=tree, capture_output=True, text=True, timeout=120)
            if proc.returncode != 0:
                return proc
    objects = [f"{name}.o" for name in c_files + cxx_files]
    return subprocess.run(["c++", "-pthread", *objects, "-o", "prog", *libs],
                          cwd=tree, capture_output=True, text=True, timeout=120)


def run_expected(tree: Path, expected: Path, **env: str) -> subprocess.CompletedProcess:
    """Runs the tree's prog with env added; asserts it exits 0 and prints what expected holds."""
    import os

    proc = subprocess.run([str(tree / "prog")], cwd=tree, capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, **env))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == expected.read_text()
    return proc
