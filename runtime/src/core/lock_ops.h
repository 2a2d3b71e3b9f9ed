/*
 * The interface every lock algorithm implements: each algorithm registered in
 * include/rclify/algorithms.def defines one `const struct rcl_lock_ops rcl_ops_<name>`, in
 * src/<family>/<name>.c (the folder of its family holds the parts its members share); its name
 * comes from the registry (rcl_algorithm_name).
 */
#ifndef RCLIFY_LOCK_OPS_H
#define RCLIFY_LOCK_OPS_H

#include "rclify.h"

struct rcl_lock_ops {
    /* Set up m->impl for m->kind and m->config; called once, when the lock is resolved. */
    int (*init)(rcl_mutex_t *m);
    int (*destroy)(rcl_mutex_t *m);
    /* Hybrid mode: the caller runs the section itself between lock and unlock. */
    int (*lock)(rcl_mutex_t *m);
    int (*trylock)(rcl_mutex_t *m);
    int (*unlock)(rcl_mutex_t *m);
    /*
     * lock with a deadline: abstime on clock (CLOCK_REALTIME or CLOCK_MONOTONIC, checked by the
     * caller).  Returns what pthread_mutex_clocklock returns on a mutex of m->kind: 0 (held in
     * hybrid mode, released with unlock), ETIMEDOUT once abstime has passed, EINVAL for a
     * malformed abstime when the lock cannot be taken at once (a free lock is taken whatever
     * abstime says, as glibc does), EDEADLK for an errorcheck lock the caller holds.  A timeout
     * leaves no trace: the lock, and whatever was posted to take it, are as if it was never tried.
     */
    int (*clocklock)(rcl_mutex_t *m, clockid_t clock, const struct timespec *abstime);
    /* Runs fn(ctx) holding m; returns fn's value. */
    int (*execute)(rcl_mutex_t *m, rcl_cs_fn fn, void *ctx, size_t ctx_size);
    /* Algorithm 3: stores 1/0 (taken/busy) in the context's first int, runs fn, releases. */
    int (*execute_trylock)(rcl_mutex_t *m, rcl_cs_fn fn, void *ctx);
    /*
     * Condition variable support: release m on behalf of the current holder before a wait, and
     * take it back after, in whatever context the section runs (client, server thread, ...).
     * `release_for_wait` may prepare for blocking (e.g. an RCL server makes sure another
     * servicing thread is free).
     */
    int (*release_for_wait)(rcl_mutex_t *m);
    int (*reacquire_after_wait)(rcl_mutex_t *m);
    /* Per-lock statistics line(s) for rcl_stats_print; may be NULL. */
    void (*print_stats)(rcl_mutex_t *m, int fd);
    /*
     * Process-wide hooks: the core calls them for every registered algorithm that has one, in
     * registry order, whatever the algorithm of the lock at hand.  NULL for most algorithms; the
     * core reaches an algorithm only through its ops, never by a function's name.
     *
     * prepare_block: a condition variable wait, on a mutex of any algorithm, calls it before the
     * thread blocks.  An algorithm whose threads run sections for other threads makes sure the
     * thread blocking stops none of them (rcl: on a servicing thread, another one is free to
     * serve the other locks of its server).  Leaves errno as it found it.
     * print_process_stats: the algorithm's own statistics tables, written to fd by
     * rcl_stats_print after its header line (rcl: its servers, then its locks).
     */
    void (*prepare_block)(void);
    void (*print_process_stats)(int fd);
    /*
     * The waiting policies (enum rcl_wait_policy) this algorithm honours, as a mask of
     * RCL_POLICY_BIT(p); a lock configured with another is a start-up error.  0 means auto only.
     */
    unsigned policies;
    /*
     * 1 when execute() may run a section on a thread that must not block on the section's behalf
     * (a combiner running other threads' requests).  Sections that may wait on a condition
     * variable then go through rcl_execute_may_wait's lock/unlock form on their own thread.
     */
    int combines;
};

