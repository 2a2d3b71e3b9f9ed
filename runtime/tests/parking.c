/*
 * Idle servers park and clients wake them (RCLIFY_IDLE_US): a lost wake-up hangs a client.
 * Clients run sections with pauses of 0-400 us between them, so the server goes idle, parks and is
 * woken again thousands of times, on two servers, with extracted sections, hybrid ones and
 * condvar hand-offs.  Run in children with RCLIFY_IDLE_US=0 (park at once), 50, the default, and
 * with a very busy management thread (RCLIFY_MGR_US=100), and with SCHED_FIFO servers.  Exact counts, and each child must
 * finish in time.
 */
#include "test_util.h"

#define NCLIENTS 4

static rcl_mutex_t m0, m1;
static rcl_cond_t cv;
static long count0, count1;
static int token; /* condvar hand-off between clients 0 and 1 (protected by m0) */

static int cs_inc0(void *p)
{
    count0++;
    return 1;
}

static int cs_inc1(void *p)
{
    count1++;
    return 1;
}

/* Clients 0 and 1 pass a token back and forth through a condvar on m0. */
static int cs_pass(void *p)
{
    int me = *(int *)p;
    while (token != me) {
        int rc = rcl_cond_wait(&cv, &m0);
        if (rc)
            return 100 + rc;
    }
    token = 1 - me;
    count0++;
    rcl_cond_broadcast(&cv);
    return 1;
}

static void client(int index, void *arg)
{
    unsigned seed = (unsigned)index * 2654435761u + 1;
    int n = ITERS(4000);
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        unsigned pause = (seed >> 16) % 400;
        if (pause > 20)
            usleep(pause);
        switch ((i + index) % 3) {
        case 0: CHECK_EQ(rcl_execute(&m0, cs_inc0, NULL), 1, "section on server 0"); break;
        case 1: CHECK_EQ(rcl_execute(&m1, cs_inc1, NULL), 1, "section on server 1"); break;
        default:
            CHECK_EQ(rcl_mutex_lock(&m1), 0, "hybrid lock");
            count1++;
            CHECK_EQ(rcl_mutex_unlock(&m1), 0, "hybrid unlock");
        }
        if (index < 2 && i % 10 == 0)
            CHECK_EQ(rcl_execute(&m0, cs_pass, &index), 1, "condvar hand-off (100+: wait failed)");
    }
}

static void workload(const char *label)
{
    t_mutex_init(&m0, -1, "parking.c:m0", RCL_ALG_RCL, 0);
    t_mutex_init(&m1, -1, "parking.c:m1", RCL_ALG_RCL, 1);
    rcl_cond_init(&cv, NULL);
    count0 = count1 = 0;
    token = 0;
    uint64_t t0 = t_now_ns();
    t_run_threads(NCLIENTS, client, NULL);
    int n = ITERS(4000);
    long want0 = 0, want1 = 0;
    for (int c = 0; c < NCLIENTS; c++)
        for (int i = 0; i < n; i++) {
            if ((i + c) % 3 == 0)
                want0++;
            else
                want1++;
            if (c < 2 && i % 10 == 0)
                want0++;
        }
    CHECK_EQ(count0, want0, "sections on server 0 (with the hand-offs)");
    CHECK_EQ(count1, want1, "sections on server 1");
    rcl_cond_destroy(&cv);
    CHECK_EQ(rcl_mutex_destroy(&m0), 0, "destroy");
    CHECK_EQ(rcl_mutex_destroy(&m1), 0, "destroy");
    OK("%s: %d clients x %d sections with 0-400 us pauses on 2 servers, condvar hand-offs: exact (%.0f ms)", label,
       NCLIENTS, n, (double)(t_now_ns() - t0) / 1e6);
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "parking");
    if (t_is_child(argc, argv)) {
        workload(argv[2]);
        rcl_stats_print(2);
        return t_done();
    }
    static const struct {
        const char *label;
        const char *env[4];
    } runs[] = {
        { "RCLIFY_IDLE_US=0", { "RCLIFY_IDLE_US=0", "RCLIFY_MGR_US", NULL } },
        { "RCLIFY_IDLE_US=50", { "RCLIFY_IDLE_US=50", "RCLIFY_MGR_US", NULL } },
        { "default idle time", { "RCLIFY_IDLE_US", "RCLIFY_MGR_US", NULL } },
        { "RCLIFY_IDLE_US=0 RCLIFY_MGR_US=100", { "RCLIFY_IDLE_US=0", "RCLIFY_MGR_US=100", NULL } },
        { "RCLIFY_IDLE_US=0 RCLIFY_FIFO=1", { "RCLIFY_IDLE_US=0", "RCLIFY_FIFO=1", NULL } },
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        struct t_child c;
        int rc = t_run_child("--child", runs[i].label, runs[i].env, 40, &c);
        CHECK(rc == 0, "child with %s exited %d%s:\n%s", runs[i].label, rc,
              c.timed_out ? " (timed out: lost wake-up?)" : "", c.err);
        /* The server table's "parks" column is the last one; report it for information. */
        const char *line = strstr(c.err, "\n0 ");
        char first[160] = "";
        if (line)
            snprintf(first, sizeof first, "%.*s", (int)strcspn(line + 1, "\n"), line + 1);
        OK("child with %s: %.2f s; server 0: %s", runs[i].label, c.seconds, first);
    }
    return t_done();
}
