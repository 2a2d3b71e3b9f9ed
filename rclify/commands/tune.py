"""rclify tune: choose each contended lock's algorithm by measuring the user's own workload."""

import json
import re
import sys
import tempfile
from pathlib import Path

from rclify import atomic_file, lock_config
from rclify.errors import UsageError
from rclify.profiling import assign, calibration, measurements, profile, tune, workload_runs
from rclify.progress import Progress, few

FORMAT = "rclify-tune"


def add_parser(sub):
    p = sub.add_parser(
        "tune",
        help="choose the contended locks' algorithms by measuring your workload (RCLIFY_LOCKS, no rebuild)",
        description="Usage: rclify tune TREE [options] -- CMD ARGS...  CMD runs the transformed, built "
        "program of TREE (a benchmark, a test, a script); its score is its wall time, or a number it prints "
        "(--score).  tune profiles the locks through CMD (or reads --profile), then for each lock that "
        "matters measures the registry's algorithms against the current best (posix first) in interleaved, "
        "paired rounds, and keeps one only when every paired ratio favours it.  It stops at --budget, then "
        "writes TREE/lock_config.h (each entry's ratio and spread in its comment) and, with --json, a "
        "record.  A candidate that fails, hangs or prints another output is disqualified, and why is said. "
        "(docs/profiling.md)",
    )
    p.add_argument("tree", type=Path, help="the transformed tree (its lock_config.h is updated)")
    p.add_argument("--config", type=Path, help="lock_config.h to update (default: TREE/lock_config.h)")
    p.add_argument("--profile", type=Path,
                   help="profile.json to pick the locks from (default: one taken through CMD with "
                   "RCLIFY_LOCKS='*=profile')")
    p.add_argument("--score", metavar="REGEX",
                   help="the score is the number this matches in CMD's stdout (its first group, else the match), "
                   "last match wins; default: CMD's wall time")
    p.add_argument("--higher-is-better", action="store_true", help="with --score: a higher score is better")
    p.add_argument("--check", metavar="REGEX",
                   help="compare only what this matches in stdout between algorithms (default: all of stdout "
                   "but the score)")
    p.add_argument("--budget", type=float, default=300.0, metavar="SECONDS",
                   help="time for the search (default 300); the baseline and profile runs come before it")
    p.add_argument("--rounds", type=int, default=3, help="paired rounds per candidate (default 3, at least 2)")
    p.add_argument("--algorithms", metavar="LIST", help="candidates (default: every registered one but posix, profile)")
    p.add_argument("--min-share", type=float, default=1.0, metavar="PCT",
                   help="locks with at least this percent of thread time in their sections are tuned (default 1)")
    p.add_argument("--max-locks", type=int, default=4, help="tune at most this many locks, most contended first")
    p.add_argument("--min-gain", type=float, default=0.02,
                   help="a candidate's median paired ratio must reach 1 + this (default 0.02), besides every "
                   "round favouring it")
    p.add_argument("--timeout", type=float, metavar="S",
                   help="one run's limit (default: 5x posix's run time, at least 10 s more)")
    p.add_argument("--force", action="store_true", help="override hand edits of lock_config.h too")
    p.add_argument("--dry-run", action="store_true", help="measure and show, write no lock_config.h")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the measurements and choices as JSON")
    return p


def _regex(text: str | None, option: str) -> re.Pattern | None:
    if text is None:
        return None
    try:
        return re.compile(text)
    except re.error as err:
        raise UsageError(f"{option} {text!r}: not a regular expression ({err})") from None


def _check_arguments(args) -> tuple[workload_runs.Workload, Path, list[str]]:
    """Everything that can be refused before a single run: one line, nothing written."""
    if not args.passthrough:
        raise UsageError("give the workload after `--`: rclify tune TREE -- CMD ARGS")
    if not args.tree.is_dir():
        raise UsageError(f"{args.tree}: no such directory")
    config = args.config or args.tree / "lock_config.h"
    if not config.is_file():
        raise UsageError(f"{config}: no such lock configuration (run `rclify transform {args.tree}` first)")
    if args.rounds < 2:
        raise UsageError(f"--rounds must be at least 2, got {args.rounds}")
    if args.budget <= 0:
        raise UsageError(f"--budget must be positive, got {args.budget:g}")
    if args.max_locks < 1:
        raise UsageError(f"--max-locks must be at least 1, got {args.max_locks}")
    if args.higher_is_better and args.score is None:
        raise UsageError("--higher-is-better needs --score (wall time is always lower-is-better)")
    if args.json is not None:
        atomic_file.check_writable(args.json, "--json")
    if args.profile is not None:
        profile.load(args.profile)  # refused now rather than after the baseline
    names = tune.candidates(args.algorithms)
    if not names:
        raise UsageError("--algorithms: no candidate besides posix and profile")
    program = profile.find_program(args.passthrough[0])  # one line when it does not exist
    command = [str(program) if "/" in args.passthrough[0] else args.passthrough[0], *args.passthrough[1:]]
    workload = workload_runs.Workload(command, _regex(args.score, "--score"), args.higher_is_better,
                                      _regex(args.check, "--check"), timeout=args.timeout or 3600.0)
    return workload, config, names


def _runtime_profile(workload: workload_runs.Workload, progress) -> tuple[dict, str]:
    """A runtime-mode profile taken through the workload (lock ids: lock_config.h's)."""
    with tempfile.TemporaryDirectory(prefix="rclify-tune-") as tmp:
        out = Path(tmp) / "profile.json"
        progress("profiling the locks through the workload (RCLIFY_LOCKS='*=profile')")
        run = workload_runs.run_once(workload, "*=profile", {"RCLIFY_PROFILE_OUT": str(out)})
        if run.failure and run.failure != "printed no score":
            raise UsageError(f"the workload {run.failure} under RCLIFY_LOCKS='*=profile'")
        if not out.exists():
            raise UsageError("the workload left no lock profile under RCLIFY_LOCKS='*=profile': does it run the "
                             "transformed program of this tree? (or give --profile)")
        return profile.load(out), "taken through the workload (RCLIFY_LOCKS='*=profile')"


