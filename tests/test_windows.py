"""Windows (regions.py): a region that unlocks and relocks its lock inside nested code becomes a
resumable section, or stays hybrid for a stated reason.  Each function below is one case; the
transform's report says what became of its region.  That the extracted ones behave as the
original under every algorithm is corpus/unlock_relock_windows."""

import re

import pytest
from transformed_source import compile_errors, transform_source

SOURCE = r"""
#include <pthread.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, other = PTHREAD_MUTEX_INITIALIZER;
static int n, cache[8], valid[8];
int load(int);

int miss_loads_unlocked(int k) {      /* a window in an if */
    int v;
    pthread_mutex_lock(&m);
    if (!valid[k]) {
        pthread_mutex_unlock(&m);
        v = load(k);
        pthread_mutex_lock(&m);
        cache[k] = v;
        valid[k] = 1;
    }
    v = cache[k];
    pthread_mutex_unlock(&m);
    return v;
}

int b_returns(int k) {                /* B may leave the function: it runs in the caller */
    pthread_mutex_lock(&m);
    if (n > 0) {
        pthread_mutex_unlock(&m);
        if (load(k) < 0)
            return -1;
        pthread_mutex_lock(&m);
        n--;
    }
    pthread_mutex_unlock(&m);
    return 0;
}

void local_before_only(void) {        /* a local of the section used before the window only */
    pthread_mutex_lock(&m);
    while (n > 0) {
        int seen = n--;
        cache[0] += seen;
        if (seen > 2) {
            pthread_mutex_unlock(&m);
            load(0);
            pthread_mutex_lock(&m);
        }
    }
    pthread_mutex_unlock(&m);
}

void local_in_b(void) {               /* B names a local of the section: declared in the caller */
    pthread_mutex_lock(&m);
    if (n > 0) {
        int mine = n--;
        pthread_mutex_unlock(&m);
        load(mine);
        pthread_mutex_lock(&m);
    }
    pthread_mutex_unlock(&m);
}

void local_after(void) {              /* a local used after the window: declared in the caller */
    pthread_mutex_lock(&m);
    if (n > 0) {
        int mine = n--;
        pthread_mutex_unlock(&m);
        load(0);
        pthread_mutex_lock(&m);
        cache[1] = mine;
    }
    pthread_mutex_unlock(&m);
}

void name_seen_after(void) {          /* its declaration before the call would hide the later n2 */
    int n2 = 0;
    pthread_mutex_lock(&m);
    if (n > 0) {
        int n2 = n--;
        pthread_mutex_unlock(&m);
        load(0);
        pthread_mutex_lock(&m);
        cache[2] = n2;
    }
    pthread_mutex_unlock(&m);
    cache[3] = n2;
}

void loop_variable(void) {            /* a for's own variable: the next round reads it */
    pthread_mutex_lock(&m);
    for (int i = 0; i < n; i++) {
        pthread_mutex_unlock(&m);
        load(0);
        pthread_mutex_lock(&m);
    }
    pthread_mutex_unlock(&m);
}

void b_breaks_out(void) {             /* B breaks the section's loop */
    pthread_mutex_lock(&m);
    while (n > 0) {
        n--;
        if (n == 3) {
            pthread_mutex_unlock(&m);
            if (load(0))
                break;
            pthread_mutex_lock(&m);
        }
    }
    pthread_mutex_unlock(&m);
}

void other_lock_held(void) {          /* another lock held across the window */
    pthread_mutex_lock(&m);
    pthread_mutex_lock(&other);
    if (n > 0) {
        pthread_mutex_unlock(&m);
        load(0);
        pthread_mutex_lock(&m);
    }
    pthread_mutex_unlock(&other);
    pthread_mutex_unlock(&m);
}

void relock_under_another_if(void) {  /* the relock in its own #if block: the window splits it */
    pthread_mutex_lock(&m);
    if (n > 0) {
        pthread_mutex_unlock(&m);
        load(0);
#ifndef NO_RELOCK_BLOCK
        pthread_mutex_lock(&m);
#endif
    }
    pthread_mutex_unlock(&m);
}
"""

EXTRACTED = {"miss_loads_unlocked", "b_returns", "local_before_only", "local_in_b", "local_after"}
HYBRID = {"name_seen_after": "local-across-window", "loop_variable": "local-across-window",
          "b_breaks_out": "jump-in-tail",
          "other_lock_held": "hand-over-hand", "relock_under_another_if": "preprocessor-conditional"}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tree = tmp_path_factory.mktemp("windows") / "tree"
    return tree, transform_source(tree, "windows.c", SOURCE)


@pytest.mark.parametrize("function", sorted(EXTRACTED))
def test_windows_are_extracted_as_one_resumable_section(report, function):
    tree, regions = report
    (region,) = regions[function]  # the relock is part of the region, no region of its own
    assert region["status"] == "extracted" and region["windows"] == 1, region
    text = (tree / "windows.c").read_text()
    assert f"rclify_resume_{function}_1 = 1;" in text  # the caller resumes the section after B
    if function == "local_before_only":  # dead at the window: it stays the section's
        assert region["hoisted"] == []
    if function in ("local_in_b", "local_after"):  # the section's local, declared before the call
        assert re.search(r"int mine;\s*\{\s*int rclify_resume_" + function, text)


@pytest.mark.parametrize("function", sorted(HYBRID))
def test_windows_that_cannot_be_resumed_stay_hybrid(report, function):
    _, regions = report
    region = regions[function][0]
    assert region["status"] == "hybrid"
    assert HYBRID[function] in [region["reason"], *region["other_reasons"]], region


def test_the_transformed_file_compiles_with_and_without_its_conditions(report):
    tree, _ = report
    for defines in ([], ["-DNO_RELOCK_BLOCK"]):
        assert compile_errors(tree / "windows.c", *defines) == ""
