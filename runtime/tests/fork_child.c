/*
 * fork() without exec in a program whose locks are in use by other threads, on every algorithm.
 *
 * What is guaranteed (docs/runtime.md, "fork"), and checked here: in the child, whose only thread
 * is the copy of the one that called fork(),
 *   - every lock that was free at the fork (no thread held it or was waiting for it, even if other
 *     threads used it before and go on using other locks at that moment, and even if the forking
 *     thread ran a section on it just before calling fork()), and every lock not yet
 *     used (a static initializer, resolved for the first time in the child), can be locked,
 *     unlocked, tried, run sections on (rcl_execute, rcl_execute_trylock) from the child's thread
 *     and from threads it starts, and destroyed (rcl_mutex_destroy returns 0);
 *   - a lock that the forking thread held at the fork, with no other thread waiting for it, is
 *     held by the child's thread: rcl_mutex_unlock returns 0 (the child must unlock it before it
 *     or its threads take it again), and it is then as usable as a free one;
 *   - a condition variable with no waiter at the fork (used before it) works with such a lock:
 *     a wait is woken by a signal (a timed wait times out where the child cannot start threads),
 *     and it can be destroyed;
 *   - new locks can be set up, used by new threads and destroyed (the runtime's own state, such
 *     as RCL client identifiers, queue-node pools and RCL servers, is usable in the child, whatever
 *     other threads were doing with it at the fork).
 * Not guaranteed, as for pthread mutexes: a lock held or waited for by another thread at the
 * fork stays so in the child (its holder does not exist there); this test leaves such a lock
 * (`busy`) alone in the child.  Neither is the state of a lock the forking thread held while others
 * waited for it: queue locks hand it, at the unlock, to a waiter that does not exist in the child.
 *
 * Per algorithm, two background threads use all the locks, then hammer `busy` only (sections in
 * both forms) while a third starts and joins short-lived threads that set up, use and destroy
 * locks of their own (the runtime's shared state is in use at the fork).  A forking thread forks
 * FORKS times holding no lock, and FORKS times holding `held`; each child checks the above and
 * exits 0, or fails naming the check (watchdog: exit 3 when it deadlocks).
 *
 * One white-box case for RCL: a fork while a servicing thread is between completing a section and
 * releasing its lock (rcl_server.c completes the request, so rcl_execute returns, and only then
 * stores NONE over RCL_CLAIMING): the holder word is set to RCL_CLAIMING by hand around the fork,
 * and the child must find the lock free (it would wait forever for a thread it does not have).
 *
 * Under ThreadSanitizer the child uses the locks from its own thread only: ThreadSanitizer cannot
 * follow threads started in the child of a multi-threaded process (glibc gives them the stacks,
 * hence the thread ids, of the parent's threads, which ThreadSanitizer still counts: "dup
 * thread"; by default it kills such a child).  RCL, whose sections need servicing threads in the
 * child, is left to the plain build there.  Nor is ThreadSanitizer's allocator locked around
 * fork() (gcc 12's libtsan; LLVM marks its own threaded-fork test "TSAN does not lock
 * allocator"): a child forked while another thread was inside malloc blocks for ever in its own
 * first allocation (a lock set up in the child), and its watchdog signal, which ThreadSanitizer
 * defers while a thread is in its runtime, never arrives.  Seen in 11 runs of 150 on 2 CPUs,
 * every hung child in SizeClassAllocator64::GetFromAllocator.  So under ThreadSanitizer the
 * churning thread, the one that allocates while the forks happen, pauses around each fork
 * (fork_gate); the plain build forks in the middle of its churn.
 */
#include "exclusion.h"

#include "rcl/rcl_internal.h" /* struct rcl_lock, RCL_CLAIMING: the white-box case below */

