/*
 * The waiting policies (core/wait.h).  The only shared state is the count of threads spinning
 * under `auto`, read to decide whether spinning can still pay off.  A fork() child starts it
 * again from 0: the threads counted at the fork do not exist there (left counted, they would make
 * every `auto` wait of the child park at once, as if CPUs were oversubscribed, for good).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#include "core/runtime.h"
#include "core/wait.h"

static int spinning; /* threads in the spinning phase of an `auto` wait */

int rcl_cpu_count(void)
{
    static int cpus;
    int n = ld_relaxed(&cpus);
    if (n == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 0 ? (int)c : 1;
        st_relaxed(&cpus, n);
    }
    return n;
}

/* How many pauses to spin before yielding or sleeping. */
static unsigned spin_budget(int policy)
{
    switch (policy) {
    case RCL_WAIT_SPIN:
        return UINT_MAX;
    case RCL_WAIT_YIELD:
    case RCL_WAIT_PARK:
        return RCL_SPIN_SHORT;
    default: /* auto: spin only while spinners leave a CPU to the holder */
        return ld_relaxed(&spinning) < rcl_cpu_count() ? RCL_SPIN_LONG : RCL_SPIN_SHORT / 4;
    }
}

/* Spins while *word == value for the policy's budget; returns whether it changed. */
static int spin_while(int *word, int value, int policy)
{
    unsigned budget = spin_budget(policy);
    int counted = policy == RCL_WAIT_AUTO;
    if (counted)
        add_relaxed(&spinning, 1);
    int changed = 0;
    for (unsigned i = 0; i < budget; i++) {
        if (ld_acquire(word) != value) {
            changed = 1;
            break;
        }
        rcl_pause();
    }
    if (counted)
        add_relaxed(&spinning, -1);
    return changed;
}

void rcl_flag_wait(int *flag, int policy)
{
    if (spin_while(flag, RCL_FLAG_WAITING, policy))
        return;
    if (policy == RCL_WAIT_SPIN || policy == RCL_WAIT_YIELD) {
        while (ld_acquire(flag) == RCL_FLAG_WAITING)
            policy == RCL_WAIT_SPIN ? rcl_pause() : (void)sched_yield();
        return;
    }
    int expected = RCL_FLAG_WAITING;
    /* Acquire on failure too: failing means granted meanwhile, and the granter's writes (the lock
     * handed over, a combined section's result) must be visible when this returns. */
    if (!__atomic_compare_exchange_n(flag, &expected, RCL_FLAG_PARKED, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return; /* granted meanwhile */
    while (ld_acquire(flag) != RCL_FLAG_GRANTED)
        rcl_futex_wait(flag, RCL_FLAG_PARKED, NULL);
}

void rcl_flag_grant(int *flag)
{
    if (xchg_acq_rel(flag, RCL_FLAG_GRANTED) == RCL_FLAG_PARKED)
        rcl_futex_wake(flag, 1);
}

int rcl_word_wait(int *word, int value, int *sleepers, int policy, clockid_t clock,
                  const struct timespec *abstime)
{
    if (abstime && !rcl_abstime_valid(abstime))
        return EINVAL;
    for (;;) {
        if (spin_while(word, value, policy))
            return 0;
        if (abstime && rcl_ns_until(clock, abstime) <= 0)
            return ETIMEDOUT;
        if (policy == RCL_WAIT_SPIN)
            continue;
        if (policy == RCL_WAIT_YIELD) {
            sched_yield();
            continue;
        }
        /* Counted in sleepers before the last look (Dekker with rcl_word_wake's fence): a change
         * made after that look finds the count and wakes us, one made before it is seen. */
        __atomic_add_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
        int rc = 0;
        if (__atomic_load_n(word, __ATOMIC_SEQ_CST) == value)
            rc = rcl_futex_wait_abs(word, value, abstime, (int)clock);
        int err = rc == 0 ? 0 : errno;
        __atomic_add_fetch(sleepers, -1, __ATOMIC_SEQ_CST);
        if (err == ETIMEDOUT)
            return ETIMEDOUT;
    }
}

void rcl_word_wake(int *word, int *sleepers, int n)
{
    fence_seq_cst();
    if (__atomic_load_n(sleepers, __ATOMIC_SEQ_CST) != 0)
        rcl_futex_wake(word, n);
}

void rcl_wait_step(unsigned *spins, int policy)
{
    unsigned n = (*spins)++;
    if (policy == RCL_WAIT_SPIN || n < spin_budget(policy)) {
        rcl_pause();
        return;
    }
    if (policy == RCL_WAIT_YIELD || n < spin_budget(policy) + 64) {
        sched_yield();
        return;
    }
    /* park / auto with nothing to sleep on: short sleeps, growing to 1 ms */
    unsigned shift = n - spin_budget(policy) - 64;
    rcl_sleep_ns(1000L << (shift < 10 ? shift : 10));
}

static void after_fork_child(void)
{
    st_relaxed(&spinning, 0); /* the child's one thread is in fork(), not spinning */
}

__attribute__((constructor(104))) static void rcl_wait_init(void)
{
    pthread_atfork(NULL, NULL, after_fork_child);
}
