"""Reading lockbench's CSV files: the ranking table of `rclify bench` and PNG plots after the paper's
figures (Lozi et al., TOCS 2016: Figure 5, throughput and latency against the delay between
sections; Figure 19, against the number of context variables; Figure 21, against nested locks).

lockbench (runtime/bench/lockbench.c) writes one row per measurement:
    algorithm, form, threads, delay, lines, ctx, nested, throughput, latency_ns, ratio_to_posix,
    delay_ns, throughput_best, repeat, duration_s
and one row per algorithm to the memory CSV:
    algorithm, combines, sizeof_mutex, heap_per_lock, bytes_per_lock, retained_after_destroy
"""

import csv
from dataclasses import dataclass
from pathlib import Path

from rclify.errors import RclifyError, ToolMissingError
from rclify.paths import install_hint

COLUMNS = (
    "algorithm", "form", "threads", "delay", "lines", "ctx", "nested", "throughput", "latency_ns",
    "ratio_to_posix", "delay_ns", "throughput_best", "repeat", "duration_s",
)
MEMORY_COLUMNS = ("algorithm", "combines", "sizeof_mutex", "heap_per_lock", "bytes_per_lock", "retained_after_destroy")
RANK_THREADS = (1, 2, 4, 8)  # the ranking: 1, 2, 4 and 8 threads
RANK_LINES = 5  # ... at the highest contention, with 5 shared lines per section


@dataclass(frozen=True)
class Row:
    algorithm: str
    form: str  # "execute" (rcl_execute) or "lock" (rcl_mutex_lock / unlock)
    threads: int
    delay: int  # iterations of local work between two sections
    lines: int
    ctx: int
    nested: int
    throughput: float  # sections per second, all threads
    latency_ns: float
    ratio_to_posix: float
    delay_ns: float

    @property
    def series(self) -> str:
        return self.algorithm if self.form == "execute" else f"{self.algorithm} (lock)"


def read_rows(path: Path) -> list[Row]:
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise RclifyError(f"{path}: not a lockbench CSV (missing columns {', '.join(missing)})")
        return [
            Row(r["algorithm"], r["form"], int(r["threads"]), int(r["delay"]), int(r["lines"]), int(r["ctx"]),
                int(r["nested"]), float(r["throughput"]), float(r["latency_ns"]), float(r["ratio_to_posix"]),
                float(r["delay_ns"]))
            for r in reader
        ]


