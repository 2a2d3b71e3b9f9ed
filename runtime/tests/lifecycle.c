/*
 * Lock lifecycles, with every registered algorithm (FOR_EACH_ALG):
 *   - statically initialised locks whose first use is a race: 6 threads released at once onto a
 *     fresh RCL_MUTEX_INITIALIZER lock, 20 times; exact counts;
 *   - a lock on the stack created, used by 2 threads and destroyed, 200 times in a row at the same
 *     address, over 4 servers;
 *   - 64 locks spread over 8 servers, used at once by 4 threads; exact count per lock.
 */
#include "test_util.h"

static int go;
static long counts[64];

static int cs_inc(void *p)
{
    (*(long *)p)++;
    return 1;
}

/* ---- racing first use of static locks ---- */

#define NSTATIC 20
#define CFG(alg) RCL_LOCK_CONFIG("lifecycle.c:static", alg, 0, -1)
#define ROW(alg)                                                                                   \
    {                                                                                              \
        RCL_MUTEX_INITIALIZER(CFG(alg)), RCL_MUTEX_INITIALIZER(CFG(alg)), RCL_MUTEX_INITIALIZER(CFG(alg)), \
            RCL_MUTEX_INITIALIZER(CFG(alg)), RCL_MUTEX_INITIALIZER(CFG(alg)), RCL_MUTEX_INITIALIZER(CFG(alg)), \
            RCL_MUTEX_INITIALIZER(CFG(alg)), RCL_MUTEX_INITIALIZER(CFG(alg)), RCL_MUTEX_INITIALIZER(CFG(alg)), \
            RCL_MUTEX_INITIALIZER(CFG(alg)), RCL_MUTEX_INITIALIZER(CFG(alg)), RCL_MUTEX_INITIALIZER(CFG(alg)), \
            RCL_MUTEX_INITIALIZER(CFG(alg)), RCL_MUTEX_INITIALIZER(CFG(alg)), RCL_MUTEX_INITIALIZER(CFG(alg)), \
            RCL_MUTEX_INITIALIZER(CFG(alg)), RCL_MUTEX_INITIALIZER(CFG(alg)), RCL_MUTEX_INITIALIZER(CFG(alg)), \
            RCL_MUTEX_INITIALIZER(CFG(alg)), RCL_MUTEX_INITIALIZER(CFG(alg)),                      \
    }
static rcl_mutex_t statics[T_NALGS][NSTATIC] = {
#define RCL_ALGORITHM(ENUM, name, description) ROW(RCL_ALG_##ENUM),
#include "rclify/algorithms.def"
#undef RCL_ALGORITHM
};
static rcl_mutex_t *racing;

static void first_use(int index, void *arg)
{
    __atomic_fetch_add(&go, 1, __ATOMIC_ACQ_REL);
    t_wait_flag(&go, 6);
    for (int i = 0; i < 100; i++) {
        if (i % 2) {
            CHECK_EQ(rcl_execute(racing, cs_inc, &counts[0]), 1, "section");
        } else {
            CHECK_EQ(rcl_mutex_lock(racing), 0, "lock");
            counts[0]++;
            CHECK_EQ(rcl_mutex_unlock(racing), 0, "unlock");
        }
    }
}

/* ---- create, use, destroy ---- */

static rcl_mutex_t *current;
static void use_current(int index, void *arg)
{
    for (int i = 0; i < 20; i++)
        CHECK_EQ(rcl_execute(current, cs_inc, &counts[0]), 1, "section");
}

/* ---- many locks, many servers ---- */

static rcl_mutex_t many[64];
static void use_many(int index, void *arg)
{
    for (int i = 0; i < ITERS(4000); i++) {
        int k = (index * 17 + i * 7) % 64;
        CHECK_EQ(rcl_execute(&many[k], cs_inc, &counts[k]), 1, "section");
    }
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "lifecycle");
    FOR_EACH_ALG(a)
    {
        int row = T_ALG_INDEX(a);
        for (int s = 0; s < NSTATIC; s++) {
            racing = &statics[row][s];
            go = 0;
            counts[0] = 0;
            t_run_threads(6, first_use, NULL);
            CHECK_EQ(counts[0], 600, "sections on a static lock first used by 6 threads at once");
            CHECK(rcl_mutex_algorithm(racing) == a->alg, "static lock resolved to %s",
                  rcl_algorithm_name(rcl_mutex_algorithm(racing)));
        }
        OK("%s: %d static locks, each first used by 6 threads at once: resolved once, exact counts", a->name, NSTATIC);

        uint64_t t0 = t_now_ns();
        for (int r = 0; r < ITERS(200); r++) {
            rcl_mutex_t m;
            t_mutex_init(&m, -1, "lifecycle.c:stack", a->alg, r % 4);
            current = &m;
            counts[0] = 0;
            t_run_threads(2, use_current, NULL);
            CHECK_EQ(counts[0], 40, "sections on a short-lived lock");
            CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");
            memset(&m, 0xa5, sizeof m); /* garbage before the next init at this address */
        }
        OK("%s: %d locks created, used by 2 threads, destroyed at one stack address over 4 servers (%.0f ms)", a->name,
           ITERS(200), (double)(t_now_ns() - t0) / 1e6);

        t0 = t_now_ns();
        memset(counts, 0, sizeof counts);
        for (int k = 0; k < 64; k++)
            t_mutex_init(&many[k], -1, "lifecycle.c:many", a->alg, k % 8);
        t_run_threads(4, use_many, NULL);
        long total = 0;
        for (int k = 0; k < 64; k++)
            total += counts[k];
        CHECK_EQ(total, 4L * ITERS(4000), "sections over 64 locks");
        for (int k = 0; k < 64; k++) {
            long want = 0;
            for (int t = 0; t < 4; t++)
                for (int i = 0; i < ITERS(4000); i++)
                    want += (t * 17 + i * 7) % 64 == k;
            CHECK_EQ(counts[k], want, "sections on one of the 64 locks");
            CHECK_EQ(rcl_mutex_destroy(&many[k]), 0, "destroy");
        }
        OK("%s: 64 locks on 8 servers, 4 threads x %d sections, exact count per lock (%.0f ms)", a->name, ITERS(4000),
           (double)(t_now_ns() - t0) / 1e6);
    }
    return t_done();
}
