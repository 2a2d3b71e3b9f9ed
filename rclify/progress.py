"""Progress lines for long work: one line per step, stamped with the time since the start."""

import sys
import threading
import time


def few(items: list[str], n: int) -> str:
    """The first n of items for a one-line message, and how many more there are."""
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")


def format_seconds(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


class Progress:
    def __init__(self, quiet: bool = False, out=None):
        self.quiet = quiet
        self.out = out  # None: standard error, looked up at each line (tests capture it)
        self.started = time.monotonic()
        self._printing = threading.Lock()  # a step beside another (spatch's discovery) prints too

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def __call__(self, message: str) -> None:
        if not self.quiet:
            with self._printing:
                print(f"[{format_seconds(self.elapsed()):>7}] {message}", file=self.out or sys.stderr, flush=True)
