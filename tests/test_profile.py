"""The preload profiler and the runtime's profile algorithm, on small lock-heavy programs.

Timing on a shared 2-core machine is noisy: assertions rank locks by large margins only.
"""

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from fifo_reader import read_while

from rclify import cli
from rclify.profiling import profile
from rclify.errors import UsageError
from rclify.paths import RUNTIME_DIR

FIXTURES = Path(__file__).parent / "fixtures" / "profile"
pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None,
                                reason="needs gcc and make")


def compile_c(sources, out, *flags):
    subprocess.run(["gcc", "-g", "-O1", "-pthread", *flags, *map(str, sources), "-o", str(out)], check=True)
    return out


@pytest.fixture(scope="session")
def programs(tmp_path_factory):
    profile.build_profiler()
    d = tmp_path_factory.mktemp("profile-programs")
    return {name: compile_c([FIXTURES / f"{name}.c"], d / name) for name in ("one_hot", "two_hot")}


@pytest.fixture(scope="session")
def one_hot_profile(programs):
    return profile.run([str(programs["one_hot"])])


@pytest.fixture(scope="session")
def two_hot_profile(programs):
    return profile.run([str(programs["two_hot"])])


def by_id(prof):
    return {lock["id"]: lock for lock in prof["locks"]}


def test_hot_lock_ranks_first_and_far_above_the_cold_ones(one_hot_profile):
    locks = one_hot_profile["locks"]
    assert locks[0]["id"] == "one_hot.c:hot_lock"
    assert locks[0]["kind"] == "static" and locks[0]["acquisitions"] == 4 * 20000
    assert all(locks[0]["cs_time_pct"] > 10 * max(l["cs_time_pct"], 0.1) for l in locks[1:])
    assert not one_hot_profile["partial"] and one_hot_profile["threads"] == 5


def test_locks_are_named_by_variable_and_init_site(one_hot_profile):
    locks = by_id(one_hot_profile)
    assert locks["one_hot.c:cold_static"]["kind"] == "static"
    array = next(l for l in locks.values() if l.get("expression") == "&cold_locks[i]")
    assert array["kind"] == "init" and array["id"].startswith("one_hot.c:")
    assert sorted(e["name"] for e in array["elements"]) == [f"cold_locks[{i}]" for i in range(4)]
    assert sum(e["acquisitions"] for e in array["elements"]) == array["acquisitions"]
    heap = next(l for l in locks.values() if l.get("expression") == "stats_lock")
    assert heap["acquisitions"] == 4 and heap["elements"] is None


def test_cache_counters_are_values_or_said_unavailable(one_hot_profile):
    cache = one_hot_profile["cache_counters"]
    if isinstance(cache, str):
        assert cache.startswith("unavailable on this machine")
        assert all(l["cache_misses_per_cs"] is None for l in one_hot_profile["locks"])
    else:
        assert one_hot_profile["locks"][0]["cache_misses_per_cs"]["l1d"] >= 0


def test_nesting_is_observed(two_hot_profile):
    locks = two_hot_profile["locks"]
    outer = next(l for l in locks if l.get("expression") == "&outer")
    inner = next(l for l in locks if l.get("expression") == "&inner")
    assert inner["nested_in"] == [outer["id"]]
    assert outer["nested_in"] == []
    assert by_id(two_hot_profile)["two_hot.c:lock_a"]["nested_in"] == []


def test_crashing_program_keeps_a_partial_profile(programs):
    prof = profile.run([str(programs["one_hot"]), "20000", "crash"])
    assert prof["partial"] and "SIGSEGV" in prof["partial_reason"]
    assert prof["locks"][0]["id"] == "one_hot.c:hot_lock"
    assert prof["locks"][0]["acquisitions"] > 0


def test_killed_program_keeps_its_last_snapshot(programs, tmp_path):
    # the SIGKILL cannot be caught: only the periodic snapshot remains
    prog = compile_c([FIXTURES / "one_hot.c"], tmp_path / "slow")
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/sh\n{prog} 100000000 & sleep 0.5; kill -9 $!; wait\nexit 0\n")
    script.chmod(0o755)
    prof = profile.run([str(script)], interval_ms=100)
    assert prof["partial"]
    assert prof["locks"][0]["id"] == "one_hot.c:hot_lock" and prof["locks"][0]["acquisitions"] > 0


