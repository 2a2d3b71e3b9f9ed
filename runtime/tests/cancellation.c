/*
 * Thread cancellation, on every registered algorithm (FOR_EACH_ALG), as with pthread mutexes:
 *   - rcl_cond_wait and rcl_cond_timedwait are cancellation points: a thread cancelled while it
 *     waits holds the mutex again when its cleanup handler runs (squashfs-tools' workers:
 *     `pthread_cleanup_push(unlock, &m); lock(&m); while (...) wait(&c, &m); pop(1)`), and the
 *     canceller, which joins it, then takes the mutex;
 *   - a lock wait is no cancellation point: a thread cancelled while it waits for a lock held
 *     for 100 ms gets the lock (the sleeps of the lock paths are not nanosleep()), and is
 *     cancelled at its next cancellation point;
 *   - unlocking a free lock (undefined in POSIX; squashfs' handlers do it when the thread was
 *     cancelled outside the section) leaves it working: it corrupted the queue of ccsynch (a
 *     crash) and of mcs (a hang);
 *   - a lock's set-up at its first use is no cancellation point: a thread with a cancel pending
 *     that is the first to use a statically initialised lock sets it up whole (hsynch's set-up
 *     reads the machine's topology; cancelled there, the lock stayed RESOLVING and every other
 *     user spun for ever).
 */
#include "test_util.h"

#ifdef RCLIFY_TSAN
/* unlock_a_free_lock misuses a mutex on purpose; ThreadSanitizer would report it. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "report_mutex_bugs=0";
}
#endif

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

static long shared_count;

static void count_under_lock(int index, void *arg)
{
    for (int i = 0; i < ITERS(20000); i++) {
        rcl_mutex_lock(&m);
        shared_count++;
        rcl_mutex_unlock(&m);
    }
}

static void unlock_a_free_lock(const struct t_alg *a)
{
    t_mutex_init(&m, -1, "cancellation.c:m", a->alg, 0);
    rcl_mutex_unlock(&m); /* 0 (glibc) or EPERM: either way nothing is released */
    CHECK_EQ(rcl_mutex_lock(&m), 0, "lock after");
    CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock after");
    shared_count = 0;
    t_run_threads(4, count_under_lock, NULL);
    CHECK_EQ(shared_count, 4 * ITERS(20000), "count under the lock");
    rcl_mutex_destroy(&m); /* glibc counts the misuse: its destroy then says EBUSY */
    OK("%s: unlocking a free lock leaves it working", a->name);
}

static rcl_mutex_t *first_use_lock;
static pthread_barrier_t first_use_start;

static void *first_user(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&first_use_start); /* no cancellation point; the cancel is pending after */
    rcl_mutex_lock(first_use_lock);         /* the lock's first use: its set-up */
    rcl_mutex_unlock(first_use_lock);
    pthread_testcancel();
    return NULL;
}

static void cancel_before_first_use(const struct t_alg *a)
{
    rcl_lock_config_t cfg = t_config("cancellation.c:lazy", a->alg, 0);
    rcl_mutex_t lazy = RCL_MUTEX_INITIALIZER(cfg);
    first_use_lock = &lazy;
    CHECK_EQ(pthread_barrier_init(&first_use_start, NULL, 2), 0, "barrier");
    pthread_t t;
    void *result;
    CHECK_EQ(pthread_create(&t, NULL, first_user, NULL), 0, "pthread_create");
    CHECK_EQ(pthread_cancel(t), 0, "pthread_cancel");
    pthread_barrier_wait(&first_use_start);
    CHECK_EQ(pthread_join(t, &result), 0, "join");
    CHECK(result == PTHREAD_CANCELED, "%s: the thread was cancelled", a->name);
    CHECK_EQ(rcl_mutex_lock(&lazy), 0, "lock after it"); /* set up: not left RESOLVING */
    CHECK_EQ(rcl_mutex_unlock(&lazy), 0, "unlock");
    CHECK_EQ(rcl_mutex_destroy(&lazy), 0, "destroy");
    pthread_barrier_destroy(&first_use_start);
    OK("%s: a thread cancelled before a lock's first use sets the lock up whole", a->name);
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "cancellation");
    FOR_EACH_ALG(a) /* first, while the process has read nothing of the machine yet */
        cancel_before_first_use(a);
    FOR_EACH_ALG(a)
    {
        cancel_a_waiter(a, 0);
        cancel_a_waiter(a, 1);
        cancel_a_lock_wait(a);
        unlock_a_free_lock(a);
    }
    return t_done();
}
