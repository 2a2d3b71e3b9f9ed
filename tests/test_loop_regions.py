"""Loop-carried sections (rclify/transform/shapes/loop_carried.py): which loops that release and retake
their lock in their body become one section, and which stay hybrid for the plain region's reason.
That the extracted ones behave as the original, under every algorithm, is corpus/loop_carried_sections."""

import pytest

from rclify.transform.analyse import analyse, regions_of

SOURCE = r"""
#include <pthread.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int n, stop;
void work(int);

void worker(void) {               /* for (;;), condvar wait, exit by unlock; break */
    pthread_mutex_lock(&m);
    for (;;) {
        while (n == 0 && !stop)
            pthread_cond_wait(&c, &m);
        if (stop) {
            pthread_mutex_unlock(&m);
            break;
        }
        n--;
        pthread_mutex_unlock(&m);
        work(n);
        pthread_mutex_lock(&m);
    }
}

void drain(void) {                /* while, final unlock after the loop */
    pthread_mutex_lock(&m);
    while (n > 0) {
        n--;
        pthread_mutex_unlock(&m);
        work(1);
        pthread_mutex_lock(&m);
    }
    stop = 1;
    pthread_mutex_unlock(&m);
}

void continue_unlocked(void) {    /* unlock; continue: the test would run unlocked */
    pthread_mutex_lock(&m);
    while (n > 0) {
        if (n == 3) {
            pthread_mutex_unlock(&m);
            continue;
        }
        n--;
        pthread_mutex_unlock(&m);
        work(1);
        pthread_mutex_lock(&m);
    }
    pthread_mutex_unlock(&m);
}

void b_continues(void) {          /* B continues the loop: its test would run unlocked */
    pthread_mutex_lock(&m);
    while (n > 0) {
        n--;
        pthread_mutex_unlock(&m);
        if (n == 2)
            continue;
        pthread_mutex_lock(&m);
    }
    pthread_mutex_unlock(&m);
}

void held_break_no_unlock(void) { /* a lock-held break and nothing after the loop releases it */
    pthread_mutex_lock(&m);
    for (;;) {
        if (stop)
            break;
        pthread_mutex_unlock(&m);
        work(1);
        pthread_mutex_lock(&m);
    }
}

void local_across(void) {         /* a local of A used in B */
    pthread_mutex_lock(&m);
    while (n > 0) {
        int mine = n--;
        pthread_mutex_unlock(&m);
        work(mine);
        pthread_mutex_lock(&m);
    }
    pthread_mutex_unlock(&m);
}

void twice(void) {                /* two unlock/relock pairs in the body */
    pthread_mutex_lock(&m);
    while (n > 0) {
        n--;
        pthread_mutex_unlock(&m);
        work(1);
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
        work(2);
        pthread_mutex_lock(&m);
    }
    pthread_mutex_unlock(&m);
}
"""


@pytest.fixture(scope="module")
def regions(tmp_path_factory):
    root = tmp_path_factory.mktemp("loops").resolve()
    path = root / "loops.c"
    path.write_text(SOURCE)
    analysis = analyse(root, [path], lambda p: [], 1, lambda m: None)
    found = {}
    for fr in regions_of(analysis.parsed[path], analysis.vocab):
        found[fr.function.spelling] = fr.regions
    return found


@pytest.mark.parametrize("function, test", [("worker", None), ("drain", "n > 0")])
def test_worker_loops_are_one_section(regions, function, test):
    (region,) = regions[function]  # the relock inside the loop is no region of its own
    assert region.extractable and region.loop is not None, region.problems
    text = region.parsed.text
    assert (text(*region.loop.test) if region.loop.test else None) == test
    assert text(*region.loop.released).strip().startswith("work(")
    assert (region.loop.after is None) == (function == "worker")


def test_the_early_unlock_break_of_a_worker_is_an_exit(regions):
    (region,) = regions["worker"]
    assert [e.drop_final_break for e in region.exits] == [True]


@pytest.mark.parametrize("function", ["continue_unlocked", "b_continues", "held_break_no_unlock"])
def test_other_loops_stay_hybrid(regions, function):
    found = regions[function]
    assert found and all(r.loop is None for r in found)
    assert not found[0].extractable


@pytest.mark.parametrize("function, windows", [("local_across", 1), ("twice", 2)])
def test_loops_that_are_not_loop_carried_have_windows(regions, function, windows):
    """Not loop-carried: a local of A used in B, two unlock/relock pairs.  The plain region's
    windows take them (tests/test_windows.py: local_across is refused there, at planning)."""
    (region,) = regions[function]
    assert region.loop is None and len(region.windows) == windows
