/*
 * ctkttkt: C-TKT-TKT, the cohort lock of a global ticket lock and a ticket lock per cluster
 * (Dice et al., TOPC 2015, section 3.1; David et al.'s "hticket").  The cohort protocol is in
 * cohort/cohort.h, the ticket lock in cohort/ticket.h.  FIFO inside a cluster, FIFO between the
 * clusters' turns (the global ticket lock), and at most RCL_COHORT_PASS_LIMIT hand-offs per turn.
 */
#include "cohort/cohort.h"
#include "cohort/ticket.h"

struct ctkttkt {
    struct cohort cohort; /* first */
    struct ticket global;
};

static void global_acquire(struct cohort *c, int policy)
{
    ticket_acquire(&((struct ctkttkt *)c)->global, policy);
}

static int global_try(struct cohort *c)
{
    return ticket_try(&((struct ctkttkt *)c)->global);
}

static void global_release(struct cohort *c, int policy)
{
    ticket_release(&((struct ctkttkt *)c)->global, policy);
}

static int global_is_held(struct cohort *c)
{
    return ticket_is_held(&((struct ctkttkt *)c)->global);
}

static const struct cohort_ops ctkttkt_cohort = {
    TKT_LOCAL_OPS,
    .global_acquire = global_acquire,
    .global_try = global_try,
    .global_release = global_release,
    .global_is_held = global_is_held,
};

RCL_DEFINE_COHORT_ALGORITHM(ctkttkt, struct ctkttkt, ctkttkt_cohort);
