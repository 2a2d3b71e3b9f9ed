/*
 * Lock API dispatch: every rcl_mutex_* call resolves the lock's algorithm (once) and forwards to
 * its rcl_lock_ops.  Statically initialised and zero-filled locks are resolved on first use:
 * one thread moves alg from UNRESOLVED to RESOLVING with a CAS, sets the lock up, then publishes
 * impl and the final alg with a release store; others wait for it.  A lock initialised inside a
 * call of one of the program's lock helpers takes the configuration of that call's site
 * (rcl_lock_site_enter, RCL_LOCK_SITE in rclify.h) instead of the helper's own.  A lock created
 * with attributes only a pthread mutex honours (needs_posix) is posix whatever its configuration.
 */
#define _GNU_SOURCE /* pthread_mutexattr_getrobust */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "core/atomics.h"
#include "core/runtime.h"

static const struct rcl_lock_ops *ops_of(int alg)
{
    return rcl_algorithms[alg];
}

/* Sets the lock up for its effective configuration (posix when posix_only); the caller owns m
 * (RESOLVING or init).  Not a cancellation point: an algorithm's set-up may read the machine's
 * topology (open, read: cancellation points), and a thread cancelled there left the lock
 * RESOLVING for ever, every other user spinning in resolve() (a worker cancelled at its first
 * section under hsynch, caught by corpus/cleanup_push_no_cancellation_point). */
static int setup(rcl_mutex_t *m, int *alg_out, int posix_only)
{
    int cancel_state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
    rcl_lock_config_t cfg;
    rcl_config_resolve(&m->config, &cfg);
    if (posix_only)
        cfg.algorithm = RCL_ALG_POSIX;
    m->config = cfg;
    m->impl = NULL;
    int rc = ops_of(cfg.algorithm)->init(m);
    *alg_out = cfg.algorithm;
    pthread_setcancelstate(cancel_state, NULL);
    return rc;
}

/* Returns the resolved algorithm of m (acquire: impl and config are visible). */
static int resolve(rcl_mutex_t *m)
{
    int alg = ld_acquire(&m->alg);
    if (__builtin_expect(alg > RCL_ALG_UNRESOLVED, 1))
        return alg;
    int expected = RCL_ALG_UNRESOLVED;
    if (alg == RCL_ALG_UNRESOLVED && cas_acquire(&m->alg, &expected, RCL_ALG_RESOLVING)) {
        int rc = setup(m, &alg, 0);
        if (rc != 0)
            rcl_fatal("lock %s: cannot set up algorithm %s: %s", rcl_lock_name(m), rcl_algorithm_name(alg),
                      strerror(rc));
        st_release(&m->alg, alg); /* impl and config published before alg */
        return alg;
    }
    for (unsigned n = 0; (alg = ld_acquire(&m->alg)) <= RCL_ALG_UNRESOLVED; n++) {
        if (n < 64)
            rcl_pause();
        else
            sched_yield();
    }
    return alg;
}

/*
 * Call sites of the program's lock helpers (RCL_LOCK_SITE in rclify.h): the sites open on this
 * thread while a wrapped helper call runs, NULL otherwise.  Only this thread reads or writes it.
 */
static __thread const rcl_lock_site_t *open_sites;

const rcl_lock_site_t *rcl_lock_site_enter(const rcl_lock_site_t *sites)
{
    const rcl_lock_site_t *outer = open_sites;
    if (!outer) /* a helper called by a helper: the outermost call site names the lock */
        open_sites = sites;
    return outer;
}

void rcl_lock_site_leave(const rcl_lock_site_t *outer)
{
    open_sites = outer;
}

/* The open call site a lock initialised with `config` belongs to, or NULL. */
static const rcl_lock_site_t *open_site_for(const rcl_lock_config_t *config)
{
    if (!open_sites || !config || !config->id)
        return NULL;
    for (const rcl_lock_site_t *s = open_sites; s->init_id; s++)
        if (strcmp(s->init_id, config->id) == 0)
            return s;
    return NULL;
}

/* Attributes whose meaning only the pthread mutex has: shared between processes (fio's locks in
 * shared memory: the other algorithms keep their state in this process's memory and sleep on
 * process-private futexes, so they excluded nothing across processes), robust (EOWNERDEAD when
 * the owner dies), a priority protocol (inheritance, ceilings). */
