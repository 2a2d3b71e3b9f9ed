"""rclify bench: runs a benchmark.

TARGET 'locks' (the default) builds the runtime and its microbenchmark (runtime/bench/lockbench.c,
after the paper's section 5.3) and runs it over every algorithm of the registry: the cache-line
floor and the RCL round trip, bytes per lock, then throughput and latency of each algorithm side by
side with posix while the delay between sections, the shared lines per section, the thread count,
the context variables and the nesting vary.  It writes lockbench.csv, memory.csv, ranking.txt and
(with matplotlib, the `chart` extra) PNG plots to --out, and prints the ranking at the highest
contention with 5 lines at 1, 2, 4 and 8 threads.  It also leaves this machine's record (each algorithm's
ratio to posix at each point: rclify/profiling/calibration.py) in the user cache, which `rclify assign`
calibrates its choices by and `rclify tune` orders its candidates by.
TARGET 'interpose': what `rclify run`'s interposer costs an uncontended lock+unlock, plain vs
interposed posix vs interposed algorithms, paired in each round (rclify/commands/run.py).
Any other TARGET is a program of rclify/targets/ (memcached): its benchmark.
Arguments after a bare `--` go to the target unchanged: lockbench's own flags
(`rclify bench -- --help`), or the program benchmark's (`rclify bench memcached -- --help`).
"""

import argparse
import subprocess
import sys
from pathlib import Path

from rclify import runtime_build, targets
from rclify.profiling import bench_results, calibration
from rclify.errors import RclifyError, ToolMissingError, UsageError
from rclify.progress import Progress

TARGETS = ("locks", "interpose", *targets.TARGETS)
LOCKBENCH = runtime_build.BUILD_DIR / "bench" / "lockbench"
DEFAULT_OUT = Path("rclify-bench")

# lockbench flags that take a value, in the order they are passed on
VALUE_FLAGS = ("algorithms", "forms", "threads", "delays", "lines", "ctx", "nested", "duration", "budget", "repeat",
               "policy")
SWITCHES = ("full", "pin_clients", "json")
LOCKBENCH_FLAGS = VALUE_FLAGS + SWITCHES + ("tables", "no_plots", "out")


def add_parser(sub):
    p = sub.add_parser(
        "bench",
        help=f"run a benchmark: lock microbenchmark (default) or a program ({', '.join(targets.TARGETS)})",
        description="Run a benchmark. 'locks' (default): the runtime's microbenchmark over every registered "
        "lock algorithm (throughput and latency against contention, shared lines, threads, context variables "
        "and nesting; bytes per lock); writes CSV and PNG plots to --out and prints a ranking. 'interpose': "
        "what rclify run's interposer costs an uncontended lock, paired against plain. A program's "
        "name: its benchmark, original against transformed.",
    )
    p.add_argument("target", nargs="?", default="locks", choices=TARGETS, help="what to benchmark (default: locks)")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help=f"directory for lockbench.csv, memory.csv, ranking.txt and the PNG plots "
                   f"(default ./{DEFAULT_OUT})")
    p.add_argument("--full", action="store_true",
                   help="the full sweep (more delays, context and nesting counts, thread counts; 5 rounds of 0.2 s): "
                   "tens of minutes")
    p.add_argument("--algorithms", metavar="LIST", help="algorithm names (default: every registered one but profile)")
    p.add_argument("--forms", choices=("auto", "execute", "both"),
                   help="auto (default): rcl_execute for all, lock/unlock too where it differs; execute; both")
    p.add_argument("--threads", metavar="LIST", help="client thread counts (default 1,2,4,... up to 4x the CPUs)")
    p.add_argument("--delays", "--delay", dest="delays", metavar="LIST",
                   help="local work between sections, loop iterations (default 0,300,3000,30000)")
    p.add_argument("--lines", metavar="LIST", help="shared cache lines per section (default 1,5)")
    p.add_argument("--ctx", metavar="LIST", help="context-variable counts, or none (default 16)")
    p.add_argument("--nested", metavar="LIST", help="nested lock counts, or none (default 3)")
    p.add_argument("--duration", type=float, metavar="S", help="seconds per measurement (default: from --budget)")
    p.add_argument("--budget", type=float, metavar="S",
                   help="seconds for all throughput measurements together (default 110)")
    p.add_argument("--repeat", type=int, metavar="N", help="rounds per point, medians shown (default 3)")
    p.add_argument("--policy", choices=("auto", "spin", "yield", "park"), help="waiting policy of every lock but posix")
    p.add_argument("--pin-clients", action="store_true", help="pin clients to CPUs other than the RCL server's")
    p.add_argument("--tables", action="store_true", help="also print lockbench's table of every point")
    p.add_argument("--no-plots", action="store_true", help="no PNG plots")
    p.add_argument("--json", action="store_true", help="print lockbench's JSON object (no ranking) on stdout")
    return p


