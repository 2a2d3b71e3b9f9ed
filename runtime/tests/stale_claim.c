/*
 * A servicing thread that read a request just before another servicing thread of the same server
 * completed it may still try to claim that request's lock.  Such a stale claim must never look,
 * to the request's client, as if the client held the lock itself: the client that has just
 * unlocked a hybrid section and takes the lock again (hybrid or extracted) must not get EDEADLK
 * or the "already held by this thread" fatal error.
 *
 * Server 1 is made to run several servicing threads at once: a helper runs sections on it that
 * busy-wait longer than the management timeout (RCLIFY_MGR_US=100), so the manager keeps adding
 * threads, which then race for the clients' requests.  The clients lock, unlock and lock again
 * with no pause in between.  Exact counts.
 */
#include "test_util.h"

#define NCLIENTS 3

static rcl_mutex_t m_hot, m_slow;
static long count;
static int stop;

static int cs_inc(void *p)
{
    count++;
    return 1;
}

/* Busy-waits 300 us on the server: no progress for longer than a management timeout. */
static int cs_spin(void *p)
{
    uint64_t end = t_now_ns() + 300000;
    while (t_now_ns() < end)
        t_cpu_relax();
    return 2;
}

static void *slow_client(void *arg)
{
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        CHECK_EQ(rcl_execute(&m_slow, cs_spin, NULL), 2, "slow section");
        usleep(200);
    }
    return NULL;
}

static void client(int index, void *arg)
{
    int n = ITERS(300000);
    for (int i = 0; i < n; i++) {
        CHECK_EQ(rcl_mutex_lock(&m_hot), 0, "hybrid lock right after an unlock");
        count++;
        CHECK_EQ(rcl_mutex_unlock(&m_hot), 0, "hybrid unlock");
        CHECK_EQ(rcl_execute(&m_hot, cs_inc, NULL), 1, "extracted section right after an unlock");
    }
}

static void workload(void)
{
    t_mutex_init(&m_hot, -1, "stale_claim.c:m_hot", RCL_ALG_RCL, 1);
    t_mutex_init(&m_slow, -1, "stale_claim.c:m_slow", RCL_ALG_RCL, 1);
    pthread_t slow;
    CHECK_EQ(pthread_create(&slow, NULL, slow_client, NULL), 0, "pthread_create");
    t_run_threads(NCLIENTS, client, NULL);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    pthread_join(slow, NULL);
    CHECK_EQ(count, 2L * NCLIENTS * ITERS(300000), "sections and hybrid sections on the hot lock");
    CHECK_EQ(rcl_mutex_destroy(&m_hot), 0, "destroy");
    CHECK_EQ(rcl_mutex_destroy(&m_slow), 0, "destroy");
    OK("%d clients x %d lock/unlock/execute on a server with racing servicing threads: exact", NCLIENTS,
       ITERS(300000));
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "stale_claim");
    if (t_is_child(argc, argv)) {
        workload();
        rcl_stats_print(2);
        return t_done();
    }
    static const char *env[] = { "RCLIFY_MGR_US=100", "RCLIFY_IDLE_US", NULL };
    struct t_child c;
    int rc = t_run_child("--child", "racing servicing threads", env, 40, &c);
    CHECK(rc == 0, "child exited %d%s:\n%s", rc, c.timed_out ? " (timed out)" : "", c.err);
    const char *line = strstr(c.err, "\n1 ");
    OK("child: %.2f s; server 1: %.*s", c.seconds, line ? (int)strcspn(line + 1, "\n") : 0, line ? line + 1 : "");
    return t_done();
}
