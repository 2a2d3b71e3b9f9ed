/*
 * What the combining locks (fc, ccsynch, dsmsynch, hsynch, osci) share.
 *
 * A combining lock turns each critical section into a request: the thread that holds the lock
 * (the combiner) runs the sections that other threads posted while they wait, then hands the lock
 * on.  Each algorithm file gives the ways to post a request, to take the lock at once when it is
 * free, and to leave it (serve waiting requests, then free the lock or hand it on); this file and
 * combining.c build the rest of rcl_lock_ops on top, once for all of them:
 *
 *   execute   posts {fn, ctx, errno}.  Either a combiner runs it and the caller gets fn's value
 *             and the section's errno back, or the caller is handed the lock ("you combine
 *             now"): it runs its own section on its own thread, then serves the requests queued
 *             behind it (at most RCL_COMBINE_BOUND) and hands the lock on.
 *   lock      (hybrid form) takes the lock when it is free, and waits for it to be left free
 *             (sleeping on a counter of frees under the waiting policy) for up to
 *             RCL_COMB_BARGE_NS; then it posts a request with no function: the combiner that
 *             reaches it stops and hands the lock to its owner.  Either way the thread runs its
 *             section itself, and unlock serves the requests queued meanwhile and hands the lock
 *             on, as a combiner does.  Why not queue at once: a hand-off in queue order goes to a
 *             thread that sleeps when threads outnumber CPUs, and a section then costs a wake-up
 *             (measured 20 to 200 times slower than posix, 8 threads on 2 CPUs); taking a free lock
 *             keeps running threads running, and the queued request bounds how long a thread
 *             can be overtaken.  Extracted sections need none of this: the combiner runs them
 *             without waking anyone first.
 *   trylock   takes the lock only when it is free, without queueing.
 *   clocklock waits, as lock does, for the lock to be left free, until the deadline (the queue
 *             is never joined, so a timeout leaves no trace).
 *   kinds     recursive relocks and errorcheck's EDEADLK / EPERM with an owner word and a depth
 *             (the combiner is the owner while it serves: a section it runs for another thread
 *             that relocks a recursive lock gets it, one that relocks an errorcheck lock gets
 *             EDEADLK, as on the thread that posted it).
 *   condvars  release_for_wait leaves the lock as unlock does, reacquire_after_wait takes it
 *             back in hybrid form.  A section that a combiner runs for another thread must not
 *             wait (the combiner would block on that thread's behalf, with the lock held for
 *             everyone): rcl_serving_others is set while it runs, and cond.c refuses such a wait.
 *             Sections that may wait are called with rcl_execute_may_wait, which runs them in
 *             hybrid form on their own thread (`.combines = 1`).
 *
 * Memory: a lock holds a few pointers (plus a cache line per CPU cluster for hsynch and a pointer
 * per CPU for osci's announce slots): m->impl is this head (one cache line) and the algorithm's
 * state (two: what posters write, what only the holder writes), 192 bytes, plus a queue node for
 * ccsynch (256 in all), 128 per cluster and a node for hsynch (384 with one cluster), 8 per CPU
 * for osci.  Requests live on the requesting threads' stacks, queue nodes come from the
 * per-thread pools of core/qnode.h: nothing in a lock grows with the number of threads.
 *
 * Waiting: every wait goes through core/wait.h under the lock's policy; a combiner never waits
 * for a waiter (it grants and moves on: rcl_flag_grant wakes a sleeping waiter).
 */
#ifndef RCLIFY_COMBINING_H
#define RCLIFY_COMBINING_H

#include <errno.h>

#include "core/lock_ops.h"
#include "core/qnode.h"
#include "core/runtime.h"
#include "core/wait.h"

/*
 * Requests served per combining pass before the combiner hands the lock to the owner of the next
 * request (Synch bounds it too, by 10 x threads; a constant keeps a combiner's own latency
 * bounded whatever the thread count).
 */
#define RCL_COMBINE_BOUND 64

/* How long a hybrid locker waits for a free lock before it queues a request for it. */
#define RCL_COMB_BARGE_NS 1000000

