"""rclify run: unmodified programs on the runtime's algorithms by interposition (librclify_run.so).

- every corpus program's ORIGINAL binary, built once (module fixture), under `*=ALG` for every
  registered algorithm prints what corpus/*/expected.txt says (the same as without rclify run);
- runtime/interpose/tests/pthread_api.c, a pthread program covering what the interposer must keep
  (static initializers of the three kinds, attributes that stay posix, trylock, timed and clock
  locks, condvar waits of each kind, destroy and re-init, fork with locks held by other threads,
  thread churn), under every algorithm and under a per-lock spec;
- a per-lock spec reaches one lock only (RCLIFY_STATS counts its RCL acquisitions);
- bad input is one line, a non-zero exit, and the program not started.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rclify import algorithms, runtime_build
from rclify.commands import run as run_cmd
from rclify.paths import CORPUS_DIR, PROJECT_ROOT
from tests.corpus_build import build

ALGS = algorithms.names()
API_TEST = PROJECT_ROOT / "runtime" / "interpose" / "tests" / "pthread_api.c"


@pytest.fixture(scope="module")
def run_lib() -> Path:
    runtime_build.make("build/librclify_run.so", "the interposer", run_cmd.RUN_LIB)
    return run_cmd.RUN_LIB


@pytest.fixture(scope="module")
def corpus_programs(tmp_path_factory, run_lib):
    """Each corpus program built as written, once, with its lock id table."""
    root = tmp_path_factory.mktemp("corpus")
    programs = []
    for src in sorted(p for p in CORPUS_DIR.iterdir() if (p / "expected.txt").is_file()):
        tree = root / src.name
        shutil.copytree(src, tree)
        proc = build(tree, [], [])
        assert proc.returncode == 0, f"{src.name}: {proc.stderr[-2000:]}"
        table = run_cmd.write_table(tree / "sites", *run_cmd.site_table(tree / "prog"), tree / "prog")
        programs.append((src.name, tree, (src / "expected.txt").read_text(), table))
    assert len(programs) > 50
    return programs


def _run(tree: Path, spec: str, table: Path) -> subprocess.CompletedProcess:
    env = run_cmd.environment(spec, table)
    env.pop("RCLIFY_STATS", None)
    return subprocess.run([str(tree / "prog")], cwd=tree, capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("alg", ALGS)
def test_corpus_originals_under_every_algorithm(corpus_programs, alg):
    def one(program):
        name, tree, expected, table = program
        proc = _run(tree, f"*={alg}", table)
        if proc.returncode != 0 or proc.stdout != expected:
            return f"{name}: exit {proc.returncode}, stdout {proc.stdout[-300:]!r}, stderr {proc.stderr[-500:]!r}"
        return None

    with ThreadPoolExecutor(max_workers=2) as pool:
        failures = [f for f in pool.map(one, corpus_programs) if f]
    assert not failures, f"{len(failures)} of {len(corpus_programs)} under *={alg}:\n" + "\n".join(failures)


@pytest.fixture(scope="module")
def api_program(tmp_path_factory, run_lib) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("api")
    prog = out / "pthread_api"
    proc = subprocess.run(["cc", "-O1", "-g", "-pthread", "-Wall", str(API_TEST), "-o", str(prog)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return prog, run_cmd.write_table(out / "sites", *run_cmd.site_table(prog), prog)


@pytest.mark.parametrize("alg", ALGS)
def test_pthread_api_under_every_algorithm(api_program, alg, tmp_path):
    prog, table = api_program
    env = run_cmd.environment(f"*={alg}", table)
    proc = subprocess.run([str(prog)], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "all checks passed" in proc.stdout
    # the run really was on the runtime: the program asks the interposer what its locks are
    assert f"interposed: {'no' if alg == 'posix' else 'yes'}" in proc.stdout


@pytest.fixture(scope="module")
def tsan_api_program(tmp_path_factory) -> tuple[Path, Path]:
    """pthread_api.c built with -fsanitize=thread, and the interposer's TSan build."""
    lib = runtime_build.BUILD_DIR / "tsan" / "librclify_run.so"
    runtime_build.make("build/tsan/librclify_run.so", "the interposer (ThreadSanitizer)", lib)
    prog = tmp_path_factory.mktemp("api_tsan") / "pthread_api"
    proc = subprocess.run(["cc", "-O1", "-g", "-fsanitize=thread", "-pthread", "-Wall", str(API_TEST), "-o", str(prog)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return prog, lib


@pytest.mark.parametrize("alg", ALGS)
def test_pthread_api_under_tsan(tsan_api_program, alg, tmp_path):
    """The same program and interposer built with ThreadSanitizer: no report, every check passes.
    rcl skips the fork: a TSan child of a multi-threaded process cannot start RCL's servers."""
    prog, lib = tsan_api_program
    env = run_cmd.environment(f"*={alg}", tmp_path / "no-sites")
    env["LD_PRELOAD"] = str(lib)
    env["TSAN_OPTIONS"] = "halt_on_error=1 exitcode=66"
    args = ["--no-fork"] if alg == "rcl" else []
    proc = subprocess.run([str(prog), *args], capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    assert "all checks passed" in proc.stdout
    assert f"interposed: {'no' if alg == 'posix' else 'yes'}" in proc.stdout


def test_pthread_api_plain(api_program):
    prog, _ = api_program
    proc = subprocess.run([str(prog)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "interposed: no" in proc.stdout


def test_per_lock_spec_reaches_one_lock(api_program, tmp_path):
    """pthread_api.c's static `counted` lock alone on rcl: the statistics name it, the others stay posix."""
    prog, table = api_program
    env = run_cmd.environment("pthread_api.c:counted=rcl", table)
    env["RCLIFY_STATS"] = "1"
    proc = subprocess.run([str(prog), "--counted-only"], capture_output=True, text=True, timeout=120, env=env,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line.split() for line in proc.stderr.splitlines() if line.startswith("pthread_api.c:")]
    assert rows == [["pthread_api.c:counted", "0", "0", "0", "4000"]], proc.stderr
    assert "other lock interposed: no" in proc.stdout


@pytest.mark.parametrize("name", ["lock_helper_init_sites", "init_static_and_dynamic", "hashtable_bucket_locks"])
def test_ids_are_rclify_profiles(corpus_programs, name):
    """Every lock id `rclify profile` reports for a corpus program is one `rclify run` knows, helpers'
    calls included (lock_helper_init_sites: two levels of helpers)."""
    from rclify.profiling import profile

    tree = next(t for n, t, _, _ in corpus_programs if n == name)
    profiled = {lock["id"] for lock in profile.run([str(tree / "prog")], interval_ms=0)["locks"]}
    sites, statics = run_cmd.site_table(tree / "prog")
    known = {i for _, i in sites} | {i for _, _, i in statics}
    assert profiled and profiled <= known, f"profile ids not named by rclify run: {profiled - known}"


@pytest.mark.parametrize("lock_id, counts", [("main.c:61", "hits=4000"), ("main.c:54", "stats_ops=12000")])
def test_per_lock_spec_on_a_lock_made_by_helpers(corpus_programs, lock_id, counts):
    """lock_helper_init_sites: `hits` is made by new_lock() -> my_mutex_init() -> pthread_mutex_init,
    called at main.c:61; the spec naming that call reaches that lock alone (its RCL acquisitions)."""
    name, tree, expected, table = next(p for p in corpus_programs if p[0] == "lock_helper_init_sites")
    env = run_cmd.environment(f"{lock_id}=rcl", table)
    env["RCLIFY_STATS"] = "1"
    proc = subprocess.run([str(tree / "prog")], cwd=tree, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0 and proc.stdout == expected, proc.stderr
    rows = [line.split() for line in proc.stderr.splitlines() if line.startswith("main.c:")]
    count = int(counts.split("=")[1])
    assert rows == [[lock_id, "0", "0", "0", str(count)]], proc.stderr
    assert counts in proc.stdout


def test_ids_of_a_program_a_script_runs(api_program, tmp_path):
    """--ids-of: a spec's ids reach a program that CMD (a script) runs; without it, one line says how."""
    prog, _ = api_program
    script = tmp_path / "suite.sh"
    script.write_text(f"#!/bin/sh\nexec {prog} --counted-only\n")
    script.chmod(0o755)
    proc = subprocess.run([sys.executable, "-m", "rclify", "run", "--locks", "pthread_api.c:counted=rcl",
                           "--ids-of", str(prog), "--", str(script)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), RCLIFY_STATS="1"))
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stderr.splitlines() if line.startswith("pthread_api.c:")]
    assert rows == [["pthread_api.c:counted", "0", "0", "0", "4000"]], proc.stderr
    proc = _cli("--locks", "pthread_api.c:counted=rcl", "--", str(script))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "--ids-of PROG" in lines[0], proc.stderr


def _cli(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rclify", "run", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd or tempfile.gettempdir(),
                          env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)))


def test_cli_runs_the_program_and_passes_its_status(tmp_path, run_lib):
    src = tmp_path / "st.c"
    src.write_text('#include <pthread.h>\n#include <stdio.h>\nstatic pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n'
                   'int main(void) { pthread_mutex_lock(&m); puts("locked"); pthread_mutex_unlock(&m); return 3; }\n')
    subprocess.run(["cc", "-g", "-pthread", str(src), "-o", str(tmp_path / "st")], check=True)
    proc = _cli("--locks", "st.c:m=mcs", "--", str(tmp_path / "st"))
    assert proc.returncode == 3 and proc.stdout == "locked\n", proc.stderr
    proc = _cli("--locks", "*=rcl", "--", str(tmp_path / "st"))
    assert proc.returncode == 3 and "lock form (hybrid)" in proc.stderr


def test_cli_config_file(api_program, tmp_path):
    """--config lock_config.h: its entries' algorithms for their ids, through the CLI."""
    from rclify import lock_config

    prog, _ = api_program
    config = tmp_path / "lock_config.h"
    config.write_text(lock_config.render([lock_config.LockEntry("pthread_api.c:counted", "rcl", 0, -1)]))
    proc = subprocess.run([sys.executable, "-m", "rclify", "run", "--config", str(config), "--", str(prog),
                           "--counted-only"], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), RCLIFY_STATS="1"))
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stderr.splitlines() if line.startswith("pthread_api.c:")]
    assert rows == [["pthread_api.c:counted", "0", "0", "0", "4000"]], proc.stderr
    assert "counted interposed: yes" in proc.stdout and "other lock interposed: no" in proc.stdout


