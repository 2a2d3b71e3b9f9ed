/*
 * profile: a pthread mutex (m->posix) that measures itself, for transformed programs run with
 * RCLIFY_LOCKS='*=profile' (or RCL_ALG_PROFILE in lock_config.h).
 *
 * It measures what the preload profiler measures (runtime/profiler/preload.c): acquisitions,
 * contended acquisitions (a first trylock failed), time waiting, time holding (release included),
 * the locks held while it was taken, and L1D / last-level cache misses inside sections where the
 * hardware has counters.  Locks are keyed by m->config.id, the lock_config.h id, so the profile
 * maps exactly onto lock_config.h; locks sharing an id (an array, one allocation site) are one
 * entry with one element per lock.
 *
 * At exit it writes profile.json (the schema of docs/profiling.md) to $RCLIFY_PROFILE_OUT, default
 * rclify-profile.<pid>.json.  Threads are counted from /proc/self/task at exit plus the threads
 * that used a profiled lock and exited before; their lifetimes come from /proc (start time).
 *
 * Counters are updated with relaxed atomic adds: this mode is for measuring, not for production.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../profiler/prof_common.h"
#include "core/atomics.h"
#include "core/pthread_clock.h"
#include "core/runtime.h"

#define PROF_MAX_NESTED 6
#define PROF_MAX_HELD 64

struct prof_lock {
    struct prof_lock *next; /* registry (never unlinked: a destroyed lock's counts stay) */
    const char *id;         /* m->config.id, or NULL */
    uintptr_t addr;
    uint64_t acq, contended, wait_ns, hold_ns, cs_measured, miss[PROF_PMU_EVENTS];
    struct prof_lock *nested[PROF_MAX_NESTED]; /* written only while holding this lock */
};

struct prof_held {
    rcl_mutex_t *m;
    struct prof_lock *p;
    unsigned depth;
    uint64_t t_acq;
    struct prof_pmu_sample pmu;
    int pmu_ok;
};

struct prof_thread {
    uint64_t start_ns; /* CLOCK_BOOTTIME, from /proc */
    struct prof_pmu pmu;
    unsigned nheld;
    struct prof_held held[PROF_MAX_HELD];
};

static struct prof_lock *prof_locks;     /* atomic list head */
static pthread_once_t prof_once = PTHREAD_ONCE_INIT;
static pthread_key_t prof_key;
static int prof_pmu_status;              /* 0 available, else errno */
static uint64_t prof_exited_threads, prof_exited_ns; /* atomic */
/* Allocated on the thread's first lock operation: in TLS the struct (3.6 KB) took more static TLS
 * than glibc keeps for the initial-exec TLS of a dlopen'ed object, and every shared object linked
 * with the runtime (a plugin a program dlopens: apr's testdso) failed to load with "cannot allocate
 * memory in static TLS block". */
static __thread struct prof_thread *prof_self;

static uint64_t boot_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Field 22 of a /proc stat file: start time in clock ticks since boot, as nanoseconds. */
static uint64_t proc_start_ns(const char *path)
{
    char buf[1024];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command name may contain spaces */
    if (!p)
        return 0;
    unsigned long long ticks = 0;
    /* after ')': field 3 (state) ... field 22 (starttime) */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               &ticks) != 1)
        return 0;
    long hz = sysconf(_SC_CLK_TCK);
    return ticks * (1000000000ull / (uint64_t)(hz > 0 ? hz : 100));
}

static void prof_thread_exit(void *arg)
{
    struct prof_thread *t = arg;
    add_relaxed(&prof_exited_threads, 1);
    add_relaxed(&prof_exited_ns, boot_ns() - t->start_ns);
    if (t->pmu.fd >= 0)
        close(t->pmu.fd);
    t->pmu.fd = -1;
    if (prof_self == t)
        prof_self = NULL;
    free(t);
}

static struct prof_thread *prof_thread(void)
{
    struct prof_thread *t = prof_self;
    if (__builtin_expect(t != NULL, 1))
        return t;
    t = calloc(1, sizeof *t);
    if (t == NULL)
        rcl_fatal("profile: out of memory for a thread's held-lock table (%zu bytes)", sizeof *t);
    prof_self = t;
    int cancel; /* open() and read() are cancellation points; a lock operation is not */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    t->start_ns = proc_start_ns("/proc/thread-self/stat");
    if (!t->start_ns)
        t->start_ns = boot_ns();
    t->pmu.fd = -1;
    if (prof_pmu_status == 0)
        prof_pmu_open(&t->pmu);
    if (gettid() != getpid()) /* the main thread is counted from /proc at exit */
        pthread_setspecific(prof_key, t);
    pthread_setcancelstate(cancel, NULL);
    return t;
}

