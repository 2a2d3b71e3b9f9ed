/*
 * ttas: test-and-test-and-set with exponential backoff (core/backoff_lock.h), spinning up to
 * RCL_SPIN_LONG pauses before it sleeps.  No fairness: the cheapest lock when contention is low,
 * the first to collapse when it is high.
 */
#include "core/backoff_lock.h"
#include "core/raw_lock.h"

static int ttas_try(void *lock, int policy)
{
    return rcl_backoff_try(lock);
}

static void ttas_acquire(void *lock, int policy)
{
    rcl_backoff_acquire(lock, policy, RCL_SPIN_LONG);
}

static void ttas_release(void *lock, int policy)
{
    rcl_backoff_release(lock, policy);
}

static int ttas_is_held(void *lock)
{
    return rcl_backoff_is_held(lock);
}

static const struct rcl_raw_lock_ops ttas_raw = {
    .size = sizeof(struct rcl_backoff_lock),
    .acquire = ttas_acquire,
    .try_acquire = ttas_try,
    .release = ttas_release,
    .is_held = ttas_is_held,
};

RCL_DEFINE_RAW_ALGORITHM(ttas, ttas_raw);
