"""The report of a manycore.sh run: ranking.txt (every thread count measured, 1 and 5 lines) and,
with matplotlib, manycore_lines1.png / manycore_lines5.png (throughput and ratio to posix against
the thread count, one line per series).  Usage: python3 runtime/bench/manycore_report.py OUT
(run from the checkout, or with it on PYTHONPATH: it reads the CSVs with rclify's bench_results)."""

import csv
import sys
from pathlib import Path

from rclify.profiling import bench_results


def rankings(rows) -> str:
    measured = sorted({r.threads for r in rows})
    parts = []
    for lines in sorted({r.lines for r in rows}):
        rank = bench_results.ranking(rows, wanted_threads=measured, lines=lines)
        if rank is not None:
            parts.append(bench_results.ranking_table(rank))
    return "\n\n".join(parts)


def roundtrip(out: Path) -> str:
    path = out / "roundtrip.csv"
    if not path.exists():
        return ""
    row = next(csv.DictReader(path.open()))
    return (f"RCL round trip {row['rcl_roundtrip_ns']} ns (best {row['rcl_roundtrip_best_ns']}), cache-line floor "
            f"{row['pingpong_roundtrip_ns']} ns (best {row['pingpong_roundtrip_best_ns']}): "
            f"{row['rcl_roundtrip_vs_floor']}x the floor (paired, {row['cross_core_pairs']} cross-core pairs); "
            f"posix uncontended lock+unlock {row['posix_uncontended_ns']} ns; {row['cpus']} CPUs")


def memcached_rows(out: Path) -> list[dict]:
    path = out / "memcached.csv"
    if not path.exists():
        return []
    return [r for r in csv.DictReader(path.open()) if r["ops_per_s"]]


def memcached_table(rows: list[dict]) -> str:
    """Median ops/s per (workload, threads, config), and the median of the per-round ratios to the
    original (each round runs every configuration once, one after the other)."""
    if not rows:
        return ""
    import statistics

    lines = ["memcached under memcslap (server threads = clients): median ops/s, x original (paired by round)"]
    for workload in ("set", "get"):
        for threads in sorted({int(r["threads"]) for r in rows}):
            at = [r for r in rows if r["workload"] == workload and int(r["threads"]) == threads]
            original = {r["round"]: float(r["ops_per_s"]) for r in at if r["config"] == "original"}
            cells = []
            for config in dict.fromkeys(r["config"] for r in at):
                mine = [r for r in at if r["config"] == config]
                ratios = [float(r["ops_per_s"]) / original[r["round"]] for r in mine if r["round"] in original]
                cells.append(f"{config} {statistics.median(float(r['ops_per_s']) for r in mine) / 1e3:.1f}k"
                             + (f" {statistics.median(ratios):.2f}x" if ratios else ""))
            lines.append(f"  {workload} {threads:>2} threads: " + ", ".join(cells))
    return "\n".join(lines)


def plots(rows, out: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    written = []
    delay = min(r.delay for r in rows)
    for lines in sorted({r.lines for r in rows}):
        at = [r for r in rows if r.lines == lines and r.delay == delay and r.ctx == 0 and r.nested == 1]
        series = sorted({r.series for r in at})
        styles = bench_results.series_styles(series)  # rclify bench's: posix thick black, the lock form dashed
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 9), sharex=True)
        for s in series:
            pts = sorted((r.threads, r.throughput, r.ratio_to_posix) for r in at if r.series == s)
            top.plot([p[0] for p in pts], [p[1] for p in pts], label=s, **styles[s])
            bottom.plot([p[0] for p in pts], [p[2] for p in pts], label=s, **styles[s])
        counts = sorted({r.threads for r in at})
        bottom.set_xscale("log", base=2)
        bottom.set_xticks(counts, [str(c) for c in counts])
        top.set_yscale("log")
        top.set_ylabel("sections / s")
        bottom.set_yscale("log")
        bottom.set_ylabel("x posix (paired)")
        bottom.set_xlabel("client threads")
        top.set_title(f"highest contention (delay {delay}), {lines} shared line{'s' if lines != 1 else ''} per section")
        top.legend(fontsize=7, ncol=3)
        png = out / f"manycore_lines{lines}.png"
        fig.savefig(png, dpi=90, bbox_inches="tight")
        plt.close(fig)
        written.append(png)
    mc = memcached_rows(out)
    if mc:
        import statistics

        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
        for ax, workload in zip(axes, ("set", "get")):
            at = [r for r in mc if r["workload"] == workload]
            for config in dict.fromkeys(r["config"] for r in at):
                counts = sorted({int(r["threads"]) for r in at if r["config"] == config})
                medians = [statistics.median(float(r["ops_per_s"]) for r in at
                                             if r["config"] == config and int(r["threads"]) == t) for t in counts]
                ax.plot(counts, medians, marker="o", label=config,
                        **({"color": "black", "linewidth": 2.2} if config == "original" else {}))
            ax.set_title(f"memcached {workload}")
            ax.set_xlabel("server threads = memcslap clients")
            ax.set_ylabel("ops / s")
            ax.legend(fontsize=8)
        png = out / "memcached.png"
        fig.savefig(png, dpi=90, bbox_inches="tight")
        plt.close(fig)
        written.append(png)
    return written


def main(out: Path) -> int:
    rows = bench_results.read_rows(out / "lockbench.csv")
    text = "\n\n".join(p for p in (roundtrip(out), rankings(rows), memcached_table(memcached_rows(out))) if p)
    (out / "ranking.txt").write_text(text + "\n")
    print(text)
    pngs = plots(rows, out)
    print("plots: " + (", ".join(str(p) for p in pngs) if pngs else "none (no matplotlib here: run this again "
                                                                      "where it is, on the same CSVs)"))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1])))
