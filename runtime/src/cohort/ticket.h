/*
 * The ticket lock (Mellor-Crummey and Scott 1991) of the cohort locks: the local lock of
 * C-TKT-TKT and C-PTL-TKT (struct tkt_local, TKT_LOCAL_OPS), and the global lock of C-TKT-TKT.
 *
 * A thread takes a ticket (fetch-and-increment of `request`) and waits until `grant` shows it;
 * the holder releases by incrementing `grant`.  FIFO, and thread-oblivious: whoever holds the lock
 * logically may increment grant, so it can serve as a global lock.  Cohort detection: the holder
 * owns ticket grant, so request != grant + 1 means a later ticket was taken, and a ticket once
 * taken is always waited for (try only takes a ticket when it is served at once).
 *
 * Waiting goes through core/wait.h: waiters sleep on grant, and a release wakes them all (the
 * futex cannot pick the one whose turn it is; the others look and sleep again).  Tickets are
 * unsigned and wrap; futex words are int, hence the casts.
 */
#ifndef RCLIFY_COHORT_TICKET_H
#define RCLIFY_COHORT_TICKET_H

#include <limits.h>

#include "cohort/cohort.h"
#include "core/wait.h"

struct ticket {
    int request;  /* next ticket to hand out */
    int grant;    /* ticket now served; written only by the holder */
    int sleepers; /* waiters asleep on grant */
};

static inline unsigned ticket_next(int t)
{
    return (unsigned)t + 1u;
}

static inline void ticket_acquire(struct ticket *t, int policy)
{
    int mine = (int)((unsigned)add_relaxed(&t->request, 1) - 1u);
    for (;;) {
        int now = ld_acquire(&t->grant); /* acquire: the last holder's writes */
        if (now == mine)
            return;
        rcl_word_wait(&t->grant, now, &t->sleepers, policy, CLOCK_MONOTONIC, NULL);
    }
}

/* Takes a ticket only if it is the one served: a free lock. */
static inline int ticket_try(struct ticket *t)
{
    int now = ld_acquire(&t->grant);
    int expected = now;
    return ld_relaxed(&t->request) == now && cas_acquire(&t->request, &expected, (int)ticket_next(now));
}

/* By the holder: no ticket was taken after its own. */
static inline int ticket_alone(struct ticket *t)
{
    return ld_relaxed(&t->request) == (int)ticket_next(ld_relaxed(&t->grant));
}

static inline void ticket_release(struct ticket *t, int policy)
{
    st_release(&t->grant, (int)ticket_next(ld_relaxed(&t->grant))); /* release: to the next holder */
    if (policy != RCL_WAIT_SPIN)
        rcl_word_wake(&t->grant, &t->sleepers, INT_MAX);
}

static inline int ticket_is_held(struct ticket *t)
{
    return ld_acquire(&t->request) != ld_acquire(&t->grant);
}

/* A ticket lock as a cohort's local lock, for C-TKT-TKT and C-PTL-TKT. */
struct tkt_local {
    struct cohort_local cohort; /* first: cohort.h's view of it */
    struct ticket lock;
} RCL_ALIGNED;

static inline struct ticket *tkt_local_lock(struct cohort_local *l)
{
    return &((struct tkt_local *)l)->lock;
}
static inline void tkt_local_acquire(struct cohort_local *l, int policy)
{
    ticket_acquire(tkt_local_lock(l), policy);
}
static inline int tkt_local_try(struct cohort_local *l)
{
    return ticket_try(tkt_local_lock(l));
}
static inline int tkt_local_alone(struct cohort_local *l)
{
    return ticket_alone(tkt_local_lock(l));
}
static inline void tkt_local_release(struct cohort_local *l, int policy)
{
    ticket_release(tkt_local_lock(l), policy);
}
static inline int tkt_local_is_held(struct cohort_local *l)
{
    return ticket_is_held(tkt_local_lock(l));
}

/* The local-lock members of a struct cohort_ops. */
#define TKT_LOCAL_OPS                              \
    .local_size = sizeof(struct tkt_local),        \
    .local_acquire = tkt_local_acquire,            \
    .local_try = tkt_local_try,                    \
    .local_alone = tkt_local_alone,                \
    .local_release = tkt_local_release,            \
    .local_is_held = tkt_local_is_held

#endif
