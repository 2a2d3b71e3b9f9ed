/*
 * mcs: the MCS queue lock (Mellor-Crummey & Scott, "Algorithms for scalable synchronization on
 * shared-memory multiprocessors", TOCS 1991).  Strict FIFO, and each waiter waits on a flag in its
 * own queue node, so a release disturbs exactly one waiter.
 *
 * The lock is the MCS queue of core/mcs_queue.h (its two pointers, and how acquire and release
 * work), behind the raw lock interface.
 */
#include "core/mcs_queue.h"
#include "core/raw_lock.h"

static int mcs_try(void *lock, int policy)
{
    return rcl_mcs_try(lock);
}

static void mcs_acquire(void *lock, int policy)
{
    rcl_mcs_acquire(lock, policy);
}

static void mcs_release(void *lock, int policy)
{
    rcl_mcs_release(lock, policy);
}

static int mcs_is_held(void *lock)
{
    return rcl_mcs_is_held(lock);
}

static const struct rcl_raw_lock_ops mcs_raw = {
    .size = sizeof(struct rcl_mcs_queue),
    .acquire = mcs_acquire,
    .try_acquire = mcs_try,
    .release = mcs_release,
    .is_held = mcs_is_held,
};

RCL_DEFINE_RAW_ALGORITHM(mcs, mcs_raw);
