"""rclify bench: runs a benchmark.

TARGET 'locks' (the default) builds the runtime and its microbenchmark (runtime/bench/lockbench.c)
and runs it: cache-line ping-pong floor, RCL round trip, posix vs rcl throughput by thread count.
Any other TARGET is a program of rclify/targets/ (memcached): its benchmark.
Arguments after a bare `--` go to the target unchanged: lockbench's own flags
(`rclify bench -- --help`), or the program benchmark's (`rclify bench memcached -- --help`).
"""

import argparse
import subprocess

from rclify import runtime_build, targets
from rclify.errors import UsageError

TARGETS = ("locks", *targets.TARGETS)
LOCKBENCH = runtime_build.BUILD_DIR / "bench" / "lockbench"


def add_parser(sub):
    p = sub.add_parser(
        "bench",
        help=f"run a benchmark: lock microbenchmark (default) or a program ({', '.join(targets.TARGETS)})",
        description="Run a benchmark. 'locks' (default): the runtime's microbenchmark (ping-pong floor, "
        "RCL round trip, posix vs rcl throughput). A program's name: its benchmark, original against "
        "transformed.",
    )
    p.add_argument("target", nargs="?", default="locks", choices=TARGETS, help="what to benchmark (default: locks)")
    p.add_argument("--duration", type=float, metavar="S", help="seconds per measurement (lockbench default 0.5)")
    p.add_argument("--repeat", type=int, metavar="N", help="measurements per figure, median shown (default 3)")
    p.add_argument("--threads", metavar="LIST", help="client thread counts, e.g. 1,2,4,8")
    p.add_argument("--lines", type=int, metavar="N", help="shared cache lines touched per section (default 4)")
    p.add_argument("--delay", type=int, metavar="N", help="local work between two sections (default 50)")
    p.add_argument("--pin-clients", action="store_true", help="pin clients to CPUs other than the RCL server's")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    return p


def lockbench_argv(args) -> list[str]:
    """The lockbench command line for the parsed arguments."""
    argv = [str(LOCKBENCH)]
    for flag in ("duration", "repeat", "threads", "lines", "delay"):
        value = getattr(args, flag, None)
        if value is not None:
            argv += [f"--{flag}", str(value)]
    if getattr(args, "pin_clients", False):
        argv.append("--pin-clients")
    if getattr(args, "json", False):
        argv.append("--json")
    return argv + list(getattr(args, "passthrough", []) or [])


def build_lockbench() -> None:
    runtime_build.build_runtime()
    runtime_build.make("bench", "the benchmarks", LOCKBENCH)


LOCKBENCH_FLAGS = ("duration", "repeat", "threads", "lines", "delay", "pin_clients", "json")


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


def run(args) -> int:
    if args.target != "locks":
        return int(targets.load(args.target).bench(target_args(args)) or 0)
    build_lockbench()
    return subprocess.run(lockbench_argv(args)).returncode
