/*
 * rclify runtime: the lock API that programs transformed by `rclify transform` link against.
 *
 * Every lock is an rcl_mutex_t that carries its configuration (from the generated lock_config.h):
 * an algorithm (posix, rcl, ...), an RCL server index and optionally a CPU for that server.  The
 * environment variable RCLIFY_LOCKS overrides the configuration at run time, e.g.
 *     RCLIFY_LOCKS='*=rcl'                 every lock on RCL server 0
 *     RCLIFY_LOCKS='items.c:cache_lock=rcl:1@3,*=posix'
 * (entries are tried left to right, the first whose pattern matches the lock id wins).
 *
 * Critical sections extracted into functions run through rcl_execute*(); sections that could not be
 * extracted use rcl_mutex_lock/unlock ("hybrid" mode), which stay correct on every algorithm.
 *
 * The header is C99 (and C++) compatible: programs may be built with older -std flags than the
 * runtime itself (C11).
 *
 * Names: every parameter, macro parameter and inline function local here is rcl_p_* or rcl_l_*,
 * attributes are spelled __x__: a program's `#define n 0xe` before the include reaches none of them
 * (tests/test_header_names.py).  The structs' members are not prefixed yet (runtime/src reads them).
 */
#ifndef RCLIFY_H
#define RCLIFY_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h> /* clockid_t, also in strict C99/C11 modes (where <time.h> lacks it) */
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Algorithms: RCL_ALG_POSIX = 1, RCL_ALG_RCL = 2, RCL_ALG_PROFILE = 3, ... one per line of
 * rclify/algorithms.def (next to this header), which also says how to add one.
 */
enum rcl_algorithm {
    RCL_ALG_UNRESOLVED = 0, /* statically initialised, not used yet: resolved on first use */
#define RCL_ALGORITHM(rcl_p_ENUM, rcl_p_name, rcl_p_description) RCL_ALG_##rcl_p_ENUM,
#include "rclify/algorithms.def"
#undef RCL_ALGORITHM
    RCL_ALG_COUNT
};

/* One lock's configuration, as written in lock_config.h. */
typedef struct rcl_lock_config {
    const char *id; /* stable lock id (e.g. "items.c:cache_lock"); NULL for an anonymous lock */
    int algorithm;  /* enum rcl_algorithm */
    int server;     /* RCL server index, 0 .. RCL_MAX_SERVERS-1 */
    int cpu;        /* CPU the server is pinned to; -1 leaves it unpinned */
    int policy;     /* enum rcl_wait_policy: how waiting threads wait; 0 (auto) when not given */
} rcl_lock_config_t;

/*
 * How a thread waits for a lock held by another (queue, spin, combining and cohort locks; posix
 * always parks in the kernel, RCL clients wait on their mailbox):
 *   auto  spin-then-park, parking at once while waiting threads outnumber the CPUs;
 *   spin  spin only (for threads that each have a CPU);
 *   yield spin a little, then sched_yield between checks;
 *   park  spin a little, then sleep on a futex until woken.
 */
enum rcl_wait_policy { RCL_WAIT_AUTO = 0, RCL_WAIT_SPIN, RCL_WAIT_YIELD, RCL_WAIT_PARK, RCL_WAIT_COUNT };

#define RCL_MAX_SERVERS 64
#define RCL_LOCK_CONFIG(rcl_p_id, rcl_p_alg, rcl_p_server, rcl_p_cpu) { (rcl_p_id), (rcl_p_alg), (rcl_p_server), (rcl_p_cpu), RCL_WAIT_AUTO }
#define RCL_LOCK_CONFIG_POLICY(rcl_p_id, rcl_p_alg, rcl_p_server, rcl_p_cpu, rcl_p_policy) { (rcl_p_id), (rcl_p_alg), (rcl_p_server), (rcl_p_cpu), (rcl_p_policy) }
#define RCL_CONFIG_DEFAULT RCL_LOCK_CONFIG(NULL, RCL_ALG_POSIX, 0, -1)
/* A pointer to a configuration given as a lock_config.h macro: rcl_mutex_init(&m, NULL, RCL_CONFIG_REF(RCLIFY_LOCK_x)) */
#define RCL_CONFIG_REF(rcl_p_cfg) (&(const rcl_lock_config_t)rcl_p_cfg)

/* The posix fast path reads `alg` and the words of `posix`: they come first, together, so that in
 * an array of locks (80-byte elements) they share one cache line for three elements in four,
 * where `alg` first and `posix` last straddled two lines for three in four. */
typedef struct rcl_mutex {
    int alg;                  /* resolved algorithm; read with a relaxed atomic load */
    int kind;                 /* PTHREAD_MUTEX_NORMAL / _RECURSIVE / _ERRORCHECK / _DEFAULT */
    pthread_mutex_t posix;    /* the lock itself under the posix algorithm */
    void *impl;               /* per-algorithm state, allocated when the algorithm is resolved */
    rcl_lock_config_t config; /* configuration the lock was created with */
} rcl_mutex_t;

