"""The lock vocabulary (rclify/transform/vocabulary.py, vocabulary_inference.py, lock_statements/):
the tree's lock macros and wrapper functions inferred with libclang, and statements read as lock
operations through them.

Uses the same fixture tree as tests/test_discover.py (tests/fixtures/smpl/tree/)."""

from pathlib import Path

import pytest

from rclify.ctext.tokens import call_arguments, normalize, split_args
from rclify.transform.analyse import analyse, regions_of
from rclify.transform.lock_statements.calls import classify
from rclify.transform.lock_statements.checked import checks_result
from rclify.transform.lock_statements.expansion import substitute
from rclify.transform.lock_statements.guards import guard_lock
from rclify.transform.lock_statements.scoped import scoped_lock, scoped_lock_shape
from rclify.transform.vocabulary import Vocabulary

TREE = Path(__file__).parent / "fixtures" / "smpl" / "tree"


@pytest.fixture(scope="module")
def analysis():
    files = sorted(p for p in TREE.rglob("*") if p.suffix in (".c", ".h"))
    return analyse(TREE.resolve(), [f.resolve() for f in files], lambda path: [f"-I{TREE.resolve()}"], 1, lambda m: None)


def test_macros_and_wrappers_are_inferred(analysis):
    vocab = analysis.vocab
    assert {"LOCK", "UNLOCK", "mutex_lock", "mutex_unlock", "TBL_LOCK", "TBL_UNLOCK"} <= set(vocab.macros)
    assert set(vocab.wrappers) == {"item_lock", "item_unlock", "stats_lock", "stats_unlock"}
    item_lock = vocab.wrappers["item_lock"]
    assert (item_lock.kind, item_lock.params, normalize(item_lock.expr), item_lock.file) == (
        "lock", ("hv",), "&item_locks[hv%16]", "shapes.c")
    assert vocab.wrappers["stats_lock"].params == ()


@pytest.mark.parametrize(
    "statement, kind, key, via",
    [
        ("LOCK(cache_lock);", "lock", "&cache_lock", "LOCK"),
        ("UNLOCK(cache_lock);", "unlock", "&cache_lock", "UNLOCK"),
        ("TBL_LOCK(tbl, i);", "lock", "&tbl->locks[i]", "TBL_LOCK"),
        ("TBL_UNLOCK(tbl, i);", "unlock", "&tbl->locks[i]", "TBL_UNLOCK"),
        ("mutex_lock(&item_locks[3]);", "lock", "&item_locks[3]", "mutex_lock"),
        ("{pthread_mutex_lock(&(tbl->locks[i]));}", "lock", "&tbl->locks[i]", ""),
        ("if (pthread_mutex_lock(&cache_lock) != 0) abort();", "lock", "&cache_lock", ""),
        ("(void)pthread_mutex_unlock(&cache_lock);", "unlock", "&cache_lock", ""),
        ("item_lock(hv);", "lock", "&item_locks[hv % 16]", "item_lock"),
        ("stats_unlock();", "unlock", "&stats.mutex", "stats_unlock"),
    ],
)
def test_statements_are_read_through_the_vocabulary(analysis, statement, kind, key, via):
    op = classify(statement, analysis.vocab)
    assert op is not None, statement
    assert (op.kind, op.key.replace(" ", ""), op.via) == (kind, key.replace(" ", ""), via)


def test_a_macro_that_does_more_than_lock_is_not_a_lock_statement(analysis):
    assert classify("LOCK_AND_COUNT(&shared_lock, counter);", analysis.vocab) is None


def test_regions_through_macros_and_wrappers(analysis):
    shapes = next(p for p in analysis.parsed.values() if p.path.name == "shapes.c")
    found = {(r.line, r.lock.via) for fr in regions_of(shapes, analysis.vocab) for r in fr.regions}
    assert {(43, "LOCK"), (54, "item_lock"), (61, "stats_lock"), (37, "")} <= found


