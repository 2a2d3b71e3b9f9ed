/*
 * errno around extracted sections, on every registered algorithm (FOR_EACH_ALG).  A section may
 * run on another thread (an RCL server); the code after it reads errno on the calling thread, as
 * the original code did after its unlock.  So, through rcl_execute, RCL_EXECUTE (inline context
 * copy), rcl_execute_trylock and rcl_execute_local:
 *   - a section whose system call fails (open of a missing file) leaves ENOENT in the caller's
 *     errno;
 *   - a section that does not touch errno leaves the caller's as it was (1234 stays 1234), and
 *     sees it on entry, as it would have on the calling thread;
 *   - a section that sets errno to 0 leaves 0;
 *   - under contention (several threads, each section setting its own value) each caller gets
 *     its own section's errno, and the lock operations (hybrid lock, unlock, trylock, timed lock,
 *     condvar wait) leave errno alone;
 *   - a section nested on another server (RCL) passes errno both ways.
 */
#include "test_util.h"

struct ectx {
    int taken; /* first int: rcl_execute_trylock's flag */
    int set;   /* -1: leave errno alone; -2: open a missing file; else errno = set */
    int seen;  /* errno on entry */
};

static int cs_errno(void *p)
{
    struct ectx *c = p;
    c->seen = errno;
    if (c->set == -2) {
        int fd = open("/nonexistent/x", O_RDONLY);
        CHECK(fd < 0, "open of a missing file succeeded");
    } else if (c->set >= 0) {
        errno = c->set;
    }
    return 11;
}

enum { VIA_EXECUTE, VIA_EXECUTE_SIZED, VIA_TRYLOCK, VIA_LOCAL, N_VIA };
static const char *const via_name[N_VIA] = { "rcl_execute", "RCL_EXECUTE", "rcl_execute_trylock",
                                             "rcl_execute_local" };

static int run_via(int via, rcl_mutex_t *m, struct ectx *c)
{
    switch (via) {
    case VIA_EXECUTE:
        return rcl_execute(m, cs_errno, c);
    case VIA_EXECUTE_SIZED:
        return RCL_EXECUTE(m, cs_errno, c);
    case VIA_TRYLOCK:
        return rcl_execute_trylock(m, cs_errno, c);
    default:
        return rcl_execute_local(m, cs_errno, c);
    }
}

static void single_thread(const struct t_alg *a)
{
    rcl_mutex_t m;
    t_mutex_init(&m, -1, "errno", a->alg, 0);
    for (int round = 0; round < 3; round++) /* the first round also resolves and starts things */
        for (int via = 0; via < N_VIA; via++) {
            struct ectx c = { 0, -2, 0 };
            errno = 0;
            CHECK_EQ(run_via(via, &m, &c), 11, "section's value");
            CHECK(errno == ENOENT, "%s: %s: errno %d (%s) after a section whose open failed, expected ENOENT",
                  a->name, via_name[via], errno, strerror(errno));

            c = (struct ectx){ 0, -1, 0 };
            errno = 1234;
            CHECK_EQ(run_via(via, &m, &c), 11, "section's value");
            CHECK(errno == 1234, "%s: %s: errno %d after a section that does not touch it, expected 1234", a->name,
                  via_name[via], errno);
            CHECK(c.seen == 1234, "%s: %s: the section saw errno %d on entry, expected the caller's 1234", a->name,
                  via_name[via], c.seen);

            c = (struct ectx){ 0, 0, 0 };
            errno = EINTR;
            CHECK_EQ(run_via(via, &m, &c), 11, "section's value");
            CHECK(errno == 0, "%s: %s: errno %d after a section that set it to 0", a->name, via_name[via], errno);
        }
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");
    OK("%s: errno after rcl_execute, RCL_EXECUTE, rcl_execute_trylock, rcl_execute_local: the section's "
       "ENOENT, the caller's 1234 when the section leaves it alone (and seen on entry), 0 when it sets 0",
       a->name);
}

/* ---- contention: each caller gets its own section's errno ---- */

struct shared {
    rcl_mutex_t m;
    rcl_cond_t c;
    long data;      /* counted under the lock */
    long taken[4];  /* per thread: how many times it counted */
};

/* A thread's context: the errno its section sets. */
struct tctx {
    int taken;
    int set;
    struct shared *sh;
};

static int cs_thread(void *p)
{
    struct tctx *c = p;
    if (c->taken) /* (rcl_execute_trylock: 0 when it runs without the lock) */
        c->sh->data++;
    errno = c->set;
    return 5;
}

