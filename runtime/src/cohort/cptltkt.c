/*
 * cptltkt: C-PTL-TKT, the cohort lock of a global partitioned ticket lock and a ticket lock per
 * cluster (Dice et al., TOPC 2015, section 3.2, Figure 5).  The cohort protocol is in
 * cohort/cohort.h, the local ticket lock in cohort/ticket.h.
 *
 * Partitioned ticket lock (Dice, SPAA 2011): a ticket lock whose `grant` is spread over slots,
 * one cache line each; the waiter of ticket t waits on slot t mod SLOTS, and the release of ticket
 * t writes t + 1 into slot t + 1 mod SLOTS, so each release touches one waiter's line only.  Only
 * local-lock holders wait for the global lock, at most one per cluster, so with SLOTS >= clusters
 * every waiter has a slot of its own (private spinning, and a wake-up that finds one sleeper).
 * SLOTS is the clusters rounded up to a power of two (a divisor of 2^32: slots stay right when
 * the unsigned tickets wrap); the slots are allocated with the lock.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cohort/cohort.h"
#include "cohort/ticket.h"

struct ptl_slot {
    int grant;    /* the last ticket served that falls in this slot */
    int sleepers; /* waiters asleep on grant */
} RCL_ALIGNED;

struct cptltkt {
    struct cohort cohort;   /* first */
    int request;            /* global: next ticket to hand out */
    int owner_ticket;       /* global: the ticket that took it; written by that thread, read by
                             * the one that releases it (ordered by the hand-off chain) */
    unsigned slot_mask;     /* SLOTS - 1; read-only after init */
    struct ptl_slot *slots; /* SLOTS slots; slot 0 grants ticket 0, the zero bytes of the others
                             * match no ticket of theirs until written */
};

/* ---- global partitioned ticket lock ---- */

static struct ptl_slot *slot_of(struct cptltkt *g, int ticket)
{
    return &g->slots[(unsigned)ticket & g->slot_mask];
}

static void global_acquire(struct cohort *c, int policy)
{
    struct cptltkt *g = (struct cptltkt *)c;
    int mine = (int)((unsigned)add_relaxed(&g->request, 1) - 1u);
    struct ptl_slot *s = slot_of(g, mine);
    for (;;) {
        int now = ld_acquire(&s->grant); /* acquire: the last holder's writes */
        if (now == mine)
            break;
        rcl_word_wait(&s->grant, now, &s->sleepers, policy, CLOCK_MONOTONIC, NULL);
    }
    g->owner_ticket = mine;
}

/* Takes the next ticket only if its slot already grants it: a free lock. */
static int global_try(struct cohort *c)
{
    struct cptltkt *g = (struct cptltkt *)c;
    int next = ld_relaxed(&g->request);
    if (ld_acquire(&slot_of(g, next)->grant) != next)
        return 0;
    int expected = next;
    if (!cas_acquire(&g->request, &expected, (int)ticket_next(next)))
        return 0;
    g->owner_ticket = next;
    return 1;
}

static void global_release(struct cohort *c, int policy)
{
    struct cptltkt *g = (struct cptltkt *)c;
    int next = (int)ticket_next(g->owner_ticket);
    struct ptl_slot *s = slot_of(g, next);
    st_release(&s->grant, next); /* release: to the holder of ticket next */
    if (policy != RCL_WAIT_SPIN)
        rcl_word_wake(&s->grant, &s->sleepers, INT_MAX);
}

static int global_is_held(struct cohort *c)
{
    struct cptltkt *g = (struct cptltkt *)c;
    int next = ld_acquire(&g->request);
    return ld_acquire(&slot_of(g, next)->grant) != next;
}

/* The slots, once the local locks are set up: as many as the clusters, rounded up to a power of 2. */
static int global_init(struct cohort *c)
{
    struct cptltkt *g = (struct cptltkt *)c;
    unsigned nslots = 1;
    while (nslots < (unsigned)g->cohort.nclusters)
        nslots *= 2;
    size_t bytes = nslots * sizeof(struct ptl_slot);
    g->slots = aligned_alloc(RCL_CACHE_LINE, bytes);
    if (!g->slots)
        return ENOMEM;
    memset(g->slots, 0, bytes);
    g->slot_mask = nslots - 1;
    g->cohort.bytes += bytes;
    return 0;
}

static void global_destroy(struct cohort *c)
{
    struct cptltkt *g = (struct cptltkt *)c;
    free(g->slots);
    g->slots = NULL;
}

static const struct cohort_ops cptltkt_cohort = {
    TKT_LOCAL_OPS,
    .global_acquire = global_acquire,
    .global_try = global_try,
    .global_release = global_release,
    .global_is_held = global_is_held,
    .global_init = global_init,
    .global_destroy = global_destroy,
};

RCL_DEFINE_COHORT_ALGORITHM(cptltkt, struct cptltkt, cptltkt_cohort);
