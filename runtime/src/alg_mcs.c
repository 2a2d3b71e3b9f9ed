/*
 * mcs: the MCS queue lock (Mellor-Crummey & Scott, "Algorithms for scalable synchronization on
 * shared-memory multiprocessors", TOCS 1991).  Strict FIFO, and each waiter waits on a flag in its
 * own queue node, so a release disturbs exactly one waiter.
 *
 * The lock is two pointers: `tail`, the last node of the queue of waiters (NULL: free), and
 * `holder`, the holder's node, written only by the holder so that the release (a later call,
 * maybe a condvar's) finds it.  Nodes come from the thread's pool (core/qnode.h) for the time the
 * thread waits for or holds the lock, and go back to the pool of the thread that releases it.
 *
 *   acquire: take a node; swap it into `tail`.  A NULL predecessor means the queue was empty:
 *            the lock is ours.  Otherwise link behind the predecessor and wait for its grant.
 *   release: if no successor has linked, try to swing `tail` from our node back to NULL; that
 *            fails only if a thread is between its swap and its link: wait for the link.  Grant
 *            the successor's flag.  Our node is then unreferenced: back to the pool.
 *
 * Waiting is rcl_flag_wait / rcl_flag_grant under the lock's policy: a spinning hand-off costs
 * no syscall, a parked waiter is woken by the grant.  Orderings: the swap is acq_rel (it
 * publishes our node's initialised fields to the successor that reads it as its predecessor,
 * and acquires the predecessor's); the link is a release store read with acquire; the grant is
 * the release that hands the section's writes to the next holder.
 */
#include "core/qnode.h"
#include "core/raw_lock.h"
#include "core/wait.h"

struct mcs {
    struct rcl_qnode *tail;   /* last waiter's node, or the holder's; NULL: free */
    struct rcl_qnode *holder; /* the holder's node; written only by the holder */
};

static int mcs_try(void *lock, int policy)
{
    struct mcs *l = lock;
    if (ld_relaxed(&l->tail) != NULL)
        return 0;
    struct rcl_qnode *me = rcl_qnode_get();
    struct rcl_qnode *expected = NULL;
    if (!cas_acq_rel(&l->tail, &expected, me)) {
        rcl_qnode_put(me);
        return 0;
    }
    st_relaxed(&l->holder, me);
    return 1;
}

static void mcs_acquire(void *lock, int policy)
{
    struct mcs *l = lock;
    struct rcl_qnode *me = rcl_qnode_get(); /* next NULL, flag RCL_FLAG_WAITING */
    struct rcl_qnode *pred = xchg_acq_rel(&l->tail, me);
    if (pred != NULL) {
        st_release(&pred->next, me);
        rcl_flag_wait(&me->flag, policy);
    }
    st_relaxed(&l->holder, me);
}

static void mcs_release(void *lock, int policy)
{
    struct mcs *l = lock;
    struct rcl_qnode *me = ld_relaxed(&l->holder);
    struct rcl_qnode *succ = ld_acquire(&me->next);
    if (succ == NULL) {
        struct rcl_qnode *expected = me;
        if (cas_acq_rel(&l->tail, &expected, NULL)) {
            rcl_qnode_put(me); /* no successor: nobody else saw our node */
            return;
        }
        /* A successor swapped itself in but has not linked yet (it may be descheduled between
         * the two steps: wait under the policy, which yields or sleeps once spinning is spent). */
        for (unsigned spins = 0; (succ = ld_acquire(&me->next)) == NULL;)
            rcl_wait_step(&spins, policy);
    }
    rcl_flag_grant(&succ->flag);
    rcl_qnode_put(me);
}

static int mcs_is_held(void *lock)
{
    return ld_acquire(&((struct mcs *)lock)->tail) != NULL;
}

static const struct rcl_raw_lock_ops mcs_raw = {
    .size = sizeof(struct mcs),
    .acquire = mcs_acquire,
    .try_acquire = mcs_try,
    .release = mcs_release,
    .is_held = mcs_is_held,
};

RCL_DEFINE_RAW_ALGORITHM(mcs, mcs_raw);