/* kind 0 is glibc's PTHREAD_MUTEX_DEFAULT (named constants need feature macros a program may lack) */
#define RCL_MUTEX_INITIALIZER(rcl_p_cfg) \
    { RCL_ALG_UNRESOLVED, 0, PTHREAD_MUTEX_INITIALIZER, NULL, rcl_p_cfg }
#ifdef PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP
#define RCL_RECURSIVE_MUTEX_INITIALIZER(rcl_p_cfg) \
    { RCL_ALG_UNRESOLVED, PTHREAD_MUTEX_RECURSIVE, PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP, NULL, rcl_p_cfg }
#endif
#ifdef PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP
#define RCL_ERRORCHECK_MUTEX_INITIALIZER(rcl_p_cfg) \
    { RCL_ALG_UNRESOLVED, PTHREAD_MUTEX_ERRORCHECK, PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP, NULL, rcl_p_cfg }
#endif

typedef struct rcl_cond {
    pthread_cond_t posix; /* used when the mutex waited with is a posix one */
    unsigned seq;         /* futex word for waits on other algorithms */
    unsigned waiters;     /* threads waiting on seq */
    int clock;            /* clock of timedwait deadlines (CLOCK_REALTIME unless condattr says) */
} rcl_cond_t;

#define RCL_COND_INITIALIZER { PTHREAD_COND_INITIALIZER, 0, 0, CLOCK_REALTIME }

/*
 * A critical section extracted into a function.  It returns 0 when it ends by falling through its
 * final unlock, or the positive flag value of the early exit it took (the caller dispatches on it).
 */
typedef int (*rcl_cs_fn)(void *rcl_p_ctx);

/* Mutexes.  Return values are those of the pthread equivalents. */
int rcl_mutex_init(rcl_mutex_t *rcl_p_m, const pthread_mutexattr_t *rcl_p_attr, const rcl_lock_config_t *rcl_p_config);

/*
 * Locks created through a helper function of the program (`int lock_setup(lock_t *l)` that calls
 * pthread_mutex_init(&l->m, ...), `lock_t *lock_new(void)` that allocates one): rclify transform
 * gives each *call* of such a helper its own lock_config.h entry, and wraps the call:
 *     RCL_LOCK_SITE(lock_setup(&cache->lock), RCL_SITE("lock.c:l->m", RCLIFY_LOCK_cache_c_cache_lock_m))
 * While the call runs, every rcl_mutex_init on this thread whose own configuration's id is one of
 * the listed ids (the helper's init sites) takes the configuration given with it instead: the lock
 * is set up for its call site's entry before anyone can use it.  A helper calling another helper
 * leaves the outermost call site in charge; other threads and other init sites are not affected.
 * RCL_LOCK_SITE is an expression with the call's value (RCL_LOCK_SITE_VOID: a helper returning
 * void, or an init macro that is a statement).  GNU C: a statement expression; C only (a compound literal array).
 */
typedef struct rcl_lock_site {
    const char *init_id;      /* id of an init site inside the helper; NULL ends a list */
    rcl_lock_config_t config; /* the configuration a lock initialised there takes */
} rcl_lock_site_t;
#define RCL_SITE(rcl_p_init_id, rcl_p_cfg) { (rcl_p_init_id), rcl_p_cfg }
/* Opens the sites (a list ended by a NULL init_id) on this thread unless sites are open already;
 * returns what was open before, for rcl_lock_site_leave. */
const rcl_lock_site_t *rcl_lock_site_enter(const rcl_lock_site_t *rcl_p_sites);
void rcl_lock_site_leave(const rcl_lock_site_t *rcl_p_outer);
#define RCL_LOCK_SITES_(...) ((const rcl_lock_site_t[]){ __VA_ARGS__, { NULL, RCL_CONFIG_DEFAULT } })
#define RCL_LOCK_SITE(rcl_p_call, ...)                                                        \
    (__extension__({                                                                          \
        const rcl_lock_site_t *rcl_site_outer_ = rcl_lock_site_enter(RCL_LOCK_SITES_(__VA_ARGS__)); \
        __typeof__(rcl_p_call) rcl_site_value_ = (rcl_p_call);                                \
        rcl_lock_site_leave(rcl_site_outer_);                                                 \
        rcl_site_value_;                                                                      \
    }))
#define RCL_LOCK_SITE_VOID(rcl_p_call, ...)                                                   \
    (__extension__({                                                                          \
        const rcl_lock_site_t *rcl_site_outer_ = rcl_lock_site_enter(RCL_LOCK_SITES_(__VA_ARGS__)); \
        rcl_p_call; /* unparenthesised: a statement macro's `do { ... } while (0)` too */    \
        rcl_lock_site_leave(rcl_site_outer_);                                                 \
    }))
