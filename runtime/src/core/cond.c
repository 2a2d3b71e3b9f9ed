/*
 * Condition variables for every algorithm.
 *
 * With a posix mutex the wait is pthread_cond_wait on c->posix.  With any other algorithm the
 * wait uses a futex sequence: read seq while holding the mutex, count ourselves in waiters,
 * release the mutex through the algorithm (ops->release_for_wait), sleep while seq is unchanged,
 * then take the mutex back (ops->reacquire_after_wait).  A signal bumps seq before waking, so a
 * signal sent between the release and the sleep is not lost (the futex sees seq changed).
 *
 * Before blocking, whatever the mutex's algorithm, the wait calls every algorithm's prepare_block
 * hook (core/lock_ops.h): on an RCL servicing thread (a wait inside an extracted section), the
 * server makes sure another servicing thread is free, so that the sections that will signal can run.
 *
 * The wait is a cancellation point, as pthread_cond_wait is (squashfs-tools cancels its workers
 * while they wait, then joins them): the sleep runs with asynchronous cancellation, as glibc's
 * own futex waits do, and a cancelled waiter takes the mutex back before the program's cleanup
 * handlers run (wait_cancelled), waking the other waiters in case a signal meant for one of them
 * reached it (spurious wakeups are allowed, a lost signal is not).
 */
#define _GNU_SOURCE /* pthread_cond_clockwait */
#include <errno.h>
#include <limits.h>

#include "core/atomics.h"
#include "core/runtime.h"

int rcl_cond_init(rcl_cond_t *c, const pthread_condattr_t *attr)
{
    clockid_t clock = CLOCK_REALTIME;
    if (attr && pthread_condattr_getclock(attr, &clock) != 0)
        return EINVAL;
    c->seq = 0;
    c->waiters = 0;
    c->clock = (int)clock;
    return pthread_cond_init(&c->posix, attr);
}

int rcl_cond_destroy(rcl_cond_t *c)
{
    if (ld_acquire(&c->waiters) != 0)
        return EBUSY;
    return pthread_cond_destroy(&c->posix);
}

__thread int rcl_serving_others;

struct waiting {
    rcl_cond_t *c;
    rcl_mutex_t *m;
    const struct rcl_lock_ops *ops;
};

static void wait_cancelled(void *arg)
{
    struct waiting *w = arg;
    add_acq_rel(&w->c->seq, 1);
    rcl_futex_wake((int *)&w->c->seq, INT_MAX);
    w->ops->reacquire_after_wait(w->m);
    add_acq_rel(&w->c->waiters, -1);
}

/* One futex sleep, cancellable (the futex syscall itself is no cancellation point). */
static int cancellable_sleep(int *word, int value, const struct timespec *abstime, clockid_t clock)
{
    int type;
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &type);
    int rc = rcl_futex_wait_abs(word, value, abstime, (int)clock);
    int err = errno;
    pthread_setcanceltype(type, NULL);
    errno = err;
    return rc;
}

/* Before a wait blocks, on a mutex of any algorithm: each algorithm's prepare_block hook (rcl: a
 * servicing thread makes sure another one is free to serve the other locks of its server). */
static void prepare_block(void)
{
    for (int alg = RCL_ALG_UNRESOLVED + 1; alg < RCL_ALG_COUNT; alg++)
        if (rcl_algorithms[alg]->prepare_block)
            rcl_algorithms[alg]->prepare_block();
}

/* abstime (NULL: none) is on `clock`. */
static int futex_wait(rcl_cond_t *c, rcl_mutex_t *m, const struct rcl_lock_ops *ops,
                      const struct timespec *abstime, clockid_t clock)
{
    if (rcl_serving_others)
        rcl_fatal("lock %s (%s): a critical section waits on a condition variable while it runs on a "
                  "combiner, which cannot block for another thread; call it with rcl_execute_may_wait "
                  "(rclify transform does for the sections it sees waiting)", rcl_lock_name(m),
                  rcl_algorithm_name(m->alg));
    int saved_errno = errno; /* pthread_cond_wait leaves errno alone: so do we */
    unsigned seq = ld_acquire(&c->seq); /* before releasing m: a later signal changes it */
    add_acq_rel(&c->waiters, 1);
    int rc = ops->release_for_wait(m);
    if (rc != 0) {
        add_acq_rel(&c->waiters, -1);
        return rc;
    }
    prepare_block();
    int result = 0;
    struct waiting w = { c, m, ops };
    pthread_cleanup_push(wait_cancelled, &w);
    for (;;) {
        if (cancellable_sleep((int *)&c->seq, (int)seq, abstime, clock) == 0)
            break; /* woken (or spuriously: allowed) */
        if (errno == ETIMEDOUT) {
            result = ETIMEDOUT;
            break;
        }
        if (errno == EAGAIN) /* seq changed: signalled */
            break;
        if (errno == EINVAL && abstime) { /* malformed deadline */
            result = EINVAL;
            break;
        }
        /* EINTR: sleep again */
    }
    pthread_cleanup_pop(0);
    ops->reacquire_after_wait(m);
    add_acq_rel(&c->waiters, -1);
    errno = saved_errno;
    return result;
}

int rcl_cond_wait(rcl_cond_t *c, rcl_mutex_t *m)
{
    int alg, rc;
    const struct rcl_lock_ops *ops = rcl_mutex_ops(m, &alg);
    if (alg == RCL_ALG_POSIX) {
        prepare_block();
        rc = pthread_cond_wait(&c->posix, &m->posix);
    } else {
        rc = futex_wait(c, m, ops, NULL, CLOCK_REALTIME);
    }
    return rc == 0 ? 0 : rcl_failed_elsewhere(m, rc, "pthread_cond_wait");
}

int rcl_cond_timedwait(rcl_cond_t *c, rcl_mutex_t *m, const struct timespec *abstime)
{
    int alg;
    const struct rcl_lock_ops *ops = rcl_mutex_ops(m, &alg);
    if (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
        return EINVAL;
    if (alg == RCL_ALG_POSIX) {
        prepare_block();
        return pthread_cond_timedwait(&c->posix, &m->posix, abstime);
    }
    return futex_wait(c, m, ops, abstime, (clockid_t)c->clock);
}

int rcl_cond_clockwait(rcl_cond_t *c, rcl_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
    if (!rcl_clock_valid(clock) || !rcl_abstime_valid(abstime))
        return EINVAL;
    int alg;
    const struct rcl_lock_ops *ops = rcl_mutex_ops(m, &alg);
    if (alg == RCL_ALG_POSIX) {
        prepare_block();
        return pthread_cond_clockwait(&c->posix, &m->posix, clock, abstime);
    }
    return futex_wait(c, m, ops, abstime, clock);
}

int rcl_cond_signal(rcl_cond_t *c)
{
    if (ld_acquire(&c->waiters) != 0) {
        add_acq_rel(&c->seq, 1);
        rcl_futex_wake((int *)&c->seq, 1);
    }
    return pthread_cond_signal(&c->posix); /* glibc's: always 0 (POSIX lists no error) */
}

int rcl_cond_broadcast(rcl_cond_t *c)
{
    if (ld_acquire(&c->waiters) != 0) {
        add_acq_rel(&c->seq, 1);
        rcl_futex_wake((int *)&c->seq, INT_MAX);
    }
    return pthread_cond_broadcast(&c->posix); /* glibc's: always 0 (POSIX lists no error) */
}
