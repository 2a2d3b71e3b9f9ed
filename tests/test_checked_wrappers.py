"""Wrappers and lock statements with checks around the call (issue 37): a lock wrapper asserting its
argument before the call (vocabulary_inference.wrapper_shape, its accessor runs the check), and a
lock statement that fails by returning (Berkeley DB repmgr's LOCK_MUTEX, lock_statements/checked.py),
through a macro whose `} while (0)` follows a line continuation (libclang's token starts at the
backslash).  Extraction fixtures: wrapper_asserts_before_lock, checked_lock_returns_error; corpus
programs of the same names run original against transformed."""

from pathlib import Path

import pytest

from rclify.transform.analyse import analyse
from rclify.transform.lock_statements.calls import classify

WRAPPERS_C = r"""
#include <assert.h>
#include <pthread.h>

struct queue { pthread_mutex_t lock; int items; };
static int checks;

void lock_acquire(pthread_mutex_t *l) { assert(l); pthread_mutex_lock(l); }
void lock_release(pthread_mutex_t *l) { assert(l); pthread_mutex_unlock(l); }
void q_acquire(struct queue *q) { assert(q != 0 && q->items >= 0); pthread_mutex_lock(&q->lock); }
/* not checks: they change state, or call a function, before the lock (not under it) */
void counted_acquire(pthread_mutex_t *l) { assert(checks++ >= 0); pthread_mutex_lock(l); }
int valid(pthread_mutex_t *l);
void called_acquire(pthread_mutex_t *l) { assert(valid(l)); pthread_mutex_lock(l); }
void local_acquire(pthread_mutex_t *l) { int n; assert(n); pthread_mutex_lock(l); }
"""

REPMGR_C = r"""
#include <pthread.h>
#define DB_RUNRECOVERY (-30973)
int lock_mutex(pthread_mutex_t *m) { return (pthread_mutex_lock(m)); }
int unlock_mutex(pthread_mutex_t *m) { return (pthread_mutex_unlock(m)); }
#define	LOCK_MUTEX(m) do {						\
	if (lock_mutex(m) != 0)						\
		return (DB_RUNRECOVERY);				\
} while (0)
#define	UNLOCK_MUTEX(m) do {						\
	int __ret;							\
	if ((__ret = unlock_mutex(m)) != 0)				\
		return (__ret);						\
} while (0)
"""


def _vocab(root: Path, name: str, text: str):
    (root / name).write_text(text)
    return analyse(root, [root / name], lambda path: [], 1, lambda m: None).vocab


@pytest.fixture(scope="module")
def wrappers(tmp_path_factory):
    return _vocab(tmp_path_factory.mktemp("wrappers").resolve(), "wrappers.c", WRAPPERS_C)


def test_a_lock_wrapper_asserting_its_argument_first_is_a_wrapper(wrappers):
    acquire, release, whole = wrappers.wrappers["lock_acquire"], wrappers.wrappers["lock_release"], \
        wrappers.wrappers["q_acquire"]
    assert (acquire.kind, acquire.expr, acquire.checks, acquire.work) == ("lock", "l", "assert(l);", "")
    assert (release.kind, release.work, release.checks) == ("unlock", "assert(l);", "")  # under the lock
    assert (whole.expr, whole.checks) == ("&q->lock", "assert(q != 0 && q->items >= 0);")
    op = classify("lock_acquire(&q->lock);", wrappers)
    assert (op.kind, op.key, op.wrapper) == ("lock", "&q->lock", acquire)


def test_an_assert_that_changes_state_calls_or_reads_a_local_is_no_check(wrappers):
    assert not {"counted_acquire", "called_acquire", "local_acquire"} & set(wrappers.wrappers)


def test_the_accessor_runs_the_checks_before_returning_the_mutex(wrappers):
    from rclify.transform.wrapper_accessors import render_accessor
    text = render_accessor(wrappers.wrappers["lock_acquire"])
    assert text.index("assert(l);") < text.index("return l;")
    assert "#line 8" in text  # the assert's message names the wrapper's line
    assert "assert" not in render_accessor(wrappers.wrappers["lock_acquire"], fallback=True)


@pytest.mark.parametrize("statement, kind", [
    ("LOCK_MUTEX(&rep->mutex);", "lock"),
    ("UNLOCK_MUTEX(&rep->mutex);", "unlock"),
    ("if (lock_mutex(&rep->mutex) != 0) return (DB_RUNRECOVERY);", "lock"),
    ("if ((ret = unlock_mutex(&rep->mutex)) != 0) return (ret);", "unlock"),
])
def test_a_lock_statement_that_fails_by_returning(tmp_path, statement, kind):
    vocab = _vocab(tmp_path.resolve(), "repmgr.c", REPMGR_C)
    assert {"LOCK_MUTEX", "UNLOCK_MUTEX"} <= set(vocab.macros)
    assert "\\" not in vocab.macros["LOCK_MUTEX"].body  # `\` newline `}` read as `}`
    op = classify(statement, vocab)
    assert op is not None, statement
    assert (op.kind, op.key, op.checked) == (kind, "&rep->mutex", True)


def test_a_success_test_that_returns_is_no_checked_lock(tmp_path):
    """`if (lock(m) == 0) return (0);` returns when the lock was TAKEN: not a failure path."""
    vocab = _vocab(tmp_path.resolve(), "repmgr.c", REPMGR_C)
    assert classify("if (lock_mutex(&rep->mutex) == 0) return (0);", vocab) is None