int rcl_mutex_destroy(rcl_mutex_t *rcl_p_m);
/* The robust and priority-ceiling calls.  A mutex created robust or with a priority protocol runs
 * on its pthread mutex whatever its configuration (rcl_mutex_init), so these are that mutex's own
 * calls, with its results (EINVAL on a mutex created without the attribute, as pthread's). */
int rcl_mutex_consistent(rcl_mutex_t *rcl_p_m);
int rcl_mutex_consistent_np(rcl_mutex_t *rcl_p_m); /* the same */
int rcl_mutex_getprioceiling(const rcl_mutex_t *rcl_p_m, int *rcl_p_prioceiling);
int rcl_mutex_setprioceiling(rcl_mutex_t *rcl_p_m, int rcl_p_prioceiling, int *rcl_p_old_ceiling);
int rcl_mutex_lock_slow(rcl_mutex_t *rcl_p_m);
int rcl_mutex_unlock_slow(rcl_mutex_t *rcl_p_m);
int rcl_mutex_trylock_slow(rcl_mutex_t *rcl_p_m);
/* A lock, unlock or condition-variable call that failed with err: inside a section the runtime
 * runs for another thread (an RCL server, a combiner) the process ends with a message naming the
 * call; elsewhere err is returned, as pthread's.  rclify's analysis lets a section leave its
 * thread although an error branch of such a call is thread-bound (`if (rc) fail()`), on this. */
int rcl_failed_elsewhere(rcl_mutex_t *rcl_p_m, int rcl_p_err, const char *rcl_p_call) __attribute__((__cold__));

/*
 * Timed locks, hybrid mode like rcl_mutex_lock (release with rcl_mutex_unlock), on every
 * algorithm.  abstime is absolute, on CLOCK_REALTIME for timedlock, on `clock` (CLOCK_REALTIME or
 * CLOCK_MONOTONIC) for clocklock.  Return values are glibc's: 0; ETIMEDOUT once abstime has
 * passed; EINVAL for another clock, or for a tv_nsec outside 0..999999999 when the lock cannot be
 * taken at once; EDEADLK for an errorcheck lock the caller holds (a normal one times out).
 */
int rcl_mutex_timedlock(rcl_mutex_t *rcl_p_m, const struct timespec *rcl_p_abstime);
int rcl_mutex_clocklock(rcl_mutex_t *rcl_p_m, clockid_t rcl_p_clock, const struct timespec *rcl_p_abstime);

/*
 * Runs fn(ctx) with m held and returns fn's value.  Under RCL the section runs on m's server; when
 * ctx_size is non-zero and small enough the context is copied into the client's mailbox and back,
 * so fn must not depend on the address of *ctx.
 */
static inline int rcl_execute_sized(rcl_mutex_t *rcl_p_m, rcl_cs_fn rcl_p_fn, void *rcl_p_ctx, size_t rcl_p_ctx_size);
int rcl_execute_sized_slow(rcl_mutex_t *rcl_p_m, rcl_cs_fn rcl_p_fn, void *rcl_p_ctx, size_t rcl_p_ctx_size);
void rcl_execute_lock_failed(rcl_mutex_t *rcl_p_m, int rcl_p_err) __attribute__((__noreturn__, __cold__));
#define rcl_execute(rcl_p_m, rcl_p_fn, rcl_p_ctx) rcl_execute_sized((rcl_p_m), (rcl_p_fn), (rcl_p_ctx), 0)
#define RCL_EXECUTE(rcl_p_m, rcl_p_fn, rcl_p_ctxp) rcl_execute_sized((rcl_p_m), (rcl_p_fn), (rcl_p_ctxp), sizeof *(rcl_p_ctxp))

/*
 * Trylock form (paper, Algorithm 3): the context must begin with an int that receives 1 when the
 * lock was taken and 0 when it was busy; fn runs in both cases and must only touch protected data
 * when it was told it holds the lock.  The lock is released when fn returns.
 */
int rcl_execute_trylock(rcl_mutex_t *rcl_p_m, rcl_cs_fn rcl_p_fn, void *rcl_p_ctx);

/*
 * The same, for sections that must run on the calling thread because they use thread-local
 * state (__thread variables, pthread_getspecific, errno): under RCL the lock is taken in hybrid
 * mode and the section runs here.  rclify transform chooses these for such sections.
 */
int rcl_execute_local(rcl_mutex_t *rcl_p_m, rcl_cs_fn rcl_p_fn, void *rcl_p_ctx);

/*
 * Sections that may wait on a condition variable (rclify transform sees an rcl_cond_*wait in
 * them): a combining lock's combiner cannot block for another thread, so there they run on the
 * calling thread holding the lock; other algorithms run them as rcl_execute does.
 */