@pytest.mark.parametrize("args, message", [
    (["--locks", "*=nosuch"], "unknown algorithm 'nosuch'"),
    (["--locks", "st.c:nosuch=mcs"], "unknown lock id 'st.c:nosuch'"),
    (["--locks", "st.c:m=mcs"], "program not found"),
])
def test_bad_input_one_line_program_not_started(tmp_path, args, message):
    marker = tmp_path / "started"
    src = tmp_path / "st.c"
    src.write_text('#include <pthread.h>\n#include <stdio.h>\nstatic pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n'
                   f'int main(void) {{ fopen("{marker}", "w"); pthread_mutex_lock(&m); return 0; }}\n')
    subprocess.run(["cc", "-g", "-pthread", str(src), "-o", str(tmp_path / "st")], check=True)
    prog = str(tmp_path / ("nosuch" if message == "program not found" else "st"))
    proc = _cli(*args, "--", prog)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert not marker.exists()


def test_a_program_with_its_own_locks_is_told_so_and_runs(tmp_path):
    """A program whose locks are its own (a spinlock on an atomic flag): one line says its locks stay
    as they are, and it runs."""
    src = tmp_path / "spin.c"
    src.write_text("#include <stdatomic.h>\n#include <stdio.h>\nstatic atomic_flag f = ATOMIC_FLAG_INIT;\n"
                   "int main(void) { while (atomic_flag_test_and_set(&f)) ; puts(\"held\"); "
                   "atomic_flag_clear(&f); return 0; }\n")
    subprocess.run(["cc", "-g", str(src), "-o", str(tmp_path / "spin")], check=True)
    proc = _cli("--locks", "*=mcs", "--", str(tmp_path / "spin"))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 0 and proc.stdout == "held\n", proc.stderr
    assert len(lines) == 1 and "calls no pthread mutex or condvar function" in lines[0], proc.stderr


def test_static_binary_is_refused(tmp_path):
    src = tmp_path / "st.c"
    src.write_text("int main(void) { return 0; }\n")
    proc = subprocess.run(["cc", "-static", str(src), "-o", str(tmp_path / "st")], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"cannot link statically here: {proc.stderr[-500:]}")
    proc = _cli("--locks", "*=mcs", "--", str(tmp_path / "st"))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 1 and "statically linked" in lines[0]


def test_a_config_naming_an_unknown_lock_is_named_as_the_config(tmp_path):
    """The error said `--locks:` when the ids came from --config."""
    from rclify import lock_config

    src = tmp_path / "st.c"
    src.write_text("#include <pthread.h>\nstatic pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n"
                   "int main(void) { pthread_mutex_lock(&m); return 0; }\n")
    subprocess.run(["cc", "-g", "-pthread", str(src), "-o", str(tmp_path / "st")], check=True)
    config = tmp_path / "lock_config.h"
    config.write_text(lock_config.render([lock_config.LockEntry("st.c:nosuch", "mcs", 0, -1)]))
    proc = _cli("--config", str(config), "--", str(tmp_path / "st"))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert f"--config {config}: unknown lock id 'st.c:nosuch'" in lines[0] and "--locks" not in lines[0]
