/*
 * Many short-lived client threads: 2000 threads created and joined in waves of 40, each running a
 * few sections of each kind on one lock, so client identifiers (mailboxes) are freed and reused.
 * Exact count, with every registered algorithm (FOR_EACH_ALG); a second rcl lock on another server
 * is used by every other thread so that a thread is a client of two servers.
 */
#include "test_util.h"

#define WAVE 40

static rcl_mutex_t m, m2;
static long count, count2;

static int cs_inc(void *p)
{
    count++;
    return 1;
}

static int cs_inc2(void *p)
{
    count2++;
    return 1;
}

static void client(int index, void *arg)
{
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(rcl_execute(&m, cs_inc, NULL), 1, "section");
        CHECK_EQ(rcl_mutex_lock(&m), 0, "lock");
        count++;
        CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock");
    }
    if (index % 2)
        CHECK_EQ(rcl_execute(&m2, cs_inc2, NULL), 1, "section on the second server");
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "thread_churn");
    int threads = ITERS(2000) < 200 ? 200 : ITERS(2000);
    FOR_EACH_ALG(a)
    {
        t_mutex_init(&m, -1, "thread_churn.c:m", a->alg, 0);
        t_mutex_init(&m2, -1, "thread_churn.c:m2", a->alg, 1);
        count = count2 = 0;
        uint64_t t0 = t_now_ns();
        for (int done = 0; done < threads; done += WAVE)
            t_run_threads(WAVE, client, NULL);
        CHECK_EQ(count, (long)threads * 6, "sections");
        CHECK_EQ(count2, (long)threads / 2, "sections on the second lock");
        OK("%s: %d threads in waves of %d, 7 sections each on average, exact counts (%.0f ms)", a->name, threads, WAVE,
           (double)(t_now_ns() - t0) / 1e6);
        CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");
        CHECK_EQ(rcl_mutex_destroy(&m2), 0, "destroy");
    }
    return t_done();
}
