/*
 * RCL servers: the pool of servicing threads (Algorithm 4) and the management and backup threads
 * (Algorithm 5) of each server, started lazily when the first lock of a server is resolved.
 *
 * Degraded mode (the default, see docs/runtime.md): servicing threads run under the normal
 * scheduler and may preempt each other; the management thread still adds a servicing thread when
 * no thread made progress during a timeout and none is free, which keeps a server live when a
 * section blocks or busy-waits on something only another section of the same server can do
 * (Figure 2).  With RCLIFY_FIFO=1, and when the system permits it, servicing threads run under
 * SCHED_FIFO with a backup thread below them and a management thread above, as in the paper.
 *
 * Idle servers park: after rcl_settings.idle_us without requests a servicing thread sleeps on the
 * server's `parked` futex word; a client that publishes a request wakes it (rcl_server_kick).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcl/rcl_internal.h"

__thread struct rcl_sthread *rcl_tls_sthread;
__thread int rcl_tls_real_me;
__thread struct rcl_request *rcl_tls_request;

int rcl_running_for_client(void)
{
    return rcl_tls_request != NULL;
}

static struct rcl_server servers[RCL_MAX_SERVERS];
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

/* Liveness (see "the process ends with its last thread" below). */
static int runtime_threads; /* threads this file created; they never exit */
static int main_gone;       /* the main thread called pthread_exit (release) */
static int liveness_exiting;
static void liveness_check(void);
static void liveness_mark_main(void);

/* FIFO priorities: backup < servicing (elections move threads down by one) < management. */
#define PRIO_BACKUP 1
#define PRIO_SERVICING 3
#define PRIO_MANAGER 5

/* An empty pass every this many: look at the clock (yielding, parking). */
#define IDLE_CHECK_PASSES 32
/* Idle this long (no section run): yield the processor at each clock check.  Not sooner: a
 * sched_yield is a system call of about a microsecond, and a request that arrives meanwhile
 * waits for it.  Yielding after a few empty passes, as before, put one in every few round trips
 * of a single client (a round trip lasts several empty passes). */
#define IDLE_YIELD_NS 20000
/* A pass every this many: note the CPU this thread runs on (clients there yield instead of spinning). */
#define CPU_CHECK_PASSES 256

int rcl_fn_hybrid_lock(void *ctx)
{
    return 0;
}

int rcl_fn_in_progress(void *ctx)
{
    return 0;
}

int rcl_fn_withdrawn(void *ctx)
{
    return 0;
}

/* A posted request that a servicing thread may claim (not one in progress or withdrawn). */
static inline int claimable(rcl_cs_fn fn)
{
    return fn && fn != RCL_FN_IN_PROGRESS && fn != RCL_FN_WITHDRAWN;
}

/* ---- the servicing loop (Algorithm 4, fast path) ---- */

