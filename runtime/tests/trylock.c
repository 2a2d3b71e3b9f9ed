/*
 * Trylock semantics, on every registered algorithm (FOR_EACH_ALG):
 *   - rcl_execute_trylock (paper, Algorithm 3) on a free lock stores 1 in the context's first int
 *     and runs fn holding the lock; on a busy lock (held in hybrid mode by another thread, or by a
 *     section running on the server) it stores 0 and still runs fn; it returns fn's value and
 *     releases what it took;
 *   - hybrid rcl_mutex_trylock returns 0 on a free lock and EBUSY on a busy one, whoever holds it.
 */
#include "test_util.h"

struct try_ctx {
    int taken; /* first int: 1 taken, 0 busy */
    int ran;
    long *data;
};

static int cs_try(void *p)
{
    struct try_ctx *c = p;
    c->ran = 1;
    if (c->taken)
        (*c->data)++;
    return c->taken ? 42 : 17;
}

struct busy {
    rcl_mutex_t *m;
    long data;
    int entered;  /* the holder is inside */
    int release;  /* the holder may leave */
    int hybrid_rc;
    struct try_ctx ctx;
    int exec_rc;
};

/* On another thread: both trylock forms while the lock is held elsewhere. */
static void try_while_busy(int index, void *arg)
{
    struct busy *b = arg;
    b->hybrid_rc = rcl_mutex_trylock(b->m);
    if (b->hybrid_rc == 0)
        rcl_mutex_unlock(b->m);
    b->ctx = (struct try_ctx){ -1, 0, &b->data };
    b->exec_rc = rcl_execute_trylock(b->m, cs_try, &b->ctx);
}

static void check_busy_results(struct busy *b, const char *alg, const char *holder)
{
    CHECK_EQ(b->hybrid_rc, EBUSY, "rcl_mutex_trylock on a busy lock");
    CHECK_EQ(b->ctx.taken, 0, "rcl_execute_trylock first int on a busy lock");
    CHECK_EQ(b->ctx.ran, 1, "fn ran although the lock was busy");
    CHECK_EQ(b->exec_rc, 17, "rcl_execute_trylock returns fn's value");
    OK("%s: lock held by %s: rcl_mutex_trylock EBUSY, rcl_execute_trylock stores 0 and runs fn", alg, holder);
}

/* A section that stays inside until told to leave. */
static int cs_hold(void *p)
{
    struct busy *b = p;
    __atomic_store_n(&b->entered, 1, __ATOMIC_RELEASE);
    t_wait_flag(&b->release, 1);
    b->data += 100;
    return 3;
}

static void hold_in_section(int index, void *arg)
{
    struct busy *b = arg;
    if (index == 0) {
        CHECK_EQ(rcl_execute(b->m, cs_hold, b), 3, "holding section's return value");
    } else {
        t_wait_flag(&b->entered, 1);
        try_while_busy(index, b);
        __atomic_store_n(&b->release, 1, __ATOMIC_RELEASE);
    }
}

static void check_free(rcl_mutex_t *m, long *data, const char *alg)
{
    long before = *data;
    struct try_ctx c = { -1, 0, data };
    int rc = rcl_execute_trylock(m, cs_try, &c);
    CHECK_EQ(c.taken, 1, "rcl_execute_trylock first int on a free lock");
    CHECK_EQ(c.ran, 1, "fn ran");
    CHECK_EQ(rc, 42, "rcl_execute_trylock returns fn's value");
    CHECK_EQ(*data, before + 1, "fn touched the data under the lock");
    /* It released the lock: a hybrid trylock now succeeds. */
    CHECK_EQ(rcl_mutex_trylock(m), 0, "rcl_mutex_trylock after rcl_execute_trylock released");
    CHECK_EQ(rcl_mutex_unlock(m), 0, "rcl_mutex_unlock");
    OK("%s: free lock: rcl_execute_trylock stores 1, runs fn, releases; rcl_mutex_trylock 0", alg);
}

/* Many threads racing trylocks against a lock that a holder takes and releases. */
struct race {
    rcl_mutex_t *m;
    long data;
    long taken, busy;
};

static void race_worker(int index, void *arg)
{
    struct race *r = arg;
    long taken = 0, busy = 0;
    for (int i = 0; i < ITERS(3000); i++) {
        if (index == 0) {
            rcl_mutex_lock(r->m);
            r->data++;
            rcl_mutex_unlock(r->m);
            continue;
        }
        struct try_ctx c = { -1, 0, &r->data };
        int rc = rcl_execute_trylock(r->m, cs_try, &c);
        CHECK(c.taken == 0 || c.taken == 1, "first int %d", c.taken);
        CHECK_EQ(rc, c.taken ? 42 : 17, "return value");
        CHECK_EQ(c.ran, 1, "fn ran");
        if (c.taken)
            taken++;
        else
            busy++;
    }
    __atomic_fetch_add(&r->taken, taken, __ATOMIC_RELAXED);
    __atomic_fetch_add(&r->busy, busy, __ATOMIC_RELAXED);
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "trylock");
    FOR_EACH_ALG(a)
    {
        rcl_mutex_t m;
        t_mutex_init(&m, -1, "trylock.c:m", a->alg, 0);
        struct busy b = { .m = &m };

        check_free(&m, &b.data, a->name);

        /* Busy: held in hybrid mode by this thread, tried from another one. */
        CHECK_EQ(rcl_mutex_lock(&m), 0, "rcl_mutex_lock");
        t_run_threads(1, try_while_busy, &b);
        CHECK_EQ(rcl_mutex_unlock(&m), 0, "rcl_mutex_unlock");
        check_busy_results(&b, a->name, "a hybrid section");
        check_free(&m, &b.data, a->name);

        /* Busy: held by a section running (on the server, under rcl), tried from a third thread. */
        b.entered = b.release = 0;
        long before = b.data;
        t_run_threads(2, hold_in_section, &b);
        check_busy_results(&b, a->name, "an extracted section");
        CHECK_EQ(b.data, before + 100, "holding section completed");
        check_free(&m, &b.data, a->name);

        /* Racing: exact count of the sections that took the lock. */
        struct race r = { .m = &m };
        t_run_threads(4, race_worker, &r);
        CHECK_EQ(r.data, ITERS(3000) + r.taken, "sections that took the lock, counted");
        CHECK_EQ(r.taken + r.busy, 3L * ITERS(3000), "trylock calls");
        OK("%s: 3 trylock threads against a locking one: %ld taken, %ld busy, exact count", a->name, r.taken, r.busy);
        CHECK_EQ(rcl_mutex_destroy(&m), 0, "rcl_mutex_destroy");
    }
    return t_done();
}
