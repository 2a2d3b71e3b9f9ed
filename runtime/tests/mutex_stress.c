/*
 * Mutual exclusion under stress, with exact counts, for every way a section can be run
 * (rcl_execute with no context copy, RCL_EXECUTE with a small and a large context, hybrid
 * lock/unlock, hybrid trylock, rcl_execute_trylock, all of them mixed on one lock) and every way
 * a lock can be created (rcl_mutex_init, RCL_MUTEX_INITIALIZER, zero-filled memory), on the posix
 * and rcl algorithms.  A child run with RCLIFY_LOCKS='*=rcl' checks that the environment moves
 * every lock, zero-filled ones included, onto RCL.
 *
 * Each section increments a counter through a read-modify-write split by writes to other cache
 * lines, and checks that no other section is inside: a lost update or an overlap fails the test
 * (and is a data race for ThreadSanitizer).
 */
#include "test_util.h"

#define NTHREADS 4
#define NLINES 4

struct shared {
    long counter;
    int inside;
    long violations;
    long line[NLINES][8]; /* one cache line each */
};

static void section_body(struct shared *s)
{
    volatile int *inside = &s->inside;
    if ((*inside)++ != 0)
        s->violations++;
    long c = *(volatile long *)&s->counter;
    for (int i = 0; i < NLINES; i++)
        s->line[i][0]++;
    *(volatile long *)&s->counter = c + 1;
    (*inside)--;
}

enum form { F_EXECUTE, F_EXECUTE_SMALL, F_EXECUTE_LARGE, F_HYBRID, F_HYBRID_TRYLOCK, F_EXECUTE_TRYLOCK, F_MIXED, NFORMS };
static const char *const form_names[NFORMS] = {
    "rcl_execute (no copy)", "RCL_EXECUTE small ctx", "RCL_EXECUTE large ctx", "hybrid lock/unlock",
    "hybrid trylock", "rcl_execute_trylock", "mixed hybrid+execute",
};

struct ctx_plain {
    struct shared *s;
    int tag;
};
static int cs_plain(void *p)
{
    struct ctx_plain *c = p;
    section_body(c->s);
    return c->tag;
}

struct ctx_small {
    struct shared *s;
    int in;
    int out;
};
static int cs_small(void *p)
{
    struct ctx_small *c = p;
    section_body(c->s);
    c->out = c->in * 3 + 1;
    return 5;
}

#define LARGE_N 600 /* > 2 KiB of context: larger than any mailbox */
struct ctx_large {
    struct shared *s;
    int in[LARGE_N];
    long sum;
    int out[LARGE_N];
};
static int cs_large(void *p)
{
    struct ctx_large *c = p;
    section_body(c->s);
    long sum = 0;
    for (int i = 0; i < LARGE_N; i++) {
        sum += c->in[i];
        c->out[i] = c->in[i] + 1;
    }
    c->sum = sum;
    return 6;
}

struct ctx_try {
    int taken; /* first int: written by rcl_execute_trylock */
    struct shared *s;
};
static int cs_try(void *p)
{
    struct ctx_try *c = p;
    if (c->taken)
        section_body(c->s);
    return c->taken ? 9 : 8;
}

struct run {
    rcl_mutex_t *m;
    struct shared *s;
    enum form form;
    int iters;
    long try_failures;
};

static void do_execute(struct run *r, int i)
{
    struct ctx_plain c = { r->s, 1 + (i & 0x3f) };
    int rc = rcl_execute(r->m, cs_plain, &c);
    CHECK_EQ(rc, c.tag, "rcl_execute return value (fn's value)");
}

static void do_small(struct run *r, int i)
{
    struct ctx_small c = { r->s, i, -1 };
    int rc = RCL_EXECUTE(r->m, cs_small, &c);
    CHECK_EQ(rc, 5, "RCL_EXECUTE return value");
    CHECK_EQ(c.out, i * 3 + 1, "small context written back");
}

