"""Bad input: one line, exit 2, nothing changed (files outside the tree included); files that are
not plain sources skipped and listed, links kept; the user's own files never lost."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rclify import interrupt

PROGRAM = Path(__file__).resolve().parent.parent / "corpus" / "lockexpr_extern_two_files"


def rclify(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rclify", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def tree_of(tmp_path: Path, name: str = "tree") -> Path:
    tree = tmp_path / name
    tree.mkdir()
    for source in PROGRAM.iterdir():
        (tree / source.name).write_bytes(source.read_bytes())
    return tree


def snapshot(path: Path) -> dict[str, bytes | str | None]:
    """Files' bytes, links' targets, directories (None)."""
    found = {}
    for p in sorted(path.rglob("*")):
        rel = str(p.relative_to(path))
        found[rel] = f"-> {os.readlink(p)}" if p.is_symlink() else p.read_bytes() if p.is_file() else None
    return found


def one_line_error(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


def test_state_naming_a_path_outside_the_tree_is_refused(tmp_path):
    tree = tree_of(tmp_path)
    assert rclify("transform", tree, "-q").returncode == 0
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    state_path = tree / ".rclify" / "state.json"
    state = json.loads(state_path.read_text())
    state["files"].append("../victim")
    state_path.write_text(json.dumps(state))
    (tree / ".rclify" / "backup" / ".." / ".." / ".." / "victim").resolve()  # where a backup would be read
    before = snapshot(tmp_path)
    for command in (["revert", tree], ["revert", "--force", tree], ["transform", tree, "-q"]):
        one_line_error(rclify(*command), "outside", "../victim")
    assert snapshot(tmp_path) == before


def test_the_trees_own_lock_config_is_kept_and_restored(tmp_path):
    tree = tree_of(tmp_path)
    own = b"/* the project's own lock_config.h */\n#define LOCK_TIMEOUT 5\n"
    (tree / "lock_config.h").write_bytes(own)
    before = snapshot(tree)
    proc = rclify("transform", tree)
    assert proc.returncode == 0, proc.stderr
    assert "the tree's own" in proc.stdout + proc.stderr
    assert (tree / ".rclify" / "config.orig").read_bytes() == own
    assert b"RCLIFY_LOCK_CONFIG_H" in (tree / "lock_config.h").read_bytes()
    revert = rclify("revert", tree)
    assert revert.returncode == 0, revert.stderr
    assert snapshot(tree) == before


def test_links_and_special_files_are_skipped_listed_and_kept(tmp_path):
    tree = tree_of(tmp_path)
    outside = tmp_path / "outside.c"
    outside.write_text("int outside;\n")
    os.symlink(outside, tree / "out.c")
    os.symlink(tmp_path / "nothing.c", tree / "broken.c")
    os.symlink("registry.c", tree / "inner.c")
    os.mkfifo(tree / "fifo.c")
    links = {name: os.readlink(tree / name) for name in ("out.c", "broken.c", "inner.c")}
    before, outside_before = snapshot(tree), outside.read_bytes()
    proc = rclify("transform", tree, "-j", "1")
    assert proc.returncode == 0, proc.stderr
    for name in ("out.c", "broken.c", "inner.c", "fifo.c"):
        assert f"left unchanged: {name}: " in proc.stdout, proc.stdout
    assert "rclify_cs_" in (tree / "registry.c").read_text()
    assert {name: os.readlink(tree / name) for name in links} == links
    assert (tree / "fifo.c").is_fifo() and outside.read_bytes() == outside_before
    revert = rclify("revert", tree)
    assert revert.returncode == 0, revert.stderr
    after = snapshot(tree)
    after.pop("lock_config.h")  # kept by revert: it holds the user's choices
    assert after == before


def test_config_outside_the_tree_is_refused_and_in_a_subfolder_works(tmp_path):
    tree = tree_of(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    before = snapshot(tmp_path)
    one_line_error(rclify("transform", tree, "--config", tmp_path / "elsewhere" / "lock_config.h"),
                   "--config", "outside the tree")
    assert snapshot(tmp_path) == before
    (tree / "conf").mkdir()
    proc = rclify("transform", tree, "-q", "--config", tree / "conf" / "lock_config.h")
    assert proc.returncode == 0, proc.stderr
    assert '#include "conf/lock_config.h"' in (tree / "registry.c").read_text()
    assert (tree / "conf" / "lock_config.h").is_file() and not (tree / "lock_config.h").exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_ends_the_commands_children_with_it(tmp_path, sig):
    tree = tree_of(tmp_path)
    # rclify keeps a signal its parent ignores (nohup's SIGHUP: interrupt.install), so the child
    # starts with the default: the test must not depend on how the suite itself was started
    proc = subprocess.Popen([sys.executable, "-m", "rclify", "check", str(tree), "--build", "sleep 300; true",
                             "--test", "true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL))

    def sleepers() -> list[int]:
        return [p for p in interrupt._descendants(proc.pid) if interrupt._alive(p)
                and Path(f"/proc/{p}/comm").read_text().strip() == "sleep"]

    deadline = time.monotonic() + 120
    while not sleepers():  # the tree's build is running, below a shell below rclify
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    started = sleepers()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert err.strip().splitlines()[-1] == f"rclify check: interrupted ({signal.Signals(sig).name})"
    time.sleep(0.2)
    assert not [p for p in started if interrupt._alive(p)]  # no orphan left running


def test_a_hangup_ignored_by_the_parent_stays_ignored(tmp_path):
    """Under nohup (SIGHUP ignored when rclify starts), a hangup does not end the command: only
    the signals it was started listening to do (interrupt.install keeps SIG_IGN)."""
    tree = tree_of(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "rclify", "check", str(tree), "--build", "sleep 300; true",
                             "--test", "true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    deadline = time.monotonic() + 120
    while not [p for p in interrupt._descendants(proc.pid)
               if interrupt._alive(p) and Path(f"/proc/{p}/comm").read_text().strip() == "sleep"]:
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGHUP)
    time.sleep(1)
    assert proc.poll() is None  # still building
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err


def test_check_exits_1_when_the_transform_would_change_the_tree(tmp_path):
    tree = tree_of(tmp_path)
    before = snapshot(tree)
    proc = rclify("transform", tree, "--check", "-q")
    assert proc.returncode == 1, proc.stderr
    assert "would change 3" in proc.stdout and snapshot(tree) == before
    assert rclify("transform", tree, "-q").returncode == 0
    assert rclify("transform", tree, "--check", "-q").returncode == 0  # nothing left to change


def test_a_compile_database_of_the_wrong_shape_is_one_line(tmp_path):
    tree = tree_of(tmp_path)
    for database, error in (('{"file": "main.c"}', "a JSON list of entries expected, found a dict"),
                            ('[{"directory": ".", "command": "cc -c main.c"}]', 'entry 0 has no "file"'),
                            ('[null]', "entry 0 is not an object (null)"),
                            ('[{"file": "main.c", "directory": "."}]', 'has neither "arguments" nor "command"'),
                            (b'\xff\xfe[', "not a readable compile database")):
        path = tree / "compile_commands.json"
        path.write_bytes(database if isinstance(database, bytes) else database.encode())
        before = snapshot(tmp_path)
        one_line_error(rclify("transform", tree, "-q"), "compile_commands.json", error)
        assert snapshot(tmp_path) == before


def test_a_profile_of_binary_bytes_and_a_chart_into_no_directory_are_one_line(tmp_path):
    profile = tmp_path / "profile.json"
    profile.write_bytes(b"\x00\xff\xfe{binary")
    config = tmp_path / "lock_config.h"
    config.write_text("/* nothing */\n")
    before = snapshot(tmp_path)
    one_line_error(rclify("assign", profile, "--config", config), "not UTF-8")
    one_line_error(rclify("report", profile), "not UTF-8")
    profile.write_text('{"format": "rclify-profile", "version": 1, "locks": []}')
    before = snapshot(tmp_path)
    one_line_error(rclify("report", profile, "--png", tmp_path / "missing" / "chart.png"),
                   "--png", "no such directory")
    assert snapshot(tmp_path) == before


def test_no_temporary_file_is_left_behind_by_a_failed_run(tmp_path):
    tree = tree_of(tmp_path)
    (tree / "compile_commands.json").write_text("[null]")  # fails after the macro file is written
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "-q"], capture_output=True,
                          text=True, env={**os.environ, "TMPDIR": str(scratch)}, timeout=600)
    assert proc.returncode == 2, proc.stderr
    assert list(scratch.iterdir()) == []


def test_rclify_locks_naming_no_lock_stops_the_program_at_start_up(tmp_path):
    tree = tree_of(tmp_path)
    assert rclify("transform", tree, "-q").returncode == 0
    cflags, libs = rclify("flags", "--cflags").stdout.split(), rclify("flags", "--libs").stdout.split()
    build = subprocess.run(["gcc", "-O1", "-pthread", "-Wall", "-Wextra", "-Werror", *cflags, "-I.", "main.c",
                            "registry.c", "-o", "prog", *libs], cwd=tree, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    expected = (tree / "expected.txt").read_text()

    def run(locks: str) -> subprocess.CompletedProcess:
        return subprocess.run(["./prog"], cwd=tree, capture_output=True, text=True, timeout=60,
                              env={"RCLIFY_LOCKS": locks})

    typo = run("registry.c:registry_lok=rcl,*=posix")
    assert typo.returncode == 2 and typo.stdout == ""
    assert typo.stderr == ("rclify: RCLIFY_LOCKS: 'registry.c:registry_lok' names no lock of this program "
                           "(its lock ids: registry.c:registry_lock)\n")
    for good in ("registry.c:registry_lock=rcl,*=posix", "registry.c:*=rcl", "*=rcl"):
        assert run(good).stdout == expected, good
