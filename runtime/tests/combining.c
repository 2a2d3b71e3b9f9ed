/*
 * Combining locks (src/combining/: fc, ccsynch, dsmsynch, hsynch, osci): what the other tests
 * cannot see from outside, that sections really run on a combiner for their posters.
 *   - served by the holder: a thread holds the lock in hybrid form while 3 others post sections
 *     with rcl_execute; its unlock runs them on its own thread (seen by the section), and each
 *     poster gets its own section's return value and errno back, the section having seen the
 *     poster's errno on entry;
 *   - the bound: 70 threads post while the lock is held; the holder's unlock runs at most
 *     RCL_COMBINE_BOUND of them, then hands the lock on, and all 70 run exactly once;
 *   - stress: 8 threads (4 per CPU here: the waiting policy matters) on one lock with every form
 *     mixed (rcl_execute, RCL_EXECUTE, hybrid, trylock, clocklock, rcl_execute_trylock, a
 *     section nested on a second lock), a non-atomic counter and an overlap check; each section
 *     returns and sets errno to values of its own poster, checked on return.  Under each waiting
 *     policy (spin with 2 threads only: spinning waiters need a CPU each); hsynch again with two
 *     clusters (a child with RCLIFY_CLUSTERS=2, so that the lock between clusters is contended);
 *   - the refusal: a section that waits on a condvar while a combiner runs it for another thread
 *     stops the program with one line naming the lock and rcl_execute_may_wait (in a child).
 * The process runs with RCLIFY_CLUSTERS=1 (re-executed so), so that hsynch's requests all go to
 * one cluster's combiner, as the first two checks need.
 */
#include "test_util.h"

#include "combining/combining.h" /* RCL_COMBINE_BOUND; rcl_policy_name, rcl_cpu_count */

static const int combining_algs[] = { RCL_ALG_FC, RCL_ALG_CCSYNCH, RCL_ALG_DSMSYNCH, RCL_ALG_HSYNCH, RCL_ALG_OSCI };
#define N_COMBINING ((int)(sizeof combining_algs / sizeof combining_algs[0]))

/* A thread's identity as sections see it. */
static __thread char thread_tag;
#define SELF ((void *)&thread_tag)

/* ---- served by the holder ---- */

#define NPOSTERS 3

struct served {
    rcl_mutex_t m;
    void *holder;          /* the thread holding the lock in hybrid form */
    int posting;           /* posters about to post */
    int combined;          /* sections that ran on the holder's thread */
    long data;             /* protected by m */
};

struct post_ctx {
    struct served *s;
    int index;
    void *ran_on;
    int errno_seen;
};

static int cs_post(void *p)
{
    struct post_ctx *c = p;
    c->ran_on = SELF;
    c->errno_seen = errno;
    c->s->data++;
    errno = 500 + c->index;
    return 1000 + c->index;
}

static void served_worker(int index, void *arg)
{
    struct served *s = arg;
    if (index == 0) {
        CHECK_EQ(rcl_mutex_lock(&s->m), 0, "hybrid lock");
        s->holder = SELF;
        __atomic_store_n(&s->posting, 0, __ATOMIC_RELEASE);
        t_wait_flag(&s->posting, NPOSTERS);
        usleep(30000); /* let them get into the lock's queue */
        CHECK_EQ(rcl_mutex_unlock(&s->m), 0, "unlock");
        return;
    }
    t_wait_flag(&s->posting, 0);
    struct post_ctx c = { s, index, NULL, -1 };
    __atomic_fetch_add(&s->posting, 1, __ATOMIC_ACQ_REL);
    errno = 300 + index;
    int rc = rcl_execute(&s->m, cs_post, &c);
    int err = errno;
    CHECK_EQ(rc, 1000 + index, "the section's return value, back to its poster");
    CHECK_EQ(err, 500 + index, "the section's errno, back to its poster");
    CHECK_EQ(c.errno_seen, 300 + index, "errno the section saw on entry: its poster's");
    if (c.ran_on != SELF) {
        CHECK(c.ran_on == s->holder, "a section ran on a thread that was neither its poster nor the holder");
        __atomic_fetch_add(&s->combined, 1, __ATOMIC_RELAXED);
    }
}