/* ---- writing profile.json ------------------------------------------------------------------ */

static int by_id(const void *a, const void *b)
{
    const struct prof_lock *x = *(struct prof_lock *const *)a, *y = *(struct prof_lock *const *)b;
    int c = strcmp(x->id ? x->id : "", y->id ? y->id : "");
    return c ? c : (x->addr > y->addr) - (x->addr < y->addr);
}

static const char *lock_id(const struct prof_lock *p)
{
    return p->id ? p->id : "(anonymous)";
}

static void put_pct(struct prof_out *o, uint64_t ns, uint64_t total)
{
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%.3f", total ? 100.0 * (double)ns / (double)total : 0.0);
    prof_put(o, tmp);
}

static void put_counts(struct prof_out *o, struct prof_lock **v, size_t n, uint64_t total)
{
    uint64_t acq = 0, cont = 0, wait = 0, hold = 0;
    for (size_t i = 0; i < n; i++) {
        acq += ld_relaxed(&v[i]->acq);
        cont += ld_relaxed(&v[i]->contended);
        wait += ld_relaxed(&v[i]->wait_ns);
        hold += ld_relaxed(&v[i]->hold_ns);
    }
    prof_put(o, "\"acquisitions\": ");
    prof_put_u64(o, acq);
    prof_put(o, ", \"contended\": ");
    prof_put_u64(o, cont);
    prof_put(o, ", \"wait_ns\": ");
    prof_put_u64(o, wait);
    prof_put(o, ", \"hold_ns\": ");
    prof_put_u64(o, hold);
    prof_put(o, ", \"cs_time_pct\": ");
    put_pct(o, wait + hold, total);
}

static void put_lock(struct prof_out *o, struct prof_lock **v, size_t n, uint64_t total)
{
    prof_put(o, "    {\"id\": ");
    prof_put_json(o, lock_id(v[0]));
    prof_put(o, ", \"name\": ");
    prof_put_json(o, lock_id(v[0]));
    prof_put(o, ", \"kind\": \"config\", ");
    put_counts(o, v, n, total);
    uint64_t measured = 0, miss[PROF_PMU_EVENTS] = { 0 };
    for (size_t i = 0; i < n; i++) {
        measured += ld_relaxed(&v[i]->cs_measured);
        for (int e = 0; e < PROF_PMU_EVENTS; e++)
            miss[e] += ld_relaxed(&v[i]->miss[e]);
    }
    prof_put(o, ",\n     \"cache_misses_per_cs\": ");
    if (prof_pmu_status == 0 && measured) {
        char tmp[96];
        snprintf(tmp, sizeof tmp, "{\"l1d\": %.2f, \"llc\": %.2f}", (double)miss[0] / (double)measured,
                 (double)miss[1] / (double)measured);
        prof_put(o, tmp);
    } else {
        prof_put(o, "null");
    }
    /* nested_in: distinct ids of the locks held when one of these was taken */
    prof_put(o, ", \"nested_in\": [");
    const char *seen[64];
    size_t nseen = 0;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < PROF_MAX_NESTED; k++) {
            struct prof_lock *outer = ld_relaxed(&v[i]->nested[k]);
            if (!outer)
                break;
            const char *id = lock_id(outer);
            int dup = strcmp(id, lock_id(v[0])) == 0;
            for (size_t s = 0; s < nseen && !dup; s++)
                dup = strcmp(seen[s], id) == 0;
            if (dup || nseen == sizeof seen / sizeof seen[0])
                continue;
            prof_put(o, nseen ? ", " : "");
            prof_put_json(o, id);
            seen[nseen++] = id;
        }
    prof_put(o, "],\n     \"elements\": ");
    if (n == 1) {
        prof_put(o, "null}");
        return;
    }
    prof_put(o, "[");
    for (size_t i = 0; i < n; i++) {
        prof_put(o, i ? ",\n       {\"name\": \"" : "\n       {\"name\": \"");
        prof_put_hex(o, v[i]->addr);
        prof_put(o, "\", ");
        put_counts(o, &v[i], 1, total);
        prof_put(o, "}");
    }
    prof_put(o, "]}");
}

