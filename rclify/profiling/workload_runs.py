"""Running the user's workload once for `rclify tune` (tune.py).

Every run gets RCLIFY_LOCKS (lock_spec()), so no choice needs a rebuild.  Its score is its wall
time or the number it prints (`--score REGEX`); its output (stdout less the score, or what
`--check REGEX` matches) must not change between algorithms.  speedup() compares two scores:
> 1 means the candidate is better.
"""

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass

from rclify.errors import UsageError


@dataclass
class Workload:
    command: list[str]
    score: re.Pattern | None = None  # None: wall time
    higher_is_better: bool = False
    check: re.Pattern | None = None
    timeout: float | None = None  # per run, set from the baseline

    @property
    def score_name(self) -> str:
        return "wall time" if self.score is None else f"score /{self.score.pattern}/"


@dataclass
class Run:
    spec: str
    returncode: int | None  # None: killed after the timeout
    seconds: float
    score: float | None
    output: str  # what must not change between algorithms
    stderr_tail: str = ""

    @property
    def failure(self) -> str | None:
        if self.returncode is None:
            return f"did not finish within {self.seconds:.1f}s (killed)"
        if self.returncode != 0:
            tail = self.stderr_tail.strip().splitlines()[-1:] or [""]
            return f"exited with status {self.returncode}" + (f" ({tail[0][:160]})" if tail[0] else "")
        if self.score is None:
            return "printed no score"
        return None


_GLOB_SPECIAL = re.compile(r"[*?\[\]\\]")


def _escape(lock_id: str) -> str:
    return _GLOB_SPECIAL.sub(lambda m: "\\" + m.group(0), lock_id)


def lock_spec(choices: dict[str, str]) -> str:
    """RCLIFY_LOCKS for per-lock choices, every other lock on posix.  Lock ids are fnmatch
    patterns there: their *, ?, [ and \\ are escaped."""
    entries = [_escape(lock_id) + "=" + alg for lock_id, alg in sorted(choices.items()) if alg != "posix"]
    return ",".join(entries + ["*=posix"])


def _parse_score(pattern: re.Pattern, text: str) -> float | None:
    """The last match's first group (or the whole match) as a number."""
    found = None
    for m in pattern.finditer(text):
        found = m
    if found is None:
        return None
    value = found.group(1) if found.groups() else found.group(0)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _output_key(workload: Workload, stdout: str) -> str:
    if workload.check is not None:
        return "\n".join(m.group(0) for m in workload.check.finditer(stdout))
    if workload.score is not None:
        return workload.score.sub("", stdout)
    return stdout


def run_once(workload: Workload, spec: str, env_extra: dict | None = None) -> Run:
    env = dict(os.environ, RCLIFY_LOCKS=spec, **(env_extra or {}))
    started = time.monotonic()
    try:
        # a session of its own: a workload that hangs is killed with everything it started
        child = subprocess.Popen(workload.command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, errors="replace", start_new_session=True)
    except OSError as err:
        raise UsageError(f"{workload.command[0]}: cannot run: {err.strerror}") from None
    try:
        stdout, stderr = child.communicate(timeout=workload.timeout)
    except subprocess.TimeoutExpired:
        _kill_group(child)
        _, stderr = child.communicate()
        return Run(spec, None, time.monotonic() - started, None, "", (stderr or "")[-2000:])
    except BaseException:  # interrupted: the workload ends with tune
        _kill_group(child)
        child.wait()
        raise
    proc = subprocess.CompletedProcess(workload.command, child.returncode, stdout, stderr)
    seconds = time.monotonic() - started
    if workload.score is None:
        score = seconds
    else:
        score = _parse_score(workload.score, proc.stdout)
        if score is None:
            score = _parse_score(workload.score, proc.stderr)
    return Run(spec, proc.returncode, seconds, score, _output_key(workload, proc.stdout), proc.stderr[-2000:])


def _kill_group(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def speedup(workload: Workload, reference: float, candidate: float) -> float:
    """> 1: the candidate is better than the reference."""
    if workload.higher_is_better:
        return candidate / reference if reference else float("inf") if candidate > 0 else 1.0
    return reference / candidate if candidate else float("inf")
