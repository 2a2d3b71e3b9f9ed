/*
 * ticket: the ticket lock (Mellor-Crummey & Scott 1991), with its waiters spread over a waiting
 * array as in TWA (Dice & Kogan, "TWA - Ticket Locks Augmented with a Waiting Array", Euro-Par
 * 2019).  Strict FIFO: a thread takes the next ticket with one fetch-and-add and enters when
 * now_serving reaches it; release is one store by the holder.
 *
 * Where its waiters wait.  In the plain ticket lock every waiter polls now_serving, so each
 * release invalidates that line in every waiting core, and parked waiters would all have to be
 * woken to see whose turn it is.  Here only the next in line (distance 1) waits on now_serving
 * itself; the others (distance 2 or more) wait on a slot of a small global waiting array chosen
 * by hashing (lock, ticket).  A release moves now_serving to t and then bumps the slot of ticket
 * t + 1, whose owner is now next in line and moves over to now_serving.  So a release disturbs at
 * most two waiters, spinning or parked, whatever the queue's length (the plain lock's proportional
 * backoff is not needed: no two waiters of one lock poll the same word).  Slots are shared by
 * all locks; a collision only causes a spurious wake-up, after which the waiter looks again.
 *
 * Every wait is an rcl_word_wait under the lock's policy (spin, yield, park, auto), with a
 * sleepers count beside each word so that a release makes a syscall only for a sleeping waiter.
 *
 * Orderings: the holder's st_release of now_serving publishes the section to the next holder's
 * ld_acquire; the slot bump (acq_rel RMW) comes after that store, so a waiter that sees the bump
 * and then reads now_serving sees the new value.  Tickets wrap (unsigned distances).
 */
#include <limits.h>

#include "core/raw_lock.h"
#include "core/wait.h"

struct ticket {
    int next_ticket; /* the ticket the next arrival takes (fetch-and-add) */
    int now_serving; /* the ticket that holds the lock; written only by the holder */
    int sleepers;    /* waiters asleep on now_serving (at most the next in line) */
};

/* The waiting array: global, one cache line per slot. */
#define WAIT_SLOTS 256

struct wait_slot {
    int word;     /* bumped when the ticket hashed here becomes next in line */
    int sleepers; /* waiters asleep on word */
} RCL_ALIGNED;

static struct wait_slot wait_array[WAIT_SLOTS];

/* A lock's tickets map to consecutive slots from a per-lock start, so the waiters of one lock
 * never collide until more than WAIT_SLOTS of them wait. */
static struct wait_slot *slot_of(const struct ticket *l, unsigned ticket)
{
    uint64_t start = ((uint64_t)(uintptr_t)l >> 6) * 0x9E3779B97F4A7C15ull >> 32;
    return &wait_array[(start + ticket) % WAIT_SLOTS];
}

static int ticket_try(void *lock, int policy)
{
    struct ticket *l = lock;
    /* Free when the next ticket is the one being served: take it, if nobody else does first.
     * The acquire load of now_serving is what orders us after the last holder's release. */
    int serving = ld_acquire(&l->now_serving);
    int expected = serving;
    return ld_relaxed(&l->next_ticket) == serving &&
           cas_acquire(&l->next_ticket, &expected, (int)((unsigned)serving + 1));
}

static void ticket_acquire(void *lock, int policy)
{
    struct ticket *l = lock;
    unsigned mine = (unsigned)add_relaxed(&l->next_ticket, 1) - 1;
    for (;;) {
        int serving = ld_acquire(&l->now_serving);
        unsigned distance = mine - (unsigned)serving;
        if (distance == 0)
            return;
        if (distance == 1) {
            /* Next in line: wait for now_serving to move (to our ticket: nobody else's). */
            rcl_word_wait(&l->now_serving, serving, &l->sleepers, policy, CLOCK_MONOTONIC, NULL);
            continue;
        }
        /* Further back: wait on our slot until a release makes us next in line.  The slot is
         * read before now_serving is looked at again: a bump after this read wakes us, and one
         * before it is followed (acquire) by a now_serving that tells us we moved up. */
        struct wait_slot *s = slot_of(l, mine);
        int seen = ld_acquire(&s->word);
        if (mine - (unsigned)ld_acquire(&l->now_serving) >= 2)
            rcl_word_wait(&s->word, seen, &s->sleepers, policy, CLOCK_MONOTONIC, NULL);
    }
}

static void ticket_release(void *lock, int policy)
{
    struct ticket *l = lock;
    unsigned next = (unsigned)ld_relaxed(&l->now_serving) + 1;
    st_release(&l->now_serving, (int)next);
    /* The owner of ticket next + 1 is now next in line: move it from its slot. */
    struct wait_slot *s = slot_of(l, next + 1);
    add_acq_rel(&s->word, 1);
    if (policy != RCL_WAIT_SPIN) {
        rcl_word_wake(&l->now_serving, &l->sleepers, INT_MAX);
        rcl_word_wake(&s->word, &s->sleepers, INT_MAX);
    }
}

static int ticket_is_held(void *lock)
{
    struct ticket *l = lock;
    return ld_acquire(&l->next_ticket) != ld_acquire(&l->now_serving);
}

static const struct rcl_raw_lock_ops ticket_raw = {
    .size = sizeof(struct ticket),
    .acquire = ticket_acquire,
    .try_acquire = ticket_try,
    .release = ticket_release,
    .is_held = ticket_is_held,
};

RCL_DEFINE_RAW_ALGORITHM(ticket, ticket_raw);
