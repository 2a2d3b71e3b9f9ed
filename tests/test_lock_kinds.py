"""Every lock call and lock kind the transform meets is handled or refused out loud:
  * timed locks (pthread_mutex_timedlock / _clocklock, pthread_cond_clockwait) move to their rcl_*
    twins, and each timed lock call is a region refused for `timedlock`;
  * pthread_spin_* calls are counted (summary.not_handled) and listed; pthread_rwlock_* calls go onto
    the runtime (rcl_rwlock_*, a lock_config.h entry per rwlock), each listed as hybrid (rwlock_calls);
  * a lock pthread_mutex_consistent (or _get/_setprioceiling) is called on stays a pthread mutex
    (locks_kept_posix, regions refused for `lock-kept-posix`), or, when it cannot be kept apart,
    the files that share it are left unchanged (files_left_unchanged);
  * every lock has its lock_config.h id at run time, however it was declared (zero-initialised
    globals, arrays, function-local statics, fields of struct variables).
The corpus programs timedlock_rwlock_spin, zero_initialized_global and mutex_consistent_kept_posix
are also run original vs transformed by tests/test_transform_corpus.py."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rclify import lock_config, runtime_build
from rclify.ctext.tokens import code_only
from rclify.transform.discover import discover
from rclify.lock_identity.lock_table import build_lock_table

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"

pytestmark = pytest.mark.skipif(shutil.which("spatch") is None, reason="spatch (coccinelle) not installed")


def transform(tree: Path, *extra) -> tuple[dict, str]:
    report = tree.parent / f"{tree.name}.json"
    proc = subprocess.run([sys.executable, "-m", "rclify", "transform", str(tree), "--report", str(report),
                           "-j", "1", *extra], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(report.read_text()), proc.stdout


def corpus_copy(name: str, tmp_path: Path) -> Path:
    tree = tmp_path / name
    shutil.copytree(CORPUS / name, tree)
    return tree


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def build(tree: Path) -> Path:
    runtime_build.build_runtime()
    sources = sorted(p.name for p in tree.glob("*.c"))
    proc = subprocess.run(["cc", "-O1", "-pthread", "-Wall", *runtime_build.cflags(), *sources, "-o", "prog",
                           *runtime_build.libs()], cwd=tree, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return tree / "prog"


def region(report: dict, line: int, file: str = "main.c") -> dict:
    found = [r for r in report["regions"] if r["file"] == file and r["line"] == line]
    assert found, f"no region at {file}:{line}: {[(r['file'], r['line']) for r in report['regions']]}"
    return found[0]


# -- timed locks, rwlocks, spinlocks ---------------------------------------------------------------

@pytest.fixture(scope="module")
def timed(tmp_path_factory):
    tree = corpus_copy("timedlock_rwlock_spin", tmp_path_factory.mktemp("timed"))
    report, stdout = transform(tree)
    return tree, report, stdout


def test_timed_lock_calls_are_hybrid_regions_in_the_report(timed):
    _, report, _ = timed
    for line in (61, 66, 103):  # clocklock, timedlock, the one that times out
        r = region(report, line)
        assert (r["status"], r["reason"], r["kind"], r["lock"]) == ("hybrid", "timedlock", "timedlock", "&queue_lock")
        assert r["lock_id"] == "main.c:queue_lock"
    assert report["summary"]["hybrid"] == {"timedlock": 3}
    assert report["summary"]["extracted"] == 2  # the same lock's ordinary regions
    assert report["api_errors"] == []


def test_timed_lock_calls_move_to_the_runtime(timed):
    tree, _, _ = timed
    text = (tree / "main.c").read_text()
    assert "rcl_mutex_timedlock(&queue_lock, &ts)" in text
    assert "rcl_mutex_clocklock(&queue_lock, CLOCK_MONOTONIC, &ts)" in text
    assert "pthread_mutex_" not in code_only(text)


def test_spinlocks_are_counted_and_listed_rwlocks_go_onto_the_runtime(timed):
    tree, report, stdout = timed
    assert report["summary"]["not_handled"] == {"pthread_spin": 4}
    sites = {(s["line"], s["call"]) for s in report["not_handled"]}
    assert (39, "pthread_spin_lock") in sites and (113, "pthread_spin_init") in sites
    assert not any(s["call"].startswith("pthread_rwlock_") for s in report["not_handled"])
    # every rwlock call listed, hybrid, with its reason
    assert report["summary"]["rwlock_calls"] == {"hybrid": 4}
    rw = {(s["line"], s["call"], s["status"]) for s in report["rwlock_calls"]}
    assert rw == {(46, "pthread_rwlock_rdlock", "hybrid"), (48, "pthread_rwlock_unlock", "hybrid"),
                  (120, "pthread_rwlock_wrlock", "hybrid"), (122, "pthread_rwlock_unlock", "hybrid")}
    assert all(s["reason"] for s in report["rwlock_calls"])
    assert "rwlocks: 4 pthread_rwlock_* call sites now rcl_rwlock_*" in stdout
    spin = next(s for s in report["not_handled"] if s["line"] == 39)
    assert (spin["api"], spin["function"], spin["lock"], spin["file"]) == ("pthread_spin", "count_event", "&stats_lock", "main.c")
    assert "not handled (left as pthread calls, no lock_config.h entry): pthread_spin_* 4 call sites" in stdout
    text = (tree / "main.c").read_text()
    assert "rcl_rwlock_rdlock(&config_lock)" in text and "pthread_spin_lock(&stats_lock)" in text
    assert "RCL_RWLOCK_INITIALIZER(RCLIFY_LOCK_main_c_config_lock)" in text
    assert "pthread_rwlock" not in code_only(text)
    assert [e.lock_id for e in lock_config.read(tree / "lock_config.h")] == ["main.c:config_lock", "main.c:queue_lock"]


def test_timed_calls_in_other_shapes_are_reported(tmp_path):
    tree = write_tree(tmp_path / "t", {"t.c": """#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <time.h>
