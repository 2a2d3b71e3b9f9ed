/*
 * ttas: test-and-test-and-set with exponential backoff (Anderson 1990).  Waiters read the word
 * until it looks free, then try one exchange; a failed try doubles the backoff (up to
 * BACKOFF_MAX pauses).  Once the policy's spinning is spent, a waiter sleeps on the word
 * (core/wait.h), and a release wakes one sleeper.  No fairness: the cheapest lock when
 * contention is low, the first to collapse when it is high.
 */
#include "core/raw_lock.h"
#include "core/wait.h"

#define BACKOFF_MIN 4
#define BACKOFF_MAX 1024

struct ttas {
    int word;     /* 0 free, 1 held */
    int sleepers; /* waiters asleep on word */
};

static int ttas_try(void *lock, int policy)
{
    struct ttas *l = lock;
    return ld_relaxed(&l->word) == 0 && xchg_acq_rel(&l->word, 1) == 0;
}

static void ttas_acquire(void *lock, int policy)
{
    struct ttas *l = lock;
    unsigned backoff = BACKOFF_MIN, spent = 0;
    for (;;) {
        if (ttas_try(l, policy))
            return;
        if (policy == RCL_WAIT_SPIN || spent < RCL_SPIN_LONG) {
            for (unsigned i = 0; i < backoff; i++)
                rcl_pause();
            spent += backoff;
            if (backoff < BACKOFF_MAX)
                backoff *= 2;
            continue;
        }
        rcl_word_wait(&l->word, 1, &l->sleepers, policy, CLOCK_MONOTONIC, NULL);
    }
}

static void ttas_release(void *lock, int policy)
{
    struct ttas *l = lock;
    st_release(&l->word, 0);
    if (policy != RCL_WAIT_SPIN)
        rcl_word_wake(&l->word, &l->sleepers, 1);
}

static int ttas_is_held(void *lock)
{
    return ld_acquire(&((struct ttas *)lock)->word) != 0;
}

static const struct rcl_raw_lock_ops ttas_raw = {
    .size = sizeof(struct ttas),
    .acquire = ttas_acquire,
    .try_acquire = ttas_try,
    .release = ttas_release,
    .is_held = ttas_is_held,
};

RCL_DEFINE_RAW_ALGORITHM(ttas, ttas_raw);