int rcl_execute_may_wait(rcl_mutex_t *rcl_p_m, rcl_cs_fn rcl_p_fn, void *rcl_p_ctx, size_t rcl_p_ctx_size);
#define RCL_EXECUTE_MAY_WAIT(rcl_p_m, rcl_p_fn, rcl_p_ctxp) rcl_execute_may_wait((rcl_p_m), (rcl_p_fn), (rcl_p_ctxp), sizeof *(rcl_p_ctxp))
int rcl_execute_trylock_local(rcl_mutex_t *rcl_p_m, rcl_cs_fn rcl_p_fn, void *rcl_p_ctx);

/* Condition variables: work with every algorithm, inside extracted sections and hybrid ones. */
int rcl_cond_init(rcl_cond_t *rcl_p_c, const pthread_condattr_t *rcl_p_attr);
int rcl_cond_destroy(rcl_cond_t *rcl_p_c);
int rcl_cond_wait(rcl_cond_t *rcl_p_c, rcl_mutex_t *rcl_p_m);
int rcl_cond_timedwait(rcl_cond_t *rcl_p_c, rcl_mutex_t *rcl_p_m, const struct timespec *rcl_p_abstime);
/* abstime on `clock` (CLOCK_REALTIME or CLOCK_MONOTONIC, else EINVAL), whatever c's condattr says. */
int rcl_cond_clockwait(rcl_cond_t *rcl_p_c, rcl_mutex_t *rcl_p_m, clockid_t rcl_p_clock, const struct timespec *rcl_p_abstime);
int rcl_cond_signal(rcl_cond_t *rcl_p_c);
int rcl_cond_broadcast(rcl_cond_t *rcl_p_c);

/* Introspection and statistics (also printed at exit when RCLIFY_STATS=1). */
const char *rcl_algorithm_name(int rcl_p_alg);
/* The lock ids of the program's lock_config.h, registered by each file that includes it (from a
 * constructor): an RCLIFY_LOCKS pattern that matches none of them stops the program at start-up,
 * on one line listing them (a typo would have left every lock it meant on its configuration). */
void rcl_known_lock_ids(const char *const *rcl_p_ids, int rcl_p_n);
int rcl_mutex_algorithm(rcl_mutex_t *rcl_p_m); /* resolves the lock if needed */
void rcl_stats_print(int rcl_p_fd);

/* Fast paths: under the posix algorithm a lock is one predictable branch and the pthread call. */
static inline int rcl_mutex_lock(rcl_mutex_t *rcl_p_m)
{
    if (__builtin_expect(__atomic_load_n(&rcl_p_m->alg, __ATOMIC_RELAXED) == RCL_ALG_POSIX, 1)) {
        int rcl_l_rc = pthread_mutex_lock(&rcl_p_m->posix);
        return __builtin_expect(rcl_l_rc == 0, 1) ? 0 : rcl_failed_elsewhere(rcl_p_m, rcl_l_rc, "pthread_mutex_lock");
    }
    return rcl_mutex_lock_slow(rcl_p_m);
}

static inline int rcl_mutex_unlock(rcl_mutex_t *rcl_p_m)
{
    if (__builtin_expect(__atomic_load_n(&rcl_p_m->alg, __ATOMIC_RELAXED) == RCL_ALG_POSIX, 1)) {
        int rcl_l_rc = pthread_mutex_unlock(&rcl_p_m->posix);
        return __builtin_expect(rcl_l_rc == 0, 1) ? 0 : rcl_failed_elsewhere(rcl_p_m, rcl_l_rc, "pthread_mutex_unlock");
    }
    return rcl_mutex_unlock_slow(rcl_p_m);
}

static inline int rcl_mutex_trylock(rcl_mutex_t *rcl_p_m)
{
    if (__builtin_expect(__atomic_load_n(&rcl_p_m->alg, __ATOMIC_RELAXED) == RCL_ALG_POSIX, 1))
        return pthread_mutex_trylock(&rcl_p_m->posix);
    return rcl_mutex_trylock_slow(rcl_p_m);
}

/* An extracted section under posix costs what the original code did: lock, call, unlock. */
static inline int rcl_execute_sized(rcl_mutex_t *rcl_p_m, rcl_cs_fn rcl_p_fn, void *rcl_p_ctx, size_t rcl_p_ctx_size)
{
    if (__builtin_expect(__atomic_load_n(&rcl_p_m->alg, __ATOMIC_RELAXED) == RCL_ALG_POSIX, 1)) {
        int rcl_l_rc = pthread_mutex_lock(&rcl_p_m->posix);
        if (__builtin_expect(rcl_l_rc != 0, 0))
            rcl_execute_lock_failed(rcl_p_m, rcl_l_rc);
        int rcl_l_ret = rcl_p_fn(rcl_p_ctx);
        pthread_mutex_unlock(&rcl_p_m->posix);
        return rcl_l_ret;
    }
    return rcl_execute_sized_slow(rcl_p_m, rcl_p_fn, rcl_p_ctx, rcl_p_ctx_size);
}

