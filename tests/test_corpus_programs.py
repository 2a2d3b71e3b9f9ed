"""Validate the corpus itself: every program builds with the documented
command and its original (untransformed) run prints exactly expected.txt.

The transformation tests compare original and rewritten runs; they rely on
the guarantees checked here (format, deterministic output, exit status 0).
"""

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rclify.ctext.languages import CXX_SUFFIXES
from rclify.transform.refusals import REASONS  # every reason the report can give
from corpus_build import build

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
RUN_TIMEOUT_S = 10
EXPECT_RE = re.compile(r"^expect: (extract|hybrid (\S+))$")

PROGRAMS = sorted(p.name for p in CORPUS.iterdir() if (p / "expected.txt").is_file())


def _build(name: str, root: Path) -> tuple[Path | None, str]:
    """Copy the program's sources to root/name and build them there (with C++ sources: the C files
    compiled with cc, the C++ ones with c++, linked with c++)."""
    src = CORPUS / name
    dst = root / name
    dst.mkdir()
    for f in src.iterdir():
        if f.suffix in (".c", ".h", *CXX_SUFFIXES):
            shutil.copy(f, dst)
    proc = build(dst, [], [])
    if proc.returncode != 0:
        return None, proc.stderr
    return dst / "prog", proc.stderr


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """Build every corpus program once, in parallel (one job per core)."""
    root = tmp_path_factory.mktemp("corpus-build")
    jobs = max(1, min(len(os.sched_getaffinity(0)), 8))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = pool.map(lambda n: (n, _build(n, root)), PROGRAMS)
        return dict(results)


def test_corpus_is_not_empty():
    assert len(PROGRAMS) >= 30


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_format(name):
    d = CORPUS / name
    assert list(d.glob("*.c")), f"{name}: no .c file"
    assert not (d / "prog").exists(), f"{name}: built binary inside the corpus"
    lines = (d / "pattern.txt").read_text().splitlines()
    assert 1 <= len(lines) <= 3, f"{name}: pattern.txt must have 1-3 lines"
    expects = [m for m in map(EXPECT_RE.match, lines) if m]
    assert len(expects) == 1, f"{name}: pattern.txt needs one 'expect:' line"
    reason = expects[0].group(2)
    if reason is not None:
        assert reason in REASONS, f"{name}: unknown hybrid reason {reason!r}"
    assert (d / "expected.txt").read_text().endswith("\n")


@pytest.mark.parametrize("name", PROGRAMS)
def test_original_output_matches_expected(name, built):
    prog, log = built[name]
    assert prog is not None, f"{name}: build failed:\n{log}"
    proc = subprocess.run(
        [str(prog)], cwd=prog.parent, capture_output=True, text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert proc.returncode == 0, f"{name}: exit {proc.returncode}\n{proc.stderr}"
    assert proc.stdout == (CORPUS / name / "expected.txt").read_text()


def test_readme_lists_every_program():
    readme = (CORPUS / "README.md").read_text()
    missing = [n for n in PROGRAMS if f"`{n}`" not in readme]
    assert not missing, f"corpus/README.md does not list: {missing}"