def run(args) -> int:
    workload, config, names = _check_arguments(args)
    entries = lock_config.read(config)
    progress = Progress()

    base = measurements.baseline(workload, args.rounds, progress)  # a failing workload stops here
    if args.timeout is None:
        workload.timeout = max(5 * max(r.seconds for r in base.runs), base.seconds + 10.0)
    if args.profile is not None:
        prof, prof_source = profile.load(args.profile), str(args.profile)
    else:
        prof, prof_source = _runtime_profile(workload, progress)
    locks, unmatched = tune.select_locks(prof, [e.lock_id for e in entries], args.min_share, args.max_locks)
    if unmatched:
        print(f"rclify tune: note: {len(unmatched)} profiled lock(s) not in {config}, left out: "
              f"{few(unmatched, 6)}", file=sys.stderr)
    if base.output is None:
        print("rclify tune: note: the workload's output differs between posix runs: candidates are judged by "
              "their exit status and score only (give --check REGEX to compare a stable part)", file=sys.stderr)

    record = calibration.find()  # this machine's bench: which candidates to try first
    threads = int(prof.get("threads") or 1)
    budget = tune.Budget(args.budget)
    if locks:
        progress(f"{len(locks)} lock(s) to tune, {len(names)} candidate(s) each, {args.rounds} paired rounds, "
                 f"budget {args.budget:g}s; candidates in "
                 + (f"this machine's bench order ({record.path})" if record else "the registry's order (no bench record)"))
        result = tune.search(workload, locks, names, args.rounds, budget, base, args.min_gain, progress,
                             order=lambda lock_id, share: tune.bench_order(names, record, share, threads))
        tune.confirm(workload, result, args.rounds, budget, args.min_gain, progress)
    else:
        result = tune.Result([], base, output_judged=base.output is not None)
    result.elapsed = progress.elapsed()

    print(f"rclify tune: {workload.score_name}, posix median {base.score:g}"
          + ("" if workload.score is None else (" (higher is better)" if workload.higher_is_better
                                                else " (lower is better)")))
    if not locks:
        print(f"no lock has {args.min_share:g}% of thread time or more in its sections: nothing to tune, "
              "posix kept")
    else:
        print(tune.table(result))
        if result.confirmation is not None and not result.confirmation.kept:
            print(f"the chosen set was not confirmed against all-posix ({result.confirmation.text()}): "
                  "posix kept for every lock")
        elif all(l.choice == "posix" for l in result.locks):
            print("no candidate beat posix beyond the measured spread: posix kept for every lock")
    if result.stopped:
        print(f"stopped early: {result.stopped}")

    written, kept_edits = False, []
    if locks and not args.dry_run:
        kept_edits = _write_config(config, entries, result, args.force)
        written = True
        for lock_id, edit in kept_edits:
            print(f"  {lock_id}: kept your edit ({edit}); tune chose {result.choices[lock_id]} (--force to apply)")
        print(f"wrote {config}")
    elif args.dry_run:
        print(f"dry run: {config} not changed")
    if args.json is not None:
        _write_json(args, config, workload, prof_source, result, names, unmatched, written, kept_edits, record)
    return 0


def _write_config(config: Path, entries: list, result: tune.Result, force: bool) -> list[tuple[str, str]]:
    by_id = {l.lock_id: l for l in result.locks}
    kept = []
    for entry in entries:
        lock = by_id.get(entry.lock_id)
        if lock is None:
            continue
        edit = None if force else assign._hand_edit(entry)
        if edit:
            kept.append((entry.lock_id, edit))
            entry.rationale = f"{lock.rationale()}; hand edit kept ({edit})"
            continue
        entry.algorithm, entry.policy = lock.choice, "auto"
        if lock.choice == "rcl":
            entry.server = 0
        entry.rationale = lock.rationale()
    lock_config.write(config, entries)
    return kept


def _write_json(args, config, workload, prof_source, result, names, unmatched, written, kept_edits, record) -> None:
    base = result.baseline
    document = {
        "format": FORMAT, "version": 1,
        "tree": str(args.tree), "config": str(config), "command": workload.command,
        "score": {"kind": "wall_time" if workload.score is None else "regex",
                  "regex": None if workload.score is None else workload.score.pattern,
                  "higher_is_better": workload.higher_is_better},
        "check": None if workload.check is None else workload.check.pattern,
        "output_judged": result.output_judged,
        "budget_s": args.budget, "rounds": args.rounds, "min_gain": args.min_gain, "elapsed_s": round(result.elapsed, 2),
        "candidates": names, "profile": prof_source, "unmatched": unmatched,
        "calibration": str(record.path) if record else None,
        "baseline": {"seconds": [round(r.seconds, 4) for r in base.runs], "scores": [r.score for r in base.runs]},
        "locks": [l.as_json() for l in result.locks],
        "confirmation": result.confirmation.as_json() if result.confirmation else None,
        "stopped": result.stopped,
        "choices": result.choices, "RCLIFY_LOCKS": workload_runs.lock_spec(result.choices),
        "written": written, "kept_edits": [{"lock_id": i, "edit": e} for i, e in kept_edits],
    }
    atomic_file.write_text(args.json, json.dumps(document, indent=2) + "\n")
