"""rclify tune: a contended program transformed and built, tuned with tiny budgets through workloads
that are the program itself or scripts around it.  Nothing here asserts on speed (benchmarks
measure that, docs/benchmarks.md): the tests check what is written, what is kept and why, and
what is refused."""

import json
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from rclify import algorithms, cli, lock_config, runtime_build
from rclify.profiling import bench_results, calibration, measurements, tune, workload_runs

FIXTURE = Path(__file__).parent / "fixtures" / "tune" / "contended.c"
HOT, COLD = "contended.c:hot_lock", "contended.c:cold_lock"
ARGS = ["2000", "4"]  # iterations, workers: a few milliseconds a run


@pytest.fixture(autouse=True)
def no_machine_record(tmp_path, monkeypatch):
    """Candidates in the registry's order: this machine's bench record (if `rclify bench` left one)
    is not read; test_bench_record_orders_the_candidates writes its own."""
    monkeypatch.setenv(calibration.ENV, str(tmp_path / "no-record.json"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The fixture program, transformed (lock_config.h with its two locks) and built on the runtime."""
    runtime_build.build_runtime()
    tree = tmp_path_factory.mktemp("tune") / "tree"
    tree.mkdir()
    shutil.copy(FIXTURE, tree)
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "-j", "1", "-q"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run(["cc", "-O1", "-g", "-pthread", *runtime_build.cflags(), "contended.c", "-o", "prog",
                           *runtime_build.libs()], cwd=tree, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return tree


@pytest.fixture
def tree(built, tmp_path):
    """A fresh copy per test: each test reads what its own tune wrote."""
    copy = tmp_path / "tree"
    shutil.copytree(built, copy)
    return copy


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def entry(tree: Path, lock_id: str) -> lock_config.LockEntry:
    return next(e for e in lock_config.read(tree / "lock_config.h") if e.lock_id == lock_id)


def tune_cli(tree: Path, *options: str, workload: list[str]) -> int:
    """--min-share 0 --max-locks 1: the most contended lock is tuned however short the run was on a
    loaded machine (hot_lock: 8000 acquisitions; cold_lock: 4)."""
    return cli.main(["tune", str(tree), "--rounds", "2", "--budget", "60", "--min-share", "0", "--max-locks", "1",
                     *options, "--", *workload])


def test_writes_lock_config_and_json(tree, tmp_path, capsys):
    record = tmp_path / "tune.json"
    code = tune_cli(tree, "--algorithms", "ttas,mcs", "--json", str(record), workload=[str(tree / "prog"), *ARGS])
    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(record.read_text())
    assert doc["format"] == "rclify-tune" and doc["written"] is True
    assert doc["candidates"] == ["ttas", "mcs"]
    assert doc["profile"].startswith("taken through the workload")
    assert doc["score"] == {"kind": "wall_time", "regex": None, "higher_is_better": False}
    assert len(doc["baseline"]["seconds"]) == 2 and doc["output_judged"] is True
    # the hot lock is the one that matters (cold_lock is taken once per thread)
    assert [l["lock_id"] for l in doc["locks"]] == [HOT]
    hot = doc["locks"][0]
    assert hot["choice"] in ("posix", "ttas", "mcs")
    assert [m["algorithm"] for m in hot["tried"]] == ["ttas", "mcs"]
    for m in hot["tried"]:
        assert m["disqualified"] is None and len(m["ratios"]) == 2, m
        assert m["spread"] == [min(m["ratios"]), max(m["ratios"])]
    assert doc["choices"] == {HOT: hot["choice"]}
    assert doc["RCLIFY_LOCKS"].endswith("*=posix")
    # lock_config.h: the choice, its figures in the comment, the cold lock untouched
    hot_entry = entry(tree, HOT)
    assert hot_entry.algorithm == hot["choice"]
    assert hot_entry.rationale.startswith("tune: ") and hot_entry.rationale.endswith(f"-> {hot['choice']}")
    assert hot_entry.rationale == hot["rationale"]
    if hot["choice"] == "posix":
        assert "no candidate beat posix beyond the spread" in hot_entry.rationale
    else:
        assert f"{hot['ratio']:.3f}x" in hot_entry.rationale and "spread" in hot_entry.rationale
    assert entry(tree, COLD).rationale == "" and entry(tree, COLD).algorithm == "posix"
    assert "contended.c:hot_lock" in out.out and f"wrote {tree / 'lock_config.h'}" in out.out
    assert "lock 1/1: contended.c:hot_lock" in out.err  # progress


def test_posix_kept_when_the_score_does_not_depend_on_the_lock(tree, tmp_path, capsys):
    """A score that is the same under every algorithm: no paired ratio is above 1, posix is kept,
    and that is a result (exit 0), said so."""
    work = script(tmp_path / "work.sh", f'"{tree / "prog"}" {" ".join(ARGS)} || exit 1\necho "score 100"\n')
    record = tmp_path / "tune.json"
    code = tune_cli(tree, "--score", r"score (\d+)", "--higher-is-better", "--algorithms", "ttas,ccsynch",
                    "--json", str(record), workload=[str(work)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "no candidate beat posix beyond the measured spread: posix kept for every lock" in out.out
    doc = json.loads(record.read_text())
    hot = doc["locks"][0]
    assert hot["choice"] == "posix" and hot["ratio"] is None
    assert all(m["ratios"] == [1.0, 1.0] and not m["kept"] for m in hot["tried"])
    assert doc["choices"] == {HOT: "posix"} and doc["RCLIFY_LOCKS"] == "*=posix"
    assert doc["score"]["regex"] == r"score (\d+)" and doc["baseline"]["scores"] == [100.0, 100.0]
    e = entry(tree, HOT)
    assert e.algorithm == "posix"
    assert "no candidate beat posix beyond the spread (best ttas 1.000x" in e.rationale


def test_candidate_with_other_output_or_failure_is_disqualified(tree, tmp_path, capsys):
    """mcs makes the workload print something else, ttas makes it fail: both disqualified, said why;
    the output compared is stdout less the score."""
    work = script(tmp_path / "work.sh", f'''"{tree / "prog"}" {" ".join(ARGS)} || exit 1
case "$RCLIFY_LOCKS" in
  *=mcs*) echo "result 41" ;;
  *=ttas*) echo "broken" >&2; exit 3 ;;
  *) echo "result 42" ;;
esac
echo "took $$ units"
''')
    record = tmp_path / "tune.json"
    code = tune_cli(tree, "--score", r"took (\d+) units", "--algorithms", "mcs,ttas,ticket", "--json", str(record),
                    workload=[str(work)])
    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(record.read_text())
    tried = {m["algorithm"]: m for m in doc["locks"][0]["tried"]}
    assert tried["mcs"]["disqualified"] == "its output differs from posix's: line 2: expected 'result 42', got 'result 41'"
    assert tried["ttas"]["disqualified"] == "exited with status 3 (broken)"
    assert tried["ticket"]["disqualified"] is None  # the score (a pid) differs each run: not compared
    assert doc["output_judged"] is True
    assert "mcs: disqualified: its output differs from posix's" in out.err
    assert doc["locks"][0]["choice"] in ("posix", "ticket")
    assert "2 disqualified" in out.out


def test_check_regex_compares_only_what_it_matches(tree, tmp_path, capsys):
    work = script(tmp_path / "work.sh", f'''"{tree / "prog"}" {" ".join(ARGS)} || exit 1
case "$RCLIFY_LOCKS" in *=mcs*) echo "noise 1" ;; *) echo "noise 2" ;; esac
''')
    record = tmp_path / "tune.json"
    assert tune_cli(tree, "--check", r"sections \d+", "--algorithms", "mcs", "--json", str(record),
                    workload=[str(work)]) == 0
    tried = json.loads(record.read_text())["locks"][0]["tried"]
    assert tried[0]["algorithm"] == "mcs" and tried[0]["disqualified"] is None


def test_given_profile_and_dry_run(tree, tmp_path, capsys):
    prof = tmp_path / "p.json"
    prof.write_text(json.dumps({
        "format": "rclify-profile", "version": 1, "source": "runtime", "program": "prog", "args": [],
        "threads": 5, "wall_ns": 10**9, "total_thread_ns": 10**9, "partial": False, "cache_counters": "n/a",
        "locks": [{"id": COLD, "acquisitions": 10, "contended": 1, "wait_ns": 10**8, "hold_ns": 10**8},
                  {"id": HOT, "acquisitions": 10, "contended": 1, "wait_ns": 10**6, "hold_ns": 0}]}))
    before = (tree / "lock_config.h").read_text()
    record = tmp_path / "tune.json"
    assert tune_cli(tree, "--profile", str(prof), "--min-share", "5", "--algorithms", "ttas", "--dry-run",
                    "--json", str(record), workload=[str(tree / "prog"), *ARGS]) == 0
    doc = json.loads(record.read_text())
    assert doc["profile"] == str(prof) and doc["written"] is False
    assert [l["lock_id"] for l in doc["locks"]] == [COLD]  # 20% of thread time in the given profile
    assert (tree / "lock_config.h").read_text() == before
    assert "dry run" in capsys.readouterr().out


def test_hand_edit_kept(tree, tmp_path, capsys):
    entries = lock_config.read(tree / "lock_config.h")
    for e in entries:
        if e.lock_id == HOT:
            e.algorithm = "clh"
    lock_config.write(tree / "lock_config.h", entries)
    assert tune_cli(tree, "--algorithms", "ttas", workload=[str(tree / "prog"), *ARGS]) == 0
    assert entry(tree, HOT).algorithm == "clh"
    assert "kept your edit (clh)" in capsys.readouterr().out
    assert "hand edit kept (clh)" in entry(tree, HOT).rationale


def _refused(tree, tmp_path, capsys, workload, *options):
    record = tmp_path / "tune.json"
    before = (tree / "lock_config.h").read_text()
    code = tune_cli(tree, "--json", str(record), *options, workload=workload)
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if not l.startswith("[")]  # progress lines of the posix runs
    assert code == 2 and len(lines) == 1, err
    assert not record.exists() and (tree / "lock_config.h").read_text() == before
    assert "lock 1/" not in err  # no search started
    return lines[0]


def test_missing_workload_refused(tree, tmp_path, capsys):
    line = _refused(tree, tmp_path, capsys, [str(tmp_path / "nothing-here")])
    assert line == f"rclify tune: error: {tmp_path / 'nothing-here'}: program not found"


def test_failing_workload_refused(tree, tmp_path, capsys):
    work = script(tmp_path / "fail.sh", "exit 4\n")
    line = _refused(tree, tmp_path, capsys, [str(work)])
    assert line.endswith("exits with status 4 with every lock on posix; it must succeed there first")


def test_workload_without_score_refused(tree, tmp_path, capsys):
    line = _refused(tree, tmp_path, capsys, [str(tree / "prog"), *ARGS], "--score", r"ops/s: (\d+)")
    assert line == ("rclify tune: error: the workload printed nothing matching --score 'ops/s: (\\\\d+)' "
                    "(with every lock on posix)")


def test_tree_without_lock_config_refused(tmp_path, capsys):
    (tmp_path / "plain").mkdir()
    assert cli.main(["tune", str(tmp_path / "plain"), "--", "true"]) == 2
    assert "no such lock configuration" in capsys.readouterr().err


def test_lock_spec_escapes_glob_characters():
    assert workload_runs.lock_spec({}) == "*=posix"
    assert workload_runs.lock_spec({"a.c:locks[]": "mcs", "b.c:x": "posix", "c.c:y": "rcl"}) == \
        r"a.c:locks\[\]=mcs,c.c:y=rcl,*=posix"


def test_kept_only_beyond_the_spread():
    m = measurements.Measurement("mcs", "posix", [1.10, 1.30, 0.98])
    assert not measurements.beats(m, 0.02)  # one round favoured posix
    assert measurements.beats(measurements.Measurement("mcs", "posix", [1.10, 1.30, 1.05]), 0.02)
    assert not measurements.beats(measurements.Measurement("mcs", "posix", [1.01, 1.01, 1.02]), 0.02)  # below min gain
    assert not measurements.beats(measurements.Measurement("mcs", "posix", [2.0, 2.0], disqualified="exited"), 0.02)


def test_candidates_from_the_registry():
    names = tune.candidates()
    assert "posix" not in names and "profile" not in names
    assert set(names) == set(algorithms.names()) - {"posix", "profile"}
    assert tune.candidates("mcs,posix") == ["mcs"]


def test_a_candidate_that_hangs_is_killed_and_disqualified(tree, tmp_path, capsys):
    """The workload's whole process group is killed at --timeout (a shell's child included)."""
    marker = tmp_path / "still-running"
    work = script(tmp_path / "work.sh", f'''case "$RCLIFY_LOCKS" in
  *=mcs*) (sleep 30; touch "{marker}") & wait ;;
esac
"{tree / "prog"}" {" ".join(ARGS)}
''')
    record = tmp_path / "tune.json"
    assert tune_cli(tree, "--algorithms", "mcs", "--timeout", "1", "--json", str(record), workload=[str(work)]) == 0
    tried = json.loads(record.read_text())["locks"][0]["tried"]
    assert tried[0]["disqualified"].startswith("did not finish within 1.")
    assert tried[0]["disqualified"].endswith("s (killed)")
    assert json.loads(record.read_text())["choices"] == {HOT: "posix"}
    assert subprocess.run(["pgrep", "-f", f"touch {marker}"], capture_output=True).returncode == 1


def test_bench_record_orders_the_candidates(tree, tmp_path, capsys, monkeypatch):
    """With this machine's bench record, the candidates the bench ranks highest where the lock is
    are tried first (a short budget measures the likeliest); those it did not measure last."""
    rows = []
    for delay, latency in ((0, 1000.0), (4000, 1000.0)):
        for alg, ratio in (("posix", 1.0), ("mcs", 0.5), ("ttas", 0.9), ("ticket", 1.2)):
            rows.append(bench_results.Row(alg, "execute", 4, delay, 5, 0, 1, 1e6 * ratio, latency, ratio, float(delay)))
    record = tmp_path / "record.json"
    calibration.save(rows, record)
    monkeypatch.setenv(calibration.ENV, str(record))
    out_json = tmp_path / "tune.json"
    assert tune_cli(tree, "--algorithms", "clh,mcs,ttas,ticket", "--json", str(out_json),
                    workload=[str(tree / "prog"), *ARGS]) == 0
    doc = json.loads(out_json.read_text())
    assert [m["algorithm"] for m in doc["locks"][0]["tried"]] == ["ticket", "ttas", "mcs", "clh"]
    assert doc["calibration"] == str(record)
    assert f"candidates in this machine's bench order ({record})" in capsys.readouterr().err


def _chosen_result(choice="mcs"):
    base = measurements.Baseline([workload_runs.Run("*=posix", 0, 0.01, 0.01, "")] * 2, "")
    lock = tune.LockResult(HOT, 40.0, choice=choice,
                           decided_by=measurements.Measurement(choice, "posix", [1.2, 1.3, 1.1], kept=True))
    return tune.Result([lock], base)


@pytest.mark.parametrize("ratios, confirmed", [([1.1, 1.2, 1.05, 1.3, 1.1, 1.2], True),
                                               ([1.1, 1.2, 0.95, 1.3, 1.1, 1.2], False)])
def test_confirmation_against_all_posix(monkeypatch, ratios, confirmed):
    """The chosen set is measured against all-posix in twice a candidate's rounds; one round that
    favours posix puts every lock back on posix, said in its comment."""
    asked = {}

    def measure(workload, reference, candidate, rounds, expected, name, against, progress):
        asked.update(reference=reference, candidate=candidate, rounds=rounds)
        return measurements.Measurement(name, against, ratios)

    monkeypatch.setattr(tune, "measure_pair", measure)
    result = _chosen_result()
    tune.confirm(workload_runs.Workload(["true"]), result, 3, tune.Budget(60), 0.02, lambda m: None)
    assert asked == {"reference": "*=posix", "candidate": r"contended.c:hot_lock=mcs,*=posix", "rounds": 6}
    lock = result.locks[0]
    if confirmed:
        assert lock.choice == "mcs" and "all chosen together 1.150x all-posix (1.050-1.300)" in lock.rationale()
        assert lock.rationale().endswith("-> mcs")
    else:
        assert lock.choice == "posix"
        assert "mcs was kept alone but the chosen set was not confirmed against all-posix" in lock.rationale()
        assert lock.rationale().endswith("-> posix")


def test_no_budget_left_for_the_confirmation_is_said(monkeypatch):
    monkeypatch.setattr(tune, "measure_pair", lambda *a, **k: pytest.fail("no confirmation without budget"))
    result = _chosen_result()
    tune.confirm(workload_runs.Workload(["true"]), result, 3, tune.Budget(0.001), 0.02, lambda m: None)
    assert result.locks[0].choice == "mcs"
    assert "not confirmed against all-posix (no budget left)" in result.locks[0].rationale()


def test_a_ratio_says_its_direction():
    """`rcl 0.013x posix` did not say that it is 77x slower."""
    from rclify.profiling.measurements import speed_text

    assert speed_text(0.013, "posix") == "0.013x the speed of posix, 77x slower"
    assert speed_text(0.5, "posix") == "0.500x the speed of posix, 2.0x slower"
    assert speed_text(1.25, "mcs") == "1.250x the speed of mcs, 1.25x faster"
    assert speed_text(1.0, "posix") == "1.000x the speed of posix, as fast"
