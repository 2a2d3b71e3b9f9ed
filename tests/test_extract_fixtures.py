"""Before/after fixtures of the extraction: what `rclify transform` writes for each pattern.

Each folder of tests/fixtures/extract/ holds `input.c` (10-40 lines, system headers only, a
one-line `/* Pattern: ... */` comment first) and `expected.c`, the exact text the transform
writes for it. A change in the generated code shows here as a unified diff.

Regenerate after an intended change, then review the diff of the expected files:

    RCLIFY_UPDATE_FIXTURES=1 python3 -m pytest -q tests/test_extract_fixtures.py

That run rewrites every expected.c and still fails (saying so), so it is never taken for a pass.

The generated C holds nothing machine-specific (`#line` directives carry line numbers only,
lock ids are relative to the tree), so it is compared as is; the test checks that the temporary
tree's path does not appear in it.
"""

import difflib
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rclify import runtime_build

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "extract"
NAMES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and not p.name.startswith((".", "__")))
UPDATE = os.environ.get("RCLIFY_UPDATE_FIXTURES") == "1"
GCC_FLAGS = ["-fsyntax-only", "-std=gnu11", "-Wall", "-Wextra", "-Werror"]


def _transform(name: str, root: Path) -> tuple[Path, subprocess.CompletedProcess]:
    tree = root / name
    tree.mkdir()
    shutil.copyfile(FIXTURES / name / "input.c", tree / "input.c")
    # Run this checkout's rclify, not whichever one is installed.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run(
        [sys.executable, "-m", "rclify", "transform", str(tree), "-q", "-j", "1"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )
    return tree, proc


@pytest.fixture(scope="session")
def transformed(tmp_path_factory) -> dict[str, tuple[Path, subprocess.CompletedProcess]]:
    root = tmp_path_factory.mktemp("extract-fixtures")
    names = [n for n in NAMES if (FIXTURES / n / "input.c").is_file()]
    jobs = max(1, min(len(os.sched_getaffinity(0)), 4))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return dict(zip(names, pool.map(lambda n: _transform(n, root), names)))


def _gcc(source: Path, include_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["gcc", *GCC_FLAGS, *runtime_build.cflags(), f"-I{include_dir}", str(source)],
        capture_output=True, text=True, timeout=60,
    )


@pytest.mark.parametrize("name", NAMES)
def test_transform_writes_expected_c(transformed, name):
    assert name in transformed, f"{name}/ has no input.c"
    tree, proc = transformed[name]
    assert proc.returncode == 0, f"transform failed:\n{proc.stdout}\n{proc.stderr}"
    actual = (tree / "input.c").read_text()
    assert str(tree.parent) not in actual, "the generated code names the temporary tree"
    expected_path = FIXTURES / name / "expected.c"
    if UPDATE:
        old = expected_path.read_text() if expected_path.is_file() else None
        expected_path.write_text(actual)
        what = "new" if old is None else "unchanged" if old == actual else "changed"
        pytest.fail(f"RCLIFY_UPDATE_FIXTURES=1: wrote {expected_path.relative_to(REPO)} ({what}); "
                    "review it and run again without the variable")
    assert expected_path.is_file(), f"{name}/expected.c is missing (RCLIFY_UPDATE_FIXTURES=1 writes it)"
    expected = expected_path.read_text()
    if actual != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(keepends=True), actual.splitlines(keepends=True),
            fromfile=f"{name}/expected.c", tofile=f"{name}/input.c (transformed)"))
        pytest.fail(f"the transform's output differs from {name}/expected.c:\n{diff}", pytrace=False)


@pytest.mark.parametrize("name", NAMES)
def test_transformed_file_compiles_against_the_runtime(transformed, name):
    assert name in transformed, f"{name}/ has no input.c"
    tree, proc = transformed[name]
    assert proc.returncode == 0, f"transform failed:\n{proc.stdout}\n{proc.stderr}"
    assert (tree / "lock_config.h").is_file(), "the transform wrote no lock_config.h"
    build = _gcc(tree / "input.c", tree)
    assert build.returncode == 0, f"transformed {name}/input.c does not compile:\n{build.stderr[-3000:]}"


@pytest.mark.parametrize("name", NAMES)
def test_input_is_a_small_self_contained_program(name):
    source = FIXTURES / name / "input.c"
    assert source.is_file(), f"{name}/ has no input.c"
    lines = source.read_text().splitlines()
    assert lines[0].startswith("/* Pattern: ") and lines[0].endswith("*/"), \
        "the first line must be a one-line `/* Pattern: ... */` comment"
    assert 10 <= len(lines) <= 40, f"{len(lines)} lines: a fixture input has 10 to 40"
    includes = [line for line in lines if line.lstrip().startswith("#include")]
    assert all("<" in line for line in includes), f"system headers only: {includes}"
    build = _gcc(source, source.parent)
    assert build.returncode == 0, f"{name}/input.c does not compile:\n{build.stderr[-3000:]}"


def test_every_fixture_folder_has_input_and_expected():
    assert NAMES, f"no fixture folder in {FIXTURES}"
    missing = [f"{name}/{f}" for name in NAMES for f in ("input.c", "expected.c")
               if not (FIXTURES / name / f).is_file()]
    assert not missing, f"fixture files missing: {missing}"