static int needs_posix(const pthread_mutexattr_t *attr)
{
    int value;
    if (!attr)
        return 0;
    if (pthread_mutexattr_getpshared(attr, &value) == 0 && value == PTHREAD_PROCESS_SHARED)
        return 1;
    if (pthread_mutexattr_getrobust(attr, &value) == 0 && value == PTHREAD_MUTEX_ROBUST)
        return 1;
    return pthread_mutexattr_getprotocol(attr, &value) == 0 && value != PTHREAD_PRIO_NONE;
}

int rcl_mutex_init(rcl_mutex_t *m, const pthread_mutexattr_t *attr, const rcl_lock_config_t *config)
{
    int kind = PTHREAD_MUTEX_DEFAULT;
    if (attr && pthread_mutexattr_gettype(attr, &kind) != 0)
        return EINVAL;
    rcl_lock_config_t dflt = RCL_CONFIG_DEFAULT;
    const rcl_lock_site_t *site = open_site_for(config);
    m->config = site ? site->config : config ? *config : dflt;
    m->kind = kind;
    m->impl = NULL;
    int rc = pthread_mutex_init(&m->posix, attr);
    if (rc != 0)
        return rc;
    int alg;
    rc = setup(m, &alg, needs_posix(attr));
    if (rc != 0) {
        pthread_mutex_destroy(&m->posix);
        return rc;
    }
    st_release(&m->alg, alg);
    return 0;
}

/* A robust mutex, or one with a priority protocol, runs on m->posix (needs_posix); any other's
 * m->posix was created with the same attributes, so pthread's answer (EINVAL) is the right one. */
int rcl_mutex_consistent(rcl_mutex_t *m)
{
    return pthread_mutex_consistent(&m->posix);
}

int rcl_mutex_consistent_np(rcl_mutex_t *m)
{
    return rcl_mutex_consistent(m);
}

int rcl_mutex_getprioceiling(const rcl_mutex_t *m, int *prioceiling)
{
    return pthread_mutex_getprioceiling(&m->posix, prioceiling);
}

int rcl_mutex_setprioceiling(rcl_mutex_t *m, int prioceiling, int *old_ceiling)
{
    return pthread_mutex_setprioceiling(&m->posix, prioceiling, old_ceiling);
}

int rcl_mutex_destroy(rcl_mutex_t *m)
{
    int alg = ld_acquire(&m->alg);
    if (alg == RCL_ALG_UNRESOLVED)
        return pthread_mutex_destroy(&m->posix);
    if (alg < RCL_ALG_UNRESOLVED)
        return EBUSY; /* being resolved by another thread: in use */
    int rc = ops_of(alg)->destroy(m);
    if (rc == 0) {
        if (alg != RCL_ALG_POSIX)
            pthread_mutex_destroy(&m->posix);
        st_release(&m->alg, RCL_ALG_UNRESOLVED); /* reusable after a new init, as POSIX */
    }
    return rc;
}

/* Lock operations never change errno, like their pthread counterparts: the caller's errno
 * survives the futex and yield calls of the waiting paths. */
int rcl_mutex_lock_slow(rcl_mutex_t *m)
{
    int saved = errno;
    int rc = ops_of(resolve(m))->lock(m);
    errno = saved;
    return rc == 0 ? 0 : rcl_failed_elsewhere(m, rc, "pthread_mutex_lock");
}

int rcl_mutex_unlock_slow(rcl_mutex_t *m)
{
    int saved = errno;
    int rc = ops_of(resolve(m))->unlock(m);
    errno = saved;
    return rc == 0 ? 0 : rcl_failed_elsewhere(m, rc, "pthread_mutex_unlock");
}

int rcl_failed_elsewhere(rcl_mutex_t *m, int err, const char *call)
{
    if (rcl_serving_others || rcl_running_for_client())
        rcl_fatal("lock %s (%s): %s failed inside a critical section running for another thread: %s; "
                  "the section's error branch runs only on its caller's thread (define "
                  "RCLIFY_SECTION_<section>_ON_CALLER in lock_config.h to run it there)", rcl_lock_name(m), rcl_algorithm_name(m->alg), call,
                  strerror(err));
    return err;
}

int rcl_mutex_trylock_slow(rcl_mutex_t *m)
{
    int saved = errno;
    int rc = ops_of(resolve(m))->trylock(m);
    errno = saved;
    return rc;
}

