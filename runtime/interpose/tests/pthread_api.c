/*
 * A plain pthread program (no rclify code) that checks what `rclify run` must keep of the pthread
 * mutex and condvar API, run by tests/test_interpose.py under `*=ALG` for every algorithm:
 * static initializers of the three kinds, attributes that keep a lock posix (process-shared,
 * robust), trylock, timedlock, clocklock, condvar wait / timedwait / clockwait / signal /
 * broadcast, destroy and re-init (heap locks too), fork while other threads hold locks, thread
 * churn.  Under ThreadSanitizer (-fsanitize=thread) the fork's child starts no thread, which TSan
 * cannot do, and the misuses TSan reports in any program are left out (errorcheck relock, unlock
 * of a free errorcheck lock, destroy of a held lock).
 * Prints "interposed: yes|no": whether librclify_run.so took its static lock (it reads
 * the interposer's tag in the lock's bytes).  `--counted-only`: 4 threads x 1000 lock/unlock of
 * `counted` only (the per-lock spec test counts them in RCLIFY_STATS).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(c, ...)                                                              \
    do {                                                                           \
        if (!(c)) {                                                                \
            printf("FAIL line %d: %s: ", __LINE__, #c);                            \
            printf(__VA_ARGS__);                                                   \
            printf("\n");                                                          \
            fflush(stdout);                                                        \
            _exit(1);                                                              \
        }                                                                          \
    } while (0)

static pthread_mutex_t counted = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t other = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static long counter;

/* The interposer's tag: check word over glibc's __list.__next (interpose.c, struct mutex_tag). */
static int interposed(pthread_mutex_t *m)
{
    uintptr_t check;
    memcpy(&check, (char *)m + 32, sizeof check);
    return check == ((uintptr_t)m ^ (uintptr_t)0x52434c4946595f54ull);
}

static struct timespec in_ms(clockid_t clock, long ms)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    return ts;
}

static void *count_many(void *arg)
{
    for (int i = 0; i < 1000; i++) {
        CHECK(pthread_mutex_lock(&counted) == 0, "lock");
        counter++;
        CHECK(pthread_mutex_unlock(&counted) == 0, "unlock");
    }
    return NULL;
}

static void run_threads(int n, void *(*fn)(void *), void *arg)
{
    pthread_t t[64];
    for (int i = 0; i < n; i++)
        CHECK(pthread_create(&t[i], NULL, fn, arg) == 0, "create");
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

/* ---- a lock held by another thread ---- */
static pthread_mutex_t *held_lock;
static int held, release_it;
static pthread_mutex_t flag_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flag_cond = PTHREAD_COND_INITIALIZER;

static void *holder(void *arg)
{
    CHECK(pthread_mutex_lock(held_lock) == 0, "holder lock");
    pthread_mutex_lock(&flag_lock);
    held = 1;
    pthread_cond_broadcast(&flag_cond);
    while (!release_it)
        pthread_cond_wait(&flag_cond, &flag_lock);
    pthread_mutex_unlock(&flag_lock);
    CHECK(pthread_mutex_unlock(held_lock) == 0, "holder unlock");
    return NULL;
}

static pthread_t hold(pthread_mutex_t *m)
{
    pthread_t t;
    held_lock = m;
    held = release_it = 0;
    CHECK(pthread_create(&t, NULL, holder, NULL) == 0, "create holder");
    pthread_mutex_lock(&flag_lock);
    while (!held)
        pthread_cond_wait(&flag_cond, &flag_lock);
    pthread_mutex_unlock(&flag_lock);
    return t;
}

static void release(pthread_t t)
{
    pthread_mutex_lock(&flag_lock);
    release_it = 1;
    pthread_cond_broadcast(&flag_cond);
    pthread_mutex_unlock(&flag_lock);
    pthread_join(t, NULL);
}

/* ---- bounded buffer ---- */
#define SLOTS 4
static int buf[SLOTS], head, tail, fill;
static pthread_mutex_t buf_lock;
static pthread_cond_t not_full, not_empty;
static long consumed_sum;

static void *producer(void *arg)
{
    for (int i = 1; i <= 2000; i++) {
        pthread_mutex_lock(&buf_lock);
        while (fill == SLOTS)
            pthread_cond_wait(&not_full, &buf_lock);
        buf[tail] = i;
        tail = (tail + 1) % SLOTS;
        fill++;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&buf_lock);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    for (int i = 0; i < 2000; i++) {
        pthread_mutex_lock(&buf_lock);
        while (fill == 0) {
            struct timespec ts = in_ms(CLOCK_REALTIME, 50);
            int rc = pthread_cond_timedwait(&not_empty, &buf_lock, &ts);
            CHECK(rc == 0 || rc == ETIMEDOUT, "timedwait %d", rc);
        }
        consumed_sum += buf[head];
        head = (head + 1) % SLOTS;
        fill--;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&buf_lock);
    }
    return NULL;
}

/* ---- broadcast gate ---- */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open, through;

