#define _GNU_SOURCE /* sched_getcpu */
/*
 * rcl: Remote Core Locking, client side (Algorithms 2 and 3) and the lock operations.
 *
 * A lock is a holder word (the client id of the section's originating client, real_me) and the
 * server that runs its sections.  Three ways to run a section:
 *   - remote: post {lock, fn, ctx} in this thread's mailbox on the lock's server and wait;
 *   - local nested: on a servicing thread of the lock's own server, take the holder with a
 *     CAS, yielding while it is busy (Algorithm 2 lines 21-26), and run fn in place;
 *   - recursive: the holder is already real_me and the lock is recursive: run fn in place.
 * Hybrid mode (rcl_mutex_lock/unlock) posts a request that the server completes by taking the
 * holder on the client's behalf without releasing it; unlock is a release store of NONE.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rcl/rcl_internal.h"

/* Client wait: spin with pause this many times, then yield at each check. */
#define CLIENT_SPINS 64
#define CLIENT_YIELDS 256        /* then sleep on the mailbox */
#define CLIENT_SLEEP_NS 1000000  /* longest sleep before looking again */

static pthread_mutex_t locks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rcl_lock **all_locks; /* for statistics; kept until destroy */
static size_t n_locks, cap_locks;

/* The counts of destroyed locks, by id and server (under locks_lock): programs destroy their
 * locks before they exit (pixz, ag), and a lock set up again keeps its earlier sections. */
struct retired_lock {
    char *id; /* NULL: anonymous */
    int server;
    unsigned long remote, local, hybrid;
};
static struct retired_lock *retired;
static size_t n_retired, cap_retired;

static __thread int tls_saved_depth; /* recursion depth put aside by a condvar wait */
/* RCL locks this thread holds in hybrid mode (approximately: a lock released by another thread
 * keeps its owner's count up, which costs only speed).  While it is 0, a client thread cannot be
 * the holder of any lock and does not read the holder's cache line, which the server owns. */
static __thread int tls_hybrid_held;

/* Could this thread hold l?  Servicing threads run sections for clients: always look. */
static inline int may_hold(void)
{
    return tls_hybrid_held > 0 || rcl_tls_sthread;
}

/* The holder, once a servicing thread's transient RCL_CLAIMING (a claim being re-validated, or
 * a completed section being released) is over. */
static inline int settled_holder(struct rcl_lock *l)
{
    int holder;
    for (unsigned n = 0; (holder = ld_acquire(&l->holder)) == RCL_CLAIMING; n++)
        if (n < 64)
            rcl_pause();
        else
            rcl_server_backoff(n);
    return holder;
}

/* Who is asking: on a servicing thread, the client its current section comes from. */
static inline int current_me(void)
{
    if (rcl_tls_sthread && rcl_tls_real_me != RCL_NONE)
        return rcl_tls_real_me;
    return rcl_client_id();
}

static inline int on_server_of(const struct rcl_lock *l)
{
    return rcl_tls_sthread && rcl_tls_sthread->server == l->server;
}

/*
 * A section that has been running this long may be blocked (a read, a semaphore, a sleep, a lock
 * held by another server's section): its client then makes sure that the server has another
 * servicing thread for the other locks it serves, and again every SECTION_RECHECK_NS while it
 * waits.  Before, only the management thread did, after a whole timeout without progress
 * (RCLIFY_MGR_US, 5 ms), and a section that slept 1 ms stopped every other lock of its server for
 * that millisecond (runtime/bench/blockbench.c, docs/runtime.md).
 */
#define SECTION_LONG_NS 20000
#define SECTION_RECHECK_NS 1000000

/* Is r's section running now (claimed: its lock held for its client), not merely waiting for the
 * server?  Then the wait is the section's, and the server may need a thread for the others. */
static void help_long_section(struct rcl_request *r)
{
    rcl_cs_fn fn = ld_relaxed(&r->function);
    if (!fn || fn == RCL_FN_HYBRID_LOCK) /* (a condvar wait, RCL_FN_IN_PROGRESS, saw to it itself) */
        return;
    struct rcl_lock *l = ld_relaxed(&r->lock);
    if (ld_relaxed(&l->holder) == ld_relaxed(&r->real_me))
        rcl_server_ensure_free(l->server);
}

