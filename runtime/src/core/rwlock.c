/*
 * Reader-writer locks: an rcl_rwlock_t is a pthread rwlock (readers in parallel) under the posix
 * algorithm, and one exclusive lock of its algorithm under every other (readers serialised; why
 * that is correct, and what it cannot do: rclify.h, docs/runtime.md "Reader-writer locks").  The
 * exclusive lock is an rcl_mutex_t of the recursive kind, so it carries the lock's configuration,
 * is resolved on first use like any mutex (RCL_RWLOCK_INITIALIZER, zero-filled), runs extracted
 * sections on RCL servers and combiners, and lets a reader that already holds the lock in again.
 * Whether the pthread rwlock is in force is the resolved algorithm of that mutex: posix.
 */
#define _GNU_SOURCE /* pthread_rwlock_clockrdlock */
#include <errno.h>

#include "core/atomics.h"
#include "core/runtime.h"

/* Resolving on first use must not change the errno a section, or the caller, sees. */
static int posix_in_force(rcl_rwlock_t *rw)
{
    int alg = ld_acquire(&rw->lock.alg);
    if (__builtin_expect(alg > RCL_ALG_UNRESOLVED, 1))
        return alg == RCL_ALG_POSIX;
    int saved = errno;
    alg = rcl_mutex_algorithm(&rw->lock);
    errno = saved;
    return alg == RCL_ALG_POSIX;
}

int rcl_rwlock_init(rcl_rwlock_t *rw, const pthread_rwlockattr_t *attr, const rcl_lock_config_t *config)
{
    int rc = pthread_rwlock_init(&rw->posix, attr);
    if (rc != 0)
        return rc;
    pthread_mutexattr_t mattr;
    pthread_mutexattr_init(&mattr);
    pthread_mutexattr_settype(&mattr, PTHREAD_MUTEX_RECURSIVE);
    /* shared between processes: only the pthread lock excludes across them (the mutex's attribute
     * keeps it posix, rcl_mutex_init's needs_posix) */
    int pshared;
    if (attr && pthread_rwlockattr_getpshared(attr, &pshared) == 0 && pshared == PTHREAD_PROCESS_SHARED)
        pthread_mutexattr_setpshared(&mattr, PTHREAD_PROCESS_SHARED);
    rc = rcl_mutex_init(&rw->lock, &mattr, config);
    pthread_mutexattr_destroy(&mattr);
    if (rc != 0)
        pthread_rwlock_destroy(&rw->posix);
    return rc;
}

/* The lock in force first: its EBUSY (held) leaves the other one, and the rwlock, as they were. */
int rcl_rwlock_destroy(rcl_rwlock_t *rw)
{
    if (ld_acquire(&rw->lock.alg) == RCL_ALG_POSIX) {
        int rc = pthread_rwlock_destroy(&rw->posix);
        return rc != 0 ? rc : rcl_mutex_destroy(&rw->lock);
    }
    int rc = rcl_mutex_destroy(&rw->lock);
    return rc != 0 ? rc : pthread_rwlock_destroy(&rw->posix);
}

int rcl_rwlock_algorithm(rcl_rwlock_t *rw)
{
    return rcl_mutex_algorithm(&rw->lock);
}

/* The slow paths: the lock was not resolved to posix when the inline fast path looked. */
int rcl_rwlock_rdlock_slow(rcl_rwlock_t *rw)
{
    return posix_in_force(rw) ? pthread_rwlock_rdlock(&rw->posix) : rcl_mutex_lock(&rw->lock);
}

int rcl_rwlock_wrlock_slow(rcl_rwlock_t *rw)
{
    return posix_in_force(rw) ? pthread_rwlock_wrlock(&rw->posix) : rcl_mutex_lock(&rw->lock);
}

int rcl_rwlock_tryrdlock_slow(rcl_rwlock_t *rw)
{
    return posix_in_force(rw) ? pthread_rwlock_tryrdlock(&rw->posix) : rcl_mutex_trylock(&rw->lock);
}