static void *gate_waiter(void *arg)
{
    pthread_mutex_lock(&gate_lock);
    while (!gate_open)
        pthread_cond_wait(&gate_cond, &gate_lock);
    through++;
    pthread_mutex_unlock(&gate_lock);
    return NULL;
}

/* ---- churn ---- */
static void *churn(void *arg)
{
    pthread_mutex_lock(&counted);
    counter++;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&counted);
    return NULL;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "--counted-only") == 0) {
        run_threads(4, count_many, NULL);
        CHECK(counter == 4000, "counter %ld", counter);
        pthread_mutex_lock(&other);
        pthread_mutex_unlock(&other);
        printf("counted interposed: %s\nother lock interposed: %s\n", interposed(&counted) ? "yes" : "no",
               interposed(&other) ? "yes" : "no");
        return 0;
    }

    /* mutual exclusion on a static lock */
    run_threads(4, count_many, NULL);
    CHECK(counter == 4000, "counter %ld", counter);
    printf("interposed: %s\n", interposed(&counted) ? "yes" : "no");

    /* static initializers of the three kinds */
    CHECK(pthread_mutex_lock(&recursive) == 0, "recursive 1");
    CHECK(pthread_mutex_lock(&recursive) == 0, "recursive 2");
    CHECK(pthread_mutex_trylock(&recursive) == 0, "recursive trylock");
    for (int i = 0; i < 3; i++)
        CHECK(pthread_mutex_unlock(&recursive) == 0, "recursive unlock");
    CHECK(pthread_mutex_lock(&errorcheck) == 0, "errorcheck");
#ifndef __SANITIZE_THREAD__ /* TSan reports these misuses in any program: checked in the plain build */
    CHECK(pthread_mutex_lock(&errorcheck) == EDEADLK, "errorcheck relock");
#endif
    CHECK(pthread_mutex_unlock(&errorcheck) == 0, "errorcheck unlock");
#ifndef __SANITIZE_THREAD__
    CHECK(pthread_mutex_unlock(&errorcheck) == EPERM, "errorcheck unlock when free");
