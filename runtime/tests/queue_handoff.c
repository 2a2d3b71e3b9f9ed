/*
 * The queue and spin locks (ticket, mcs, clh, mcstp) under each waiting policy (auto, spin,
 * yield, park), which the other tests only run under auto:
 *   - FIFO hand-off: the main thread holds the lock while K threads arrive one at a time, each
 *     started only once the previous one is asleep in the kernel inside its lock call (/proc
 *     shows it asleep in a futex wait: it has enqueued and parked).  The main thread then releases, and the
 *     threads must enter in arrival order.  Run under park and auto (a thread that only spins or
 *     yields never shows as asleep).  A trylock right after the release must find the lock
 *     busy: ticket, mcs and clh hand it straight to the first waiter, asleep as it is (a lock that
 *     wakes a sleeper and lets it race, as ttas, fails here).  mcstp is checked too: with nobody
 *     arriving to steal the lock its queue hands over in order as well, but its release leaves the
 *     lock free, for whichever thread runs first.
 *   - mutual exclusion, oversubscribed: 4x the CPUs (at least 8) threads, each running sections
 *     that increment a plain counter through a read-modify-write spread over other cache lines
 *     and check that nobody else is inside; mostly lock/unlock, with trylock and clocklock mixed
 *     in (falling back to lock when busy or timed out).  Exact counts.  Under spin, one thread
 *     per CPU with as many sections, then the oversubscribed run with few.
 *   - trylock storm (auto and park): half the threads retry trylock, half lock; exact counts.
 *   - condition variables: a bounded buffer with 2 producers and 2 consumers per lock and policy
 *     (releases and reacquisitions around each wait go through the policy as well).
 */
/* The spin runs hand over at the scheduler's pace: more time than the default watchdog allows,
 * still within tests/run.sh's limit. */
#define T_TIMEOUT_S 100
#include "test_util.h"

#include <sys/syscall.h>

static const int queue_algs[] = { RCL_ALG_TICKET, RCL_ALG_MCS, RCL_ALG_CLH, RCL_ALG_MCSTP };
#define NQUEUE_ALGS ((int)(sizeof queue_algs / sizeof queue_algs[0]))
static const char *const policy_names[RCL_WAIT_COUNT] = { "auto", "spin", "yield", "park" };

static void init_lock(rcl_mutex_t *m, const char *id, int alg, int policy)
{
    rcl_lock_config_t cfg = RCL_LOCK_CONFIG_POLICY(id, alg, 0, -1, policy);
    CHECK_EQ(rcl_mutex_init(m, NULL, &cfg), 0, "rcl_mutex_init");
    CHECK(rcl_mutex_algorithm(m) == alg, "lock on %s, configured %s", rcl_algorithm_name(rcl_mutex_algorithm(m)),
          rcl_algorithm_name(alg));
}

/* ---- FIFO hand-off ---- */

#define FIFO_THREADS 6

struct fifo {
    rcl_mutex_t m;
    int tid[FIFO_THREADS];     /* published by each thread before it locks */
    int order[FIFO_THREADS];   /* protected by m */
    int entered;               /* protected by m */
};

struct fifo_arg {
    struct fifo *f;
    int index;
};

