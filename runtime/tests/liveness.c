/*
 * Liveness of an RCL server whose sections block or busy-wait (paper section 3.2.1, Figure 2).
 * Three locks on the same server:
 *   c1's section on L1 blocks in rcl_cond_wait until `go`;
 *   c2's section on L2 busy-waits (pure spin, no yield) until `var` is set;
 *   c3's section on L3 sets `var`: it can only run if the server finds another servicing thread
 *   while the first two are blocked and spinning.
 * Then a section on L1 sets `go` and signals c1.  Several rounds, so the pool of servicing threads
 * grows and shrinks repeatedly.  Run in this process (default settings), then in children with
 * RCLIFY_FIFO=1 (SCHED_FIFO servicing threads where permitted) and with RCLIFY_NO_FIFO=1 as well
 * (degraded mode forced).  Must complete.  Also run with the posix algorithm for reference.
 * Second scenario, same settings: a section blocks on a condvar of a posix lock taken inside it,
 * and the section that signals it runs on the same server.  Third: a client holds a lock in hybrid
 * mode until a section on another lock of the server runs, while a section on the held lock waits
 * on the server.
 */
#include "test_util.h"

#define ROUNDS 5

static rcl_mutex_t l1, l2, l3;
static rcl_cond_t cv;
static int go;            /* protected by l1 */
static int var;           /* ad hoc synchronisation: atomic */
static int c1_in, c2_in;  /* handshakes with the main thread */
static long sections;     /* protected by l3 */

static int cs_c1(void *p)
{
    __atomic_store_n(&c1_in, 1, __ATOMIC_RELEASE);
    while (!go) {
        int rc = rcl_cond_wait(&cv, &l1);
        if (rc)
            return 100 + rc;
    }
    return 1;
}

static int cs_c2(void *p)
{
    __atomic_store_n(&c2_in, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&var, __ATOMIC_ACQUIRE))
        t_cpu_relax();
    return 2;
}

static int cs_c3(void *p)
{
    sections++;
    __atomic_store_n(&var, 1, __ATOMIC_RELEASE);
    return 3;
}

static int cs_go(void *p)
{
    go = 1;
    return rcl_cond_signal(&cv);
}

static void client(int index, void *arg)
{
    switch (index) {
    case 0:
        CHECK_EQ(rcl_execute(&l1, cs_c1, NULL), 1, "c1: section blocked in rcl_cond_wait (100+: wait failed)");
        break;
    case 1:
        t_wait_flag(&c1_in, 1);
        CHECK_EQ(rcl_execute(&l2, cs_c2, NULL), 2, "c2: busy-waiting section");
        break;
    case 2:
        t_wait_flag(&c2_in, 1);
        CHECK_EQ(rcl_execute(&l3, cs_c3, NULL), 3, "c3: section setting the flag");
        break;
    case 3:
        /* Once c2 and c3 are done, release c1. */
        t_wait_flag(&var, 1);
        CHECK_EQ(rcl_execute(&l1, cs_go, NULL), 0, "section signalling c1");
        break;
    }
}

/*
 * A section on l1 waits on a condvar with a posix lock p (taken in hybrid mode inside the
 * section): the servicing thread blocks on a lock the server knows nothing of.  The signal comes
 * from a section on l2, same server, which must find another servicing thread.
 */
static rcl_mutex_t p;
static rcl_cond_t pcv;
static int p_ready, p_waiting;

static int cs_wait_posix(void *arg)
{
    rcl_mutex_lock(&p);
    __atomic_store_n(&p_waiting, 1, __ATOMIC_RELEASE);
    int rc = 0;
    while (!p_ready && rc == 0)
        rc = rcl_cond_wait(&pcv, &p);
    rcl_mutex_unlock(&p);
    return rc ? 100 + rc : 1;
}

static int cs_signal_posix(void *arg)
{
    rcl_mutex_lock(&p);
    p_ready = 1;
    rcl_cond_signal(&pcv);
    rcl_mutex_unlock(&p);
    return 2;
}

static void posix_waiter(int index, void *arg)
{
    if (index == 0) {
        CHECK_EQ(rcl_execute(&l1, cs_wait_posix, NULL), 1, "section waiting on a posix condvar (100+: wait failed)");
    } else {
        t_wait_flag(&p_waiting, 1);
        CHECK_EQ(rcl_execute(&l2, cs_signal_posix, NULL), 2, "section signalling it, same server");
    }
}

static void scenario_posix_wait(int alg, const char *mode)
{
    t_mutex_init(&l1, -1, "liveness.c:l1", alg, 0);
    t_mutex_init(&l2, -1, "liveness.c:l2", alg, 0);
    t_mutex_init(&p, -1, "liveness.c:p", RCL_ALG_POSIX, 0);
    rcl_cond_init(&pcv, NULL);
    for (int r = 0; r < ROUNDS; r++) {
        p_ready = p_waiting = 0;
        t_run_threads(2, posix_waiter, NULL);
    }
    rcl_cond_destroy(&pcv);
    CHECK_EQ(rcl_mutex_destroy(&p), 0, "destroy p");
    CHECK_EQ(rcl_mutex_destroy(&l1), 0, "destroy l1");
    CHECK_EQ(rcl_mutex_destroy(&l2), 0, "destroy l2");
    OK("%s, %s: section blocked on a posix lock's condvar, signalled by a section on the same server x %d",
       rcl_algorithm_name(alg), mode, ROUNDS);
}

/*
 * A client holds l1 in hybrid mode and waits for a flag; another client's section on l1 queues on
 * the server behind it; the flag is set by a section on l2, same server.  The server must not
 * stay stuck on the queued l1 section.
 */
