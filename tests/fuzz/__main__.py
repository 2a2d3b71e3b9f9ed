"""python -m tests.fuzz [--seed N] [--programs N | --budget SECONDS | --hours H] ... (docs/fuzzing.md)"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from tests.fuzz.campaign import ALGORITHMS, Options, run_campaign
from tests.fuzz.generator import FEATURES, KNOWN_BUGS
from tests.fuzz.torture import SuiteMissing

# The fixed-seed campaign of the test command (tests/test_fuzz_campaign.py).
FIXED = dict(seed=2211, programs=60, batch=30, csmith_share=0.3)
# Known bugs' features, left out of the fixed campaign until fixed (none now); the long mode keeps them.
FIXED_DISABLED = frozenset(KNOWN_BUGS)
# The fixed-seed sample of GCC's torture programs in the test command (one batch: one transform).
TORTURE_SAMPLE = dict(seed=3535, programs=80, batch=80, csmith_share=0.0, torture_share=1.0)


def parse(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--programs", type=int, default=100, help="programs to generate (no budget)")
    ap.add_argument("--budget", type=float, help="run batches until this many seconds are spent")
    ap.add_argument("--hours", type=float, help="the budget in hours")
    ap.add_argument("--batch", type=int, default=40, help="programs per transform run")
    ap.add_argument("--csmith-share", type=float, default=0.3, help="share of Csmith programs (0..1)")
    ap.add_argument("--torture-share", type=float, default=0.0,
                    help="share of GCC torture programs with regions inserted (0..1; csmith + torture <= 1)")
    ap.add_argument("--algorithms", default=",".join(ALGORITHMS))
    ap.add_argument("--disable", default="", help=f"features never generated, comma-separated: {', '.join(FEATURES)}")
    ap.add_argument("--fixed", action="store_true", help="the test command's fixed campaign (known bugs disabled)")
    ap.add_argument("--torture-sample", action="store_true", help="the test command's fixed torture sample")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--reduce", action="store_true", help="reduce differences with cvise into tests/fuzz/findings/")
    ap.add_argument("--reduce-minutes", type=float, default=8.0)
    ap.add_argument("--max-reductions", type=int, default=3, help="distinct signatures reduced per campaign")
    ap.add_argument("--keep", action="store_true", help="keep every batch's build folders")
    ap.add_argument("--json", type=Path, help="write the campaign's summary here")
    ap.add_argument("--nice", type=int, default=10)
    ap.add_argument("--rclify", type=Path, default=None,
                    help="transform with the rclify of this checkout (e.g. an older commit's `git archive`)")
    return ap.parse_args(argv)


def options(args: argparse.Namespace) -> Options:
    disabled = {f for f in args.disable.split(",") if f}
    unknown = disabled - set(FEATURES)
    if unknown:
        raise SystemExit(f"unknown features: {', '.join(sorted(unknown))}")
    if not (0 <= args.csmith_share and 0 <= args.torture_share and args.csmith_share + args.torture_share <= 1):
        raise SystemExit("--csmith-share and --torture-share: each 0..1, together at most 1")
    opts = Options(seed=args.seed, programs=args.programs, batch=args.batch, csmith_share=args.csmith_share,
                   torture_share=args.torture_share,
                   algorithms=tuple(a for a in args.algorithms.split(",") if a), disabled=frozenset(disabled),
                   jobs=args.jobs, reduce=args.reduce, reduce_minutes=args.reduce_minutes,
                   max_reductions=args.max_reductions, keep=args.keep)
    if args.fixed:
        for key, value in FIXED.items():
            setattr(opts, key, value)
        opts.disabled = FIXED_DISABLED | opts.disabled
    if args.torture_sample:
        for key, value in TORTURE_SAMPLE.items():
            setattr(opts, key, value)
    if args.hours is not None:
        opts.budget = args.hours * 3600
    if args.budget is not None:
        opts.budget = args.budget
    if args.work is not None:
        opts.work = args.work
    if args.rclify is not None:
        opts.rclify = args.rclify.resolve()
    return opts


def main(argv=None) -> int:
    args = parse(argv)
    if args.nice:
        os.nice(args.nice)
    opts = options(args)
    print(f"campaign: seed {opts.seed}, {'budget %.0fs' % opts.budget if opts.budget else '%d programs' % opts.programs}, "
          f"batches of {opts.batch}, csmith share {opts.csmith_share}, torture share {opts.torture_share}, algorithms {','.join(opts.algorithms)}, "
          f"disabled: {','.join(sorted(opts.disabled)) or 'none'}", flush=True)
    try:
        stats = run_campaign(opts, log=lambda s: print(s, flush=True))
    except SuiteMissing as err:
        print(f"python -m tests.fuzz: the torture suite: {err}", file=sys.stderr)
        return 2
    summary = stats.summary()
    summary["seed"] = opts.seed
    summary["disabled"] = sorted(opts.disabled)
    summary["algorithms"] = list(opts.algorithms)
    print(json.dumps(summary, indent=1))
    for d in stats.differences:
        print(f"DIFFERENCE {d['batch']}/{d['program']} ({d['source']}) under {d['algorithm']}: "
              f"expected {str(d['expected'])[:200]!r} got {str(d['got'])[:200]!r}")
    for b in stats.transformed_build_failures:
        print(f"TRANSFORMED BUILD FAILED {b['batch']}/{b['program']}: {b['stderr'][-300:]}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    return 1 if stats.differences or stats.transformed_build_failures else 0


if __name__ == "__main__":
    sys.exit(main())
