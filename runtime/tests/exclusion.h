/*
 * A short mutual-exclusion loop over one lock, for the tests that run it under many settings
 * (bad_config.c: every honoured waiting policy; fork_child.c: in a forked child;
 * oversubscription.c: 4x the CPUs in threads).
 *
 * Each of `threads` threads (started together) runs `iters` sections, taking the lock in turn by rcl_mutex_lock,
 * rcl_execute, rcl_mutex_trylock (retried) and rcl_execute_trylock (retried).  A section checks
 * that no other is inside (an `inside` count) and increments a plain, non-atomic counter through
 * a read, a pause and a write: a lost update or an overlap fails the check in t_excl_run (and is a
 * data race for ThreadSanitizer).  t_excl_run_until also stops each thread at a deadline (after
 * its first section at least): for settings where speed is not the point, oversubscribed spinning.
 */
#ifndef RCLIFY_TEST_EXCLUSION_H
#define RCLIFY_TEST_EXCLUSION_H

#include "test_util.h"

struct t_excl {
    rcl_mutex_t *m;
    int iters;
    int threads;
    int ready;      /* threads at the start line: they all start together, so they contend */
    uint64_t deadline_ns; /* t_now_ns() after which a thread stops; 0: none */
    long done;      /* sections the threads counted themselves (atomic) */
    int stopped;    /* threads stopped by the deadline (atomic) */
    long counter;   /* plain: only ever touched holding m */
    int inside;     /* sections inside m right now (plain too) */
    long overlaps;  /* sections that found another inside */
};

static inline void t_excl_section(struct t_excl *x)
{
    volatile int *inside = &x->inside;
    if ((*inside)++ != 0)
        x->overlaps++;
    long c = *(volatile long *)&x->counter;
    t_cpu_relax(); /* widen the window a second holder would need to lose an update */
    *(volatile long *)&x->counter = c + 1;
    (*inside)--;
}

static int t_excl_cs(void *p)
{
    t_excl_section(p);
    return 0;
}

struct t_excl_try { /* rcl_execute_trylock's context: the first int says whether it holds m */
    int acquired;
    struct t_excl *x;
};

static int t_excl_try_cs(void *p)
{
    struct t_excl_try *t = p;
    if (t->acquired)
        t_excl_section(t->x);
    return t->acquired;
}

static void t_excl_worker(int index, void *arg)
{
    struct t_excl *x = arg;
    __atomic_add_fetch(&x->ready, 1, __ATOMIC_ACQ_REL);
    t_wait_flag(&x->ready, x->threads);
    int i;
    for (i = 0; i < x->iters; i++) {
        if (i > 0 && x->deadline_ns && t_now_ns() > x->deadline_ns) {
            __atomic_add_fetch(&x->stopped, 1, __ATOMIC_RELAXED);
            break;
        }
        switch ((i + index) % 4) {
        case 0: {
            int rc = rcl_mutex_lock(x->m);
            CHECK(rc == 0, "rcl_mutex_lock: %d", rc);
            t_excl_section(x);
            rc = rcl_mutex_unlock(x->m);
            CHECK(rc == 0, "rcl_mutex_unlock: %d", rc);
            break;
        }
        case 1:
            rcl_execute(x->m, t_excl_cs, x);
            break;
        case 2: {
            int rc;
            while ((rc = rcl_mutex_trylock(x->m)) == EBUSY)
                sched_yield();
            CHECK(rc == 0, "rcl_mutex_trylock: %d", rc);
            t_excl_section(x);
            rcl_mutex_unlock(x->m);
            break;
        }
        default: {
            struct t_excl_try t = { 0, x };
            while (!rcl_execute_trylock(x->m, t_excl_try_cs, &t))
                sched_yield();
            break;
        }
        }
    }
    __atomic_add_fetch(&x->done, i, __ATOMIC_RELAXED);
}

/* Runs the loop on m and checks it: no overlap, no lost update.  `what` names the case.  With a
 * deadline (t_now_ns() value, 0: none), returns the sections run and the threads it stopped. */
T_FN long t_excl_run_until(rcl_mutex_t *m, int threads, int iters, uint64_t deadline_ns, int *stopped,
                           const char *what)
{
    struct t_excl x = { .m = m, .iters = iters, .threads = threads, .deadline_ns = deadline_ns };
    t_run_threads(threads, t_excl_worker, &x);
    CHECK(x.overlaps == 0, "%s: %ld sections overlapped another", what, x.overlaps);
    CHECK_EQ(x.counter, x.done, what);
    CHECK(x.done >= threads, "%s: %ld sections for %d threads", what, x.done, threads);
    if (!deadline_ns)
        CHECK_EQ(x.done, (long)threads * iters, what);
    if (stopped)
        *stopped = x.stopped;
    return x.done;
}

T_FN void t_excl_run(rcl_mutex_t *m, int threads, int iters, const char *what)
{
    t_excl_run_until(m, threads, iters, 0, NULL, what);
}

#endif