static void *fifo_thread(void *p)
{
    struct fifo_arg *a = p;
    __atomic_store_n(&a->f->tid[a->index], (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
    CHECK_EQ(rcl_mutex_lock(&a->f->m), 0, "lock");
    a->f->order[a->f->entered++] = a->index;
    CHECK_EQ(rcl_mutex_unlock(&a->f->m), 0, "unlock");
    return NULL;
}

/* The state letter of thread tid in /proc (R running, S asleep, ...), or 0. */
static char thread_state(int tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *end = strrchr(buf, ')'); /* after the command name, which may hold anything */
    return end && end[1] == ' ' ? end[2] : 0;
}

/* Whether thread tid sleeps in a futex wait (the syscall it is blocked in, where /proc says). */
static int parked(int tid)
{
    if (thread_state(tid) != 'S')
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1; /* no syscall file: the state has to do */
    long nr = -1;
    int got = fscanf(f, "%ld", &nr);
    fclose(f);
    return got != 1 || nr == SYS_futex;
}

/* Asleep in a futex means parked inside rcl_mutex_lock: the only call after publishing the tid
 * that blocks, and it parks only after enqueuing.  Seen twice, 1 ms apart, in case a lock inside
 * malloc blocked it for a moment. */
static void wait_until_parked(int tid)
{
    for (;;) {
        if (parked(tid)) {
            usleep(1000);
            if (parked(tid))
                return;
        }
        usleep(200);
    }
}

static void check_fifo(int alg, int policy)
{
    static struct fifo f;
    struct fifo_arg args[FIFO_THREADS];
    pthread_t th[FIFO_THREADS];
    memset(&f, 0, sizeof f);
    init_lock(&f.m, "queue_handoff.c:fifo", alg, policy);
    CHECK_EQ(rcl_mutex_lock(&f.m), 0, "main thread's lock");
    for (int i = 0; i < FIFO_THREADS; i++) {
        args[i] = (struct fifo_arg){ &f, i };
        CHECK_EQ(pthread_create(&th[i], NULL, fifo_thread, &args[i]), 0, "pthread_create");
        int tid;
        while ((tid = __atomic_load_n(&f.tid[i], __ATOMIC_ACQUIRE)) == 0)
            sched_yield();
        wait_until_parked(tid);
    }
    CHECK_EQ(rcl_mutex_unlock(&f.m), 0, "main thread's unlock");
    /* A FIFO queue lock hands the lock straight to the first waiter, and each waiter to the
     * next: it is never free until the last has left, however long each takes to wake up (a
     * trylock finds it free only if this thread was descheduled that long).  mcstp leaves it
     * free instead (the head takes it when it runs), so a running thread may take it first. */
    int rc = rcl_mutex_trylock(&f.m);
    int handed_over = rc == EBUSY;
    if (rc == 0) {
        if (alg != RCL_ALG_MCSTP)
            CHECK(f.entered == FIFO_THREADS, "%s/%s: a trylock right after the release took the lock while %d waiters "
                  "had not entered: the release did not hand it to the first waiter", rcl_algorithm_name(alg),
                  policy_names[policy], FIFO_THREADS - f.entered);
        CHECK_EQ(rcl_mutex_unlock(&f.m), 0, "unlock after the trylock");
    } else {
        CHECK_EQ(rc, EBUSY, "trylock right after the release");
    }
    for (int i = 0; i < FIFO_THREADS; i++)
        pthread_join(th[i], NULL);
    CHECK_EQ(f.entered, FIFO_THREADS, "threads that entered");
    for (int i = 0; i < FIFO_THREADS; i++)
        CHECK(f.order[i] == i, "%s/%s: entry %d was thread %d, expected arrival order 0..%d", rcl_algorithm_name(alg),
              policy_names[policy], i, f.order[i], FIFO_THREADS - 1);
    CHECK_EQ(rcl_mutex_destroy(&f.m), 0, "destroy");
    OK("%-6s %-5s %d parked waiters entered in arrival order; the release %s", rcl_algorithm_name(alg),
       policy_names[policy], FIFO_THREADS,
       handed_over ? "handed the lock to the first waiter" : "left the lock free to a trylock");
}

/* ---- mutual exclusion, oversubscribed ---- */

#define NLINES 4
/* Sections per thread under the spin policy with more threads than CPUs, where every hand-off to a
 * descheduled spinner waits for the scheduler (about 100 hand-offs a second on 2 busy CPUs). */
#define SPIN_ITERS ITERS(25)

struct shared {
    rcl_mutex_t m;
    long counter;
    int inside;
    long violations;
    long line[NLINES][8]; /* one cache line each */
    int iters;
    long busy, timeouts; /* trylocks that found the lock busy, timedlocks that timed out */
    int nthreads;
    int started; /* threads at the start line: all start together */
};

static void section_body(struct shared *s)
{
    volatile int *inside = &s->inside;
    if ((*inside)++ != 0)
        s->violations++;
    long c = *(volatile long *)&s->counter;
    for (int i = 0; i < NLINES; i++) {
        s->line[i][0]++;
        for (int k = 0; k < 10; k++) /* widen the window in which an intruder shows */
            t_cpu_relax();
    }
    *(volatile long *)&s->counter = c + 1;
    (*inside)--;
}

static int cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 2 ? 2 : n > 16 ? 16 : (int)n;
}

static int oversubscribed_threads(void)
{
    return 4 * cpus() < 8 ? 8 : 4 * cpus();
}

static void stress_worker(int index, void *arg)
{
    struct shared *s = arg;
    long busy = 0, timeouts = 0;
    __atomic_add_fetch(&s->started, 1, __ATOMIC_ACQ_REL);
    t_wait_flag(&s->started, s->nthreads);
    for (int i = 0; i < s->iters; i++) {
        int rc;
        switch ((i + index) % 8) {
        case 3: /* trylock, then lock if busy */
            rc = rcl_mutex_trylock(&s->m);
            if (rc == EBUSY) {
                busy++;
                rc = rcl_mutex_lock(&s->m);
            }
            CHECK_EQ(rc, 0, "trylock / lock");
            break;
        case 6: { /* timedlock with a short deadline, then lock if it timed out */
            struct timespec deadline;
            clock_gettime(CLOCK_MONOTONIC, &deadline);
            deadline.tv_nsec += 200 * 1000;
            if (deadline.tv_nsec >= 1000000000L) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000L;
            }
            rc = rcl_mutex_clocklock(&s->m, CLOCK_MONOTONIC, &deadline);
            if (rc == ETIMEDOUT) {
                timeouts++;
                rc = rcl_mutex_lock(&s->m);
            }
            CHECK_EQ(rc, 0, "clocklock / lock");
            break;
        }
        default:
            CHECK_EQ(rcl_mutex_lock(&s->m), 0, "lock");
        }
        section_body(s);
        CHECK_EQ(rcl_mutex_unlock(&s->m), 0, "unlock");
        /* Work between sections, so that the threads' runs span several time slices and
         * interleave (otherwise each could finish within its first slice, alone). */
        for (int k = 0; k < 200; k++)
            t_cpu_relax();
    }
    __atomic_fetch_add(&s->busy, busy, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->timeouts, timeouts, __ATOMIC_RELAXED);
}

