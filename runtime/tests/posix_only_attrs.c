/*
 * Mutex attributes only a pthread mutex honours, on every registered algorithm (FOR_EACH_ALG):
 *   - PTHREAD_PROCESS_SHARED: a lock and a counter in shared memory, incremented by 4 forked
 *     processes (fio's locks; under the other algorithms, whose state is per process and whose
 *     futexes are private, 800000 increments came out as 210418 to 793700);
 *   - robust: the lock of a process that died holding it is taken with EOWNERDEAD, and made
 *     consistent with rcl_mutex_consistent (EINVAL on a lock created without the attribute);
 *   - a priority protocol (PTHREAD_PRIO_INHERIT; PTHREAD_PRIO_PROTECT, whose ceiling
 *     rcl_mutex_getprioceiling reads).
 * Each such lock runs posix whatever its configuration (rcl_mutex_algorithm says so).
 */
#include "test_util.h"

#include <sys/mman.h>

#define PROCS 4

struct shared {
    rcl_mutex_t m;
    long counter;
};

static void init_with(rcl_mutex_t *m, const struct t_alg *a, int (*set)(pthread_mutexattr_t *))
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    CHECK_EQ(set(&attr), 0, "set the attribute");
    rcl_lock_config_t cfg = t_config("posix_only_attrs.c:m", a->alg, 0);
    CHECK_EQ(rcl_mutex_init(m, &attr, &cfg), 0, "rcl_mutex_init");
    pthread_mutexattr_destroy(&attr);
    CHECK(rcl_mutex_algorithm(m) == RCL_ALG_POSIX, "%s: the lock runs %s", a->name,
          rcl_algorithm_name(rcl_mutex_algorithm(m)));
}

static int set_pshared(pthread_mutexattr_t *attr)
{
    return pthread_mutexattr_setpshared(attr, PTHREAD_PROCESS_SHARED);
}

static int set_robust(pthread_mutexattr_t *attr)
{
    int rc = pthread_mutexattr_setpshared(attr, PTHREAD_PROCESS_SHARED);
    return rc ? rc : pthread_mutexattr_setrobust(attr, PTHREAD_MUTEX_ROBUST);
}

static int set_inherit(pthread_mutexattr_t *attr)
{
    return pthread_mutexattr_setprotocol(attr, PTHREAD_PRIO_INHERIT);
}

static void shared_counter(const struct t_alg *a)
{
    struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(s != MAP_FAILED, "mmap");
    init_with(&s->m, a, set_pshared);
    long n = ITERS(200000);
    pid_t pids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        pids[p] = fork();
        CHECK(pids[p] >= 0, "fork");
        if (pids[p] == 0) {
            for (long i = 0; i < n; i++) {
                rcl_mutex_lock(&s->m);
                s->counter++;
                rcl_mutex_unlock(&s->m);
            }
            _exit(0);
        }
    }
    for (int p = 0; p < PROCS; p++) {
        int status;
        CHECK(waitpid(pids[p], &status, 0) == pids[p] && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "child %d", p);
    }
    CHECK_EQ(s->counter, PROCS * n, "increments by 4 processes");
    CHECK_EQ(rcl_mutex_destroy(&s->m), 0, "destroy");
    munmap(s, sizeof *s);
    OK("%s: a PTHREAD_PROCESS_SHARED lock excludes across processes (%ld increments)", a->name, PROCS * n);
}

static void robust_owner_dies(const struct t_alg *a)
{
    struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(s != MAP_FAILED, "mmap");
    init_with(&s->m, a, set_robust);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        rcl_mutex_lock(&s->m);
        _exit(0); /* dies holding it */
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    CHECK_EQ(rcl_mutex_lock(&s->m), EOWNERDEAD, "lock of a dead owner's robust mutex");
    CHECK_EQ(rcl_mutex_consistent(&s->m), 0, "rcl_mutex_consistent");
    CHECK_EQ(rcl_mutex_unlock(&s->m), 0, "unlock");
    CHECK_EQ(rcl_mutex_lock(&s->m), 0, "lock after it was made consistent");
    CHECK_EQ(rcl_mutex_unlock(&s->m), 0, "unlock");
    CHECK_EQ(rcl_mutex_destroy(&s->m), 0, "destroy");
    munmap(s, sizeof *s);

    rcl_mutex_t plain; /* a lock created without the attribute: pthread's EINVAL */
    rcl_lock_config_t cfg = t_config("posix_only_attrs.c:plain", a->alg, 0);
    CHECK_EQ(rcl_mutex_init(&plain, NULL, &cfg), 0, "rcl_mutex_init");
    CHECK_EQ(rcl_mutex_lock(&plain), 0, "lock");
    CHECK_EQ(rcl_mutex_consistent(&plain), EINVAL, "rcl_mutex_consistent of a lock that is not robust");
    CHECK_EQ(rcl_mutex_unlock(&plain), 0, "unlock");
    CHECK_EQ(rcl_mutex_destroy(&plain), 0, "destroy");
    OK("%s: a robust lock reports EOWNERDEAD and is made consistent with rcl_mutex_consistent", a->name);
}

static int set_protect(pthread_mutexattr_t *attr)
{
    int rc = pthread_mutexattr_setprotocol(attr, PTHREAD_PRIO_PROTECT);
    return rc ? rc : pthread_mutexattr_setprioceiling(attr, sched_get_priority_min(SCHED_FIFO) + 1);
}

static void priority_ceiling(const struct t_alg *a)
{
    rcl_mutex_t m;
    int ceiling = -1;
    init_with(&m, a, set_protect);
    CHECK_EQ(rcl_mutex_getprioceiling(&m, &ceiling), 0, "rcl_mutex_getprioceiling");
    CHECK_EQ(ceiling, sched_get_priority_min(SCHED_FIFO) + 1, "the ceiling the attribute set");
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");
    rcl_lock_config_t cfg = t_config("posix_only_attrs.c:plain", a->alg, 0);
    CHECK_EQ(rcl_mutex_init(&m, NULL, &cfg), 0, "rcl_mutex_init");
    CHECK_EQ(rcl_mutex_getprioceiling(&m, &ceiling), EINVAL, "a lock without a ceiling");
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");
    OK("%s: rcl_mutex_getprioceiling reads a PTHREAD_PRIO_PROTECT lock's ceiling", a->name);
}

static void priority_inherit(const struct t_alg *a)
{
    rcl_mutex_t m;
    init_with(&m, a, set_inherit);
    CHECK_EQ(rcl_mutex_lock(&m), 0, "lock");
    CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock");
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");
    OK("%s: a PTHREAD_PRIO_INHERIT lock runs posix", a->name);
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "posix_only_attrs");
    FOR_EACH_ALG(a)
    {
        shared_counter(a);
        robust_owner_dies(a);
        priority_inherit(a);
        priority_ceiling(a);
    }
    return t_done();
}