#define BG_THREADS 2
#define CHILD_THREADS 3
#ifndef FORKS
#define FORKS 4 /* per algorithm and scenario; -DFORKS=300 for a stress run */
#endif
#define CHILD_ITERS ITERS(400)
#define CHILD_LIMIT_S 20
#ifdef RCLIFY_TSAN
#define CHILD_STARTS_THREADS 0 /* see above */
#else
#define CHILD_STARTS_THREADS 1
#endif

#ifdef RCLIFY_TSAN
/* Held by the churning thread around each thread it starts and joins, and by the forking thread
 * around fork(): no thread is inside ThreadSanitizer's allocator at a fork (see above). */
static pthread_mutex_t fork_gate = PTHREAD_MUTEX_INITIALIZER;
#define FORK_GATE_CLOSE() pthread_mutex_lock(&fork_gate)
#define FORK_GATE_OPEN() pthread_mutex_unlock(&fork_gate)
#else
#define FORK_GATE_CLOSE() ((void)0)
#define FORK_GATE_OPEN() ((void)0)
#endif

struct world {
    const struct t_alg *a;
    rcl_mutex_t busy;    /* in use by the background threads at every fork */
    rcl_mutex_t idle[2]; /* used before, free at the forks (idle[1] on another RCL server) */
    rcl_mutex_t held;    /* used before; held by the forking thread at half the forks */
    rcl_cond_t cv;       /* waited on and signalled with idle[0] before the forks, no waiter at them */
    int ready, go;       /* the condition variable's predicate (under idle[0]) */
    int warmed;          /* background threads done with their warm-up */
    int stop;
    long busy_count;     /* under busy */
    long churned;        /* short-lived threads that set up, used and destroyed a lock */
};

/* One per algorithm, never used in the parent: resolved for the first time in a child. */
#define UNUSED_ROW(alg) RCL_MUTEX_INITIALIZER(RCL_LOCK_CONFIG("fork_child.c:unused", alg, 0, -1))
static rcl_mutex_t unused_static[T_NALGS] = {
#define RCL_ALGORITHM(ENUM, name, description) UNUSED_ROW(RCL_ALG_##ENUM),
#include "rclify/algorithms.def"
#undef RCL_ALGORITHM
};

static int cs_count(void *p)
{
    (*(long *)p)++;
    return 0;
}

static int cs_nothing(void *p)
{
    return 0;
}

static void background(int index, void *arg)
{
    struct world *w = arg;
    long local = 0;
    for (int i = 0; i < ITERS(200); i++) { /* every lock in use by other threads before the forks */
        rcl_execute(&w->idle[i % 2], cs_nothing, NULL);
        rcl_mutex_lock(&w->held);
        local++;
        rcl_mutex_unlock(&w->held);
        rcl_execute(&w->busy, cs_count, &w->busy_count);
    }
    __atomic_add_fetch(&w->warmed, 1, __ATOMIC_ACQ_REL);
    for (long i = 0; !__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE); i++) {
        if (i % 2) {
            rcl_execute(&w->busy, cs_count, &w->busy_count);
        } else {
            rcl_mutex_lock(&w->busy);
            w->busy_count++;
            rcl_mutex_unlock(&w->busy);
        }
        if (i % 64 == 0)
            sched_yield(); /* let the forking and churning threads run on 2 CPUs */
    }
}

/* A thread that exists for one lock: sets it up, takes it a few ways, destroys it, exits. */
static void *short_lived(void *arg)
{
    struct world *w = arg;
    rcl_mutex_t m; /* its id a literal, as lock_config.h's are: profile reads it at exit */
    t_mutex_init(&m, -1, "fork_child.c:short_lived", w->a->alg, 2);
    long n = 0;
    for (int i = 0; i < 8; i++) {
        rcl_execute(&m, cs_count, &n);
        rcl_mutex_lock(&m);
        n++;
        rcl_mutex_unlock(&m);
    }
    CHECK_EQ(n, 16, "short-lived thread's sections");
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "short-lived lock destroyed");
    return NULL;
}