#define RCL_POLICY_BIT(p) (1u << (p))
#define RCL_POLICIES_ALL \
    (RCL_POLICY_BIT(RCL_WAIT_AUTO) | RCL_POLICY_BIT(RCL_WAIT_SPIN) | RCL_POLICY_BIT(RCL_WAIT_YIELD) | \
     RCL_POLICY_BIT(RCL_WAIT_PARK))

extern const struct rcl_lock_ops *const rcl_algorithms[RCL_ALG_COUNT];

/*
 * The rcl_lock_ops of an algorithm built on one of the families that implement the interface
 * once for all their members: `raw` locks (core/raw_lock.h: queue, spin and cohort locks) and
 * `comb` locks (combining/combining.h).  A family provides rcl_<family>_init, _destroy, _lock,
 * _trylock, _unlock, _clocklock, _execute, _execute_trylock, _release_for_wait and
 * _reacquire_after_wait, each taking the lock and the member's family ops (fops); this defines
 * `const struct rcl_lock_ops rcl_ops_<name>` calling them.  combines: see rcl_lock_ops.combines.
 */
#define RCL_DEFINE_FAMILY_ALGORITHM(name, family, fops, combines_)                                  \
    static int name##_ops_init(rcl_mutex_t *m) { return rcl_##family##_init(m, &(fops)); }          \
    static int name##_ops_destroy(rcl_mutex_t *m) { return rcl_##family##_destroy(m, &(fops)); }    \
    static int name##_ops_lock(rcl_mutex_t *m) { return rcl_##family##_lock(m, &(fops)); }          \
    static int name##_ops_trylock(rcl_mutex_t *m) { return rcl_##family##_trylock(m, &(fops)); }    \
    static int name##_ops_unlock(rcl_mutex_t *m) { return rcl_##family##_unlock(m, &(fops)); }      \
    static int name##_ops_clocklock(rcl_mutex_t *m, clockid_t c, const struct timespec *t)           \
    {                                                                                                \
        return rcl_##family##_clocklock(m, &(fops), c, t);                                           \
    }                                                                                                \
    static int name##_ops_execute(rcl_mutex_t *m, rcl_cs_fn fn, void *ctx, size_t size)              \
    {                                                                                                \
        (void)size; /* the section runs on its caller's context, in place */                        \
        return rcl_##family##_execute(m, &(fops), fn, ctx);                                          \
    }                                                                                                \
    static int name##_ops_execute_trylock(rcl_mutex_t *m, rcl_cs_fn fn, void *ctx)                   \
    {                                                                                                \
        return rcl_##family##_execute_trylock(m, &(fops), fn, ctx);                                  \
    }                                                                                                \
    static int name##_ops_release(rcl_mutex_t *m) { return rcl_##family##_release_for_wait(m, &(fops)); } \
    static int name##_ops_reacquire(rcl_mutex_t *m)                                                  \
    {                                                                                                \
        return rcl_##family##_reacquire_after_wait(m, &(fops));                                      \
    }                                                                                                \
    const struct rcl_lock_ops rcl_ops_##name = {                                                     \
        .init = name##_ops_init,                                                                     \
        .destroy = name##_ops_destroy,                                                               \
        .lock = name##_ops_lock,                                                                     \
        .trylock = name##_ops_trylock,                                                               \
        .unlock = name##_ops_unlock,                                                                 \
        .clocklock = name##_ops_clocklock,                                                           \
        .execute = name##_ops_execute,                                                               \
        .execute_trylock = name##_ops_execute_trylock,                                               \
        .release_for_wait = name##_ops_release,                                                      \
        .reacquire_after_wait = name##_ops_reacquire,                                                \
        .print_stats = NULL,                                                                         \
        .policies = RCL_POLICIES_ALL,                                                                \
        .combines = (combines_),                                                                     \
    }

#endif
