"""Regions inside #if / #elif / #else branches of their function (issue #11, item 5): the code
generated for a region exists under the same condition as the region, and a local declared in any
branch is captured under its branch's condition, so the transformed file builds and behaves as the
original under every configuration the original supports, not only the one it was analysed with."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rclify import runtime_build

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = r"""
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long total;
#if defined(MODE_STATS)
static long hits;
#endif

static void work(long v)
{
#if defined(MODE_STATS)
    long bump = v * 2;
    pthread_mutex_lock(&m);
    hits += bump;
    total += bump;
    pthread_mutex_unlock(&m);
#elif defined(MODE_WIDE)
    long long wide = (long long)v << 20;
    pthread_mutex_lock(&m);
    total += (long)(wide >> 19);
    pthread_mutex_unlock(&m);
#else
    pthread_mutex_lock(&m);
    total += v;
    pthread_mutex_unlock(&m);
#endif
}

static long sum(int n)
{
#ifndef MODE_WIDE
    int step = 1;
#else
    long step = 3;
#endif
    long s = 0;
    pthread_mutex_lock(&m);
    for (int i = 0; i < n; i++)
        s += step;
    total += s;
    pthread_mutex_unlock(&m);
    return s;
}

static void *worker(void *arg)
{
    for (long i = 0; i < 1000; i++)
        work(i % 7);
    (void)arg;
    return NULL;
}

int main(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("sum %ld\n", sum(10));
#if defined(MODE_STATS)
    printf("hits %ld\n", hits);
#endif
    printf("total %ld\n", total);
    return 0;
}
"""

CONFIGS = {"default": [], "stats": ["-DMODE_STATS"], "wide": ["-DMODE_WIDE"]}
WARNINGS = ["-Wall", "-Werror=unused-function", "-Werror=implicit-function-declaration"]


def _build_and_run(tree: Path, defines: list[str], runtime: bool) -> str:
    extra = [*runtime_build.cflags()] if runtime else []
    libs = runtime_build.libs() if runtime else []
    build = subprocess.run(["cc", "-O1", "-pthread", *WARNINGS, *defines, *extra, "main.c", "-o", "prog", *libs],
                           cwd=tree, capture_output=True, text=True, timeout=120)
    assert build.returncode == 0, f"{tree.name} {defines}:\n{build.stderr[-3000:]}"
    run = subprocess.run(["./prog"], cwd=tree, capture_output=True, text=True, timeout=60,
                         env={"RCLIFY_LOCKS": "*=rcl", "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    return run.stdout


@pytest.fixture(scope="module")
def transformed(tmp_path_factory):
    """The program as analysed by default (no -D): the #else branches are the compiled ones."""
    original, tree = tmp_path_factory.mktemp("original"), tmp_path_factory.mktemp("conditional")
    (original / "main.c").write_text(PROGRAM)
    (tree / "main.c").write_text(PROGRAM)
    report = tree / "report.json"
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "-q", "-j", "1",
                           "--report", str(report)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runtime_build.build_runtime()
    return original, tree, json.loads(report.read_text())


def test_regions_of_the_analysed_branch_are_extracted(transformed):
    _, tree, report = transformed
    statuses = {(r["file"], r["function"], r["status"]) for r in report["regions"]}
    assert ("main.c", "work", "extracted") in statuses
    # `step` is declared in both branches, with another type in the one not analysed: refused
    sum_region = next(r for r in report["regions"] if r["function"] == "sum")
    assert (sum_region["status"], sum_region["reason"]) == ("hybrid", "conditional-declaration")
    text = (tree / "main.c").read_text()
    assert "#if !(defined(MODE_STATS)) && !(defined(MODE_WIDE))" in text  # the #else branch's section


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_every_configuration_builds_and_prints_what_the_original_does(transformed, config):
    original, tree, _ = transformed
    want = _build_and_run(original, CONFIGS[config], runtime=False)
    got = _build_and_run(tree, CONFIGS[config], runtime=True)
    assert got == want


# zstd's threading.h: the lock macro is defined per debug level, with another mutex type.  The
# section is written for the analysed level, under that level's condition; the other level keeps
# the original text (lock calls through its own macro), so both build and behave the same.
LEVELED = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef DEBUGLEVEL
#define DEBUGLEVEL 0
#endif
#if DEBUGLEVEL < 1
typedef pthread_mutex_t my_mutex_t;
#define my_mutex_init(a) pthread_mutex_init((a), NULL)
#define my_mutex_lock(a) pthread_mutex_lock((a))
#define my_mutex_unlock(a) pthread_mutex_unlock((a))
#else
typedef pthread_mutex_t *my_mutex_t;  /* allocated, so that a debugger can watch it */
#define my_mutex_init(a) ((*(a) = malloc(sizeof(pthread_mutex_t))) ? pthread_mutex_init(*(a), NULL) : -1)
#define my_mutex_lock(a) pthread_mutex_lock(*(a))
#define my_mutex_unlock(a) pthread_mutex_unlock(*(a))
#endif

static my_mutex_t m;
static long total;

static long popped;

static long peek(void)  /* the section ends inside the bare block (zstd's POOL_thread) */
{
    my_mutex_lock(&m);
    {   const long v = total;
        popped++;
        my_mutex_unlock(&m);
        return v * 2;
    }
}

static void *worker(void *arg)
{
    for (long i = 0; i < 2000; i++) {
        my_mutex_lock(&m);
        total += i % 5;
        my_mutex_unlock(&m);
    }
    (void)arg;
    return NULL;
}

int main(void)
{
    pthread_t t[3];
    if (my_mutex_init(&m) != 0)
        return 1;
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("total %ld peek %ld popped %ld level %d\n", total, peek(), popped, DEBUGLEVEL);
    return 0;
}
"""


@pytest.mark.parametrize("level", ["0", "2"])
def test_a_lock_macro_defined_per_level_builds_at_every_level(tmp_path_factory, level):
    original, tree = tmp_path_factory.mktemp("lv-original"), tmp_path_factory.mktemp("leveled")
    (original / "main.c").write_text(LEVELED)
    (tree / "main.c").write_text(LEVELED)
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "-q", "-j", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (tree / "main.c").read_text()
    assert text.count("RCL_EXECUTE(") == 2 and "#if (DEBUGLEVEL < 1)" in text  # both, for the analysed level
    runtime_build.build_runtime()
    want = _build_and_run(original, [f"-DDEBUGLEVEL={level}"], runtime=False)
    assert _build_and_run(tree, [f"-DDEBUGLEVEL={level}"], runtime=True) == want
