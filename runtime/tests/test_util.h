/*
 * Shared helpers for the runtime's test programs.
 *
 * Each test is one program: it prints one "ok:" line per thing it checked and exits 0, or prints a
 * "FAIL:" line and exits 1.  A watchdog (alarm) turns a deadlock into exit code 3 after
 * T_TIMEOUT_S seconds instead of a hang.  Iteration counts go through ITERS() so that the
 * ThreadSanitizer build (about 10x slower, built with -DRCLIFY_TSAN) runs fewer.
 *
 * Settings the runtime reads once per process (RCLIFY_LOCKS, RCLIFY_NO_FIFO, RCLIFY_STATS) are
 * tested by re-executing the test binary in a child with its own environment: t_run_child().  A
 * child is told what to do by its first argument, which starts with "--child".
 */
#ifndef RCLIFY_TEST_UTIL_H
#define RCLIFY_TEST_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rclify.h"

#ifdef RCLIFY_TSAN
#define T_SCALE 10
#else
#define T_SCALE 1
#endif
/* Iterations for a loop: n in the plain build, n/10 (at least 1) under ThreadSanitizer. */
#define ITERS(n) ((n) / T_SCALE > 0 ? (n) / T_SCALE : 1)

#ifndef T_TIMEOUT_S
#define T_TIMEOUT_S 50
#endif

#define T_FN static __attribute__((unused))

static const char *t_test_name = "test";
static char *t_self_argv0;
static int t_checks;
static int t_child_mode;

T_FN void t_flush(void)
{
    fflush(stdout);
    fflush(stderr);
}

/* Fails the whole program at once: _exit, so that a failure cannot hang in exit handlers. */
T_FN void t_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4), noreturn));
T_FN void t_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "%s: FAIL at %s:%d: ", t_test_name, file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    t_flush();
    _exit(1);
}

