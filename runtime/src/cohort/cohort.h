/*
 * Lock cohorting (Dice, Marathe and Shavit, "Lock Cohorting: A General Technique for Designing
 * NUMA Locks", TOPC 2015): the protocol shared by the cohort locks of this folder.
 *
 * A cohort lock is one global lock and one local lock per CPU cluster (core/topology.h).  A thread
 * takes the local lock of the cluster it runs on, then the global lock, unless the previous holder
 * of that local lock passed the global lock on with it.  On release, a holder that sees a waiter on
 * its local lock (`alone?` is false) hands both over: the global lock changes hands without being
 * touched, and the lock and the data it protects stay in one cluster's caches.  After
 * RCL_COHORT_PASS_LIMIT consecutive hand-offs, or when alone, the holder releases the global lock,
 * then the local one, so other clusters get their turn (the paper's bound of 100).
 *
 * What the parts must provide:
 *   - the global lock is thread-oblivious: one thread of a cluster takes it, another releases it;
 *   - a local lock detects its cohort: alone() may answer "alone" while a waiter is arriving
 *     (the global lock is then released for nothing), but never "not alone" unless a waiter has
 *     committed to wait: a hand-off to nobody would keep the global lock forever.  No local lock
 *     here lets a waiter abandon its wait (timed locks only use try_acquire, core/raw_lock.c).
 *
 * Each algorithm file (cbomcs.c, ctkttkt.c, cptltkt.c) defines its global and local locks, fills
 * a struct cohort_ops, and ends with one line, RCL_DEFINE_COHORT_ALGORITHM(name, state, ops),
 * which stamps out its raw lock (core/raw_lock.h) and rcl_ops_<name> from the functions below, as
 * ck's CK_COHORT_PROTOTYPE stamps out a cohort lock from its parts; the compiler inlines them with
 * the ops known.  Its lock state starts with struct cohort, and each of its local locks starts
 * with struct cohort_local.
 */
#ifndef RCLIFY_COHORT_H
#define RCLIFY_COHORT_H

#include <stddef.h>

#include "core/atomics.h"
#include "core/raw_lock.h"
#include "core/topology.h"

/* Most consecutive hand-offs inside a cluster before the global lock is released. */
#define RCL_COHORT_PASS_LIMIT 100

/*
 * The cohort part of a local lock.  Only the holder of the local lock reads or writes it: the
 * local lock's own release/acquire orders one holder's writes before the next holder's reads.
 */
struct cohort_local {
    int global_passed;           /* 1: the last holder left the global lock held for the next */
    unsigned chain;              /* hand-offs since this cluster last took the global lock */
    /* Counts for tests and statistics (rcl_cohort_counts). */
    unsigned longest_chain;      /* the most hand-offs in a row seen */
    unsigned long global_takes;  /* acquisitions that took the global lock themselves */
    unsigned long passes;        /* acquisitions that found it passed on with the local lock */
};

/* The shared part of a cohort lock's state; the algorithm's global lock follows it. */
struct cohort {
    /* The local lock the holder took: the cluster it ran on when it queued, kept for its release
     * since it may run on another cluster by then.  Written by the thread that takes the global
     * lock, read by whoever releases it (the global lock or the hand-off chain orders the two). */
    struct cohort_local *home;
    char *locals;      /* nclusters local locks, local_size bytes apart; set by cohort_init */
    int nclusters;
    size_t local_size;
    size_t bytes;      /* memory of the lock, for rcl_cohort_counts; algorithms add what they allocate */
};

struct cohort_ops {
    size_t local_size; /* bytes of a local lock (starts with struct cohort_local, cache-line aligned) */
    /* Local locks: zero bytes are a free lock. */
    void (*local_acquire)(struct cohort_local *l, int policy);
    int (*local_try)(struct cohort_local *l);                   /* 1: taken; never waits */
    int (*local_alone)(struct cohort_local *l);                 /* by the holder: no waiter seen */
    void (*local_release)(struct cohort_local *l, int policy);
    int (*local_is_held)(struct cohort_local *l);
    /* The global lock, in the algorithm's state after struct cohort. */
    void (*global_acquire)(struct cohort *c, int policy);
    int (*global_try)(struct cohort *c);
    void (*global_release)(struct cohort *c, int policy);
    int (*global_is_held)(struct cohort *c);
    /* What the global lock allocates beyond the state, after the local locks are set up: 0 or an
     * errno value (the local locks are then freed).  NULL: nothing (zero bytes are a free lock). */
    int (*global_init)(struct cohort *c);
    void (*global_destroy)(struct cohort *c); /* before the local locks are freed; NULL: nothing */
};

/* Allocates the local locks, one per cluster of core/topology.h, zeroed (free): 0 or ENOMEM.
 * state_size is the algorithm's raw state (struct cohort and its global lock), for c->bytes. */
int cohort_init(struct cohort *c, size_t state_size, size_t local_size);
void cohort_destroy(struct cohort *c);

/* A cohort lock's whole set-up and tear-down: the local locks, and what the global lock adds. */
static inline int cohort_setup(struct cohort *c, const struct cohort_ops *ops, size_t state_size)
{
    int rc = cohort_init(c, state_size, ops->local_size);
    if (rc == 0 && ops->global_init && (rc = ops->global_init(c)) != 0)
        cohort_destroy(c);
    return rc;
}

static inline void cohort_teardown(struct cohort *c, const struct cohort_ops *ops)
{
    if (ops->global_destroy)
        ops->global_destroy(c);
    cohort_destroy(c);
}