/*
 * The wait after the spins: the section is long or the server is not running.  Yields (with more
 * runnable threads than CPUs, spinning clients would keep the server off a CPU), then sleeps on
 * the mailbox.  Out of line, so that the spinning path of post_and_wait stays short; keeps errno.
 */
static __attribute__((noinline)) void wait_long(struct rcl_request *r)
{
    int saved_errno = errno;
    /* A servicing thread waiting on another server is busy-waiting inside a section: its own
     * server may need another thread (e.g. to run a section nested back into it). */
    if (rcl_tls_sthread)
        rcl_server_ensure_free(rcl_tls_sthread->server);
    uint64_t check_at = rcl_now_ns() + SECTION_LONG_NS;
    for (unsigned n = 0; ld_acquire(&r->function) != NULL; n++) { /* acquire: ret, ctx */
        uint64_t now = rcl_now_ns(); /* (a yield or a sleep per turn: the clock costs nothing here) */
        if (now >= check_at) {
            help_long_section(r);
            check_at = now + SECTION_RECHECK_NS;
        }
        if (n < CLIENT_YIELDS) {
            rcl_server_backoff(n);
            continue;
        }
        /* A long section (one that waits on a condvar, sleeps, does I/O): sleep until the server
         * completes it, instead of keeping a CPU busy with yields.  The timeout covers a wake-up
         * missed in the race described at rcl_request_complete. */
        st_relaxed(&r->sleeping, 1);
        fence_seq_cst();
        rcl_cs_fn seen = ld_acquire(&r->function);
        if (seen != NULL) {
            struct timespec ts = { 0, CLIENT_SLEEP_NS };
            rcl_futex_wait((int *)(void *)&r->function, (int)(uintptr_t)seen, &ts);
        }
        st_relaxed(&r->sleeping, 0);
    }
    errno = saved_errno;
}

/* Posts a request in this thread's mailbox on s and waits for its completion (Algorithm 2).
 * Inlined into its callers: between a completion and the next request, every instruction of the
 * client is on the round trip.  A section (`section`: not a hybrid lock request; a constant in
 * every caller) takes this thread's errno to the server and brings the one it leaves back, as if
 * it had run here. */
static inline __attribute__((always_inline)) int post_and_wait(struct rcl_lock *l, rcl_cs_fn fn, void *ctx,
                                                               size_t ctx_size, int real_me, int section)
{
    struct rcl_server *s = l->server;
    if (__builtin_expect(!ld_acquire(&s->started), 0)) { /* only in a child after fork() */
        int e = errno;
        rcl_server_get(s->index, s->cpu);
        errno = e;
    }
    struct rcl_request *r = &s->requests[rcl_client_id()];
    int inl = ctx_size != 0 && ctx_size <= RCL_INLINE_CTX;
    /* Only this thread writes these fields: a field that already holds its value (the same lock
     * and context as last time, the common case) is not stored again. */
    store_if_changed(&r->lock, l);
    store_if_changed(&r->real_me, (int16_t)real_me);
    store_if_changed(&r->ctx_size, (uint8_t)(inl ? ctx_size : 0));
    if (inl)
        memcpy(r->ctx.bytes, ctx, ctx_size);
    else
        store_if_changed(&r->ctx.ptr, ctx);
    int *errp = rcl_tls_errno; /* set by rcl_client_id() above */
    if (section)
        store_if_changed(&r->err, *errp); /* usually what the last section left: no store */
    st_release(&r->function, fn); /* publish the request: lock, context, real_me, err before it */
    rcl_server_kick(s);
    /* On the CPU the server runs on, spinning would only keep the server from running: yield at
     * once.  (Looked up after posting: the server is working on the request meanwhile.) */
    unsigned spins = sched_getcpu() == ld_relaxed(&s->cpu_now) ? 0 : CLIENT_SPINS;
    for (unsigned n = 0;; n++) {
        if (ld_acquire(&r->function) == NULL) /* acquire: ret, ctx */
            break;
        if (n == spins) {
            wait_long(r);
            break;
        }
        rcl_pause();
    }
    if (inl)
        memcpy(ctx, r->ctx.bytes, ctx_size);
    if (section)
        *errp = ld_relaxed(&r->err); /* (wait_long put the caller's back meanwhile) */
    return r->ret;
}