/* A posted critical section, on the requesting thread's stack until the request is granted. */
struct rcl_comb_req {
    rcl_cs_fn fn;              /* NULL: the owner asks for the lock itself (hybrid form) */
    void *ctx;
    int ret;                   /* fn's value, written by the combiner */
    int err;                   /* in: the caller's errno (the section sees it); out: the section's */
    int done;                  /* set before the grant: 1 ran, 0 the owner now holds the lock */
    int flag;                  /* core/wait.h flag, for algorithms whose waiters wait on the request */
    struct rcl_comb_req *next; /* fc's publication stack, osci's batch */
};

/* The head of every combining lock's m->impl, on its own cache line; the algorithm's state
 * follows it (rcl_comb_state). */
struct rcl_comb {
    const void *owner; /* holder's identity (recursive and errorcheck kinds); NULL: none */
    unsigned depth;    /* relocks beyond the first (recursive kind) */
    int policy;        /* the lock's waiting policy */
    int tracks_owner;  /* recursive or errorcheck kind */
    int frees;         /* times the lock was left free: hybrid and timed lockers wait on it */
    int sleepers;      /* threads asleep on frees (core/wait.h's rcl_word_wait) */
} RCL_ALIGNED;

static inline void *rcl_comb_state(struct rcl_comb *c)
{
    return (char *)c + sizeof *c;
}

/*
 * A combining pass: what a holder does between its own section and handing the lock on.
 * begin saves the holder's errno and rcl_serving_others and sets the latter; run runs one
 * request with its poster's errno and records fn's value and errno in it; end puts the holder's
 * errno and flag back and clears the owner word, so it must come before the lock is freed or
 * handed on (the next holder writes its own identity there).
 */
struct rcl_comb_pass {
    struct rcl_comb *c;
    int saved_errno;
    int saved_serving;
    unsigned served;
};

static inline void rcl_comb_pass_begin(struct rcl_comb_pass *p, struct rcl_comb *c)
{
    p->c = c;
    p->saved_errno = errno;
    p->saved_serving = rcl_serving_others;
    rcl_serving_others = 1;
    p->served = 0;
}

/* Runs r (not yet granted: its poster waits); the caller grants it afterwards. */
static inline void rcl_comb_run(struct rcl_comb_pass *p, struct rcl_comb_req *r)
{
    errno = r->err;
    r->ret = r->fn(r->ctx);
    r->err = errno;
    r->done = 1;
    p->served++;
}

/* Records the calling thread as the holder (recursive and errorcheck kinds). */
void rcl_comb_taken(struct rcl_comb *c);

static inline void rcl_comb_pass_end(struct rcl_comb_pass *p)
{
    rcl_serving_others = p->saved_serving;
    errno = p->saved_errno;
    if (p->c->tracks_owner)
        st_relaxed(&p->c->owner, NULL);
}

/* Whether the pass has served its share: the next request goes to its owner with the lock. */
static inline int rcl_comb_pass_full(const struct rcl_comb_pass *p)
{
    return p->served >= RCL_COMBINE_BOUND;
}

/*
 * Waits for a grant: rcl_flag_wait, then an acquire load of the flag.  rcl_flag_wait returns on
 * a failed CAS (WAITING to PARKED) when the grant came just before it sleeps, and that CAS's load
 * is relaxed: without the second load, what the granter wrote before its grant (a section's
 * results, the lock's state) would not be ordered before what the waiter reads next (C11; x86's
 * CAS orders it anyway, ThreadSanitizer reports the race).
 */
static inline void rcl_comb_wait(int *flag, int policy)
{
    rcl_flag_wait(flag, policy);
    (void)ld_acquire(flag);
}

/* Pointers tagged in their lowest bit (nodes are cache-line aligned). */
#define RCL_COMB_TAG ((uintptr_t)1)
#define RCL_COMB_UNTAG(v) ((struct rcl_qnode *)((v) & ~RCL_COMB_TAG))

/*
 * What an algorithm file provides.  `state` is its part of m->impl (size bytes, zeroed, cache-line
 * aligned).  The generic layer calls post / try_acquire / release only as the kinds allow, and
 * sets and checks the owner word itself.
 */
