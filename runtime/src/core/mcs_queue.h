/*
 * The MCS queue (Mellor-Crummey & Scott, TOCS 1991), shared by the mcs algorithm and the local
 * locks of the C-BO-MCS cohort lock: two pointers, `tail`, the last node of the queue of waiters
 * (NULL: free), and `holder`, the holder's node, written only by the holder so that the release
 * (a later call, maybe a condvar's) finds it.  Nodes come from the thread's pool (core/qnode.h)
 * for the time the thread waits for or holds the lock, and go back to the pool of the thread that
 * releases it.
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
 * and acquires what a releaser that emptied the queue wrote: its CAS releases); the link is a
 * release store read with acquire; the grant is the release that hands the section's writes to
 * the next holder.
 */
#ifndef RCLIFY_MCS_QUEUE_H
#define RCLIFY_MCS_QUEUE_H

#include "core/qnode.h"
#include "core/wait.h"

struct rcl_mcs_queue {
    struct rcl_qnode *tail;   /* last waiter's node, or the holder's; NULL: free */
    struct rcl_qnode *holder; /* the holder's node; written only by the holder */
};

/* 1: taken (the queue was empty), 0: busy; never waits. */
static inline int rcl_mcs_try(struct rcl_mcs_queue *q)
{
    if (ld_relaxed(&q->tail) != NULL)
        return 0;
    struct rcl_qnode *me = rcl_qnode_get();
    struct rcl_qnode *expected = NULL;
    if (!cas_acq_rel(&q->tail, &expected, me)) {
        rcl_qnode_put(me);
        return 0;
    }
    st_relaxed(&q->holder, me);
    return 1;
}

static inline void rcl_mcs_acquire(struct rcl_mcs_queue *q, int policy)
{
    struct rcl_qnode *me = rcl_qnode_get(); /* next NULL, flag RCL_FLAG_WAITING */
    struct rcl_qnode *pred = xchg_acq_rel(&q->tail, me);
    if (pred != NULL) {
        st_release(&pred->next, me);
        rcl_flag_wait(&me->flag, policy); /* acquire: the predecessor's writes */
    }
    st_relaxed(&q->holder, me);
}

/* Called by the holder: does nobody wait behind it (no link, and the tail is still its node)? */
static inline int rcl_mcs_alone(struct rcl_mcs_queue *q)
{
    struct rcl_qnode *me = ld_relaxed(&q->holder);
    return ld_relaxed(&me->next) == NULL && ld_relaxed(&q->tail) == me;
}

static inline void rcl_mcs_release(struct rcl_mcs_queue *q, int policy)
{
    struct rcl_qnode *me = ld_relaxed(&q->holder);
    struct rcl_qnode *succ = ld_acquire(&me->next);
    if (succ == NULL) {
        struct rcl_qnode *expected = me;
        if (cas_acq_rel(&q->tail, &expected, NULL)) {
            rcl_qnode_put(me); /* no successor: nobody else saw our node */
            return;
        }
        /* A successor swapped itself in but has not linked yet (it may be descheduled between
         * the two steps: wait under the policy, which yields or sleeps once spinning is spent). */
        for (unsigned spins = 0; (succ = ld_acquire(&me->next)) == NULL;)
            rcl_wait_step(&spins, policy);
    }
    rcl_flag_grant(&succ->flag); /* release: the section's writes to the successor */
    rcl_qnode_put(me);
}

static inline int rcl_mcs_is_held(struct rcl_mcs_queue *q)
{
    return ld_acquire(&q->tail) != NULL;
}

#endif
