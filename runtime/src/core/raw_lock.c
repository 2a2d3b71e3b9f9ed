/*
 * The rest of rcl_lock_ops for algorithms given as a raw exclusive lock (core/raw_lock.h).
 *
 * m->impl points to a head (owner, depth, policy) on its own cache line, followed by the
 * algorithm's state.  owner is only written for recursive and errorcheck locks: a normal lock
 * costs the algorithm's own acquire and release and nothing else.
 *
 * Under the auto and park policies a thread that fails a first try goes through admission
 * (core/admission.h) before it waits in the algorithm: FIFO hand-offs to sleeping threads are
 * what made queue and cohort locks collapse when threads outnumber CPUs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/admission.h"
#include "core/raw_lock.h"
#include "core/runtime.h"
#include "core/wait.h"

struct raw_head {
    const void *owner; /* holder's identity (recursive and errorcheck kinds); NULL: free */
    unsigned depth;    /* relocks beyond the first (recursive kind) */
    int policy;        /* the lock's waiting policy, auto resolved per wait */
    int restricts;     /* admission on (auto, park) */
    int admitted;      /* the holder went through admission (written by the holder only) */
    unsigned releases; /* admitted releases since the last fair one (holder only) */
    struct rcl_admission admission;
} RCL_ALIGNED;

/* A thread's identity: the address of one of its thread-locals, no call needed to read it. */
static __thread char self_tag;
/* The depth a condvar wait set aside (a thread waits on one condvar at a time). */
static __thread unsigned depth_before_wait;

#define HEAD(m) ((struct raw_head *)(m)->impl)
#define ME ((const void *)&self_tag)

static int tracks_owner(const rcl_mutex_t *m)
{
    return m->kind == PTHREAD_MUTEX_RECURSIVE || m->kind == PTHREAD_MUTEX_ERRORCHECK;
}

void *rcl_raw_state(const rcl_mutex_t *m)
{
    return (char *)m->impl + sizeof(struct raw_head);
}

int rcl_raw_policy(const rcl_mutex_t *m)
{
    return HEAD(m)->policy;
}

int rcl_raw_init(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw)
{
    size_t size = sizeof(struct raw_head) + (raw->size + RCL_CACHE_LINE - 1) / RCL_CACHE_LINE * RCL_CACHE_LINE;
    struct raw_head *h = aligned_alloc(RCL_CACHE_LINE, size);
    if (!h)
        return ENOMEM;
    memset(h, 0, size);
    h->policy = m->config.policy;
    h->restricts = rcl_settings.admission && (h->policy == RCL_WAIT_AUTO || h->policy == RCL_WAIT_PARK);
    m->impl = h;
    if (raw->init) {
        int rc = raw->init(rcl_raw_state(m), m);
        if (rc != 0) {
            free(h);
            m->impl = NULL;
            return rc;
        }
    }
    return 0;
}

int rcl_raw_destroy(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw)
{
    if (raw->is_held(rcl_raw_state(m)))
        return EBUSY;
    if (raw->destroy)
        raw->destroy(rcl_raw_state(m));
    free(m->impl);
    m->impl = NULL;
    return 0;
}

/* Takes the algorithm's lock: a first try, then admission (when the policy restricts) and the
 * algorithm's wait.  Records for the release whether the holder was admitted. */
static void acquire(struct raw_head *h, const struct rcl_raw_lock_ops *raw, void *state)
{
    if (!h->restricts) {
        raw->acquire(state, h->policy);
        return;
    }
    if (raw->try_acquire(state, h->policy)) {
        h->admitted = 0;
        return;
    }
    rcl_admission_enter(&h->admission);
    raw->acquire(state, h->policy);
    h->admitted = 1;
}

static void release(struct raw_head *h, const struct rcl_raw_lock_ops *raw, void *state)
{
    int admitted = h->restricts && h->admitted, fair = 0;
    if (admitted && ++h->releases >= RCL_ADMISSION_PERIOD) {
        h->releases = 0;
        fair = 1;
    }
    raw->release(state, h->policy);
    if (admitted)
        rcl_admission_leave(&h->admission, fair);
}

