/*
 * Algorithms written as a plain exclusive lock ("raw": acquire / try / release over their own
 * state), as queue, spin and cohort locks are.  core/raw_lock.c builds the rest of rcl_lock_ops
 * on top, once for all of them:
 *   - the pthread kinds: recursive relocks, errorcheck's EDEADLK and EPERM (an owner word and a
 *     depth kept next to the algorithm's state; a normal lock pays two plain stores);
 *   - timed locks: try, then wait in growing steps until the deadline (a timeout leaves no trace
 *     in the algorithm's queue, which it never joined);
 *   - execute / execute_trylock as lock, call, unlock on the calling thread;
 *   - condition variables: release before the wait, acquire after;
 *   - the lock's waiting policy, passed to acquire and release.
 *
 * An algorithm file then needs only its raw functions and one line:
 *     RCL_DEFINE_RAW_ALGORITHM(mcs, mcs_raw);
 * Algorithms with their own execute (combining locks) call the rcl_raw_* functions from their
 * own rcl_lock_ops instead.
 */
#ifndef RCLIFY_RAW_LOCK_H
#define RCLIFY_RAW_LOCK_H

#include "core/lock_ops.h"

struct rcl_raw_lock_ops {
    size_t size; /* bytes of the algorithm's state; allocated zeroed, cache-line aligned */
    /* Sets the state up (NULL: zero bytes are a free lock).  m gives the kind and config. */
    int (*init)(void *lock, const rcl_mutex_t *m);
    void (*destroy)(void *lock); /* NULL: nothing to free */
    void (*acquire)(void *lock, int policy);
    int (*try_acquire)(void *lock, int policy); /* 1: taken, 0: busy (never waits) */
    void (*release)(void *lock, int policy);
    int (*is_held)(void *lock); /* for destroy's EBUSY */
};

/* The algorithm's state of a lock set up by rcl_raw_init. */
void *rcl_raw_state(const rcl_mutex_t *m);
int rcl_raw_policy(const rcl_mutex_t *m);

int rcl_raw_init(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw);
int rcl_raw_destroy(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw);
int rcl_raw_lock(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw);
int rcl_raw_trylock(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw);
int rcl_raw_unlock(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw);
int rcl_raw_clocklock(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw, clockid_t clock,
                      const struct timespec *abstime);
int rcl_raw_execute(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw, rcl_cs_fn fn, void *ctx);
int rcl_raw_execute_trylock(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw, rcl_cs_fn fn, void *ctx);
/* For condition variables: leave / take back the lock whatever its recursion depth. */
int rcl_raw_release_for_wait(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw);
int rcl_raw_reacquire_after_wait(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw);

#define RCL_DEFINE_RAW_ALGORITHM(name, ops) RCL_DEFINE_FAMILY_ALGORITHM(name, raw, ops, 0)

#endif
