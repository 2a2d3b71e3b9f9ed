/*
 * Whole-process behaviour, each case in a child process (re-executing this binary):
 *   - a section calling exit(42) while running on an RCL server (with other clients waiting on the
 *     same server, and with RCLIFY_STATS=1): the process exits 42, promptly;
 *   - exit(7) from the main thread while other clients run sections: status 7, promptly;
 *   - RCLIFY_STATS=1 prints a statistics table on stderr at exit ("rclify statistics", a server
 *     table, an "rcl lock" table naming the rcl lock used and counting its sections);
 *     rcl_stats_print(fd) writes one on demand;
 *   - fork() (no exec) after RCL servers started: sections run in both parent and child;
 *   - RCLIFY_LOCKS: good values select algorithms by lock id (first match wins, globs, anonymous
 *     locks matched by '*'); bad values make the program exit non-zero at start, quickly, with a
 *     message naming the bad entry.
 */
#include "test_util.h"

/* ---- children ---- */

static rcl_mutex_t lock_a = RCL_MUTEX_INITIALIZER(RCL_LOCK_CONFIG("process_env.c:lock_a", RCL_ALG_RCL, 0, -1));
static rcl_mutex_t lock_b = RCL_MUTEX_INITIALIZER(RCL_LOCK_CONFIG("process_env.c:lock_b", RCL_ALG_POSIX, 0, -1));
static long counter;
static int exiting;

static int cs_inc(void *p)
{
    counter++;
    return 0;
}

static int cs_exit(void *p)
{
    __atomic_store_n(&exiting, 1, __ATOMIC_RELEASE);
    usleep(20000); /* let the other clients queue up behind this section */
    exit(42);
}

static void exit_worker(int index, void *arg)
{
    if (index == 0) {
        for (int i = 0; i < 100; i++)
            rcl_execute(&lock_a, cs_inc, NULL);
        rcl_execute(&lock_a, cs_exit, NULL);
        t_fail(__FILE__, __LINE__, "returned from a section that called exit()");
    }
    for (;;) /* until the process exits */
        rcl_execute(&lock_a, cs_inc, NULL);
}

static int child_exit(void)
{
    t_run_threads(4, exit_worker, NULL);
    t_fail(__FILE__, __LINE__, "the process did not exit");
}

/* The main thread exits while 3 clients hammer the server (and one section sleeps in it). */
static int cs_nap(void *p)
{
    usleep(1000);
    counter++;
    return 0;
}

static void *hammer(void *arg)
{
    for (long i = 0;; i++)
        rcl_execute(&lock_a, i % 50 ? cs_inc : cs_nap, NULL);
    return NULL;
}

static int child_exit_main(void)
{
    pthread_t t;
    for (int i = 0; i < 3; i++)
        pthread_create(&t, NULL, hammer, NULL);
    usleep(50000);
    exit(7);
}

static int child_stats(void)
{
    for (int i = 0; i < 1000; i++) {
        rcl_execute(&lock_a, cs_inc, NULL);
        rcl_execute(&lock_b, cs_inc, NULL);
    }
    /* A lock destroyed before the exit, set up again and destroyed again (pixz, ag): its rows
     * keep its sections, 300 + 200 under one id. */
    rcl_lock_config_t cfg = t_config("process_env.c:lock_c", RCL_ALG_RCL, 0);
    for (int round = 0; round < 2; round++) {
        rcl_mutex_t lock_c;
        CHECK_EQ(rcl_mutex_init(&lock_c, NULL, &cfg), 0, "rcl_mutex_init");
        for (int i = 0; i < (round ? 200 : 300); i++)
            rcl_execute(&lock_c, cs_inc, NULL);
        CHECK_EQ(rcl_mutex_destroy(&lock_c), 0, "rcl_mutex_destroy");
    }
    printf("stats child: %ld sections\n", counter);
    return 0;
}

