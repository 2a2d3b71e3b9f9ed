/*
 * osci: Osci (Fatourou & Kallimanis, OPODIS 2017, "Lock Oscillation"), simplified for kernel
 * threads.
 *
 * Requests are announced in batches ("fat nodes"), one batch per CPU at a time: the first thread
 * on a CPU to post (the director) puts a batch in its CPU's announce slot with its own request,
 * opens its door and yields the CPU, so that the threads that run on that CPU meanwhile add their
 * requests to the batch (each locks the door, pushes, unlocks).  Back on the CPU, the director
 * empties the slot, closes the door and appends the whole batch to the lock's list with one swap:
 * one atomic operation on the shared tail for many requests.  The list is DSM-Synch's (MCS-like,
 * NULL while free): the director that appends to an empty list holds the lock.  The holder runs
 * its own section, serves the rest of its batch and the batches behind it, granting each waiter,
 * until it has served RCL_COMBINE_BOUND requests or reaches a request for the lock itself
 * (hybrid form); then it hands the lock to that request's owner, with what remains of its batch.
 * At the last batch it swings the tail back to NULL, or (a director swapped in but has not linked
 * yet) waits for the link and hands the lock to the first request of the new batch, as the paper
 * does.
 *
 * What is simplified, and why:
 *   - the paper runs many user-level threads per core, every wait a cheap user-level Yield, and
 *     the director's recording period is one Yield.  Here threads are kernel threads and batches
 *     are per CPU (sched_getcpu).  The recording period is one sched_yield under the `yield`
 *     waiting policy (the paper's setting: waiters yield too, so the director is soon back),
 *     when the lock is busy.  Under auto, park and spin the director closes its batch at once:
 *     a kernel yield among sleeping waiters gives the CPU away for whole time slices while the
 *     batch waits (measured: 50 thousand sections/s instead of 4.5 million, 8 threads on 2
 *     CPUs); batches then form only from threads of the CPU that post while the director is
 *     between its announce and its close (it was preempted there, typically);
 *   - a batch's requests are a list of the posters' request records (on their stacks), not an
 *     array with a slot per thread of the core, so a batch does not grow with the threads;
 *   - each thread's waiting is core/wait.h's flag wait on its own request, not Yield loops;
 *   - batches are recycled through type-stable per-thread pools (never freed, never used for
 *     anything else) instead of two nodes per thread: a joiner may still try the door of a batch
 *     that was recycled since it read the slot; it checks the slot again with the door locked and
 *     lets go if the batch is no longer this lock's current one.
 *
 * Memory per lock: the tail and the holder's fields (192 bytes with the generic head), plus one
 * announce pointer per CPU (at most 256 slots; CPUs beyond share them).
 */
#define _GNU_SOURCE /* sched_getcpu */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "combining/combining.h"
#include "core/node_pool.h"

enum { DOOR_CLOSED = 0, DOOR_OPEN = 1, DOOR_LOCKED = 2 };

struct osci_batch {
    struct osci_batch *next;   /* next batch in the lock's list */
    int door;                  /* DOOR_*: joiners lock it to add a request while it is open */
    struct rcl_comb_req *reqs; /* the batch's requests, newest first; fixed once closed */
    struct osci_batch *pool_next;
} RCL_ALIGNED;

struct osci {
    struct osci_batch *tail;           /* last batch; NULL: free */
    int nslots;
    struct osci_batch **announce;      /* per CPU: the batch in its recording period, or NULL */
    /* the holder's: */
    struct osci_batch *batch RCL_ALIGNED; /* the batch being served */
    struct rcl_comb_req *pending;         /* its requests not served yet */
};

/* ---- batches: per-thread pools, type-stable ---- */

RCL_NODE_POOL(batches, struct osci_batch, pool_next);

/* A batch from the thread's pool, with no requests; its door is closed (new ones are zeroed). */
static struct osci_batch *batch_get(void)
{
    struct osci_batch *b = rcl_node_pool_get(&batches_local);
    st_relaxed(&b->next, NULL);
    b->reqs = NULL;
    return b;
}

/* The door is closed (it stays so from the close to the next opening): a late joiner's CAS on
 * it fails. */
static void batch_put(struct osci_batch *b)
{
    rcl_node_pool_put(&batches_local, b);
}

/* ---- the lock ---- */

static int osci_init(void *state, const rcl_mutex_t *m)
{
    struct osci *l = state;
    int n = rcl_cpu_count();
    if (n > 256)
        n = 256;
    l->announce = calloc((size_t)n, sizeof *l->announce);
    if (!l->announce)
        return ENOMEM;
    l->nslots = n;
    return 0;
}

static void osci_destroy(void *state)
{
    struct osci *l = state;
    free(l->announce);
}

static int osci_is_held(void *state)
{
    struct osci *l = state;
    return ld_acquire(&l->tail) != NULL;
}

/* Removes r from the list at *p (it is there). */
static void unlink_req(struct rcl_comb_req **p, struct rcl_comb_req *r)
{
    while (*p != r)
        p = &(*p)->next;
    *p = r->next;
}

/* As the director of batch b (door open, announced in slot): closes it and appends it.
 * Returns 1 when the list was empty: the caller holds the lock. */
