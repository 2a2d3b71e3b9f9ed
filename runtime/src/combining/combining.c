/*
 * The rest of rcl_lock_ops for combining locks (combining.h), and the CC-Synch request queue
 * that ccsynch and hsynch share.
 */
#include <stdlib.h>
#include <string.h>

#include "combining/combining.h"

/* A thread's identity: the address of one of its thread-locals, no call needed to read it. */
static __thread char self_tag;
/* The depth a condvar wait set aside (a thread waits on one condvar at a time). */
static __thread unsigned depth_before_wait;

#define ME ((const void *)&self_tag)
#define HEAD(m) ((struct rcl_comb *)(m)->impl)

int rcl_comb_init(rcl_mutex_t *m, const struct rcl_comb_ops *ops)
{
    size_t size = sizeof(struct rcl_comb) + (ops->size + RCL_CACHE_LINE - 1) / RCL_CACHE_LINE * RCL_CACHE_LINE;
    struct rcl_comb *c = aligned_alloc(RCL_CACHE_LINE, size);
    if (!c)
        return ENOMEM;
    memset(c, 0, size);
    c->policy = m->config.policy;
    c->tracks_owner = m->kind == PTHREAD_MUTEX_RECURSIVE || m->kind == PTHREAD_MUTEX_ERRORCHECK;
    if (ops->init) {
        int rc = ops->init(rcl_comb_state(c), m);
        if (rc != 0) {
            free(c);
            return rc;
        }
    }
    m->impl = c;
    return 0;
}

int rcl_comb_destroy(rcl_mutex_t *m, const struct rcl_comb_ops *ops)
{
    struct rcl_comb *c = HEAD(m);
    if (ops->is_held(rcl_comb_state(c)))
        return EBUSY;
    if (ops->destroy)
        ops->destroy(rcl_comb_state(c));
    free(c);
    m->impl = NULL;
    return 0;
}

/* The kinds' answer when the caller already holds m, or -1 to go on and take it. */
static int relock(struct rcl_comb *c, int kind, int busy_rc)
{
    if (!c->tracks_owner || ld_relaxed(&c->owner) != ME)
        return -1;
    if (kind == PTHREAD_MUTEX_ERRORCHECK)
        return busy_rc;
    if (c->depth == UINT_MAX)
        return EAGAIN; /* as glibc: the recursion count would overflow */
    c->depth++;
    return 0;
}

void rcl_comb_taken(struct rcl_comb *c)
{
    if (c->tracks_owner)
        st_relaxed(&c->owner, ME);
}

/* The holder leaves: a combining pass, then the lock is handed on, or freed and a sleeping
 * hybrid or timed locker woken.  The seq_cst increment then seq_cst load of sleepers pairs with
 * rcl_word_wait's increment of sleepers then load of the word (Dekker): either the sleeper sees
 * the new count, or we see the sleeper. */
static void leave(struct rcl_comb *c, const struct rcl_comb_ops *ops)
{
    if (!ops->release(c, rcl_comb_state(c), c->policy))
        return;
    __atomic_add_fetch(&c->frees, 1, __ATOMIC_SEQ_CST);
    if (c->policy != RCL_WAIT_SPIN && __atomic_load_n(&c->sleepers, __ATOMIC_SEQ_CST) != 0)
        rcl_futex_wake(&c->frees, 1);
}

/* Waits until the lock is left free after `seen` was read from frees, or until abstime on clock.
 * Returns 0 or ETIMEDOUT. */
static int wait_free(struct rcl_comb *c, int seen, clockid_t clock, const struct timespec *abstime)
{
    return rcl_word_wait(&c->frees, seen, &c->sleepers, c->policy, clock, abstime);
}

/* Takes the lock in hybrid form: when free (and waiting for it to be, up to RCL_COMB_BARGE_NS),
 * else by a request for the lock itself, which the holder hands it over to. */
static void acquire(struct rcl_comb *c, const struct rcl_comb_ops *ops)
{
    void *state = rcl_comb_state(c);
    if (ops->try_acquire(state))
        goto got_it;
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_nsec += RCL_COMB_BARGE_NS;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    for (;;) {
        int seen = ld_acquire(&c->frees); /* before the try: a free after it changes frees */
        if (ops->try_acquire(state))
            goto got_it;
        if (wait_free(c, seen, CLOCK_MONOTONIC, &deadline) == ETIMEDOUT)
            break;
    }
    struct rcl_comb_req req = { .fn = NULL };
    int ran = ops->post(state, &req, c->policy);
    (void)ran; /* a request without a function is never run: its owner is handed the lock */
got_it:
    rcl_comb_taken(c);
}