static void served_by_holder(int alg)
{
    struct served *s = calloc(1, sizeof *s);
    CHECK(s != NULL, "out of memory");
    t_mutex_init(&s->m, -1, "combining.c:served", alg, 0);
    int rounds = 0;
    while (s->combined < NPOSTERS && rounds < 50) {
        s->posting = -1;
        t_run_threads(NPOSTERS + 1, served_worker, s);
        rounds++;
    }
    CHECK_EQ(s->data, (long)rounds * NPOSTERS, "sections run");
    CHECK(s->combined > 0, "%s: in %d rounds no section ran on the holder's thread", rcl_algorithm_name(alg), rounds);
    CHECK_EQ(rcl_mutex_destroy(&s->m), 0, "destroy");
    OK("%s: the holder's unlock ran %d sections posted meanwhile on its own thread (%d rounds); return values "
       "and errno travelled both ways", rcl_algorithm_name(alg), s->combined, rounds);
    free(s);
}

/* ---- the bound ---- */

#define NMANY 70
_Static_assert(NMANY > RCL_COMBINE_BOUND, "more posters than one pass may serve");

struct many {
    rcl_mutex_t m;
    void *holder;
    int posting;
    int on_holder;
    long data;
};

static int cs_many(void *p)
{
    struct many *s = p;
    s->data++;
    if (SELF == s->holder)
        s->on_holder++;
    return 7;
}

static void many_worker(int index, void *arg)
{
    struct many *s = arg;
    if (index == 0) {
        CHECK_EQ(rcl_mutex_lock(&s->m), 0, "hybrid lock");
        s->holder = SELF;
        __atomic_store_n(&s->posting, 0, __ATOMIC_RELEASE);
        t_wait_flag(&s->posting, NMANY);
        usleep(100000);
        CHECK_EQ(rcl_mutex_unlock(&s->m), 0, "unlock");
        return;
    }
    t_wait_flag(&s->posting, 0);
    __atomic_fetch_add(&s->posting, 1, __ATOMIC_ACQ_REL);
    CHECK_EQ(rcl_execute(&s->m, cs_many, s), 7, "section's value");
}

static void bounded_pass(int alg)
{
    struct many *s = calloc(1, sizeof *s);
    CHECK(s != NULL, "out of memory");
    t_mutex_init(&s->m, -1, "combining.c:many", alg, 0);
    s->posting = -1;
    t_run_threads(NMANY + 1, many_worker, s);
    CHECK_EQ(s->data, NMANY, "sections run");
    CHECK(s->on_holder <= RCL_COMBINE_BOUND, "%s: one pass ran %d sections, more than the bound %d",
          rcl_algorithm_name(alg), s->on_holder, RCL_COMBINE_BOUND);
    CHECK(s->on_holder > 0, "%s: the holder's unlock ran none of %d queued sections", rcl_algorithm_name(alg), NMANY);
    CHECK_EQ(rcl_mutex_destroy(&s->m), 0, "destroy");
    OK("%s: %d sections posted behind a holder: its pass ran %d (bound %d), the rest ran after the hand-off",
       rcl_algorithm_name(alg), NMANY, s->on_holder, RCL_COMBINE_BOUND);
    free(s);
}

/* ---- stress ---- */

#define NLINES 4

struct stress {
    rcl_mutex_t m, inner;
    long counter;
    int inside;
    long violations;
    long line[NLINES][8];
    long inner_count;  /* protected by inner */
    long combined;     /* sections run by another thread than their poster */
    long done[64];     /* per thread: sections that counted */
};

struct sctx {
    int taken; /* first int: rcl_execute_trylock's flag */
    int tag;
    struct stress *s;
    void *poster;
};

static void body(struct stress *s)
{
    volatile int *inside = &s->inside;
    if ((*inside)++ != 0)
        s->violations++;
    long c = *(volatile long *)&s->counter;
    for (int i = 0; i < NLINES; i++)
        s->line[i][0]++;
    for (volatile int i = 0; i < 32; i++) /* a section long enough for others to queue behind */
        ;
    *(volatile long *)&s->counter = c + 1;
    (*inside)--;
}

static int cs_inner(void *p)
{
    ((struct stress *)p)->inner_count++;
    return 3;
}

static int cs_stress(void *p)
{
    struct sctx *c = p;
    if (!c->taken)
        return -c->tag; /* rcl_execute_trylock on a busy lock: not holding it */
    if (errno != c->tag)
        return -1; /* the poster's errno did not reach the section */
    body(c->s);
    c->s->combined += SELF != c->poster;
    if (c->tag % 5 == 0 && rcl_execute(&c->s->inner, cs_inner, c->s) != 3)
        return -2;
    errno = c->tag + 1;
    return c->tag;
}

struct stress_run {
    struct stress *s;
    int iters;
    int nthreads;
    int arrived; /* start gate: all threads begin together */
};

