"""lockbench (runtime/bench/lockbench.c): a tiny run must measure every registered algorithm at every
point, keep mutual exclusion, and report what its CSV, JSON and memory files promise.

Speed is not asserted here (machines are noisy; figures go to docs/benchmarks.md): these tests check
what the benchmark reports, not how fast the locks are.
"""

import csv
import json
import subprocess

import pytest

from rclify import algorithms
from rclify.commands import bench
from rclify.profiling import bench_results

PROBE_LINES = 8  # lockbench.c: floor/RCL pairs per round
TINY = ["--duration", "0.005", "--repeat", "2", "--threads", "1,3", "--delays", "0,50", "--lines", "1,5",
        "--ctx", "4", "--nested", "2", "--roundtrip-duration", "0.04", "--quiet"]
POINTS = 2 * 2 * 2 + 2 + 2  # threads x delays x lines, then the ctx and nested variants at each thread count
CSV_COLUMNS = ["algorithm", "form", "threads", "delay", "lines", "ctx", "nested", "throughput", "latency_ns",
               "ratio_to_posix", "delay_ns", "throughput_best", "repeat", "duration_s"]


def measured_algorithms() -> list[str]:
    """Every registered algorithm but profile (a measuring posix lock, not a lock choice)."""
    return [name for name in algorithms.names() if name != "profile"]


@pytest.fixture(scope="module")
def lockbench():
    bench.build_lockbench()
    return str(bench.LOCKBENCH)


@pytest.fixture(scope="module")
def tiny_run(lockbench, tmp_path_factory):
    """One tiny run: its JSON, CSV rows and memory rows (lockbench exits 1 if a lock lost an update)."""
    out = tmp_path_factory.mktemp("lockbench")
    proc = subprocess.run(
        [lockbench, *TINY, "--json", "--csv", str(out / "rows.csv"), "--memory-csv", str(out / "memory.csv")],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out / "rows.csv", newline="") as f:
        reader = csv.DictReader(f)
        header, rows = reader.fieldnames, list(reader)
    with open(out / "memory.csv", newline="") as f:
        memory = list(csv.DictReader(f))
    return {"json": json.loads(proc.stdout), "header": header, "rows": rows, "memory": memory}


def test_csv_has_the_documented_columns(tiny_run):
    assert tiny_run["header"] == CSV_COLUMNS
    assert bench_results.COLUMNS == tuple(CSV_COLUMNS)


def test_every_registered_algorithm_is_measured_at_every_point_in_execute_form(tiny_run):
    rows = tiny_run["rows"]
    for name in measured_algorithms():
        points = {(r["threads"], r["delay"], r["lines"], r["ctx"], r["nested"])
                  for r in rows if r["algorithm"] == name and r["form"] == "execute"}
        assert len(points) == POINTS, (name, sorted(points))
    assert "profile" not in {r["algorithm"] for r in rows}
    assert tiny_run["json"]["skipped"] == [
        {"algorithm": "profile", "why": "a measuring posix lock (rclify profile), not a lock choice"}]


def test_lock_form_is_a_second_series_exactly_where_execute_differs(tiny_run):
    combining = {m["algorithm"] for m in tiny_run["memory"] if m["combines"] == "1"}
    with_lock_form = {r["algorithm"] for r in tiny_run["rows"] if r["form"] == "lock"}
    assert with_lock_form == combining | {"rcl"}
    assert len(tiny_run["rows"]) == POINTS * (len(measured_algorithms()) + len(with_lock_form))


def test_figures_are_consistent_and_posix_is_the_reference(tiny_run):
    """Consistency only: a 5 ms window may see no section end (a slow form, a descheduled thread),
    so a figure may be 0, never negative; every series made progress somewhere."""
    progress = {}
    for r in tiny_run["rows"]:
        assert float(r["throughput"]) >= 0 and float(r["latency_ns"]) >= 0 and float(r["ratio_to_posix"]) >= 0, r
        assert float(r["throughput_best"]) >= float(r["throughput"]), r
        assert (float(r["delay_ns"]) == 0) == (r["delay"] == "0"), r
        if r["algorithm"] == "posix" and float(r["throughput_best"]) > 0:
            assert float(r["ratio_to_posix"]) == 1.0
        key = (r["algorithm"], r["form"])
        progress[key] = progress.get(key, 0) + float(r["throughput_best"])
    assert all(progress.values()), progress
    json_rows = tiny_run["json"]["rows"]
    assert [(r["algorithm"], r["form"], r["threads"]) for r in json_rows] == [
        (r["algorithm"], r["form"], int(r["threads"])) for r in tiny_run["rows"]]


def test_variants_are_measured_at_the_first_delay_and_line_count(tiny_run):
    for r in tiny_run["rows"]:
        if r["ctx"] != "0" or r["nested"] != "1":
            assert (r["delay"], r["lines"]) == ("0", "1"), r
            assert not (r["ctx"] != "0" and r["nested"] != "1"), r
    assert {r["ctx"] for r in tiny_run["rows"]} == {"0", "4"}
    assert {r["nested"] for r in tiny_run["rows"]} == {"1", "2"}