static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
#define TLOCK(m, ts) pthread_mutex_timedlock(&(m), (ts))
static int n;
int checked(const struct timespec *ts)
{
    if (pthread_mutex_timedlock(&a, ts) != 0)
        return -1;
    n++;
    pthread_mutex_unlock(&a);
    return 0;
}
void looped(const struct timespec *ts)
{
    while (TLOCK(a, ts) == ETIMEDOUT)
        ;
    pthread_cond_clockwait(&c, &a, CLOCK_MONOTONIC, ts);
    pthread_mutex_unlock(&a);
}
int wrapper(pthread_mutex_t *m, const struct timespec *ts)
{
    return pthread_mutex_timedlock(m, ts);
}
"""})
    report, _ = transform(tree, "-q")
    got = {(r["line"], r["function"], r["lock"]) for r in report["regions"] if r["reason"] == "timedlock"}
    assert got == {(11, "checked", "&a"), (19, "looped", "&a"), (26, "wrapper", "m")}
    text = (tree / "t.c").read_text()
    assert "#define TLOCK(m, ts) rcl_mutex_timedlock(&(m), (ts))" in text
    assert "rcl_cond_clockwait(&c, &a, CLOCK_MONOTONIC, ts)" in text
    assert "return rcl_mutex_timedlock(m, ts);" in text


# -- locks kept posix ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def robust(tmp_path_factory):
    tree = corpus_copy("mutex_consistent_kept_posix", tmp_path_factory.mktemp("robust"))
    report, stdout = transform(tree)
    return tree, report, stdout


def test_a_lock_with_consistent_stays_a_pthread_mutex(robust):
    tree, report, stdout = robust
    text = (tree / "main.c").read_text()
    assert "static pthread_mutex_t journal_lock;" in text
    assert "static pthread_cond_t journal_cond = PTHREAD_COND_INITIALIZER;" in text
    assert "pthread_mutex_init(&journal_lock, &attr);" in text and "pthread_mutex_consistent(&journal_lock);" in text
    assert "pthread_cond_wait(&journal_cond, &journal_lock);" in text
    assert "pthread_cond_broadcast(&journal_cond);" in text
    assert "static rcl_mutex_t counter_lock = RCL_MUTEX_INITIALIZER(RCLIFY_LOCK_main_c_counter_lock);" in text
    assert [e.lock_id for e in lock_config.read(tree / "lock_config.h")] == ["main.c:counter_lock"]
    assert report["api_errors"] == []
    assert "kept a pthread_mutex_t (its regions hybrid: lock-kept-posix): journal_lock: " \
           "main.c:35: pthread_mutex_consistent(&journal_lock)" in stdout


def test_kept_locks_are_in_the_report(robust):
    _, report, _ = robust
    assert report["summary"]["locks_kept_posix"] == 1
    kept = {k["name"]: k for k in report["locks_kept_posix"]}
    assert kept["journal_lock"]["kind"] == "mutex" and kept["journal_lock"]["lock_ids"] == ["main.c:journal_lock"]
    assert kept["journal_lock"]["because"] == ["main.c:35: pthread_mutex_consistent(&journal_lock)"]
    assert kept["journal_cond"]["kind"] == "cond" and "waited on with journal_lock" in kept["journal_cond"]["because"][0]
    hybrid = [r for r in report["regions"] if r["status"] == "hybrid"]
    assert {r["reason"] for r in hybrid} == {"lock-kept-posix"} and len(hybrid) == 3
    assert all(r["lock"] == "&journal_lock" for r in hybrid)
    assert region(report, 65)["status"] == "extracted"  # the counter lock


def test_a_struct_field_is_kept_and_its_neighbours_are_not(tmp_path):
    tree = write_tree(tmp_path / "f", {
        "obj.h": "#include <pthread.h>\nstruct obj { pthread_mutex_t guard; int value; };\n"
                 "struct other { pthread_mutex_t lock; int n; };\nint obj_bump(struct obj *o);\n",
        "obj.c": '#include <errno.h>\n#include "obj.h"\n'
                 "void obj_init(struct obj *o)\n{\n    pthread_mutexattr_t a;\n    pthread_mutexattr_init(&a);\n"
                 "    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);\n    pthread_mutex_init(&o->guard, &a);\n}\n"
                 "int obj_bump(struct obj *o)\n{\n    if (pthread_mutex_lock(&o->guard) == EOWNERDEAD)\n"
                 "        pthread_mutex_consistent(&o->guard);\n    o->value++;\n    pthread_mutex_unlock(&o->guard);\n"
                 "    return o->value;\n}\n",
        "main.c": '#include "obj.h"\nstatic struct other oth = { PTHREAD_MUTEX_INITIALIZER, 0 };\n'
                  "int main(void)\n{\n    pthread_mutex_lock(&oth.lock);\n    oth.n++;\n    pthread_mutex_unlock(&oth.lock);\n"
                  "    return oth.n - 1;\n}\n"})
    report, _ = transform(tree, "-q")
    assert "struct obj { pthread_mutex_t guard; int value; };" in (tree / "obj.h").read_text()
    assert "struct other { rcl_mutex_t lock; int n; };" in (tree / "obj.h").read_text()
    obj = (tree / "obj.c").read_text()
    assert "pthread_mutex_init(&o->guard, &a);" in obj and "pthread_mutex_unlock(&o->guard);" in obj
    assert "oth = { RCL_MUTEX_INITIALIZER(RCLIFY_LOCK_main_c_oth_lock)," in (tree / "main.c").read_text()
    kept = report["locks_kept_posix"]
    assert [(k["name"], k["field"], k["lock_ids"]) for k in kept] == [("guard", True, ["obj.c:o->guard"])]
    assert [e.lock_id for e in lock_config.read(tree / "lock_config.h")] == ["main.c:oth.lock"]


ESCAPING = {
    "shared.h": "#include <pthread.h>\nextern pthread_mutex_t robust;\n",
    "a.c": '#include <errno.h>\n#include "shared.h"\nint n;\n'
           "static void lock_robust(pthread_mutex_t *m)\n{\n    if (pthread_mutex_lock(m) == EOWNERDEAD)\n"
           "        pthread_mutex_consistent(m);\n}\n"
           "void f(void)\n{\n    lock_robust(&robust);\n    n++;\n    pthread_mutex_unlock(&robust);\n}\n",
    "b.c": '#include "shared.h"\npthread_mutex_t robust = PTHREAD_MUTEX_INITIALIZER;\n',
    "c.c": "#include <pthread.h>\nstatic pthread_mutex_t solo = PTHREAD_MUTEX_INITIALIZER;\nint m;\n"
           "void g(void) { pthread_mutex_lock(&solo); m++; pthread_mutex_unlock(&solo); }\n",
}


def test_a_lock_that_cannot_be_kept_apart_becomes_an_rcl_lock_with_the_runtimes_consistent(tmp_path):
    """pthread_mutex_consistent(m) on a parameter: the lock is not known by a name, so it is not
    kept a pthread mutex; no file is left unchanged (one such call froze all of apr): the call
    becomes rcl_mutex_consistent, which runs on the robust lock's pthread mutex."""
    tree = write_tree(tmp_path / "e", ESCAPING)
    report, stdout = transform(tree)
    assert report["files_left_unchanged"] == {}
    a = (tree / "a.c").read_text()
    assert "if (rcl_mutex_lock(m) == EOWNERDEAD)" in a and "rcl_mutex_consistent(m);" in a
    assert "rcl_mutex_t robust = RCL_MUTEX_INITIALIZER(RCLIFY_LOCK_b_c_robust);" in (tree / "b.c").read_text()
    assert "RCL_EXECUTE" in (tree / "c.c").read_text()
    assert [e.lock_id for e in lock_config.read(tree / "lock_config.h")] == ["b.c:robust", "c.c:solo"]
    assert report["api_errors"] == [] and report["locks_kept_posix"] == []