/*
 * Reader-writer locks (pthread_rwlock_t -> rcl_rwlock_t).  Each carries a lock_config.h entry
 * like a mutex, and its algorithm decides how readers run:
 *   posix      the pthread rwlock itself (`posix` below): readers in parallel, writers alone;
 *   any other  one exclusive lock of that algorithm (`lock` below), taken by readers and writers
 *              alike: readers are serialised.  An rwlock promises a writer exclusion and a reader
 *              exclusion from writers; an exclusive lock keeps both promises (it excludes more),
 *              so every section still sees what it saw.  What it breaks is progress that needs two
 *              readers inside at once: a reader that waits, holding the lock, for another reader
 *              (a barrier, a semaphore, a flag set by a reader) waits for ever; such a lock stays
 *              posix (docs/runtime.md, "Reader-writer locks").  A thread that takes the read lock
 *              it already holds (allowed by pthread) is let in again: the exclusive lock is of
 *              the recursive kind.
 * The timed calls are those of the lock in force: the pthread rwlock's, or the exclusive lock's
 * timed lock.  Release either mode with rcl_rwlock_unlock.  Return values are pthread's.
 * Declared where <pthread.h> declares pthread_rwlock_t (not in strict ISO C modes without a
 * POSIX feature macro).
 */
#ifdef PTHREAD_RWLOCK_INITIALIZER
typedef struct rcl_rwlock {
    rcl_mutex_t lock;         /* the configuration, and the lock itself on every algorithm but posix */
    pthread_rwlock_t posix;   /* the lock under posix */
} rcl_rwlock_t;

/* The exclusive lock is of the recursive kind, whose static initializer only _GNU_SOURCE names:
 * its glibc spelling is used where that is not defined. */
#if defined(PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP)
#define RCL_RWLOCK_MUTEX_INIT_ PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP
#elif defined(__PTHREAD_MUTEX_INITIALIZER)
#define RCL_RWLOCK_MUTEX_INIT_ { { __PTHREAD_MUTEX_INITIALIZER(PTHREAD_MUTEX_RECURSIVE_NP) } }
#else
#error "rclify.h: no static initializer of a recursive pthread mutex on this C library"
#endif
#define RCL_RWLOCK_INITIALIZER(rcl_p_cfg) \
    { { RCL_ALG_UNRESOLVED, PTHREAD_MUTEX_RECURSIVE_NP, RCL_RWLOCK_MUTEX_INIT_, NULL, rcl_p_cfg }, PTHREAD_RWLOCK_INITIALIZER }

int rcl_rwlock_init(rcl_rwlock_t *rcl_p_rw, const pthread_rwlockattr_t *rcl_p_attr, const rcl_lock_config_t *rcl_p_config);
int rcl_rwlock_destroy(rcl_rwlock_t *rcl_p_rw);
int rcl_rwlock_rdlock_slow(rcl_rwlock_t *rcl_p_rw);
int rcl_rwlock_wrlock_slow(rcl_rwlock_t *rcl_p_rw);
int rcl_rwlock_tryrdlock_slow(rcl_rwlock_t *rcl_p_rw);
int rcl_rwlock_trywrlock_slow(rcl_rwlock_t *rcl_p_rw);
int rcl_rwlock_unlock_slow(rcl_rwlock_t *rcl_p_rw);
int rcl_rwlock_timedrdlock(rcl_rwlock_t *rcl_p_rw, const struct timespec *rcl_p_abstime);
int rcl_rwlock_timedwrlock(rcl_rwlock_t *rcl_p_rw, const struct timespec *rcl_p_abstime);
int rcl_rwlock_clockrdlock(rcl_rwlock_t *rcl_p_rw, clockid_t rcl_p_clock, const struct timespec *rcl_p_abstime);
int rcl_rwlock_clockwrlock(rcl_rwlock_t *rcl_p_rw, clockid_t rcl_p_clock, const struct timespec *rcl_p_abstime);
/* resolves the lock if needed: posix when readers run in parallel */
int rcl_rwlock_algorithm(rcl_rwlock_t *rcl_p_rw);

/*
 * Extracted sections of an rwlock: fn(ctx) runs holding rw in read or in write mode, as
 * rcl_execute_sized does for a mutex (under an algorithm other than posix both are that
 * algorithm's rcl_execute_sized: the section may run on an RCL server or a combiner).  The
 * _local forms run the section on the calling thread (rcl_execute_local).
 */