/* Takes l on a servicing thread of its own server (Algorithm 2, lines 22-23). */
static void take_local(struct rcl_lock *l, int me)
{
    for (unsigned n = 0;; n++) {
        int expected = RCL_NONE;
        if (cas_acquire(&l->holder, &expected, me))
            return;
        rcl_server_backoff(n); /* give the holder (another servicing thread, a client) a chance */
    }
}

/*
 * Lock states are type-stable: a destroyed one goes to a free list and is reused, never freed.  A
 * second servicing thread that read a mailbox just before its request completed may still try a
 * CAS on the holder of that request's lock after the program destroyed the lock; the CAS then hits
 * a valid lock state, and the re-validation in the server releases it at once.
 */
static struct rcl_lock *free_states;

static struct rcl_lock *new_state(void)
{
    struct rcl_lock *l = free_states;
    if (l) { /* holder is NONE (or briefly held by such a stale claim): leave it alone */
        free_states = l->next_free;
        l->depth = 0;
        st_relaxed(&l->waiter, 0);
        st_relaxed(&l->sections_remote, 0);
        st_relaxed(&l->sections_local, 0);
        st_relaxed(&l->hybrid_locks, 0);
        return l;
    }
    l = aligned_alloc(RCL_CACHE_LINE, sizeof *l);
    if (l)
        memset(l, 0, sizeof *l);
    return l;
}

static int remote_init(rcl_mutex_t *m)
{
    /* Everything the statistics printer reads is set before the state is published in all_locks. */
    struct rcl_server *server = rcl_server_get(m->config.server, m->config.cpu);
    char *id = m->config.id ? strdup(m->config.id) : NULL;
    pthread_mutex_lock(&locks_lock);
    if (n_locks == cap_locks) {
        size_t cap = cap_locks ? cap_locks * 2 : 64;
        struct rcl_lock **a = realloc(all_locks, cap * sizeof *a);
        if (!a) {
            pthread_mutex_unlock(&locks_lock);
            free(id);
            return ENOMEM;
        }
        all_locks = a;
        cap_locks = cap;
    }
    struct rcl_lock *l = new_state();
    if (!l) {
        pthread_mutex_unlock(&locks_lock);
        free(id);
        return ENOMEM;
    }
    l->server = server;
    l->mutex = m;
    l->id = id;
    all_locks[n_locks++] = l;
    pthread_mutex_unlock(&locks_lock);
    m->impl = l;
    return 0;
}

