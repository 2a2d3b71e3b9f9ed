#!/usr/bin/env python3
"""`rclify transform`'s speed, this checkout against another revision, side by side in one run.

    .venv/bin/python scripts/bench_transform.py TREE [--base REV] [--rounds N]

TREE is a C tree as a user would give it (configured memcached: work/memcached after
scripts/main.sh, or any tree).  Each round transforms a fresh copy of TREE with --output, once
with the base revision's rclify (a `git worktree` of REV, run through PYTHONPATH with this
checkout's virtual environment) and once with this checkout's, in alternating order, so that the
machine's drift falls on both alike.  It prints each run's wall time, the medians and their ratio,
where the time went (the report's timings, medians), and whether the two outputs are
byte-identical (a restructuring must not change them).  Nothing is asserted: machines are noisy.
"""

import argparse
import filecmp
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--base", default="HEAD~1", help="the revision to compare with (default HEAD~1)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not args.tree.is_dir():
        parser.error(f"{args.tree}: not a directory")
    with tempfile.TemporaryDirectory(prefix="rclify-bench-") as scratch:
        scratch = Path(scratch)
        base = scratch / "base-checkout"
        subprocess.run(["git", "-C", str(CHECKOUT), "worktree", "add", "--detach", str(base), args.base],
                       check=True, capture_output=True)
        try:
            return _compare(args.tree.resolve(), {"base": base, "this": CHECKOUT}, args.rounds, scratch)
        finally:
            subprocess.run(["git", "-C", str(CHECKOUT), "worktree", "remove", "--force", str(base)],
                           capture_output=True)


def _compare(tree: Path, checkouts: dict[str, Path], rounds: int, scratch: Path) -> int:
    walls: dict[str, list[float]] = {name: [] for name in checkouts}
    steps: dict[str, dict[str, list[float]]] = {name: {} for name in checkouts}
    for round_ in range(rounds):
        order = list(checkouts) if round_ % 2 == 0 else list(reversed(checkouts))
        for name in order:
            wall, timings = _transform(checkouts[name], tree, scratch / f"run-{name}")
            walls[name].append(wall)
            for step, seconds in timings.items():
                steps[name].setdefault(step, []).append(seconds)
            print(f"round {round_ + 1} {name:>4}: {wall:6.1f} s", flush=True)
    base, this = (statistics.median(walls[n]) for n in checkouts)
    print(f"\nmedian wall time: base {base:.1f} s, this {this:.1f} s, this/base {this / base:.2f}")
    print(f"{'step (the report timings)':34} {'base':>7} {'this':>7}")
    for step in steps["this"]:
        b, t = (statistics.median(steps[n].get(step, [0.0])) for n in checkouts)
        print(f"{step:34} {b:7.2f} {t:7.2f}")
    same = _same_tree(scratch / "run-base" / "out", scratch / "run-this" / "out")
    print(f"\noutputs byte-identical: {'yes' if same else 'NO'}")
    return 0


def _transform(checkout: Path, tree: Path, work: Path) -> tuple[float, dict[str, float]]:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    copy, report = work / "tree", work / "report.json"
    shutil.copytree(tree, copy, symlinks=True)
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    started = time.monotonic()
    # cwd outside both checkouts: `python -m` puts the current directory before PYTHONPATH
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(copy), "--output", str(work / "out"),
                           "--report", str(report), "--quiet"], env=env, cwd=work, capture_output=True, text=True)
    wall = time.monotonic() - started
    ran = subprocess.run([sys.executable, "-c", "import rclify; print(rclify.__file__)"], env=env, cwd=work,
                         capture_output=True, text=True).stdout.strip()
    if not ran.startswith(str(checkout)):
        sys.exit(f"{checkout}: the rclify run was {ran}, not this checkout's")
    if proc.returncode != 0:
        sys.exit(f"{checkout}: rclify transform failed:\n{proc.stderr[-2000:]}")
    return wall, json.loads(report.read_text()).get("timings", {})


def _same_tree(a: Path, b: Path) -> bool:
    compared = filecmp.dircmp(a, b, ignore=[".rclify"])  # its records name the run's own paths
    return _same(compared)


def _same(compared: filecmp.dircmp) -> bool:
    if compared.left_only or compared.right_only or compared.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(compared.left, compared.right, compared.common_files, shallow=False)
    return not mismatch and not errors and all(_same(sub) for sub in compared.subdirs.values())


if __name__ == "__main__":
    sys.exit(main())
