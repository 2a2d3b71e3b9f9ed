/*
 * pthread_mutex_clocklock for the algorithms built on a pthread mutex (posix, profile).  A header,
 * not a function of the core: pthread/profile.c is also built alone (tests/test_profile.py).
 *
 * CLOCK_REALTIME goes through pthread_mutex_timedlock, the same thing in glibc, which
 * ThreadSanitizer (GCC 12's libtsan) intercepts where it does not intercept
 * pthread_mutex_clocklock: a program under TSan then sees these locks taken.  In the runtime's own
 * TSan build a CLOCK_MONOTONIC deadline is turned into a CLOCK_REALTIME one for the same reason
 * (only there: a wall-clock step would move it).
 *
 * Include it with _GNU_SOURCE defined before any system header (pthread_mutex_clocklock).
 */
#ifndef RCLIFY_PTHREAD_CLOCK_H
#define RCLIFY_PTHREAD_CLOCK_H

#ifndef _GNU_SOURCE
#error "core/pthread_clock.h needs _GNU_SOURCE, defined before the first system header"
#endif

#include "core/atomics.h"
#include "core/runtime.h"

static inline int rcl_pthread_clocklock(pthread_mutex_t *p, clockid_t clock, const struct timespec *abstime)
{
    if (clock == CLOCK_REALTIME)
        return pthread_mutex_timedlock(p, abstime);
#ifdef RCLIFY_TSAN
    if (!rcl_abstime_valid(abstime))
        return pthread_mutex_timedlock(p, abstime); /* the same answer: 0 when free, else EINVAL */
    struct timespec real;
    int64_t left = rcl_ns_until(clock, abstime);
    clock_gettime(CLOCK_REALTIME, &real);
    int64_t ns = (int64_t)real.tv_nsec + (left > 0 ? left : 0);
    real.tv_sec += (time_t)(ns / 1000000000);
    real.tv_nsec = (long)(ns % 1000000000);
    return pthread_mutex_timedlock(p, &real);
#else
    return pthread_mutex_clocklock(p, clock, abstime);
#endif
}

#endif