static int h_flag, h_holding, h_queued;

static int cs_h_l1(void *arg)
{
    return 1;
}

static int cs_h_flag(void *arg)
{
    __atomic_store_n(&h_flag, 1, __ATOMIC_RELEASE);
    return 2;
}

static void hybrid_holder(int index, void *arg)
{
    if (index == 0) {
        CHECK_EQ(rcl_mutex_lock(&l1), 0, "hybrid lock");
        __atomic_store_n(&h_holding, 1, __ATOMIC_RELEASE);
        t_wait_flag(&h_flag, 1);
        CHECK_EQ(rcl_mutex_unlock(&l1), 0, "hybrid unlock");
    } else if (index == 1) {
        t_wait_flag(&h_holding, 1);
        __atomic_store_n(&h_queued, 1, __ATOMIC_RELEASE);
        CHECK_EQ(rcl_execute(&l1, cs_h_l1, NULL), 1, "section queued behind the hybrid holder");
    } else {
        t_wait_flag(&h_queued, 1);
        usleep(2000); /* let the l1 request reach the server */
        CHECK_EQ(rcl_execute(&l2, cs_h_flag, NULL), 2, "section on l2 setting the flag");
    }
}

static void scenario_hybrid_holder(int alg, const char *mode)
{
    t_mutex_init(&l1, -1, "liveness.c:l1", alg, 0);
    t_mutex_init(&l2, -1, "liveness.c:l2", alg, 0);
    for (int r = 0; r < ROUNDS; r++) {
        h_flag = h_holding = h_queued = 0;
        t_run_threads(3, hybrid_holder, NULL);
    }
    CHECK_EQ(rcl_mutex_destroy(&l1), 0, "destroy l1");
    CHECK_EQ(rcl_mutex_destroy(&l2), 0, "destroy l2");
    OK("%s, %s: client holding l1 (hybrid) until a section on l2 runs, a section on l1 queued meanwhile x %d",
       rcl_algorithm_name(alg), mode, ROUNDS);
}

static void scenario(int alg, const char *mode)
{
    t_mutex_init(&l1, -1, "liveness.c:l1", alg, 0);
    t_mutex_init(&l2, -1, "liveness.c:l2", alg, 0);
    t_mutex_init(&l3, -1, "liveness.c:l3", alg, 0);
    rcl_cond_init(&cv, NULL);
    sections = 0;
    uint64_t t0 = t_now_ns();
    for (int r = 0; r < ROUNDS; r++) {
        go = var = c1_in = c2_in = 0;
        t_run_threads(4, client, NULL);
    }
    CHECK_EQ(sections, ROUNDS, "flag-setting sections");
    rcl_cond_destroy(&cv);
    CHECK_EQ(rcl_mutex_destroy(&l1), 0, "destroy l1");
    CHECK_EQ(rcl_mutex_destroy(&l2), 0, "destroy l2");
    CHECK_EQ(rcl_mutex_destroy(&l3), 0, "destroy l3");
    OK("%s, %s: Figure 2 (blocked + busy-waiting sections, third lock on the same server) x %d rounds (%.0f ms)",
       rcl_algorithm_name(alg), mode, ROUNDS, (double)(t_now_ns() - t0) / 1e6);
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "liveness");
    if (t_is_child(argc, argv)) {
        scenario(RCL_ALG_RCL, argv[2]);
        scenario_posix_wait(RCL_ALG_RCL, argv[2]);
        scenario_hybrid_holder(RCL_ALG_RCL, argv[2]);
        rcl_stats_print(2); /* its server table says which mode the server ran in */
        return t_done();
    }
    scenario(RCL_ALG_POSIX, "default settings");
    scenario(RCL_ALG_RCL, "default settings");
    scenario_posix_wait(RCL_ALG_POSIX, "default settings");
    scenario_posix_wait(RCL_ALG_RCL, "default settings");
    scenario_hybrid_holder(RCL_ALG_POSIX, "default settings");
    scenario_hybrid_holder(RCL_ALG_RCL, "default settings");

    static const struct {
        const char *mode;
        const char *env[4];
        int degraded;
    } children[] = {
        { "RCLIFY_FIFO=1", { "RCLIFY_FIFO=1", "RCLIFY_NO_FIFO", NULL }, 0 },
        { "RCLIFY_FIFO=1 RCLIFY_NO_FIFO=1 (degraded)", { "RCLIFY_FIFO=1", "RCLIFY_NO_FIFO=1", NULL }, 1 },
        { "RCLIFY_NO_FIFO=1 (degraded)", { "RCLIFY_FIFO", "RCLIFY_NO_FIFO=1", NULL }, 1 },
    };
    for (size_t i = 0; i < sizeof children / sizeof children[0]; i++) {
        struct t_child c;
        int rc = t_run_child("--child", children[i].mode, children[i].env, 30, &c);
        CHECK(rc == 0, "child with %s exited %d%s:\n%s", children[i].mode, rc, c.timed_out ? " (timed out: no liveness)" : "",
              c.err);
        /* The server table's mode column: "fifo" or "degr". */
        int fifo = strstr(c.err, " fifo ") != NULL, degr = strstr(c.err, " degr ") != NULL;
        CHECK(fifo || degr, "no server mode in the statistics:\n%s", c.err);
        if (children[i].degraded)
            CHECK(!fifo, "%s: a server ran in fifo mode:\n%s", children[i].mode, c.err);
        OK("child with %s: completed in %.2f s, server mode %s%s", children[i].mode, c.seconds, fifo ? "fifo" : "degraded",
           !children[i].degraded && !fifo ? " (SCHED_FIFO not permitted here)" : "");
    }
    return t_done();
}