/* The kinds' answer when the caller already holds m, or -1 to go on and take it. */
static int relock(rcl_mutex_t *m, int busy_rc)
{
    struct raw_head *h = HEAD(m);
    if (!tracks_owner(m) || ld_relaxed(&h->owner) != ME)
        return -1;
    if (m->kind == PTHREAD_MUTEX_ERRORCHECK)
        return busy_rc;
    if (h->depth == UINT_MAX)
        return EAGAIN; /* as glibc: the recursion count would overflow */
    h->depth++;
    return 0;
}

static void taken(rcl_mutex_t *m)
{
    if (tracks_owner(m))
        st_relaxed(&HEAD(m)->owner, ME);
}

int rcl_raw_lock(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw)
{
    int rc = relock(m, EDEADLK);
    if (rc >= 0)
        return rc;
    acquire(HEAD(m), raw, rcl_raw_state(m));
    taken(m);
    return 0;
}

int rcl_raw_trylock(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw)
{
    int rc = relock(m, EBUSY);
    if (rc >= 0)
        return rc;
    if (!raw->try_acquire(rcl_raw_state(m), HEAD(m)->policy))
        return EBUSY;
    HEAD(m)->admitted = 0;
    taken(m);
    return 0;
}

/* Releases m, which the caller holds (a recursive lock: one level). */
static void unlock_held(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw)
{
    struct raw_head *h = HEAD(m);
    if (tracks_owner(m)) {
        if (h->depth > 0) {
            h->depth--;
            return;
        }
        st_relaxed(&h->owner, NULL);
    }
    release(h, raw, rcl_raw_state(m));
}

int rcl_raw_unlock(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw)
{
    if (tracks_owner(m) ? ld_relaxed(&HEAD(m)->owner) != ME : !raw->is_held(rcl_raw_state(m)))
        return EPERM; /* not the holder's; or free: nothing to release (squashfs' cancellation
                       * handlers unlock locks they do not hold: a queue lock's release would
                       * corrupt its queue).  As rcl. */
    unlock_held(m, raw);
    return 0;
}

/* Tries until the deadline: the algorithm's queue is never joined, so a timeout leaves nothing
 * behind.  Waits grow from pauses to 1 ms sleeps (rcl_wait_step), capped by the deadline. */
int rcl_raw_clocklock(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw, clockid_t clock,
                      const struct timespec *abstime)
{
    int rc = relock(m, EDEADLK);
    if (rc >= 0)
        return rc;
    void *state = rcl_raw_state(m);
    int policy = HEAD(m)->policy;
    if (raw->try_acquire(state, policy))
        goto got_it;
    if (!rcl_abstime_valid(abstime))
        return EINVAL;
    for (unsigned spins = 0;;) {
        if (rcl_ns_until(clock, abstime) <= 0)
            return ETIMEDOUT;
        rcl_wait_step(&spins, policy == RCL_WAIT_SPIN ? RCL_WAIT_YIELD : policy);
        if (raw->try_acquire(state, policy))
            goto got_it;
    }
got_it:
    HEAD(m)->admitted = 0;
    taken(m);
    return 0;
}

int rcl_raw_execute(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw, rcl_cs_fn fn, void *ctx)
{
    int rc = rcl_raw_lock(m, raw);
    if (rc != 0)
        rcl_execute_lock_failed(m, rc);
    int ret = fn(ctx);
    unlock_held(m, raw);
    return ret;
}

int rcl_raw_execute_trylock(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw, rcl_cs_fn fn, void *ctx)
{
    int acquired = rcl_raw_trylock(m, raw) == 0;
    *(int *)ctx = acquired;
    int ret = fn(ctx);
    if (acquired)
        unlock_held(m, raw);
    return ret;
}

int rcl_raw_release_for_wait(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw)
{
    struct raw_head *h = HEAD(m);
    if (tracks_owner(m)) {
        if (ld_relaxed(&h->owner) != ME)
            return EPERM;
        /* Set aside: a thread that takes the lock meanwhile must find depth 0. */
        depth_before_wait = h->depth;
        h->depth = 0;
        st_relaxed(&h->owner, NULL);
    }
    release(h, raw, rcl_raw_state(m));
    return 0;
}

int rcl_raw_reacquire_after_wait(rcl_mutex_t *m, const struct rcl_raw_lock_ops *raw)
{
    struct raw_head *h = HEAD(m);
    acquire(h, raw, rcl_raw_state(m));
    if (tracks_owner(m)) {
        h->depth = depth_before_wait;
        st_relaxed(&h->owner, ME);
    }
    return 0;
}