int rcl_rwlock_trywrlock_slow(rcl_rwlock_t *rw)
{
    return posix_in_force(rw) ? pthread_rwlock_trywrlock(&rw->posix) : rcl_mutex_trylock(&rw->lock);
}

int rcl_rwlock_unlock_slow(rcl_rwlock_t *rw)
{
    return posix_in_force(rw) ? pthread_rwlock_unlock(&rw->posix) : rcl_mutex_unlock(&rw->lock);
}

/* Timed calls: the pthread rwlock's own under posix, the exclusive lock's timed lock elsewhere
 * (the clock checked here first, as pthread_rwlock_clockrdlock does). */
int rcl_rwlock_clockrdlock(rcl_rwlock_t *rw, clockid_t clock, const struct timespec *abstime)
{
    if (!rcl_clock_valid(clock))
        return EINVAL;
    return posix_in_force(rw) ? pthread_rwlock_clockrdlock(&rw->posix, clock, abstime)
                              : rcl_mutex_clocklock(&rw->lock, clock, abstime);
}

int rcl_rwlock_clockwrlock(rcl_rwlock_t *rw, clockid_t clock, const struct timespec *abstime)
{
    if (!rcl_clock_valid(clock))
        return EINVAL;
    return posix_in_force(rw) ? pthread_rwlock_clockwrlock(&rw->posix, clock, abstime)
                              : rcl_mutex_clocklock(&rw->lock, clock, abstime);
}

int rcl_rwlock_timedrdlock(rcl_rwlock_t *rw, const struct timespec *abstime)
{
    return rcl_rwlock_clockrdlock(rw, CLOCK_REALTIME, abstime);
}

int rcl_rwlock_timedwrlock(rcl_rwlock_t *rw, const struct timespec *abstime)
{
    return rcl_rwlock_clockwrlock(rw, CLOCK_REALTIME, abstime);
}

/* An extracted section on an rwlock resolved on this call (the inline path saw it unresolved):
 * the posix path of rclify.h's inline function, or the algorithm's execute. */
static int execute_posix(rcl_rwlock_t *rw, int write, rcl_cs_fn fn, void *ctx)
{
    int rc = write ? pthread_rwlock_wrlock(&rw->posix) : pthread_rwlock_rdlock(&rw->posix);
    if (rc != 0)
        rcl_execute_lock_failed(&rw->lock, rc);
    int ret = fn(ctx);
    int saved = errno; /* what the section left */
    pthread_rwlock_unlock(&rw->posix);
    errno = saved;
    return ret;
}

int rcl_rwlock_execute_read_slow(rcl_rwlock_t *rw, rcl_cs_fn fn, void *ctx, size_t ctx_size)
{
    if (posix_in_force(rw))
        return execute_posix(rw, 0, fn, ctx);
    return rcl_execute_sized(&rw->lock, fn, ctx, ctx_size);
}

int rcl_rwlock_execute_write_slow(rcl_rwlock_t *rw, rcl_cs_fn fn, void *ctx, size_t ctx_size)
{
    if (posix_in_force(rw))
        return execute_posix(rw, 1, fn, ctx);
    return rcl_execute_sized(&rw->lock, fn, ctx, ctx_size);
}

int rcl_rwlock_execute_read_local(rcl_rwlock_t *rw, rcl_cs_fn fn, void *ctx)
{
    if (posix_in_force(rw))
        return execute_posix(rw, 0, fn, ctx);
    return rcl_execute_local(&rw->lock, fn, ctx);
}

int rcl_rwlock_execute_write_local(rcl_rwlock_t *rw, rcl_cs_fn fn, void *ctx)
{
    if (posix_in_force(rw))
        return execute_posix(rw, 1, fn, ctx);
    return rcl_execute_local(&rw->lock, fn, ctx);
}