static void prof_write(void)
{
    char path[4096];
    const char *env = getenv("RCLIFY_PROFILE_OUT");
    if (env && *env)
        snprintf(path, sizeof path, "%s", env);
    else
        snprintf(path, sizeof path, "rclify-profile.%d.json", (int)getpid());
    /* A regular file (or a new one) is written beside and renamed into place, so that a reader
     * never sees half a profile.  Anything else already there (/dev/null, a FIFO, a terminal) is
     * written in place: renamed over, it would be replaced by a regular file (as root, /dev/null
     * itself). */
    struct stat st;
    int in_place = stat(path, &st) == 0 && !S_ISREG(st.st_mode);
    char tmp_path[sizeof path + 8];
    snprintf(tmp_path, sizeof tmp_path, "%s.tmp", path);
    const char *open_path = in_place ? path : tmp_path;

    /* threads: every live one (from /proc), plus those that used a profiled lock and exited */
    uint64_t now = boot_ns();
    uint64_t threads = ld_relaxed(&prof_exited_threads), thread_ns = ld_relaxed(&prof_exited_ns);
    DIR *dir = opendir("/proc/self/task");
    struct dirent *d;
    while (dir && (d = readdir(dir)) != NULL) {
        if (d->d_name[0] == '.')
            continue;
        char stat_path[300];
        snprintf(stat_path, sizeof stat_path, "/proc/self/task/%s/stat", d->d_name);
        uint64_t start = proc_start_ns(stat_path);
        threads++;
        thread_ns += start && start < now ? now - start : 0;
    }
    if (dir)
        closedir(dir);
    uint64_t process_start = proc_start_ns("/proc/self/stat");

    size_t n = 0, cap = 64;
    struct prof_lock **v = malloc(cap * sizeof *v);
    for (struct prof_lock *p = ld_acquire(&prof_locks); p && v; p = p->next) {
        if (n == cap)
            v = realloc(v, (cap *= 2) * sizeof *v);
        if (v)
            v[n++] = p;
    }
    if (!v) {
        fprintf(stderr, "rclify: profile: out of memory writing %s\n", path);
        return;
    }
    qsort(v, n, sizeof *v, by_id);

    struct prof_out *o = calloc(1, sizeof *o);
    int flags = in_place ? O_WRONLY | O_CLOEXEC : O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
    if (!o || (o->fd = open(open_path, flags, 0644)) < 0) {
        fprintf(stderr, "rclify: profile: cannot write %s: %s\n", open_path, strerror(errno));
        free(o);
        free(v);
        return;
    }
    char exe[4096] = "";
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[len > 0 ? len : 0] = 0;
    prof_put(o, "{\n  \"format\": \"rclify-profile\",\n  \"version\": 1,\n  \"source\": \"runtime\",\n  \"program\": ");
    prof_put_json(o, exe);
    prof_put(o, ",\n  \"args\": [");
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char cmd[8192];
        ssize_t m = read(fd, cmd, sizeof cmd - 1);
        close(fd);
        cmd[m > 0 ? m : 0] = 0;
        int first = 1;
        for (ssize_t i = (ssize_t)strlen(cmd) + 1; m > 0 && i < m; i += (ssize_t)strlen(cmd + i) + 1) {
            prof_put(o, first ? "" : ", ");
            prof_put_json(o, cmd + i);
            first = 0;
        }
    }
    prof_put(o, "],\n  \"pid\": ");
    prof_put_u64(o, (uint64_t)getpid());
    prof_put(o, ",\n  \"exit_status\": \"exit\",\n  \"partial\": false,\n  \"partial_reason\": null,\n  \"threads\": ");
    prof_put_u64(o, threads);
    prof_put(o, ",\n  \"wall_ns\": ");
    prof_put_u64(o, process_start && process_start < now ? now - process_start : 0);
    prof_put(o, ",\n  \"total_thread_ns\": ");
    prof_put_u64(o, thread_ns);
    prof_put(o, ",\n  \"cache_counters\": ");
    if (prof_pmu_status == 0) {
        prof_put(o, "{\"events\": [\"l1d\", \"llc\"]}");
    } else {
        char why[160];
        snprintf(why, sizeof why, "unavailable on this machine (perf_event_open: %s)", strerror(prof_pmu_status));
        prof_put_json(o, why);
    }
    prof_put(o, ",\n  \"untracked_acquisitions\": 0,\n  \"locks\": [");
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && strcmp(lock_id(v[i]), lock_id(v[j])) == 0)
            j++;
        prof_put(o, i ? ",\n" : "\n");
        put_lock(o, v + i, j - i, thread_ns);
        i = j;
    }
    prof_put(o, "\n  ]\n}\n");
    prof_flush(o);
    int failed = o->failed;
    close(o->fd);
    if (in_place ? failed : failed || rename(tmp_path, path) != 0) {
        fprintf(stderr, "rclify: profile: cannot write %s\n", path);
        if (!in_place)
            unlink(tmp_path);
    }
    free(o);
    free(v);
}

