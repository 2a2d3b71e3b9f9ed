"""Signals that end rclify, and the work that must not be cut in half by one.

install() (the CLI, at start) makes SIGTERM and SIGHUP end rclify the way SIGINT does: each raises
Interrupted (a KeyboardInterrupt) in the main thread, so the same rollbacks and cleanups run
(apply.commit puts the tree back, temporary directories are removed by their `finally`).  Before
raising, the handler ends every process rclify started, and theirs (bear, make, cmake, configure,
spatch and its workers): a process whose parent dies is not told, and would run on as an orphan.

deferred() blocks those signals around a step that must run whole (a rollback, a recovery); one
that arrives meanwhile is delivered when the step is done.

private_tempdir() gives the command one temporary directory of its own (tempfile's default while
it runs): the macro files, header stubs, file lists and scratch copies of every step go there,
and the CLI removes it at the end, whatever the end (an error, a signal); one left by a run that
was SIGKILLed is removed by the next run of the same user.
"""

import contextlib
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """rclify was told to stop by a signal; exit status 128 + its number, as a shell reports it."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _descendants(pid: int) -> list[int]:
    """Every live process below pid (Linux /proc), parents before children."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])  # after "pid (comm) state"
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def end_children(grace: float = 2.0) -> None:
    """SIGTERM to every process rclify started and theirs, then SIGKILL to those still there after
    grace seconds (they are its children: they stay until reaped, so `still there` is read from
    /proc's state, a zombie being gone)."""
    if not os.path.isdir("/proc"):
        return
    victims = _descendants(os.getpid())
    for pid in victims:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while victims and time.monotonic() < deadline:
        victims = [p for p in victims if _alive(p)]
        if victims:
            time.sleep(0.05)
    for pid in victims:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2:stat.rindex(b")") + 3] not in (b"Z", b"X")


def _handler(signum, frame):
    for s in SIGNALS:  # one signal is enough: a second one while cleaning up is ignored
        signal.signal(s, signal.SIG_IGN)
    end_children()
    raise Interrupted(signum)


def install() -> None:
    """From the main thread, once: SIGINT, SIGTERM and SIGHUP all raise Interrupted."""
    for s in SIGNALS:
        if signal.getsignal(s) is not signal.SIG_IGN:  # nohup's SIG_IGN stays
            signal.signal(s, _handler)


@contextlib.contextmanager
def deferred():
    """Blocks SIGINT, SIGTERM and SIGHUP for the block (a signal then waits until it ends)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


_TMP_PREFIX = "rclify-tmp-"


def private_tempdir() -> Path | None:
    """Makes a directory of this process's own the default of tempfile; returns it (None: could not)."""
    base = Path(tempfile.gettempdir())
    for stale in base.glob(f"{_TMP_PREFIX}*-*"):  # left by a run that was killed
        try:
            pid = int(stale.name[len(_TMP_PREFIX):].split("-")[0])
            if stale.stat().st_uid == os.getuid() and not os.path.exists(f"/proc/{pid}"):
                shutil.rmtree(stale, ignore_errors=True)
        except (ValueError, OSError):
            continue
    try:
        path = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{os.getpid()}-", dir=base))
    except OSError:
        return None
    tempfile.tempdir = str(path)
    return path


def remove_tempdir(path: Path | None) -> None:
    if path is not None:
        tempfile.tempdir = None
        shutil.rmtree(path, ignore_errors=True)
