/*
 * Thread cancellation, on every registered algorithm (FOR_EACH_ALG), as with pthread mutexes:
 *   - rcl_cond_wait and rcl_cond_timedwait are cancellation points: a thread cancelled while it
 *     waits holds the mutex again when its cleanup handler runs (squashfs-tools' workers:
 *     `pthread_cleanup_push(unlock, &m); lock(&m); while (...) wait(&c, &m); pop(1)`), and the
 *     canceller, which joins it, then takes the mutex;
 *   - a lock wait is no cancellation point: a thread cancelled while it waits for a lock held
 *     for 100 ms gets the lock (the sleeps of the lock paths are not nanosleep()), and is
 *     cancelled at its next cancellation point.
 */
#include "test_util.h"

static rcl_mutex_t m;
static rcl_cond_t c;
static int waiting, ready, got_lock;

static void unlock_handler(void *arg)
{
    rcl_mutex_unlock(arg);
}

static void *waiter(void *timed)
{
    pthread_cleanup_push(unlock_handler, &m);
    rcl_mutex_lock(&m);
    waiting = 1;
    while (!ready) {
        if (timed) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 60;
            rcl_cond_timedwait(&c, &m, &until);
        } else {
            rcl_cond_wait(&c, &m);
        }
    }
    pthread_cleanup_pop(1);
    return NULL;
}

static void cancel_a_waiter(const struct t_alg *a, int timed)
{
    t_mutex_init(&m, -1, "cancellation.c:m", a->alg, 0);
    CHECK_EQ(rcl_cond_init(&c, NULL), 0, "cond init");
    waiting = ready = 0;
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, waiter, timed ? &m : NULL), 0, "pthread_create");
    for (int seen = 0; !seen;) {
        rcl_mutex_lock(&m);
        seen = waiting; /* set under the lock, which the wait releases */
        rcl_mutex_unlock(&m);
        usleep(1000);
    }
    usleep(20000); /* asleep in the wait by now */
    CHECK_EQ(pthread_cancel(t), 0, "pthread_cancel");
    void *result;
    CHECK_EQ(pthread_join(t, &result), 0, "pthread_join");
    CHECK(result == PTHREAD_CANCELED, "%s: the waiter returned instead of being cancelled", a->name);
    CHECK_EQ(rcl_mutex_lock(&m), 0, "lock after the cancelled waiter's handler");
    ready = 1;
    CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock");
    CHECK_EQ(rcl_cond_destroy(&c), 0, "cond destroy (no waiter left counted)");
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");
    OK("%s: a thread cancelled in %s holds the mutex in its cleanup handler", a->name,
       timed ? "rcl_cond_timedwait" : "rcl_cond_wait");
}

static void *locker(void *unused)
{
    rcl_mutex_lock(&m);
    got_lock = 1;
    rcl_mutex_unlock(&m);
    pthread_testcancel();
    return NULL;
}

static void cancel_a_lock_wait(const struct t_alg *a)
{
    t_mutex_init(&m, -1, "cancellation.c:m", a->alg, 0);
    got_lock = 0;
    rcl_mutex_lock(&m);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, locker, NULL), 0, "pthread_create");
    usleep(50000); /* past spinning and yielding: asleep in the lock's wait */
    CHECK_EQ(pthread_cancel(t), 0, "pthread_cancel");
    usleep(50000);
    rcl_mutex_unlock(&m);
    void *result;
    CHECK_EQ(pthread_join(t, &result), 0, "pthread_join");
    CHECK(result == PTHREAD_CANCELED, "%s: not cancelled at pthread_testcancel", a->name);
    CHECK(got_lock, "%s: cancelled while it waited for the lock", a->name);
    CHECK_EQ(rcl_mutex_lock(&m), 0, "lock again");
    CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock");
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");
    OK("%s: a lock wait is no cancellation point", a->name);
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "cancellation");
    FOR_EACH_ALG(a)
    {
        cancel_a_waiter(a, 0);
        cancel_a_waiter(a, 1);
        cancel_a_lock_wait(a);
    }
    return t_done();
}
