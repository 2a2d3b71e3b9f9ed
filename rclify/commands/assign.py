"""rclify assign: choose posix, a combining lock or RCL (and an RCL server) for each lock from a profile."""

import json
import sys
from pathlib import Path

from rclify import atomic_file
from rclify.profiling import assign, lock_id_matching, profile
from rclify.errors import UsageError
from rclify.progress import few


def add_parser(sub):
    p = sub.add_parser(
        "assign",
        help="choose posix / a combining lock / rcl and RCL servers per lock from a profile; update lock_config.h",
        description="Reads profile.json (rclify profile, or a run with RCLIFY_LOCKS='*=profile') and "
        "updates the algorithm, server and rationale of each profiled lock in lock_config.h, keeping "
        "hand edits (an algorithm or server changed since the last assign, any waiting policy).  "
        "Thresholds are fractions of all threads' time in a lock's critical sections: below --lower "
        "posix; above it a combining lock, or RCL above --upper on machines with a core to spare "
        "for its server (3 CPUs or more).  The comment above each lock says why.",
    )
    p.add_argument("profile", type=Path, help="profile.json")
    p.add_argument("--config", type=Path, help="lock_config.h to update (default: ./lock_config.h if present)")
    p.add_argument("--lower", type=float, default=assign.DEFAULT_LOWER, help="below: posix (default 0.15)")
    p.add_argument("--upper", type=float, default=assign.DEFAULT_UPPER, help="above: RCL best of all (default 0.60)")
    p.add_argument("--cpus", type=int, default=None,
                   help="CPUs of the machine the program will run on (default: this machine's)")
    p.add_argument("--max-servers", type=int, default=None, help="RCL servers at most (default: CPUs - 1, at least 1)")
    p.add_argument("--force", action="store_true", help="override hand edits of algorithm/server too")
    p.add_argument("--dry-run", action="store_true", help="show the decisions, write nothing")
    p.add_argument("--calibration", type=Path, metavar="FILE",
                   help="the bench record to calibrate with (default: this machine's, left by `rclify bench`)")
    p.add_argument("--json", type=Path, metavar="FILE",
                   help="also write the decisions as JSON (each lock: its share, verdict, choice, server, rationale)")
    return p


def run(args) -> int:
    assign.check_thresholds(args.lower, args.upper)
    if args.json is not None:
        atomic_file.check_writable(args.json, "--json")  # before any work: one line, nothing written
    prof = profile.load(args.profile)
    config = args.config
    if config is None and Path("lock_config.h").exists():
        config = Path("lock_config.h")
    if config is not None and not config.exists():
        raise UsageError(f"{config}: no such lock configuration (run `rclify transform` first)")
    from rclify import lock_config

    config_ids = [e.lock_id for e in lock_config.read(config)] if config else None
    record, note = _calibration(args)
    decisions, matching = assign.decide(prof, config_ids, args.lower, args.upper, args.max_servers, cpus=args.cpus,
                                        record=record)
    args.calibration_used = str(record.path) if record else None
    print(note)

    if prof.get("partial"):
        print(f"note: {args.profile} is a partial profile ({prof.get('partial_reason')}): figures cover part of the run")
    width = max([len(d.lock_id) for d in decisions] + [4])
    for d in decisions:
        print(f"  {d.lock_id:<{width}}  {d.pct:6.1f}%  {d.verdict.heat:<4}  -> {d.choice}"
              + (f"  (hand edit kept: {d.kept_edit})" if d.kept_edit else ""))
    _warn_unmatched(matching, config, prof)
    if args.dry_run:
        _write_json(args, decisions, matching, config, written=False)
        print(f"dry run: {config or 'no lock_config.h'} not changed")
        return 0
    if config is None:  # asked to write the choices, and nowhere to write them: not a success
        _write_json(args, decisions, matching, config, written=False)
        print("rclify assign: no lock_config.h given (--config) or found in this directory: nothing written "
              "(give --config TREE/lock_config.h; --dry-run only shows the choices)", file=sys.stderr)
        return 1

    entries = assign.write_config(config, decisions, force=args.force)
    _write_json(args, decisions, matching, config, written=True)
    for d in decisions:  # kept edits are only known once the entries were read
        if d.kept_edit:
            print(f"  {d.lock_id}: kept your edit ({d.kept_edit}); assign would choose {d.choice} (--force to apply)")
    unseen = sorted({e.lock_id for e in entries} - {d.lock_id for d in decisions})
    if unseen:
        print(f"not in the profile (never taken during the run?), left as they are: {few(unseen, 6)}")
    print(f"wrote {config}")
    return 0


def _calibration(args) -> tuple:
    """This machine's bench record (or --calibration's), and the line saying what calibrates the
    choices.  A record of a machine with another CPU count than --cpus is not used."""
    from rclify.profiling import calibration

    record = calibration.load(args.calibration) if args.calibration else calibration.find()
    if record is None:
        return None, f"note: choices {assign.UNCALIBRATED}"
    if args.cpus is not None and record.cpus and record.cpus != args.cpus:
        return None, (f"note: choices uncalibrated: the bench record {record.path} is of a {record.cpus}-CPU "
                      f"machine, not --cpus {args.cpus}")
    return record, f"calibrated by the bench record {record.path} ({record.cpus} CPUs, {record.taken})"


def _warn_unmatched(matching: lock_id_matching.Matching, config: Path | None, prof: dict) -> None:
    """One line on stderr listing every profiled lock that the configuration lacks."""
    left = matching.unmatched + matching.ambiguous
    if not left:
        return
    hint = ("preload profiles match lock_config.h ids by variable name; for exact ids profile the transformed "
            "program with RCLIFY_LOCKS='*=profile'") if prof.get("source") != "runtime" else \
        "a profile of another build? run `rclify transform` again, then profile"
    print(f"rclify assign: warning: {len(left)} profiled lock{'s' if len(left) != 1 else ''} not matched to "
          f"{config}, left out: {', '.join(left)} ({hint})", file=sys.stderr)


def _write_json(args, decisions: list, matching: lock_id_matching.Matching, config: Path | None,
                written: bool) -> None:
    """`--json F`: what the lines above say, for a program to read (as `transform --report`)."""
    if args.json is None:
        return
    document = {
        "profile": str(args.profile), "config": str(config) if config else None, "written": written,
        "decisions": [{"lock_id": d.lock_id, "profile_ids": list(d.profile_ids), "cs_time_pct": round(d.pct, 3),
                       "heat": d.verdict.heat, "algorithm": d.verdict.algorithm, "server": d.server,
                       "choice": d.choice, "kept_edit": d.kept_edit, "rationale": d.rationale}
                      for d in decisions],
        "unmatched": list(matching.unmatched), "ambiguous": list(matching.ambiguous),
        "calibration": getattr(args, "calibration_used", None),
    }
    atomic_file.write_text(args.json, json.dumps(document, indent=2) + "\n")