/* Prints "id=algorithm" for a few locks, as resolved under this process's RCLIFY_LOCKS. */
static int child_resolve(void)
{
    static const char *const ids[] = { "items.c:cache_lock", "items.c:other", "slabs.c:slabs_lock", NULL };
    for (int i = 0; ids[i]; i++) {
        rcl_mutex_t m;
        rcl_lock_config_t cfg = t_config(ids[i], RCL_ALG_POSIX, 0);
        CHECK_EQ(rcl_mutex_init(&m, NULL, &cfg), 0, "rcl_mutex_init");
        fprintf(stderr, "[%s=%s]\n", ids[i], rcl_algorithm_name(rcl_mutex_algorithm(&m)));
        rcl_execute(&m, cs_inc, NULL);
        rcl_mutex_destroy(&m);
    }
    rcl_mutex_t *anon = calloc(1, sizeof *anon);
    fprintf(stderr, "[anonymous=%s]\n", rcl_algorithm_name(rcl_mutex_algorithm(anon)));
    rcl_execute(anon, cs_inc, NULL);
    return 0;
}

/* ---- parent ---- */

static int contains(const char *haystack, const char *needle)
{
    return strstr(haystack, needle) != NULL;
}

static void check_exit(const char *label, const char *const *env)
{
    struct t_child c;
    int rc = t_run_child("--child-exit", NULL, env, 20, &c);
    CHECK(rc == 42, "%s: a section calling exit(42) on the server: child exited %d%s\n%s", label, rc,
          c.timed_out ? " (timed out)" : "", c.err);
    CHECK(c.seconds < 10, "exit took %.1f s", c.seconds);
    OK("%s: section calling exit(42) on an RCL server, 3 clients queued: exit status 42 in %.2f s", label, c.seconds);
}

static void check_stats(void)
{
    struct t_child c;
    static const char *const env[] = { "RCLIFY_STATS=1", NULL };
    int rc = t_run_child("--child-stats", NULL, env, 20, &c);
    CHECK(rc == 0, "RCLIFY_STATS=1 child exited %d\n%s", rc, c.err);
    CHECK(contains(c.err, "rclify statistics"), "statistics title at exit:\n%s", c.err);
    CHECK(contains(c.err, "server") && contains(c.err, "sections"), "server table headers:\n%s", c.err);
    CHECK(contains(c.err, "rcl lock"), "rcl lock table header:\n%s", c.err);
    CHECK(contains(c.err, "process_env.c:lock_a"), "statistics name the rcl lock:\n%s", c.err);
    CHECK(contains(c.err, "1000"), "statistics count the lock's 1000 sections:\n%s", c.err);
    OK("RCLIFY_STATS=1: table at exit on stderr (title, server and rcl lock headers, the lock, its count; %zu bytes)",
       strlen(c.err));
    const char *row = strstr(c.err, "process_env.c:lock_c");
    long remote = -1;
    int parsed = row ? sscanf(row, "process_env.c:lock_c %*d %ld", &remote) : 0;
    int once = row && !strstr(row + 1, "process_env.c:lock_c");
    CHECK(parsed == 1 && remote == 500 && once, "a lock destroyed twice: one row with its 500 sections "
          "(found %ld):\n%s", remote, c.err);
    OK("RCLIFY_STATS=1: a lock destroyed before the exit, set up again and destroyed: one row, 500 sections");

    static const char *const no_env[] = { "RCLIFY_STATS", NULL };
    rc = t_run_child("--child-stats", NULL, no_env, 20, &c);
    CHECK(rc == 0, "child without RCLIFY_STATS exited %d\n%s", rc, c.err);
    CHECK(!contains(c.err, "process_env.c:lock_a"), "statistics printed without RCLIFY_STATS:\n%s", c.err);
    OK("without RCLIFY_STATS: nothing printed at exit");

    /* On demand, in this process. */
    rcl_execute(&lock_a, cs_inc, NULL);
    int pfd[2];
    CHECK(pipe(pfd) == 0, "pipe");
    rcl_stats_print(pfd[1]);
    close(pfd[1]);
    char buf[16384];
    size_t used = 0;
    ssize_t n;
    while (used < sizeof buf - 1 && (n = read(pfd[0], buf + used, sizeof buf - 1 - used)) > 0)
        used += (size_t)n;
    buf[used] = '\0';
    close(pfd[0]);
    CHECK(contains(buf, "process_env.c:lock_a"), "rcl_stats_print names the lock:\n%s", buf);
    OK("rcl_stats_print(fd) writes a table naming the lock used");
}