struct rcl_comb_ops {
    size_t size;
    int (*init)(void *state, const rcl_mutex_t *m);  /* NULL: zero bytes are a free lock */
    void (*destroy)(void *state);                   /* NULL: nothing to give back */
    int (*is_held)(void *state);                    /* held, or requests queued: destroy's EBUSY */
    /* Posts req (fn NULL: asks for the lock) and waits.  Returns 1 when a combiner ran it, 0 when
     * the caller now holds the lock: then req->done says whether its section already ran (fc: a
     * poster that takes the free lock may find its request served by the last holder). */
    int (*post)(void *state, struct rcl_comb_req *req, int policy);
    int (*try_acquire)(void *state); /* 1: the caller now holds the lock; never waits */
    /* The holder leaves: a pass over waiting requests (rcl_comb_pass_*), then the lock is freed
     * (returns 1) or handed to the owner of the next request (returns 0). */
    int (*release)(struct rcl_comb *c, void *state, int policy);
};

int rcl_comb_init(rcl_mutex_t *m, const struct rcl_comb_ops *ops);
int rcl_comb_destroy(rcl_mutex_t *m, const struct rcl_comb_ops *ops);
int rcl_comb_lock(rcl_mutex_t *m, const struct rcl_comb_ops *ops);
int rcl_comb_trylock(rcl_mutex_t *m, const struct rcl_comb_ops *ops);
int rcl_comb_unlock(rcl_mutex_t *m, const struct rcl_comb_ops *ops);
int rcl_comb_clocklock(rcl_mutex_t *m, const struct rcl_comb_ops *ops, clockid_t clock,
                       const struct timespec *abstime);
int rcl_comb_execute(rcl_mutex_t *m, const struct rcl_comb_ops *ops, rcl_cs_fn fn, void *ctx);
int rcl_comb_execute_trylock(rcl_mutex_t *m, const struct rcl_comb_ops *ops, rcl_cs_fn fn, void *ctx);
int rcl_comb_release_for_wait(rcl_mutex_t *m, const struct rcl_comb_ops *ops);
int rcl_comb_reacquire_after_wait(rcl_mutex_t *m, const struct rcl_comb_ops *ops);

#define RCL_DEFINE_COMBINING_ALGORITHM(name, ops) RCL_DEFINE_FAMILY_ALGORITHM(name, comb, ops, 1)

/*
 * The CC-Synch request queue, shared by ccsynch (one per lock) and hsynch (one per cluster).
 *
 * A CLH-like list in which every thread brings the node for the *next* arrival: it swaps a fresh
 * node into the tail and takes the node it got back (the previous tail) as its own, writing its
 * request there, then the link to the node it brought.  It waits on its node's flag.  The
 * holder's node is `head`; the requests to serve start at head->next.  A combiner never waits
 * for a link: a node whose link is not written yet is the last one, and its owner (present or
 * future) is handed the lock.  The tail's lowest bit says "free": the last holder found nobody
 * behind it and left the tail node unowned; whoever swaps it out holds the lock at once, and
 * trylock takes it with a CAS (a tagged tail always means free, so no ABA).
 */
struct rcl_ccq {
    uintptr_t tail; /* struct rcl_qnode *, | RCL_COMB_TAG while free */
};

int rcl_ccq_init(struct rcl_ccq *q);
void rcl_ccq_destroy(struct rcl_ccq *q);
int rcl_ccq_is_held(struct rcl_ccq *q);
/* Posts req; returns 1 when it ran, else 0 with *head the caller's node (it holds the queue). */
int rcl_ccq_post(struct rcl_ccq *q, struct rcl_comb_req *req, int policy, struct rcl_qnode **head);
int rcl_ccq_try(struct rcl_ccq *q, struct rcl_qnode **head);
/* The holder of node head leaves: serves requests with pass (NULL: serves none), then hands the
 * queue to the owner of the next node (returns 0), or frees it (returns 1). */
int rcl_ccq_release(struct rcl_ccq *q, struct rcl_qnode *head, struct rcl_comb_pass *pass);

#endif
