/*
 * mcstp: a preemption-tolerant queue lock, in place of MCS-TP (He, Scherer & Scott, "Preemption
 * adaptivity in time-published queue-based spin locks", HiPC 2005).
 *
 * The problem MCS-TP solves: a FIFO queue lock hands the lock to one designated thread, its
 * successor.  When threads outnumber CPUs that successor is often descheduled (or asleep), and the
 * lock then stays unused until the scheduler runs it - and the next hand-off waits for the next
 * successor: a convoy, throughput falling to one section per scheduling delay.  MCS-TP keeps the
 * MCS queue and has waiters publish a timestamp while they spin; a releaser skips successors
 * whose timestamp is stale (presumed preempted) and those re-enqueue when they run again.
 *
 * Why not MCS-TP itself.  Its preemption test needs waiters that spin: a waiter parked on a futex
 * (our park policy, and auto as soon as threads outnumber CPUs) publishes nothing and would be
 * skipped on every release, then woken only to re-enqueue.  It also depends on tuned time
 * constants (patience, update delay, maximum section length: Lozi et al., TOCS 2016, section 3.3,
 * note how hard they are to set).  This lock gets the same property - no hand-off ever waits for a
 * descheduled or sleeping waiter - without timestamps:
 *
 *   - The lock itself is one word, `word`.  Releasing makes it free; it is never given to a
 *     designated thread, so whichever thread runs next (a newcomer, the releaser coming back, the
 *     head of the queue) takes it with one CAS.  A descheduled waiter holds nobody up.
 *   - Waiters queue in an MCS queue of nodes (core/qnode.h) for the right to contend: only the
 *     head of the queue watches `word` (spinning, yielding or asleep on it per the policy); the
 *     others wait on their own node's flag, so contention costs one watcher of the lock word,
 *     as in MCS, not all of them as in a test-and-set lock.
 *   - The head keeps its node in the queue while it holds the lock and passes headship to its
 *     successor after releasing the word, so the successor's wake-up (a syscall if it parked) is
 *     made outside the section, and the lock is free while the new head wakes up.
 *   - Bounded bypass: newcomers may take the word ahead of the head ("stealing", as in Linux's
 *     qspinlock and glibc's mutexes).  After STEALS_BEFORE_HANDOFF rounds lost, the head marks
 *     the held word HELD_HANDOFF; the next release then leaves it HANDED, which only the head may
 *     take.  That is the only hand-off to a designated thread, one in STEALS_BEFORE_HANDOFF at
 *     most, and it goes to a thread that was waiting actively for it.
 *
 * A holder preempted inside its section is beyond any lock's reach; waiters then spin only for the
 * policy's budget before yielding or sleeping, so that it gets its CPU back.
 *
 * The state: `word`, `sleepers` (the head, when asleep on word), `tail` (the queue), and `holder`
 * (the holder's queue node when it came through the queue, NULL when it stole the lock; written
 * only by the holder).  Orderings: taking the word is an acquire CAS (or the head's acquire load of
 * HANDED); releasing it is a release CAS or store; the MCS queue is as in mcs.c.
 */
#include "core/qnode.h"
#include "core/raw_lock.h"
#include "core/wait.h"

enum {
    FREE = 0,
    HELD = 1,
    HELD_HANDOFF = 2, /* held, and the head asked to be handed the lock at release */
    HANDED = 3,       /* free, reserved for the head */
};

/* Rounds the head loses to stealers (a release it saw but did not win) before it asks for the
 * lock to be handed to it. */
#define STEALS_BEFORE_HANDOFF 8

struct mcstp {
    int word;                 /* FREE, HELD, HELD_HANDOFF or HANDED */
    int sleepers;             /* waiters asleep on word: the head, if anyone */
    struct rcl_qnode *tail;   /* last node of the queue of waiters; NULL: nobody queued */
    struct rcl_qnode *holder; /* the holder's node if it came through the queue, else NULL */
};

static int mcstp_try(void *lock, int policy)
{
    struct mcstp *l = lock;
    int expected = FREE;
    return ld_relaxed(&l->word) == FREE && cas_acquire(&l->word, &expected, HELD);
}

static void mcstp_acquire(void *lock, int policy)
{
    struct mcstp *l = lock;
    if (mcstp_try(l, policy))
        return; /* stolen (or simply free): holder stays NULL */

    /* Queue for headship, as in MCS. */
    struct rcl_qnode *me = rcl_qnode_get();
    struct rcl_qnode *pred = xchg_acq_rel(&l->tail, me);
    if (pred != NULL) {
        st_release(&pred->next, me);
        rcl_flag_wait(&me->flag, policy);
    }

    /* Head of the queue: the only waiter that watches the word. */
    for (unsigned rounds = 0;; rounds++) {
        int w = ld_acquire(&l->word);
        if (w == FREE) {
            int expected = FREE;
            if (cas_acquire(&l->word, &expected, HELD))
                break;
            continue; /* a stealer was faster */
        }
        if (w == HANDED) {
            st_relaxed(&l->word, HELD); /* reserved for us: nobody else writes it now */
            break;
        }
        if (w == HELD && rounds >= STEALS_BEFORE_HANDOFF) {
            int expected = HELD;
            cas_acq_rel(&l->word, &expected, HELD_HANDOFF);
            continue; /* look again: released meanwhile, or now HELD_HANDOFF */
        }
        rcl_word_wait(&l->word, w, &l->sleepers, policy, CLOCK_MONOTONIC, NULL);
    }
    st_relaxed(&l->holder, me);
}

/* After the word is released: give headship to our successor, if any, and our node back. */
static void pass_headship(struct mcstp *l, struct rcl_qnode *me, int policy)
{
    struct rcl_qnode *succ = ld_acquire(&me->next);
    if (succ == NULL) {
        struct rcl_qnode *expected = me;
        if (cas_acq_rel(&l->tail, &expected, NULL)) {
            rcl_qnode_put(me);
            return;
        }
        /* A successor is between its swap and its link (maybe descheduled there); the lock is
         * already free meanwhile, only this thread waits. */
        for (unsigned spins = 0; (succ = ld_acquire(&me->next)) == NULL;)
            rcl_wait_step(&spins, policy);
    }
    rcl_flag_grant(&succ->flag);
    rcl_qnode_put(me);
}

static void mcstp_release(void *lock, int policy)
{
    struct mcstp *l = lock;
    struct rcl_qnode *me = ld_relaxed(&l->holder);
    if (me != NULL)
        st_relaxed(&l->holder, NULL); /* a stealer after us finds NULL */
    int expected = HELD;
    if (!cas_acq_rel(&l->word, &expected, FREE)) {
        /* HELD_HANDOFF: the head asked; only the head may take it now. */
        st_release(&l->word, HANDED);
    }
    if (policy != RCL_WAIT_SPIN)
        rcl_word_wake(&l->word, &l->sleepers, 1);
    if (me != NULL)
        pass_headship(l, me, policy);
}

static int mcstp_is_held(void *lock)
{
    return ld_acquire(&((struct mcstp *)lock)->word) != FREE;
}

static const struct rcl_raw_lock_ops mcstp_raw = {
    .size = sizeof(struct mcstp),
    .acquire = mcstp_acquire,
    .try_acquire = mcstp_try,
    .release = mcstp_release,
    .is_held = mcstp_is_held,
};

RCL_DEFINE_RAW_ALGORITHM(mcstp, mcstp_raw);