int rcl_rwlock_execute_read_slow(rcl_rwlock_t *rcl_p_rw, rcl_cs_fn rcl_p_fn, void *rcl_p_ctx, size_t rcl_p_ctx_size);
int rcl_rwlock_execute_write_slow(rcl_rwlock_t *rcl_p_rw, rcl_cs_fn rcl_p_fn, void *rcl_p_ctx, size_t rcl_p_ctx_size);
int rcl_rwlock_execute_read_local(rcl_rwlock_t *rcl_p_rw, rcl_cs_fn rcl_p_fn, void *rcl_p_ctx);
int rcl_rwlock_execute_write_local(rcl_rwlock_t *rcl_p_rw, rcl_cs_fn rcl_p_fn, void *rcl_p_ctx);
#define RCL_RWLOCK_EXECUTE_READ(rcl_p_rw, rcl_p_fn, rcl_p_ctxp) \
    rcl_rwlock_execute_read((rcl_p_rw), (rcl_p_fn), (rcl_p_ctxp), sizeof *(rcl_p_ctxp))
#define RCL_RWLOCK_EXECUTE_WRITE(rcl_p_rw, rcl_p_fn, rcl_p_ctxp) \
    rcl_rwlock_execute_write((rcl_p_rw), (rcl_p_fn), (rcl_p_ctxp), sizeof *(rcl_p_ctxp))

/* Fast paths: under posix one predictable branch and the pthread rwlock call. */
#define RCL_RWLOCK_IS_POSIX_(rcl_p_rw) \
    __builtin_expect(__atomic_load_n(&(rcl_p_rw)->lock.alg, __ATOMIC_RELAXED) == RCL_ALG_POSIX, 1)

static inline int rcl_rwlock_rdlock(rcl_rwlock_t *rcl_p_rw)
{
    if (RCL_RWLOCK_IS_POSIX_(rcl_p_rw))
        return pthread_rwlock_rdlock(&rcl_p_rw->posix);
    return rcl_rwlock_rdlock_slow(rcl_p_rw);
}

static inline int rcl_rwlock_wrlock(rcl_rwlock_t *rcl_p_rw)
{
    if (RCL_RWLOCK_IS_POSIX_(rcl_p_rw))
        return pthread_rwlock_wrlock(&rcl_p_rw->posix);
    return rcl_rwlock_wrlock_slow(rcl_p_rw);
}

static inline int rcl_rwlock_tryrdlock(rcl_rwlock_t *rcl_p_rw)
{
    if (RCL_RWLOCK_IS_POSIX_(rcl_p_rw))
        return pthread_rwlock_tryrdlock(&rcl_p_rw->posix);
    return rcl_rwlock_tryrdlock_slow(rcl_p_rw);
}

static inline int rcl_rwlock_trywrlock(rcl_rwlock_t *rcl_p_rw)
{
    if (RCL_RWLOCK_IS_POSIX_(rcl_p_rw))
        return pthread_rwlock_trywrlock(&rcl_p_rw->posix);
    return rcl_rwlock_trywrlock_slow(rcl_p_rw);
}

static inline int rcl_rwlock_unlock(rcl_rwlock_t *rcl_p_rw)
{
    if (RCL_RWLOCK_IS_POSIX_(rcl_p_rw))
        return pthread_rwlock_unlock(&rcl_p_rw->posix);
    return rcl_rwlock_unlock_slow(rcl_p_rw);
}

static inline int rcl_rwlock_execute_read(rcl_rwlock_t *rcl_p_rw, rcl_cs_fn rcl_p_fn, void *rcl_p_ctx, size_t rcl_p_ctx_size)
{
    if (RCL_RWLOCK_IS_POSIX_(rcl_p_rw)) {
        int rcl_l_rc = pthread_rwlock_rdlock(&rcl_p_rw->posix);
        if (__builtin_expect(rcl_l_rc != 0, 0))
            rcl_execute_lock_failed(&rcl_p_rw->lock, rcl_l_rc);
        int rcl_l_ret = rcl_p_fn(rcl_p_ctx);
        pthread_rwlock_unlock(&rcl_p_rw->posix);
        return rcl_l_ret;
    }
    return rcl_rwlock_execute_read_slow(rcl_p_rw, rcl_p_fn, rcl_p_ctx, rcl_p_ctx_size);
}

static inline int rcl_rwlock_execute_write(rcl_rwlock_t *rcl_p_rw, rcl_cs_fn rcl_p_fn, void *rcl_p_ctx, size_t rcl_p_ctx_size)
{
    if (RCL_RWLOCK_IS_POSIX_(rcl_p_rw)) {
        int rcl_l_rc = pthread_rwlock_wrlock(&rcl_p_rw->posix);
        if (__builtin_expect(rcl_l_rc != 0, 0))
            rcl_execute_lock_failed(&rcl_p_rw->lock, rcl_l_rc);
        int rcl_l_ret = rcl_p_fn(rcl_p_ctx);
        pthread_rwlock_unlock(&rcl_p_rw->posix);
        return rcl_l_ret;
    }
    return rcl_rwlock_execute_write_slow(rcl_p_rw, rcl_p_fn, rcl_p_ctx, rcl_p_ctx_size);
}
#endif /* PTHREAD_RWLOCK_INITIALIZER */