static void *churn(void *arg)
{
    struct world *w = arg;
    while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
        pthread_t t;
        FORK_GATE_CLOSE();
        int rc = pthread_create(&t, NULL, short_lived, w);
        CHECK(rc == 0, "pthread_create: %s", strerror(rc));
        pthread_join(t, NULL);
        FORK_GATE_OPEN();
        __atomic_add_fetch(&w->churned, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* A wait on cv under idle[0] for `go`, and its signal: by two threads, or (index -1) by one
 * thread, whose timed wait must time out. */
static void cv_handshake(int index, void *arg)
{
    struct world *w = arg;
    rcl_mutex_lock(&w->idle[0]);
    if (index < 0) {
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_nsec += 2000000;
        if (deadline.tv_nsec >= 1000000000) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000;
        }
        int rc = rcl_cond_timedwait(&w->cv, &w->idle[0], &deadline);
        CHECK(rc == ETIMEDOUT, "%s: timed wait with no signal returned %d", w->a->name, rc);
    } else if (index == 0) {
        w->ready = 1;
        while (!w->go)
            CHECK(rcl_cond_wait(&w->cv, &w->idle[0]) == 0, "%s: rcl_cond_wait", w->a->name);
        w->go = 0;
        w->ready = 0;
    } else {
        while (!w->ready) { /* wait for the waiter to be in: then the signal wakes it */
            rcl_mutex_unlock(&w->idle[0]);
            sched_yield();
            rcl_mutex_lock(&w->idle[0]);
        }
        w->go = 1;
        rcl_cond_signal(&w->cv);
    }
    rcl_mutex_unlock(&w->idle[0]);
}

/* ---- in the child ---- */

/* Everything a child may do with a usable lock, from its own thread then from new threads. */
static void child_uses(rcl_mutex_t *m, const char *what)
{
    long n = 0;
    CHECK(rcl_mutex_trylock(m) == 0, "%s: trylock in the child's thread", what);
    n++;
    CHECK(rcl_mutex_unlock(m) == 0, "%s: unlock after trylock", what);
    CHECK(rcl_mutex_lock(m) == 0, "%s: lock in the child's thread", what);
    n++;
    CHECK(rcl_mutex_unlock(m) == 0, "%s: unlock", what);
    rcl_execute(m, cs_count, &n);
    CHECK_EQ(n, 3, what);
    if (CHILD_STARTS_THREADS)
        t_excl_run(m, CHILD_THREADS, CHILD_ITERS, what);
    else { /* the same forms of taking the lock, from this thread only */
        struct t_excl x = { .m = m, .iters = CHILD_ITERS, .threads = 1 };
        t_excl_worker(0, &x);
        CHECK_EQ(x.counter, CHILD_ITERS, what);
    }
}

static void child(struct world *w, int holding)
{
    alarm(CHILD_LIMIT_S / 2); /* t_init's watchdog: a deadlock exits 3 */
    const char *alg = w->a->name;
    char what[96];
    if (holding) {
        int rc = rcl_mutex_unlock(&w->held);
        snprintf(what, sizeof what, "%s: unlock in the child of the lock held at the fork", alg);
        CHECK(rc == 0, "%s returned %d", what, rc);
    }
    rcl_mutex_t *unused = &unused_static[T_ALG_INDEX(w->a)];
    struct {
        rcl_mutex_t *m;
        const char *name;
    } usable[] = { { &w->idle[0], "idle[0]" }, { &w->idle[1], "idle[1]" }, { &w->held, "held" },
                   { unused, "unused static" } };
    for (size_t i = 0; i < sizeof usable / sizeof usable[0]; i++) {
        snprintf(what, sizeof what, "%s: %s in the child", alg, usable[i].name);
        child_uses(usable[i].m, what);
    }
    CHECK(rcl_mutex_algorithm(unused) == w->a->alg, "%s: the unused static lock resolved to %s", alg,
          rcl_algorithm_name(rcl_mutex_algorithm(unused)));
    if (CHILD_STARTS_THREADS)
        t_run_threads(2, cv_handshake, w);
    else
        cv_handshake(-1, w);
    CHECK(rcl_cond_destroy(&w->cv) == 0, "%s: destroying the condition variable in the child", alg);
    /* The runtime's shared state: new locks and new threads, as the churning thread had. */
    if (CHILD_STARTS_THREADS) {
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            CHECK(pthread_create(&t[i], NULL, short_lived, w) == 0, "%s: pthread_create in the child", alg);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
    } else {
        short_lived(w);
    }
    for (size_t i = 0; i < sizeof usable / sizeof usable[0]; i++) {
        int rc = rcl_mutex_destroy(usable[i].m);
        CHECK(rc == 0, "%s: destroying %s in the child returned %d", alg, usable[i].name, rc);
    }
    t_flush();
    _exit(0);
}

/* ---- in the parent ---- */

struct fork_arg {
    struct world *w;
    int holding;
    double seconds; /* the child's run */
};

static void *forker(void *p)
{
    struct fork_arg *f = p;
    struct world *w = f->w;
    /* Sections just before the fork: their locks are free once the calls return (under RCL, the
     * server may still be releasing them when fork() runs). */
    long n = 0;
    rcl_execute(&w->idle[0], cs_count, &n);
    rcl_execute(&w->idle[1], cs_count, &n);
    if (f->holding) {
        CHECK(rcl_mutex_lock(&w->held) == 0, "lock held before the fork");
    } else {
        rcl_execute(&w->held, cs_count, &n);
    }
    t_flush();
    uint64_t t0 = t_now_ns();
    FORK_GATE_CLOSE();
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0)
        child(w, f->holding);
    FORK_GATE_OPEN();
    if (f->holding)
        CHECK(rcl_mutex_unlock(&w->held) == 0, "the parent unlocks the lock it held at the fork");
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (t_now_ns() - t0 > (uint64_t)CHILD_LIMIT_S * 1000000000u) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            t_fail(__FILE__, __LINE__, "%s: the child did not finish in %d s", w->a->name, CHILD_LIMIT_S);
        }
        usleep(1000);
    }
    f->seconds = (double)(t_now_ns() - t0) / 1e9;
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "%s: fork from a thread %s: child %s %d (1: a check failed, see above; 3: deadlock)", w->a->name,
          f->holding ? "holding a lock" : "holding no lock", WIFEXITED(status) ? "exited" : "killed by signal",
          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return NULL;
}