#define CHECK(cond, ...)                                        \
    do {                                                        \
        __atomic_fetch_add(&t_checks, 1, __ATOMIC_RELAXED);     \
        if (!(cond))                                            \
            t_fail(__FILE__, __LINE__, "(" #cond ") " __VA_ARGS__); \
    } while (0)

#define CHECK_EQ(got, want, what)                                                         \
    do {                                                                                  \
        long long g_ = (long long)(got), w_ = (long long)(want);                          \
        __atomic_fetch_add(&t_checks, 1, __ATOMIC_RELAXED);                               \
        if (g_ != w_)                                                                     \
            t_fail(__FILE__, __LINE__, "%s: got %lld, expected %lld", (what), g_, w_);    \
    } while (0)

/* One line per thing checked, so that the log says what passed. */
#define OK(...)                          \
    do {                                 \
        printf("ok: " __VA_ARGS__);      \
        putchar('\n');                   \
        fflush(stdout);                  \
    } while (0)

/* The profile algorithm writes a profile at exit: keep it out of the working directory. */
static char t_profile_out[256];
T_FN void t_remove_profile(void)
{
    char tmp[300];
    unlink(t_profile_out);
    snprintf(tmp, sizeof tmp, "%s.tmp", t_profile_out);
    unlink(tmp);
}

T_FN void t_watchdog(int sig)
{
    static const char msg[] = "FAIL: watchdog: the test did not finish in time (deadlock?)\n";
    (void)sig;
    if (write(2, msg, sizeof msg - 1) < 0) {
    }
    _exit(3);
}

T_FN int t_is_child(int argc, char **argv)
{
    return argc > 1 && strncmp(argv[1], "--child", 7) == 0;
}

/*
 * Call first in main.  Arms the watchdog; a test run (not a child) with RCLIFY_LOCKS set in its
 * environment re-executes itself without it, since that variable overrides the per-lock
 * configurations the tests rely on.
 */
T_FN void t_init(int argc, char **argv, const char *name)
{
    t_test_name = name;
    t_self_argv0 = argv[0];
    t_child_mode = t_is_child(argc, argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!t_is_child(argc, argv) && getenv("RCLIFY_LOCKS")) {
        unsetenv("RCLIFY_LOCKS");
        execv("/proc/self/exe", argv);
        t_fail(__FILE__, __LINE__, "re-exec without RCLIFY_LOCKS: %s", strerror(errno));
    }
    if (!getenv("RCLIFY_PROFILE_OUT")) {
        snprintf(t_profile_out, sizeof t_profile_out, "/tmp/rclify-test-%s-%d.profile.json", name, (int)getpid());
        setenv("RCLIFY_PROFILE_OUT", t_profile_out, 1);
        atexit(t_remove_profile); /* runs after the runtime's own exit handler, registered later */
    }
    signal(SIGALRM, t_watchdog);
    alarm(T_TIMEOUT_S);
}

T_FN int t_done(void)
{
    printf("%s%s: all %d checks passed\n", t_test_name, t_child_mode ? " (child)" : "", t_checks);
    t_flush();
    return 0;
}

static inline uint64_t t_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void t_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Waits (spinning, then yielding) until *flag >= value. */
static inline void t_wait_flag(int *flag, int value)
{
    for (unsigned n = 0; __atomic_load_n(flag, __ATOMIC_ACQUIRE) < value; n++) {
        if (n < 1000)
            t_cpu_relax();
        else
            sched_yield();
    }
}

/*
 * The algorithms every test loops over: every one registered in rclify/algorithms.def, in enum
 * order, so a new algorithm is tested without editing the tests.  Tests with statically
 * initialised locks keep one row per algorithm in the same order, written with the registry too:
 *     static rcl_mutex_t rows[T_NALGS] = {
 *     #define RCL_ALGORITHM(ENUM, name, description) ROW(RCL_ALG_##ENUM),
 *     #include "rclify/algorithms.def"
 *     #undef RCL_ALGORITHM
 *     };
 * and find an algorithm's row with T_ALG_INDEX(a), or T_ALG_ROW(RCL_ALG_x).
 */
struct t_alg {
    const char *name;
    int alg;
};
static const struct t_alg t_algs[] __attribute__((unused)) = {
#define RCL_ALGORITHM(ENUM, name, description) { #name, RCL_ALG_##ENUM },
#include "rclify/algorithms.def"
#undef RCL_ALGORITHM
};
#define T_NALGS ((int)(sizeof t_algs / sizeof t_algs[0]))
#define FOR_EACH_ALG(a) for (const struct t_alg *a = t_algs; a < t_algs + T_NALGS; a++)
#define T_ALG_INDEX(a) ((int)((a) - t_algs))
#define T_ALG_ROW(alg) ((alg) - 1) /* algorithms are numbered from 1 */
_Static_assert(T_NALGS == RCL_ALG_COUNT - 1, "t_algs holds every registered algorithm");

static inline int t_alg_by_name(const char *name)
{
    for (int i = 0; i < T_NALGS; i++)
        if (strcmp(t_algs[i].name, name) == 0)
            return t_algs[i].alg;
    return RCL_ALG_POSIX;
}

static inline rcl_lock_config_t t_config(const char *id, int alg, int server)
{
    rcl_lock_config_t c = RCL_LOCK_CONFIG(id, alg, server, -1);
    return c;
}

/* Initialises m with the given kind (-1: no attribute) and configuration; checks it resolved. */
static inline void t_mutex_init(rcl_mutex_t *m, int kind, const char *id, int alg, int server)
{
    rcl_lock_config_t cfg = t_config(id, alg, server);
    pthread_mutexattr_t attr;
    int rc;
    if (kind >= 0) {
        pthread_mutexattr_init(&attr);
        pthread_mutexattr_settype(&attr, kind);
        rc = rcl_mutex_init(m, &attr, &cfg);
        pthread_mutexattr_destroy(&attr);
    } else {
        rc = rcl_mutex_init(m, NULL, &cfg);
    }
    CHECK(rc == 0, "rcl_mutex_init(%s, %s) returned %d", id ? id : "(anonymous)", rcl_algorithm_name(alg), rc);
    CHECK(rcl_mutex_algorithm(m) == alg, "lock %s: algorithm %d, configured %d", id ? id : "(anonymous)",
          rcl_mutex_algorithm(m), alg);
}

/* Runs fn(index, arg) on n new threads and joins them. */
typedef void (*t_worker_fn)(int index, void *arg);
struct t_thread_arg {
    t_worker_fn fn;
    void *arg;
    int index;
};

static void *t_thread_main(void *p)
{
    struct t_thread_arg *a = p;
    a->fn(a->index, a->arg);
    return NULL;
}

T_FN void t_run_threads(int n, t_worker_fn fn, void *arg)
{
    pthread_t *tids = calloc((size_t)n, sizeof *tids);
    struct t_thread_arg *args = calloc((size_t)n, sizeof *args);
    CHECK(tids && args, "out of memory");
    for (int i = 0; i < n; i++) {
        args[i] = (struct t_thread_arg){ fn, arg, i };
        int rc = pthread_create(&tids[i], NULL, t_thread_main, &args[i]);
        CHECK(rc == 0, "pthread_create: %s", strerror(rc));
    }
    for (int i = 0; i < n; i++)
        pthread_join(tids[i], NULL);
    free(tids);
    free(args);
}

/* What a child run produced: its wait status, its stderr, how long it took. */
struct t_child {
    int status;     /* as from waitpid; -1 when it was killed by the time limit */
    int timed_out;
    double seconds;
    char err[32768]; /* stderr, NUL-terminated (truncated to fit) */
};

/*
 * Runs this test binary again as "argv0 mode [arg]" with the environment changed by env
 * ("NAME=value" to set, "NAME" to remove; NULL-terminated), with a time limit.  Its stdout goes
 * to ours, its stderr is captured.  Returns the exit code (or 128+signal, or -1 on timeout).
 */
T_FN int t_run_child(const char *mode, const char *arg, const char *const *env, double limit_s, struct t_child *res)
{
    extern char **environ;
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    size_t nenv = 0;
    while (env && env[nenv])
        nenv++;
    char **envp = calloc(n + nenv + 1, sizeof *envp);
    CHECK(envp != NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        int drop = 0;
        for (size_t j = 0; j < nenv; j++) {
            size_t len = strcspn(env[j], "=");
            if (strncmp(environ[i], env[j], len) == 0 && environ[i][len] == '=')
                drop = 1;
        }
        if (!drop)
            envp[k++] = environ[i];
    }
    for (size_t j = 0; j < nenv; j++)
        if (strchr(env[j], '='))
            envp[k++] = (char *)env[j];
    envp[k] = NULL;
    char *argv[] = { t_self_argv0, (char *)mode, (char *)arg, NULL };

    int pfd[2];
    CHECK(pipe2(pfd, O_CLOEXEC) == 0, "pipe: %s", strerror(errno));
    t_flush();
    uint64_t start = t_now_ns();
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(pfd[1], 2);
        execve("/proc/self/exe", argv, envp);
        _exit(127);
    }
    close(pfd[1]);
    free(envp);
    memset(res, 0, sizeof *res);
    size_t used = 0;
    int eof = 0;
    while (!eof) {
        double elapsed = (double)(t_now_ns() - start) / 1e9;
        if (elapsed > limit_s) {
            kill(pid, SIGKILL);
            res->timed_out = 1;
            break;
        }
        struct pollfd p = { pfd[0], POLLIN, 0 };
        if (poll(&p, 1, 100) > 0) {
            char buf[4096];
            ssize_t got = read(pfd[0], buf, sizeof buf);
            if (got <= 0) {
                eof = 1;
            } else {
                size_t take = (size_t)got;
                if (take > sizeof res->err - 1 - used)
                    take = sizeof res->err - 1 - used;
                memcpy(res->err + used, buf, take);
                used += take;
            }
        }
    }
    res->err[used] = '\0';
    close(pfd[0]);
    /* stderr closed: the child is exiting (or a grandchild kept it; bound the wait anyway). */
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if ((double)(t_now_ns() - start) / 1e9 > limit_s && !res->timed_out) {
            kill(pid, SIGKILL);
            res->timed_out = 1;
        }
        usleep(1000);
    }
    res->seconds = (double)(t_now_ns() - start) / 1e9;
    res->status = status;
    if (res->timed_out)
        return -1;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}

#endif
