"""Measuring for `rclify tune` (tune.py): the baseline (the workload with every lock on posix,
where a bad workload is refused before any search) and a candidate against a reference in
interleaved paired rounds (measure_pair()), kept only beyond the measured spread (beats())."""

import statistics
from dataclasses import dataclass, field

from rclify.errors import UsageError
from rclify.profiling.workload_runs import Run, Workload, lock_spec, run_once, speedup


def speed_text(ratio: float, against: str) -> str:
    """A paired ratio in words: it is a speed-up over `against` (higher is faster), and a ratio
    far below 1 reads better as how many times slower (`rcl 0.013x` is 77x slower)."""
    if ratio >= 1.0005:
        how = f"{ratio:.2f}x faster"
    elif ratio > 0.9995:
        how = "as fast"
    else:
        how = f"{1 / ratio:.{1 if 1 / ratio < 10 else 0}f}x slower" if ratio > 0 else "no run finished"
    return f"{ratio:.3f}x the speed of {against}, {how}"


@dataclass
class Measurement:
    """A candidate against the configuration it is compared with, in paired rounds."""

    algorithm: str
    against: str  # the current best it was compared with
    ratios: list[float] = field(default_factory=list)
    disqualified: str | None = None
    kept: bool = False

    @property
    def median(self) -> float | None:
        return statistics.median(self.ratios) if self.ratios else None

    @property
    def spread(self) -> tuple[float, float] | None:
        return (min(self.ratios), max(self.ratios)) if self.ratios else None

    def text(self) -> str:
        if self.disqualified:
            return f"{self.algorithm}: disqualified, {self.disqualified}"
        lo, hi = self.spread
        return (f"{self.algorithm} {speed_text(self.median, self.against)} ({len(self.ratios)} pairs, "
                f"spread {lo:.3f}-{hi:.3f})")


    def as_json(self) -> dict:
        return {"algorithm": self.algorithm, "against": self.against, "ratios": [round(r, 4) for r in self.ratios],
                "median": None if self.median is None else round(self.median, 4),
                "spread": None if self.spread is None else [round(x, 4) for x in self.spread],
                "disqualified": self.disqualified, "kept": self.kept}


def beats(m: Measurement, min_gain: float) -> bool:
    """Kept only beyond the measured spread: every paired round favours it, the median by min_gain."""
    return (not m.disqualified and bool(m.ratios) and min(m.ratios) > 1.0 and m.median >= 1.0 + min_gain)


def measure_pair(workload: Workload, reference: str, candidate: str, rounds: int, expected_output: str | None,
                 name: str, against: str, progress) -> Measurement:
    """Interleaved rounds: reference then candidate, candidate then reference, ...; one paired
    ratio per round.  The first failure or changed output disqualifies the candidate."""
    m = Measurement(name, against)
    for r in range(rounds):
        order = (reference, candidate) if r % 2 == 0 else (candidate, reference)
        runs = {}
        for spec in order:
            runs[spec] = run_once(workload, spec)
        ref, cand = runs[reference], runs[candidate]
        why = cand.failure
        if why is None and expected_output is not None and cand.output != expected_output:
            why = "its output differs from posix's: " + _first_difference(expected_output, cand.output)
        if why:
            m.disqualified = why
            progress(f"  {name}: disqualified: {why}")
            return m
        if ref.failure:  # the reference failed this once (it passed before): the round does not count
            progress(f"  {against} run failed this round ({ref.failure}): round not counted")
            continue
        m.ratios.append(speedup(workload, ref.score, cand.score))
    return m


def _first_difference(a: str, b: str) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {i + 1}: expected {x[:60]!r}, got {y[:60]!r}"
    return f"{len(la)} lines expected, {len(lb)} printed"


@dataclass
class Baseline:
    runs: list[Run]
    output: str | None  # None: posix's own outputs differ from run to run (exit status judges)

    @property
    def seconds(self) -> float:
        return statistics.median(r.seconds for r in self.runs)

    @property
    def score(self) -> float:
        return statistics.median(r.score for r in self.runs)


def baseline(workload: Workload, rounds: int, progress) -> Baseline:
    """Runs the workload with every lock on posix; a bad workload is a UsageError before any search."""
    runs = []
    for i in range(max(2, rounds)):
        run = run_once(workload, lock_spec({}))
        if run.returncode is None:
            raise UsageError(f"{workload.command[0]}: the workload did not finish within {workload.timeout:.0f}s "
                             "with every lock on posix")
        if run.returncode != 0:
            raise UsageError(f"{' '.join(workload.command)[:200]}: the workload exits with status {run.returncode} "
                             "with every lock on posix; it must succeed there first")
        if run.score is None:
            raise UsageError(f"the workload printed nothing matching --score {workload.score.pattern!r} "
                             "(with every lock on posix)")
        runs.append(run)
        progress(f"posix run {i + 1}: {run.seconds:.2f}s" + ("" if workload.score is None else f", score {run.score:g}"))
    outputs = {r.output for r in runs}
    return Baseline(runs, runs[0].output if len(outputs) == 1 else None)