static int same_id(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Under locks_lock: l's counts join its id's retired record; takes l->id over. */
static void retire(struct rcl_lock *l)
{
    struct retired_lock *r = NULL;
    for (size_t i = 0; i < n_retired && !r; i++)
        if (retired[i].server == l->server->index && same_id(retired[i].id, l->id))
            r = &retired[i];
    if (!r) {
        if (n_retired == cap_retired) {
            size_t cap = cap_retired ? 2 * cap_retired : 16;
            struct retired_lock *a = realloc(retired, cap * sizeof *a);
            if (!a) { /* the counts are lost, not the lock */
                free(l->id);
                l->id = NULL;
                return;
            }
            retired = a;
            cap_retired = cap;
        }
        r = &retired[n_retired++];
        *r = (struct retired_lock){ .id = l->id, .server = l->server->index };
        l->id = NULL;
    }
    r->remote += ld_relaxed(&l->sections_remote);
    r->local += ld_relaxed(&l->sections_local);
    r->hybrid += ld_relaxed(&l->hybrid_locks);
    free(l->id);
    l->id = NULL;
}

static int remote_destroy(rcl_mutex_t *m)
{
    struct rcl_lock *l = m->impl;
    if (settled_holder(l) != RCL_NONE) /* acquire: the last holder's writes before the free */
        return EBUSY;
    pthread_mutex_lock(&locks_lock);
    for (size_t i = 0; i < n_locks; i++)
        if (all_locks[i] == l) {
            all_locks[i] = all_locks[--n_locks];
            break;
        }
    retire(l);
    l->next_free = free_states;
    free_states = l;
    pthread_mutex_unlock(&locks_lock);
    m->impl = NULL;
    return 0;
}

static int remote_lock(rcl_mutex_t *m)
{
    struct rcl_lock *l = m->impl;
    int me = current_me();
    if (may_hold() && ld_relaxed(&l->holder) == me) { /* only this thread could have stored `me` */
        if (m->kind != PTHREAD_MUTEX_RECURSIVE)
            return EDEADLK;
        l->depth++;
        return 0;
    }
    if (on_server_of(l)) {
        take_local(l, me);
        stat_inc(&l->hybrid_locks, 1);
    } else {
        post_and_wait(l, RCL_FN_HYBRID_LOCK, NULL, 0, me, 0); /* the server takes it for `me` */
    }
    tls_hybrid_held++;
    return 0;
}

static int remote_trylock(rcl_mutex_t *m)
{
    struct rcl_lock *l = m->impl;
    int me = current_me(), expected = RCL_NONE;
    int holder = settled_holder(l); /* a lock free but for a server's transient claim is free */
    if (holder == me) {
        if (m->kind != PTHREAD_MUTEX_RECURSIVE)
            return EBUSY;
        l->depth++;
        return 0;
    }
    if (holder != RCL_NONE || (!on_server_of(l) && rcl_lock_waiter_pending(l, l->server)) ||
        !cas_acquire(&l->holder, &expected, me))
        return EBUSY; /* held, or promised to a request that found it held (rcl_internal.h) */
    stat_inc(&l->hybrid_locks, 1);
    tls_hybrid_held++;
    return 0;
}

/* ---- timed hybrid lock ---------------------------------------------------------------------- */

/* Sleeps until the deadline or for at most max_ns, whichever comes first. */
static void sleep_until(clockid_t clock, const struct timespec *abstime, int64_t left, int64_t max_ns)
{
    if (left > max_ns)
        rcl_sleep_ns((long)max_ns);
    else
        rcl_sleep_until(clock, abstime);
}

/* take_local with a deadline: on a servicing thread of l's own server, nothing was posted, so
 * giving up is only leaving the loop. */
static int take_local_until(struct rcl_lock *l, int me, clockid_t clock, const struct timespec *abstime)
{
    for (unsigned n = 0;; n++) {
        int expected = RCL_NONE;
        if (cas_acquire(&l->holder, &expected, me))
            return 0;
        if (rcl_ns_until(clock, abstime) <= 0)
            return ETIMEDOUT;
        rcl_server_backoff(n);
    }
}

/*
 * The deadline passed with a hybrid lock request still posted in r.  Withdraw it: CAS `function`
 * from RCL_FN_HYBRID_LOCK to RCL_FN_WITHDRAWN, which no servicing thread claims.  A servicing
 * thread takes a hybrid request in three steps: CAS the holder NONE -> RCL_CLAIMING, re-read
 * `function`, and, if it still says RCL_FN_HYBRID_LOCK, store this client's id in the holder and
 * complete the request (function = NULL).  The withdrawal CAS and the claim's CAS and re-read are
 * seq_cst, so of the two threads at least one sees the other (Dekker):
 *   - the CAS fails: the request was completed (NULL) before it: granted, the lock is ours;
 *   - the claim's re-read saw RCL_FN_WITHDRAWN: that servicing thread lets the lock go untouched;
 *   - the claim's re-read came first and saw the request: the holder read after the withdrawal is
 *     RCL_CLAIMING or our id, never an older value.  Once that claim is settled the holder is our
 *     id: granted after all.  Its completion store (function = NULL) is still to come: wait for it
 *     before returning, so that it cannot wipe out the next request of this mailbox.
 * Not granted: the mailbox is emptied (function = NULL) and the lock was never touched for us.
 */
static int withdraw(struct rcl_lock *l, struct rcl_request *r, int me)
{
    rcl_cs_fn expected = RCL_FN_HYBRID_LOCK;
    if (!__atomic_compare_exchange_n(&r->function, &expected, RCL_FN_WITHDRAWN, 0, __ATOMIC_SEQ_CST,
                                     __ATOMIC_ACQUIRE))
        return 0; /* completed meanwhile (acquire: the previous holder's writes) */
    int holder;
    for (unsigned n = 0; (holder = __atomic_load_n(&l->holder, __ATOMIC_SEQ_CST)) == RCL_CLAIMING; n++)
        if (n < 64)
            rcl_pause();
        else
            rcl_server_backoff(n);
    if (holder == me) {
        /* acquire: the completion store, after the claim that synchronised with the last holder */
        for (unsigned n = 0; ld_acquire(&r->function) != NULL; n++)
            if (n < 64)
                rcl_pause();
            else
                rcl_server_backoff(n);
        return 0;
    }
    /* Not granted.  A servicing thread that read the request before the withdrawal and claims
     * the lock only now re-reads WITHDRAWN or NULL (or a later request of this thread) and lets
     * the lock go. */
    st_release(&r->function, NULL);
    return ETIMEDOUT;
}

/* A hybrid lock request (as remote_lock posts) waited for until abstime; then withdrawn. */
static int hybrid_lock_until(struct rcl_lock *l, int me, clockid_t clock, const struct timespec *abstime)
{
    struct rcl_server *s = l->server;
    if (__builtin_expect(!ld_acquire(&s->started), 0))
        rcl_server_get(s->index, s->cpu);
    struct rcl_request *r = &s->requests[rcl_client_id()];
    store_if_changed(&r->lock, l);
    store_if_changed(&r->real_me, (int16_t)me);
    store_if_changed(&r->ctx_size, (uint8_t)0);
    st_release(&r->function, RCL_FN_HYBRID_LOCK);
    rcl_server_kick(s);
    /* The waits of post_and_wait (spin, yield, sleep on the mailbox), with a look at the clock
     * between them.  The timeout is bounded by the 1 ms sleeps. */
    for (unsigned n = 0;; n++) {
        if (ld_acquire(&r->function) == NULL) /* granted (acquire: the previous holder's writes) */
            return 0;
        if (n < CLIENT_SPINS) {
            rcl_pause();
            continue;
        }
        if (n == CLIENT_SPINS && rcl_tls_sthread) /* a section waiting on another server: see wait_long */
            rcl_server_ensure_free(rcl_tls_sthread->server);
        int64_t left = rcl_ns_until(clock, abstime);
        if (left <= 0)
            return withdraw(l, r, me);
        if (n < CLIENT_SPINS + CLIENT_YIELDS) {
            rcl_server_backoff(n);
            continue;
        }
        st_relaxed(&r->sleeping, 1);
        fence_seq_cst();
        rcl_cs_fn seen = ld_acquire(&r->function);
        if (seen == RCL_FN_HYBRID_LOCK) {
            struct timespec ts = { 0, (long)(left < CLIENT_SLEEP_NS ? left : CLIENT_SLEEP_NS) };
            rcl_futex_wait((int *)(void *)&r->function, (int)(uintptr_t)seen, &ts);
        }
        st_relaxed(&r->sleeping, 0);
    }
}

/*
 * rcl_mutex_clocklock: remote_lock with a deadline.  A free lock (not promised to a waiting
 * request: the grant order) is taken at once with a CAS, as trylock does (POSIX: no timeout when
 * the lock can be taken at once); otherwise a hybrid lock request is posted and withdrawn at the
 * deadline (withdraw), or, on a servicing thread of the lock's server, the local CAS loop gives up.
 * The kinds answer as glibc's pthread_mutex_clocklock: recursive relock counts, errorcheck relock
 * EDEADLK, a normal lock relocked by its holder waits out the deadline (it is taken if another
 * thread unlocks it meanwhile, which glibc allows).
 */
static int remote_clocklock(rcl_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
    struct rcl_lock *l = m->impl;
    int me = current_me();
    for (;;) {
        int holder = settled_holder(l), expected = RCL_NONE;
        /* (a lock promised to a waiting request is not free: wait in line, below) */
        if (holder == RCL_NONE && (on_server_of(l) || !rcl_lock_waiter_pending(l, l->server)) &&
            cas_acquire(&l->holder, &expected, me)) {
            stat_inc(&l->hybrid_locks, 1);
            tls_hybrid_held++;
            return 0;
        }
        if (holder == me && m->kind == PTHREAD_MUTEX_RECURSIVE) {
            l->depth++;
            return 0;
        }
        if (holder == me && m->kind == PTHREAD_MUTEX_ERRORCHECK)
            return EDEADLK;
        if (!rcl_abstime_valid(abstime))
            return EINVAL; /* it has to wait: the deadline must be a time */
        if (holder != me)
            break;
        /* A normal lock we hold: wait for the deadline, or for another thread to unlock it. */
        for (;;) {
            int64_t left = rcl_ns_until(clock, abstime);
            if (left <= 0)
                return ETIMEDOUT;
            if (ld_acquire(&l->holder) != me)
                break;
            sleep_until(clock, abstime, left, CLIENT_SLEEP_NS);
        }
    }
    int rc;
    if (on_server_of(l)) {
        rc = take_local_until(l, me, clock, abstime);
        if (rc == 0)
            stat_inc(&l->hybrid_locks, 1);
    } else {
        rc = hybrid_lock_until(l, me, clock, abstime);
    }
    if (rc == 0)
        tls_hybrid_held++;
    return rc;
}

static int remote_unlock(rcl_mutex_t *m)
{
    struct rcl_lock *l = m->impl;
    int me = current_me(), holder = ld_relaxed(&l->holder);
    if (holder != me) {
        /* Errorcheck and recursive locks check the owner (POSIX); a normal lock may be
         * released by another thread, as glibc allows, but not when it is free. */
        if (holder == RCL_NONE || holder == RCL_CLAIMING || m->kind == PTHREAD_MUTEX_ERRORCHECK ||
            m->kind == PTHREAD_MUTEX_RECURSIVE)
            return EPERM;
    } else if (l->depth > 0) {
        l->depth--;
        return 0;
    } else {
        tls_hybrid_held--;
    }
    st_release(&l->holder, RCL_NONE); /* the section's writes before the next holder's */
    return 0;
}

static int remote_execute(rcl_mutex_t *m, rcl_cs_fn fn, void *ctx, size_t ctx_size)
{
    struct rcl_lock *l = m->impl;
    int me = current_me(), ret;
    if (may_hold() && ld_relaxed(&l->holder) == me) {
        if (m->kind != PTHREAD_MUTEX_RECURSIVE)
            rcl_fatal("lock %s (rcl): already held by this thread inside rcl_execute (%s); "
                      "an extracted critical section cannot run without its lock",
                      rcl_lock_name(m), strerror(EDEADLK));
        l->depth++;
        ret = fn(ctx);
        l->depth--;
        stat_inc(&l->sections_local, 1);
        return ret;
    }
    if (on_server_of(l)) { /* nested section on the same server */
        take_local(l, me);
        ret = fn(ctx);
        stat_inc(&l->sections_local, 1);
        st_release(&l->holder, RCL_NONE);
        return ret;
    }
    return post_and_wait(l, fn, ctx, ctx_size, me, 1);
}

/* Algorithm 3. */
static int remote_execute_trylock(rcl_mutex_t *m, rcl_cs_fn fn, void *ctx)
{
    struct rcl_lock *l = m->impl;
    int holder = settled_holder(l);
    if (holder != RCL_NONE) {
        if (holder == current_me() && m->kind == PTHREAD_MUTEX_RECURSIVE) {
            *(int *)ctx = 1;
            l->depth++;
            int ret = fn(ctx);
            l->depth--;
            return ret;
        }
        *(int *)ctx = 0; /* busy: fn runs here, told it does not hold the lock */
        return fn(ctx);
    }
    *(int *)ctx = 1; /* seems free: take it (may wait) */
    return remote_execute(m, fn, ctx, 0);
}

static int remote_release_for_wait(rcl_mutex_t *m)
{
    struct rcl_lock *l = m->impl;
    if (ld_relaxed(&l->holder) != current_me())
        return EPERM;
    tls_saved_depth = l->depth;
    l->depth = 0;
    /* A remote section waiting with its own lock released: keep other servicing threads from
     * claiming its still-posted request and running it again. */
    struct rcl_request *r = rcl_tls_request;
    if (r && ld_relaxed(&r->lock) == l)
        st_relaxed(&r->function, RCL_FN_IN_PROGRESS);
    else
        tls_hybrid_held--;
    st_release(&l->holder, RCL_NONE); /* and the mark before the release */
    return 0;
}

static int remote_reacquire_after_wait(rcl_mutex_t *m)
{
    struct rcl_lock *l = m->impl;
    int depth = tls_saved_depth, me = current_me();
    if (on_server_of(l))
        take_local(l, me);
    else
        post_and_wait(l, RCL_FN_HYBRID_LOCK, NULL, 0, me, 0);
    struct rcl_request *r = rcl_tls_request;
    if (!(r && ld_relaxed(&r->lock) == l))
        tls_hybrid_held++;
    l->depth = depth;
    return 0;
}

static void print_row(int fd, const char *id, int server, unsigned long remote, unsigned long local,
                      unsigned long hybrid)
{
    rcl_dprintf(fd, "%-40s %6d %12lu %12lu %12lu\n", id ? id : "(anonymous)", server, remote, local, hybrid);
}

/* A live lock's row, with the counts of the destroyed locks of its id and server not shown yet
 * (shown: one flag per retired record, or NULL). */
static void print_lock(const struct rcl_lock *l, int fd, char *shown)
{
    unsigned long remote = ld_relaxed(&l->sections_remote), local = ld_relaxed(&l->sections_local),
                  hybrid = ld_relaxed(&l->hybrid_locks);
    for (size_t i = 0; shown && i < n_retired; i++)
        if (!shown[i] && retired[i].server == l->server->index && same_id(retired[i].id, l->id)) {
            remote += retired[i].remote;
            local += retired[i].local;
            hybrid += retired[i].hybrid;
            shown[i] = 1;
        }
    print_row(fd, l->id, l->server->index, remote, local, hybrid);
}

static void remote_print_stats(rcl_mutex_t *m, int fd)
{
    print_lock(m->impl, fd, NULL);
}

void rcl_locks_print_stats(int fd)
{
    /* At exit another thread may hold locks_lock forever: do not wait for it. */
    int locked = 0;
    for (int i = 0; i < 1000 && !locked; i++) {
        locked = pthread_mutex_trylock(&locks_lock) == 0;
        if (!locked)
            sched_yield();
    }
    if (!locked) {
        rcl_dprintf(fd, "(lock table busy, per-lock statistics skipped)\n");
        return;
    }
    if (n_locks || n_retired)
        rcl_dprintf(fd, "%-40s %6s %12s %12s %12s\n", "rcl lock", "server", "remote", "local", "hybrid");
    char *shown = n_retired ? calloc(n_retired, 1) : NULL;
    for (size_t i = 0; i < n_locks; i++)
        print_lock(all_locks[i], fd, shown);
    for (size_t i = 0; i < n_retired; i++) /* destroyed, no live lock of theirs */
        if (!shown || !shown[i])
            print_row(fd, retired[i].id, retired[i].server, retired[i].remote, retired[i].local, retired[i].hybrid);
    free(shown);
    pthread_mutex_unlock(&locks_lock);
}

/*
 * fork(): the child has no servicing thread (rcl_server.c starts its servers again on demand).
 * A lock whose holder is RCL_CLAIMING there was being claimed or released by one at the fork,
 * for no thread of the child: a request it re-validates, or a section it has completed, whose
 * client may be the forking thread itself (rcl_execute returns before the servicing thread
 * stores NONE).  Such a lock is free: the child sets it so, or the first use would wait forever.
 * Locks held for a client (a hybrid holder, a section running for another thread) keep their
 * holder: not usable in the child, as a pthread mutex held by another thread is not.
 * locks_lock is taken around the fork, so the walk finds it free, and so does the child.
 */
static void before_fork(void)
{
    pthread_mutex_lock(&locks_lock);
}

static void after_fork_parent(void)
{
    pthread_mutex_unlock(&locks_lock);
}

static void after_fork_child(void)
{
    for (size_t i = 0; i < n_locks; i++)
        if (ld_relaxed(&all_locks[i]->holder) == RCL_CLAIMING)
            st_relaxed(&all_locks[i]->holder, RCL_NONE);
    pthread_mutex_unlock(&locks_lock);
}

__attribute__((constructor(104))) static void rcl_locks_init(void)
{
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

static void print_process_stats(int fd)
{
    rcl_servers_print_stats(fd);
    rcl_locks_print_stats(fd);
}

const struct rcl_lock_ops rcl_ops_rcl = {
    .init = remote_init,
    .destroy = remote_destroy,
    .lock = remote_lock,
    .trylock = remote_trylock,
    .unlock = remote_unlock,
    .clocklock = remote_clocklock,
    .execute = remote_execute,
    .execute_trylock = remote_execute_trylock,
    .release_for_wait = remote_release_for_wait,
    .reacquire_after_wait = remote_reacquire_after_wait,
    .print_stats = remote_print_stats,
    .prepare_block = rcl_server_prepare_block,
    .print_process_stats = print_process_stats,
};
