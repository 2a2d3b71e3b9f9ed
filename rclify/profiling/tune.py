"""Tuning lock choices with the user's own workload: `rclify tune TREE -- CMD`.

The workload (a benchmark, a test, a script running the transformed, built program) is the judge:
its score is its wall time (lower is better) or a number it prints (`--score REGEX`).  Every run
gets RCLIFY_LOCKS, so no choice needs a rebuild.  The steps, in order:

  1. baseline: the workload with every lock on posix, `rounds` times.  A workload that is missing,
     exits non-zero or prints no score is refused here (UsageError: one line, nothing written).
     Its outputs (stdout less the score, or what `--check REGEX` matches) are compared between
     these runs: when they differ among themselves they cannot judge a candidate, which is then
     judged by its exit status alone (and the result says so).
  2. the locks that matter: those with at least `min_share` percent of thread time in their
     sections in the profile (a runtime-mode profile taken through the workload when none is
     given), at most `max_locks`, the most contended first.
  3. search, one lock at a time (the others at their current best): each candidate algorithm of
     the registry is measured against the current best in `rounds` interleaved pairs (the two
     runs of a pair seconds apart, in alternating order), giving paired ratios; it is kept only
     when every paired ratio favours it (the spread's worse end beats the current best) and the
     median by at least `min_gain`.  A candidate whose run fails, hangs or prints a different
     output is disqualified, and why is recorded.  The search stops when the time budget would
     be exceeded by the next candidate.
  4. confirmation: the chosen configuration against all-posix, interleaved again, in twice as many
     rounds (kept out of the budget once a lock is off posix); if it does not beat posix beyond
     the spread, every lock goes back to posix.

Ratios are speed-ups: > 1 means better than what it is compared with (for wall time, the
baseline's time over the candidate's).  Nothing here asserts anything about speed: a result of
"posix everywhere" is a result, not a failure.

A run of the workload is workload_runs.py's (run_once(), lock_spec()); the baseline and the paired
rounds are measurements.py's (baseline(), measure_pair(), beats()); the choice of locks, the search
and the confirmation are here.
"""

import time
from dataclasses import dataclass, field

from rclify import algorithms
from rclify.profiling.measurements import Baseline, Measurement, beats, measure_pair, speed_text
from rclify.profiling.workload_runs import Workload, lock_spec

NOT_CANDIDATES = ("posix", "profile")  # the baseline itself; a posix lock that measures


@dataclass
class LockResult:
    lock_id: str
    share: float  # percent of thread time in its sections, from the profile
    choice: str = "posix"
    decided_by: Measurement | None = None  # the measurement that kept the choice (against the best then)
    tried: list[Measurement] = field(default_factory=list)
    note: str = ""

    def rationale(self) -> str:
        if self.choice != "posix" and self.decided_by:
            lo, hi = self.decided_by.spread
            return (f"tune: {self.share:.1f}% of thread time in sections; {self.choice} "
                    f"{speed_text(self.decided_by.median, self.decided_by.against)} (paired, median of "
                    f"{len(self.decided_by.ratios)}, spread {lo:.3f}-{hi:.3f}){self.note} -> {self.choice}")
        measured = [m for m in self.tried if not m.disqualified]
        dq = [m for m in self.tried if m.disqualified]
        best = max(measured, key=lambda m: m.median, default=None)
        text = f"tune: {self.share:.1f}% of thread time in sections; "
        if best is None:
            text += "no candidate measured" if not dq else "every candidate measured was disqualified"
        else:
            lo, hi = best.spread
            text += (f"no candidate beat posix beyond the spread (best {best.algorithm} "
                     f"{speed_text(best.median, best.against)}, "

                     f"spread {lo:.3f}-{hi:.3f}; {len(measured)} measured")
            text += f", {len(dq)} disqualified)" if dq else ")"
        return text + f"{self.note} -> posix"

    def as_json(self) -> dict:
        return {"lock_id": self.lock_id, "cs_time_pct": round(self.share, 3), "choice": self.choice,
                "ratio": None if not self.decided_by or self.choice == "posix" else round(self.decided_by.median, 4),
                "spread": None if not self.decided_by or self.choice == "posix"
                else [round(x, 4) for x in self.decided_by.spread],
                "rationale": self.rationale(), "tried": [m.as_json() for m in self.tried]}


class Budget:
    def __init__(self, seconds: float):
        self.seconds = seconds
        self.started = time.monotonic()

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.started)


def candidates(selected: str | None = None) -> list[str]:
    """The registry's algorithms but posix and profile (or those of selected, comma-separated)."""
    known = [n for n in algorithms.names() if n not in NOT_CANDIDATES]
    if not selected:
        return known
    wanted = [s.strip() for s in selected.split(",") if s.strip()]
    for name in wanted:
        algorithms.parse_choice(name, "--algorithms")
    return [n for n in wanted if n not in NOT_CANDIDATES]


def select_locks(prof: dict, config_ids: list[str], min_share: float, max_locks: int) -> tuple[list[tuple[str, float]], list[str]]:
    """(config id, share) of the locks that matter, most contended first; and the profile's ids
    that match no configured lock."""
    from rclify.profiling.lock_id_matching import match_ids

    matching = match_ids(prof, config_ids)
    shares: dict[str, float] = {}
    for lock in prof["locks"]:
        cid = matching.to_config.get(lock["id"])
        if cid:
            shares[cid] = shares.get(cid, 0.0) + lock["cs_time_pct"]
    ranked = sorted(shares.items(), key=lambda kv: (-kv[1], kv[0]))
    picked = [(cid, pct) for cid, pct in ranked if pct >= min_share][:max_locks]
    return [p for p in picked if "," not in p[0]], matching.unmatched + matching.ambiguous