/* Takes the lock of a pending request (mailbox i) and claims it; returns its function, or NULL. */
static rcl_cs_fn claim(struct rcl_server *s, int i, struct rcl_request *r, struct rcl_lock **lockp)
{
    rcl_cs_fn fn = ld_acquire(&r->function);
    if (!claimable(fn))
        return NULL;
    struct rcl_lock *l = ld_relaxed(&r->lock);
    /* The grant order: a request that found the lock held earlier goes first (rcl_internal.h).
     * Without it a thread that takes the lock in hybrid mode again as soon as it releases it is
     * granted it pass after pass whenever its mailbox comes first in the scan (issue 34). */
    int waiter = ld_relaxed(&l->waiter);
    if (waiter && waiter != i && rcl_lock_waiter_pending(l, s))
        return NULL;
    int expected = RCL_NONE;
    /* seq_cst, with the re-read below: a timed hybrid lock withdraws its request with a seq_cst
     * CAS on `function`, then reads the holder (rcl.c, withdraw): either that re-read sees the
     * withdrawal, or the client sees this claim.  (On x86 both cost what acquire costs.) */
    if (!__atomic_compare_exchange_n(&l->holder, &expected, RCL_CLAIMING, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
        /* held (nested or hybrid section): try again on a later pass, first in line if nobody is */
        if (!ld_relaxed(&l->waiter)) {
            int none = 0;
            __atomic_compare_exchange_n(&l->waiter, &none, i, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
        }
        return NULL;
    }
    /* Re-validate: another servicing thread may have run this request and the client posted a
     * new one (degraded mode), or claimed it and released the lock to wait on a condvar, or the
     * client withdrew it (a timed lock that timed out).  Until then the holder is RCL_CLAIMING,
     * not the client's id: a stale claim on a lock the client has just released must not look
     * to that client as if it held the lock itself. */
    fn = __atomic_load_n(&r->function, __ATOMIC_SEQ_CST);
    if (!claimable(fn) || ld_relaxed(&r->lock) != l) {
        st_release(&l->holder, RCL_NONE);
        return NULL;
    }
    int first = i; /* served: the next request to find the lock held is first in line */
    if (ld_relaxed(&l->waiter) == i)
        __atomic_compare_exchange_n(&l->waiter, &first, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    st_relaxed(&l->holder, ld_relaxed(&r->real_me));
    *lockp = l;
    return fn;
}

/* Remembers the distinct locks of a pass (at most 16), for the false-serialization statistic. */
static void note_lock(struct rcl_lock **locks, int *nlocks, struct rcl_lock *l)
{
    for (int k = 0; k < *nlocks; k++)
        if (locks[k] == l)
            return;
    if (*nlocks < 16)
        locks[(*nlocks)++] = l;
}

/*
 * One pass over the mailboxes.  From the moment a request is seen to its completion store the
 * client is waiting: only what the section needs happens in between, and the bookkeeping
 * (statistics, resetting the thread's section state) comes after the completion, while the
 * reply travels to the client.
 */
static int service_pass(struct rcl_server *s, struct rcl_sthread *self, int *errp)
{
    int max = rcl_clients_max(), done = 0, hybrid = 0, nlocks = 0;
    struct rcl_lock *locks[16];
    for (int i = 1; i <= max; i++) {
        struct rcl_request *r = &s->requests[i];
        if (!ld_relaxed(&r->function))
            continue;
        struct rcl_lock *l;
        rcl_cs_fn fn = claim(s, i, r, &l);
        if (!fn)
            continue;
        if (fn == RCL_FN_HYBRID_LOCK) { /* hybrid lock: the client keeps the lock */
            stat_inc(&l->hybrid_locks, 1);
            store_if_changed(&r->ret, 0);
            rcl_request_complete(r); /* the client now holds l */
            hybrid++;
            note_lock(locks, &nlocks, l);
            continue;
        }
        /* No store to the mailbox before the section ends: the client spins on this line, and
         * each store would cost a cache-line transfer on the round trip.  The holder keeps other
         * servicing threads off the request; a section that releases it to wait on a condvar
         * marks the request RCL_FN_IN_PROGRESS first (remote_release_for_wait). */
        rcl_tls_real_me = ld_relaxed(&r->real_me);
        rcl_tls_request = r;
        st_relaxed(&self->in_section, 1);
        *errp = ld_relaxed(&r->err); /* the section sees its client's errno ... */
        int ret = fn(r->ctx_size ? (void *)r->ctx.bytes : r->ctx.ptr);
        store_if_changed(&r->ret, ret); /* (one store less on the line the client spins on) */
        store_if_changed(&r->err, *errp); /* ... and its client the errno it leaves */
        /* Complete, then release.  Released first, another servicing thread could claim the
         * still-posted request and run it twice; the holder is RCL_CLAIMING in between, never
         * the client's id, so that the client does not see itself as the holder. */
        st_relaxed(&l->holder, RCL_CLAIMING);
        rcl_request_complete(r); /* ret and inline context published */
        stat_inc(&l->sections_remote, 1); /* still the holder: the counter's only writer */
        st_release(&l->holder, RCL_NONE);
        st_relaxed(&self->in_section, 0);
        rcl_tls_request = NULL;
        rcl_tls_real_me = RCL_NONE;
        done++;
        note_lock(locks, &nlocks, l);
    }
    struct rcl_server_stats *st = &self->stats;
    stat_inc(&st->passes, 1);
    done += hybrid;
    if (done) {
        stat_inc(&st->hybrid, (unsigned long)hybrid);
        stat_inc(&st->sections, (unsigned long)(done - hybrid));
        stat_inc(&st->active_passes, 1);
        stat_inc(&st->active_clients, (unsigned long)rcl_clients_live());
        stat_inc(&st->active_locks, (unsigned long)nlocks);
    }
    return done;
}

/* Is any request waiting for a servicing thread (not one already in progress, nor withdrawn)? */
static int has_request(struct rcl_server *s)
{
    int max = rcl_clients_max();
    for (int i = 1; i <= max; i++) {
        if (claimable(ld_relaxed(&s->requests[i].function)))
            return 1;
    }
    return 0;
}

/* Idle parking, Dekker style with rcl_server_kick: parked=1; fence; look at the mailboxes.
 * Returns 1 when it slept, 0 when requests are pending (their locks are held). */
static int park(struct rcl_server *s, struct rcl_sthread *self)
{
    st_relaxed(&s->parked, 1);
    fence_seq_cst();
    if (has_request(s)) {
        /* Requests wait for locks held by hybrid sections: under FIFO, spinning would keep
         * their holders off this CPU (priority inversion), so sleep a little instead. */
        st_relaxed(&s->parked, 0);
        if (s->fifo)
            rcl_server_backoff(1000);
        return 0;
    }
    stat_inc(&self->stats.parks, 1);
    rcl_futex_wait(&s->parked, 1, NULL);
    return 1;
}

void rcl_server_backoff(unsigned n)
{
    struct rcl_sthread *self = rcl_tls_sthread;
    if (self && self->server->fifo && n >= 16) {
        /* sched_yield under SCHED_FIFO only lets threads of the same priority run: a normal
         * thread we wait for (a hybrid holder, a client) would only get the RT-throttling
         * share of this CPU.  Sleep instead. */
        struct timespec ts = { 0, 50000 };
        int saved_errno = errno; /* a section may be waiting here (take_local): EINTR is not its */
        nanosleep(&ts, NULL);
        errno = saved_errno;
        return;
    }
    sched_yield(); /* never fails: errno untouched */
}

/* ---- the pool (Algorithm 4 slow path, Algorithm 5 thread activation) ---- */

static void *servicing_main(void *arg);

static void set_prio(pthread_t t, int prio)
{
    pthread_setschedprio(t, prio);
}

static int create_thread(pthread_t *tid, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

/* Creates a detached thread of the server, pinned to its CPU, under FIFO when the server uses it. */
static int spawn(struct rcl_server *s, void *(*fn)(void *), void *arg, int prio, pthread_t *tid)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (s->cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(s->cpu, &set);
        pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    }
    if (s->fifo) {
        struct sched_param sp = { .sched_priority = prio };
        pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
        pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
        pthread_attr_setschedparam(&attr, &sp);
    }
    int rc = create_thread(tid, &attr, fn, arg);
    if (rc == EPERM && s->fifo) { /* not permitted: degraded mode from now on */
        s->fifo = 0;
        pthread_attr_setinheritsched(&attr, PTHREAD_INHERIT_SCHED);
        rc = create_thread(tid, &attr, fn, arg);
    }
    if (rc == EINVAL && s->cpu >= 0) { /* CPU not available here: run unpinned */
        fprintf(stderr, "rclify: server %d: cannot pin to cpu %d, running unpinned\n", s->index, s->cpu);
        s->cpu = -1;
        pthread_attr_destroy(&attr);
        return spawn(s, fn, arg, prio, tid);
    }
    pthread_attr_destroy(&attr);
    return rc;
}

/* A server's threads take no signal: created with every signal blocked, they inherit that mask
 * rather than the creating thread's.  A program that blocks a signal in all its own threads
 * (mksquashfs blocks SIGINT and waits for it with sigwait) would otherwise have it delivered to a
 * server thread, whose handler -- mksquashfs's calls pthread_exit -- would end the server. */
static int create_thread(pthread_t *tid, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    sigset_t all, before;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &before);
    int rc = pthread_create(tid, attr, fn, arg);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    if (rc == 0) /* counted once it exists: until then it counts as a program thread (liveness) */
        add_relaxed(&runtime_threads, 1);
    return rc;
}

/*
 * Free servicing threads: servicing (not parked in the prepared stack) and not running a section,
 * `except` left out.  Read without the pool lock it is a hint (a free thread may be entering a
 * section); the decisions that must not race (leaving the pool) re-count under the lock.  Keeping
 * no shared counter spares the servicing loop two atomic read-modify-writes per pass.
 */
static int pool_free_threads(struct rcl_server *s, const struct rcl_sthread *except)
{
    int n = 0;
    for (struct rcl_sthread *t = ld_acquire(&s->all_threads); t; t = t->next_all)
        n += t != except && ld_relaxed(&t->is_servicing) && !ld_relaxed(&t->in_section);
    return n;
}

/* Adds one free servicing thread: wakes a prepared one or creates one.  Caller holds pool_lock. */
static void add_free_thread(struct rcl_server *s)
{
    add_relaxed(&s->nb_servicing, 1);
    struct rcl_sthread *t = s->prepared;
    if (t) {
        s->prepared = t->next_prepared;
        add_relaxed(&s->stats.threads_woken, 1);
        st_release(&t->is_servicing, 1);
        rcl_futex_wake(&t->is_servicing, 1);
        return;
    }
    t = aligned_alloc(RCL_CACHE_LINE, sizeof *t); /* RCL_ALIGNED: calloc would not align it */
    if (!t)
        rcl_fatal("server %d: out of memory for a servicing thread", s->index);
    memset(t, 0, sizeof *t);
    t->server = s;
    t->is_servicing = 1;
    t->timestamp = ld_relaxed(&s->timestamp);
    int rc = spawn(s, servicing_main, t, PRIO_SERVICING, &t->tid);
    if (rc != 0)
        rcl_fatal("server %d: cannot create a servicing thread: %s", s->index, strerror(rc));
    t->next_all = s->all_threads;
    st_release(&s->all_threads, t); /* lock-free readers: pool_free_threads, statistics */
    add_relaxed(&s->stats.threads_created, 1);
}

void rcl_server_ensure_free(struct rcl_server *s)
{
    if (pool_free_threads(s, rcl_tls_sthread) > 0)
        return;
    pthread_mutex_lock(&s->pool_lock);
    if (pool_free_threads(s, rcl_tls_sthread) == 0)
        add_free_thread(s);
    pthread_mutex_unlock(&s->pool_lock);
}

void rcl_server_prepare_block(void)
{
    struct rcl_sthread *self = rcl_tls_sthread;
    if (self) { /* inside a section (a condvar wait): thread creation must not change its errno */
        int saved_errno = errno;
        rcl_server_ensure_free(self->server);
        errno = saved_errno;
    }
}

/* Leaves the pool when another thread is free (keep only one free thread); returns 1 when it
 * left and has been activated again. */
static int leave_pool_if_spare(struct rcl_server *s, struct rcl_sthread *self)
{
    if (pool_free_threads(s, self) == 0)
        return 0;
    pthread_mutex_lock(&s->pool_lock);
    if (pool_free_threads(s, self) == 0) { /* counted again under the lock: one always remains */
        pthread_mutex_unlock(&s->pool_lock);
        return 0;
    }
    add_relaxed(&s->nb_servicing, -1);
    st_relaxed(&self->is_servicing, 0);
    self->next_prepared = s->prepared;
    s->prepared = self;
    pthread_mutex_unlock(&s->pool_lock);
    while (!ld_acquire(&self->is_servicing)) /* futex: no lost activation */
        rcl_futex_wait(&self->is_servicing, 0, NULL);
    return 1;
}

static void *servicing_main(void *arg)
{
    struct rcl_sthread *self = arg;
    struct rcl_server *s = self->server;
    unsigned empty = 0, passes = 0;
    uint64_t idle_since = 0;
    int *errp = &errno; /* once: errno is a call to __errno_location */
    rcl_tls_sthread = self;
    for (;;) {
        if (passes++ % CPU_CHECK_PASSES == 0) {
            int cpu = sched_getcpu();
            if (cpu != ld_relaxed(&s->cpu_now))
                st_relaxed(&s->cpu_now, cpu);
        }
        st_relaxed(&s->is_alive, 1);
        st_relaxed(&self->timestamp, ld_relaxed(&s->timestamp));
        int done = service_pass(s, self, errp);
        if (done) {
            empty = 0;
            idle_since = 0;
        } else if (rcl_pause(), ++empty % IDLE_CHECK_PASSES == 0) {
            /* (the pause: polling the mailboxes flat out delays the clients' stores to them) */
            uint64_t now = rcl_now_ns();
            if (!idle_since)
                idle_since = now;
            else if (now - idle_since >= (uint64_t)rcl_settings.idle_us * 1000) {
                if (park(s, self)) {
                    idle_since = 0;
                    continue;
                }
                sched_yield(); /* requests wait for locks held elsewhere: let their holders run */
            } else if (now - idle_since >= IDLE_YIELD_NS) {
                sched_yield(); /* idle: let other threads of this CPU run */
            }
        }
        if (ld_relaxed(&s->nb_servicing) > 1) { /* slow path: some servicing threads are busy */
            stat_inc(&self->stats.slow_passes, 1);
            if (!leave_pool_if_spare(s, self))
                sched_yield(); /* let the busy ones progress */
        }
    }
    return NULL;
}

/* ---- management and backup threads (Algorithm 5) ---- */

/* FIFO only: lets a servicing thread that has not run recently be scheduled. */
static void elect(struct rcl_server *s)
{
    struct rcl_sthread *elected = NULL;
    unsigned now = ld_relaxed(&s->timestamp);
    for (struct rcl_sthread *t = s->all_threads; t && !elected; t = t->next_all)
        if (ld_relaxed(&t->is_servicing) && ld_relaxed(&t->timestamp) < now) {
            st_relaxed(&t->timestamp, now);
            elected = t;
        }
    if (!elected) {
        st_relaxed(&s->timestamp, now + 1); /* all elected once: new cycle */
        return;
    }
    /* Move every other servicing thread to the end of the FIFO queue of its priority. */
    for (struct rcl_sthread *t = s->all_threads; t; t = t->next_all)
        if (t != elected && ld_relaxed(&t->is_servicing)) {
            set_prio(t->tid, PRIO_SERVICING - 1);
            set_prio(t->tid, PRIO_SERVICING);
        }
}

static void *management_main(void *arg)
{
    struct rcl_server *s = arg;
    struct timespec timeout = { (time_t)(rcl_settings.mgr_us / 1000000),
                                (long)(rcl_settings.mgr_us % 1000000) * 1000 };
    /* Idle sleeps are bounded (1 s) so that a missed liveness kick costs a second at worst; once
     * main has called pthread_exit the manager looks at the process every 10 ms. */
    struct timespec idle = { 1, 0 }, poll = { 0, 10000000 };
    st_relaxed(&s->is_alive, 0);
    st_relaxed(&s->timestamp, 1);
    for (;;) {
        int watch = ld_acquire(&main_gone);
        /* Whole server idle (parked, nobody in a section): sleep until a client kicks it. */
        if (ld_relaxed(&s->parked) && pool_free_threads(s, NULL) == ld_relaxed(&s->nb_servicing))
            rcl_futex_wait(&s->parked, 1, watch ? &poll : &idle);
        rcl_futex_wait(&s->mgr_word, 0, &timeout);
        st_relaxed(&s->mgr_word, 0);
        add_relaxed(&s->stats.mgr_wakeups, 1);
        if (watch)
            liveness_check();
        if (!ld_relaxed(&s->is_alive) && !ld_relaxed(&s->parked)) {
            /* No servicing thread started a pass during a whole timeout: they are all blocked
             * or busy-waiting.  Make sure one is free, then let one that has not run go. */
            add_relaxed(&s->stats.no_progress, 1);
            st_relaxed(&s->is_alive, 1);
            pthread_mutex_lock(&s->pool_lock);
            if (pool_free_threads(s, NULL) == 0)
                add_free_thread(s);
            if (s->fifo)
                elect(s);
            pthread_mutex_unlock(&s->pool_lock);
        } else {
            st_relaxed(&s->is_alive, 0);
        }
    }
    return NULL;
}

/* Runs (under FIFO, at the lowest priority) only when every servicing thread is blocked. */
static void *backup_main(void *arg)
{
    struct rcl_server *s = arg;
    struct timespec pause = { (time_t)(rcl_settings.mgr_us / 1000000),
                              (long)(rcl_settings.mgr_us % 1000000) * 1000 };
    for (;;) {
        if (ld_relaxed(&s->parked)) { /* blocked because idle, not because stuck */
            rcl_futex_wait(&s->parked, 1, NULL);
            continue;
        }
        st_relaxed(&s->is_alive, 0);
        st_relaxed(&s->mgr_word, 1);
        rcl_futex_wake(&s->mgr_word, 1);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static void start(struct rcl_server *s, int index, int cpu)
{
    s->index = index;
    s->cpu = cpu;
    s->fifo = rcl_settings.fifo;
    s->cpu_now = -1;
    s->requests = aligned_alloc(RCL_CACHE_LINE, RCL_MAX_CLIENTS * sizeof(struct rcl_request));
    if (!s->requests)
        rcl_fatal("server %d: out of memory for the request array", index);
    memset(s->requests, 0, RCL_MAX_CLIENTS * sizeof(struct rcl_request));
    pthread_mutex_init(&s->pool_lock, NULL);
    pthread_t tid;
    pthread_mutex_lock(&s->pool_lock);
    add_free_thread(s);
    pthread_mutex_unlock(&s->pool_lock);
    int rc = spawn(s, management_main, s, PRIO_MANAGER, &tid);
    if (rc == 0 && s->fifo)
        rc = spawn(s, backup_main, s, PRIO_BACKUP, &tid);
    if (rc != 0)
        rcl_fatal("server %d: cannot create its management threads: %s", index, strerror(rc));
}

struct rcl_server *rcl_server_get(int index, int cpu)
{
    struct rcl_server *s = &servers[index];
    if (ld_acquire(&s->started))
        return s;
    pthread_mutex_lock(&start_lock);
    if (!ld_relaxed(&s->started)) {
        start(s, index, cpu);
        st_release(&s->started, 1); /* request array and pool published */
    } /* else: the first lock resolved for a server decided its CPU */
    pthread_mutex_unlock(&start_lock);
    return s;
}

/*
 * fork(): the child has none of the server threads.  Forget every started server (its request
 * array and threads are leaked: they belong to the parent's image) so that the next request
 * starts it again with an empty request array.  Locks keep pointing to the same server slot.
 */
static void after_fork_child(void)
{
    for (int i = 0; i < RCL_MAX_SERVERS; i++) {
        struct rcl_server *s = &servers[i];
        if (!s->started)
            continue;
        int cpu = s->cpu;
        memset(s, 0, sizeof *s);
        s->index = i;
        s->cpu = cpu;
    }
    pthread_mutex_init(&start_lock, NULL);
    /* The forking thread is the child's main thread, and the only one: no runtime thread. */
    st_relaxed(&runtime_threads, 0);
    st_relaxed(&main_gone, 0);
    st_relaxed(&liveness_exiting, 0);
    liveness_mark_main();
}

/*
 * ---- liveness: the process ends with its last thread ----
 *
 * glibc ends a process when its last thread exits, main included (`pthread_exit` in main, which
 * test programs do): the last thread calls exit(0), atexit handlers run.  Server threads are
 * threads too, and never exit: without this, such a process would live forever once RCL started.
 * So main carries a thread-specific value whose destructor (run by pthread_exit, never by
 * exit) notes that main is gone and kicks every server; from then on each manager looks, every
 * 10 ms, at /proc/self/status: once the main thread is a zombie and the threads left are all
 * ours, it calls exit(0) as glibc's last thread would.  "Threads:" is read in one go (atomic);
 * our count is read first and rises only once a thread exists, so a thread being created
 * counts as the program's (the error, if any, is to wait 10 ms more, never to exit early).
 * ThreadSanitizer's own background thread (a pthread, started by its first pthread_create) keeps
 * even a plain program alive after main's pthread_exit; the runtime's TSan build discounts it.
 */
#ifdef RCLIFY_TSAN
#define SANITIZER_THREADS 1
#else
#define SANITIZER_THREADS 0
#endif

static pthread_key_t main_key;
static int main_key_ok;

static void main_exiting(void *value)
{
    (void)value;
    if (syscall(SYS_gettid) != getpid())
        return;
    st_release(&main_gone, 1);
    for (int i = 0; i < RCL_MAX_SERVERS; i++)
        if (ld_acquire(&servers[i].started))
            rcl_server_kick(&servers[i]);
}

static void liveness_mark_main(void)
{
    if (main_key_ok && syscall(SYS_gettid) == getpid())
        pthread_setspecific(main_key, &main_key);
}

/* 1 when the main thread is a zombie and every other thread is one of ours. */
static int only_runtime_threads_left(void)
{
    int ours = ld_acquire(&runtime_threads);
    char buf[8192];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0; /* no /proc: cannot tell; live on, as before */
    size_t used = 0;
    ssize_t n;
    while (used < sizeof buf - 1 && (n = read(fd, buf + used, sizeof buf - 1 - used)) > 0)
        used += (size_t)n;
    close(fd);
    buf[used] = '\0';
    const char *state = strstr(buf, "\nState:"), *threads = strstr(buf, "\nThreads:");
    if (!state || !threads)
        return 0;
    state += strlen("\nState:");
    while (*state == ' ' || *state == '\t')
        state++;
    long count = strtol(threads + strlen("\nThreads:"), NULL, 10);
    return *state == 'Z' && count - 1 - ours - SANITIZER_THREADS <= 0;
}

static void liveness_check(void)
{
    if (only_runtime_threads_left() && xchg_acq_rel(&liveness_exiting, 1) == 0)
        exit(0); /* what glibc's last thread does */
}

__attribute__((constructor(103))) static void rcl_server_init(void)
{
    pthread_atfork(NULL, NULL, after_fork_child);
    main_key_ok = pthread_key_create(&main_key, main_exiting) == 0;
    liveness_mark_main();
}

/*
 * The servers' table of rcl_stats_print.  Definitions (paper, section 3.2.3), per server:
 *   use rate          sections executed in active passes (passes that ran at least one section)
 *                     divided by the number of client threads, summed over those passes;
 *   false-ser rate    distinct locks served in an active pass divided by the number of client
 *                     threads, likewise;
 *   slow-path rate    fraction of passes that took the slow path (more than one servicing thread);
 *   mgr-wake / no-prog  management thread wake-ups / wake-ups that found no progress.
 * It never waits on a server: it only reads counters.
 */
void rcl_servers_print_stats(int fd)
{
    int header = 0;
    for (int i = 0; i < RCL_MAX_SERVERS; i++) {
        struct rcl_server *s = &servers[i];
        if (!ld_acquire(&s->started))
            continue;
        if (!header++)
            rcl_dprintf(fd, "%-6s %4s %4s %7s %12s %10s %8s %9s %9s %8s %8s %8s %6s\n", "server", "cpu",
                        "mode", "threads", "sections", "hybrid", "use", "false-ser", "slow-path", "mgr-wake", "no-prog",
                        "created", "parks");
        struct rcl_server_stats st = { 0 };
        unsigned long *dst = (unsigned long *)&st;
        const unsigned long *src = (const unsigned long *)&s->stats;
        for (size_t k = 0; k < sizeof st / sizeof *dst; k++)
            dst[k] = ld_relaxed(&src[k]);
        for (struct rcl_sthread *t = ld_acquire(&s->all_threads); t; t = t->next_all) {
            src = (const unsigned long *)&t->stats;
            for (size_t k = 0; k < sizeof st / sizeof *dst; k++)
                dst[k] += ld_relaxed(&src[k]);
        }
        double clients = st.active_clients ? (double)st.active_clients : 1.0;
        double passes = st.passes ? (double)st.passes : 1.0;
        rcl_dprintf(fd, "%-6d %4d %4s %7d %12lu %10lu %8.3f %9.3f %9.3f %8lu %8lu %8lu %6lu\n", i,
                    s->cpu, s->fifo ? "fifo" : "degr", ld_relaxed(&s->nb_servicing), st.sections, st.hybrid,
                    (double)(st.sections + st.hybrid) / clients, (double)st.active_locks / clients,
                    (double)st.slow_passes / passes, st.mgr_wakeups, st.no_progress, st.threads_created,
                    st.parks);
    }
    if (!header)
        rcl_dprintf(fd, "no RCL server was started\n");
}
