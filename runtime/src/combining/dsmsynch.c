/*
 * dsmsynch: DSM-Synch (Fatourou & Kallimanis, PPoPP 2012): CC-Synch for machines without
 * coherent caches, where a thread should only spin on memory of its own.
 *
 * An MCS-like list: each thread enqueues its own node (request inside), links it behind its
 * predecessor and waits on its own node's flag.  The tail is NULL while the lock is free; a
 * thread that finds it so holds the lock at once.  The holder runs its own section, then serves
 * the nodes linked behind its own, granting each waiter, until it has served RCL_COMBINE_BOUND
 * requests or reaches a request for the lock itself, whose owner it hands the lock to.
 *
 * The price of spinning on one's own node is MCS's: a combiner at the last node swings the tail
 * back to NULL with a CAS, and when that fails (a thread swapped itself in but has not linked
 * yet) it must wait for the link (rcl_wait_step under the lock's policy: a descheduled linker
 * gets the CPU back).  A served node is granted only once its link was read or the tail swung
 * away from it, since its owner reuses it as soon as it is granted (Synch's toggled pair of nodes
 * per thread serves the same purpose).
 *
 * Memory per lock: the tail and the holder's node pointer, 192 bytes with the generic head; the
 * nodes come from the threads' pools.
 */
#include "combining/combining.h"

struct dsmsynch {
    struct rcl_qnode *tail;             /* last node; NULL: free */
    struct rcl_qnode *head RCL_ALIGNED; /* the holder's node: only the holder reads or writes it */
};

static int dsmsynch_is_held(void *state)
{
    struct dsmsynch *l = state;
    return ld_acquire(&l->tail) != NULL;
}

static int dsmsynch_post(void *state, struct rcl_comb_req *req, int policy)
{
    struct dsmsynch *l = state;
    struct rcl_qnode *mine = rcl_qnode_get(); /* flag WAITING, next NULL */
    mine->arg = req;
    /* acq_rel: publishes the node and its request; acquires the last holder's work if free */
    struct rcl_qnode *pred = xchg_acq_rel(&l->tail, mine);
    if (pred != NULL) {
        st_release(&pred->next, mine);
        rcl_comb_wait(&mine->flag, policy);
        if (req->done) {
            rcl_qnode_put(mine);
            return 1;
        }
    }
    l->head = mine;
    return 0;
}

static int dsmsynch_try(void *state)
{
    struct dsmsynch *l = state;
    if (ld_relaxed(&l->tail) != NULL)
        return 0;
    struct rcl_qnode *mine = rcl_qnode_get();
    struct rcl_qnode *expected = NULL;
    if (!cas_acq_rel(&l->tail, &expected, mine)) {
        rcl_qnode_put(mine);
        return 0;
    }
    l->head = mine;
    return 1;
}

/* Done with node n: the holder's own goes back to the pool, a served one to its waiter. */
static void finish(struct rcl_qnode *n, struct rcl_qnode *own)
{
    if (n == own)
        rcl_qnode_put(n);
    else
        rcl_flag_grant(&n->flag);
}

static int dsmsynch_release(struct rcl_comb *c, void *state, int policy)
{
    struct dsmsynch *l = state;
    struct rcl_qnode *own = l->head, *cur = own;
    struct rcl_comb_pass pass;
    rcl_comb_pass_begin(&pass, c);
    for (;;) {
        /* cur's section has run (the holder's own, or served just now): find what follows. */
        struct rcl_qnode *next = ld_acquire(&cur->next);
        if (next == NULL) {
            rcl_comb_pass_end(&pass);
            struct rcl_qnode *expected = cur;
            if (cas_acq_rel(&l->tail, &expected, NULL)) {
                finish(cur, own); /* free; cur is nobody's predecessor now, its owner may go */
                return 1;
            }
            /* A thread swapped itself in behind cur and is about to link: it gets the lock. */
            for (unsigned spins = 0; (next = ld_acquire(&cur->next)) == NULL;)
                rcl_wait_step(&spins, policy);
            finish(cur, own);
            rcl_flag_grant(&next->flag);
            return 0;
        }
        finish(cur, own);
        cur = next;
        struct rcl_comb_req *req = cur->arg;
        if (req->fn == NULL || rcl_comb_pass_full(&pass))
            break;
        rcl_comb_run(&pass, req);
    }
    rcl_comb_pass_end(&pass);
    rcl_flag_grant(&cur->flag); /* cur's owner holds the lock now (its request's done is 0) */
    return 0;
}

static const struct rcl_comb_ops dsmsynch_ops = {
    .size = sizeof(struct dsmsynch),
    .is_held = dsmsynch_is_held,
    .post = dsmsynch_post,
    .try_acquire = dsmsynch_try,
    .release = dsmsynch_release,
};

RCL_DEFINE_COMBINING_ALGORITHM(dsmsynch, dsmsynch_ops);
