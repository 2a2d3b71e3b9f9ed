"""Reading profiles: a terminal table per profile, and an optional PNG chart."""

from pathlib import Path

from rclify.profiling import assign
from rclify.errors import ToolMissingError
from rclify.paths import install_hint


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.1f}"


def _misses(lock: dict) -> str:
    m = lock.get("cache_misses_per_cs")
    return "/".join(f"{v:g}" for v in m.values()) if m else "-"


def table(profile: dict, lower: float = assign.DEFAULT_LOWER, upper: float = assign.DEFAULT_UPPER,
          elements: int = 3) -> str:
    """The locks sorted by time in critical sections, with a verdict each."""
    args = " ".join(profile.get("args") or [])
    lines = [
        f"{profile.get('path', 'profile')}: {profile.get('program', '?')} {args}".rstrip(),
        f"  {profile.get('threads', '?')} threads, wall {_ms(profile.get('wall_ns', 0))} ms, "
        f"thread time {_ms(profile['total_thread_ns'])} ms, source {profile.get('source', '?')}",
    ]
    cache = profile.get("cache_counters")
    lines.append(f"  cache misses: {cache}" if isinstance(cache, str) else "  cache misses per CS: L1D/LLC")
    if profile.get("partial"):
        lines.append(f"  PARTIAL profile: {profile.get('partial_reason') or 'the run did not finish'}")
    rows = [("lock", "kind", "CS%", "acq", "cont%", "wait ms", "hold ms", "miss/CS", "verdict")]
    for lock in profile["locks"]:
        verdict = assign.classify(lock["cs_time_pct"], lower, upper)
        acq = lock["acquisitions"]
        nested = f" (inside {', '.join(lock['nested_in'][:2])})" if lock.get("nested_in") else ""
        label = f"{lock['id']} {lock['expression']}" if lock.get("expression") else lock["id"]
        rows.append((
            label, lock.get("kind", ""), f"{lock['cs_time_pct']:.1f}", str(acq),
            f"{100.0 * lock['contended'] / acq:.1f}" if acq else "0.0",
            _ms(lock["wait_ns"]), _ms(lock["hold_ns"]), _misses(lock),
            f"{verdict.algorithm} ({verdict.heat}){nested}",
        ))
        for el in (lock.get("elements") or [])[:elements]:
            rows.append((f"  {el['name']}", "", f"{el.get('cs_time_pct', 0):.1f}", str(el["acquisitions"]),
                         "", _ms(el["wait_ns"]), _ms(el["hold_ns"]), "", ""))
        more = len(lock.get("elements") or []) - elements
        if more > 0:
            rows.append((f"  ... {more} more elements", "", "", "", "", "", "", "", ""))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1])]
        cells += [c.rjust(w) for c, w in zip(r[2:8], widths[2:8])]
        cells.append(r[8])
        lines.append("  " + "  ".join(cells).rstrip())
    if not profile["locks"]:
        lines.append("  (no lock was taken)")
    lines.append(
        f"  verdicts: below {lower * 100:g}% of thread time in a lock's sections -> posix; "
        f"above -> rcl (hot above {upper * 100:g}%)"
    )
    return "\n".join(lines)


def chart(profiles: list[dict], png: Path, lower: float = assign.DEFAULT_LOWER,
          upper: float = assign.DEFAULT_UPPER, top: int = 10) -> None:
    """One profile: bars of time in CS per lock.  Several: time in CS per lock against threads."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ToolMissingError(f"the chart needs matplotlib: {install_hint('matplotlib')}") from None
    fig, ax = plt.subplots(figsize=(8, 4.5))
    if len(profiles) == 1:
        locks = profiles[0]["locks"][:top][::-1]
        names = [l["id"] for l in locks]
        values = [l["cs_time_pct"] for l in locks]
        colors = ["#c0392b" if v >= upper * 100 else "#e67e22" if v >= lower * 100 else "#7f8c8d" for v in values]
        ax.barh(names, values, color=colors)
        for y, v in enumerate(values):
            ax.text(v, y, f" {v:.1f}%", va="center", fontsize=8)
        ax.set_xlabel("time in critical sections, acquisition included (% of thread time)")
        for x, label in ((lower, "lower"), (upper, "upper")):
            ax.axvline(x * 100, linestyle="--", color="black", linewidth=0.8)
            ax.text(x * 100, 0.98, f" {label} {x * 100:g}%", fontsize=8, va="top",
                    transform=ax.get_xaxis_transform())
        ax.set_xlim(0, max(values + [upper * 100]) * 1.15)
        ax.set_title(f"{Path(profiles[0].get('program', '')).name}: time in critical sections per lock")
    else:
        ordered = sorted(profiles, key=lambda p: p.get("threads", 0))
        best: dict[str, float] = {}
        for p in ordered:
            for l in p["locks"]:
                best[l["id"]] = max(best.get(l["id"], 0.0), l["cs_time_pct"])
        ids = sorted(best, key=lambda i: -best[i])[:top]
        xs = [p.get("threads", 0) for p in ordered]
        for lock_id in ids:
            ys = [next((l["cs_time_pct"] for l in p["locks"] if l["id"] == lock_id), float("nan")) for p in ordered]
            ax.plot(xs, ys, marker="o", label=lock_id)  # nan: the lock was not seen in that run
        for x in (lower, upper):
            ax.axhline(x * 100, linestyle="--", color="black", linewidth=0.8)
        ax.set_xlabel("threads")
        ax.set_ylabel("time in critical sections (% of thread time)")
        ax.set_xticks(sorted(set(xs)))
        ax.legend(fontsize=8)
        ax.set_title("time in critical sections per lock")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