def test_substitution_and_argument_splitting():
    assert substitute("&(m)", ("m",), ["cache_lock"]) == "&((cache_lock))"
    assert substitute("pthread_mutex_lock(&name##_lock)", ("name",), ["stats"]) == "pthread_mutex_lock(&stats_lock)"
    assert substitute("a ## b", ("a",), ["x"]) == "xb"  # pasted arguments are not parenthesised
    assert substitute("f(#x)", ("x",), ['a "b"']) == 'f("a \\"b\\"")'
    assert substitute("g(x, __VA_ARGS__)", ("x", "..."), ["1", "2", "3"]) == "g((1), 2, 3)"
    assert substitute("x ##", ("x",), ["a"]) is None
    assert split_args("&t->locks[i, j], f(a, b), \"x, y\"") == ["&t->locks[i, j]", "f(a, b)", "\"x, y\""]
    assert split_args("") == []
    assert call_arguments("g(a, /* , */ b) + 1", 1) == (["a", "/* , */ b"], 15)
    assert call_arguments("g(a, b", 1) is None


# -- the idioms of issue 11: wrappers with checks, extra arguments and work; scoped statements;
#    lock guards; lock macros under #if --------------------------------------------------------

IDIOMS_H = """\
#ifndef IDIOMS_H
#define IDIOMS_H
#include <pthread.h>
#include <stdlib.h>
struct lk { pthread_mutex_t m; long n; };
static inline void hdr_take_(struct lk *l, const char *f, int line)
{
    int err = pthread_mutex_lock(&l->m);
    if (__builtin_expect(err, 0))
        abort();
    (void)f; (void)line;
}
#define HDR_TAKE(l) hdr_take_((l), __FILE__, __LINE__)
#endif
"""

IDIOMS_C = """\
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include "idioms.h"
#define LOCK_DEBUG 1
#if LOCK_DEBUG
#define DBG_LOCK(m) do { if (pthread_mutex_lock(&(m))) abort(); } while (0)
#else
#define DBG_LOCK(m) no_such_function(&(m))
#endif
static pthread_cond_t cv;
static int flag;
void fail(int err, const char *f, int line);
void take_(struct lk *l, const char *f, int line)
{
    int r = pthread_mutex_lock(&l->m);
    if (r)
        fail(r, f, line);
}
#define take(l) take_(l, __FILE__, __LINE__)
void give_(struct lk *l, const char *f, int line)
{
    int r;
    r = pthread_mutex_unlock(&l->m);
    if (r != 0)
        fail(r, f, line);
}
static void enter(struct lk *l) { pthread_mutex_lock(&l->m); l->n++; }
static void leave_publish(struct lk *l)
{
    flag = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&l->m);
}
static void leave_late(struct lk *l) { pthread_mutex_unlock(&l->m); l->n--; }
static void enter_wait(struct lk *l) { pthread_mutex_lock(&l->m); while (!flag) pthread_cond_wait(&cv, &l->m); }
static void enter_counted(struct lk *l) { static int times; pthread_mutex_lock(&l->m); times++; }
static void enter_maybe(struct lk *l) { pthread_mutex_lock(&l->m); if (!flag) return; l->n++; }
static pthread_mutex_t *guard_lock(pthread_mutex_t *m) { pthread_mutex_lock(m); return m; }
static void guard_unlock(pthread_mutex_t **m) { pthread_mutex_unlock(*m); }
#define GUARD(m) pthread_mutex_t *g_ __attribute__((cleanup(guard_unlock))) = guard_lock(&(m))
#define WITH_LOCK(m) for (int i_ = (pthread_mutex_lock(&(m)), 0); !i_; pthread_mutex_unlock(&(m)), i_ = 1)
static inline void xz_lock(pthread_mutex_t *mutex) { int ret = pthread_mutex_lock(mutex); assert(ret == 0); (void)ret; }
static inline void xz_unlock(pthread_mutex_t *mutex) { int ret = pthread_mutex_unlock(mutex); assert(!ret); (void) ret; }
static inline void xz_unlock_late(pthread_mutex_t *mutex) { int ret = pthread_mutex_unlock(mutex); assert(ret == flag); }
#define SYNC(mutex) SYNC_1(mutex, __LINE__)
#define SYNC_1(mutex, line) SYNC_2(mutex, line)
#define SYNC_2(mutex, line) \\
    for (unsigned int i_ ## line = 0; i_ ## line ? (xz_unlock(&(mutex)), 0) : (xz_lock(&(mutex)), 1); i_ ## line = 1) \\
        for (unsigned int j_ ## line = 0; !j_ ## line; j_ ## line = 1)
"""


