/*
 * Reader-writer locks (rcl_rwlock_t), on every registered algorithm (FOR_EACH_ALG):
 *   - posix keeps the pthread rwlock: two readers are inside at once (each waits, holding the
 *     read lock, until the other is in: serialised readers would deadlock, caught by the
 *     watchdog); a reader's tryrdlock succeeds beside another reader, trywrlock is EBUSY;
 *   - every other algorithm runs it as one exclusive lock: beside a reader, tryrdlock and
 *     trywrlock are EBUSY; a reader that takes the read lock again is let in (recursive);
 *   - a writer/reader mix under stress, every way a section is run (rdlock, wrlock, tryrdlock,
 *     trywrlock, timedrdlock, timedwrlock, the execute forms, their _local forms): writers never
 *     overlap anything, readers never see a half-done write, and off posix readers never overlap;
 *     the writers' count is exact;
 *   - RCL_RWLOCK_INITIALIZER (resolved on first use, recursive reads too) and rcl_rwlock_init
 *     with a process-shared attribute (kept posix whatever its configuration); off posix, destroy
 *     of a held lock is EBUSY, then 0.
 */
#include "test_util.h"

#ifdef RCLIFY_TSAN
/* The EBUSY destroy check destroys a held lock on purpose. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "report_mutex_bugs=0 report_destroy_locked=0";
}
#endif

static void rw_init(rcl_rwlock_t *rw, const char *id, int alg)
{
    rcl_lock_config_t cfg = t_config(id, alg, 0);
    CHECK_EQ(rcl_rwlock_init(rw, NULL, &cfg), 0, "rcl_rwlock_init");
    CHECK_EQ(rcl_rwlock_algorithm(rw), alg, "resolved algorithm");
}

/* ---- readers beside a reader ---- */

struct beside {
    rcl_rwlock_t *rw;
    int first_in;  /* the first reader holds the read lock */
    int second_in; /* the second one too */
    int try_rd;    /* the second thread's tryrdlock beside the first reader */
    int try_wr;    /* and its trywrlock */
};

static void *second_reader(void *p)
{
    struct beside *b = p;
    t_wait_flag(&b->first_in, 1);
    int rc = rcl_rwlock_trywrlock(b->rw);
    if (rc == 0)
        rcl_rwlock_unlock(b->rw);
    __atomic_store_n(&b->try_wr, rc, __ATOMIC_RELEASE);
    rc = rcl_rwlock_tryrdlock(b->rw);
    if (rc == 0)
        rcl_rwlock_unlock(b->rw);
    __atomic_store_n(&b->try_rd, rc, __ATOMIC_RELEASE);
    CHECK_EQ(rcl_rwlock_rdlock(b->rw), 0, "second reader's rdlock");
    __atomic_store_n(&b->second_in, 1, __ATOMIC_RELEASE);
    CHECK_EQ(rcl_rwlock_unlock(b->rw), 0, "second reader's unlock");
    return NULL;
}

/* Under posix the first reader waits, holding the lock, for the second to be in too. */
static void readers_beside(rcl_rwlock_t *rw, int parallel, const char *name)
{
    struct beside b = { rw, 0, 0, -1, -1 };
    pthread_t t;
    CHECK_EQ(rcl_rwlock_rdlock(rw), 0, "first reader's rdlock");
    CHECK_EQ(rcl_rwlock_rdlock(rw), 0, "first reader's rdlock again (recursive read)");
    CHECK_EQ(rcl_rwlock_unlock(rw), 0, "first reader's inner unlock");
    CHECK_EQ(pthread_create(&t, NULL, second_reader, &b), 0, "pthread_create");
    __atomic_store_n(&b.first_in, 1, __ATOMIC_RELEASE);
    if (parallel)
        t_wait_flag(&b.second_in, 1);
    else
        while (__atomic_load_n(&b.try_rd, __ATOMIC_ACQUIRE) == -1) /* both tries made (try_rd last) */
            sched_yield();
    CHECK_EQ(rcl_rwlock_unlock(rw), 0, "first reader's unlock");
    pthread_join(t, NULL);
    CHECK_EQ(b.second_in, 1, "second reader got in");
    CHECK_EQ(b.try_wr, EBUSY, "trywrlock beside a reader");
    CHECK_EQ(b.try_rd, parallel ? 0 : EBUSY, "tryrdlock beside a reader");
    OK("%s: %s", name, parallel ? "readers in parallel, trywrlock EBUSY beside them" : "readers serialised, tries EBUSY beside a reader");
}

