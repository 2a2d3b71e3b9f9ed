/*
 * clh: the CLH queue lock (Craig 1993; Magnussen, Landin & Hagersten 1994).  Strict FIFO; each
 * waiter waits on the flag of its predecessor's node, and a release is one grant of the holder's
 * own node, whoever (if anyone) waits on it.
 *
 * The queue is implicit: `tail` is the last node enqueued, never NULL.  The lock is free when the
 * tail's flag is granted (initially a dummy node, granted, taken from the pool of the thread that
 * creates the lock).  Nodes pass from thread to thread: a thread enqueues a node from its pool and
 * leaves it in the queue at release (its successor, or the next arrival, waits on it); once it has
 * seen its predecessor's grant, it is the only thread that will ever look at that node again, and
 * puts it into its own pool.  Each acquisition takes one node from the thread's pool and gives one
 * back, so pools stay balanced; the lock holds one node (its tail) between uses, and
 * destroy gives it back.
 *
 *   acquire: take a node (flag waiting); swap it into `tail`; wait for the predecessor's grant;
 *            record our node in `holder` (written only by the holder); pool the predecessor.
 *   release: grant our node (rcl_flag_grant wakes the successor if it parked).
 *
 * trylock is the one delicate part.  It may take the lock only if the tail's node is granted and
 * still the tail when it swings `tail` to its own node with a CAS.  But nodes are recycled: between
 * reading the tail and the CAS, that node could be pooled by a successor, reused by another thread
 * and enqueued again, now waiting - the CAS would then succeed on a held lock (ABA).  So a trying
 * thread first pins the node it read in the lock's `pin` word (one trier at a time; another trier
 * finds the pin taken and reports busy), and then checks that it is still the tail.  A successor
 * about to pool its predecessor looks at `pin` first: if the node is pinned it marks it retired
 * (pin | 1) instead, and the trier pools it when it unpins.  Exactly one of the two pools it.  The
 * pin, the re-read of `tail`, the enqueuing swap and the successor's look at `pin` are sequentially
 * consistent: a pin set before the re-read that still found the node as tail is seen by whoever
 * swaps that node out later.  A pinned node is therefore never recycled, and its flag, once
 * granted, stays granted: a successful CAS finds a free lock.
 *
 * Orderings otherwise: the swap publishes our node's initialised flag to our successor (which
 * reads it as its predecessor); the grant is the release that hands the section's writes to the
 * next holder, rcl_flag_wait its acquire.
 */
#include "core/qnode.h"
#include "core/raw_lock.h"
#include "core/wait.h"

#define PIN_RETIRED ((uintptr_t)1) /* low bit of pin: swapped out while pinned, the trier pools it */

struct clh {
    struct rcl_qnode *tail;   /* last node enqueued; granted: the lock is free */
    struct rcl_qnode *holder; /* the holder's node; written only by the holder */
    uintptr_t pin;            /* the node a trylock is looking at (| PIN_RETIRED), or 0 */
};

/* The sequentially consistent accesses of the pin protocol (see above). */
#define ld_seq_cst(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define xchg_seq_cst(p, v) __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#define cas_seq_cst(p, expp, v) \
    __atomic_compare_exchange_n((p), (expp), (v), 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)

static int clh_init(void *lock, const rcl_mutex_t *m)
{
    struct clh *l = lock;
    struct rcl_qnode *dummy = rcl_qnode_get();
    dummy->flag = RCL_FLAG_GRANTED; /* published with the lock itself */
    l->tail = dummy;
    return 0;
}

static void clh_destroy(void *lock)
{
    struct clh *l = lock;
    rcl_qnode_put(l->tail); /* free (is_held said so): nobody waits on it */
    l->tail = NULL;
}

/* We have seen pred's grant: nobody else will use it.  Pool it, unless a trier pinned it. */
static void dispose_predecessor(struct clh *l, struct rcl_qnode *pred)
{
    uintptr_t pinned = (uintptr_t)pred;
    if (ld_seq_cst(&l->pin) == pinned && cas_seq_cst(&l->pin, &pinned, pinned | PIN_RETIRED))
        return; /* the trier pools it when it unpins */
    rcl_qnode_put(pred);
}

static void unpin(struct clh *l, struct rcl_qnode *node)
{
    uintptr_t pinned = (uintptr_t)node;
    if (cas_seq_cst(&l->pin, &pinned, 0))
        return;
    /* Retired meanwhile by the thread that swapped it out: ours to pool. */
    st_release(&l->pin, 0);
    rcl_qnode_put(node);
}

static int clh_try(void *lock, int policy)
{
    struct clh *l = lock;
    struct rcl_qnode *tail = ld_seq_cst(&l->tail);
    uintptr_t none = 0;
    if (!cas_seq_cst(&l->pin, &none, (uintptr_t)tail))
        return 0; /* another trier is looking */
    /* Pinned and still the tail: it cannot be recycled now, so reading its flag is safe. */
    if (ld_seq_cst(&l->tail) != tail || ld_acquire(&tail->flag) != RCL_FLAG_GRANTED) {
        unpin(l, tail);
        return 0;
    }
    struct rcl_qnode *me = rcl_qnode_get();
    struct rcl_qnode *expected = tail;
    if (!cas_seq_cst(&l->tail, &expected, me)) {
        rcl_qnode_put(me); /* someone enqueued first */
        unpin(l, tail);
        return 0;
    }
    st_relaxed(&l->holder, me);
    /* We swapped the old tail out, as its successor: nobody else can have retired it, and it
     * is ours to pool, as an acquire's predecessor is. */
    st_release(&l->pin, 0);
    rcl_qnode_put(tail);
    return 1;
}

static void clh_acquire(void *lock, int policy)
{
    struct clh *l = lock;
    struct rcl_qnode *me = rcl_qnode_get(); /* flag RCL_FLAG_WAITING */
    struct rcl_qnode *pred = xchg_seq_cst(&l->tail, me);
    rcl_flag_wait(&pred->flag, policy);
    st_relaxed(&l->holder, me);
    dispose_predecessor(l, pred);
}

static void clh_release(void *lock, int policy)
{
    struct clh *l = lock;
    rcl_flag_grant(&ld_relaxed(&l->holder)->flag);
}

static int clh_is_held(void *lock)
{
    struct clh *l = lock;
    return ld_acquire(&ld_acquire(&l->tail)->flag) != RCL_FLAG_GRANTED;
}

static const struct rcl_raw_lock_ops clh_raw = {
    .size = sizeof(struct clh),
    .init = clh_init,
    .destroy = clh_destroy,
    .acquire = clh_acquire,
    .try_acquire = clh_try,
    .release = clh_release,
    .is_held = clh_is_held,
};

RCL_DEFINE_RAW_ALGORITHM(clh, clh_raw);