@pytest.fixture(scope="module")
def idioms(tmp_path_factory):
    root = tmp_path_factory.mktemp("idioms").resolve()
    (root / "idioms.h").write_text(IDIOMS_H)
    (root / "idioms.c").write_text(IDIOMS_C)
    return analyse(root, [root / "idioms.c", root / "idioms.h"], lambda path: [f"-I{root}"], 1,
                   lambda m: None).vocab


def test_checked_wrappers_with_extra_arguments(idioms):
    take, give = idioms.wrappers["take_"], idioms.wrappers["give_"]
    assert (take.kind, take.params, take.expr, take.work) == ("lock", ("l", "f", "line"), "&l->m", "")
    assert (give.kind, give.expr, give.work) == ("unlock", "&l->m", "")
    op = classify("take(&a->lk);", idioms)  # the macro over the wrapper is learnt once the wrapper is
    assert (op.kind, op.via, op.wrapper.name, op.key) == ("lock", "take", "take_", "&a->lk.m")  # (&E)->m is E.m
    assert op.mutex.startswith("rclify_mutex_of_take_(")


def test_static_inline_wrappers_of_a_header(idioms):
    wrapper = idioms.wrappers["hdr_take_"]
    assert (wrapper.file, wrapper.in_header, wrapper.storage) == ("idioms.h", True, "static inline ")
    assert classify("HDR_TAKE(&x);", idioms).wrapper is wrapper


def test_wrappers_with_work_of_their_own(idioms):
    enter, publish = idioms.wrappers["enter"], idioms.wrappers["leave_publish"]
    assert (enter.kind, enter.work) == ("lock", "l->n++;")
    assert publish.kind == "unlock" and "pthread_cond_broadcast(&cv);" in publish.work
    assert publish.work.startswith("flag = 1;") and "pthread_mutex_unlock" not in publish.work
    assert classify("leave_publish(q);", idioms).work == "rclify_work_of_leave_publish(q);"
    # work that is not under the lock, that waits, keeps a static or may return early: no wrapper
    assert not {"leave_late", "enter_wait", "enter_counted", "enter_maybe"} & set(idioms.wrappers)


def test_wrappers_reading_their_result_after_the_call(idioms):
    """xz's mythread_mutex_lock/unlock: `assert(ret == 0); (void)ret;` after the call reads only
    the result (0 from the runtime): no work; reading anything else is not dropped."""
    lock, unlock = idioms.wrappers["xz_lock"], idioms.wrappers["xz_unlock"]
    assert (lock.kind, lock.work, unlock.kind, unlock.work) == ("lock", "", "unlock", "")
    assert "xz_unlock_late" not in idioms.wrappers  # work after an unlock: not under the lock


def test_pasted_arguments_lose_the_parentheses_of_an_outer_substitution():
    assert substitute("int i_ ## line = 0", ("line",), ["(__LINE__)"]) == "int i___LINE__ = 0"
    assert substitute("x = line", ("line",), ["(__LINE__)"]) == "x = ((__LINE__))"


@pytest.mark.parametrize("statement, kind", [
    ("((void)(pthread_mutex_lock(&m) && (abort(), 0)));", "lock"),       # lbzip2's xlock
    ("(void)(pthread_mutex_unlock(&m) && (abort(), 0));", "unlock"),
    ("pthread_mutex_lock(&m) == 0 || abort();", "lock"),
    ("pthread_mutex_lock(&m) != 0 && (fprintf(stderr, \"x\"), exit(1), 0);", "lock"),
])
def test_a_lock_whose_failure_runs_a_call_that_does_not_return(idioms, statement, kind):
    op = classify(statement, idioms)
    assert (op.kind, op.key, op.checked) == (kind, "&m", True)


@pytest.mark.parametrize("statement", [
    "pthread_mutex_lock(&m) && (log_it(), 0);",      # the failure path returns: not a checked lock
    "pthread_mutex_lock(&m) == 0 && (abort(), 0);",  # aborts on success
    "pthread_mutex_lock(&m) || abort();",            # aborts on success
])
def test_other_and_or_shapes_are_not_locks(idioms, statement):
    assert classify(statement, idioms) is None


def test_lock_macros_under_if_are_read_from_the_branch_the_build_compiles(idioms):
    op = classify("DBG_LOCK(stats);", idioms)
    assert (op.kind, op.key, op.checked) == ("lock", "&stats", True)