def test_missing_program_is_one_clear_error(capsys):
    assert cli.main(["profile", "-o", "/dev/null", "--", "./no-such-program"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "rclify profile: error: ./no-such-program: program not found"
    with pytest.raises(UsageError, match="not found"):
        profile.run(["no-such-program-on-path"])


def test_statically_linked_program_is_refused(tmp_path):
    src = tmp_path / "s.c"
    src.write_text("int main(void) { return 0; }\n")
    try:
        compile_c([src], tmp_path / "s", "-static")
    except subprocess.CalledProcessError:
        pytest.skip("no static libc here")
    with pytest.raises(UsageError, match="statically linked"):
        profile.run([str(tmp_path / "s")])


def test_truncated_and_foreign_json_are_one_clear_line(one_hot_profile, tmp_path, capsys):
    good = tmp_path / "p.json"
    profile.save(one_hot_profile, good)
    cut = tmp_path / "cut.json"
    cut.write_text(good.read_text()[:300])
    assert cli.main(["report", str(cut)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "malformed JSON" in err and "truncated" in err
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"locks": []}))
    with pytest.raises(UsageError, match="not an rclify profile"):
        profile.load(other)


def test_report_table_and_missing_matplotlib(one_hot_profile, tmp_path, capsys, monkeypatch):
    path = tmp_path / "p.json"
    profile.save(one_hot_profile, path)
    assert cli.main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    rows = [l for l in out.splitlines() if "one_hot.c:" in l]
    assert "hot_lock" in rows[0] and "rcl" in rows[0]
    assert all("posix (cold)" in r for r in rows[1:] if "cold" in r)
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    assert cli.main(["report", str(path), "--png", str(tmp_path / "c.png")]) == 2
    assert f"{sys.executable} -m pip install matplotlib" in capsys.readouterr().err  # this venv's pip


def test_report_chart_is_drawn(one_hot_profile, two_hot_profile, tmp_path):
    pytest.importorskip("matplotlib")
    from rclify.profiling import report

    report.chart([one_hot_profile], tmp_path / "one.png")
    report.chart([one_hot_profile, two_hot_profile], tmp_path / "many.png")
    for png in ("one.png", "many.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_runtime_profile_algorithm_writes_the_same_schema(tmp_path):
    src = RUNTIME_DIR / "src"
    harness = compile_c(
        [FIXTURES / "runtime_harness.c", src / "pthread" / "profile.c"], tmp_path / "harness",
        "-std=gnu11", f"-I{RUNTIME_DIR / 'include'}", f"-I{src}",
    )
    out = tmp_path / "rt.json"
    subprocess.run([str(harness)], check=True, timeout=60, env={"RCLIFY_PROFILE_OUT": str(out)})
    prof = profile.load(out)
    locks = by_id(prof)
    assert prof["source"] == "runtime" and not prof["partial"]
    assert prof["locks"][0]["id"] == "app.c:hot" and locks["app.c:hot"]["acquisitions"] == 60000
    assert locks["app.c:hot"]["cs_time_pct"] > 10 * locks["app.c:outer"]["cs_time_pct"]
    assert len(locks["app.c:arr[]"]["elements"]) == 3
    assert locks["app.c:arr[]"]["nested_in"] == ["app.c:outer"]
    assert locks["app.c:outer"]["acquisitions"] == 3 * 200 + 1  # the condition wait is no new acquisition


def test_runtime_profile_written_to_a_fifo_leaves_the_fifo_in_place(tmp_path):
    """RCLIFY_PROFILE_OUT naming something that is not a regular file (here a FIFO, as /dev/null is a
    device) is written in place: the runtime used to rename its temporary file over it, which as root
    replaced /dev/null with a regular file."""
    src = RUNTIME_DIR / "src"
    harness = compile_c(
        [FIXTURES / "runtime_harness.c", src / "pthread" / "profile.c"], tmp_path / "harness",
        "-std=gnu11", f"-I{RUNTIME_DIR / 'include'}", f"-I{src}",
    )
    fifo = tmp_path / "profile.fifo"
    os.mkfifo(fifo)
    run = lambda: subprocess.run([str(harness)], check=True, timeout=60, env={"RCLIFY_PROFILE_OUT": str(fifo)})
    text = read_while(fifo, run)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert not (tmp_path / "profile.fifo.tmp").exists()
    assert text and "app.c:hot" in {lock["id"] for lock in json.loads(text)["locks"]}


def test_profile_exits_with_the_programs_status_and_keeps_the_profile(programs, tmp_path, capsys):
    out = tmp_path / "p.json"
    assert cli.main(["profile", "-o", str(out), "--", shutil.which("false")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"rclify profile: {shutil.which('false')} exited with status 1; the profile was written to {out}; exit 1"]
    assert profile.load(out)["exit_status"] == "1"
    out.unlink()
    crash = str(programs["one_hot"])
    assert cli.main(["profile", "-o", str(out), "--", crash, "20000", "crash"]) == 128 + 11  # SIGSEGV, as a shell says
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"rclify profile: {crash} was killed by SIGSEGV; the partial profile was written to {out}; exit 139"]
    prof = profile.load(out)
    assert prof["partial"] and prof["locks"][0]["acquisitions"] > 0


def test_profile_output_path_is_checked_before_the_program_runs(tmp_path, capsys):
    marker = tmp_path / "ran"
    assert cli.main(["profile", "-o", str(tmp_path / "no" / "p.json"), "--", "touch", str(marker)]) == 2
    assert capsys.readouterr().err.strip() == f"rclify profile: error: --output {tmp_path / 'no' / 'p.json'}: no such directory: {tmp_path / 'no'}"
    assert not marker.exists()


def test_a_process_that_outlives_the_program_is_waited_for(programs, tmp_path, capsys):
    """The program exits and leaves a process it started running with the profiler (a daemon, a
    server its script starts): rclify waits for it, says so, and its locks are in the profile (its
    temporary folder was removed under it: the profile was lost, or a traceback)."""
    out = tmp_path / "p.json"
    script = f"(sleep 1; exec {programs['one_hot']} 5000) & exit 0"
    assert cli.main(["profile", "-o", str(out), "--", "sh", "-c", script]) == 0
    err = capsys.readouterr().err
    assert "still run with the profiler" in err and "waiting for them to end" in err
    locks = by_id(profile.load(out))
    assert locks["one_hot.c:hot_lock"]["acquisitions"] == 4 * 5000


@pytest.mark.skipif(os.getuid() != 0, reason="making a program set-user-ID to another user needs root")
def test_a_set_user_id_program_is_refused_by_profile_and_run(programs, tmp_path, capsys):
    """The dynamic loader ignores LD_PRELOAD for it: the profile was empty, `rclify run` ran
    nothing interposed, and neither said so."""
    setuid = tmp_path / "one_hot_setuid"
    shutil.copy2(programs["one_hot"], setuid)
    os.chown(setuid, 65534, 65534)  # nobody
    setuid.chmod(0o4755)
    for command in (["profile", "-o", str(tmp_path / "p.json")], ["run", "--locks", "*=mcs"]):
        assert cli.main([*command, "--", str(setuid), "100"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "set-user-ID" in err[0] and "LD_PRELOAD" in err[0], err
    assert not (tmp_path / "p.json").exists()


def test_a_transformed_program_is_refused_and_told_the_right_way(tmp_path, capsys):
    """A program linked with the runtime: the profiler saw the runtime's own mutexes, every lock
    folded into one init site; the runtime's profile lock is the way to profile it."""
    src = RUNTIME_DIR / "src"
    harness = compile_c([FIXTURES / "runtime_harness.c", src / "pthread" / "profile.c"], tmp_path / "harness",
                        "-std=gnu11", f"-I{RUNTIME_DIR / 'include'}", f"-I{src}")
    assert cli.main(["profile", "-o", str(tmp_path / "p.json"), "--", str(harness)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "transformed program" in err[0] and "RCLIFY_LOCKS='*=profile'" in err[0], err
    assert not (tmp_path / "p.json").exists()


def test_the_install_hint_fits_how_rclify_was_installed(monkeypatch):
    """`pip install rclify[chart]` was advised to everyone: a pipx user must inject, a venv's
    user needs that venv's pip, a system Python the Debian package."""
    from rclify.paths import install_hint

    monkeypatch.setattr(sys, "prefix", "/home/u/.local/share/pipx/venvs/rclify")
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    assert install_hint("matplotlib") == "pipx inject rclify matplotlib"
    monkeypatch.setattr(sys, "prefix", "/home/u/.venvs/rclify")
    monkeypatch.setattr(sys, "executable", "/home/u/.venvs/rclify/bin/python")
    assert install_hint("matplotlib") == "/home/u/.venvs/rclify/bin/python -m pip install matplotlib"
    monkeypatch.setattr(sys, "prefix", "/usr")
    assert install_hint("matplotlib") == "apt-get install python3-matplotlib"
