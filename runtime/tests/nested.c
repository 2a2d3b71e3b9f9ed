/*
 * Nested critical sections, always taken in the same order (outer, then inner):
 *   - both locks on one algorithm, for every registered algorithm (under rcl: both on server 0,
 *     the paper's nested RCL on one server);
 *   - the same with the inner lock on server 1 (a section on server 0 is a client of server 1);
 *   - a hybrid lock/unlock of the inner lock inside an extracted section, and an extracted section
 *     inside a hybrid one;
 *   - rcl outer with a posix inner and the reverse;
 *   - three levels across both servers;
 *   - a condvar wait inside an inner section on server 1 nested in an outer one on server 0 (every
 *     registered algorithm).
 * 4 threads, exact counts of both the outer and the inner data.
 */
#include "test_util.h"

static rcl_mutex_t *outer, *inner, *third;
static long outer_count, inner_count, third_count;

static int cs_third(void *p)
{
    third_count++;
    return 3;
}

static int cs_inner(void *p)
{
    inner_count++;
    if (third)
        return rcl_execute(third, cs_third, NULL) == 3 ? 2 : -3;
    return 2;
}

static int cs_inner_hybrid(void *p)
{
    if (rcl_mutex_lock(inner))
        return -2;
    inner_count++;
    rcl_mutex_unlock(inner);
    return 2;
}

static int cs_outer(void *p)
{
    int hybrid_inner = *(int *)p;
    long before = outer_count;
    int rc;
    if (hybrid_inner)
        rc = cs_inner_hybrid(NULL);
    else
        rc = rcl_execute(inner, cs_inner, NULL);
    outer_count = before + 1; /* split update: lost if another outer section overlapped */
    return rc == 2 ? 1 : rc;
}

enum shape { EXEC_EXEC, EXEC_HYBRID, HYBRID_EXEC };
static enum shape shape;

static int iters;

static void worker(int index, void *arg)
{
    for (int i = 0; i < iters; i++) {
        int hybrid_inner = shape == EXEC_HYBRID;
        int rc;
        if (shape == HYBRID_EXEC) {
            CHECK_EQ(rcl_mutex_lock(outer), 0, "outer hybrid lock");
            rc = cs_outer(&hybrid_inner);
            CHECK_EQ(rcl_mutex_unlock(outer), 0, "outer hybrid unlock");
        } else {
            rc = rcl_execute(outer, cs_outer, &hybrid_inner);
        }
        CHECK_EQ(rc, 1, "nested section (-2/-3: inner lock failed)");
    }
}

static void run(int outer_alg, int outer_server, int inner_alg, int inner_server, enum shape s, int three_levels)
{
    static const char *const shapes[] = { "execute in execute", "hybrid in execute", "execute in hybrid" };
    rcl_mutex_t mo, mi, mt;
    t_mutex_init(&mo, -1, "nested.c:outer", outer_alg, outer_server);
    t_mutex_init(&mi, -1, "nested.c:inner", inner_alg, inner_server);
    outer = &mo;
    inner = &mi;
    third = NULL;
    if (three_levels) {
        t_mutex_init(&mt, -1, "nested.c:third", RCL_ALG_RCL, 0);
        third = &mt;
    }
    shape = s;
    iters = ITERS(3000);
    outer_count = inner_count = third_count = 0;
    uint64_t t0 = t_now_ns();
    t_run_threads(4, worker, NULL);
    long want = 4L * iters;
    CHECK_EQ(outer_count, want, "outer sections");
    CHECK_EQ(inner_count, want, "inner sections");
    CHECK_EQ(third_count, three_levels ? want : 0, "third-level sections");
    double ms = (double)(t_now_ns() - t0) / 1e6;
    /* A cycle through two servers (0 > 1 > 0) leaves server 0's servicing thread spinning on
     * server 1 while server 1 needs server 0: server 0 must have another servicing thread ready,
     * not wait for its management thread's timeout on every section (that took ~2.6 ms each). */
    CHECK(ms < 20000, "%ld nested sections took %.0f ms", want, ms);
    OK("%s on server %d > %s on server %d%s, %s: 4 threads x %d, exact counts (%.0f ms, %.1f us/section)",
       rcl_algorithm_name(outer_alg), outer_server, rcl_algorithm_name(inner_alg), inner_server,
       three_levels ? " > rcl on server 0" : "", shapes[s], iters, ms, ms * 1000 / want);
    CHECK_EQ(rcl_mutex_destroy(&mo), 0, "destroy");
    CHECK_EQ(rcl_mutex_destroy(&mi), 0, "destroy");
    if (three_levels)
        CHECK_EQ(rcl_mutex_destroy(&mt), 0, "destroy");
}