/* fork() without exec after RCL servers started: the child's sections must still run. */
static void fork_worker(int index, void *arg)
{
    for (int i = 0; i < 500; i++) {
        rcl_execute(&lock_a, cs_inc, NULL);
        rcl_mutex_lock(&lock_a);
        counter++;
        rcl_mutex_unlock(&lock_a);
    }
}

static __attribute__((unused)) void check_fork(void)
{
    counter = 0;
    t_run_threads(2, fork_worker, NULL);
    CHECK_EQ(counter, 2000, "sections before fork");
    t_flush();
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        alarm(10);
        counter = 0;
        t_run_threads(3, fork_worker, NULL);
        _exit(counter == 3000 ? 0 : 1);
    }
    t_run_threads(2, fork_worker, NULL); /* the parent goes on too */
    int status = 0;
    uint64_t t0 = t_now_ns();
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (t_now_ns() - t0 > 20000000000ull) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            t_fail(__FILE__, __LINE__, "forked child running rcl sections did not finish in 20 s");
        }
        usleep(1000);
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "forked child: status 0x%x (exit 1: lost sections; SIGALRM: its sections never ran)", status);
    CHECK_EQ(counter, 4000, "parent's sections after fork");
    OK("fork() after rcl servers started: the child's 3 threads ran 3000 sections, the parent went on");
}

static void check_good_locks(const char *spec, const char *const *want)
{
    char var[256];
    snprintf(var, sizeof var, "RCLIFY_LOCKS=%s", spec);
    const char *env[] = { var, NULL };
    struct t_child c;
    int rc = t_run_child("--child-resolve", NULL, env, 20, &c);
    CHECK(rc == 0, "RCLIFY_LOCKS='%s': child exited %d\n%s", spec, rc, c.err);
    for (int i = 0; want[i]; i++)
        CHECK(contains(c.err, want[i]), "RCLIFY_LOCKS='%s': expected %s in:\n%s", spec, want[i], c.err);
    OK("RCLIFY_LOCKS='%s': locks resolved as expected", spec);
}

static void check_bad_locks(const char *spec, const char *named)
{
    char var[256];
    snprintf(var, sizeof var, "RCLIFY_LOCKS=%s", spec);
    const char *env[] = { var, NULL };
    struct t_child c;
    int rc = t_run_child("--child-resolve", NULL, env, 20, &c);
    CHECK(rc != 0 && !c.timed_out, "RCLIFY_LOCKS='%s': child exited %d%s (expected a non-zero exit)\n%s", spec, rc,
          c.timed_out ? " (timed out)" : "", c.err);
    CHECK(c.seconds < 5, "RCLIFY_LOCKS='%s': took %.1f s to fail", spec, c.seconds);
    CHECK(contains(c.err, named), "RCLIFY_LOCKS='%s': message does not name '%s':\n%s", spec, named, c.err);
    CHECK(!contains(c.err, "[items.c"), "RCLIFY_LOCKS='%s': locks were used before the error", spec);
    char first[200];
    snprintf(first, sizeof first, "%.*s", (int)strcspn(c.err, "\n"), c.err);
    OK("RCLIFY_LOCKS='%s': exit %d in %.2f s: %s", spec, rc, c.seconds, first);
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "process_env");
    if (t_is_child(argc, argv)) {
        if (strcmp(argv[1], "--child-exit") == 0)
            return child_exit();
        if (strcmp(argv[1], "--child-exit-main") == 0)
            return child_exit_main();
        if (strcmp(argv[1], "--child-stats") == 0)
            return child_stats();
        return child_resolve();
    }

    static const char *const plain[] = { "RCLIFY_STATS", NULL };
    static const char *const stats[] = { "RCLIFY_STATS=1", NULL };
    static const char *const everything_rcl[] = { "RCLIFY_LOCKS=*=rcl", "RCLIFY_STATS=1", NULL };
    check_exit("default", plain);
    check_exit("RCLIFY_STATS=1", stats);
    check_exit("RCLIFY_LOCKS='*=rcl' RCLIFY_STATS=1", everything_rcl);

    for (int i = 0; i < 3; i++) {
        struct t_child c;
        const char *const *env = i == 0 ? plain : i == 1 ? stats : everything_rcl;
        int rc = t_run_child("--child-exit-main", NULL, env, 20, &c);
        CHECK(rc == 7, "exit(7) from main while clients run sections: child exited %d%s\n%s", rc,
              c.timed_out ? " (timed out)" : "", c.err);
        OK("%s: exit(7) from main while 3 clients run sections on the server: status 7 in %.2f s",
           i == 0 ? "default" : i == 1 ? "RCLIFY_STATS=1" : "RCLIFY_LOCKS='*=rcl' RCLIFY_STATS=1", c.seconds);
    }

    check_stats();