def test_bytes_per_lock_for_every_algorithm(tiny_run):
    memory = {m["algorithm"]: m for m in tiny_run["memory"]}
    assert sorted(memory) == sorted(measured_algorithms())
    for m in memory.values():
        assert int(m["sizeof_mutex"]) > 0
        assert float(m["bytes_per_lock"]) == pytest.approx(int(m["sizeof_mutex"]) + float(m["heap_per_lock"]), abs=0.11)
    assert [m["algorithm"] for m in tiny_run["json"]["memory"]] == [m["algorithm"] for m in tiny_run["memory"]]


def test_round_trip_is_paired_line_by_line(tiny_run):
    run = tiny_run["json"]
    assert run["cross_core_pairs"] + run["sibling_pairs"] == 2 * PROBE_LINES
    assert 0 < run["pingpong_roundtrip_best_ns"] <= run["pingpong_roundtrip_ns"]
    assert 0 < run["rcl_roundtrip_best_ns"] <= run["rcl_roundtrip_ns"]
    for kind, pairs in (("cross_core", "cross_core_pairs"), ("siblings", "sibling_pairs")):
        assert (run[f"rcl_roundtrip_vs_floor_{kind}"] > 0) == (run[pairs] > 0), kind


@pytest.mark.parametrize("fault", ["lines", "ctx", "nested"])
def test_a_lost_update_fails_the_run(lockbench, fault):
    """The mutual-exclusion checks can fail: one section told to skip one increment is reported."""
    proc = subprocess.run(
        [lockbench, "--algorithms", "posix", "--no-roundtrip", "--quiet", "--duration", "0.005", "--repeat", "1",
         "--threads", "2", "--delays", "0", "--lines", "1", "--ctx", "4", "--nested", "2", "--inject-fault", fault],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 1
    assert "lost" in proc.stderr and "posix" in proc.stderr


def test_forms_and_algorithm_choice(lockbench):
    proc = subprocess.run(
        [lockbench, "--algorithms", "ttas", "--forms", "both", "--no-roundtrip", "--quiet", "--duration", "0.005",
         "--repeat", "1", "--threads", "2", "--delays", "0", "--lines", "1", "--ctx", "none", "--nested", "none",
         "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    series = [(r["algorithm"], r["form"]) for r in json.loads(proc.stdout)["rows"]]
    assert series == [("posix", "execute"), ("posix", "lock"), ("ttas", "execute"), ("ttas", "lock")]


@pytest.mark.parametrize("argv, message", [
    (["--algorithms", "nosuchlock"], "unknown algorithm 'nosuchlock'"),
    (["--threads", "0"], "bad --threads list"),
    (["--forms", "sideways"], "--forms is auto, execute or both"),
    (["--policy", "nap"], "unknown policy 'nap'"),
])
def test_bad_options_are_refused(lockbench, argv, message):
    proc = subprocess.run([lockbench, *argv], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert message in proc.stderr


# ---- blockbench (runtime/bench/blockbench.c): what a blocking section costs its server's other locks ----

BLOCK_TINY = ["--every", "1,4", "--sleep-us", "200", "--repeat", "2", "--duration", "0.01", "--quiet"]


@pytest.fixture(scope="module")
def blockbench(lockbench):
    """Built with lockbench: `make bench` builds every runtime/bench/*.c."""
    return str(bench.LOCKBENCH.parent / "blockbench")


def test_blockbench_measures_both_cases_of_every_point(blockbench):
    """posix first (the reference), then each algorithm asked for, at each period; the run itself
    checks the sections' counts (mutual exclusion) and exits 1 on a lost update."""
    proc = subprocess.run([blockbench, *BLOCK_TINY, "--algorithms", "rcl,ccsynch", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = json.loads(proc.stdout)
    assert (run["sleep_us"], run["repeat"], run["a_threads"], run["b_threads"]) == (200, 2, 1, 1)
    assert [(r["algorithm"], r["every"]) for r in run["rows"]] == [
        (alg, k) for alg in ("posix", "rcl", "ccsynch") for k in (1, 4)]
    for r in run["rows"]:
        assert r["b_outside"] >= 0 and r["b_blocking"] >= 0 and r["a_outside"] >= 0 and r["a_blocking"] >= 0, r
        assert r["b_ratio_min"] <= r["b_ratio"] <= r["b_ratio_max"], r
    # Every series made progress on both locks somewhere (a 10 ms window may see none end).
    for alg in ("posix", "rcl", "ccsynch"):
        rows = [r for r in run["rows"] if r["algorithm"] == alg]
        assert sum(r["b_outside"] + r["b_blocking"] for r in rows) > 0, alg
        assert sum(r["a_outside"] + r["a_blocking"] for r in rows) > 0, alg


def test_blockbench_table_names_its_columns(blockbench):
    proc = subprocess.run([blockbench, *BLOCK_TINY, "--every", "2"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[1].split() == ["algorithm", "every", "B/s", "outside", "B/s", "blocks", "B", "ratio", "(min-max)",
                                "A/s", "outside", "A/s", "blocks"]
    assert [line.split()[:2] for line in lines[2:]] == [["posix", "2"], ["rcl", "2"]]


@pytest.mark.parametrize("argv, message", [
    (["--algorithms", "nosuchlock"], "unknown algorithm 'nosuchlock'"),
    (["--every", "0"], "bad --every '0'"),
    (["--sleep-us", "-5"], "bad --sleep-us '-5'"),
    (["--sideways"], "unknown option '--sideways'"),
])
def test_blockbench_refuses_bad_options(blockbench, argv, message):
    proc = subprocess.run([blockbench, *argv], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert message in proc.stderr
