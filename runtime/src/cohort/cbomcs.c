/*
 * cbomcs: C-BO-MCS, the cohort lock of a global test-and-test-and-set lock with exponential
 * backoff (BO) and an MCS queue lock per cluster (Dice et al., TOPC 2015, section 3.3).  The
 * cohort protocol is in cohort/cohort.h.
 *
 * Global BO lock: core/backoff_lock.h, the ttas algorithm's lock (thread-oblivious: any thread
 * may release it, as cohorting needs).  At most one thread per
 * cluster ever waits for it (the holder of that cluster's local lock), so its lack of fairness is
 * bounded by the clusters' hand-off limit rather than by the thread count.
 *
 * Local MCS locks: core/mcs_queue.h; each waiter appends a queue node (core/qnode.h, from its
 * own pool: the lock holds pointers only) and waits on the node's flag, which its predecessor
 * grants (core/wait.h: spin, yield or park on the flag).  Cohort detection: the holder is not alone when
 * its node has a successor, or the tail is no longer its node (a successor has swapped itself in
 * and is about to link; the release waits for the link).
 */
#include "cohort/cohort.h"
#include "core/backoff_lock.h"
#include "core/mcs_queue.h"

struct mcs_local {
    struct cohort_local cohort; /* first: cohort.h's view of it */
    struct rcl_mcs_queue queue;
} RCL_ALIGNED;

struct cbomcs {
    struct cohort cohort;          /* first */
    struct rcl_backoff_lock global; /* the global BO lock */
};

/* ---- local MCS locks ---- */

static struct rcl_mcs_queue *queue_of(struct cohort_local *cl)
{
    return &((struct mcs_local *)cl)->queue;
}

static void local_acquire(struct cohort_local *cl, int policy)
{
    rcl_mcs_acquire(queue_of(cl), policy);
}

static int local_try(struct cohort_local *cl)
{
    return rcl_mcs_try(queue_of(cl));
}

/* Cohort detection: not alone when the node has a successor, or the tail is no longer the
 * holder's node (a successor has swapped itself in and is about to link). */
static int local_alone(struct cohort_local *cl)
{
    return rcl_mcs_alone(queue_of(cl));
}

static void local_release(struct cohort_local *cl, int policy)
{
    rcl_mcs_release(queue_of(cl), policy);
}

static int local_is_held(struct cohort_local *cl)
{
    return rcl_mcs_is_held(queue_of(cl));
}

/* ---- global BO lock (core/backoff_lock.h; a short spin: one waiter per cluster at most) ---- */

static int global_try(struct cohort *c)
{
    return rcl_backoff_try(&((struct cbomcs *)c)->global);
}

static void global_acquire(struct cohort *c, int policy)
{
    rcl_backoff_acquire(&((struct cbomcs *)c)->global, policy, RCL_SPIN_SHORT);
}

static void global_release(struct cohort *c, int policy)
{
    rcl_backoff_release(&((struct cbomcs *)c)->global, policy);
}

static int global_is_held(struct cohort *c)
{
    return rcl_backoff_is_held(&((struct cbomcs *)c)->global);
}

static const struct cohort_ops cbomcs_cohort = {
    .local_size = sizeof(struct mcs_local),
    .local_acquire = local_acquire,
    .local_try = local_try,
    .local_alone = local_alone,
    .local_release = local_release,
    .local_is_held = local_is_held,
    .global_acquire = global_acquire,
    .global_try = global_try,
    .global_release = global_release,
    .global_is_held = global_is_held,
};

RCL_DEFINE_COHORT_ALGORITHM(cbomcs, struct cbomcs, cbomcs_cohort);