static void worker(int index, void *arg)
{
    struct shared *sh = arg;
    for (int i = 0; i < ITERS(4000); i++) {
        int want = 1000 + index * 100 + i % 7;
        struct tctx c = { 1, want, sh };
        int counted = 1;
        errno = -1;
        switch (i % 6) {
        case 0:
            CHECK_EQ(rcl_execute(&sh->m, cs_thread, &c), 5, "value");
            break;
        case 1:
            CHECK_EQ(RCL_EXECUTE(&sh->m, cs_thread, &c), 5, "value");
            break;
        case 2:
            CHECK_EQ(rcl_execute_trylock(&sh->m, cs_thread, &c), 5, "value");
            counted = c.taken;
            break;
        case 3: { /* hybrid lock and unlock leave errno alone */
            errno = want;
            CHECK_EQ(rcl_mutex_lock(&sh->m), 0, "lock");
            sh->data++;
            CHECK_EQ(rcl_mutex_unlock(&sh->m), 0, "unlock");
            break;
        }
        case 4: { /* timed lock and signal too */
            errno = want;
            struct timespec dl;
            clock_gettime(CLOCK_MONOTONIC, &dl);
            dl.tv_sec += 10;
            CHECK_EQ(rcl_mutex_clocklock(&sh->m, CLOCK_MONOTONIC, &dl), 0, "clocklock");
            sh->data++;
            rcl_cond_signal(&sh->c);
            CHECK_EQ(rcl_mutex_unlock(&sh->m), 0, "unlock");
            break;
        }
        default:
            errno = want;
            counted = rcl_mutex_trylock(&sh->m) == 0;
            if (counted) {
                sh->data++;
                CHECK_EQ(rcl_mutex_unlock(&sh->m), 0, "unlock");
            }
            break;
        }
        CHECK(errno == want, "thread %d, operation %d: errno %d, expected %d", index, i % 6, errno, want);
        sh->taken[index] += counted;
    }
}

static void threads(const struct t_alg *a)
{
    struct shared *sh = calloc(1, sizeof *sh);
    CHECK(sh != NULL, "out of memory");
    t_mutex_init(&sh->m, -1, "errno-contended", a->alg, 0);
    CHECK_EQ(rcl_cond_init(&sh->c, NULL), 0, "rcl_cond_init");
    t_run_threads(4, worker, sh);
    CHECK_EQ(sh->data, sh->taken[0] + sh->taken[1] + sh->taken[2] + sh->taken[3], "sections counted");
    CHECK_EQ(rcl_cond_destroy(&sh->c), 0, "rcl_cond_destroy");
    CHECK_EQ(rcl_mutex_destroy(&sh->m), 0, "destroy");
    OK("%s: 4 threads, sections setting each its own errno and hybrid / timed / try locks: every caller "
       "kept its own errno", a->name);
    free(sh);
}

/* A condvar wait with a timeout, inside a section and in hybrid mode, leaves errno alone. */
struct cw {
    rcl_mutex_t *m;
    rcl_cond_t *c;
    int after;
};

static int cs_timed_wait(void *p)
{
    struct cw *w = p;
    errno = 4321;
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_nsec += 2000000;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    CHECK_EQ(rcl_cond_clockwait(w->c, w->m, CLOCK_MONOTONIC, &dl), ETIMEDOUT, "clockwait");
    w->after = errno;
    return 0;
}

static void condwait(const struct t_alg *a)
{
    rcl_mutex_t m;
    rcl_cond_t c;
    t_mutex_init(&m, -1, "errno-cond", a->alg, 0);
    CHECK_EQ(rcl_cond_init(&c, NULL), 0, "rcl_cond_init");
    struct cw w = { &m, &c, 0 };
    errno = 7;
    CHECK_EQ(rcl_execute(&m, cs_timed_wait, &w), 0, "section");
    CHECK_EQ(w.after, 4321, "errno after a timed-out clockwait in a section");
    CHECK_EQ(errno, 4321, "the section's errno came back");
    CHECK_EQ(rcl_mutex_lock(&m), 0, "lock");
    errno = 8;
    struct timespec dl = { 0, 0 };
    CHECK_EQ(rcl_cond_timedwait(&c, &m, &dl), ETIMEDOUT, "timedwait, deadline passed");
    CHECK_EQ(errno, 8, "errno after a timed-out timedwait");
    CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock");
    CHECK_EQ(rcl_cond_destroy(&c), 0, "rcl_cond_destroy");
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");
    OK("%s: timed condvar waits (section, hybrid) leave errno alone", a->name);
}

/* Nested: a section of server 0 runs a section of a lock on server 1 (RCL) that fails an open. */
struct nest {
    rcl_mutex_t *inner;
    int seen_inner, after_inner;
};

static int cs_inner(void *p)
{
    struct nest *n = p;
    n->seen_inner = errno;
    int fd = open("/nonexistent/x", O_RDONLY);
    CHECK(fd < 0, "open of a missing file succeeded");
    return 1;
}

static int cs_outer(void *p)
{
    struct nest *n = p;
    errno = 2222;
    CHECK_EQ(rcl_execute(n->inner, cs_inner, n), 1, "inner section");
    n->after_inner = errno;
    errno = 3333;
    return 2;
}

static void nested(const struct t_alg *a)
{
    rcl_mutex_t outer, inner;
    t_mutex_init(&outer, -1, "errno-outer", a->alg, 0);
    t_mutex_init(&inner, -1, "errno-inner", a->alg, 1);
    struct nest n = { &inner, 0, 0 };
    errno = 1;
    CHECK_EQ(rcl_execute(&outer, cs_outer, &n), 2, "outer section");
    CHECK_EQ(n.seen_inner, 2222, "the inner section saw the outer one's errno");
    CHECK_EQ(n.after_inner, ENOENT, "the outer section got the inner one's errno");
    CHECK_EQ(errno, 3333, "the caller got the outer section's errno");
    CHECK_EQ(rcl_mutex_destroy(&inner), 0, "destroy");
    CHECK_EQ(rcl_mutex_destroy(&outer), 0, "destroy");
    OK("%s: nested sections on two servers pass errno both ways", a->name);
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "errno_travels");
    FOR_EACH_ALG(a) {
        single_thread(a);
        threads(a);
        condwait(a);
        nested(a);
    }
    return t_done();
}
