"""rclify profile: run an unmodified program under the lock profiler and write profile.json."""

from pathlib import Path
import sys

from rclify import atomic_file
from rclify.profiling import profile
from rclify.profiling.format import exit_code


def add_parser(sub):
    p = sub.add_parser(
        "profile",
        help="run a program under the lock profiler (LD_PRELOAD): time in critical sections per lock",
        description="Runs CMD with the preload profiler and writes per-lock measurements "
        "(docs/profiling.md).  Usage: rclify profile [-o profile.json] -- CMD ARGS...  "
        "Exits with CMD's status (128 + the signal when a signal killed it), after writing the profile.",
    )
    p.add_argument("-o", "--output", type=Path, default=Path("profile.json"), help="where to write (profile.json)")
    p.add_argument(
        "--interval-ms", type=int, default=1000,
        help="snapshot period, so a killed program still leaves a partial profile (0: only at exit)",
    )
    return p


def run(args) -> int:
    if args.output is not None:
        atomic_file.check_writable(args.output, "--output")
    result = profile.run(args.passthrough, interval_ms=args.interval_ms)
    profile.save(result, args.output)
    locks = result["locks"]
    print(f"rclify profile: {len(locks)} lock(s), {result['threads']} thread(s); wrote {args.output}")
    for lock in locks[:3]:
        print(f"  {lock['cs_time_pct']:6.1f}%  {lock['id']}")
    if isinstance(result["cache_counters"], str):
        print(f"  cache misses: {result['cache_counters']}")
    if result["partial"]:
        print(f"  partial profile: {result['partial_reason']}; kept what the program wrote before")
    print(f"  see: rclify report {args.output}")
    status = exit_code(result["exit_status"])
    if status != 0:
        how = f"was killed by {result['exit_status']}" if status > 128 and not result["exit_status"].isdigit() \
            else f"exited with status {status}"
        kept = "partial profile" if result["partial"] else "profile"
        print(f"rclify profile: {args.passthrough[0]} {how}; the {kept} was written to {args.output}; "
              f"exit {status}", file=sys.stderr)
    return status
