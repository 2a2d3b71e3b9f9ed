"""Progress lines during long steps (issue 36: a 5 MB file took 68 s in spatch and 59 s in the
extraction with nothing printed): a step says how far it is whenever no line was printed for
progress.INTERVAL_S.  The steps are made slow by a clock that jumps (progress._clock), never by
waiting; quiet mode prints none of it."""

import re
import threading
from pathlib import Path

import pytest

from rclify import cli, progress


class JumpingClock:
    """Each reading is `by` seconds after the one before."""

    def __init__(self, by: float):
        self.now, self.by = 0.0, by

    def __call__(self) -> float:
        self.now += self.by
        return self.now


class Lines:
    """An output stream that keeps the lines printed, and can wait for one containing a word."""

    def __init__(self):
        self.lines, self.seen = [], threading.Condition()

    def write(self, text: str) -> None:
        with self.seen:
            self.lines += [line for line in text.splitlines() if line]
            self.seen.notify_all()

    def flush(self) -> None:
        pass

    def wait_for(self, word: str) -> bool:
        with self.seen:  # the timeout only ends a failing test: nothing is asserted about time
            return self.seen.wait_for(lambda: any(word in line for line in self.lines), timeout=120)


def test_a_step_says_how_far_it_is_once_an_interval_has_passed_without_a_line(monkeypatch):
    clock = JumpingClock(by=progress.INTERVAL_S / 4)  # every advance reads it once, the line twice
    monkeypatch.setattr(progress, "_clock", clock)
    monkeypatch.setattr(progress, "_TICK_S", 3600.0)  # the ticker asleep: the lines come from advance()
    out = Lines()
    say = progress.Progress(out=out)
    with progress.step(say, "spatch x.cocci", 8, "files taken up") as step:
        for _ in range(8):
            step.advance()
    counted = [line for line in out.lines if "spatch x.cocci:" in line]
    assert counted, out.lines
    assert len(counted) < 8  # not one per file: one per interval
    done = [int(re.search(r": (\d+) of 8 files taken up \(", line).group(1)) for line in counted]
    assert done == sorted(done) and done[0] >= 1


def test_one_long_item_is_said_by_the_ticker(monkeypatch):
    monkeypatch.setattr(progress, "_clock", JumpingClock(by=progress.INTERVAL_S))
    monkeypatch.setattr(progress, "_TICK_S", 0.01)
    out = Lines()
    with progress.step(progress.Progress(out=out), "extract", 3, "regions planned"):
        assert out.wait_for("extract: 0 of 3 regions planned"), out.lines  # the one file still being read
    with progress.step(progress.Progress(out=out), "call graph"):
        assert out.wait_for("call graph: still running"), out.lines


def test_quiet_prints_no_progress_and_starts_no_ticker(monkeypatch):
    monkeypatch.setattr(progress, "_clock", JumpingClock(by=progress.INTERVAL_S))
    out = Lines()
    with progress.step(progress.Progress(quiet=True, out=out), "spatch x.cocci", 2) as step:
        assert step._ticker is None
        step.advance(2)
    assert out.lines == []


SOURCE = """#include <pthread.h>
static pthread_mutex_t lock_{i} = PTHREAD_MUTEX_INITIALIZER;
static int counter_{i};
void bump_{i}(void)
{{
    pthread_mutex_lock(&lock_{i});
    counter_{i}++;
    pthread_mutex_unlock(&lock_{i});
}}
"""

STEPS = ["spatch pthread_sites.cocci: ", "regions: ", "extract: ", "compile check: "]


def _tree(tmp_path: Path, files: int = 6) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(files):
        (tree / f"unit{i}.c").write_text(SOURCE.format(i=i))
    return tree


def test_transform_says_how_far_each_long_step_is(tmp_path, monkeypatch, capsys):
    """Each step made slow: every reading of the clock is an interval after the one before."""
    monkeypatch.setattr(progress, "_clock", JumpingClock(by=progress.INTERVAL_S))
    tree = _tree(tmp_path)
    assert cli.main(["transform", "--dry-run", str(tree)]) == 0
    err = capsys.readouterr().err.splitlines()
    for name, unit in [("spatch pthread_sites.cocci", "files taken up"), ("regions", "files read"),
                       ("extract", "regions planned"), ("extract", "regions rendered"),
                       ("compile check", "files compiled")]:
        counted = [line for line in err if re.search(rf"\] {re.escape(name)}: \d+ of 6 {unit} \(", line)]
        assert counted, (name, unit, err)
        assert f"{name}: 6 of 6 {unit}" in counted[-1], counted


def test_transform_quiet_prints_no_progress(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(progress, "_clock", JumpingClock(by=progress.INTERVAL_S))
    tree = _tree(tmp_path)
    assert cli.main(["transform", "--dry-run", "-q", str(tree)]) == 0
    assert capsys.readouterr().err == ""
