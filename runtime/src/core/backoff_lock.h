/*
 * A test-and-test-and-set lock with exponential backoff (Anderson 1990): a word, 0 free and 1
 * held, taken by exchange once it reads 0; a failed try doubles the backoff (up to
 * RCL_BACKOFF_MAX pauses).  Once `spin_budget` pauses are spent (never under the spin policy) a
 * waiter sleeps on the word (core/wait.h) and a release wakes one sleeper.  Thread-oblivious:
 * any thread may release it.  The `ttas` algorithm is this lock; C-BO-MCS uses it as its global
 * lock.
 */
#ifndef RCLIFY_BACKOFF_LOCK_H
#define RCLIFY_BACKOFF_LOCK_H

#include "rclify.h"
#include "core/wait.h"

#define RCL_BACKOFF_MIN 4
#define RCL_BACKOFF_MAX 1024

struct rcl_backoff_lock {
    int word;     /* 0 free, 1 held */
    int sleepers; /* waiters asleep on word */
};

static inline int rcl_backoff_try(struct rcl_backoff_lock *l)
{
    return ld_relaxed(&l->word) == 0 && xchg_acq_rel(&l->word, 1) == 0;
}

static inline void rcl_backoff_acquire(struct rcl_backoff_lock *l, int policy, unsigned spin_budget)
{
    unsigned backoff = RCL_BACKOFF_MIN, spent = 0;
    for (;;) {
        if (rcl_backoff_try(l))
            return;
        if (policy == RCL_WAIT_SPIN || spent < spin_budget) {
            for (unsigned i = 0; i < backoff; i++)
                rcl_pause();
            spent += backoff;
            if (backoff < RCL_BACKOFF_MAX)
                backoff *= 2;
            continue;
        }
        rcl_word_wait(&l->word, 1, &l->sleepers, policy, CLOCK_MONOTONIC, NULL);
    }
}

static inline void rcl_backoff_release(struct rcl_backoff_lock *l, int policy)
{
    st_release(&l->word, 0);
    if (policy != RCL_WAIT_SPIN)
        rcl_word_wake(&l->word, &l->sleepers, 1);
}

static inline int rcl_backoff_is_held(struct rcl_backoff_lock *l)
{
    return ld_acquire(&l->word) != 0;
}

#endif
