/*
 * posix: the lock is the pthread mutex embedded in rcl_mutex_t (m->posix), no extra state.
 * rcl_mutex_lock/unlock/trylock and rcl_execute come here only on a lock's first use: once it is
 * resolved, the inline fast paths in rclify.h call pthread directly.  rcl_mutex_clocklock /
 * timedlock always come here (pthread_mutex_clocklock is a GNU extension, and timedlock needs
 * POSIX 2001: no inline fast path in a header that programs may include in strict C99 mode).
 */
#define _GNU_SOURCE /* pthread_mutex_clocklock */
#include "core/pthread_clock.h"
#include "core/runtime.h"

static int posix_init(rcl_mutex_t *m)
{
    m->impl = NULL;
    return 0;
}

static int posix_destroy(rcl_mutex_t *m)
{
    return pthread_mutex_destroy(&m->posix);
}

static int posix_lock(rcl_mutex_t *m)
{
    return pthread_mutex_lock(&m->posix);
}

static int posix_trylock(rcl_mutex_t *m)
{
    return pthread_mutex_trylock(&m->posix);
}

static int posix_clocklock(rcl_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
    return rcl_pthread_clocklock(&m->posix, clock, abstime);
}

static int posix_unlock(rcl_mutex_t *m)
{
    return pthread_mutex_unlock(&m->posix);
}

/* Reached only on a lock's first use (the inline fast path takes over once it is resolved). */
static int posix_execute(rcl_mutex_t *m, rcl_cs_fn fn, void *ctx, size_t ctx_size)
{
    int rc = pthread_mutex_lock(&m->posix);
    if (rc != 0)
        rcl_execute_lock_failed(m, rc);
    int ret = fn(ctx);
    pthread_mutex_unlock(&m->posix);
    return ret;
}

/* Algorithm 3 on a pthread mutex: one trylock, fn told whether it holds the lock. */
static int posix_execute_trylock(rcl_mutex_t *m, rcl_cs_fn fn, void *ctx)
{
    int rc = pthread_mutex_trylock(&m->posix);
    *(int *)ctx = rc == 0;
    int ret = fn(ctx);
    if (rc == 0)
        pthread_mutex_unlock(&m->posix);
    return ret;
}

const struct rcl_lock_ops rcl_ops_posix = {
    .init = posix_init,
    .destroy = posix_destroy,
    .lock = posix_lock,
    .trylock = posix_trylock,
    .unlock = posix_unlock,
    .clocklock = posix_clocklock,
    .execute = posix_execute,
    .execute_trylock = posix_execute_trylock,
    .release_for_wait = posix_unlock,
    .reacquire_after_wait = posix_lock,
    .print_stats = NULL,
};