static void prof_setup(void)
{
    struct prof_pmu probe;
    prof_pmu_status = prof_pmu_open(&probe);
    if (prof_pmu_status == 0)
        close(probe.fd);
    pthread_key_create(&prof_key, prof_thread_exit);
    atexit(prof_write);
}

/* ---- the algorithm ------------------------------------------------------------------------- */

static int profile_init(rcl_mutex_t *m)
{
    pthread_once(&prof_once, prof_setup);
    struct prof_lock *p = calloc(1, sizeof *p);
    if (!p)
        return ENOMEM;
    p->id = m->config.id;
    p->addr = (uintptr_t)m;
    struct prof_lock *head = ld_relaxed(&prof_locks);
    do
        p->next = head;
    while (!__atomic_compare_exchange_n(&prof_locks, &head, p, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    m->impl = p;
    return 0;
}

static int profile_destroy(rcl_mutex_t *m)
{
    /* the record stays in the registry so the profile keeps this lock's counts */
    return pthread_mutex_destroy(&m->posix);
}

static void acquired(rcl_mutex_t *m, uint64_t t0, uint64_t t1, int contended)
{
    struct prof_thread *t = prof_thread();
    struct prof_lock *p = m->impl;
    for (unsigned i = t->nheld; i-- > 0;)
        if (t->held[i].m == m) { /* recursive mutex taken again: one section */
            t->held[i].depth++;
            return;
        }
    add_relaxed(&p->acq, 1);
    if (contended)
        add_relaxed(&p->contended, 1);
    add_relaxed(&p->wait_ns, t1 - t0);
    for (unsigned i = 0; i < t->nheld; i++) { /* nesting: taken while holding held[i] */
        struct prof_lock *outer = t->held[i].p;
        for (int k = 0; k < PROF_MAX_NESTED && outer != p; k++) {
            struct prof_lock *cur = ld_relaxed(&p->nested[k]);
            if (cur == outer)
                break;
            if (!cur) {
                st_relaxed(&p->nested[k], outer); /* we hold p: no other writer */
                break;
            }
        }
    }
    if (t->nheld == PROF_MAX_HELD)
        return;
    struct prof_held *h = &t->held[t->nheld++];
    h->m = m;
    h->p = p;
    h->depth = 1;
    h->pmu_ok = t->pmu.fd >= 0 && prof_pmu_read(&t->pmu, &h->pmu) == 0;
    h->t_acq = t1;
}

static struct prof_held *find_held(rcl_mutex_t *m)
{
    struct prof_thread *t = prof_self;
    if (t == NULL) /* no lock taken through this algorithm on this thread */
        return NULL;
    for (unsigned i = t->nheld; i-- > 0;)
        if (t->held[i].m == m)
            return &t->held[i];
    return NULL;
}

static void account_misses(struct prof_held *h, int end_of_cs)
{
    struct prof_pmu_sample now;
    if (!h->pmu_ok || prof_pmu_read(&prof_self->pmu, &now) != 0)
        return;
    for (int e = 0; e < PROF_PMU_EVENTS; e++)
        add_relaxed(&h->p->miss[e], now.v[e] - h->pmu.v[e]);
    if (end_of_cs)
        add_relaxed(&h->p->cs_measured, 1);
}

static int profile_lock(rcl_mutex_t *m)
{
    uint64_t t0 = prof_now_ns(), t1 = t0;
    int contended = 0;
    int rc = pthread_mutex_trylock(&m->posix);
    if (rc == EBUSY) {
        contended = 1;
        rc = pthread_mutex_lock(&m->posix);
        t1 = prof_now_ns();
    }
    if (rc == 0 || rc == EOWNERDEAD)
        acquired(m, t0, t1, contended);
    return rc;
}

static int profile_clocklock(rcl_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
    uint64_t t0 = prof_now_ns(), t1 = t0;
    int contended = 0;
    int rc = pthread_mutex_trylock(&m->posix);
    if (rc == EBUSY) { /* a timeout is not an acquisition: only its wait is lost */
        contended = 1;
        rc = rcl_pthread_clocklock(&m->posix, clock, abstime);
        t1 = prof_now_ns();
    }
    if (rc == 0 || rc == EOWNERDEAD)
        acquired(m, t0, t1, contended);
    return rc;
}

static int profile_trylock(rcl_mutex_t *m)
{
    int rc = pthread_mutex_trylock(&m->posix);
    if (rc == 0 || rc == EOWNERDEAD) {
        uint64_t t = prof_now_ns();
        acquired(m, t, t, 0);
    }
    return rc;
}

static int profile_unlock(rcl_mutex_t *m)
{
    struct prof_held *h = find_held(m);
    if (!h)
        return pthread_mutex_unlock(&m->posix);
    if (h->depth > 1) {
        h->depth--;
        return pthread_mutex_unlock(&m->posix);
    }
    struct prof_held copy = *h;
    *h = prof_self->held[--prof_self->nheld];
    account_misses(&copy, 1);
    int rc = pthread_mutex_unlock(&m->posix);
    add_relaxed(&copy.p->hold_ns, prof_now_ns() - copy.t_acq); /* release included */
    return rc;
}

/* The section runs here: errno is the section's; the measurements (perf_event_open, clocks)
 * must not change it. */
static int profile_execute(rcl_mutex_t *m, rcl_cs_fn fn, void *ctx, size_t ctx_size)
{
    int saved = errno;
    int rc = profile_lock(m);
    errno = saved;
    if (rc != 0)
        rcl_fatal("lock %s (profile): pthread_mutex_lock failed inside rcl_execute: %s; "
                  "an extracted critical section cannot run without its lock",
                  rcl_lock_name(m), strerror(rc));
    int ret = fn(ctx);
    saved = errno;
    profile_unlock(m);
    errno = saved;
    return ret;
}

static int profile_execute_trylock(rcl_mutex_t *m, rcl_cs_fn fn, void *ctx)
{
    int saved = errno;
    int rc = profile_trylock(m);
    errno = saved;
    *(int *)ctx = rc == 0;
    int ret = fn(ctx);
    saved = errno;
    if (rc == 0)
        profile_unlock(m);
    errno = saved;
    return ret;
}

/* A condition wait: the mutex is released for the wait, which is not critical-section time. */
static int profile_release_for_wait(rcl_mutex_t *m)
{
    struct prof_held *h = find_held(m);
    if (h) {
        account_misses(h, 0);
        add_relaxed(&h->p->hold_ns, prof_now_ns() - h->t_acq);
    }
    return pthread_mutex_unlock(&m->posix);
}

static int profile_reacquire_after_wait(rcl_mutex_t *m)
{
    int rc = pthread_mutex_lock(&m->posix);
    struct prof_held *h = find_held(m);
    if (h) { /* the section goes on: a new holding segment, not a new acquisition */
        h->t_acq = prof_now_ns();
        h->pmu_ok = prof_self->pmu.fd >= 0 && prof_pmu_read(&prof_self->pmu, &h->pmu) == 0;
    }
    return rc;
}

static void profile_print_stats(rcl_mutex_t *m, int fd)
{
    struct prof_lock *p = m->impl;
    if (!p)
        return;
    dprintf(fd, "  %-40s profile  acq %llu  contended %llu  wait %.3f ms  hold %.3f ms\n", rcl_lock_name(m),
            (unsigned long long)ld_relaxed(&p->acq), (unsigned long long)ld_relaxed(&p->contended),
            (double)ld_relaxed(&p->wait_ns) / 1e6, (double)ld_relaxed(&p->hold_ns) / 1e6);
}

const struct rcl_lock_ops rcl_ops_profile = {
    .init = profile_init,
    .destroy = profile_destroy,
    .lock = profile_lock,
    .trylock = profile_trylock,
    .unlock = profile_unlock,
    .clocklock = profile_clocklock,
    .execute = profile_execute,
    .execute_trylock = profile_execute_trylock,
    .release_for_wait = profile_release_for_wait,
    .reacquire_after_wait = profile_reacquire_after_wait,
    .print_stats = profile_print_stats,
};
