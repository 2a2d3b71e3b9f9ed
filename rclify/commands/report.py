"""rclify report: profiles as a table sorted by time in critical sections, and an optional chart."""

from pathlib import Path

from rclify import atomic_file
from rclify.profiling import assign, profile, report


def add_parser(sub):
    p = sub.add_parser(
        "report",
        help="show profiles: locks by time in critical sections, with a posix/rcl verdict each",
    )
    p.add_argument("profiles", type=Path, nargs="+", metavar="profile.json")
    p.add_argument("--png", type=Path, help="also draw a chart (needs matplotlib: rclify's chart extra); "
                   "with several profiles, x-axis = threads")
    p.add_argument("--lower", type=float, default=assign.DEFAULT_LOWER, help="verdict threshold (default 0.15)")
    p.add_argument("--upper", type=float, default=assign.DEFAULT_UPPER, help="verdict threshold (default 0.60)")
    p.add_argument("--elements", type=int, default=3, help="elements shown per array of locks (default 3)")
    return p


def run(args) -> int:
    assign.check_thresholds(args.lower, args.upper)
    if args.png:
        atomic_file.check_writable(args.png, "--png")  # before any work: one line, nothing written
    profiles = [profile.load(path) for path in args.profiles]
    print("\n\n".join(report.table(p, args.lower, args.upper, args.elements) for p in profiles))
    if args.png:
        report.chart(profiles, args.png, args.lower, args.upper)
        print(f"chart: {args.png}")
    return 0