/* ---- the writer/reader mix ---- */

struct mix {
    rcl_rwlock_t *rw;
    int serialised;  /* not posix: readers exclude each other too */
    long a, b;       /* written by writers only, a == b outside a write */
    long writes;     /* writers' count (plain: under the write lock) */
    int readers;     /* readers inside (atomic) */
    int writers;     /* writers inside (atomic) */
    long overlaps;   /* atomic: a writer beside anyone, a reader beside a writer or a torn a/b */
    int max_readers; /* atomic: most readers seen inside at once */
};

static void read_section(struct mix *x)
{
    int n = __atomic_add_fetch(&x->readers, 1, __ATOMIC_ACQ_REL);
    int seen = __atomic_load_n(&x->max_readers, __ATOMIC_RELAXED);
    while (n > seen && !__atomic_compare_exchange_n(&x->max_readers, &seen, n, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    if (__atomic_load_n(&x->writers, __ATOMIC_ACQUIRE) != 0)
        __atomic_add_fetch(&x->overlaps, 1, __ATOMIC_RELAXED);
    long a = *(volatile long *)&x->a;
    t_cpu_relax();
    if (*(volatile long *)&x->b != a)
        __atomic_add_fetch(&x->overlaps, 1, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&x->readers, 1, __ATOMIC_ACQ_REL);
}

static void write_section(struct mix *x)
{
    if (__atomic_add_fetch(&x->writers, 1, __ATOMIC_ACQ_REL) != 1 || __atomic_load_n(&x->readers, __ATOMIC_ACQUIRE) != 0)
        __atomic_add_fetch(&x->overlaps, 1, __ATOMIC_RELAXED);
    long a = *(volatile long *)&x->a;
    *(volatile long *)&x->a = a + 1;
    t_cpu_relax(); /* a reader in here would see a != b */
    *(volatile long *)&x->b = a + 1;
    x->writes++;
    __atomic_sub_fetch(&x->writers, 1, __ATOMIC_ACQ_REL);
}

static int cs_read(void *p)
{
    read_section(*(struct mix **)p);
    return 7;
}

static int cs_write(void *p)
{
    write_section(*(struct mix **)p);
    return 9;
}

enum { W_LOCK, W_TRY, W_TIMED, W_EXECUTE, W_LOCAL, NWAYS };

static void far_deadline(struct timespec *ts)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += 60;
}

static void mix_worker(int index, void *arg)
{
    struct mix *x = arg;
    struct timespec ts;
    int rc;
    for (int i = 0; i < ITERS(1500); i++) {
        int write = (i + index) % 4 == 0; /* one section in four writes */
        switch ((i / 4 + index) % NWAYS) {
        case W_LOCK:
            CHECK_EQ(write ? rcl_rwlock_wrlock(x->rw) : rcl_rwlock_rdlock(x->rw), 0, "lock");
            write ? write_section(x) : read_section(x);
            CHECK_EQ(rcl_rwlock_unlock(x->rw), 0, "unlock");
            break;
        case W_TRY:
            while ((rc = write ? rcl_rwlock_trywrlock(x->rw) : rcl_rwlock_tryrdlock(x->rw)) == EBUSY)
                sched_yield();
            CHECK_EQ(rc, 0, "trylock");
            write ? write_section(x) : read_section(x);
            CHECK_EQ(rcl_rwlock_unlock(x->rw), 0, "unlock after trylock");
            break;
        case W_TIMED:
            far_deadline(&ts);
            CHECK_EQ(write ? rcl_rwlock_timedwrlock(x->rw, &ts) : rcl_rwlock_timedrdlock(x->rw, &ts), 0, "timed lock");
            write ? write_section(x) : read_section(x);
            CHECK_EQ(rcl_rwlock_unlock(x->rw), 0, "unlock after timed lock");
            break;
        case W_EXECUTE:
            CHECK_EQ(write ? RCL_RWLOCK_EXECUTE_WRITE(x->rw, cs_write, &x) : RCL_RWLOCK_EXECUTE_READ(x->rw, cs_read, &x),
                     write ? 9 : 7, "execute's value");
            break;
        default:
            CHECK_EQ(write ? rcl_rwlock_execute_write_local(x->rw, cs_write, &x) : rcl_rwlock_execute_read_local(x->rw, cs_read, &x),
                     write ? 9 : 7, "execute_local's value");
        }
    }
}

static void mix(rcl_rwlock_t *rw, int serialised, const char *name)
{
    struct mix x = { .rw = rw, .serialised = serialised };
    enum { THREADS = 4 };
    t_run_threads(THREADS, mix_worker, &x);
    long want = 0;
    for (int t = 0; t < THREADS; t++)
        for (int i = 0; i < ITERS(1500); i++)
            want += (i + t) % 4 == 0;
    CHECK_EQ(x.overlaps, 0, "sections that overlapped a writer (or saw a torn write)");
    CHECK_EQ(x.writes, want, "writes counted");
    CHECK_EQ(x.a, want, "a");
    if (serialised)
        CHECK_EQ(x.max_readers, 1, "readers inside at once on an exclusive lock");
    OK("%s: %ld writes among %d sections exact, no overlap%s", name, want, THREADS * ITERS(1500),
       serialised ? ", readers one at a time" : "");
}

/* ---- static initializers, one row per algorithm ---- */

static rcl_rwlock_t rows[T_NALGS] = {
#define RCL_ALGORITHM(ENUM, name, description) RCL_RWLOCK_INITIALIZER(RCL_LOCK_CONFIG("rwlock.c:" #name, RCL_ALG_##ENUM, 0, -1)),
#include "rclify/algorithms.def"
#undef RCL_ALGORITHM
};

/* Off posix the exclusive lock answers EBUSY for a held lock; glibc's rwlock does not look. */
static void destroy_held(rcl_rwlock_t *rw, int serialised, const char *name)
{
    CHECK_EQ(rcl_rwlock_rdlock(rw), 0, "rdlock before destroy");
    if (serialised)
        CHECK_EQ(rcl_rwlock_destroy(rw), EBUSY, "destroy of a held rwlock");
    CHECK_EQ(rcl_rwlock_unlock(rw), 0, "unlock");
    CHECK_EQ(rcl_rwlock_destroy(rw), 0, "destroy");
    OK("%s: destroy %s0", name, serialised ? "EBUSY while held, then " : "");
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "rwlock");
    FOR_EACH_ALG(a) {
        int serialised = a->alg != RCL_ALG_POSIX;
        rcl_rwlock_t rw;
        char name[64];
        snprintf(name, sizeof name, "%s (rcl_rwlock_init)", a->name);
        rw_init(&rw, "rwlock.c:rw", a->alg);
        readers_beside(&rw, !serialised, name);
        mix(&rw, serialised, name);
        destroy_held(&rw, serialised, name);

        rcl_rwlock_t *row = &rows[T_ALG_INDEX(a)];
        snprintf(name, sizeof name, "%s (RCL_RWLOCK_INITIALIZER)", a->name);
        readers_beside(row, !serialised, name);
        CHECK_EQ(rcl_rwlock_algorithm(row), a->alg, "static lock's algorithm");
        mix(row, serialised, name);
    }

    /* shared between processes: only the pthread rwlock excludes there */
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    rcl_lock_config_t cfg = t_config("rwlock.c:shared", RCL_ALG_MCS, 0);
    rcl_rwlock_t shared;
    CHECK_EQ(rcl_rwlock_init(&shared, &attr, &cfg), 0, "init process-shared");
    pthread_rwlockattr_destroy(&attr);
    CHECK_EQ(rcl_rwlock_algorithm(&shared), RCL_ALG_POSIX, "a process-shared rwlock configured mcs stays posix");
    readers_beside(&shared, 1, "process-shared, configured mcs");
    CHECK_EQ(rcl_rwlock_destroy(&shared), 0, "destroy");

    /* a bad clock, as pthread_rwlock_clockrdlock */
    rw_init(&shared, "rwlock.c:clock", RCL_ALG_TICKET);
    struct timespec ts;
    far_deadline(&ts);
    CHECK_EQ(rcl_rwlock_clockrdlock(&shared, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL, "clockrdlock on a CPU clock");
    CHECK_EQ(rcl_rwlock_clockwrlock(&shared, CLOCK_MONOTONIC, &ts), 0, "clockwrlock on CLOCK_MONOTONIC, free lock");
    CHECK_EQ(rcl_rwlock_unlock(&shared), 0, "unlock");
    CHECK_EQ(rcl_rwlock_destroy(&shared), 0, "destroy");
    OK("clockrdlock: EINVAL on a CPU clock, CLOCK_MONOTONIC taken");
    return t_done();
}