static void check_algorithm(const struct t_alg *a)
{
    if (!CHILD_STARTS_THREADS && a->alg == RCL_ALG_RCL) {
        OK("rcl: skipped under ThreadSanitizer (its sections need servicing threads in the child)");
        return;
    }
    static struct world w; /* static: the locks' addresses are the same in every child */
    memset(&w, 0, sizeof w);
    w.a = a;
    t_mutex_init(&w.busy, -1, "fork_child.c:busy", a->alg, 0);
    t_mutex_init(&w.idle[0], -1, "fork_child.c:idle0", a->alg, 0);
    t_mutex_init(&w.idle[1], -1, "fork_child.c:idle1", a->alg, 1);
    t_mutex_init(&w.held, -1, "fork_child.c:held", a->alg, 0);
    CHECK_EQ(rcl_cond_init(&w.cv, NULL), 0, "rcl_cond_init");
    for (int i = 0; i < 3; i++)
        t_run_threads(2, cv_handshake, &w);

    pthread_t bg[BG_THREADS], churner;
    struct t_thread_arg args[BG_THREADS];
    for (int i = 0; i < BG_THREADS; i++) {
        args[i] = (struct t_thread_arg){ background, &w, i };
        CHECK(pthread_create(&bg[i], NULL, t_thread_main, &args[i]) == 0, "pthread_create");
    }
    t_wait_flag(&w.warmed, BG_THREADS);
    CHECK(pthread_create(&churner, NULL, churn, &w) == 0, "pthread_create");

    double slowest[2] = { 0, 0 };
    for (int k = 0; k < 2 * FORKS; k++) {
        struct fork_arg f = { &w, k % 2, 0 };
        pthread_t t;
        CHECK(pthread_create(&t, NULL, forker, &f) == 0, "pthread_create");
        pthread_join(t, NULL);
        if (f.seconds > slowest[f.holding])
            slowest[f.holding] = f.seconds;
    }

    __atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < BG_THREADS; i++)
        pthread_join(bg[i], NULL);
    pthread_join(churner, NULL);
    long busy = w.busy_count;
    CHECK(busy >= BG_THREADS * ITERS(200), "%s: sections on busy: %ld", a->name, busy);
    CHECK_EQ(rcl_mutex_destroy(&w.busy), 0, "destroy busy in the parent");
    for (int i = 0; i < 2; i++)
        CHECK_EQ(rcl_mutex_destroy(&w.idle[i]), 0, "destroy idle in the parent");
    CHECK_EQ(rcl_mutex_destroy(&w.held), 0, "destroy held in the parent");
    CHECK_EQ(rcl_cond_destroy(&w.cv), 0, "destroy the condition variable in the parent");
    OK("%s: %d forks from a thread holding no lock, %d holding one, while 2 threads hammered another lock "
       "(%ld sections) and %ld short-lived threads came and went: every child used the free, unused and "
       "held locks from 1+%d threads, waited on a condition variable, and destroyed them all (slowest child "
       "%.2f s / %.2f s)",
       a->name, FORKS, FORKS, busy, w.churned, CHILD_STARTS_THREADS ? CHILD_THREADS : 0, slowest[0], slowest[1]);
}

