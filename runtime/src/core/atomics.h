/*
 * Atomics, cache-line padding, spinning and futexes: the only low-level header of the runtime.
 *
 * Every shared word is accessed through these macros (GCC __atomic builtins, the same memory model
 * as C11 <stdatomic.h>) with its ordering spelled out, so that each acquire/release point of a
 * protocol is visible where it happens.  Plain loads/stores are only used on data owned by one
 * thread or published by one of these operations.
 */
#ifndef RCLIFY_ATOMICS_H
#define RCLIFY_ATOMICS_H

#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RCL_CACHE_LINE 64
#define RCL_ALIGNED __attribute__((aligned(RCL_CACHE_LINE)))

#define ld_relaxed(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ld_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define st_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define st_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define add_relaxed(p, v) __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)
#define add_acq_rel(p, v) __atomic_add_fetch((p), (v), __ATOMIC_ACQ_REL)
#define xchg_acq_rel(p, v) __atomic_exchange_n((p), (v), __ATOMIC_ACQ_REL)
/* Compare-and-swap that acquires on success (taking a lock or claiming a slot). */
#define cas_acquire(p, expp, v) \
    __atomic_compare_exchange_n((p), (expp), (v), 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)
#define cas_acq_rel(p, expp, v) \
    __atomic_compare_exchange_n((p), (expp), (v), 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)
/* Full fence: the store-then-load (Dekker) pattern of idle parking needs it.  ThreadSanitizer does
 * not model fences: there a seq_cst read-modify-write of a dummy word (a full barrier on x86) is
 * used instead. */
#ifdef RCLIFY_TSAN
static int rcl_fence_word __attribute__((unused));
#define fence_seq_cst() ((void)__atomic_fetch_add(&rcl_fence_word, 0, __ATOMIC_SEQ_CST))
#else
#define fence_seq_cst() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

/* Stores v in a word only this thread writes, unless it already holds v: a store to a shared
 * line costs a transfer when another core has read it since, a load of it does not. */
#define store_if_changed(p, v)                  \
    do {                                        \
        __typeof__(*(p)) v_ = (v);              \
        if (ld_relaxed(p) != v_)                \
            st_relaxed((p), v_);                \
    } while (0)

/* Relaxed increment of a statistics counter owned by one thread at a time (no RMW needed). */
#define stat_inc(p, v) st_relaxed((p), ld_relaxed(p) + (v))

static inline void rcl_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

static inline uint64_t rcl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Futexes (process-private).  Waits return 0, or -1 with errno (EAGAIN, EINTR, ETIMEDOUT). */
static inline int rcl_futex_wait(int *word, int expected, const struct timespec *rel)
{
    return (int)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, rel, NULL, 0);
}

/* Absolute deadline on `clock` (CLOCK_REALTIME or CLOCK_MONOTONIC); NULL waits forever. */
static inline int rcl_futex_wait_abs(int *word, int expected, const struct timespec *abs, int clock)
{
    int op = FUTEX_WAIT_BITSET_PRIVATE | (clock == CLOCK_REALTIME ? FUTEX_CLOCK_REALTIME : 0);
    return (int)syscall(SYS_futex, word, op, expected, abs, NULL, FUTEX_BITSET_MATCH_ANY);
}

static inline int rcl_futex_wake(int *word, int n)
{
    return (int)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* Sleeps of the lock paths, through syscall() because nanosleep() and clock_nanosleep() are
 * cancellation points and pthread_mutex_lock/timedlock are not: a thread cancelled while it
 * waits for a lock would leave the lock's queue with its node in it. */
static inline void rcl_sleep_ns(long ns)
{
    struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
    syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
}

static inline void rcl_sleep_until(clockid_t clock, const struct timespec *abstime)
{
    syscall(SYS_clock_nanosleep, clock, TIMER_ABSTIME, abstime, NULL);
}

/* Deadlines of the timed operations: the clocks pthread_mutex_clocklock / pthread_cond_clockwait
 * accept, and a well-formed absolute time. */
static inline int rcl_clock_valid(clockid_t clock)
{
    return clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC;
}

static inline int rcl_abstime_valid(const struct timespec *abstime)
{
    return abstime->tv_nsec >= 0 && abstime->tv_nsec < 1000000000L;
}

/* Nanoseconds from now until abstime on clock; 0 or less once it has passed. */
static inline int64_t rcl_ns_until(clockid_t clock, const struct timespec *abstime)
{
    struct timespec now;
    clock_gettime(clock, &now);
    return (int64_t)(abstime->tv_sec - now.tv_sec) * 1000000000 + (abstime->tv_nsec - now.tv_nsec);
}

#endif