/*
 * A condvar wait in an inner section on server 1, nested in an outer section on server 0: server
 * 0's servicing thread waits for server 1 while the inner section waits for a signal; a section
 * on server 1 signals it, and sections on another lock of server 0 keep running meanwhile.
 */
static rcl_mutex_t ca, cb, cc;
static rcl_cond_t ccv;
static int c_flag, c_waiting, c_done;
static long c_count;

static int cs_c_inner(void *p)
{
    __atomic_store_n(&c_waiting, 1, __ATOMIC_RELEASE);
    int rc = 0;
    while (!c_flag && rc == 0)
        rc = rcl_cond_wait(&ccv, &cb);
    return rc ? 100 + rc : 1;
}
static int cs_c_outer(void *p)
{
    return rcl_execute(&cb, cs_c_inner, NULL);
}
static int cs_c_signal(void *p)
{
    c_flag = 1;
    return rcl_cond_signal(&ccv);
}
static int cs_c_count(void *p)
{
    c_count++;
    return 0;
}

static void cond_worker(int index, void *arg)
{
    if (index == 0) {
        CHECK_EQ(rcl_execute(&ca, cs_c_outer, NULL), 1, "outer section whose inner one waited (100+: wait failed)");
        __atomic_store_n(&c_done, 1, __ATOMIC_RELEASE);
    } else if (index == 1) {
        t_wait_flag(&c_waiting, 1);
        for (int i = 0; i < 100; i++) /* server 0 still serves its other locks */
            rcl_execute(&cc, cs_c_count, NULL);
        CHECK_EQ(rcl_execute(&cb, cs_c_signal, NULL), 0, "signalling section on server 1");
    }
}

static void cond_in_nested(int alg)
{
    t_mutex_init(&ca, -1, "nested.c:ca", alg, 0);
    t_mutex_init(&cb, -1, "nested.c:cb", alg, 1);
    t_mutex_init(&cc, -1, "nested.c:cc", alg, 0);
    rcl_cond_init(&ccv, NULL);
    c_count = 0;
    for (int r = 0; r < 5; r++) {
        c_flag = c_waiting = c_done = 0;
        t_run_threads(2, cond_worker, NULL);
    }
    CHECK_EQ(c_count, 500, "sections on server 0's other lock");
    rcl_cond_destroy(&ccv);
    CHECK_EQ(rcl_mutex_destroy(&ca), 0, "destroy");
    CHECK_EQ(rcl_mutex_destroy(&cb), 0, "destroy");
    CHECK_EQ(rcl_mutex_destroy(&cc), 0, "destroy");
    OK("%s: condvar wait in an inner section on server 1 nested in one on server 0, other server-0 sections "
       "served meanwhile, x 5", rcl_algorithm_name(alg));
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "nested");
    for (int s = EXEC_EXEC; s <= HYBRID_EXEC; s++) {
        FOR_EACH_ALG(a)
        {
            run(a->alg, 0, a->alg, 0, (enum shape)s, 0);
        }
        run(RCL_ALG_RCL, 0, RCL_ALG_RCL, 1, (enum shape)s, 0);
        run(RCL_ALG_RCL, 0, RCL_ALG_POSIX, 0, (enum shape)s, 0);
        run(RCL_ALG_POSIX, 0, RCL_ALG_RCL, 1, (enum shape)s, 0);
    }
    run(RCL_ALG_RCL, 0, RCL_ALG_RCL, 1, EXEC_EXEC, 1);
    run(RCL_ALG_RCL, 1, RCL_ALG_RCL, 0, EXEC_EXEC, 1);
    FOR_EACH_ALG(a)
    {
        cond_in_nested(a->alg);
    }
    return t_done();
}