static void check_exclusion(int alg, int policy, int nthreads, int iters)
{
    static struct shared s;
    memset(&s, 0, sizeof s);
    init_lock(&s.m, "queue_handoff.c:stress", alg, policy);
    s.nthreads = nthreads;
    s.iters = iters;
    uint64_t t0 = t_now_ns();
    t_run_threads(nthreads, stress_worker, &s);
    long want = (long)nthreads * s.iters;
    CHECK_EQ(s.violations, 0, "sections that overlapped another");
    CHECK_EQ(s.counter, want, "sections counted");
    for (int i = 0; i < NLINES; i++)
        CHECK_EQ(s.line[i][0], want, "cache line writes counted");
    CHECK_EQ(rcl_mutex_destroy(&s.m), 0, "destroy");
    OK("%-6s %-5s %d threads x %d sections (lock, trylock, clocklock), exact count; %ld trylocks busy, %ld "
       "clocklocks timed out (%.0f ms)",
       rcl_algorithm_name(alg), policy_names[policy], nthreads, s.iters, s.busy, s.timeouts,
       (double)(t_now_ns() - t0) / 1e6);
}

/* Half the threads take the lock, half retry trylock until they get it (clh's trylock pins
 * the tail node it looks at, and a successor that swaps a pinned node out hands it to the trier
 * to pool: this load makes that happen, about ten times a run on 2 CPUs). */
static void storm_worker(int index, void *arg)
{
    struct shared *s = arg;
    __atomic_add_fetch(&s->started, 1, __ATOMIC_ACQ_REL);
    t_wait_flag(&s->started, s->nthreads);
    long busy = 0;
    for (int i = 0; i < s->iters; i++) {
        if (index % 2) {
            int rc;
            while ((rc = rcl_mutex_trylock(&s->m)) == EBUSY) {
                busy++;
                sched_yield(); /* or, oversubscribed, the triers starve the queue they wait on */
            }
            CHECK_EQ(rc, 0, "trylock");
        } else {
            CHECK_EQ(rcl_mutex_lock(&s->m), 0, "lock");
        }
        section_body(s);
        CHECK_EQ(rcl_mutex_unlock(&s->m), 0, "unlock");
    }
    __atomic_fetch_add(&s->busy, busy, __ATOMIC_RELAXED);
}

static void check_trylock_storm(int alg, int policy)
{
    static struct shared s;
    memset(&s, 0, sizeof s);
    init_lock(&s.m, "queue_handoff.c:storm", alg, policy);
    s.nthreads = oversubscribed_threads();
    s.iters = ITERS(5000);
    uint64_t t0 = t_now_ns();
    t_run_threads(s.nthreads, storm_worker, &s);
    long want = (long)s.nthreads * s.iters;
    CHECK_EQ(s.violations, 0, "sections that overlapped another");
    CHECK_EQ(s.counter, want, "sections counted");
    CHECK_EQ(rcl_mutex_destroy(&s.m), 0, "destroy");
    OK("%-6s %-5s %d threads x %d sections, half of them by retried trylocks: exact count; %ld trylocks busy "
       "(%.0f ms)",
       rcl_algorithm_name(alg), policy_names[policy], s.nthreads, s.iters, s.busy, (double)(t_now_ns() - t0) / 1e6);
}

/* ---- condition variables ---- */

#define CAP 3
#define NPROD 2
#define NCONS 2

struct buffer {
    rcl_mutex_t m;
    rcl_cond_t not_full, not_empty;
    long item[CAP];
    int head, count;
    long sum_in, sum_out, n_out;
    int items; /* per producer */
};

