"""rclify bench (the lock microbenchmark): the files it writes, its ranking table and its plots.

One tiny end-to-end run checks the command as a user runs it; the ranking and the plots are also
checked on hand-made rows, whose order is known.  No timing is asserted.
"""

import argparse
import builtins
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rclify import algorithms
from rclify.commands import bench
from rclify.errors import UsageError
from rclify.profiling import bench_results, calibration
from rclify.progress import Progress

TINY = ["--duration", "0.005", "--repeat", "1", "--threads", "1,2", "--delays", "0", "--lines", "5",
        "--ctx", "none", "--nested", "none"]


@pytest.fixture(scope="module")
def tiny_bench(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    record = out.parent / f"{out.name}-calibration.json"  # not this machine's record: a tiny run
    proc = subprocess.run(
        [sys.executable, "-m", "rclify", "bench", "--out", str(out), *TINY, "--no-plots", "--",
         "--roundtrip-duration", "0.04"],
        capture_output=True, text=True, timeout=600, env=dict(os.environ, **{calibration.ENV: str(record)}),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc


def test_bench_writes_its_files_and_ranks_every_algorithm(tiny_bench):
    out, proc = tiny_bench
    assert {p.name for p in out.iterdir()} == {"lockbench.csv", "memory.csv", "ranking.txt"}
    assert "Ranking at the highest contention (delay 0), 5 shared lines per section" in proc.stdout
    table = proc.stdout.split("Ranking", 1)[1].split("\n\n", 1)[0]
    for name in algorithms.names():
        assert (f" {name} " in table) == (name != "profile"), name
    assert "Bytes per lock" in proc.stdout
    assert (out / "ranking.txt").read_text().strip() in proc.stdout
    # progress while it runs, on stderr
    assert "building the runtime and lockbench" in proc.stderr
    assert "[1/2 " in proc.stderr and "[2/2 " in proc.stderr


def test_bench_leaves_the_machine_record_assign_reads(tiny_bench):
    out, proc = tiny_bench
    path = out.parent / f"{out.name}-calibration.json"
    assert f"this machine's ranking recorded for `rclify assign`: {path}" in proc.stderr
    record = calibration.load(path)
    assert record.cpus == calibration.machine_cpus()
    assert sorted((p.threads, p.delay, p.lines) for p in record.points) == [(1, 0, 5), (2, 0, 5)]
    for point in record.points:
        assert set(point.ratios) == set(algorithms.names()) - {"profile"} and point.ratios["posix"] == 1.0
        assert 0.0 < point.share <= 1.0


def test_bench_ranking_has_one_column_per_thread_count(tiny_bench):
    out, _ = tiny_bench
    rank = bench_results.ranking(bench_results.read_rows(out / "lockbench.csv"))
    assert rank.threads == [1, 2] and (rank.delay, rank.lines) == (0, 5)
    for rows in rank.by_threads.values():
        assert [r.ratio_to_posix for r in rows] == sorted((r.ratio_to_posix for r in rows), reverse=True)


def _row(algorithm, threads, throughput, ratio, form="execute", delay=0, lines=5, ctx=0, nested=1):
    return bench_results.Row(algorithm, form, threads, delay, lines, ctx, nested, throughput, 1e9 / throughput,
                             ratio, delay * 0.5)


SYNTHETIC = [
    _row("posix", 8, 4e6, 1.0), _row("mcs", 8, 1.6e6, 0.4), _row("ccsynch", 8, 6e6, 1.5),
    _row("ccsynch", 8, 5e6, 1.25, form="lock"),
    _row("posix", 1, 9e6, 1.0), _row("mcs", 1, 8e6, 0.89), _row("ccsynch", 1, 7e6, 0.78),
    _row("ccsynch", 1, 6e6, 0.67, form="lock"), _row("ttas", 1, 8.5e6, 0.5),  # a slow round of posix's
    _row("posix", 8, 9e5, 1.0, delay=1000), _row("mcs", 8, 9.9e5, 1.1, delay=1000),
    _row("posix", 8, 3e6, 1.0, lines=1), _row("posix", 8, 3e6, 1.0, ctx=8),
    _row("posix", 8, 3e6, 1.0, nested=2), _row("ccsynch", 8, 2e6, 0.6, nested=2),
]


def test_ranking_is_at_the_highest_contention_with_five_lines():
    rank = bench_results.ranking(SYNTHETIC)
    assert (rank.delay, rank.lines, rank.threads) == (0, 5, [1, 8])
    assert [r.series for r in rank.by_threads[8]] == ["ccsynch", "ccsynch (lock)", "posix", "mcs"]
    table = bench_results.ranking_table(rank)
    assert [r.series for r in rank.by_threads[1]] == ["posix", "mcs", "ccsynch", "ccsynch (lock)", "ttas"]
    first = table.splitlines()[2]
    assert first.split()[:5] == ["1", "posix", "9.00M", "1.00x", "ccsynch"]
    lines = bench_results.target_lines(rank, {"ccsynch"})
    assert lines == ["lowest at 8 threads: mcs 0.40x posix's throughput (target >= 0.5x: missed)",
                     "best combining lock at 8 threads: ccsynch 1.50x posix's throughput (target >= 1.3x: met)"]


def test_ranking_falls_back_to_the_lines_measured():
    rank = bench_results.ranking([_row("posix", 2, 1e6, 1.0, lines=1), _row("ttas", 2, 2e6, 2.0, lines=1)])
    assert (rank.lines, rank.threads) == (1, [2])
    assert bench_results.target_lines(rank, set()) == []


def _memory(tmp_path):
    (tmp_path / "memory.csv").write_text(
        "algorithm,combines,sizeof_mutex,heap_per_lock,bytes_per_lock,retained_after_destroy\n"
        "posix,0,80,0.0,80.0,0.0\nccsynch,1,80,128.0,208.0,0.0\nmcs,0,80,64.0,144.0,0.0\n")


def _write_rows(tmp_path, rows):
    with open(tmp_path / "lockbench.csv", "w") as f:
        f.write(",".join(bench_results.COLUMNS) + "\n")
        for r in rows:
            f.write(f"{r.algorithm},{r.form},{r.threads},{r.delay},{r.lines},{r.ctx},{r.nested},{r.throughput},"
                    f"{r.latency_ns},{r.ratio_to_posix},{r.delay_ns},{r.throughput},1,0.1\n")


def test_report_draws_the_figures(tmp_path):
    pytest.importorskip("matplotlib")
    _write_rows(tmp_path, SYNTHETIC)
    _memory(tmp_path)
    assert bench.report(tmp_path, plots=True, progress=Progress(quiet=True), stream=None) == 0
    for name in ("fig5_lines1.png", "fig5_lines5.png", "fig19_ctx.png", "fig21_nested.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    assert "best combining lock at 8 threads: ccsynch 1.50x" in (tmp_path / "ranking.txt").read_text()


def test_report_without_matplotlib_says_how_to_get_plots(tmp_path, monkeypatch, capsys):
    _write_rows(tmp_path, SYNTHETIC)
    _memory(tmp_path)
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    assert bench.report(tmp_path, plots=True, progress=Progress(), stream=None) == 0
    assert f"{sys.executable} -m pip install matplotlib" in capsys.readouterr().err  # this venv's pip
    assert not list(tmp_path.glob("*.png"))


def test_a_file_that_is_not_lockbench_csv_is_refused(tmp_path):
    (tmp_path / "lockbench.csv").write_text("a,b\n1,2\n")
    with pytest.raises(Exception, match="not a lockbench CSV"):
        bench_results.read_rows(tmp_path / "lockbench.csv")


class _Sub:
    """Stands in for argparse's subparsers object."""

    def add_parser(self, name, **kwargs):
        return argparse.ArgumentParser(prog=name, description=kwargs.get("description"))


def test_bench_flags_reach_lockbench(tmp_path):
    args = bench.add_parser(_Sub()).parse_args(
        ["--duration", "0.1", "--threads", "1,2", "--delay", "0,10", "--ctx", "none", "--algorithms", "mcs,ttas",
         "--full", "--pin-clients"])
    args.passthrough = ["--server-cpu", "0"]
    argv = bench.lockbench_argv(args, tmp_path)
    assert argv[0].endswith("lockbench")
    assert argv[1:] == ["--algorithms", "mcs,ttas", "--threads", "1,2", "--delays", "0,10", "--ctx", "none",
                        "--duration", "0.1", "--full", "--pin-clients", "--brief",
                        "--csv", str(tmp_path / "lockbench.csv"), "--memory-csv", str(tmp_path / "memory.csv"),
                        "--server-cpu", "0"]


def test_lockbench_flags_are_refused_for_a_program_target():
    args = bench.add_parser(_Sub()).parse_args(["memcached", "--full"])
    args.passthrough, args.command = [], "bench"
    with pytest.raises(UsageError, match="--full: lockbench options"):
        bench.target_args(args)


def test_lockbench_help_writes_nothing(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "rclify", "bench", "--", "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: lockbench")
    assert not list(tmp_path.iterdir())


def test_manycore_script_builds_static_and_writes_its_files(tmp_path):
    """runtime/bench/manycore.sh, the many-core run (docs/benchmarks.md), scaled down to one thread
    and a 2-second budget: its static lockbench, then every file it writes under OUT."""
    script = bench.runtime_build.RUNTIME_DIR / "bench" / "manycore.sh"
    env = dict(os.environ, BIN_DIR=str(tmp_path / "bin"), OUT=str(tmp_path / "out"), THREADS="1", BUDGET="2",
               REPEAT="1", PYTHONPATH=str(Path(bench.__file__).resolve().parents[2]))
    built = subprocess.run(["bash", str(script), "build"], env=env, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    assert "(static)" in built.stdout
    ran = subprocess.run(["bash", str(script), "run"], env=env, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr[-2000:]
    out = tmp_path / "out"
    assert {"lockbench.csv", "memory.csv", "roundtrip.csv", "lockbench.json", "lockbench.log", "machine.txt",
            "ranking.txt"} <= {p.name for p in out.iterdir()}
    rows = bench_results.read_rows(out / "lockbench.csv")
    assert {(r.threads, r.delay) for r in rows} == {(1, 0)} and {r.lines for r in rows} == {1, 5}
    assert {r.algorithm for r in rows} == set(algorithms.names()) - {"profile"}
    header, values = (out / "roundtrip.csv").read_text().splitlines()
    fields = dict(zip(header.split(","), values.split(",")))
    assert float(fields["pingpong_roundtrip_ns"]) > 0 and float(fields["rcl_roundtrip_ns"]) > 0
    text = (out / "ranking.txt").read_text()
    assert "RCL round trip" in text and "1 shared line per section" in text and "5 shared lines" in text
    # without lockbench built, `run` says how to get it
    missing = subprocess.run(["bash", str(script), "run"], env=dict(env, BIN_DIR=str(tmp_path / "none")),
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "run '" in missing.stderr and "build' first" in missing.stderr