def test_a_named_lock_that_escapes_is_an_rcl_lock_whose_regions_stay_calls(tmp_path):
    """`robust` is made consistent by name but also passed to a function: it cannot be kept apart,
    so it is an rcl_mutex_t; its regions, by its name, stay calls; another lock's are extracted."""
    files = dict(ESCAPING)
    files["a.c"] = ('#include <errno.h>\n#include "shared.h"\nint n;\nextern void lock_robust(pthread_mutex_t *m);\n'
                    "void f(void)\n{\n    pthread_mutex_lock(&robust);\n    n++;\n    pthread_mutex_unlock(&robust);\n}\n"
                    "void h(void)\n{\n    lock_robust(&robust);\n    pthread_mutex_consistent(&robust);\n"
                    "    pthread_mutex_unlock(&robust);\n}\n")
    tree = write_tree(tmp_path / "p", files)
    report, _ = transform(tree, "-q")
    assert report["files_left_unchanged"] == {} and report["locks_kept_posix"] == []
    assert [(r["file"], r["line"], r["status"], r.get("reason")) for r in report["regions"]] == \
        [("a.c", 7, "hybrid", "lock-kept-posix"), ("c.c", 4, "extracted", None)]
    assert "rcl_mutex_consistent(&robust);" in (tree / "a.c").read_text()


