"""Variadic reads in a region (shapes/variadic_reads.py: lifted_reads): `va_start; x = va_arg(ap, T);
va_end;` run before the lock when every path of the region reaches them and nothing before them
in the region uses what they set; any other va_list use keeps the region hybrid (va_list).  That
the lifted region runs as the original is corpus/variadic_reads_in_region."""

import pytest
from transformed_source import transform_source

SOURCE = r"""
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static unsigned limit;
static char line[64];

int read_on_every_path(int option, ...) {
    va_list ap;
    unsigned v;
    pthread_mutex_lock(&m);
    limit++;
    va_start(ap, option);
    v = va_arg(ap, unsigned);
    va_end(ap);
    limit += v;
    pthread_mutex_unlock(&m);
    return 0;
}

int read_after_an_exit(int option, ...) {
    va_list ap;
    unsigned v;
    pthread_mutex_lock(&m);
    if (limit > 100) {
        pthread_mutex_unlock(&m);
        return -1;
    }
    va_start(ap, option);
    v = va_arg(ap, unsigned);
    va_end(ap);
    limit = v;
    pthread_mutex_unlock(&m);
    return 0;
}

int value_used_before(int option, ...) {
    va_list ap;
    unsigned v = 0;
    pthread_mutex_lock(&m);
    limit += v;
    va_start(ap, option);
    v = va_arg(ap, unsigned);
    va_end(ap);
    limit += v;
    pthread_mutex_unlock(&m);
    return 0;
}

int read_before_a_carried_loop(int option, ...) {
    va_list ap;
    unsigned v;
    pthread_mutex_lock(&m);
    va_start(ap, option);
    v = va_arg(ap, unsigned);
    va_end(ap);
    while (limit > v) {
        limit--;
        pthread_mutex_unlock(&m);
        v++;
        pthread_mutex_lock(&m);
    }
    pthread_mutex_unlock(&m);
    return 0;
}

int formats_under_the_lock(const char *fmt, ...) {
    va_list ap;
    pthread_mutex_lock(&m);
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&m);
    return 0;
}
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tree = tmp_path_factory.mktemp("variadic") / "tree"
    return tree, {f: found[0] for f, found in transform_source(tree, "variadic.c", SOURCE).items()}


def test_reads_on_every_path_run_before_the_lock(report):
    tree, regions = report
    assert regions["read_on_every_path"]["status"] == "extracted"
    assert regions["read_on_every_path"]["variadic_reads_before"]
    text = (tree / "variadic.c").read_text()
    caller = text[text.index("int read_on_every_path(int option, ...)"):]
    assert caller.index("va_end(ap);") < caller.index("RCL_EXECUTE(")


# a loop-carried section writes its pieces as they are: the reads are not moved there
@pytest.mark.parametrize("function", ["read_after_an_exit", "value_used_before", "formats_under_the_lock",
                                      "read_before_a_carried_loop"])
def test_other_variadic_uses_stay_hybrid(report, function):
    _, regions = report
    assert regions[function]["status"] == "hybrid"
    assert regions[function]["reason"] == "va_list"
