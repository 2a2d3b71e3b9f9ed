/*
 * hsynch: H-Synch (Fatourou & Kallimanis, PPoPP 2012): hierarchical combining.
 *
 * One CC-Synch request queue per CPU cluster (core/topology.h: NUMA nodes, else groups sharing a
 * last-level cache, else one cluster; RCLIFY_CLUSTERS overrides), and a CLH lock between the
 * clusters' combiners.  A thread posts into the queue of the cluster it runs on; the thread that
 * gets its cluster's queue takes the CLH lock, and then holds the lock: it runs its own section,
 * serves the requests of its own cluster (RCL_COMBINE_BOUND at most, up to a request for the lock
 * itself), hands its cluster's queue on and leaves the CLH lock.  Requests travel only inside a
 * cluster; across clusters only the CLH lock moves.  With one cluster this is CC-Synch plus an
 * uncontended CLH lock.
 *
 * The CLH lock marks its tail free in the lowest bit, as the queue in combining.h does: the last
 * holder that finds nobody behind it leaves its node as a free tail, whoever swaps it out holds
 * the lock at once and keeps the node, and trylock claims a free tail with a CAS (no ABA: a
 * tagged tail always means free).
 *
 * Memory per lock: a line for the CLH tail, one for the holder's fields (192 bytes with the
 * generic head), the CLH lock's free tail node (64), and per cluster a line for its queue's
 * tail and that queue's free tail node (128): 384 bytes with one cluster.
 */
#include <stdlib.h>

#include "combining/combining.h"
#include "core/topology.h"

struct hsynch_cluster {
    struct rcl_ccq queue;
} RCL_ALIGNED;

struct hsynch {
    uintptr_t global;                 /* CLH tail between cluster combiners; | tag while free */
    int nclusters;
    struct hsynch_cluster *clusters;
    /* the holder's: */
    struct rcl_qnode *head RCL_ALIGNED; /* its node in its cluster's queue */
    struct rcl_qnode *global_node;      /* its CLH node, granted to the next cluster when it leaves */
    int cluster;
};

/* ---- the CLH lock between clusters ---- */

static void global_acquire(struct hsynch *l, int policy)
{
    struct rcl_qnode *mine = rcl_qnode_get(); /* flag WAITING: granted when we leave */
    uintptr_t prev = xchg_acq_rel(&l->global, (uintptr_t)mine);
    struct rcl_qnode *pred = RCL_COMB_UNTAG(prev);
    if (!(prev & RCL_COMB_TAG))
        rcl_comb_wait(&pred->flag, policy);
    rcl_qnode_put(pred); /* CLH: the predecessor's node is ours now */
    l->global_node = mine;
}

static int global_try(struct hsynch *l)
{
    uintptr_t tail = ld_acquire(&l->global);
    if (!(tail & RCL_COMB_TAG))
        return 0;
    struct rcl_qnode *mine = rcl_qnode_get();
    if (!cas_acq_rel(&l->global, &tail, (uintptr_t)mine)) {
        rcl_qnode_put(mine);
        return 0;
    }
    rcl_qnode_put(RCL_COMB_UNTAG(tail));
    l->global_node = mine;
    return 1;
}

/* Returns 1 when the lock was left free. */
static int global_release(struct hsynch *l, struct rcl_qnode *mine)
{
    uintptr_t expected = (uintptr_t)mine;
    if (cas_acq_rel(&l->global, &expected, (uintptr_t)mine | RCL_COMB_TAG))
        return 1; /* free: mine stays as the tail, for whoever swaps it out */
    rcl_flag_grant(&mine->flag); /* the next cluster's combiner waits on it */
    return 0;
}

/* ---- the lock ---- */

static int hsynch_init(void *state, const rcl_mutex_t *m)
{
    struct hsynch *l = state;
    int n = rcl_cluster_count();
    if (n < 1)
        n = 1;
    l->clusters = aligned_alloc(RCL_CACHE_LINE, (size_t)n * sizeof *l->clusters);
    if (!l->clusters)
        return ENOMEM;
    l->nclusters = n;
    for (int i = 0; i < n; i++)
        rcl_ccq_init(&l->clusters[i].queue);
    struct rcl_qnode *first = rcl_qnode_get();
    st_relaxed(&l->global, (uintptr_t)first | RCL_COMB_TAG);
    return 0;
}

static void hsynch_destroy(void *state)
{
    struct hsynch *l = state;
    for (int i = 0; i < l->nclusters; i++)
        rcl_ccq_destroy(&l->clusters[i].queue);
    rcl_qnode_put(RCL_COMB_UNTAG(ld_acquire(&l->global)));
    free(l->clusters);
}

static int hsynch_is_held(void *state)
{
    struct hsynch *l = state;
    if (!(ld_acquire(&l->global) & RCL_COMB_TAG))
        return 1;
    for (int i = 0; i < l->nclusters; i++)
        if (rcl_ccq_is_held(&l->clusters[i].queue))
            return 1;
    return 0;
}

static int cluster_now(const struct hsynch *l)
{
    int k = rcl_current_cluster();
    return k >= 0 && k < l->nclusters ? k : (k < 0 ? 0 : k % l->nclusters);
}

static int hsynch_post(void *state, struct rcl_comb_req *req, int policy)
{
    struct hsynch *l = state;
    int k = cluster_now(l);
    struct rcl_qnode *head;
    if (rcl_ccq_post(&l->clusters[k].queue, req, policy, &head))
        return 1;
    /* This thread combines for its cluster: it needs the lock between clusters too. */
    global_acquire(l, policy);
    l->head = head;
    l->cluster = k;
    return 0;
}

static int hsynch_try(void *state)
{
    struct hsynch *l = state;
    int k = cluster_now(l);
    struct rcl_qnode *head;
    if (!rcl_ccq_try(&l->clusters[k].queue, &head))
        return 0;
    if (!global_try(l)) {
        /* Another cluster holds the lock: give our cluster's queue back, serving nothing
         * (a request posted meanwhile makes its owner the cluster's combiner). */
        rcl_ccq_release(&l->clusters[k].queue, head, NULL);
        return 0;
    }
    l->head = head;
    l->cluster = k;
    return 1;
}

static int hsynch_release(struct rcl_comb *c, void *state, int policy)
{
    struct hsynch *l = state;
    /* Read before the cluster's queue is handed on: its next combiner writes them once it has
     * the CLH lock, which it gets from global_release below. */
    struct rcl_qnode *global_node = l->global_node;
    struct rcl_ccq *queue = &l->clusters[l->cluster].queue;
    struct rcl_comb_pass pass;
    rcl_comb_pass_begin(&pass, c);
    int cluster_free = rcl_ccq_release(queue, l->head, &pass);
    /* Free for a newcomer only if nobody of the cluster took over its queue either. */
    return global_release(l, global_node) && cluster_free;
}

static const struct rcl_comb_ops hsynch_ops = {
    .size = sizeof(struct hsynch),
    .init = hsynch_init,
    .destroy = hsynch_destroy,
    .is_held = hsynch_is_held,
    .post = hsynch_post,
    .try_acquire = hsynch_try,
    .release = hsynch_release,
};

RCL_DEFINE_COMBINING_ALGORITHM(hsynch, hsynch_ops);