def test_regions_on_a_lock_made_consistent_through_a_pointer_stay_calls(tmp_path):
    """The lock's regions, by the call's argument, stay lock/unlock calls: the program reads
    what they return (EOWNERDEAD)."""
    tree = write_tree(tmp_path / "r", {
        "r.c": "#include <errno.h>\n#include <pthread.h>\nint n;\n"
               "int bump(pthread_mutex_t *m)\n{\n    int rc = pthread_mutex_lock(m);\n"
               "    if (rc == EOWNERDEAD)\n        pthread_mutex_consistent(m);\n    n++;\n"
               "    pthread_mutex_unlock(m);\n    return rc;\n}\n"})
    report, _ = transform(tree, "-q")
    assert [(r["line"], r["status"], r["reason"]) for r in report["regions"]] == [(6, "hybrid", "lock-kept-posix")]
    text = (tree / "r.c").read_text()
    assert "int rc = rcl_mutex_lock(m);" in text and "rcl_mutex_consistent(m);" in text


# -- every lock has its id at run time ----------------------------------------------------------------

@pytest.fixture(scope="module")
def zero(tmp_path_factory):
    tree = corpus_copy("zero_initialized_global", tmp_path_factory.mktemp("zero"))
    report, _ = transform(tree, "-q")
    return tree, report


