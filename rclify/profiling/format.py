"""profile.json's format: its name and version, and the figures both of its producers compute
the same way (the preload profiler through Python, the runtime's profile algorithm in C)."""

import signal

FORMAT = "rclify-profile"
VERSION = 1
CACHE_EVENTS = ["l1d", "llc"]  # L1D read misses, last-level-cache read misses


def cs_time_pct(counts: dict, total: int) -> float:
    """Share of all threads' time spent waiting for and holding the lock."""
    return round(100.0 * (counts["wait_ns"] + counts["hold_ns"]) / total, 3) if total else 0.0


def status_text(status: int) -> str:
    if status < 0:
        try:
            return signal.Signals(-status).name
        except ValueError:
            return f"signal {-status}"
    return str(status)



def exit_code(status: str) -> int:
    """A profile's exit_status ("0", "3", "SIGSEGV", "signal 40") as a shell reports it: the
    program's own status, or 128 + the signal that killed it."""
    if status.lstrip("-").isdigit():
        return int(status)
    if status.startswith("signal ") and status[7:].isdigit():
        return 128 + int(status[7:])
    try:
        return 128 + signal.Signals[status].value
    except KeyError:
        return 0  # "exit" (runtime mode) or unknown: nothing to report
