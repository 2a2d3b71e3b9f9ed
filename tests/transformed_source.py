"""Transform one C source in a temporary tree and read the report: the fixture of the tests that
put many small cases in one file (test_windows, test_variadic_reads, test_macro_sections)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def transform_source(tree: Path, name: str, source: str, *extra: str) -> dict[str, list[dict]]:
    """Writes source as tree/name, runs `rclify transform` on tree (this checkout's) and returns
    the report's regions by function."""
    if shutil.which("spatch") is None:
        pytest.fail("spatch (coccinelle) is not installed: run scripts/setup.sh")
    tree.mkdir(parents=True, exist_ok=True)
    (tree / name).write_text(source)
    out = tree.parent / f"{tree.name}-report.json"
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "--report", str(out), "-q",
                           "-j", "1", *extra], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    regions: dict[str, list[dict]] = {}
    for r in json.loads(out.read_text())["regions"]:
        regions.setdefault(r["function"], []).append(r)
    return regions


def compile_errors(source: Path, *defines: str) -> str:
    """gcc's errors for a transformed file against the runtime's headers ("" when it compiles
    with -Wall -Wextra -Werror)."""
    from rclify import runtime_build
    proc = subprocess.run(["gcc", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", *defines, *runtime_build.cflags(),
                           f"-I{source.parent}", str(source)], capture_output=True, text=True, timeout=60)
    return proc.stderr if proc.returncode else ""
