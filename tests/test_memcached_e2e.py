"""End to end on Debian's memcached: fetch, (transform), build against the runtime, run its tests,
bench.  Slow (a build, a test suite) and needs the network once (apt-get source; the pristine copy
is kept in work/memcached.pristine and reused)."""

import argparse
import os
import subprocess
import sys
import warnings
from argparse import Namespace
from pathlib import Path

import pytest

from rclify import check
from rclify.targets.memcached import benchmark as memcached_bench
from rclify.targets.memcached import source as memcached
from rclify.paths import PROJECT_ROOT

PRISTINE = PROJECT_ROOT / "work" / "memcached.pristine"
QUICK_TESTS = "./sizes && ./testapp && prove t/getset.t t/incrdecr.t t/noreply.t t/flush-all.t"


def fetch_copy(dest: Path) -> memcached.Source:
    return memcached.fetch(dest, fresh=True, pristine=PRISTINE, log=lambda m: None)


def transform(tree: Path) -> None:
    """`rclify transform TREE`."""
    proc = subprocess.run(
        [sys.executable, "-m", "rclify", "transform", str(tree)], capture_output=True, text=True, timeout=1800
    )
    assert proc.returncode == 0, f"rclify transform {tree} failed: {proc.stderr.strip()}"


# memcached test files that fail now and then on slow or busy machines whatever the locks: reported
# upstream, or (expirations.t) a timing window reproduced with Debian's untransformed memcached
# (docs/check.md, "t/expirations.t").
KNOWN_FLAKY = {
    "t/chunked-extstore.t": "memcached issues #382 and #816, items missing after compaction on slow machines",
    "t/lru-maintainer.t": "memcached PR #427, timing on a busy host",
    "t/restart.t": "memcached issue #617",
    "t/expirations.t": "fails when memcached's 1-second clock tick lands between `debugtime 2` and the next "
    "`add` (reproduced with the untransformed build)",
}


def prove_passes_again(tree: Path, name: str, locks: str, attempts: int = 2) -> bool:
    env = {**os.environ, "RCLIFY_LOCKS": locks}
    for _ in range(attempts):
        proc = subprocess.run(["prove", name], cwd=tree, env=env, capture_output=True, text=True, timeout=900)
        if proc.returncode == 0:
            return True
    return False


def memcached_processes(tree: Path) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        except OSError:
            continue
        if cmdline.startswith(str(tree)):
            found.append(f"{pid} {cmdline}")
    return found


@pytest.mark.slow
def test_fetch_applies_debian_patches_and_is_idempotent(tmp_path):
    first = fetch_copy(tmp_path / "memcached")
    assert memcached.is_memcached_tree(first.working)
    applied = (first.working / ".pc" / "applied-patches").read_text().split()
    series = [ln for ln in (first.working / "debian/patches/series").read_text().split() if not ln.startswith("#")]
    assert applied == series and applied
    (first.working / "memcached.c").write_text("edited\n")
    again = memcached.fetch(first.working, pristine=PRISTINE, log=lambda m: None)
    assert not again.fetched and not again.copied  # a working copy is never clobbered ...
    assert (again.working / "memcached.c").read_text() == "edited\n"
    fresh = fetch_copy(first.working)  # ... unless asked
    assert fresh.copied and (fresh.working / "memcached.c").read_text() != "edited\n"
    assert fresh.version == first.version


def test_bench_cpu_lists():
    assert memcached_bench.cpu_list("0") == {0}
    allowed = sorted(os.sched_getaffinity(0))
    assert memcached_bench.cpu_list(f"{allowed[0]}-{allowed[-1]}") >= {allowed[0], allowed[-1]}
    for bad in ("x", "1-", "", "4096"):
        with pytest.raises(argparse.ArgumentTypeError):
            memcached_bench.cpu_list(bad)


@pytest.mark.slow
def test_original_memcached_builds_with_the_runtime_and_passes_tests_and_bench(tmp_path, capsys):
    tree = fetch_copy(tmp_path / "memcached").working
    report = check.run_check(tree, test=QUICK_TESTS, locks=["*=posix", "*=rcl"], timeout=900)
    assert report.ok, capsys.readouterr().out
    build_log = report.build.log.read_text()
    assert "librclify.o" in build_log and "-Werror" in build_log
    assert all(r.counts.source == "prove" and r.counts.passed > 100 for r in report.tests)
    # bench: the same binary on both sides, one short round; no server is left behind
    args = Namespace(original=tree, transformed=tree, locks=["config"], workloads="get,set", rounds=1,
                     concurrency=2, execute_number=2000, threads=2, run_timeout=60, max_seconds=120,
                     server_cpus={0}, client_cpus=None)
    assert memcached_bench.run(args) == 0
    out = capsys.readouterr().out
    assert "same binary" in out and out.count(" ops/s") >= 4
    assert "cpus:        server 0, client any" in out
    assert memcached_processes(tree) == []


@pytest.mark.slow
def test_transformed_memcached_passes_its_suite_on_rcl_and_its_quick_tests_on_ccsynch_and_mcs(tmp_path):
    """The issue's proof: memcached's own full `make test`, with every extracted lock on RCL."""
    tree = fetch_copy(tmp_path / "memcached").working
    subprocess.run(["./configure", "-q"], cwd=tree, check=True, timeout=600)  # transform reads config.h
    transform(tree)
    assert (tree / "lock_config.h").exists(), "transform wrote no lock_config.h"
    assert "RCL_EXECUTE(rclify_mutex_of_item_lock(hv)" in (tree / "thread.c").read_text()  # item_get
    report = check.run_check(tree, locks=["*=rcl"], timeout=2400)
    assert report.build.ok and report.tests and not report.tests[0].timed_out
    counts = report.tests[0].counts
    assert counts is not None and counts.passed > 100000
    if not report.ok:  # only an upstream-flaky file may fail, and it must pass when run again
        failed = [name for name, _ in check.prove_failures(report.tests[0].log.read_text(errors="replace"))]
        assert failed, f"the suite failed without a failing test file: {report.tests[0].log}"
        unknown = [f for f in failed if f not in KNOWN_FLAKY]
        assert not unknown, f"{unknown} failed under *=rcl (log: {report.tests[0].log})"
        for name in failed:
            assert prove_passes_again(tree, name, "*=rcl"), f"{name} failed again under *=rcl"
            warnings.warn(f"{name} failed once under *=rcl and passed when run again "
                          f"(known flaky upstream: {KNOWN_FLAKY[name]}); log: {report.tests[0].log}")
    # issue 13: the same transformed build on a combining lock and a queue lock (memcached's quick
    # tests: the full suite under each takes 7 minutes; docs/benchmarks.md has a full run per lock)
    quick = check.run_check(tree, test=QUICK_TESTS, locks=["*=ccsynch", "*=mcs"], timeout=1200)
    assert quick.build.ok and len(quick.tests) == 2
    for run in quick.tests:
        assert run.ok, f"{run.name}: memcached's quick tests failed (log: {run.log})"
        assert run.counts is not None and run.counts.passed > 1000, run.counts