@dataclass
class Result:
    locks: list[LockResult]
    baseline: Baseline
    confirmation: Measurement | None = None
    stopped: str | None = None  # why the search ended early (budget)
    output_judged: bool = True
    elapsed: float = 0.0

    @property
    def choices(self) -> dict[str, str]:
        return {l.lock_id: l.choice for l in self.locks}


def bench_order(names: list[str], record, share_pct: float, threads: int) -> list[str]:
    """The candidates in the order this machine's bench ranks them where the lock is (calibration.py),
    best first, those it did not measure last; `names` as given without a record."""
    if record is None:
        return list(names)
    from rclify.profiling import calibration

    def key(name):
        f = calibration.figure(record, name, share_pct / 100.0, threads)
        return (f is None, -(f.ratio if f else 0.0), names.index(name))

    return sorted(names, key=key)


def search(workload: Workload, locks: list[tuple[str, float]], names: list[str], rounds: int, budget: Budget,
           base: Baseline, min_gain: float, progress, order=None) -> Result:
    """order(lock id, share) -> the candidates for that lock in the order to try them (default: names)."""
    result = Result([LockResult(cid, pct) for cid, pct in locks], base, output_judged=base.output is not None)
    pair_cost = 2 * rounds * max(base.seconds, 0.001) * 1.2  # a candidate's rounds, with some margin
    chosen = {l.lock_id: "posix" for l in result.locks}
    for n, lock in enumerate(result.locks, 1):
        progress(f"lock {n}/{len(result.locks)}: {lock.lock_id} ({lock.share:.1f}% of thread time)")
        for alg in (order(lock.lock_id, lock.share) if order else names):
            # once a lock is off posix, the confirmation's rounds are kept out of the budget
            reserve = confirmation_cost(base, rounds) if any(a != "posix" for a in chosen.values()) else 0.0
            if budget.left() < pair_cost + reserve:
                result.stopped = (f"the budget ran out before {alg} on {lock.lock_id}"
                                  f" ({len(lock.tried)} of {len(names)} candidates measured for it)")
                progress(f"budget: {result.stopped}")
                return result
            reference = lock_spec(chosen)
            trial = lock_spec({**chosen, lock.lock_id: alg})
            m = measure_pair(workload, reference, trial, rounds, base.output, alg, chosen[lock.lock_id], progress)
            lock.tried.append(m)
            if beats(m, min_gain):
                m.kept = True
                chosen[lock.lock_id] = alg
                lock.choice, lock.decided_by = alg, m
            if not m.disqualified:
                progress(f"  {m.text()}" + ("  kept" if m.kept else ""))
    return result


CONFIRMATION_FACTOR = 2  # the confirmation's pairs: twice a candidate's


def confirmation_cost(base: Baseline, rounds: int) -> float:
    return 2 * CONFIRMATION_FACTOR * rounds * max(base.seconds, 0.001) * 1.2


def confirm(workload: Workload, result: Result, rounds: int, budget: Budget, min_gain: float, progress) -> None:
    """The chosen configuration against all-posix, in twice a candidate's rounds: many candidates
    were measured, and one may have passed by chance on a noisy machine (3 pairs all favouring a
    candidate no better than posix: 1 in 8; 6 pairs: 1 in 64).  When it does not beat all-posix
    beyond the spread, every lock goes back to posix (said in each lock's note)."""
    if all(l.choice == "posix" for l in result.locks):
        return
    needed = confirmation_cost(result.baseline, rounds) / 1.2  # reserved with a margin; the runs themselves
    rounds = CONFIRMATION_FACTOR * rounds
    if budget.left() < needed:
        for l in result.locks:
            if l.choice != "posix":
                l.note = "; not confirmed against all-posix (no budget left)"
        return
    spec = lock_spec(result.choices)
    m = measure_pair(workload, lock_spec({}), spec, rounds, result.baseline.output, "chosen", "posix", progress)
    result.confirmation = m
    if beats(m, min_gain):
        m.kept = True
        progress(f"confirmed: {m.text()}")
        for l in result.locks:
            if l.choice != "posix":
                lo, hi = m.spread
                l.note = f"; all chosen together {m.median:.3f}x all-posix ({lo:.3f}-{hi:.3f})"
        return
    progress(f"not confirmed ({m.text()}): every lock back to posix")
    for l in result.locks:
        if l.choice != "posix":
            l.note = (f"; {l.choice} was kept alone but the chosen set was not confirmed against all-posix "
                      f"({m.text()})")
            l.choice = "posix"


def table(result: Result) -> str:
    """What tune prints at the end: per lock its choice, the paired ratio and spread, the tries."""
    width = max([len(l.lock_id) for l in result.locks] + [4])
    lines = [f"  {'lock':<{width}}  {'CS%':>5}  {'choice':<8}  {'ratio':>6}  spread         tried"]
    for l in result.locks:
        measured = sum(1 for m in l.tried if not m.disqualified)
        dq = sum(1 for m in l.tried if m.disqualified)
        if l.choice != "posix" and l.decided_by:
            lo, hi = l.decided_by.spread
            ratio, spread = f"{l.decided_by.median:.3f}", f"{lo:.3f}-{hi:.3f}"
        else:
            ratio, spread = "1", "-"
        lines.append(f"  {l.lock_id:<{width}}  {l.share:5.1f}  {l.choice:<8}  {ratio:>6}  {spread:<13}  "
                     f"{measured} measured" + (f", {dq} disqualified" if dq else ""))
    return "\n".join(lines)
