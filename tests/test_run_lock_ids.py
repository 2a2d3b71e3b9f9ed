"""`rclify run`'s lock ids name mutexes only (issue 36): a static of 40 bytes or more that is no
pthread mutex and holds none (a buffer, a table of doubles) was listed, and accepted, as a lock id.
With debug information the statics are told apart by their types; without it none is listed as a
guess, and the message says why."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rclify.commands import run as run_cmd
from rclify.paths import PROJECT_ROOT

SOURCE = """#include <pthread.h>
struct cache { int n; pthread_mutex_t lock; char pad[8]; };
typedef pthread_mutex_t my_lock_t;
static pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER;
static struct cache cache;
static my_lock_t buckets[4];
static char big_buffer[4096];
static double table[64];
struct cache *cache_pointers[16];
pthread_mutex_t global_lock;
int main(void)
{
    static pthread_mutex_t inner = PTHREAD_MUTEX_INITIALIZER;
    static char local_buffer[100];
    pthread_mutex_lock(&plain); pthread_mutex_lock(&inner); pthread_mutex_lock(&buckets[1]);
    pthread_mutex_lock(&global_lock); pthread_mutex_lock(&cache.lock); cache_pointers[0] = &cache;
    big_buffer[0] = local_buffer[0]; table[1] = cache.n;
    return 0;
}
"""
MUTEXES = {"locks.c:plain", "locks.c:cache", "locks.c:buckets", "locks.c:global_lock", "locks.c:inner.1"}
NOT_MUTEXES = {"big_buffer", "table", "cache_pointers", "local_buffer"}


def _program(tmp_path: Path, *flags: str) -> Path:
    src = tmp_path / "locks.c"
    src.write_text(SOURCE)
    prog = tmp_path / ("locks" + "".join(flags).replace("-", "_"))
    subprocess.run(["cc", *flags, "-pthread", str(src), "-o", str(prog)], check=True)
    return prog


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rclify", "run", *args], capture_output=True, text=True,
                          timeout=300, cwd=tempfile.gettempdir(), env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)))


def test_with_debug_information_only_the_statics_holding_a_mutex_are_lock_ids(tmp_path):
    prog = _program(tmp_path, "-g")
    sites, statics = run_cmd.site_table(prog)
    ids = {i for _, _, i in statics}
    assert ids == MUTEXES, ids
    listed, untold = run_cmd.listed_ids(prog, sites, statics)
    assert set(listed) == MUTEXES and untold == 0


def test_an_unknown_id_lists_the_mutexes_and_no_other_static(tmp_path):
    prog = _program(tmp_path, "-g")
    proc = _run("--locks", "locks.c:nosuch=mcs", "--", str(prog))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "unknown lock id 'locks.c:nosuch'" in lines[0] and "locks.c:buckets" in lines[0], lines[0]
    assert not any(name in lines[0] for name in NOT_MUTEXES), lines[0]


@pytest.mark.parametrize("name", ["big_buffer", "table"])
def test_a_static_that_holds_no_mutex_is_no_lock_id(tmp_path, name):
    prog = _program(tmp_path, "-g")
    proc = _run("--locks", f"locks.c:{name}=mcs", "--", str(prog))
    assert proc.returncode == 2 and f"unknown lock id 'locks.c:{name}'" in proc.stderr, proc.stderr


def test_without_debug_information_no_static_is_listed_as_a_guess(tmp_path):
    prog = _program(tmp_path)
    sites, statics = run_cmd.site_table(prog)
    names = {i for _, _, i in statics}
    assert {"big_buffer", "plain"} <= names  # the interposer's table keeps what may hold one
    listed, untold = run_cmd.listed_ids(prog, sites, statics)
    assert listed == [] and untold == len(names)
    proc = _run("--locks", "nosuch=mcs", "--", str(prog))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "only debug information can tell: build it with -g" in lines[0], lines[0]
    assert not any(name in lines[0] for name in NOT_MUTEXES | {"plain", "buckets"}), lines[0]