static void stress_worker(int index, void *arg)
{
    struct stress_run *r = arg;
    struct stress *s = r->s;
    __atomic_fetch_add(&r->arrived, 1, __ATOMIC_ACQ_REL);
    t_wait_flag(&r->arrived, r->nthreads);
    for (int i = 0; i < r->iters; i++) {
        int tag = 1 + index * 1000003 + i;
        struct sctx c = { 1, tag, s, SELF };
        int counted = 1, rc = tag;
        errno = tag;
        switch (i % 8) {
        case 0:
        case 1:
            rc = rcl_execute(&s->m, cs_stress, &c);
            break;
        case 2:
            rc = RCL_EXECUTE(&s->m, cs_stress, &c);
            break;
        case 3:
            CHECK_EQ(rcl_mutex_lock(&s->m), 0, "lock");
            rc = cs_stress(&c);
            CHECK_EQ(rcl_mutex_unlock(&s->m), 0, "unlock");
            break;
        case 4:
            if ((counted = rcl_mutex_trylock(&s->m) == 0)) {
                rc = cs_stress(&c);
                CHECK_EQ(rcl_mutex_unlock(&s->m), 0, "unlock");
            } else {
                errno = tag + 1;
            }
            break;
        case 5: {
            struct timespec dl;
            clock_gettime(CLOCK_MONOTONIC, &dl);
            dl.tv_nsec += 200000; /* 0.2 ms: some time out */
            if (dl.tv_nsec >= 1000000000L) {
                dl.tv_sec++;
                dl.tv_nsec -= 1000000000L;
            }
            int trc = rcl_mutex_clocklock(&s->m, CLOCK_MONOTONIC, &dl);
            CHECK(trc == 0 || trc == ETIMEDOUT, "clocklock returned %d", trc);
            if ((counted = trc == 0)) {
                rc = cs_stress(&c);
                CHECK_EQ(rcl_mutex_unlock(&s->m), 0, "unlock");
            } else {
                errno = tag + 1;
            }
            break;
        }
        case 6:
            rc = rcl_execute_trylock(&s->m, cs_stress, &c);
            if (!(counted = c.taken)) {
                CHECK_EQ(rc, -tag, "rcl_execute_trylock's value on a busy lock");
                rc = tag;
                errno = tag + 1;
            }
            break;
        default:
            rc = rcl_execute(&s->m, cs_stress, &c);
            break;
        }
        CHECK_EQ(rc, tag, "the section's value (-1: it did not see its poster's errno, -2: nested section failed)");
        CHECK_EQ(errno, tag + 1, "errno after the section: the one it set");
        s->done[index] += counted;
    }
}

static void stress(int alg, int policy, int nthreads, int iters, const char *how)
{
    struct stress *s = calloc(1, sizeof *s);
    CHECK(s != NULL, "out of memory");
    rcl_lock_config_t cfg = RCL_LOCK_CONFIG_POLICY("combining.c:stress", alg, 0, -1, policy);
    CHECK_EQ(rcl_mutex_init(&s->m, NULL, &cfg), 0, "init");
    rcl_lock_config_t icfg = RCL_LOCK_CONFIG_POLICY("combining.c:inner", alg, 0, -1, policy);
    CHECK_EQ(rcl_mutex_init(&s->inner, NULL, &icfg), 0, "init");
    struct stress_run r = { s, iters, nthreads, 0 };
    uint64_t t0 = t_now_ns();
    t_run_threads(nthreads, stress_worker, &r);
    long want = 0, nested = 0;
    for (int i = 0; i < nthreads; i++)
        want += s->done[i];
    for (int t = 0; t < nthreads; t++)
        for (int i = 0; i < iters; i++)
            nested += (i % 8 != 4 && i % 8 != 5 && i % 8 != 6) && (1 + t * 1000003 + i) % 5 == 0;
    CHECK_EQ(s->violations, 0, "sections that overlapped");
    CHECK_EQ(s->counter, want, "non-atomic counter");
    CHECK_EQ(s->line[NLINES - 1][0], want, "last shared line");
    CHECK(s->inner_count >= nested, "nested sections: %ld, at least %ld expected", s->inner_count, nested);
    CHECK_EQ(rcl_mutex_destroy(&s->inner), 0, "destroy");
    CHECK_EQ(rcl_mutex_destroy(&s->m), 0, "destroy");
    OK("%s/%s%s: %d threads x %d sections of every form mixed: exact count %ld (%ld run by a combiner), no "
       "overlap, values and errno back to each poster (%.0f ms)", rcl_algorithm_name(alg), rcl_policy_name(policy),
       how, nthreads, iters, want, s->combined, (double)(t_now_ns() - t0) / 1e6);
    free(s);
}

/* ---- the refusal ---- */

struct refuse {
    rcl_mutex_t m;
    rcl_cond_t c;
    void *holder;
    int posting;
};

