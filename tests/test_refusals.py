"""Every refusal reason has a fixture that asserts it (the clang-tidy/LibCST style: a refused
pattern is a fixture that asserts the message).

tests/fixtures/refusals/<reason>/input.c (input.cpp for a C++ reason) is a small program whose
interesting region rclify must leave hybrid for that reason, next to any other files it needs (a
shared header, a C++ file); expected.txt holds the facts the report must show for it:
    line: 12            the region's lock line
    reason: <reason>    the region's (first) reason
    function: name      optional
    reason_line: 10     optional: the line the reason points at (parse-errors: the first error)
    file: name.h        optional: the file the region is in (default input.c; the fixture may
                        hold headers input.c includes)
    unrecognized: text  optional: words the record's `unrecognized` must hold (what was not recognised)
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rclify.transform.refusals import REASONS

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "refusals"
CASES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())

# Reasons no input can produce, each with the evidence (where it is raised and why it cannot be
# reached); they are exempt from the coverage test below.  Empty: every reason has a fixture.
UNREACHABLE: set[str] = set()


def input_file(case: str) -> Path:
    """The fixture's input.c, or input.cpp."""
    found = sorted((FIXTURES / case).glob("input.*"))
    assert len(found) == 1, f"{case}: one input.c or input.cpp expected, found {[p.name for p in found]}"
    return found[0]


def expected(case: str) -> dict[str, str]:
    facts = {}
    for line in (FIXTURES / case / "expected.txt").read_text().splitlines():
        if line.strip():
            key, _, value = line.partition(":")
            facts[key.strip()] = value.strip()
    return facts


def test_every_reason_has_a_fixture():
    missing = sorted(set(REASONS) - set(CASES) - UNREACHABLE)
    assert not missing, f"reasons without a tests/fixtures/refusals/<reason>/ folder: {missing}"


def test_every_fixture_names_an_existing_reason():
    unknown = sorted(set(CASES) - set(REASONS))
    assert not unknown, f"fixture folders that name no key of REASONS: {unknown}"
    for case in CASES:
        assert expected(case).get("reason") == case, f"{case}/expected.txt: reason is not {case}"
    assert not (UNREACHABLE - set(REASONS)), "UNREACHABLE names a reason that no longer exists"
    assert not (UNREACHABLE & set(CASES)), "a reason listed as UNREACHABLE has a fixture after all"


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None, reason="needs gcc and g++")
@pytest.mark.parametrize("case", CASES)
def test_fixture_compiles(case):
    for source in sorted((FIXTURES / case).glob("*.c*")):
        compiler = "gcc" if source.suffix == ".c" else "g++"
        proc = subprocess.run([compiler, "-fsyntax-only", "-pthread", str(source)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(shutil.which("spatch") is None, reason="spatch (coccinelle) not installed")
@pytest.mark.parametrize("case", CASES)
def test_region_is_left_hybrid_for_its_reason(case, tmp_path):
    facts = expected(case)
    name = input_file(case).name
    tree = tmp_path / case
    shutil.copytree(FIXTURES / case, tree, ignore=shutil.ignore_patterns("expected.txt"))
    files = sorted(p.name for p in tree.iterdir())
    original = {n: (tree / n).read_bytes() for n in files}
    report = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "rclify", "transform", str(tree), "--dry-run", "--report", str(report),
         "-q", "-j", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert {n: (tree / n).read_bytes() for n in files} == original, "--dry-run changed the input"
    assert sorted(p.name for p in tree.iterdir()) == files, "--dry-run wrote into the tree"
    regions = json.loads(report.read_text())["regions"]
    line = int(facts["line"])
    name = facts.get("file", name)  # the region may be in another file of the fixture (a header)
    found = [r for r in regions if r["file"] == name and r["line"] == line]
    assert found, f"no region at {name}:{line}; regions at {[(r['file'], r['line']) for r in regions]}"
    region = found[0]
    assert region["status"] == "hybrid", f"{name}:{line} was {region['status']}, expected hybrid ({case})"
    assert region["reason"] == facts["reason"], \
        f"{name}:{line}: reason {region['reason']} ({region['why']}), other reasons {region['other_reasons']}"
    assert region["reason"] in REASONS
    if "function" in facts:
        assert region["function"] == facts["function"]
    if "reason_line" in facts:
        assert region["reason_line"] == int(facts["reason_line"])
    if "unrecognized" in facts:
        assert facts["unrecognized"] in region.get("unrecognized", ""), region
