/*
 * The cohort locks' shared state (cohort/cohort.h): one local lock per cluster that exists, in
 * one allocation, each on its own cache line(s); and their counts for tests.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cohort/cohort.h"

static size_t round_to_line(size_t n)
{
    return (n + RCL_CACHE_LINE - 1) / RCL_CACHE_LINE * RCL_CACHE_LINE;
}

int cohort_init(struct cohort *c, size_t state_size, size_t local_size)
{
    int n = rcl_cluster_count();
    size_t bytes = (size_t)n * local_size;
    c->locals = aligned_alloc(RCL_CACHE_LINE, bytes);
    if (!c->locals)
        return ENOMEM;
    memset(c->locals, 0, bytes);
    c->nclusters = n;
    c->local_size = local_size;
    c->home = NULL;
    /* core/raw_lock.c's head is one cache line, then the state rounded up to lines. */
    c->bytes = RCL_CACHE_LINE + round_to_line(state_size) + bytes;
    return 0;
}

void cohort_destroy(struct cohort *c)
{
    free(c->locals);
    c->locals = NULL;
}

int rcl_cohort_counts(rcl_mutex_t *m, struct rcl_cohort_counts *out)
{
    int alg = rcl_mutex_algorithm(m);
    if ((alg != RCL_ALG_CBOMCS && alg != RCL_ALG_CTKTTKT && alg != RCL_ALG_CPTLTKT) || !m->impl)
        return EINVAL;
    const struct cohort *c = rcl_raw_state(m);
    memset(out, 0, sizeof *out);
    out->clusters = c->nclusters;
    out->pass_limit = RCL_COHORT_PASS_LIMIT;
    out->bytes = c->bytes;
    for (int i = 0; i < c->nclusters && i < RCL_MAX_CLUSTERS; i++) {
        const struct cohort_local *l = cohort_local_at(c, i);
        out->global_takes[i] = ld_relaxed(&l->global_takes);
        out->passes[i] = ld_relaxed(&l->passes);
        unsigned longest = ld_relaxed(&l->longest_chain);
        if (longest > out->longest_chain)
            out->longest_chain = longest;
    }
    return 0;
}