@pytest.mark.parametrize("header, key", [
    ("WITH_LOCK(stats)", "&stats"),
    ("for (int i = pthread_mutex_lock(&m); !i; pthread_mutex_unlock(&m), i++)", "&m"),
    ("for (int once = (enter(l), 1); once; once = 0, give_(k, 0, 0))", None),  # another lock's unlock
    ("for (int once = (take_(l, 0, 0), 1); once; once = 0, leave_publish(l))", None),  # work after the body
    ("for (int once = (take_(l, 0, 0), 1); once; once = 0, give_(l, 0, 0))", "&l->m"),
    ("for (int i = (pthread_mutex_lock(&m), 0); i < 2; pthread_mutex_unlock(&m), i++)", None),  # twice
    ("for (int i = (pthread_mutex_lock(&m), 0); !i; pthread_mutex_unlock(&m))", None),  # forever
    ("for (int i = 0; !i; pthread_mutex_unlock(&m), i = 1)", None),  # no lock
    ("for (int i = 0; i < n; i++)", None),
    # xz's mythread_sync: lock and unlock in the condition's arms, the body in a run-once loop
    ("SYNC(coder->mutex)", "&coder->mutex"),
    ("for (int i = 0; i ? (pthread_mutex_unlock(&m), 0) : (pthread_mutex_lock(&m), 1); i = 1)", "&m"),
    ("for (int i = 1; !i ? (pthread_mutex_unlock(&m), 0) : (pthread_mutex_lock(&m), 1); i = 0)", "&m"),
    ("for (int i = 0; i ? (pthread_mutex_lock(&m), 0) : (pthread_mutex_unlock(&m), 1); i = 1)", None),  # unlocks first
    ("for (int i = 0; i ? (pthread_mutex_unlock(&m), 1) : (pthread_mutex_lock(&m), 1); i = 1)", None),  # forever
    ("for (int i = 0; i ? (pthread_mutex_unlock(&m), 0) : (pthread_mutex_lock(&m), 1); i++)", "&m"),
    ("for (int i = 0; i ? (pthread_mutex_unlock(&m), 0) : (pthread_mutex_lock(&m), 1); ) ", None),  # never leaves
    ("for (int i = 0; i ? (pthread_mutex_unlock(&m), 0) : (pthread_mutex_lock(&m), 1); i = 1) for (int j = 0; j < 2; j++)", None),
])
def test_scoped_lock_statements(idioms, header, key):
    op = scoped_lock(header, idioms)
    assert (op.key.replace(" ", "") if op else None) == key


def test_scoped_lock_shapes_say_where_break_ends_the_section(idioms):
    assert scoped_lock_shape("WITH_LOCK(stats)", idioms)[1] is False  # break leaves with the lock held
    assert scoped_lock_shape("SYNC(stats)", idioms)[1] is True  # break ends the run-once inner loop


def test_cleanup_lock_guards(idioms):
    guard = guard_lock("GUARD(stats_lock);", idioms)
    assert (guard.op.kind, guard.op.key, guard.op.mutex, guard.variable) == ("lock", "&stats_lock", "(&stats_lock)", "g_")
    assert guard.release.wrapper.name == "guard_unlock"
    comma = "pthread_mutex_t *g __attribute__((cleanup(guard_unlock))) = (pthread_mutex_lock(&m), &m);"
    assert guard_lock(comma, idioms).op.key == "&m"
    assert guard_lock("pthread_mutex_t *g __attribute__((cleanup(guard_unlock))) = (pthread_mutex_lock(&m), &n);",
                      idioms) is None  # the variable would not hold the locked mutex
    assert guard_lock("pthread_mutex_t *g __attribute__((cleanup(free))) = guard_lock(&m);", idioms) is None
    assert guard_lock("pthread_mutex_t *g = guard_lock(&m);", idioms) is None  # no cleanup: no guard


@pytest.mark.parametrize("test, checks", [
    ("if (r) fail();", True), ("if (r != 0) { abort(); }", True), ("if (__builtin_expect(r, 0)) abort();", True),
    ("if (!!(r)) abort();", True), ("if (r == 0) go();", False), ("if (r) a(); else b();", False),
    ("if (other) abort();", False),
])
def test_checks_of_a_lock_result(test, checks):
    op = classify("r = pthread_mutex_lock(&m);", Vocabulary())
    assert checks_result(test, op) is checks