#ifndef RCLIFY_TSAN
    check_fork();
#else
    OK("fork() after rcl servers started: skipped (ThreadSanitizer cannot start threads after a multi-threaded fork)");
#endif

    static const char *const w1[] = { "[items.c:cache_lock=rcl]", "[items.c:other=posix]", "[slabs.c:slabs_lock=posix]",
                                      "[anonymous=posix]", NULL };
    check_good_locks("items.c:cache_lock=rcl:1,*=posix", w1);
    static const char *const w2[] = { "[items.c:cache_lock=rcl]", "[items.c:other=rcl]", "[slabs.c:slabs_lock=posix]",
                                      NULL };
    check_good_locks("items.c:*=rcl", w2);
    static const char *const w3[] = { "[items.c:cache_lock=posix]", "[items.c:other=rcl]", "[anonymous=rcl]", NULL };
    check_good_locks("items.c:cache_lock=posix, *=rcl:0", w3);
    static const char *const w4[] = { "[items.c:cache_lock=rcl]", "[slabs.c:slabs_lock=rcl]", "[anonymous=rcl]", NULL };
    check_good_locks("*=rcl:1@0", w4);

    /* Every registered name is accepted, and the message for an unknown one lists them all. */
    char every_name[256] = "unknown algorithm (expected one of ";
    FOR_EACH_ALG(a)
    {
        char spec[64], lock_a[80], anonymous[80];
        snprintf(spec, sizeof spec, "*=%s", a->name);
        snprintf(lock_a, sizeof lock_a, "[items.c:cache_lock=%s]", a->name);
        snprintf(anonymous, sizeof anonymous, "[anonymous=%s]", a->name);
        const char *const want[] = { lock_a, anonymous, NULL };
        check_good_locks(spec, want);
        size_t len = strlen(every_name);
        snprintf(every_name + len, sizeof every_name - len, "%s%s", a->name, a + 1 < t_algs + T_NALGS ? ", " : ")");
    }
    check_bad_locks("*=bogus", "*=bogus");
    check_bad_locks("*=bogus", every_name);
    check_bad_locks("items.c:cache_lock=rcl,slabs.c:x=nosuch", "slabs.c:x=nosuch");
    check_bad_locks("justaname", "justaname");
    check_bad_locks("*=rcl:64", "*=rcl:64");
    check_bad_locks("*=rcl:abc", "*=rcl:abc");
    check_bad_locks("*=rcl:0@99999", "*=rcl:0@99999");
    check_bad_locks("=rcl", "=rcl");
    check_bad_locks("a=rcl,,b=posix", "RCLIFY_LOCKS");
    return t_done();
}