static void do_large(struct run *r, int i)
{
    static __thread struct ctx_large c;
    long want = 0;
    c.s = r->s;
    for (int k = 0; k < LARGE_N; k++) {
        c.in[k] = i + k;
        want += i + k;
    }
    c.sum = -1;
    int rc = RCL_EXECUTE(r->m, cs_large, &c);
    CHECK_EQ(rc, 6, "RCL_EXECUTE (large) return value");
    CHECK_EQ(c.sum, want, "large context read by the section");
    CHECK_EQ(c.out[LARGE_N - 1], i + LARGE_N, "large context written back");
}

static void do_hybrid(struct run *r)
{
    CHECK_EQ(rcl_mutex_lock(r->m), 0, "rcl_mutex_lock");
    section_body(r->s);
    CHECK_EQ(rcl_mutex_unlock(r->m), 0, "rcl_mutex_unlock");
}

static long do_hybrid_trylock(struct run *r)
{
    long failures = 0;
    int rc;
    while ((rc = rcl_mutex_trylock(r->m)) != 0) {
        CHECK_EQ(rc, EBUSY, "rcl_mutex_trylock on a busy lock");
        failures++;
        sched_yield();
    }
    section_body(r->s);
    CHECK_EQ(rcl_mutex_unlock(r->m), 0, "rcl_mutex_unlock after trylock");
    return failures;
}

static long do_execute_trylock(struct run *r)
{
    long failures = 0;
    for (;;) {
        struct ctx_try c = { -1, r->s };
        int rc = rcl_execute_trylock(r->m, cs_try, &c);
        CHECK(c.taken == 0 || c.taken == 1, "rcl_execute_trylock stored %d in the first int", c.taken);
        CHECK_EQ(rc, c.taken ? 9 : 8, "rcl_execute_trylock return value (fn's value)");
        if (c.taken)
            return failures;
        failures++;
        sched_yield();
    }
}

static void worker(int index, void *arg)
{
    struct run *r = arg;
    long failures = 0;
    for (int i = 0; i < r->iters; i++) {
        enum form f = r->form;
        if (f == F_MIXED)
            f = (enum form)((i + index) % F_MIXED); /* every form, interleaved across threads */
        switch (f) {
        case F_EXECUTE: do_execute(r, i); break;
        case F_EXECUTE_SMALL: do_small(r, i); break;
        case F_EXECUTE_LARGE: do_large(r, i); break;
        case F_HYBRID: do_hybrid(r); break;
        case F_HYBRID_TRYLOCK: failures += do_hybrid_trylock(r); break;
        case F_EXECUTE_TRYLOCK: failures += do_execute_trylock(r); break;
        default: break;
        }
    }
    __atomic_fetch_add(&r->try_failures, failures, __ATOMIC_RELAXED);
}

static void stress(rcl_mutex_t *m, enum form form, const char *what)
{
    static struct shared s;
    memset(&s, 0, sizeof s);
    int iters = form == F_EXECUTE_LARGE ? ITERS(4000) : ITERS(10000);
    struct run r = { m, &s, form, iters, 0 };
    uint64_t t0 = t_now_ns();
    t_run_threads(NTHREADS, worker, &r);
    long want = (long)NTHREADS * iters;
    CHECK_EQ(s.violations, 0, "sections that overlapped another");
    CHECK_EQ(s.counter, want, "sections counted");
    for (int i = 0; i < NLINES; i++)
        CHECK_EQ(s.line[i][0], want, "cache line writes counted");
    CHECK_EQ(s.inside, 0, "sections still inside");
    OK("%-26s %-24s %d threads x %d sections, exact count%s (%.0f ms)", what, form_names[form], NTHREADS, iters,
       r.try_failures ? ", trylock saw busy" : "", (double)(t_now_ns() - t0) / 1e6);
}

/* Statically initialised locks: one per algorithm and form, so each is first used concurrently. */
#define CFG_STATIC(alg) RCL_LOCK_CONFIG("mutex_stress.c:static_" #alg, alg, 0, -1)
#define STATIC_ROW(alg)                                                                            \
    {                                                                                              \
        RCL_MUTEX_INITIALIZER(CFG_STATIC(alg)), RCL_MUTEX_INITIALIZER(CFG_STATIC(alg)),            \
            RCL_MUTEX_INITIALIZER(CFG_STATIC(alg)), RCL_MUTEX_INITIALIZER(CFG_STATIC(alg)),        \
            RCL_MUTEX_INITIALIZER(CFG_STATIC(alg)), RCL_MUTEX_INITIALIZER(CFG_STATIC(alg)),        \
            RCL_MUTEX_INITIALIZER(CFG_STATIC(alg)),                                                \
    }