static int close_and_append(struct osci *l, struct osci_batch *b, struct osci_batch **slot, int policy)
{
    /* The recording period: threads of this CPU may join meanwhile (see the top of the file for
     * why only under the yield policy). */
    if (policy == RCL_WAIT_YIELD && ld_relaxed(&l->tail) != NULL)
        sched_yield();
    st_release(slot, NULL);
    for (unsigned spins = 0;;) {
        int open = DOOR_OPEN;
        if (cas_acq_rel(&b->door, &open, DOOR_CLOSED))
            break;
        rcl_wait_step(&spins, policy); /* a joiner is pushing its request */
    }
    /* acq_rel: publishes the batch; acquires the last holder's work if the list was empty */
    struct osci_batch *pred = xchg_acq_rel(&l->tail, b);
    if (pred == NULL)
        return 1;
    st_release(&pred->next, b);
    return 0;
}

static int osci_post(void *state, struct rcl_comb_req *req, int policy)
{
    struct osci *l = state;
    for (unsigned spins = 0;;) {
        int cpu = sched_getcpu();
        struct osci_batch **slot = &l->announce[(cpu < 0 ? 0 : cpu) % l->nslots];
        struct osci_batch *cur = ld_acquire(slot);
        if (cur == NULL) {
            struct osci_batch *b = batch_get(); /* door closed: no joiner gets in yet */
            b->reqs = req;
            req->next = NULL;
            struct osci_batch *expected = NULL;
            if (!cas_acq_rel(slot, &expected, b)) {
                batch_put(b);
                continue; /* another director on this CPU: join its batch */
            }
            /* Open only once announced: a door is open only while its batch is some lock's
             * current one (what a joiner's second look at the slot relies on). */
            st_release(&b->door, DOOR_OPEN);
            if (close_and_append(l, b, slot, policy)) {
                unlink_req(&b->reqs, req);
                l->batch = b;
                l->pending = b->reqs;
                return 0;
            }
            break;
        }
        int open = DOOR_OPEN;
        if (!cas_acquire(&cur->door, &open, DOOR_LOCKED)) {
            rcl_wait_step(&spins, policy); /* closing, or another joiner inside */
            continue;
        }
        if (ld_acquire(slot) != cur) { /* recycled since we read the slot, or being closed */
            st_release(&cur->door, DOOR_OPEN);
            continue;
        }
        req->next = cur->reqs;
        cur->reqs = req;
        st_release(&cur->door, DOOR_OPEN);
        break;
    }
    rcl_comb_wait(&req->flag, policy);
    return req->done; /* 0: handed the lock, with l->batch and l->pending set by the last holder */
}

static int osci_try(void *state)
{
    struct osci *l = state;
    if (ld_relaxed(&l->tail) != NULL)
        return 0;
    struct osci_batch *b = batch_get(); /* no requests, door closed for good */
    struct osci_batch *expected = NULL;
    if (!cas_acq_rel(&l->tail, &expected, b)) {
        batch_put(b);
        return 0;
    }
    l->batch = b;
    l->pending = NULL;
    return 1;
}

/* Hands the lock to r's owner, with the rest of batch b. */
static void hand_over(struct osci *l, struct osci_batch *b, struct rcl_comb_req *r)
{
    l->batch = b;
    l->pending = r->next;
    rcl_flag_grant(&r->flag); /* r->done is 0: its owner holds the lock */
}

static int osci_release(struct rcl_comb *c, void *state, int policy)
{
    struct osci *l = state;
    struct osci_batch *b = l->batch;
    struct rcl_comb_req *pending = l->pending;
    struct rcl_comb_pass pass;
    rcl_comb_pass_begin(&pass, c);
    for (;;) {
        while (pending) {
            struct rcl_comb_req *r = pending;
            if (r->fn == NULL || rcl_comb_pass_full(&pass)) {
                rcl_comb_pass_end(&pass);
                hand_over(l, b, r);
                return 0;
            }
            pending = r->next; /* read before the grant: r is its owner's again after it */
            rcl_comb_run(&pass, r);
            rcl_flag_grant(&r->flag);
        }
        /* Batch b is served: on to the next one. */
        struct osci_batch *next = ld_acquire(&b->next);
        if (next == NULL) {
            rcl_comb_pass_end(&pass);
            struct osci_batch *expected = b;
            if (cas_acq_rel(&l->tail, &expected, NULL)) {
                batch_put(b);
                return 1;
            }
            /* A director swapped its batch in behind b and is about to link it: the first
             * request of that batch gets the lock. */
            for (unsigned spins = 0; (next = ld_acquire(&b->next)) == NULL;)
                rcl_wait_step(&spins, policy);
            batch_put(b);
            hand_over(l, next, next->reqs);
            return 0;
        }
        batch_put(b); /* nobody touches b any more but a stale joiner's door CAS, which fails */
        b = next;
        pending = b->reqs; /* closed before it was appended: complete */
    }
}

static const struct rcl_comb_ops osci_ops = {
    .size = sizeof(struct osci),
    .init = osci_init,
    .destroy = osci_destroy,
    .is_held = osci_is_held,
    .post = osci_post,
    .try_acquire = osci_try,
    .release = osci_release,
};

RCL_DEFINE_COMBINING_ALGORITHM(osci, osci_ops);
