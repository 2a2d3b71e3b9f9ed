"""Progress lines for long work: one line per step, stamped with the time since the start.

A step that can take long (spatch over many files, libclang, the extraction, the compile check)
runs inside `step()`: it says how far it is (files or regions done of the total) whenever no line
was printed for INTERVAL_S, from the work as it advances and, for one item that takes long alone
(a 5 MB file in spatch: 68 s), from a ticker thread.  Quiet mode prints none of it."""

import sys
import threading
import time
from typing import Callable

INTERVAL_S = 5.0  # a long step says where it is at least this often (issue 36: 68 s said nothing)
_TICK_S = 0.5  # how often the ticker looks at the time since the last line


def _clock() -> float:
    """The time the intervals are measured on (tests replace it: a step made slow without waiting)."""
    return time.monotonic()


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
        self.last_line = _clock()  # when the last line was printed: a step is silent since then
        self._printing = threading.Lock()  # a step beside another (spatch's discovery) prints too

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def __call__(self, message: str) -> None:
        with self._printing:
            self._print(message)

    def _print(self, message: str) -> None:
        self.last_line = _clock()
        if not self.quiet:
            print(f"[{format_seconds(self.elapsed()):>7}] {message}", file=self.out or sys.stderr, flush=True)

    def if_silent(self, message: Callable[[], str]) -> None:
        """Prints message() when no line was printed for INTERVAL_S (two steps, one inside the
        other, print one line between them)."""
        with self._printing:
            if _clock() - self.last_line >= INTERVAL_S:
                self._print(message())


class Step:
    """A long step's progress line: `advance(n)` as items are done; a context manager (the ticker
    thread runs inside it).  total None: the items are not counted, the line says it still runs."""

    def __init__(self, say: Callable[[str], None] | None, what: str, total: int | None, unit: str):
        self.progress = say if isinstance(say, Progress) else \
            Progress(quiet=True) if say is None else Progress(out=_Forward(say))
        self.what, self.total, self.unit = what, total, unit
        self.done = 0
        self.started = _clock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def line(self) -> str:
        took = format_seconds(max(0.0, _clock() - self.started))
        if self.total is None:
            return f"{self.what}: still running ({took})"
        return f"{self.what}: {self.done} of {self.total} {self.unit} ({took})"

    def advance(self, n: int = 1) -> None:
        self.done += n
        self.progress.if_silent(self.line)

    def __enter__(self) -> "Step":
        if not self.progress.quiet:
            self._ticker = threading.Thread(target=self._tick, name=f"progress: {self.what}", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()

    def _tick(self) -> None:
        while not self._stop.wait(_TICK_S):
            self.progress.if_silent(self.line)


def step(say: Callable[[str], None] | None, what: str, total: int | None = None, unit: str = "files") -> Step:
    """A Step printing through say (a Progress, or any function of a line; None: nowhere)."""
    return Step(say, what, total, unit)


class _Forward:
    """A Progress's output handed to a plain function of a line (its time stamp left off)."""

    def __init__(self, say: Callable[[str], None]):
        self.say = say

    def write(self, text: str) -> None:
        line = text.rstrip("\n")
        if line:
            self.say(line.split("] ", 1)[1] if line.startswith("[") else line)

    def flush(self) -> None:
        pass
