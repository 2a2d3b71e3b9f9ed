/*
 * Signals interrupting clients and servicing threads: a thread sends SIGUSR1 (handler installed
 * without SA_RESTART, so blocking calls see EINTR) to every client thread about every 200 us while
 * they run sections (extracted and hybrid) and producer/consumer condvar waits, with every
 * registered algorithm (FOR_EACH_ALG).  Counts must be exact, no call may fail with EINTR, and nothing may hang.
 * The servers' own threads are hit too: the signal is also sent to the whole process.
 */
#include "test_util.h"

#define NCLIENTS 4

static long hits;
static void on_usr1(int sig)
{
    (void)sig;
    __atomic_fetch_add(&hits, 1, __ATOMIC_RELAXED); /* lock-free: async-signal-safe */
}

static rcl_mutex_t m;
static rcl_cond_t not_empty, not_full;
static long count;
static int queue, produced_done;
static pthread_t clients[NCLIENTS];
static int stop_storm;

static int cs_inc(void *p)
{
    count++;
    return 1;
}

static int cs_put(void *p)
{
    while (queue >= 2) {
        int rc = rcl_cond_wait(&not_full, &m);
        if (rc)
            return 100 + rc;
    }
    queue++;
    rcl_cond_signal(&not_empty);
    return 0;
}

static int cs_get(void *p)
{
    while (queue == 0) {
        int rc = rcl_cond_wait(&not_empty, &m);
        if (rc)
            return 100 + rc;
    }
    queue--;
    rcl_cond_signal(&not_full);
    return 0;
}

static void *client(void *arg)
{
    int index = (int)(intptr_t)arg;
    int n = ITERS(20000);
    for (int i = 0; i < n; i++) {
        if (i % 2) {
            CHECK_EQ(rcl_execute(&m, cs_inc, NULL), 1, "section");
        } else {
            CHECK_EQ(rcl_mutex_lock(&m), 0, "rcl_mutex_lock under signals");
            count++;
            CHECK_EQ(rcl_mutex_unlock(&m), 0, "rcl_mutex_unlock under signals");
        }
    }
    /* Condvar waits (through rcl_execute_may_wait, as rclify transform calls sections that wait):
     * clients 0, 1 produce, 2, 3 consume. */
    for (int i = 0; i < ITERS(2000); i++)
        CHECK_EQ(rcl_execute_may_wait(&m, index < 2 ? cs_put : cs_get, NULL, 0), 0,
                 "condvar section (100+: wait failed)");
    return NULL;
}

static void *storm(void *arg)
{
    while (!__atomic_load_n(&stop_storm, __ATOMIC_ACQUIRE)) {
        for (int i = 0; i < NCLIENTS; i++)
            pthread_kill(clients[i], SIGUSR1);
        kill(getpid(), SIGUSR1); /* any thread, servicing threads included */
        usleep(200);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "signals");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART */
    sigaction(SIGUSR1, &sa, NULL);

    FOR_EACH_ALG(a)
    {
        t_mutex_init(&m, -1, "signals.c:m", a->alg, 0);
        rcl_cond_init(&not_empty, NULL);
        rcl_cond_init(&not_full, NULL);
        count = 0;
        queue = produced_done = 0;
        stop_storm = 0;
        __atomic_store_n(&hits, 0, __ATOMIC_RELAXED);
        uint64_t t0 = t_now_ns();
        for (int i = 0; i < NCLIENTS; i++)
            pthread_create(&clients[i], NULL, client, (void *)(intptr_t)i);
        pthread_t st;
        pthread_create(&st, NULL, storm, NULL);
        for (int i = 0; i < NCLIENTS; i++)
            pthread_join(clients[i], NULL);
        __atomic_store_n(&stop_storm, 1, __ATOMIC_RELEASE);
        pthread_join(st, NULL);
        CHECK_EQ(count, (long)NCLIENTS * ITERS(20000), "sections under a signal storm");
        CHECK_EQ(queue, 0, "items left in the queue");
        OK("%s: %d clients x %d sections + condvar producer/consumer under %ld SIGUSR1s: exact (%.0f ms)", a->name,
           NCLIENTS, ITERS(20000), __atomic_load_n(&hits, __ATOMIC_RELAXED), (double)(t_now_ns() - t0) / 1e6);
        rcl_cond_destroy(&not_empty);
        rcl_cond_destroy(&not_full);
        CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");
    }
    return t_done();
}
