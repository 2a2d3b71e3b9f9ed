"""rclify check: build a tree with its own build system against the runtime and run its test suite
once per lock assignment; exit 1 when a test run fails, 2 when the tree cannot be built."""

import json
from pathlib import Path

from rclify import atomic_file, check
from rclify.commands import positive_int


def add_parser(sub):
    p = sub.add_parser(
        "check",
        help="build a (transformed) tree and run its test suite under each lock assignment",
        description=(
            "Builds SRC with its own build system (autotools, CMake or a Makefile; the choice is recorded "
            f"in SRC/{check.CONFIG_FILE}) using the runtime's flags, then runs its tests once per --locks "
            "assignment and prints a table.  Logs are kept in SRC/.rclify/logs/."
        ),
    )
    p.add_argument("src", type=Path, metavar="SRC", help="root of the source tree")
    p.add_argument("--build", metavar="CMD",
                   help="shell command that builds the tree (overrides detection); it finds the runtime's "
                   "compiler flags in $RCLIFY_CFLAGS, its link flags in $RCLIFY_LIBS and the job count in "
                   "$RCLIFY_JOBS, e.g. './configure CFLAGS=\"-O2 $RCLIFY_CFLAGS\" LIBS=\"$RCLIFY_LIBS\" && "
                   "make -j$RCLIFY_JOBS'")
    p.add_argument("--test", metavar="CMD",
                   help="shell command that runs the test suite (overrides detection; RCLIFY_LOCKS is set for it)")
    p.add_argument(
        "--locks", metavar="SPEC", action="append",
        help=f"an RCLIFY_LOCKS value to test under, repeatable; '{check.NO_OVERRIDE}' means lock_config.h "
        f"as written (default: {' '.join(check.DEFAULT_LOCKS)})",
    )
    p.add_argument(
        "--timeout", metavar="SECONDS", type=float,
        help=f"limit for the build and for each test run (default: {check.DEFAULT_TIMEOUT:.0f})",
    )
    p.add_argument("-j", "--jobs", metavar="N", type=positive_int, help="parallel build jobs (default: number of CPUs)")
    p.add_argument("--json", type=Path, metavar="FILE",
                   help="also write the results as JSON: the plan, the build and each test run")
    return p


def run(args) -> int:
    if args.json is not None:
        atomic_file.check_writable(args.json, "--json")  # before the build: one line, nothing run
    report = check.run_check(
        args.src, build=args.build, test=args.test, locks=args.locks, timeout=args.timeout, jobs=args.jobs
    )
    if args.json is not None:
        atomic_file.write_text(args.json, json.dumps(report.to_json(), indent=2) + "\n")
    return 0 if report.ok else 1
