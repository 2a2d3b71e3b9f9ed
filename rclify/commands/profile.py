"""rclify profile: run an unmodified program under the lock profiler and write profile.json."""

from pathlib import Path

from rclify.profiling import profile


def add_parser(sub):
    p = sub.add_parser(
        "profile",
        help="run a program under the lock profiler (LD_PRELOAD): time in critical sections per lock",
        description="Runs CMD with the preload profiler and writes per-lock measurements "
        "(docs/profiling.md).  Usage: rclify profile [-o profile.json] -- CMD ARGS...",
    )
    p.add_argument("-o", "--output", type=Path, default=Path("profile.json"), help="where to write (profile.json)")
    p.add_argument(
        "--interval-ms", type=int, default=1000,
        help="snapshot period, so a killed program still leaves a partial profile (0: only at exit)",
    )
    return p


def run(args) -> int:
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
    return 0