/* RCL: the lock's holder word as a servicing thread leaves it between completion and release. */
static void check_rcl_release_in_flight(void)
{
    static rcl_mutex_t m;
    t_mutex_init(&m, -1, "fork_child.c:release_in_flight", RCL_ALG_RCL, 0);
    long n = 0;
    rcl_execute(&m, cs_count, &n); /* the server is started, the lock free */
    struct rcl_lock *l = m.impl;
    int expected = RCL_NONE;
    CHECK(__atomic_compare_exchange_n(&l->holder, &expected, RCL_CLAIMING, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED),
          "the rcl lock is free before the fork (holder %d)", expected);
    t_flush();
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        alarm(CHILD_LIMIT_S / 2);
        rcl_execute(&m, cs_count, &n);
        CHECK(rcl_mutex_lock(&m) == 0, "lock in the child");
        n++;
        CHECK(rcl_mutex_unlock(&m) == 0, "unlock in the child");
        CHECK(n == 3, "sections in the child: %ld", n);
        CHECK(rcl_mutex_destroy(&m) == 0, "destroy in the child");
        _exit(0);
    }
    __atomic_store_n(&l->holder, RCL_NONE, __ATOMIC_RELEASE); /* the release, in the parent */
    int status = 0;
    uint64_t t0 = t_now_ns();
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (t_now_ns() - t0 > (uint64_t)CHILD_LIMIT_S * 1000000000u) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        usleep(1000);
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "rcl: fork while a servicing thread releases a lock: the child %s %d (3: it waited forever for the lock)",
          WIFEXITED(status) ? "exited" : "was killed by signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    rcl_execute(&m, cs_count, &n);
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy in the parent");
    OK("rcl: fork while a servicing thread was releasing a lock (holder RCL_CLAIMING): the child found it free");
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "fork_child");
    FOR_EACH_ALG(a)
    check_algorithm(a);
    if (CHILD_STARTS_THREADS)
        check_rcl_release_in_flight();
    return t_done();
}