int rcl_comb_lock(rcl_mutex_t *m, const struct rcl_comb_ops *ops)
{
    struct rcl_comb *c = HEAD(m);
    int rc = relock(c, m->kind, EDEADLK);
    if (rc >= 0)
        return rc;
    acquire(c, ops);
    return 0;
}

int rcl_comb_trylock(rcl_mutex_t *m, const struct rcl_comb_ops *ops)
{
    struct rcl_comb *c = HEAD(m);
    int rc = relock(c, m->kind, EBUSY);
    if (rc >= 0)
        return rc;
    if (!ops->try_acquire(rcl_comb_state(c)))
        return EBUSY;
    rcl_comb_taken(c);
    return 0;
}

int rcl_comb_unlock(rcl_mutex_t *m, const struct rcl_comb_ops *ops)
{
    struct rcl_comb *c = HEAD(m);
    if (c->tracks_owner) {
        if (ld_relaxed(&c->owner) != ME)
            return EPERM;
        if (c->depth > 0) {
            c->depth--;
            return 0;
        }
        /* the owner word stays ours while the release serves others (rcl_comb_pass_end) */
    } else if (!ops->is_held(rcl_comb_state(c))) {
        return EPERM; /* free: nothing to release (squashfs' cancellation handlers unlock locks they
                       * do not hold); releasing would hand a request queue on from nowhere.  As rcl. */
    }
    leave(c, ops);
    return 0;
}

/* Waits for the lock to be left free until the deadline: the queue is never joined, so a
 * timeout leaves nothing behind. */
int rcl_comb_clocklock(rcl_mutex_t *m, const struct rcl_comb_ops *ops, clockid_t clock,
                       const struct timespec *abstime)
{
    struct rcl_comb *c = HEAD(m);
    int rc = relock(c, m->kind, EDEADLK);
    if (rc >= 0)
        return rc;
    void *state = rcl_comb_state(c);
    if (ops->try_acquire(state))
        goto got_it;
    if (!rcl_abstime_valid(abstime))
        return EINVAL;
    for (;;) {
        int seen = ld_acquire(&c->frees);
        if (ops->try_acquire(state))
            goto got_it;
        if (wait_free(c, seen, clock, abstime) == ETIMEDOUT)
            return ops->try_acquire(state) ? (rcl_comb_taken(c), 0) : ETIMEDOUT;
    }
got_it:
    rcl_comb_taken(c);
    return 0;
}

/*
 * An extracted section: posted, and run either by a combiner (the caller gets fn's value and the
 * section's errno) or here once the caller is handed the lock, before it serves the requests
 * queued behind it.  The section sees the caller's errno on entry either way.
 */
int rcl_comb_execute(rcl_mutex_t *m, const struct rcl_comb_ops *ops, rcl_cs_fn fn, void *ctx)
{
    struct rcl_comb *c = HEAD(m);
    if (c->tracks_owner && ld_relaxed(&c->owner) == ME) {
        /* Nested on a lock this thread holds (hybrid, or as the combiner running the section
         * that calls us): a recursive lock runs it in place, an errorcheck one cannot. */
        if (m->kind == PTHREAD_MUTEX_ERRORCHECK)
            rcl_execute_lock_failed(m, EDEADLK);
        return fn(ctx);
    }
    struct rcl_comb_req req = { .fn = fn, .ctx = ctx, .err = errno };
    if (ops->post(rcl_comb_state(c), &req, c->policy)) {
        errno = req.err;
        return req.ret;
    }
    rcl_comb_taken(c);
    int ret, section_errno;
    if (req.done) { /* served before this thread took the lock: nothing left but to leave it */
        ret = req.ret;
        section_errno = req.err;
    } else {
        errno = req.err; /* waiting may have changed it */
        ret = fn(ctx);
        section_errno = errno;
    }
    leave(c, ops);
    errno = section_errno;
    return ret;
}

/* Algorithm 3: the lock is taken only if free; fn runs either way, told which in its first int. */
int rcl_comb_execute_trylock(rcl_mutex_t *m, const struct rcl_comb_ops *ops, rcl_cs_fn fn, void *ctx)
{
    int saved = errno;
    int acquired = rcl_comb_trylock(m, ops) == 0;
    errno = saved;
    *(int *)ctx = acquired;
    int ret = fn(ctx);
    if (acquired) {
        saved = errno;
        rcl_comb_unlock(m, ops);
        errno = saved;
    }
    return ret;
}