static int cs_waits(void *p)
{
    struct refuse *r = p;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_nsec += 5000000;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    int rc = rcl_cond_timedwait(&r->c, &r->m, &dl); /* on its own thread: times out */
    return rc == ETIMEDOUT ? 0 : 100 + rc;
}

static void refuse_worker(int index, void *arg)
{
    struct refuse *r = arg;
    if (index == 0) {
        CHECK_EQ(rcl_mutex_lock(&r->m), 0, "lock");
        r->holder = SELF;
        __atomic_store_n(&r->posting, 1, __ATOMIC_RELEASE);
        t_wait_flag(&r->posting, 2);
        usleep(20000);
        CHECK_EQ(rcl_mutex_unlock(&r->m), 0, "unlock"); /* runs cs_waits here: refused */
        return;
    }
    t_wait_flag(&r->posting, 1);
    __atomic_store_n(&r->posting, 2, __ATOMIC_RELEASE);
    CHECK_EQ(rcl_execute(&r->m, cs_waits, r), 0, "waiting section on its own thread");
}

static int child_refusal(const char *alg_name)
{
    struct refuse *r = calloc(1, sizeof *r);
    t_mutex_init(&r->m, -1, "combining.c:refused", t_alg_by_name(alg_name), 0);
    rcl_cond_init(&r->c, NULL);
    for (int round = 0; round < 100; round++) {
        r->posting = 0;
        t_run_threads(2, refuse_worker, r);
    }
    return t_done(); /* never queued behind the holder in 100 rounds: the parent reports it */
}

static void refusal(int alg)
{
    const char *name = rcl_algorithm_name(alg);
    struct t_child c;
    int rc = t_run_child("--child-refusal", name, NULL, 30, &c);
    CHECK(rc == 128 + SIGABRT, "%s: a section waiting on a condvar on a combiner: child exited %d%s, expected "
          "the runtime's abort\n%s", name, rc, c.timed_out ? " (timed out)" : "", c.err);
    char want[160];
    snprintf(want, sizeof want, "rclify: lock combining.c:refused (%s): a critical section waits on a condition "
             "variable while it runs on a combiner", name);
    CHECK(strstr(c.err, want) != NULL, "%s: the refusal message, expected '%s...', got:\n%s", name, want, c.err);
    CHECK(strstr(c.err, "rcl_execute_may_wait") != NULL, "%s: the message names rcl_execute_may_wait:\n%s", name, c.err);
    CHECK(strchr(c.err, '\n') == c.err + strlen(c.err) - 1, "%s: one line:\n%s", name, c.err);
    OK("%s: a section that waits on a condvar while a combiner runs it stops the program with one line "
       "naming the lock and rcl_execute_may_wait", name);
}

/* ---- hsynch with two clusters ---- */

static int child_two_clusters(void)
{
    stress(RCL_ALG_HSYNCH, RCL_WAIT_AUTO, 8, ITERS(100000), " (2 clusters)");
    stress(RCL_ALG_HSYNCH, RCL_WAIT_PARK, 8, ITERS(100000), " (2 clusters)");
    return t_done();
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "combining");
    if (!getenv("RCLIFY_CLUSTERS")) {
        setenv("RCLIFY_CLUSTERS", "1", 1);
        execv("/proc/self/exe", argv);
        t_fail(__FILE__, __LINE__, "re-exec with RCLIFY_CLUSTERS=1: %s", strerror(errno));
    }
    if (t_is_child(argc, argv)) {
        if (strcmp(argv[1], "--child-refusal") == 0)
            return child_refusal(argv[2]);
        return child_two_clusters();
    }
    for (int i = 0; i < N_COMBINING; i++) {
        int alg = combining_algs[i];
        served_by_holder(alg);
        bounded_pass(alg);
        stress(alg, RCL_WAIT_AUTO, 8, ITERS(100000), "");
        stress(alg, RCL_WAIT_PARK, 8, ITERS(100000), "");
        stress(alg, RCL_WAIT_YIELD, 8, ITERS(100000), "");
        stress(alg, RCL_WAIT_SPIN, 2, ITERS(100000), "");
        refusal(alg);
    }
    if (rcl_cpu_count() >= 2) {
        static const char *const env[] = { "RCLIFY_CLUSTERS=2", NULL };
        struct t_child c;
        int rc = t_run_child("--child-two-clusters", "", env, 100, &c);
        CHECK(rc == 0, "hsynch with two clusters: child exited %d%s\n%s", rc, c.timed_out ? " (timed out)" : "", c.err);
        OK("hsynch with RCLIFY_CLUSTERS=2: stress exact under auto and park");
    }
    return t_done();
}