/* A timed lock in hybrid mode: the clock is checked here, the rest (abstime, kinds, the wait) by
 * the algorithm, as pthread_mutex_clocklock does. */
int rcl_mutex_clocklock(rcl_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
    if (!rcl_clock_valid(clock))
        return EINVAL;
    int saved = errno;
    int rc = ops_of(resolve(m))->clocklock(m, clock, abstime);
    errno = saved;
    return rc;
}

int rcl_mutex_timedlock(rcl_mutex_t *m, const struct timespec *abstime)
{
    return rcl_mutex_clocklock(m, CLOCK_REALTIME, abstime);
}

/* Resolving a lock on first use (profile counters, server start) must not change the errno the
 * section sees when it runs on this thread.  A resolved lock (every call but the first) makes no
 * call that could: no errno save on that path. */
static const struct rcl_lock_ops *resolved_ops(rcl_mutex_t *m)
{
    int alg = ld_acquire(&m->alg);
    if (__builtin_expect(alg > RCL_ALG_UNRESOLVED, 1))
        return ops_of(alg);
    int saved = errno;
    const struct rcl_lock_ops *ops = ops_of(resolve(m));
    errno = saved;
    return ops;
}

int rcl_execute_sized_slow(rcl_mutex_t *m, rcl_cs_fn fn, void *ctx, size_t ctx_size)
{
    return resolved_ops(m)->execute(m, fn, ctx, ctx_size);
}

/* Called by the inline fast path of rcl_execute_sized (rclify.h), and by algorithms' execute,
 * when pthread_mutex_lock fails. */
void rcl_execute_lock_failed(rcl_mutex_t *m, int err)
{
    rcl_fatal("lock %s (%s): pthread_mutex_lock failed inside rcl_execute: %s; "
              "an extracted critical section cannot run without its lock",
              rcl_lock_name(m), rcl_algorithm_name(m->alg), strerror(err));
}

int rcl_execute_trylock(rcl_mutex_t *m, rcl_cs_fn fn, void *ctx)
{
    return resolved_ops(m)->execute_trylock(m, fn, ctx);
}

/*
 * Sections that must run on the calling thread (they use thread-local state): the lock is taken
 * in hybrid mode around a local call, whatever the algorithm.  An error taking the lock is fatal,
 * as in rcl_execute: the section cannot run without it.
 */
int rcl_execute_local(rcl_mutex_t *m, rcl_cs_fn fn, void *ctx)
{
    const struct rcl_lock_ops *ops = resolved_ops(m);
    int saved = errno;
    int err = ops->lock(m);
    errno = saved;
    if (err != 0)
        rcl_fatal("lock %s (%s): taking it failed inside rcl_execute_local: %s; the critical section "
                  "cannot run", rcl_lock_name(m), rcl_algorithm_name(m->alg), strerror(err));
    int ret = fn(ctx);
    saved = errno; /* what the section left */
    ops->unlock(m);
    errno = saved;
    return ret;
}

/*
 * A section that may wait on a condition variable: where the algorithm would run it on a thread
 * that cannot block for it (a combiner), it runs here in hybrid mode; elsewhere (posix, queue
 * locks, RCL's servicing threads, which can block) as rcl_execute would.
 */
int rcl_execute_may_wait(rcl_mutex_t *m, rcl_cs_fn fn, void *ctx, size_t ctx_size)
{
    const struct rcl_lock_ops *ops = resolved_ops(m);
    if (ops->combines)
        return rcl_execute_local(m, fn, ctx);
    return ops->execute(m, fn, ctx, ctx_size);
}

int rcl_execute_trylock_local(rcl_mutex_t *m, rcl_cs_fn fn, void *ctx)
{
    const struct rcl_lock_ops *ops = resolved_ops(m);
    int saved = errno;
    int acquired = ops->trylock(m) == 0;
    errno = saved;
    *(int *)ctx = acquired;
    int ret = fn(ctx);
    saved = errno;
    if (acquired)
        ops->unlock(m);
    errno = saved;
    return ret;
}

int rcl_mutex_algorithm(rcl_mutex_t *m)
{
    return resolve(m);
}

/* Used by cond.c. */
const struct rcl_lock_ops *rcl_mutex_ops(rcl_mutex_t *m, int *alg)
{
    *alg = resolve(m);
    return ops_of(*alg);
}