static void buffer_worker(int index, void *arg)
{
    struct buffer *b = arg;
    int producer = index < NPROD;
    int n = producer ? b->items : b->items * NPROD / NCONS;
    for (int i = 0; i < n; i++) {
        CHECK_EQ(rcl_mutex_lock(&b->m), 0, "lock");
        if (producer) {
            while (b->count == CAP)
                CHECK_EQ(rcl_cond_wait(&b->not_full, &b->m), 0, "cond_wait not_full");
            long v = (long)index * 1000003 + i;
            b->item[(b->head + b->count++) % CAP] = v;
            b->sum_in += v;
            rcl_cond_signal(&b->not_empty);
        } else {
            while (b->count == 0)
                CHECK_EQ(rcl_cond_wait(&b->not_empty, &b->m), 0, "cond_wait not_empty");
            b->sum_out += b->item[b->head];
            b->head = (b->head + 1) % CAP;
            b->count--;
            b->n_out++;
            rcl_cond_signal(&b->not_full);
        }
        CHECK_EQ(rcl_mutex_unlock(&b->m), 0, "unlock");
    }
}

static void check_condvar(int alg, int policy)
{
    static struct buffer b;
    memset(&b, 0, sizeof b);
    init_lock(&b.m, "queue_handoff.c:buffer", alg, policy);
    CHECK_EQ(rcl_cond_init(&b.not_full, NULL), 0, "cond_init");
    CHECK_EQ(rcl_cond_init(&b.not_empty, NULL), 0, "cond_init");
    b.items = policy == RCL_WAIT_SPIN ? SPIN_ITERS : ITERS(2000);
    uint64_t t0 = t_now_ns();
    t_run_threads(NPROD + NCONS, buffer_worker, &b);
    CHECK_EQ(b.n_out, (long)NPROD * b.items, "items consumed");
    CHECK_EQ(b.sum_out, b.sum_in, "sum of the items consumed");
    CHECK_EQ(b.count, 0, "items left");
    rcl_cond_destroy(&b.not_full);
    rcl_cond_destroy(&b.not_empty);
    CHECK_EQ(rcl_mutex_destroy(&b.m), 0, "destroy");
    OK("%-6s %-5s bounded buffer, %d producers x %d items, %d consumers, condvar waits: exact (%.0f ms)",
       rcl_algorithm_name(alg), policy_names[policy], NPROD, b.items, NCONS, (double)(t_now_ns() - t0) / 1e6);
}

/* `queue_handoff [ALG [POLICY]]` runs only those (for debugging one case). */
static int selected(int argc, char **argv, int alg, int policy)
{
    return (argc < 2 || strcmp(argv[1], rcl_algorithm_name(alg)) == 0) &&
           (argc < 3 || strcmp(argv[2], policy_names[policy]) == 0);
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "queue_handoff");
    if (t_is_child(argc, argv)) { /* FIFO order, with admission off (RCLIFY_ADMISSION=0) */
        for (int a = 0; a < NQUEUE_ALGS; a++) {
            check_fifo(queue_algs[a], RCL_WAIT_PARK);
            check_fifo(queue_algs[a], RCL_WAIT_AUTO);
        }
        return t_done();
    }
    /* Strict FIFO is the algorithms' order when every waiter is queued in them; under auto and
     * park, admission (core/admission.h) keeps waiters beyond the CPU count outside on purpose,
     * so the order is checked with it turned off. */
    const char *const no_admission[] = { "RCLIFY_ADMISSION=0", NULL };
    struct t_child c;
    int rc = t_run_child("--child", "fifo", no_admission, 45, &c);
    CHECK(rc == 0, "FIFO child (RCLIFY_ADMISSION=0) exited %d%s:\n%s", rc, c.timed_out ? " (timed out)" : "", c.err);
    OK("FIFO hand-off of ticket, mcs, clh, mcstp under park and auto, admission off: passed (%.1f s)", c.seconds);
    for (int a = 0; a < NQUEUE_ALGS; a++)
        for (int p = 0; p < RCL_WAIT_COUNT; p++)
            if (selected(argc, argv, queue_algs[a], p)) {
                if (p == RCL_WAIT_SPIN) {
                    /* Spinning is meant for threads that each have a CPU; oversubscribed, a FIFO
                     * lock then hands over at the scheduler's pace (a descheduled spinner's turn
                     * waits for its next time slice, ~100 hand-offs a second): few sections. */
                    check_exclusion(queue_algs[a], p, cpus(), ITERS(3000));
                    check_exclusion(queue_algs[a], p, oversubscribed_threads(), SPIN_ITERS);
                } else {
                    check_exclusion(queue_algs[a], p, oversubscribed_threads(), ITERS(3000));
                    if (p != RCL_WAIT_YIELD)
                        check_trylock_storm(queue_algs[a], p);
                }
                check_condvar(queue_algs[a], p);
            }
    return t_done();
}