#ifdef __cplusplus
}
#endif

/*
 * Type guard: a pthread_mutex_* / pthread_cond_* call given an rcl_mutex_t * or rcl_cond_t * (a
 * call the rewrite missed) is a compile error that names the rcl_ function to call instead, where
 * gcc 12 would only warn about the pointer type and the program would run, silently wrong, on
 * the bytes of an rcl_mutex_t.  Each function gets a function-like macro of the same name that
 * checks the type of its mutex / cond arguments (in an unevaluated sizeof: no code, no double
 * evaluation) and calls the real function.  Calls on pthread types are unchanged; the function's
 * address is still `pthread_mutex_lock` or `&pthread_mutex_lock` (a function-like macro only
 * expands before a parenthesis), and `(pthread_mutex_lock)(...)` calls it without the check.
 *
 * C only (with GNU C: gcc, clang): in C++ passing an rcl_mutex_t * to a pthread function is
 * already an error.  C11 and GNU modes get the message from a _Static_assert; strict C99 from the
 * name of a bit-field of negative width (pthread_mutex_lock_on_an_rcl_type__see_rclify_h).
 * A file that declares or defines these functions itself after including rclify.h (an
 * interposer) defines RCLIFY_NO_TYPE_GUARD first, or writes their names in parentheses.
 */