def test_zero_initialised_locks_get_their_id(zero):
    tree, report = zero
    stats = (tree / "stats.c").read_text()
    assert "rcl_mutex_t stats_lock = RCL_MUTEX_INITIALIZER(RCLIFY_LOCK_stats_c_stats_lock);" in stats
    assert "static rcl_mutex_t ticket_lock = RCL_MUTEX_INITIALIZER(RCLIFY_LOCK_stats_c_next_ticket_ticket_lock);" in stats
    assert "__attribute__((constructor)) static void rclify_lock_id_stats_c_shard_locks(void)" in stats
    assert "shard_locks[i].config = config;" in stats
    assert "extern rcl_mutex_t stats_lock;" in (tree / "stats.h").read_text()  # the declaration gets none
    ids = {e.lock_id for e in lock_config.read(tree / "lock_config.h")}
    assert ids == {"stats.c:stats_lock", "stats.c:shard_locks[]", "stats.c:next_ticket:ticket_lock"}
    assert {r["lock_id"] for r in report["regions"]} == ids


def test_every_lock_has_its_id_at_run_time(zero):
    tree, _ = zero
    prog = build(tree)
    ids = {e.lock_id for e in lock_config.read(tree / "lock_config.h")}
    env = dict(os.environ, RCLIFY_LOCKS="*=profile", RCLIFY_PROFILE_OUT=str(tree / "profile.json"))
    run = subprocess.run([str(prog)], cwd=tree, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert {lock["id"] for lock in json.loads((tree / "profile.json").read_text())["locks"]} == ids
    env = dict(os.environ, RCLIFY_LOCKS="*=rcl", RCLIFY_STATS="1")
    run = subprocess.run([str(prog)], cwd=tree, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "stats.c:stats_lock" in run.stderr and "(anonymous)" not in run.stderr


def test_how_each_zero_initialised_shape_gets_its_id(tmp_path):
    files = {
        "locks.h": "#include <pthread.h>\nextern pthread_mutex_t g;\npthread_mutex_t in_header;\n"
                   "static pthread_mutex_t header_static;\n",
        "a.c": '#include "locks.h"\npthread_mutex_t g;\npthread_mutex_t twice;\nstatic pthread_mutex_t s1, s2;\n'
               "static pthread_mutex_t unused;\nstatic pthread_mutex_t filled = {0};\nstatic pthread_mutex_t inited;\n"
               "struct st { pthread_mutex_t lock; int n; };\nstruct st zero_struct;\n"
               "static struct st two[2] = { { PTHREAD_MUTEX_INITIALIZER, 0 }, { PTHREAD_MUTEX_INITIALIZER, 0 } };\n"
               "void f(void)\n{\n    static pthread_mutex_t local_static;\n    pthread_mutex_t automatic;\n"
               "    pthread_mutex_init(&inited, NULL);\n    pthread_mutex_init(&automatic, NULL);\n"
               "    pthread_mutex_lock(&s1); pthread_mutex_lock(&s2); pthread_mutex_lock(&filled);\n"
               "    pthread_mutex_lock(&local_static); pthread_mutex_lock(&automatic);\n}\n",
        "b.c": '#include "locks.h"\npthread_mutex_t twice;\n',
    }
    root = write_tree(tmp_path / "z", files)
    texts = dict(files)
    table = build_lock_table(discover(root, [root / f for f in files]), texts)
    how = {s.lock_id: (s.zero_init, s.constructor_in) for s in table.sites}
    assert how["a.c:g"] == ("initializer", "")
    assert how["a.c:twice"] == ("initializer", "") and "b.c:twice" not in how  # one object, one site
    assert how["a.c:s1"] == how["a.c:s2"] == ("constructor", "a.c")  # a declaration of two names
    assert how["a.c:unused"] == ("", "")  # never taken
    assert how["a.c:filled"] == ("initializer", "")
    assert how["a.c:inited"] == ("", "")  # pthread_mutex_init names it
    assert how["a.c:f:local_static"] == ("initializer", "")
    assert how["a.c:f:automatic"] == ("", "")  # automatic storage: the init call names it
    assert how["locks.h:in_header"] == ("constructor", "a.c")  # first .c file that includes the header
    assert how["locks.h:header_static"] == ("constructor", "locks.h")
    assert how["a.c:zero_struct.lock"] == ("constructor", "a.c")
    assert how["a.c:two[].lock"] == ("", "")  # its initializer names every element
    assert next(s for s in table.sites if s.lock_id == "a.c:two[].lock").kind == "static_mutex"


def test_zero_initialised_shapes_compile_and_keep_their_ids(tmp_path):
    files = {
        "locks.h": "#ifndef LOCKS_H\n#define LOCKS_H\n#include <pthread.h>\nextern pthread_mutex_t g;\n"
                   "static pthread_mutex_t header_static;\nstruct st { pthread_mutex_t lock; int n; };\n#endif\n",
        "a.c": '#include "locks.h"\npthread_mutex_t g;\nstatic pthread_mutex_t s1, s2;\nstatic pthread_mutex_t arr[3];\n'
               "static struct st zero_struct;\nstatic struct st designated = { .lock = PTHREAD_MUTEX_INITIALIZER };\n"
               "int n;\nint f(int i)\n{\n    static pthread_mutex_t local_static;\n"
               "    pthread_mutex_lock(&g); n++; pthread_mutex_unlock(&g);\n"
               "    pthread_mutex_lock(&s1); n++; pthread_mutex_unlock(&s1);\n"
               "    pthread_mutex_lock(&s2); n++; pthread_mutex_unlock(&s2);\n"
               "    pthread_mutex_lock(&arr[i]); n++; pthread_mutex_unlock(&arr[i]);\n"
               "    pthread_mutex_lock(&zero_struct.lock); n++; pthread_mutex_unlock(&zero_struct.lock);\n"
               "    pthread_mutex_lock(&designated.lock); n++; pthread_mutex_unlock(&designated.lock);\n"
               "    pthread_mutex_lock(&header_static); n++; pthread_mutex_unlock(&header_static);\n"
               "    pthread_mutex_lock(&local_static); n++; pthread_mutex_unlock(&local_static);\n"
               "    return n;\n}\n",
        "main.c": '#include "locks.h"\nint f(int);\nint main(void) { return f(1) == 8 ? 0 : 1; }\n',
    }
    tree = write_tree(tmp_path / "shapes", files)
    report, _ = transform(tree, "-q")
    assert report["summary"]["extracted"] == 8 and report["files_left_unchanged"] == {}
    prog = build(tree)
    env = dict(os.environ, RCLIFY_LOCKS="*=profile", RCLIFY_PROFILE_OUT=str(tree / "profile.json"))
    run = subprocess.run([str(prog)], cwd=tree, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    ids = {lock["id"] for lock in json.loads((tree / "profile.json").read_text())["locks"]}
    assert ids == {"a.c:g", "a.c:s1", "a.c:s2", "a.c:arr[]", "a.c:zero_struct.lock", "a.c:designated.lock",
                   "locks.h:header_static", "a.c:f:local_static"}


def test_mask_hides_a_kept_lock_from_the_rewrite_and_unmask_restores_it():
    from rclify.transform.kept_posix import Kept, KeptPosix
    kept = KeptPosix([Kept("robust", False), Kept("cv", False, cond=True)])
    text = ("static pthread_mutex_t robust = PTHREAD_MUTEX_INITIALIZER, /* x */\n"
            "static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;\nstatic pthread_mutex_t other;\n"
            "void f(void) { pthread_mutex_lock(&(robust)); pthread_cond_wait(&cv, &robust);"
            " pthread_mutex_lock(&other); /* pthread_mutex_lock(&robust) */ }\n")
    masked = kept.mask(text, "a.c")
    assert len(masked) == len(text)
    assert "static rclkeep_mutex_t robust = RCLKEEP_MUTEX_INITIALIZER" in masked
    assert "static rclkeep_cond_t cv = RCLKEEP_COND_INITIALIZER;" in masked
    assert "rclkeep_mutex_lock(&(robust)); rclkeep_cond_wait(&cv, &robust);" in masked
    assert "static pthread_mutex_t other;" in masked and "pthread_mutex_lock(&other)" in masked
    assert "/* pthread_mutex_lock(&robust) */" in masked  # comments are left alone
    assert KeptPosix.unmask(masked) == text


def test_consistent_and_ceilings_on_an_unkept_lock_become_the_runtime_calls(tmp_path):
    """A lock rclify cannot keep a pthread mutex of its own (a parameter here) is an rcl_mutex_t:
    its robust and ceiling calls are the runtime's, which run on its pthread mutex."""
    from rclify.transform.rewrite_api import rewrite_api
    root = write_tree(tmp_path / "r", {"r.c": "#include <pthread.h>\nint f(pthread_mutex_t *m, int *c)\n{\n"
                                              "    pthread_mutex_consistent(m);\n"
                                              "    pthread_mutex_consistent_np(m);\n"
                                              "    pthread_mutex_setprioceiling(m, 2, c);\n"
                                              "    return pthread_mutex_getprioceiling(m, c);\n}\n"})
    result = rewrite_api(root, [root / "r.c"], [], root / "lock_config.h")
    assert result.errors == []
    text = result[root / "r.c"]
    for call in ("rcl_mutex_consistent(m)", "rcl_mutex_consistent_np(m)", "rcl_mutex_setprioceiling(m, 2, c)",
                 "rcl_mutex_getprioceiling(m, c)"):
        assert call in text, text


def test_a_struct_instance_reads_the_struct_its_file_sees():
    """fio: fio.h's `struct thread_data` has no mutex; t/read-to-pipe-async.c defines its own
    `struct thread_data` with two.  init.c's `static struct thread_data def_thread;` (fio.h's)
    got two locks, `def_thread.lock` and `def_thread.done_lock`, whose constructors did not
    compile; the instance of the test program's own struct keeps its locks."""
    from rclify.lock_identity.struct_instances import struct_locks
    texts = {
        "fio.h": "struct thread_data { int thread_number; char name[16]; };\n",
        "init.c": '#include "fio.h"\nstatic struct thread_data def_thread;\n',
        "t/read-to-pipe-async.c": "#include <pthread.h>\nstruct thread_data {\n    pthread_mutex_t lock;\n"
                                  "    pthread_mutex_t done_lock;\n    int done;\n};\nstatic struct thread_data reader;\n",
    }
    assert [(s.file, s.normalized) for s in struct_locks(texts)] == [
        ("t/read-to-pipe-async.c", "reader.lock"), ("t/read-to-pipe-async.c", "reader.done_lock")]