def read_memory(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def combining_algorithms(memory: list[dict]) -> set[str]:
    return {m["algorithm"] for m in memory if m.get("combines") == "1"}


def _main_grid(rows: list[Row]) -> list[Row]:
    """Rows of the main grid (no context variables, no nesting)."""
    return [r for r in rows if r.ctx == 0 and r.nested == 1]


@dataclass
class Ranking:
    delay: int
    lines: int
    threads: list[int]
    by_threads: dict[int, list[Row]]  # best first


def ranking(rows: list[Row], wanted_threads=RANK_THREADS, lines: int = RANK_LINES) -> Ranking | None:
    """Series ranked by throughput at the highest contention (the smallest delay measured), with
    `lines` lines per section (or the most measured when `lines` was not), at each thread count of
    `wanted_threads` that was measured (every measured one when none was).

    The order is that of the paired ratio to posix (each round's throughput over posix's in the
    same round, median over the rounds), then of the median throughput: on a machine whose speed
    changes from second to second the paired figure is the one that compares like with like."""
    grid = _main_grid(rows)
    if not grid:
        return None
    measured_lines = sorted({r.lines for r in grid})
    if lines not in measured_lines:
        lines = measured_lines[-1]
    delay = min(r.delay for r in grid if r.lines == lines)
    at = [r for r in grid if r.lines == lines and r.delay == delay]
    measured = sorted({r.threads for r in at})
    threads = [t for t in wanted_threads if t in measured] or measured
    by_threads = {t: sorted((r for r in at if r.threads == t), key=lambda r: (-r.ratio_to_posix, -r.throughput))
                  for t in threads}
    return Ranking(delay, lines, threads, by_threads)


def _rate(per_s: float) -> str:
    if per_s >= 1e6:
        return f"{per_s / 1e6:.2f}M"
    if per_s >= 1e3:
        return f"{per_s / 1e3:.1f}k"
    return f"{per_s:.0f}"


def ranking_table(rank: Ranking) -> str:
    """One column per thread count, best first: series, sections/s, ratio to posix."""
    cells = {t: [f"{r.series} {_rate(r.throughput)} {r.ratio_to_posix:.2f}x" for r in rows]
             for t, rows in rank.by_threads.items()}
    width = max([len(c) for col in cells.values() for c in col] + [12]) + 2
    depth = max(len(col) for col in cells.values())
    lines = [
        f"Ranking at the highest contention (delay {rank.delay}), {rank.lines} shared line"
        f"{'s' if rank.lines != 1 else ''} per section: series, sections/s, throughput as a multiple of posix's "
        "(higher is faster; paired, the order)",
        "  #  " + "".join(f"{t} thread{'s' if t != 1 else ''}".ljust(width) for t in rank.threads).rstrip(),
    ]
    for i in range(depth):
        row = "".join((cells[t][i] if i < len(cells[t]) else "").ljust(width) for t in rank.threads)
        lines.append(f"{i + 1:3d}  {row.rstrip()}")
    return "\n".join(lines)


def target_lines(rank: Ranking, combining: set[str], threads: int = 8) -> list[str]:
    """The issue's targets at `threads` threads: the lowest ratio to posix (target >= 0.5) and the
    best combining lock's (target >= 1.3).  Figures only, no verdict beyond the comparison."""
    rows = rank.by_threads.get(threads)
    if not rows:
        return []
    others = [r for r in rows if r.algorithm != "posix"]
    out = []
    if others:
        low = min(others, key=lambda r: r.ratio_to_posix)
        out.append(f"lowest at {threads} threads: {low.series} {low.ratio_to_posix:.2f}x posix's throughput "
                   f"(target >= 0.5x: {'met' if low.ratio_to_posix >= 0.5 else 'missed'})")
    comb = [r for r in rows if r.algorithm in combining]
    if comb:
        best = max(comb, key=lambda r: r.ratio_to_posix)
        out.append(f"best combining lock at {threads} threads: {best.series} {best.ratio_to_posix:.2f}x posix's "
                   f"throughput (target >= 1.3x: {'met' if best.ratio_to_posix >= 1.3 else 'missed'})")
    else:
        out.append("no combining lock measured")
    return out


def memory_table(memory: list[dict]) -> str:
    lines = ["Bytes per lock: sizeof(rcl_mutex_t) + heap (1000 locks initialised and used once)",
             f"  {'algorithm':<12} {'struct':>7} {'heap':>8} {'total':>8} {'after destroy':>14}"]
    for m in memory:
        lines.append(f"  {m['algorithm']:<12} {int(m['sizeof_mutex']):>7} {float(m['heap_per_lock']):>8.1f} "
                     f"{float(m['bytes_per_lock']):>8.1f} {float(m['retained_after_destroy']):>14.1f}")
    return "\n".join(lines)


# ---- plots ----


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ToolMissingError(f"the plots need matplotlib: {install_hint('matplotlib')}") from None
    return plt


def series_styles(series: list[str]) -> dict[str, dict]:
    """posix in thick black (the reference); other algorithms a colour and a marker each; the
    lock/unlock form dashed."""
    import matplotlib

    colors = matplotlib.colormaps["tab20"].colors
    markers = "os^vD<>pPX*h"
    algorithms = sorted({s.split(" ")[0] for s in series} - {"posix"})
    style = {}
    for s in series:
        name = s.split(" ")[0]
        if name == "posix":
            style[s] = {"color": "black", "marker": "o", "linewidth": 2.2, "linestyle": "-"}
            continue
        i = algorithms.index(name)
        style[s] = {"color": colors[(2 * i) % 20 if i < 10 else (2 * i + 1) % 20],
                    "marker": markers[i % len(markers)], "linestyle": "--" if s.endswith("(lock)") else "-"}
    return style


def _positive(values: list[float]) -> list[float]:
    """0 (no section ended in the window) cannot be drawn on a log scale: a gap instead."""
    return [v if v > 0 else float("nan") for v in values]


def _panels(plt, rows: list[Row], x_of, xlabel: str, title: str, png: Path, xscale=None) -> Path:
    """Throughput (top) and latency (bottom) against x, one column per thread count, a line per series."""
    threads = sorted({r.threads for r in rows})
    series = sorted({r.series for r in rows}, key=lambda s: (s.split(" ")[0] != "posix", s))
    style = series_styles(series)
    xs_all = sorted({x_of(r) for r in rows})
    width = 3.4 * len(threads) + 1.8  # inches: the panels, then the legend
    fig, axes = plt.subplots(2, len(threads), figsize=(width, 7), squeeze=False, sharex=True)
    for col, t in enumerate(threads):
        for s in series:
            pts = sorted(((x_of(r), r) for r in rows if r.threads == t and r.series == s), key=lambda p: p[0])
            if not pts:
                continue
            xs = [x for x, _ in pts]
            axes[0][col].plot(xs, _positive([r.throughput for _, r in pts]), label=s, markersize=4, **style[s])
            axes[1][col].plot(xs, _positive([r.latency_ns for _, r in pts]), label=s, markersize=4, **style[s])
        axes[0][col].set_title(f"{t} thread{'s' if t != 1 else ''}")
        for ax in (axes[0][col], axes[1][col]):
            ax.set_yscale("log")
            if xscale:
                xscale(ax)
            ax.set_xticks(xs_all)
            ax.set_xticklabels([f"{x:g}" for x in xs_all], rotation=45, fontsize=7)
            ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("throughput (sections/s)")
    axes[1][0].set_ylabel("latency per section (ns)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", fontsize=8)
    fig.suptitle(title)
    fig.supxlabel(xlabel)
    fig.tight_layout(rect=(0, 0, 1 - 1.6 / width, 1))
    fig.savefig(png, dpi=90)
    plt.close(fig)
    return png


def charts(rows: list[Row], out_dir: Path) -> list[Path]:
    """PNG files in out_dir: fig5_lines<N>.png per line count (against the delay), fig19_ctx.png
    (against context variables) and fig21_nested.png (against nested locks), where measured."""
    plt = _pyplot()
    written = []
    grid = _main_grid(rows)
    for lines in sorted({r.lines for r in grid}):
        at = [r for r in grid if r.lines == lines]
        nonzero = sorted({r.delay_ns for r in at if r.delay_ns > 0})
        linthresh = nonzero[0] if nonzero else 1.0

        def symlog(ax, linthresh=linthresh):
            ax.set_xscale("symlog", linthresh=linthresh)

        written.append(_panels(plt, at, lambda r: round(r.delay_ns), "delay between two sections of a thread (ns; "
                               "0: the highest contention)",
                               f"Throughput and latency against the delay, {lines} shared line"
                               f"{'s' if lines != 1 else ''} per section (after the paper's Figure 5)",
                               out_dir / f"fig5_lines{lines}.png", symlog))
    for column, base, name, xlabel, title in (
        ("ctx", 0, "fig19_ctx.png", "context variables copied into the section",
         "Context variables (after the paper's Figure 19)"),
        ("nested", 1, "fig21_nested.png", "nested locks", "Nested critical sections (after the paper's Figure 21)"),
    ):
        variant = [r for r in rows if getattr(r, column) != base]
        if not variant:
            continue
        delay, lines = variant[0].delay, variant[0].lines
        other = "nested" if column == "ctx" else "ctx"
        other_base = 1 if column == "ctx" else 0
        at = [r for r in rows if r.delay == delay and r.lines == lines and getattr(r, other) == other_base]
        written.append(_panels(plt, at, lambda r, c=column: getattr(r, c), xlabel,
                               f"{title}, delay {delay}, {lines} line{'s' if lines != 1 else ''}", out_dir / name))
    return written