def lockbench_argv(args, out_dir: Path | None = None) -> list[str]:
    """The lockbench command line for the parsed arguments (CSV files in out_dir when given)."""
    argv = [str(LOCKBENCH)]
    for flag in VALUE_FLAGS:
        value = getattr(args, flag, None)
        if value is not None:
            argv += [f"--{flag}", str(value)]
    for flag in SWITCHES:
        if getattr(args, flag, False):
            argv.append(f"--{flag.replace('_', '-')}")
    if not getattr(args, "json", False) and not getattr(args, "tables", False):
        argv.append("--brief")
    if out_dir is not None:
        argv += ["--csv", str(out_dir / "lockbench.csv"), "--memory-csv", str(out_dir / "memory.csv")]
    return argv + list(getattr(args, "passthrough", []) or [])


def build_lockbench() -> None:
    runtime_build.build_runtime()
    runtime_build.make("bench", "the benchmarks", LOCKBENCH)


def target_args(args) -> argparse.Namespace:
    """A program benchmark's own arguments, given after `--`."""
    given = [f"--{f.replace('_', '-')}" for f in LOCKBENCH_FLAGS if getattr(args, f, None) not in (None, False)]
    if given:
        raise UsageError(
            f"{', '.join(given)}: lockbench options; give the {args.target} benchmark's after `--` "
            f"(rclify bench {args.target} -- --help)"
        )
    target = targets.load(args.target)
    parser = target.add_bench_arguments(argparse.ArgumentParser(prog=f"rclify bench {args.target} --"))
    targs = parser.parse_args(list(getattr(args, "passthrough", []) or []))
    targs.command, targs.target = args.command, args.target
    return targs


def report(out_dir: Path, plots: bool, progress: Progress, stream=None) -> int:
    """Ranking, targets and plots from the CSV files lockbench wrote to out_dir."""
    rows = bench_results.read_rows(out_dir / "lockbench.csv")
    memory = bench_results.read_memory(out_dir / "memory.csv")
    rank = bench_results.ranking(rows)
    sections = []
    if rank is not None:
        sections.append(bench_results.ranking_table(rank))
        sections.append("\n".join(bench_results.target_lines(rank, bench_results.combining_algorithms(memory))))
    sections.append(bench_results.memory_table(memory))
    text = "\n\n".join(s for s in sections if s)
    (out_dir / "ranking.txt").write_text(text + "\n")
    if stream is not None:
        print("\n" + text, file=stream)
    if plots:
        try:
            for png in bench_results.charts(rows, out_dir):
                progress(f"plot: {png}")
        except ToolMissingError as err:
            progress(f"no plots: {err}")
    progress(f"results in {out_dir}/: lockbench.csv, memory.csv, ranking.txt")
    return 0


def run_locks(args) -> int:
    progress = Progress()
    if {"--help", "-h"} & set(args.passthrough or []):  # lockbench's own help: nothing to write
        build_lockbench()
        return subprocess.run([str(LOCKBENCH), "--help"]).returncode
    out_dir = Path(args.out) if args.out else DEFAULT_OUT
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"cannot create {out_dir}: {err.strerror}") from None
    progress("building the runtime and lockbench")
    build_lockbench()
    progress(f"running {' '.join(lockbench_argv(args, out_dir)[1:])}")
    proc = subprocess.run(lockbench_argv(args, out_dir))
    if proc.returncode != 0:
        raise RclifyError(f"lockbench failed (exit {proc.returncode}); see its message above")
    code = report(out_dir, plots=not args.no_plots, progress=progress, stream=None if args.json else sys.stdout)
    record = calibration.save(bench_results.read_rows(out_dir / "lockbench.csv"))
    if record is not None:  # what `rclify assign` calibrates its choices by (docs/profiling.md)
        progress(f"this machine's ranking recorded for `rclify assign`: {record}")
    return code


def run(args) -> int:
    if args.target == "interpose":  # rclify run's cost on an uncontended lock (docs/benchmarks.md)
        from rclify.commands.run import bench_interposition

        print(bench_interposition(Path(args.out) if args.out else DEFAULT_OUT), end="")
        return 0
    if args.target != "locks":
        return int(targets.load(args.target).bench(target_args(args)) or 0)
    return run_locks(args)