int rcl_comb_release_for_wait(rcl_mutex_t *m, const struct rcl_comb_ops *ops)
{
    struct rcl_comb *c = HEAD(m);
    if (c->tracks_owner) {
        if (ld_relaxed(&c->owner) != ME)
            return EPERM;
        /* Set aside: the sections served on the way out, and the next holder, find depth 0. */
        depth_before_wait = c->depth;
        c->depth = 0;
    }
    leave(c, ops);
    return 0;
}

int rcl_comb_reacquire_after_wait(rcl_mutex_t *m, const struct rcl_comb_ops *ops)
{
    struct rcl_comb *c = HEAD(m);
    acquire(c, ops);
    if (c->tracks_owner)
        c->depth = depth_before_wait;
    return 0;
}

/* ---- the CC-Synch request queue ---- */

int rcl_ccq_init(struct rcl_ccq *q)
{
    struct rcl_qnode *n = rcl_qnode_get(); /* the first tail: nobody's, the queue free */
    st_relaxed(&q->tail, (uintptr_t)n | RCL_COMB_TAG);
    return 0;
}

void rcl_ccq_destroy(struct rcl_ccq *q)
{
    rcl_qnode_put(RCL_COMB_UNTAG(ld_acquire(&q->tail)));
}

int rcl_ccq_is_held(struct rcl_ccq *q)
{
    return (ld_acquire(&q->tail) & RCL_COMB_TAG) == 0;
}

int rcl_ccq_post(struct rcl_ccq *q, struct rcl_comb_req *req, int policy, struct rcl_qnode **head)
{
    struct rcl_qnode *next = rcl_qnode_get(); /* flag WAITING, next NULL: the next arrival's */
    /* acq_rel: publishes next's initialisation; acquires what the last holder did if free */
    uintptr_t prev_tail = xchg_acq_rel(&q->tail, (uintptr_t)next);
    struct rcl_qnode *mine = RCL_COMB_UNTAG(prev_tail);
    mine->arg = req;
    st_release(&mine->next, next); /* the request is readable once the link is */
    if (prev_tail & RCL_COMB_TAG) {
        *head = mine; /* the queue was free: nobody will grant this node */
        return 0;
    }
    rcl_comb_wait(&mine->flag, policy);
    if (req->done) {
        /* The combiner read our link before granting and will not touch the node again. */
        rcl_qnode_put(mine);
        return 1;
    }
    *head = mine;
    return 0;
}

int rcl_ccq_try(struct rcl_ccq *q, struct rcl_qnode **head)
{
    uintptr_t tail = ld_acquire(&q->tail);
    if (!(tail & RCL_COMB_TAG))
        return 0;
    struct rcl_qnode *next = rcl_qnode_get();
    if (!cas_acq_rel(&q->tail, &tail, (uintptr_t)next)) {
        rcl_qnode_put(next);
        return 0;
    }
    struct rcl_qnode *mine = RCL_COMB_UNTAG(tail);
    mine->arg = NULL;
    st_release(&mine->next, next);
    *head = mine;
    return 1;
}

int rcl_ccq_release(struct rcl_ccq *q, struct rcl_qnode *head, struct rcl_comb_pass *pass)
{
    /* Our own node: its link is ours (written in post or try); nobody else touches it now. */
    struct rcl_qnode *cur = ld_relaxed(&head->next);
    rcl_qnode_put(head);
    struct rcl_qnode *next;
    for (;;) {
        next = ld_acquire(&cur->next);
        if (next == NULL)
            break; /* cur is the tail: its owner, if any, has not posted yet */
        struct rcl_comb_req *req = cur->arg;
        if (!pass || req->fn == NULL || rcl_comb_pass_full(pass))
            break; /* cur's owner gets the lock: it asked for it, or this pass is over */
        rcl_comb_run(pass, req);
        rcl_flag_grant(&cur->flag); /* its owner may reuse cur from here: `next` was read before */
        cur = next;
    }
    if (pass)
        rcl_comb_pass_end(pass);
    if (next == NULL) {
        uintptr_t expected = (uintptr_t)cur;
        /* release: the sections run under the lock are visible to whoever swaps the tail out */
        if (cas_acq_rel(&q->tail, &expected, (uintptr_t)cur | RCL_COMB_TAG))
            return 1; /* free: cur stays as the unowned tail */
        /* Someone swapped cur out after our look: it owns cur and will wait on its flag. */
    }
    /* cur's owner holds the lock now (req->done stays 0); it reads cur's link itself. */
    rcl_flag_grant(&cur->flag);
    return 0;
}
