/*
 * ccsynch: CC-Synch (Fatourou & Kallimanis, PPoPP 2012), one request queue per lock.
 *
 * Threads post their sections into a CLH-like list (the queue in combining.h: each thread swaps
 * in the node the next arrival will use and writes its request in the node it got back).  The
 * thread whose node is at the head holds the lock: it runs its own section, then the requests
 * linked after it, granting each waiter as its request completes, until it has served
 * RCL_COMBINE_BOUND of them, reaches a request for the lock itself (hybrid form: that thread is
 * handed the lock and runs its section on its own), or reaches the last node, whose owner (if it
 * has posted yet) is handed the lock; with nobody there, the tail is marked free.  Waiters wait
 * on the flag of their own node only, and a combiner never waits for anybody.
 *
 * Memory per lock: the tail word and the holder's node pointer, on two cache lines after the
 * generic head (192 bytes), and the queue's free tail node (64): 256 bytes.  The other nodes
 * come from the threads' pools.
 */
#include "combining/combining.h"

struct ccsynch {
    struct rcl_ccq queue;
    struct rcl_qnode *head RCL_ALIGNED; /* the holder's node: only the holder reads or writes it */
};

static int ccsynch_init(void *state, const rcl_mutex_t *m)
{
    struct ccsynch *l = state;
    return rcl_ccq_init(&l->queue);
}

static void ccsynch_destroy(void *state)
{
    struct ccsynch *l = state;
    rcl_ccq_destroy(&l->queue);
}

static int ccsynch_is_held(void *state)
{
    struct ccsynch *l = state;
    return rcl_ccq_is_held(&l->queue);
}

static int ccsynch_post(void *state, struct rcl_comb_req *req, int policy)
{
    struct ccsynch *l = state;
    struct rcl_qnode *head;
    if (rcl_ccq_post(&l->queue, req, policy, &head))
        return 1;
    l->head = head;
    return 0;
}

static int ccsynch_try(void *state)
{
    struct ccsynch *l = state;
    struct rcl_qnode *head;
    if (!rcl_ccq_try(&l->queue, &head))
        return 0;
    l->head = head;
    return 1;
}

static int ccsynch_release(struct rcl_comb *c, void *state, int policy)
{
    struct ccsynch *l = state;
    struct rcl_comb_pass pass;
    rcl_comb_pass_begin(&pass, c);
    return rcl_ccq_release(&l->queue, l->head, &pass);
}

static const struct rcl_comb_ops ccsynch_ops = {
    .size = sizeof(struct ccsynch),
    .init = ccsynch_init,
    .destroy = ccsynch_destroy,
    .is_held = ccsynch_is_held,
    .post = ccsynch_post,
    .try_acquire = ccsynch_try,
    .release = ccsynch_release,
};

RCL_DEFINE_COMBINING_ALGORITHM(ccsynch, ccsynch_ops);
