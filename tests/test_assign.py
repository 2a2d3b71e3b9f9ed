"""rclify assign: thresholds, servers, id matching, lock_config.h updates with hand edits kept."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from rclify import algorithms, cli, lock_config
from rclify.profiling import assign, bench_results, calibration, profile
from rclify.errors import UsageError
from rclify.lock_config import LockEntry

FIXTURES = Path(__file__).parent / "fixtures" / "profile"


def lock(lock_id, pct, nested_in=(), **extra):
    total = 10**9
    ns = int(pct / 100 * total)
    return {"id": lock_id, "acquisitions": 1000, "contended": 100, "wait_ns": ns // 2, "hold_ns": ns - ns // 2,
            "nested_in": list(nested_in), **extra}


def make_profile(tmp_path, locks, source="runtime", name="p.json"):
    data = {"format": "rclify-profile", "version": 1, "source": source, "program": "/bin/app", "args": [],
            "threads": 4, "wall_ns": 10**9, "total_thread_ns": 10**9, "partial": False,
            "cache_counters": "unavailable on this machine (test)", "locks": locks}
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def choices(decisions):
    return {d.lock_id: (d.verdict.algorithm, d.server) for d in decisions}


# Machines and runtimes of the decisions, given explicitly so that no test depends on the CPUs of
# the machine running it, nor on whether the combining lock (assign.COMBINING) is registered yet.
BIG = 16  # CPUs: a core to spare for each RCL server
RCL_ONLY = ("posix", "rcl", "profile")  # a runtime without the combining lock: contended locks go to RCL
WITH_COMBINING = ("posix", "rcl", "profile", assign.COMBINING)


def registry(monkeypatch, with_combining: bool):
    """Makes the registry (rclify.algorithms.load) hold the combining lock, or not, whatever this
    checkout's algorithms.def says: for the tests that go through the CLI, which reads the registry.
    Only the names matter here (lock_config.h entries name algorithms; nothing is compiled)."""
    real = tuple(a for a in algorithms.load() if a.name != assign.COMBINING)
    extra = (algorithms.Algorithm(assign.COMBINING.upper(), assign.COMBINING, "combining lock (test registry)",
                                  len(real) + 1),) if with_combining else ()
    monkeypatch.setattr(algorithms, "load", lambda path=algorithms.REGISTRY: real + extra)


@pytest.fixture(autouse=True)
def no_machine_record(tmp_path, monkeypatch):
    """No test reads this machine's bench record (rclify bench leaves one): only the records the
    tests write (calibration.ENV names the record's file)."""
    monkeypatch.setenv(calibration.ENV, str(tmp_path / "no-record.json"))


# two independent hot locks, a nested pair (hot outer, warm inner), two cold locks
LOCKS = [lock("a.c:hot1", 70), lock("a.c:hot2", 65), lock("a.c:outer", 30), lock("a.c:inner", 20, ["a.c:outer"]),
         lock("a.c:cold1", 2), lock("a.c:cold2", 0.1, ["a.c:outer"])]


def test_thresholds_and_servers(tmp_path):
    prof = profile.load(make_profile(tmp_path, LOCKS))
    decisions, _ = assign.decide(prof, None, max_servers=3, cpus=BIG, available=RCL_ONLY)
    got = choices(decisions)
    assert got["a.c:cold1"] == ("posix", None) and got["a.c:cold2"] == ("posix", None)
    assert {got[k][0] for k in ("a.c:hot1", "a.c:hot2", "a.c:outer", "a.c:inner")} == {"rcl"}
    assert got["a.c:outer"][1] == got["a.c:inner"][1]  # nested pair: one server
    assert len({got["a.c:hot1"][1], got["a.c:hot2"][1], got["a.c:outer"][1]}) == 3
    heat = {d.lock_id: d.verdict.heat for d in decisions}
    assert heat["a.c:hot1"] == "hot" and heat["a.c:outer"] == "warm" and heat["a.c:cold1"] == "cold"


def test_never_more_servers_than_useful_or_allowed(tmp_path):
    prof = profile.load(make_profile(tmp_path, LOCKS))
    servers = {d.server for d in assign.decide(prof, None, max_servers=8, cpus=BIG, available=RCL_ONLY)[0]
               if d.server is not None}
    assert servers == {0, 1, 2}  # three independent groups: three servers, not eight
    two, _ = assign.decide(prof, None, max_servers=2, cpus=BIG, available=RCL_ONLY)
    got = choices(two)
    assert {s for _, s in got.values() if s is not None} == {0, 1}
    assert got["a.c:hot1"][1] != got["a.c:hot2"][1]  # the two heaviest independent locks apart
    assert got["a.c:outer"][1] == got["a.c:inner"][1]
    one, _ = assign.decide(prof, None, max_servers=1, cpus=BIG, available=RCL_ONLY)
    assert {d.server for d in one if d.server is not None} == {0}
    assert assign.default_max_servers() >= 1


@pytest.mark.parametrize("lower,upper", [(-0.1, 0.6), (0.7, 0.6), (0.15, 1.5)])
def test_thresholds_out_of_range(tmp_path, capsys, lower, upper):
    path = make_profile(tmp_path, LOCKS)
    assert cli.main(["assign", str(path), "--lower", str(lower), "--upper", str(upper)]) == 2
    assert "thresholds out of range" in capsys.readouterr().err
    with pytest.raises(UsageError, match="0 <= lower <= upper <= 1"):
        assign.check_thresholds(lower, upper)


def test_profile_of_another_program_is_refused_with_examples(tmp_path, capsys):
    path = make_profile(tmp_path, LOCKS)
    config = tmp_path / "lock_config.h"
    lock_config.write(config, [LockEntry("b.c:x"), LockEntry("b.c:y")])
    before = config.read_bytes()
    assert cli.main(["assign", str(path), "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "none of its 6 locks is in the lock configuration" in err and "a.c:hot2" in err
    assert err.count("\n") == 1
    assert config.read_bytes() == before


def test_locks_missing_from_the_config_are_left_out_with_a_warning(tmp_path, capsys):
    path = make_profile(tmp_path, [*LOCKS, lock("(anonymous)", 40)])
    config = tmp_path / "lock_config.h"
    lock_config.write(config, [LockEntry("b.c:x"), LockEntry("a.c:hot1"), LockEntry("a.c:cold1")])
    assert cli.main(["assign", str(path), "--config", str(config), "--cpus", str(BIG)]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"rclify assign: warning: 5 profiled locks not matched to {config}, left out: a.c:hot2, (anonymous), "
        "a.c:outer, a.c:inner, a.c:cold2 (a profile of another build? run `rclify transform` again, then profile)"
    ]
    entries = {e.lock_id: e for e in lock_config.read(config)}
    assert entries["a.c:hot1"].algorithm == "rcl" and "70.0% of thread time" in entries["a.c:hot1"].rationale
    assert entries["a.c:cold1"].algorithm == "posix" and entries["a.c:cold1"].rationale
    assert entries["b.c:x"].rationale == ""  # not in the profile: left as it was
    assert f"wrote {config}" in out


def test_config_updated_hand_edits_kept(tmp_path, capsys):
    path = make_profile(tmp_path, LOCKS)
    config = tmp_path / "lock_config.h"
    ids = [l["id"] for l in LOCKS] + ["a.c:never_used"]
    lock_config.write(config, [LockEntry(i, description="from transform") for i in ids])
    assert cli.main(["assign", str(path), "--config", str(config), "--max-servers", "3", "--cpus", str(BIG)]) == 0
    entries = {e.lock_id: e for e in lock_config.read(config)}
    assert entries["a.c:hot1"].algorithm == "rcl" and entries["a.c:cold1"].algorithm == "posix"
    assert "70.0% of thread time" in entries["a.c:hot1"].rationale
    assert entries["a.c:hot1"].description == "from transform"
    assert entries["a.c:never_used"].rationale == ""
    # the user moves hot2 to posix and pins hot1's cpu; a new assign keeps both edits
    text = config.read_text().replace('"a.c:hot2", RCL_ALG_RCL', '"a.c:hot2", RCL_ALG_POSIX')
    hot1 = entries["a.c:hot1"]
    text = text.replace(f'"a.c:hot1", RCL_ALG_RCL, {hot1.server}, -1', f'"a.c:hot1", RCL_ALG_RCL, {hot1.server}, 3')
    config.write_text(text)
    assert cli.main(["assign", str(path), "--config", str(config), "--max-servers", "3", "--cpus", str(BIG)]) == 0
    assert "kept your edit (posix)" in capsys.readouterr().out
    entries = {e.lock_id: e for e in lock_config.read(config)}
    assert entries["a.c:hot2"].algorithm == "posix" and "hand edit kept" in entries["a.c:hot2"].rationale
    assert entries["a.c:hot1"].cpu == 3
    assert cli.main(["assign", str(path), "--config", str(config), "--force", "--cpus", str(BIG)]) == 0
    assert {e.lock_id: e for e in lock_config.read(config)}["a.c:hot2"].algorithm == "rcl"


def test_preload_ids_matched_by_variable_name(tmp_path, capsys):
    locks = [lock("x.c:hot_lock", 70, symbol="hot_lock"), lock("x.c:41", 1, expression="&table->locks[i]", site="x.c:41"),
             lock("libfoo.so:internal", 30, symbol="internal")]
    path = make_profile(tmp_path, locks, source="preload")
    config = tmp_path / "lock_config.h"
    lock_config.write(config, [LockEntry("x.c:hot_lock"), LockEntry("x.c:locks[]")])
    assert cli.main(["assign", str(path), "--config", str(config), "--cpus", str(BIG)]) == 0
    err = capsys.readouterr().err
    assert "not matched" in err and "libfoo.so:internal" in err
    entries = {e.lock_id: e for e in lock_config.read(config)}
    assert entries["x.c:hot_lock"].algorithm == "rcl" and entries["x.c:locks[]"].algorithm == "posix"


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_end_to_end_on_the_fixture_programs(tmp_path):
    bins = {}
    for name in ("one_hot", "two_hot"):
        bins[name] = tmp_path / name
        subprocess.run(["gcc", "-g", "-O1", "-pthread", str(FIXTURES / f"{name}.c"), "-o", str(bins[name])], check=True)
    # the placement of RCL locks is checked here: a big machine, a runtime without the combining lock
    one = profile.run([str(bins["one_hot"])])
    got = choices(assign.decide(one, None, cpus=BIG, available=RCL_ONLY)[0])
    assert got.pop("one_hot.c:hot_lock") == ("rcl", 0)
    assert {alg for alg, _ in got.values()} == {"posix"}

    two = profile.run([str(bins["two_hot"])])
    # five threads share two busy cores here: each hot lock holds ~15-30% of thread time on a quiet
    # machine, and 3-25% at load 7 (measured: lock_a fell to 3.25%), the idle one 0.01-0.03%; a
    # lower threshold of 1% separates them by two orders of magnitude whatever the load
    locks = {l.get("expression") or l["id"]: l["id"] for l in two["locks"]}
    decisions, _ = assign.decide(two, None, lower=0.01, max_servers=3, cpus=BIG, available=RCL_ONLY)
    got = choices(decisions)
    a, b = got["two_hot.c:lock_a"], got["two_hot.c:lock_b"]
    outer, inner = got[locks["&outer"]], got[locks["&inner"]]
    assert got["two_hot.c:idle_lock"] == ("posix", None)
    assert {a[0], b[0], outer[0], inner[0]} == {"rcl"}
    assert outer[1] == inner[1]
    assert len({a[1], b[1], outer[1]}) == 3
    two_servers = choices(assign.decide(two, None, lower=0.01, max_servers=2, cpus=BIG, available=RCL_ONLY)[0])
    assert two_servers[locks["&outer"]][1] == two_servers[locks["&inner"]][1]
    assert {s for _, s in two_servers.values() if s is not None} == {0, 1}


# ---- posix, a combining lock or RCL: the time share and the CPU count decide -----------------------


@pytest.mark.parametrize(
    "pct, cpus, available, algorithm, because",
    [
        (2, BIG, WITH_COMBINING, "posix", "below the lower threshold 15%: cold"),
        (2, 2, WITH_COMBINING, "posix", "below the lower threshold 15%: cold"),
        (70, BIG, WITH_COMBINING, "rcl", "RCL expected to beat every other lock"),
        (70, 3, WITH_COMBINING, "rcl", "3 CPUs leave a core for its server"),
        (30, BIG, WITH_COMBINING, assign.COMBINING, "without setting a core aside for a server"),
        (70, 2, WITH_COMBINING, assign.COMBINING, "on 2 CPUs an RCL server would take one of the two cores"),
        (30, 2, WITH_COMBINING, assign.COMBINING, "on 2 CPUs an RCL server would take one of the two cores"),
        (30, 1, WITH_COMBINING, assign.COMBINING, "on 1 CPU an RCL server would take the only core"),
        # a runtime without the combining lock: RCL, as before there was a choice, and the comment says so
        (30, BIG, RCL_ONLY, "rcl", f"RCL may help (this runtime has no combining lock, {assign.COMBINING})"),
        (70, 2, RCL_ONLY, "rcl", f"but this runtime has no combining lock ({assign.COMBINING}): RCL all the same"),
    ],
)
def test_choice_of_algorithm(pct, cpus, available, algorithm, because):
    verdict = assign.choose(pct, cpus, available)
    assert verdict.algorithm == algorithm
    assert because in verdict.why
    assert verdict.heat == ("cold" if pct < 15 else "warm" if pct < 60 else "hot")


def test_thresholds_move_the_bands():
    assert assign.choose(10, BIG, WITH_COMBINING, lower=0.05, upper=0.08).algorithm == "rcl"
    assert assign.choose(6, BIG, WITH_COMBINING, lower=0.05, upper=0.08).algorithm == assign.COMBINING
    assert assign.choose(6, 2, WITH_COMBINING, lower=0.10).algorithm == "posix"


def test_only_rcl_locks_get_servers(tmp_path):
    prof = profile.load(make_profile(tmp_path, LOCKS))
    decisions, _ = assign.decide(prof, None, cpus=BIG, available=WITH_COMBINING)
    got = choices(decisions)
    assert got["a.c:hot1"][0] == got["a.c:hot2"][0] == "rcl" and got["a.c:hot1"][1] != got["a.c:hot2"][1]
    assert got["a.c:outer"] == got["a.c:inner"] == (assign.COMBINING, None)
    assert got["a.c:cold1"] == ("posix", None)
    small, _ = assign.decide(prof, None, cpus=2, available=WITH_COMBINING)
    assert {alg for alg, server in choices(small).values() if server is None} == {"posix", assign.COMBINING}
    assert all(server is None for _, server in choices(small).values())  # no RCL server on 2 CPUs


def test_cpus_option_and_the_comment_written_for_each_lock(tmp_path, capsys, monkeypatch):
    registry(monkeypatch, with_combining=True)
    path = make_profile(tmp_path, LOCKS)
    config = tmp_path / "lock_config.h"
    lock_config.write(config, [LockEntry(l["id"]) for l in LOCKS])
    assert cli.main(["assign", str(path), "--config", str(config), "--cpus", "2"]) == 0
    assert f"a.c:hot1     70.0%  hot   -> {assign.COMBINING}" in capsys.readouterr().out
    text = config.read_text()
    assert f'"a.c:hot1", RCL_ALG_{assign.COMBINING.upper()}, 0, -1)' in text
    entries = {e.lock_id: e for e in lock_config.read(config)}
    assert "on 2 CPUs an RCL server would take one of the two cores" in entries["a.c:hot1"].rationale
    assert entries["a.c:hot1"].rationale.endswith(f"-> {assign.COMBINING}")
    assert entries["a.c:cold1"].algorithm == "posix"

    # the same profile for a 16-CPU machine: the hot locks move to RCL servers (not a hand edit:
    # the comment says assign chose the combining lock), the warm ones stay on the combining lock
    assert cli.main(["assign", str(path), "--config", str(config), "--cpus", "16"]) == 0
    entries = {e.lock_id: e for e in lock_config.read(config)}
    assert entries["a.c:hot1"].algorithm == "rcl" and "16 CPUs leave a core for its server" in entries["a.c:hot1"].rationale
    assert entries["a.c:outer"].algorithm == assign.COMBINING and "without setting a core aside" in entries["a.c:outer"].rationale
    assert cli.main(["assign", str(path), "--config", str(config), "--cpus", "0"]) == 2
    assert "--cpus must be at least 1" in capsys.readouterr().err


def test_a_hand_set_waiting_policy_is_kept_with_its_algorithm(tmp_path, capsys, monkeypatch):
    registry(monkeypatch, with_combining=False)
    path = make_profile(tmp_path, LOCKS)
    config = tmp_path / "lock_config.h"
    lock_config.write(config, [LockEntry("a.c:hot1"), LockEntry("a.c:cold1")])
    assert cli.main(["assign", str(path), "--config", str(config), "--cpus", str(BIG)]) == 0
    text = config.read_text().replace('RCL_LOCK_CONFIG("a.c:hot1", RCL_ALG_RCL, 0, -1)',
                                      'RCL_LOCK_CONFIG_POLICY("a.c:hot1", RCL_ALG_TTAS, 0, -1, RCL_WAIT_PARK)')
    text = text.replace('RCL_LOCK_CONFIG("a.c:cold1", RCL_ALG_POSIX, 0, -1)',
                        'RCL_LOCK_CONFIG_POLICY("a.c:cold1", RCL_ALG_POSIX, 0, -1, RCL_WAIT_AUTO)')
    config.write_text(text)
    capsys.readouterr()
    assert cli.main(["assign", str(path), "--config", str(config), "--cpus", str(BIG)]) == 0
    assert "a.c:hot1: kept your edit (ttas/park); assign would choose rcl on server 0" in capsys.readouterr().out
    entries = {e.lock_id: e for e in lock_config.read(config)}
    assert (entries["a.c:hot1"].algorithm, entries["a.c:hot1"].policy) == ("ttas", "park")
    assert entries["a.c:hot1"].rationale.endswith("hand edit kept (ttas/park) -> rcl on server 0")
    assert (entries["a.c:cold1"].algorithm, entries["a.c:cold1"].policy) == ("posix", "auto")  # auto: no edit
    assert cli.main(["assign", str(path), "--config", str(config), "--cpus", str(BIG), "--force"]) == 0
    entries = {e.lock_id: e for e in lock_config.read(config)}
    assert (entries["a.c:hot1"].algorithm, entries["a.c:hot1"].policy) == ("rcl", "auto")
    assert 'RCL_LOCK_CONFIG("a.c:hot1", RCL_ALG_RCL, 0, -1)' in config.read_text()


def test_json_output_says_what_the_lines_say(tmp_path, capsys):
    path = make_profile(tmp_path, [*LOCKS, lock("(anonymous)", 40)])
    config = tmp_path / "lock_config.h"
    lock_config.write(config, [LockEntry("b.c:x"), LockEntry("a.c:hot1"), LockEntry("a.c:cold1")])
    out_json = tmp_path / "assign.json"
    assert cli.main(["assign", str(path), "--config", str(config), "--cpus", str(BIG), "--json", str(out_json)]) == 0
    data = json.loads(out_json.read_text())
    assert data["written"] is True and data["config"] == str(config)
    decided = {d["lock_id"]: d for d in data["decisions"]}
    assert decided["a.c:hot1"]["algorithm"] == "rcl" and decided["a.c:hot1"]["server"] is not None
    assert decided["a.c:cold1"]["algorithm"] == "posix" and decided["a.c:cold1"]["rationale"]
    assert "(anonymous)" in data["unmatched"]
    capsys.readouterr()
    before = config.read_bytes()  # a --json path that cannot be written: one line, nothing written
    assert cli.main(["assign", str(path), "--config", str(config), "--json", str(tmp_path / "no" / "a.json")]) == 2
    assert capsys.readouterr().err.count("\n") == 1 and config.read_bytes() == before


# ---- calibrated by the machine's bench (calibration.py) ----------------------------------------


def bench_row(algorithm, threads, delay, lines, ratio, latency_ns=1000.0):
    """A lockbench row: 1 ns per delay iteration, so that posix's share of thread time at the point
    is latency / (latency + delay)."""
    return bench_results.Row(algorithm, "execute", threads, delay, lines, 0, 1, 1e6 * ratio, latency_ns, ratio,
                             float(delay))


def synthetic_record(path, ratios_at_delay0: dict, ratios_at_delay4000: dict):
    """A machine whose bench measured 2 and 8 threads, delays 0 (posix: 100% of thread time in the
    lock) and 4000 (20%), 1 and 5 lines.  ratios_*: algorithm -> (ratio with 1 line, with 5 lines)."""
    rows = []
    for threads in (2, 8):
        for delay, ratios in ((0, ratios_at_delay0), (4000, ratios_at_delay4000)):
            for lines in (1, 5):
                rows.append(bench_row("posix", threads, delay, lines, 1.0))
                rows += [bench_row(a, threads, delay, lines, r[0 if lines == 1 else 1]) for a, r in ratios.items()]
                rows.append(bench_results.Row("mcs", "lock", threads, delay, lines, 0, 1, 1.0, 1.0, 9.0,
                                              float(delay)))  # the lock form: not the extracted one, ignored
    assert calibration.save(rows, path) == path
    return calibration.load(path)


HOT_AND_WARM = [lock("a.c:hot", 90), lock("a.c:warm", 20), lock("a.c:cold", 1)]


def test_the_record_bench_leaves_is_read_back(tmp_path):
    record = synthetic_record(tmp_path / "rec.json", {"ccsynch": (0.07, 0.08)}, {"ccsynch": (1.2, 1.3)})
    assert record.cpus == calibration.machine_cpus()
    assert {(p.threads, p.delay, p.lines) for p in record.points} == {
        (t, d, l) for t in (2, 8) for d in (0, 4000) for l in (1, 5)}
    point = next(p for p in record.points if (p.threads, p.delay, p.lines) == (8, 4000, 5))
    assert point.ratios == {"posix": 1.0, "ccsynch": 1.3} and point.share == pytest.approx(0.2)
    # the nearest point: thread count on a log scale, then posix's share nearest the lock's
    assert calibration.figure(record, "ccsynch", 0.9, 7).point.delay == 0
    assert calibration.figure(record, "ccsynch", 0.25, 7).ratio == 1.2  # the lower of the two line counts
    assert calibration.figure(record, "ttas", 0.25, 7) is None
    # a later bench replaces the points it measured again and keeps the others
    calibration.save([bench_row("posix", 8, 0, 5, 1.0), bench_row("ttas", 8, 0, 5, 1.5)], tmp_path / "rec.json")
    again = calibration.load(tmp_path / "rec.json")
    assert len(again.points) == 8
    assert next(p for p in again.points if (p.threads, p.delay, p.lines) == (8, 0, 5)).ratios == {
        "posix": 1.0, "ttas": 1.5}


def test_never_chooses_what_the_machine_ranks_below_posix(tmp_path):
    """2 CPUs, 4 threads (the thread counts measured are 2 and 8: 8 is as near on a log scale, and
    the larger is taken): the uncalibrated table puts hot and warm locks on the combining lock; the
    bench ranks it at 0.07x posix where the hot lock is, ttas above posix: ttas; where the warm lock
    is, the combining lock above posix: kept, the figure said."""
    record = synthetic_record(tmp_path / "rec.json", {assign.COMBINING: (0.07, 0.08), "ttas": (1.1, 1.3), "mcs": (0.4, 0.5)},
                              {assign.COMBINING: (1.2, 1.4), "ttas": (0.9, 0.9)})
    prof = profile.load(make_profile(tmp_path, HOT_AND_WARM))
    decisions, _ = assign.decide(prof, None, cpus=2, available=WITH_COMBINING + ("ttas", "mcs"), record=record)
    by_id = {d.lock_id: d for d in decisions}
    hot, warm, cold = by_id["a.c:hot"], by_id["a.c:warm"], by_id["a.c:cold"]
    assert hot.verdict.algorithm == "ttas"
    assert (f"but calibrated: {assign.COMBINING} 0.07x posix in this machine's bench at 8 threads, 1 line, delay 0"
            in hot.rationale)
    assert "the best here: ttas 1.10x posix" in hot.rationale and hot.rationale.endswith("-> ttas")
    assert warm.verdict.algorithm == assign.COMBINING
    assert f"calibrated: {assign.COMBINING} 1.20x posix in this machine's bench at 8 threads, 1 line, delay 4000 " \
           "(posix 20% of thread time in the lock" in warm.rationale
    assert cold.verdict.algorithm == "posix" and "calibrated" not in cold.rationale


def test_posix_kept_where_nothing_ranks_above_it(tmp_path):
    record = synthetic_record(tmp_path / "rec.json", {assign.COMBINING: (0.07, 0.08), "rcl": (2.0, 2.0)},
                              {assign.COMBINING: (0.5, 0.6)})
    prof = profile.load(make_profile(tmp_path, HOT_AND_WARM))
    decisions, _ = assign.decide(prof, None, cpus=2, available=WITH_COMBINING, record=record)
    by_id = {d.lock_id: d for d in decisions}
    # rcl ranks above posix, but on 2 CPUs an RCL server is not an option
    assert by_id["a.c:hot"].verdict.algorithm == by_id["a.c:warm"].verdict.algorithm == "posix"
    assert "nothing ranks above posix there: posix kept -> posix" in by_id["a.c:hot"].rationale
    assert all(d.server is None for d in decisions)


def test_uncalibrated_choice_says_so(tmp_path, capsys, monkeypatch):
    registry(monkeypatch, with_combining=True)
    path = make_profile(tmp_path, HOT_AND_WARM)
    config = tmp_path / "lock_config.h"
    lock_config.write(config, [LockEntry(l["id"]) for l in HOT_AND_WARM])
    out_json = tmp_path / "a.json"
    assert cli.main(["assign", str(path), "--config", str(config), "--cpus", "2", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "note: choices uncalibrated: no bench record of this machine (run `rclify bench`, or `rclify tune`" in out
    entries = {e.lock_id: e for e in lock_config.read(config)}
    assert "uncalibrated: no bench record" in entries["a.c:hot"].rationale
    assert entries["a.c:hot"].rationale.endswith(f"-> {assign.COMBINING}")
    assert json.loads(out_json.read_text())["calibration"] is None


def test_assign_reads_the_machine_record_and_names_it(tmp_path, capsys, monkeypatch):
    registry(monkeypatch, with_combining=True)
    rec = tmp_path / "machine.json"
    synthetic_record(rec, {assign.COMBINING: (0.07, 0.08)}, {assign.COMBINING: (1.5, 1.6)})
    monkeypatch.setenv(calibration.ENV, str(rec))  # as `rclify bench` would have left it
    path = make_profile(tmp_path, HOT_AND_WARM)
    config = tmp_path / "lock_config.h"
    lock_config.write(config, [LockEntry(l["id"]) for l in HOT_AND_WARM])
    cpus = calibration.machine_cpus()
    out_json = tmp_path / "a.json"
    assert cli.main(["assign", str(path), "--config", str(config), "--cpus", str(cpus), "--json", str(out_json)]) == 0
    assert f"calibrated by the bench record {rec}" in capsys.readouterr().out
    entries = {e.lock_id: e for e in lock_config.read(config)}
    assert "calibrated: " in entries["a.c:warm"].rationale
    assert json.loads(out_json.read_text())["calibration"] == str(rec)
    if cpus < assign.RCL_MIN_CPUS:  # the combining lock at 0.07x where the hot lock is: not chosen
        assert entries["a.c:hot"].algorithm == "posix"
    # a record of another CPU count than --cpus is not used, and that is said
    assert cli.main(["assign", str(path), "--config", str(config), "--cpus", str(cpus + 1)]) == 0
    assert f"is of a {cpus}-CPU machine, not --cpus {cpus + 1}" in capsys.readouterr().out
    # --calibration names a record; a file that is not one is one line, exit 2
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert cli.main(["assign", str(path), "--config", str(config), "--calibration", str(bad)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_no_lock_config_to_write_is_exit_1_and_a_dry_run_is_0(tmp_path, capsys, monkeypatch):
    """It said `nothing written` and exited 0: a script took the choices as made."""
    path = make_profile(tmp_path, LOCKS)
    monkeypatch.chdir(tmp_path)  # no lock_config.h here
    assert cli.main(["assign", str(path), "--cpus", str(BIG)]) == 1
    out, err = capsys.readouterr()
    assert "a.c:hot1" in out and "nothing written" in err and err.count("\n") == 1
    assert cli.main(["assign", str(path), "--cpus", str(BIG), "--dry-run"]) == 0
    assert not (tmp_path / "lock_config.h").exists()