#endif
    printf("ok: static initializers: normal, recursive, errorcheck\n");

    /* trylock, timedlock, clocklock against a holder */
    pthread_t h = hold(&counted);
    CHECK(pthread_mutex_trylock(&counted) == EBUSY, "trylock held");
    struct timespec ts = in_ms(CLOCK_REALTIME, 20);
    CHECK(pthread_mutex_timedlock(&counted, &ts) == ETIMEDOUT, "timedlock held");
    ts = in_ms(CLOCK_MONOTONIC, 20);
    CHECK(pthread_mutex_clocklock(&counted, CLOCK_MONOTONIC, &ts) == ETIMEDOUT, "clocklock held");
    release(h);
    CHECK(pthread_mutex_trylock(&counted) == 0, "trylock free");
    CHECK(pthread_mutex_unlock(&counted) == 0, "unlock");
    ts = in_ms(CLOCK_REALTIME, 20);
    CHECK(pthread_mutex_timedlock(&counted, &ts) == 0, "timedlock free");
    CHECK(pthread_mutex_unlock(&counted) == 0, "unlock");
    ts = in_ms(CLOCK_MONOTONIC, 20);
    CHECK(pthread_mutex_clocklock(&counted, CLOCK_MONOTONIC, &ts) == 0, "clocklock free");
    CHECK(pthread_mutex_unlock(&counted) == 0, "unlock");
    printf("ok: trylock, timedlock, clocklock\n");

    /* attributes that keep a lock posix */
    pthread_mutexattr_t attr;
    pthread_mutex_t shared, robust, recursive_dyn;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    CHECK(pthread_mutex_init(&shared, &attr) == 0, "init shared");
    pthread_mutexattr_destroy(&attr);
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    CHECK(pthread_mutex_init(&robust, &attr) == 0, "init robust");
    pthread_mutexattr_destroy(&attr);
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    CHECK(pthread_mutex_init(&recursive_dyn, &attr) == 0, "init recursive");
    pthread_mutexattr_destroy(&attr);
    for (pthread_mutex_t *m = &shared; m; m = m == &shared ? &robust : NULL) {
        CHECK(pthread_mutex_lock(m) == 0, "lock");
        CHECK(pthread_mutex_unlock(m) == 0, "unlock");
        CHECK(!interposed(m), "a process-shared or robust lock stays posix");
        CHECK(pthread_mutex_destroy(m) == 0, "destroy");
    }
    CHECK(pthread_mutex_lock(&recursive_dyn) == 0 && pthread_mutex_lock(&recursive_dyn) == 0, "recursive");
    CHECK(pthread_mutex_unlock(&recursive_dyn) == 0 && pthread_mutex_unlock(&recursive_dyn) == 0, "recursive");
    CHECK(interposed(&recursive_dyn) == interposed(&counted), "an initialised lock is taken like a static one");
    CHECK(pthread_mutex_destroy(&recursive_dyn) == 0, "destroy");
    printf("ok: process-shared and robust stay posix; a recursive lock from an attribute\n");

    /* condition variables: bounded buffer (wait, timedwait, signal), broadcast gate */
    pthread_condattr_t cattr;
    pthread_condattr_init(&cattr);
    pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
    CHECK(pthread_mutex_init(&buf_lock, NULL) == 0, "init");
    CHECK(pthread_cond_init(&not_full, NULL) == 0, "cond init");
    CHECK(pthread_cond_init(&not_empty, NULL) == 0, "cond init");
    pthread_t p, c;
    pthread_create(&p, NULL, producer, NULL);
    pthread_create(&c, NULL, consumer, NULL);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    CHECK(consumed_sum == 2000L * 2001 / 2, "sum %ld", consumed_sum);
    pthread_t g[6];
    for (int i = 0; i < 6; i++)
        pthread_create(&g[i], NULL, gate_waiter, NULL);
    usleep(20000);
    pthread_mutex_lock(&gate_lock);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
    for (int i = 0; i < 6; i++)
        pthread_join(g[i], NULL);
    CHECK(through == 6, "through %d", through);
    /* timeouts: timedwait on the condattr's clock (monotonic), clockwait on the one given */
    pthread_cond_t mono;
    CHECK(pthread_cond_init(&mono, &cattr) == 0, "cond init monotonic");
    pthread_mutex_lock(&buf_lock);
    ts = in_ms(CLOCK_MONOTONIC, 20);
    CHECK(pthread_cond_timedwait(&mono, &buf_lock, &ts) == ETIMEDOUT, "timedwait monotonic");
    ts = in_ms(CLOCK_REALTIME, 20);
    CHECK(pthread_cond_clockwait(&mono, &buf_lock, CLOCK_REALTIME, &ts) == ETIMEDOUT, "clockwait realtime");
    ts = in_ms(CLOCK_MONOTONIC, 20);
    CHECK(pthread_cond_clockwait(&not_full, &buf_lock, CLOCK_MONOTONIC, &ts) == ETIMEDOUT, "clockwait monotonic");
    pthread_mutex_unlock(&buf_lock);
    CHECK(pthread_cond_destroy(&mono) == 0, "cond destroy");
    CHECK(pthread_cond_destroy(&not_full) == 0 && pthread_cond_destroy(&not_empty) == 0, "cond destroy");
    CHECK(pthread_mutex_destroy(&buf_lock) == 0, "destroy");
    pthread_condattr_destroy(&cattr);
    printf("ok: condvar wait, timedwait, clockwait, signal, broadcast\n");

    /* destroy and re-init, heap locks */
    pthread_mutex_t again;
    for (int i = 0; i < 100; i++) {
        CHECK(pthread_mutex_init(&again, NULL) == 0, "init");
        CHECK(pthread_mutex_lock(&again) == 0, "lock");
#ifndef __SANITIZE_THREAD__ /* reported by TSan in any program */
        CHECK(pthread_mutex_destroy(&again) == EBUSY, "destroy held");
#endif
        CHECK(pthread_mutex_unlock(&again) == 0, "unlock");
        CHECK(pthread_mutex_destroy(&again) == 0, "destroy");
    }
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_t *m = malloc(sizeof *m);
        CHECK(pthread_mutex_init(m, NULL) == 0, "init heap");
        CHECK(pthread_mutex_lock(m) == 0 && pthread_mutex_unlock(m) == 0, "heap lock");
        CHECK(pthread_mutex_destroy(m) == 0, "destroy heap");
        free(m);
    }
    printf("ok: destroy and re-init, 1000 heap locks\n");

    /* fork while another thread holds a lock: the child uses the others.  --no-fork: RCL under
     * ThreadSanitizer, whose child of a multi-threaded process cannot start RCL's server threads. */
    int do_fork = !(argc > 1 && strcmp(argv[1], "--no-fork") == 0);
    h = hold(&other);
    fflush(stdout);
    pid_t pid = do_fork ? fork() : -1;
    if (pid == 0) {
        CHECK(pthread_mutex_trylock(&other) == EBUSY, "child: held by a thread that is not here");
        counter = 0;
#ifdef __SANITIZE_THREAD__ /* a TSan child of a multi-threaded process cannot start threads */
        count_many(NULL);
        count_many(NULL);
#else
        run_threads(2, count_many, NULL);
#endif
        CHECK(counter == 2000, "child counter %ld", counter);
        pthread_mutex_t fresh;
        CHECK(pthread_mutex_init(&fresh, NULL) == 0 && pthread_mutex_lock(&fresh) == 0, "child fresh lock");
        pthread_mutex_unlock(&fresh);
        _exit(0);
    }
    int status = 0;
    CHECK(!do_fork || (waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0),
          "child status %d", status);
    release(h);
    printf(do_fork ? "ok: fork with a lock held by another thread\n" : "fork: not run (--no-fork)\n");

    /* thread churn */
    counter = 0;
    for (int wave = 0; wave < 50; wave++)
        run_threads(40, churn, NULL);
    CHECK(counter == 2000, "churn counter %ld", counter);
    printf("ok: 2000 threads in waves of 40\n");
    printf("pthread_api: all checks passed\n");
    return 0;
}