static rcl_mutex_t static_locks[T_NALGS][NFORMS] = {
#define RCL_ALGORITHM(ENUM, name, description) STATIC_ROW(RCL_ALG_##ENUM),
#include "rclify/algorithms.def"
#undef RCL_ALGORITHM
};

static void run_zero_filled(int want_alg)
{
    for (int f = 0; f < NFORMS; f++) {
        rcl_mutex_t *m = calloc(1, sizeof *m);
        CHECK(m != NULL, "calloc");
        stress(m, (enum form)f, want_alg == RCL_ALG_RCL ? "calloc'd (RCLIFY_LOCKS rcl)" : "calloc'd (default)");
        CHECK(rcl_mutex_algorithm(m) == want_alg, "zero-filled lock resolved to %s, expected %s",
              rcl_algorithm_name(rcl_mutex_algorithm(m)), rcl_algorithm_name(want_alg));
        CHECK_EQ(rcl_mutex_destroy(m), 0, "rcl_mutex_destroy (zero-filled)");
        free(m);
    }
}

/* Child: RCLIFY_LOCKS='*=rcl' overrides every configuration, zero-filled locks included. */
static int child_env_rcl(void)
{
    rcl_mutex_t m;
    rcl_lock_config_t cfg = t_config("mutex_stress.c:configured_posix", RCL_ALG_POSIX, 0);
    CHECK_EQ(rcl_mutex_init(&m, NULL, &cfg), 0, "rcl_mutex_init");
    CHECK(rcl_mutex_algorithm(&m) == RCL_ALG_RCL, "RCLIFY_LOCKS='*=rcl' left a posix-configured lock on %s",
          rcl_algorithm_name(rcl_mutex_algorithm(&m)));
    stress(&m, F_MIXED, "init'd posix, env rcl");
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "rcl_mutex_destroy");
    rcl_mutex_t *static_posix = &static_locks[T_ALG_ROW(RCL_ALG_POSIX)][F_MIXED];
    stress(static_posix, F_MIXED, "static posix, env rcl");
    CHECK(rcl_mutex_algorithm(static_posix) == RCL_ALG_RCL, "static lock not moved to rcl by RCLIFY_LOCKS");
    run_zero_filled(RCL_ALG_RCL);
    return t_done();
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "mutex_stress");
    if (t_is_child(argc, argv))
        return child_env_rcl();

    FOR_EACH_ALG(a)
    {
        char what[64];
        for (int f = 0; f < NFORMS; f++) {
            rcl_mutex_t m;
            t_mutex_init(&m, -1, "mutex_stress.c:init", a->alg, 0);
            snprintf(what, sizeof what, "%s rcl_mutex_init", a->name);
            stress(&m, (enum form)f, what);
            CHECK_EQ(rcl_mutex_destroy(&m), 0, "rcl_mutex_destroy");
        }
        int row = T_ALG_INDEX(a);
        for (int f = 0; f < NFORMS; f++) {
            snprintf(what, sizeof what, "%s RCL_MUTEX_INITIALIZER", a->name);
            stress(&static_locks[row][f], (enum form)f, what);
            CHECK(rcl_mutex_algorithm(&static_locks[row][f]) == a->alg, "static lock resolved to %s",
                  rcl_algorithm_name(rcl_mutex_algorithm(&static_locks[row][f])));
        }
    }
    run_zero_filled(RCL_ALG_POSIX);

    struct t_child c;
    static const char *const env[] = { "RCLIFY_LOCKS=*=rcl", NULL };
    int rc = t_run_child("--child-env-rcl", NULL, env, 40, &c);
    CHECK(rc == 0, "child with RCLIFY_LOCKS='*=rcl' exited %d%s:\n%s", rc, c.timed_out ? " (timed out)" : "", c.err);
    OK("child with RCLIFY_LOCKS='*=rcl': every lock on rcl, exact counts (%.1f s)", c.seconds);
    return t_done();
}