static inline struct cohort_local *cohort_local_at(const struct cohort *c, int cluster)
{
    return (struct cohort_local *)(c->locals + (size_t)cluster * c->local_size);
}

/* The local lock of the cluster the calling thread runs on now. */
static inline struct cohort_local *cohort_my_local(const struct cohort *c)
{
    int cluster = c->nclusters == 1 ? 0 : rcl_current_cluster();
    if (__builtin_expect(cluster >= c->nclusters || cluster < 0, 0))
        cluster = 0;
    return cohort_local_at(c, cluster);
}

/* Bookkeeping of the holder once it has both locks. */
static inline void cohort_took_global(struct cohort *c, struct cohort_local *l)
{
    c->home = l;
    l->chain = 0;
    l->global_takes++;
}

static inline void cohort_took_pass(struct cohort *c, struct cohort_local *l)
{
    /* c->home == l already: the global lock was taken from this local lock and passed along it. */
    l->global_passed = 0;
    l->passes++;
    if (++l->chain > l->longest_chain)
        l->longest_chain = l->chain;
}

static inline void cohort_acquire(struct cohort *c, const struct cohort_ops *ops, int policy)
{
    struct cohort_local *l = cohort_my_local(c);
    ops->local_acquire(l, policy);
    if (l->global_passed) {
        cohort_took_pass(c, l);
        return;
    }
    ops->global_acquire(c, policy);
    cohort_took_global(c, l);
}

/* The local lock by try, then the global lock by try unless it came with the local one; a busy
 * global lock gives the local one back (to a waiter that arrived meanwhile, if any, which will
 * take the global lock itself: global_passed is 0). */
static inline int cohort_try_acquire(struct cohort *c, const struct cohort_ops *ops, int policy)
{
    struct cohort_local *l = cohort_my_local(c);
    if (!ops->local_try(l))
        return 0;
    if (l->global_passed) {
        cohort_took_pass(c, l);
        return 1;
    }
    if (!ops->global_try(c)) {
        ops->local_release(l, policy);
        return 0;
    }
    cohort_took_global(c, l);
    return 1;
}

static inline void cohort_release(struct cohort *c, const struct cohort_ops *ops, int policy)
{
    struct cohort_local *l = c->home;
    if (l->chain < RCL_COHORT_PASS_LIMIT && !ops->local_alone(l)) {
        /* A cluster-mate waits: it gets the global lock with the local one. */
        l->global_passed = 1;
        ops->local_release(l, policy);
        return;
    }
    /* Alone, or the cluster had its share: the global lock first (another cluster may take it
     * and overwrite c->home at once; l is kept), then the local lock with global_passed 0. */
    ops->global_release(c, policy);
    ops->local_release(l, policy);
}

/* For destroy's EBUSY: the global lock, or any local lock, is held. */
static inline int cohort_is_held(struct cohort *c, const struct cohort_ops *ops)
{
    if (ops->global_is_held(c))
        return 1;
    for (int i = 0; i < c->nclusters; i++)
        if (ops->local_is_held(cohort_local_at(c, i)))
            return 1;
    return 0;
}

/*
 * The raw lock and `const struct rcl_lock_ops rcl_ops_<name>` of the cohort algorithm whose state
 * is `state` (a type that starts with struct cohort) and whose parts are `cops` (a struct
 * cohort_ops): the last line of each algorithm file.
 */
#define RCL_DEFINE_COHORT_ALGORITHM(name, state, cops)                                              \
    static int name##_init(void *lock, const rcl_mutex_t *m)                                        \
    {                                                                                               \
        return cohort_setup(lock, &(cops), sizeof(state));                                          \
    }                                                                                               \
    static void name##_destroy(void *lock) { cohort_teardown(lock, &(cops)); }                      \
    static void name##_acquire(void *lock, int policy) { cohort_acquire(lock, &(cops), policy); }   \
    static int name##_try(void *lock, int policy) { return cohort_try_acquire(lock, &(cops), policy); } \
    static void name##_release(void *lock, int policy) { cohort_release(lock, &(cops), policy); }   \
    static int name##_is_held(void *lock) { return cohort_is_held(lock, &(cops)); }                 \
    static const struct rcl_raw_lock_ops name##_raw = {                                             \
        .size = sizeof(state),                                                                      \
        .init = name##_init,                                                                        \
        .destroy = name##_destroy,                                                                  \
        .acquire = name##_acquire,                                                                  \
        .try_acquire = name##_try,                                                                  \
        .release = name##_release,                                                                  \
        .is_held = name##_is_held,                                                                  \
    };                                                                                              \
    RCL_DEFINE_RAW_ALGORITHM(name, name##_raw)

/*
 * Counts of a cohort lock, for tests (tests/cohort.c) and diagnostics.  Exact only while no
 * thread uses the lock (the holders write them without atomics).
 */
struct rcl_cohort_counts {
    int clusters;                                   /* local locks of the lock */
    unsigned pass_limit;                            /* RCL_COHORT_PASS_LIMIT */
    unsigned long global_takes[RCL_MAX_CLUSTERS];   /* per cluster: took the global lock itself */
    unsigned long passes[RCL_MAX_CLUSTERS];         /* per cluster: got it passed with the local */
    unsigned longest_chain;                         /* most hand-offs in a row, any cluster */
    size_t bytes;                                   /* memory of the lock (m->impl and what it points to) */
};
/* 0, or EINVAL when m is not a resolved cohort lock. */
int rcl_cohort_counts(rcl_mutex_t *m, struct rcl_cohort_counts *out);

#endif