#if !defined(__cplusplus) && defined(__GNUC__) && !defined(RCLIFY_NO_TYPE_GUARD)
#if (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L) || !defined(__STRICT_ANSI__)
#define RCL_TYPE_GUARD_(rcl_p_fn, rcl_p_x, rcl_p_T, rcl_p_what)                        \
    (__extension__(void)sizeof(struct {                                                \
        _Static_assert(!_Generic((rcl_p_x), rcl_p_T *: 1, const rcl_p_T *: 1, default: 0), \
                       #rcl_p_fn "() on an " #rcl_p_T " *: " rcl_p_what " (see rclify.h)"); \
        int rcl_type_guard_;                                                           \
    }))
#else /* strict C99: glibc turns _Static_assert into a macro that does not fit in a struct */
#define RCL_TYPE_GUARD_(rcl_p_fn, rcl_p_x, rcl_p_T, rcl_p_what)                        \
    (__extension__(void)sizeof(struct {                                                \
        int rcl_p_fn##_on_an_rcl_type__see_rclify_h : _Generic((rcl_p_x), rcl_p_T *: -1, const rcl_p_T *: -1, default: 1); \
    }))
#endif
#define RCL_GUARD_M_(rcl_p_fn, rcl_p_m, rcl_p_what) RCL_TYPE_GUARD_(rcl_p_fn, rcl_p_m, rcl_mutex_t, rcl_p_what)
#define RCL_GUARD_C_(rcl_p_fn, rcl_p_c, rcl_p_what) RCL_TYPE_GUARD_(rcl_p_fn, rcl_p_c, rcl_cond_t, rcl_p_what)
#define RCL_USE_(rcl_p_f) "call " #rcl_p_f "() instead"
#define RCL_NOT_ROBUST_ RCL_USE_(rcl_mutex_consistent)
#define RCL_NO_CEILING_ "call rcl_mutex_getprioceiling() / rcl_mutex_setprioceiling() instead"

#ifndef pthread_mutex_init
#define pthread_mutex_init(rcl_p_m, rcl_p_a) \
    (RCL_GUARD_M_(pthread_mutex_init, rcl_p_m, RCL_USE_(rcl_mutex_init)), pthread_mutex_init(rcl_p_m, rcl_p_a))
#endif
#ifndef pthread_mutex_destroy
#define pthread_mutex_destroy(rcl_p_m) \
    (RCL_GUARD_M_(pthread_mutex_destroy, rcl_p_m, RCL_USE_(rcl_mutex_destroy)), pthread_mutex_destroy(rcl_p_m))
#endif
#ifndef pthread_mutex_lock
#define pthread_mutex_lock(rcl_p_m) \
    (RCL_GUARD_M_(pthread_mutex_lock, rcl_p_m, RCL_USE_(rcl_mutex_lock)), pthread_mutex_lock(rcl_p_m))
#endif
#ifndef pthread_mutex_trylock
#define pthread_mutex_trylock(rcl_p_m) \
    (RCL_GUARD_M_(pthread_mutex_trylock, rcl_p_m, RCL_USE_(rcl_mutex_trylock)), pthread_mutex_trylock(rcl_p_m))
#endif
#ifndef pthread_mutex_unlock
#define pthread_mutex_unlock(rcl_p_m) \
    (RCL_GUARD_M_(pthread_mutex_unlock, rcl_p_m, RCL_USE_(rcl_mutex_unlock)), pthread_mutex_unlock(rcl_p_m))
#endif
#ifndef pthread_mutex_timedlock
#define pthread_mutex_timedlock(rcl_p_m, rcl_p_t) \
    (RCL_GUARD_M_(pthread_mutex_timedlock, rcl_p_m, RCL_USE_(rcl_mutex_timedlock)), pthread_mutex_timedlock(rcl_p_m, rcl_p_t))
#endif
#ifndef pthread_mutex_clocklock
#define pthread_mutex_clocklock(rcl_p_m, rcl_p_k, rcl_p_t) \
    (RCL_GUARD_M_(pthread_mutex_clocklock, rcl_p_m, RCL_USE_(rcl_mutex_clocklock)), pthread_mutex_clocklock(rcl_p_m, rcl_p_k, rcl_p_t))
#endif
#ifndef pthread_mutex_consistent
#define pthread_mutex_consistent(rcl_p_m) \
    (RCL_GUARD_M_(pthread_mutex_consistent, rcl_p_m, RCL_NOT_ROBUST_), pthread_mutex_consistent(rcl_p_m))
#endif
#ifndef pthread_mutex_consistent_np
#define pthread_mutex_consistent_np(rcl_p_m) \
    (RCL_GUARD_M_(pthread_mutex_consistent_np, rcl_p_m, RCL_NOT_ROBUST_), pthread_mutex_consistent_np(rcl_p_m))
#endif
#ifndef pthread_mutex_getprioceiling
#define pthread_mutex_getprioceiling(rcl_p_m, rcl_p_p) \
    (RCL_GUARD_M_(pthread_mutex_getprioceiling, rcl_p_m, RCL_NO_CEILING_), pthread_mutex_getprioceiling(rcl_p_m, rcl_p_p))
#endif
#ifndef pthread_mutex_setprioceiling
#define pthread_mutex_setprioceiling(rcl_p_m, rcl_p_p, rcl_p_o) \
    (RCL_GUARD_M_(pthread_mutex_setprioceiling, rcl_p_m, RCL_NO_CEILING_), pthread_mutex_setprioceiling(rcl_p_m, rcl_p_p, rcl_p_o))
#endif

#ifndef pthread_cond_init
#define pthread_cond_init(rcl_p_c, rcl_p_a) \
    (RCL_GUARD_C_(pthread_cond_init, rcl_p_c, RCL_USE_(rcl_cond_init)), pthread_cond_init(rcl_p_c, rcl_p_a))
#endif
#ifndef pthread_cond_destroy
#define pthread_cond_destroy(rcl_p_c) \
    (RCL_GUARD_C_(pthread_cond_destroy, rcl_p_c, RCL_USE_(rcl_cond_destroy)), pthread_cond_destroy(rcl_p_c))
#endif
#ifndef pthread_cond_signal
#define pthread_cond_signal(rcl_p_c) \
    (RCL_GUARD_C_(pthread_cond_signal, rcl_p_c, RCL_USE_(rcl_cond_signal)), pthread_cond_signal(rcl_p_c))
#endif
#ifndef pthread_cond_broadcast
#define pthread_cond_broadcast(rcl_p_c) \
    (RCL_GUARD_C_(pthread_cond_broadcast, rcl_p_c, RCL_USE_(rcl_cond_broadcast)), pthread_cond_broadcast(rcl_p_c))
#endif
#ifndef pthread_cond_wait
#define pthread_cond_wait(rcl_p_c, rcl_p_m)                           \
    (RCL_GUARD_C_(pthread_cond_wait, rcl_p_c, RCL_USE_(rcl_cond_wait)), \
     RCL_GUARD_M_(pthread_cond_wait, rcl_p_m, RCL_USE_(rcl_cond_wait)), pthread_cond_wait(rcl_p_c, rcl_p_m))
#endif
#ifndef pthread_cond_timedwait
#define pthread_cond_timedwait(rcl_p_c, rcl_p_m, rcl_p_t)                       \
    (RCL_GUARD_C_(pthread_cond_timedwait, rcl_p_c, RCL_USE_(rcl_cond_timedwait)), \
     RCL_GUARD_M_(pthread_cond_timedwait, rcl_p_m, RCL_USE_(rcl_cond_timedwait)), pthread_cond_timedwait(rcl_p_c, rcl_p_m, rcl_p_t))
#endif
#ifndef pthread_cond_clockwait
#define pthread_cond_clockwait(rcl_p_c, rcl_p_m, rcl_p_k, rcl_p_t)              \
    (RCL_GUARD_C_(pthread_cond_clockwait, rcl_p_c, RCL_USE_(rcl_cond_clockwait)), \
     RCL_GUARD_M_(pthread_cond_clockwait, rcl_p_m, RCL_USE_(rcl_cond_clockwait)), pthread_cond_clockwait(rcl_p_c, rcl_p_m, rcl_p_k, rcl_p_t))
#endif
#endif /* type guard */

#endif /* RCLIFY_H */
