"""The machine's own ranking of the lock algorithms, left by `rclify bench`, read by `rclify assign`.

`rclify bench` (lockbench) measures every algorithm's throughput paired with posix's at points of
(threads, delay between sections, shared lines per section).  save() keeps, per point of the main
grid (no context variables, no nesting; the extracted form, `rcl_execute`), each algorithm's ratio
to posix and posix's own share of thread time in the lock at that point:

    share = latency / (latency + delay_ns)

(latency: one section call as its thread sees it, waiting included; delay: the thread's local work
between calls), which is the paper's measure of contention that `rclify profile` reports per lock
(cs_time_pct).  So a profiled lock (its share, the profile's thread count) is placed at the nearest
measured point: the thread count nearest on a log scale, then, for each line count, the delay whose
posix share is nearest the lock's.  figure() gives an algorithm's ratio there (the lowest over the
line counts: a choice must hold for small and large sections), best() the algorithm ranked highest.

One record per machine, in the per-user cache (platformdirs, as the runtime's build), named by the
CPU model and count and the host name; `RCLIFY_CALIBRATION=FILE` names another (tests; a record
carried from another machine).  A later bench replaces the points it measured again and keeps
the others.
"""

import hashlib
import json
import math
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from rclify import atomic_file
from rclify.errors import UsageError

FORMAT, VERSION = "rclify-calibration", 1
ENV = "RCLIFY_CALIBRATION"


def machine_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    return {"cpus": machine_cpus(), "model": cpu_model(), "host": platform.node()}


def default_path() -> Path:
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    m = machine()
    key = hashlib.sha256(f"{m['model']}\n{m['cpus']}\n{m['host']}".encode()).hexdigest()[:12]
    return Path(platformdirs.user_cache_dir("rclify")) / "calibration" / f"machine-{m['cpus']}cpu-{key}.json"


@dataclass(frozen=True)
class Point:
    threads: int
    delay: int
    delay_ns: float
    lines: int
    share: float  # posix's share of thread time in the lock here, 0..1
    ratios: dict  # algorithm -> throughput / posix's, paired (posix: 1)


@dataclass
class Record:
    path: Path
    machine: dict
    taken: str
    points: list[Point]

    @property
    def cpus(self) -> int:
        return int(self.machine.get("cpus") or 0)


@dataclass(frozen=True)
class Figure:
    algorithm: str
    ratio: float
    point: Point
    taken: str

    def text(self) -> str:
        p = self.point
        return (f"{self.algorithm} {self.ratio:.2f}x posix in this machine's bench at {p.threads} thread"
                f"{'s' if p.threads != 1 else ''}, {p.lines} line{'s' if p.lines != 1 else ''}, delay {p.delay} "
                f"(posix {100 * p.share:.0f}% of thread time in the lock; bench of {self.taken})")


def points_from_rows(rows) -> list[Point]:
    """Points of lockbench rows (bench_results.Row): main grid, extracted form, with posix measured."""
    grid = [r for r in rows if r.ctx == 0 and r.nested == 1 and r.form == "execute"]
    by_key: dict[tuple, dict] = {}
    for r in grid:
        by_key.setdefault((r.threads, r.delay, r.lines), {})[r.algorithm] = r
    points = []
    for (threads, delay, lines), series in sorted(by_key.items()):
        posix = series.get("posix")
        if posix is None or len(series) < 2:
            continue
        latency = max(posix.latency_ns, 0.0)
        share = latency / (latency + posix.delay_ns) if latency + posix.delay_ns > 0 else 1.0
        points.append(Point(threads, delay, posix.delay_ns, lines, share,
                            {a: round(s.ratio_to_posix, 4) for a, s in sorted(series.items())}))
    return points


def save(rows, path: Path | None = None) -> Path | None:
    """Merges the points of a bench run into this machine's record; None when the run has no point
    with posix and another algorithm (nothing to rank)."""
    new = points_from_rows(rows)
    if not new:
        return None
    path = path or default_path()
    kept: list[Point] = []
    if path.is_file():
        try:
            old = load(path)
            fresh = {(p.threads, p.delay, p.lines) for p in new}
            kept = [p for p in old.points if (p.threads, p.delay, p.lines) not in fresh]
        except UsageError:
            kept = []  # an unreadable record is replaced
    points = sorted(kept + new, key=lambda p: (p.threads, p.lines, p.delay))
    document = {"format": FORMAT, "version": VERSION, "machine": machine(),
                "taken": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "points": [{"threads": p.threads, "delay": p.delay, "delay_ns": round(p.delay_ns, 1),
                            "lines": p.lines, "posix_share": round(p.share, 4), "ratio_to_posix": p.ratios}
                           for p in points]}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_file.write_text(path, json.dumps(document, indent=1) + "\n")
    return path


def load(path: Path) -> Record:
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise UsageError(f"{path}: no such calibration record (run `rclify bench`)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UsageError(f"{path}: not a calibration record ({err})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise UsageError(f"{path}: not a calibration record of this rclify (format {FORMAT} version {VERSION})")
    try:
        points = [Point(int(p["threads"]), int(p["delay"]), float(p["delay_ns"]), int(p["lines"]),
                        float(p["posix_share"]), {str(a): float(v) for a, v in p["ratio_to_posix"].items()})
                  for p in data["points"]]
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise UsageError(f"{path}: not a valid calibration record (a point lacks {err})") from None
    return Record(Path(path), dict(data.get("machine") or {}), str(data.get("taken", "?")), points)


def find(path: Path | None = None) -> Record | None:
    """This machine's record (or the one at path); None when there is none."""
    path = path or default_path()
    if not path.is_file():
        return None
    return load(path)


def nearest(record: Record, share: float, threads: int) -> list[Point]:
    """The measured points nearest a lock with `share` (0..1) of thread time in its sections and
    `threads` threads: one per line count."""
    counts = sorted({p.threads for p in record.points})
    if not counts:
        return []
    t = min(counts, key=lambda c: (abs(math.log(c) - math.log(max(threads, 1))), -c))
    out = []
    for lines in sorted({p.lines for p in record.points if p.threads == t}):
        at = [p for p in record.points if p.threads == t and p.lines == lines]
        out.append(min(at, key=lambda p: (abs(p.share - share), p.delay)))
    return out


def figure(record: Record, algorithm: str, share: float, threads: int) -> Figure | None:
    """The algorithm's ratio to posix at the nearest points: the lowest over the line counts
    (None when it was not measured there)."""
    found = [Figure(algorithm, p.ratios[algorithm], p, record.taken)
             for p in nearest(record, share, threads) if algorithm in p.ratios]
    return min(found, key=lambda f: f.ratio) if found else None


def best(record: Record, share: float, threads: int, allowed) -> Figure | None:
    """The allowed algorithm ranked highest at the nearest points (by its lowest ratio over the
    line counts), posix included; None when nothing allowed was measured."""
    figures = [f for f in (figure(record, a, share, threads) for a in allowed) if f is not None]
    return max(figures, key=lambda f: (f.ratio, f.algorithm == "posix")) if figures else None
