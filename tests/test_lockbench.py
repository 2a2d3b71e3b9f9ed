"""rclify bench (lockbench): a short run must finish, keep mutual exclusion and report consistent figures.

Speed is not asserted here (machines are noisy; figures go to docs/benchmarks.md): these tests check
what the benchmark reports, not how fast the locks are.
"""

import argparse
import json
import subprocess
import sys

import pytest

from rclify.commands import bench

PROBE_LINES = 8  # runtime/bench/lockbench.c: pairs per repeat


@pytest.fixture(scope="module")
def short_run():
    """One short lockbench run, as JSON (lockbench exits 1 if a lock lost an update)."""
    proc = subprocess.run(
        [sys.executable, "-m", "rclify", "bench", "--json", "--duration", "0.08", "--repeat", "2", "--threads", "1,8"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_round_trip_is_paired_line_by_line(short_run):
    assert short_run["cross_core_pairs"] + short_run["sibling_pairs"] == 2 * PROBE_LINES
    assert 0 < short_run["pingpong_roundtrip_best_ns"] <= short_run["pingpong_roundtrip_ns"]
    assert 0 < short_run["rcl_roundtrip_best_ns"] <= short_run["rcl_roundtrip_ns"]
    assert short_run["rcl_roundtrip_vs_floor"] > 0


def test_each_kind_of_pair_has_a_ratio_exactly_when_it_was_measured(short_run):
    for kind in ("cross_core", "siblings"):
        pairs = short_run["cross_core_pairs" if kind == "cross_core" else "sibling_pairs"]
        ratio = short_run[f"rcl_roundtrip_vs_floor_{kind}"]
        assert (ratio > 0) == (pairs > 0), (kind, pairs, ratio)


def test_throughput_has_both_locks_at_each_thread_count(short_run):
    rows = {row["threads"]: row for row in short_run["throughput"]}
    assert sorted(rows) == [1, 8]
    for row in rows.values():
        assert row["posix_per_s"] > 0 and row["rcl_per_s"] > 0
        assert row["rcl_vs_posix"] > 0


def test_bench_flags_reach_lockbench():
    args = bench.add_parser(_Sub()).parse_args(["--duration", "0.1", "--threads", "1,2", "--json"])
    argv = bench.lockbench_argv(args)
    assert argv[0].endswith("lockbench")
    assert argv[1:] == ["--duration", "0.1", "--threads", "1,2", "--json"]


class _Sub:
    """Stands in for argparse's subparsers object."""

    def add_parser(self, name, **kwargs):
        return argparse.ArgumentParser(prog=name, description=kwargs.get("description"))
