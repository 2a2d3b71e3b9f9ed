"""End to end on the corpus: `rclify transform` each program, build it against the runtime with
`rclify flags`, run it under every lock algorithm, and compare with what the original prints.

Refusal programs must keep at least one region hybrid for the reason their pattern.txt names;
`expect: extract` programs must have every region extracted.  Under the profile algorithm every
lock a program takes must carry its lock_config.h id (none "(anonymous)").

A transformed program that calls a runtime function rclify.h declares but this build of the runtime
does not define yet (rcl_mutex_timedlock, while its implementation is on the runtime branch) is
compiled, not run: its run tests skip, saying which functions are missing.
"""

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rclify import algorithms, runtime_build
from rclify.ctext.languages import CXX_SOURCES
from corpus_build import build

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
PROGRAMS = sorted(p.name for p in CORPUS.iterdir() if (p / "expected.txt").is_file())
CXX_PROGRAMS = [n for n in PROGRAMS if any(p.suffix in CXX_SOURCES for p in (CORPUS / n).iterdir())]
CXX = (".cpp", ".cc", ".cxx")
ALGORITHMS = algorithms.names()  # every registered algorithm
RUN_TIMEOUT_S = 60


def _expectation(name: str) -> tuple[str, str | None]:
    for line in (CORPUS / name / "pattern.txt").read_text().splitlines():
        if line.startswith("expect: "):
            words = line.split()
            return words[1], (words[2] if len(words) > 2 else None)
    raise AssertionError(f"{name}/pattern.txt has no expect: line")


def _transform_and_build(name: str, root: Path) -> dict:
    tree = root / name
    shutil.copytree(CORPUS / name, tree)
    report = root / f"{name}.json"
    proc = subprocess.run(
        [sys.executable, "-m", "rclify", "transform", str(tree), "--report", str(report), "-j", "1", "-q"],
        capture_output=True, text=True, timeout=300,
    )
    result = {"tree": tree, "transform": proc}
    if proc.returncode != 0:
        return result
    result["report"] = json.loads(report.read_text())
    result["build"] = build(tree, [*runtime_build.cflags()], [*runtime_build.libs()])
    return result


@pytest.fixture(scope="session")
def transformed(tmp_path_factory):
    runtime_build.build_runtime()
    root = tmp_path_factory.mktemp("corpus-transformed")
    jobs = max(1, min(len(os.sched_getaffinity(0)), 4))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return dict(pool.map(lambda n: (n, _transform_and_build(n, root)), PROGRAMS))


@pytest.mark.parametrize("name", PROGRAMS)
def test_transform_reports_expected_regions(transformed, name):
    result = transformed[name]
    proc = result["transform"]
    assert proc.returncode == 0, f"transform failed:\n{proc.stdout}\n{proc.stderr}"
    regions = result["report"]["regions"]
    assert regions, "no lock region found"
    expect, reason = _expectation(name)
    hybrid = [r for r in regions if r["status"] == "hybrid"]
    sites = result["report"]["summary"]["call_sites"]
    assert sites["found"] == len(result["report"]["call_sites"]) > 0
    assert sites["in_extracted_regions"] + sites["in_hybrid_regions"] + sum(sites["left_alone"].values()) \
        == sites["found"], sites
    if expect == "extract":
        assert not hybrid, f"regions left hybrid: {hybrid}"
        # every call site is in an extracted region, but macro bodies and wrapper bodies (counted
        # where they are used)
        assert set(sites["left_alone"]) <= {"in-macro-definition", "in-wrapper-function"}, \
            [s for s in result["report"]["call_sites"] if s["status"] == "left-alone"]
    else:
        reasons = {r["reason"] for r in hybrid} | {x for r in hybrid for x in r["other_reasons"]}
        assert reason in reasons, f"expected a hybrid region for {reason}, got {hybrid}"


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("name", PROGRAMS)
def test_transformed_program_prints_what_the_original_does(transformed, name, algorithm):
    result = transformed[name]
    assert result["transform"].returncode == 0, result["transform"].stderr
    build = result["build"]
    assert build.returncode == 0, f"transformed program does not build:\n{build.stderr[-3000:]}"
    profile = result["tree"] / f"profile-{algorithm}.json"
    env = dict(os.environ, RCLIFY_LOCKS=f"*={algorithm}", RCLIFY_PROFILE_OUT=str(profile))
    run = subprocess.run([str(result["tree"] / "prog")], cwd=result["tree"], capture_output=True,
                         text=True, timeout=RUN_TIMEOUT_S, env=env)
    assert run.returncode == 0, f"exit {run.returncode}:\n{run.stderr[-3000:]}"
    assert run.stdout == (CORPUS / name / "expected.txt").read_text()
    if algorithm == "profile":
        ids = [lock["id"] for lock in json.loads(profile.read_text())["locks"]]
        assert ids, "no lock seen under the profile algorithm"
        if "(anonymous)" in ids:
            # known limit, said in the report: an initializer in a C++ file spatch cannot parse is
            # rewritten textually, with no lock_config.h entry (docs/transform.md)
            notes = result["report"]["api_notes"]
            said = [n for n in notes if "INITIALIZER rewritten textually" in n and n.split(":")[0].endswith(CXX)]
            assert said, f"locks without their lock_config.h id at run time: {ids}; the report does not say why"


@pytest.mark.parametrize("name", PROGRAMS)
def test_transformed_sources_compile(transformed, name):
    """Every transformed C file compiles against rclify.h, with a pthread call left on an
    rcl_mutex_t or an undeclared function an error (also where the program cannot be linked yet)."""
    result = transformed[name]
    assert result["transform"].returncode == 0, result["transform"].stderr
    for source in sorted(result["tree"].glob("*.c")):
        proc = subprocess.run(["cc", "-c", "-O1", "-pthread", "-Wall", "-Werror=incompatible-pointer-types",
                               "-Werror=implicit-function-declaration", *runtime_build.cflags(), source.name,
                               "-o", "/dev/null"], cwd=result["tree"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"{source.name}:\n{proc.stderr[-3000:]}"


@pytest.mark.parametrize("name", CXX_PROGRAMS)
def test_cxx_sources_are_rewritten_and_compile(transformed, name):
    """Every C++ file was rewritten onto the runtime (no pthread mutex call or type left), is left
    out of files_left_unchanged, and compiles after the transform (g++ -fsyntax-only)."""
    result = transformed[name]
    assert result["transform"].returncode == 0, result["transform"].stderr
    assert not result["report"]["files_left_unchanged"], result["report"]["files_left_unchanged"]
    for source in sorted(p for p in result["tree"].iterdir() if p.suffix in CXX_SOURCES):
        text = source.read_text()
        assert "pthread_mutex_" not in text and "rcl_mutex_lock(" in text, f"{source.name} was not rewritten"
        proc = subprocess.run(["g++", "-fsyntax-only", "-Wall", *runtime_build.cflags(), source.name],
                              cwd=result["tree"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"{source.name} does not compile after the transform:\n{proc.stderr}"
    assert all(r["status"] == "hybrid" and r["reason"] == "c++-source"
               for r in result["report"]["regions"] if Path(r["file"]).suffix in CXX_SOURCES)


def test_second_transform_changes_nothing(transformed):
    tree = transformed["kitchen_sink_cache"]["tree"]
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "-q"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "nothing changed" in proc.stdout
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == before
