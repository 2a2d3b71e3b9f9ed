/*
 * A program whose main thread calls pthread_exit ends when its last thread does, with its atexit
 * handlers run and exit status 0, as glibc does without rclify: RCL's server threads (which never
 * exit) must not keep it alive.  Every algorithm, in a child each (t_run_child), three shapes:
 *   early:   main uses the lock (an RCL server starts), starts a worker, pthread_exit;
 *   late:    main starts a worker and exits before any lock is used: the server starts afterwards;
 *   chained: the worker starts a second worker just before it returns (no early exit between).
 * Each worker runs sections and lock/unlock pairs for ~50 ms after main has gone.  The child
 * writes its markers to stderr: the last worker's must come before the atexit handler's.
 * Under ThreadSanitizer, whose own background thread keeps any program alive after main's
 * pthread_exit (rclify or not; the runtime's TSan build discounts it), only rcl is run: the other
 * algorithms start no thread, so there the process ends as TSan lets it.
 */
#include "test_util.h"

static rcl_mutex_t m;
static long count;
static int chained;

static int cs_inc(void *p)
{
    count++;
    return 1;
}

static void say(const char *s)
{
    if (write(2, s, strlen(s)) < 0) {
    }
}

static void work(void)
{
    uint64_t end = t_now_ns() + 50000000;
    while (t_now_ns() < end) {
        CHECK_EQ(rcl_execute(&m, cs_inc, NULL), 1, "section");
        CHECK_EQ(rcl_mutex_lock(&m), 0, "lock");
        count++;
        CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock");
        usleep(100);
    }
}

static void *second(void *p)
{
    work();
    say("second worker done\n");
    return NULL;
}

static void *first(void *p)
{
    usleep(20000); /* main is gone by now */
    work();
    if (chained) {
        pthread_t t;
        CHECK_EQ(pthread_create(&t, NULL, second, NULL), 0, "pthread_create");
        CHECK_EQ(pthread_detach(t), 0, "pthread_detach");
        say("first worker started the second\n");
    } else {
        say("worker done\n");
    }
    return NULL;
}

static void at_exit(void)
{
    say("atexit ran\n");
}

static void child(const char *arg)
{
    char alg[64], shape[16];
    int fields = sscanf(arg, "%63[^:]:%15s", alg, shape);
    CHECK_EQ(fields, 2, "fields of the child's argument");
    atexit(at_exit);
    t_mutex_init(&m, -1, "main_thread_exit.c:m", t_alg_by_name(alg), 0);
    if (strcmp(shape, "late") != 0)
        CHECK_EQ(rcl_execute(&m, cs_inc, NULL), 1, "section on main");
    chained = strcmp(shape, "chained") == 0;
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, first, NULL), 0, "pthread_create");
    CHECK_EQ(pthread_detach(t), 0, "pthread_detach"); /* nobody joins it (TSan: a thread leak) */
    pthread_exit(NULL);
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "main_thread_exit");
    if (t_is_child(argc, argv)) {
        child(argv[2]);
        return 99; /* not reached */
    }
    static const char *shapes[] = { "early", "late", "chained" };
    FOR_EACH_ALG(a)
    {
#ifdef RCLIFY_TSAN
        if (a->alg != RCL_ALG_RCL) {
            OK("%s: not run under ThreadSanitizer (its background thread keeps any program alive "
               "after main's pthread_exit; this algorithm starts no thread)", a->name);
            continue;
        }
#endif
        for (int k = 0; k < 3; k++) {
            char arg[96];
            snprintf(arg, sizeof arg, "%s:%s", a->name, shapes[k]);
            struct t_child res;
            int rc = t_run_child("--child", arg, NULL, 20.0, &res);
            CHECK(!res.timed_out, "%s: the process did not end within 20 s after its last thread (stderr: %s)", arg,
                  res.err);
            CHECK(rc == 0, "%s: exit status %d, expected 0 (stderr: %s)", arg, rc, res.err);
            const char *last = strstr(res.err, k == 2 ? "second worker done\n" : "worker done\n");
            const char *ex = strstr(res.err, "atexit ran\n");
            CHECK(last != NULL, "%s: the last worker did not finish (stderr: %s)", arg, res.err);
            CHECK(ex != NULL && ex > last, "%s: atexit handler not run after the last worker (stderr: %s)", arg,
                  res.err);
            OK("%s %s: main's pthread_exit, the process ended with its last thread, status 0, atexit ran (%.0f ms)",
               a->name, shapes[k], res.seconds * 1000);
        }
    }
    return t_done();
}
