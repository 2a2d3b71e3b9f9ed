/*
 * librclify_prof.so: the lock profiler for UNMODIFIED programs (`rclify profile -- CMD`).
 *
 * Loaded with LD_PRELOAD, it interposes pthread_mutex_{init,lock,trylock,timedlock,unlock,destroy},
 * pthread_cond_{wait,timedwait} and pthread_create, and measures per lock: acquisitions, contended
 * acquisitions (a first trylock failed), time waiting to acquire, time holding (release included),
 * the locks held while it was taken (nesting) and, where the hardware exposes counters, L1D and
 * last-level cache misses inside its critical sections.
 *
 * Cost on the fast path (an uncontended lock/unlock pair): one clock_gettime pair, a probe of the
 * lock table (read-only once the lock is known) and a probe of the thread's own counter table.
 * There is no global lock: counters are per thread and folded into a global table when a thread
 * exits or when the profile is written.
 *
 * Lock identity.  Every lock the program touches gets a record: the lock's address, and for locks
 * set up by pthread_mutex_init the return address of that call (the allocation site) and the
 * return addresses of the next CALLERS frames (a lock set up by one of the program's helper
 * functions is named by the helper's call); locks that are used without an init call were
 * initialised statically (PTHREAD_MUTEX_INITIALIZER).  The Python side
 * (rclify/profiling/preload_records.py) turns sites into file:line with addr2line and static
 * addresses into variable names with the binary's symbol table, using the /proc/self/maps copy
 * we write.
 *
 * Output.  A text file $RCLIFY_PROF_OUT.<pid> (see write_profile for its lines), replaced
 * atomically (write to .tmp, rename).  It is written at exit (atexit), from fatal-signal and
 * SIGTERM/SIGINT/SIGHUP handlers (only when the program left their default action in place), and
 * every RCLIFY_PROF_INTERVAL_MS (default 1000; 0: never) while the program runs, so that a program
 * killed with SIGKILL still leaves its last snapshot.  Only the exit path writes "end exit".
 *
 * Environment: RCLIFY_PROF_OUT (required, else the library stays passive), RCLIFY_PROF_CACHE=0
 * (do not try cache counters), RCLIFY_PROF_INTERVAL_MS.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prof_common.h"

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

/* ---- the real functions ------------------------------------------------------------------- */

static int (*real_init)(pthread_mutex_t *, const pthread_mutexattr_t *);
static int (*real_lock)(pthread_mutex_t *);
static int (*real_trylock)(pthread_mutex_t *);
static int (*real_timedlock)(pthread_mutex_t *, const struct timespec *);
static int (*real_unlock)(pthread_mutex_t *);
static int (*real_destroy)(pthread_mutex_t *);
static int (*real_cond_wait)(pthread_cond_t *, pthread_mutex_t *);
static int (*real_cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
static int (*real_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static void resolve(void)
{
#define R(var, name) \
    if (!var)        \
        *(void **)&var = dlsym(RTLD_NEXT, name);
    R(real_init, "pthread_mutex_init");
    R(real_lock, "pthread_mutex_lock");
    R(real_trylock, "pthread_mutex_trylock");
    R(real_timedlock, "pthread_mutex_timedlock");
    R(real_unlock, "pthread_mutex_unlock");
    R(real_destroy, "pthread_mutex_destroy");
    R(real_cond_wait, "pthread_cond_wait");
    R(real_cond_timedwait, "pthread_cond_timedwait");
    R(real_create, "pthread_create");
#undef R
}

/* ---- lock records and the address -> record map ----------------------------------------- */

#define MAX_RECORDS (1u << 20)
#define MAP_SLOTS (1u << 21) /* power of two, twice MAX_RECORDS */
#define MAX_NESTED 6
#define MAX_HELD 64
#define CALLERS 3 /* frames recorded past an init call's site: helpers calling helpers */

enum { KIND_STATIC = 's', KIND_INIT = 'i', KIND_UNUSED = 'u' };

struct record {
    uintptr_t addr; /* the pthread_mutex_t */
    uintptr_t site; /* return address of pthread_mutex_init, 0 for a static lock */
    uintptr_t callers[CALLERS]; /* return addresses of the frames above site's (0: none) */
    char kind;
    char destroyed;
};

struct map_slot {
    uintptr_t key;    /* lock address, 0 = empty; never cleared */
    uint32_t rec;     /* current record + 1, 0 = none (not seen, or destroyed) */
};

/* Counters of one lock, per thread (and in the global accumulator, indexed by record). */
struct lock_stat {
    uint64_t acq, contended, wait_ns, hold_ns;
    uint64_t cs_measured, miss[PROF_PMU_EVENTS]; /* sections with cache counts, their misses */
    uint32_t nested[MAX_NESTED];                 /* records (+1) held while this one was taken */
};

struct table_entry {
    uint32_t key; /* record + 1, 0 = empty */
    struct lock_stat s;
};

struct table {
    uint32_t cap, used; /* cap: power of two */
    struct table_entry e[];
};

struct held {
    pthread_mutex_t *m;
    uint32_t rec;
    uint32_t depth;  /* recursive re-acquisitions */
    uint64_t t_acq;  /* start of the current holding segment */
    struct prof_pmu_sample pmu;
    int pmu_ok;
};

struct tstate {
    struct tstate *next;     /* registry list; never unlinked (states are reused) */
    int live;
    uint64_t start_ns;
    struct table *table;     /* replaced (never freed) when it grows; read by the writer */
    struct prof_pmu pmu;
    unsigned nheld, ops;
    struct held held[MAX_HELD];
};

static struct record *records;
static struct map_slot *map;
static uint32_t n_records;          /* atomic */
static struct lock_stat *folded;         /* counters of exited threads, indexed by record */
static struct tstate *threads;      /* atomic list head */
static uint64_t n_threads;          /* atomic: threads seen */
static uint64_t dead_thread_ns;     /* atomic: lifetimes of exited threads */
static uint64_t untracked_acq;      /* atomic: acquisitions not recorded (tables full) */
static int registry_busy;           /* spinlock: folding, reusing states, writing */
static pthread_key_t exit_key;

static int state; /* 0 off, 1 initialising, 2 on */
static char out_path[4096];
static uint64_t start_ns;
static uint64_t interval_ns = 1000000000u;
static uint64_t last_snapshot;      /* atomic */
static int pmu_status;              /* 0 available, else errno of perf_event_open */
static int pmu_wanted = 1;
static int writing;                 /* atomic: a profile is being written */

static TLS struct tstate *self;
static TLS int in_profiler;

static void *map_anon(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void registry_lock(void)
{
    while (__atomic_exchange_n(&registry_busy, 1, __ATOMIC_ACQUIRE))
        sched_yield();
}

static int registry_trylock(void)
{
    return !__atomic_exchange_n(&registry_busy, 1, __ATOMIC_ACQUIRE);
}

static void registry_unlock(void)
{
    __atomic_store_n(&registry_busy, 0, __ATOMIC_RELEASE);
}

static inline uint32_t hash_ptr(uintptr_t p)
{
    uint64_t h = (uint64_t)p * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32);
}

static struct map_slot *map_slot(uintptr_t addr, int insert)
{
    uint32_t i = hash_ptr(addr) & (MAP_SLOTS - 1);
    for (uint32_t probes = 0; probes < MAP_SLOTS; probes++, i = (i + 1) & (MAP_SLOTS - 1)) {
        uintptr_t key = __atomic_load_n(&map[i].key, __ATOMIC_ACQUIRE);
        if (key == addr)
            return &map[i];
        if (key == 0) {
            if (!insert)
                return NULL;
            uintptr_t expected = 0;
            if (__atomic_compare_exchange_n(&map[i].key, &expected, addr, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE) ||
                expected == addr)
                return &map[i];
        }
    }
    return NULL;
}

static uint32_t new_record(uintptr_t addr, uintptr_t site, char kind)
{
    uint32_t r = __atomic_fetch_add(&n_records, 1, __ATOMIC_RELAXED);
    if (r >= MAX_RECORDS)
        return 0;
    records[r].addr = addr;
    records[r].site = site;
    records[r].kind = kind;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    return r + 1;
}

/*
 * The callers of an init call's site (the function that called pthread_mutex_init may be a helper
 * of the program's, called once per lock).  backtrace() unwinds with the .eh_frame tables (no
 * frame pointers needed); its frames start in this library, so they are matched against the site
 * rather than counted.  Only init calls pay for it.
 */
static __attribute__((noinline)) void record_callers(struct record *r)
{
    void *frames[CALLERS + 4];
    int n = backtrace(frames, CALLERS + 4);
    for (int i = 0; i < n; i++) {
        if ((uintptr_t)frames[i] != r->site)
            continue;
        for (int k = 0; k < CALLERS && i + 1 + k < n; k++)
            r->callers[k] = (uintptr_t)frames[i + 1 + k];
        return;
    }
}

/* The record (+1) of the lock at m, created as a static lock on first sight; 0 when full. */
static uint32_t record_of(pthread_mutex_t *m)
{
    struct map_slot *slot = map_slot((uintptr_t)m, 1);
    if (!slot)
        return 0;
    uint32_t rec = __atomic_load_n(&slot->rec, __ATOMIC_ACQUIRE);
    if (rec)
        return rec;
    uint32_t mine = new_record((uintptr_t)m, 0, KIND_STATIC);
    if (!mine)
        return 0;
    uint32_t expected = 0;
    if (__atomic_compare_exchange_n(&slot->rec, &expected, mine, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return mine;
    records[mine - 1].kind = KIND_UNUSED; /* another thread registered it first */
    return expected;
}

/* ---- per-thread counter tables ------------------------------------------------------------ */

static struct table *table_new(uint32_t cap)
{
    struct table *t = map_anon(sizeof *t + (size_t)cap * sizeof(struct table_entry));
    if (t)
        t->cap = cap;
    return t;
}

static struct lock_stat *table_find(struct table *t, uint32_t key)
{
    uint32_t i = hash_ptr(key) & (t->cap - 1);
    for (;;) {
        if (t->e[i].key == key)
            return &t->e[i].s;
        if (t->e[i].key == 0)
            return NULL;
        i = (i + 1) & (t->cap - 1);
    }
}

/* The thread's counters for record `key`; NULL only when memory runs out. */
static struct lock_stat *thread_stat(struct tstate *ts, uint32_t key)
{
    struct table *t = ts->table;
    struct lock_stat *s = table_find(t, key);
    if (s)
        return s;
    if ((t->used + 1) * 4 > t->cap * 3) { /* grow at 75%: the old table stays readable */
        struct table *bigger = table_new(t->cap * 2);
        if (!bigger)
            return NULL;
        for (uint32_t i = 0; i < t->cap; i++)
            if (t->e[i].key) {
                uint32_t j = hash_ptr(t->e[i].key) & (bigger->cap - 1);
                while (bigger->e[j].key)
                    j = (j + 1) & (bigger->cap - 1);
                bigger->e[j] = t->e[i];
            }
        bigger->used = t->used;
        __atomic_store_n(&ts->table, bigger, __ATOMIC_RELEASE);
        t = bigger;
    }
    uint32_t i = hash_ptr(key) & (t->cap - 1);
    while (t->e[i].key)
        i = (i + 1) & (t->cap - 1);
    t->e[i].key = key;
    t->used++;
    return &t->e[i].s;
}

static void stat_add(struct lock_stat *into, const struct lock_stat *s)
{
    into->acq += s->acq;
    into->contended += s->contended;
    into->wait_ns += s->wait_ns;
    into->hold_ns += s->hold_ns;
    into->cs_measured += s->cs_measured;
    for (int i = 0; i < PROF_PMU_EVENTS; i++)
        into->miss[i] += s->miss[i];
    for (int i = 0; i < MAX_NESTED && s->nested[i]; i++)
        for (int j = 0; j < MAX_NESTED; j++) {
            if (into->nested[j] == s->nested[i])
                break;
            if (into->nested[j] == 0) {
                into->nested[j] = s->nested[i];
                break;
            }
        }
}

/* ---- threads ------------------------------------------------------------------------------- */

static void thread_exit(void *arg);

static struct tstate *thread_state(void)
{
    struct tstate *ts = self;
    if (__builtin_expect(ts != NULL, 1))
        return ts;
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2 || in_profiler)
        return NULL;
    in_profiler = 1;
    /* reuse the state of an exited thread, else a new one */
    registry_lock();
    for (ts = threads; ts; ts = ts->next)
        if (!ts->live && ts->table == NULL)
            break;
    if (ts)
        ts->live = 1;
    registry_unlock();
    if (!ts) {
        ts = map_anon(sizeof *ts);
        if (!ts) {
            in_profiler = 0;
            return NULL;
        }
        ts->live = 1;
        struct tstate *head = __atomic_load_n(&threads, __ATOMIC_RELAXED);
        do
            ts->next = head;
        while (!__atomic_compare_exchange_n(&threads, &head, ts, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    }
    ts->nheld = 0;
    ts->ops = 0;
    ts->table = table_new(64);
    ts->pmu.fd = -1;
    if (pmu_status == 0 && prof_pmu_open(&ts->pmu) != 0)
        ts->pmu.fd = -1;
    ts->start_ns = prof_now_ns();
    __atomic_add_fetch(&n_threads, 1, __ATOMIC_RELAXED);
    self = ts;
    pthread_setspecific(exit_key, ts);
    in_profiler = 0;
    return ts->table ? ts : NULL;
}

/* Key destructor: the thread is exiting (returned or called pthread_exit). */
static void thread_exit(void *arg)
{
    struct tstate *ts = arg;
    uint64_t now = prof_now_ns();
    registry_lock();
    struct table *t = ts->table;
    for (uint32_t i = 0; t && i < t->cap; i++)
        if (t->e[i].key)
            stat_add(&folded[t->e[i].key - 1], &t->e[i].s);
    __atomic_add_fetch(&dead_thread_ns, now - ts->start_ns, __ATOMIC_RELAXED);
    if (ts->pmu.fd >= 0)
        close(ts->pmu.fd);
    ts->pmu.fd = -1;
    ts->table = NULL;
    ts->live = 0;
    registry_unlock();
    self = NULL;
    in_profiler = 1; /* later key destructors may still lock: pass them through */
}

/* ---- writing the profile ------------------------------------------------------------------- */

/*
 * The file, one item per line:
 *   rclify-prof 1
 *   pid PID / exe PATH / start_ns T / now_ns T   (exe: /proc/self/exe)
 *   cache available | cache unavailable REASON
 *   threads N TOTAL_NS            threads seen and the sum of their lifetimes so far
 *   untracked N                   acquisitions not recorded (tables full)
 *   lock REC ADDR SITE KIND DESTROYED ACQ CONTENDED WAIT_NS HOLD_NS CS_MEASURED L1D LLC NESTED CALLERS
 *                                 (ADDR, SITE hex; KIND s|i; NESTED: comma list of RECs or -;
 *                                 CALLERS: comma list of hex return addresses above SITE, or -)
 *   maps-begin ... maps-end       a copy of /proc/self/maps
 *   end exit | end signal N | end snapshot
 */
static void write_profile(const char *why, int signo, int have_registry)
{
    if (!out_path[0] || !records)
        return;
    int expected = 0;
    if (!__atomic_compare_exchange_n(&writing, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return;
    char tmp_path[sizeof out_path + 8];
    size_t n = strlen(out_path);
    memcpy(tmp_path, out_path, n);
    memcpy(tmp_path + n, ".tmp", 5);

    uint32_t nrec = __atomic_load_n(&n_records, __ATOMIC_ACQUIRE);
    if (nrec > MAX_RECORDS)
        nrec = MAX_RECORDS;
    struct lock_stat *sum = map_anon((size_t)(nrec ? nrec : 1) * sizeof *sum);
    static struct prof_out out; /* static: 8 KiB is a lot for a signal handler's stack */
    out.fd = open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    out.failed = 0;
    out.len = 0;
    if (out.fd < 0 || !sum) {
        if (out.fd >= 0)
            close(out.fd);
        __atomic_store_n(&writing, 0, __ATOMIC_RELEASE);
        return;
    }
    uint64_t now = prof_now_ns(), thread_ns = __atomic_load_n(&dead_thread_ns, __ATOMIC_RELAXED);
    for (uint32_t r = 0; r < nrec; r++)
        sum[r] = folded[r];
    for (struct tstate *ts = __atomic_load_n(&threads, __ATOMIC_ACQUIRE); ts; ts = ts->next) {
        struct table *t = __atomic_load_n(&ts->table, __ATOMIC_ACQUIRE);
        if (!ts->live || !t)
            continue;
        thread_ns += now - ts->start_ns;
        for (uint32_t i = 0; i < t->cap; i++) {
            uint32_t key = __atomic_load_n(&t->e[i].key, __ATOMIC_RELAXED);
            if (key && key <= nrec)
                stat_add(&sum[key - 1], &t->e[i].s);
        }
    }
    (void)have_registry;

    prof_put(&out, "rclify-prof 1\npid ");
    prof_put_u64(&out, (uint64_t)getpid());
    char exe[1024];
    ssize_t exe_len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[exe_len > 0 ? exe_len : 0] = 0;
    prof_put(&out, "\nexe ");
    prof_put(&out, exe);
    prof_put(&out, "\nstart_ns ");
    prof_put_u64(&out, start_ns);
    prof_put(&out, "\nnow_ns ");
    prof_put_u64(&out, now);
    if (pmu_status == 0) {
        prof_put(&out, "\ncache available");
    } else {
        prof_put(&out, "\ncache unavailable perf_event_open: ");
        prof_put(&out, pmu_status < 0 ? "disabled by RCLIFY_PROF_CACHE=0" : strerror(pmu_status));
    }
    prof_put(&out, "\nthreads ");
    prof_put_u64(&out, __atomic_load_n(&n_threads, __ATOMIC_RELAXED));
    prof_put(&out, " ");
    prof_put_u64(&out, thread_ns);
    prof_put(&out, "\nuntracked ");
    prof_put_u64(&out, __atomic_load_n(&untracked_acq, __ATOMIC_RELAXED));
    prof_put(&out, "\n");
    for (uint32_t r = 0; r < nrec; r++) {
        const struct record *rec = &records[r];
        const struct lock_stat *s = &sum[r];
        if (rec->kind == KIND_UNUSED || rec->addr == 0)
            continue;
        prof_put(&out, "lock ");
        prof_put_u64(&out, r + 1);
        prof_put(&out, " ");
        prof_put_hex(&out, rec->addr);
        prof_put(&out, " ");
        prof_put_hex(&out, rec->site);
        prof_put(&out, rec->kind == KIND_INIT ? " i " : " s ");
        prof_put(&out, rec->destroyed ? "1 " : "0 ");
        const uint64_t v[] = { s->acq, s->contended, s->wait_ns, s->hold_ns, s->cs_measured, s->miss[0], s->miss[1] };
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
            prof_put_u64(&out, v[i]);
            prof_put(&out, " ");
        }
        if (!s->nested[0])
            prof_put(&out, "-");
        for (int i = 0; i < MAX_NESTED && s->nested[i]; i++) {
            if (i)
                prof_put(&out, ",");
            prof_put_u64(&out, s->nested[i]);
        }
        prof_put(&out, rec->callers[0] ? " " : " -");
        for (int i = 0; i < CALLERS && rec->callers[i]; i++) {
            if (i)
                prof_put(&out, ",");
            prof_put_hex(&out, rec->callers[i]);
        }
        prof_put(&out, "\n");
    }
    prof_put(&out, "maps-begin\n");
    prof_put_file(&out, "/proc/self/maps");
    prof_put(&out, "maps-end\nend ");
    prof_put(&out, why);
    if (signo) {
        prof_put(&out, " ");
        prof_put_u64(&out, (uint64_t)signo);
    }
    prof_put(&out, "\n");
    prof_flush(&out);
    int failed = out.failed;
    close(out.fd);
    if (!failed)
        rename(tmp_path, out_path);
    else
        unlink(tmp_path);
    munmap(sum, (size_t)(nrec ? nrec : 1) * sizeof *sum);
    __atomic_store_n(&writing, 0, __ATOMIC_RELEASE);
}

static void at_exit(void)
{
    in_profiler = 1;
    registry_lock();
    write_profile("exit", 0, 1);
    registry_unlock();
}

static void maybe_snapshot(uint64_t now)
{
    uint64_t last = __atomic_load_n(&last_snapshot, __ATOMIC_RELAXED);
    if (!interval_ns || now - last < interval_ns)
        return;
    if (!__atomic_compare_exchange_n(&last_snapshot, &last, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return;
    if (!registry_trylock())
        return;
    write_profile("snapshot", 0, 1);
    registry_unlock();
}

static const int dump_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGHUP };

static void on_signal(int signo)
{
    int saved = errno;
    in_profiler = 1;
    int have = registry_trylock(); /* interrupted while holding it: write anyway, best effort */
    write_profile("signal", signo, have);
    if (have)
        registry_unlock();
    /* SA_RESETHAND restored the default action: raise again (faults re-trigger on return) */
    errno = saved;
    if (signo != SIGSEGV && signo != SIGBUS && signo != SIGFPE && signo != SIGILL)
        raise(signo);
}

static void install_signal_handlers(void)
{
    for (size_t i = 0; i < sizeof dump_signals / sizeof dump_signals[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(dump_signals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
            (old.sa_flags & SA_SIGINFO))
            continue; /* the program has its own handling: leave it alone */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESETHAND | SA_NODEFER | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(dump_signals[i], &sa, NULL);
    }
}

__attribute__((constructor)) static void prof_start(void)
{
    int expected = 0;
    if (!__atomic_compare_exchange_n(&state, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    resolve();
    const char *out = getenv("RCLIFY_PROF_OUT");
    if (!out || !*out || strlen(out) + 32 > sizeof out_path) {
        __atomic_store_n(&state, 0, __ATOMIC_RELEASE); /* passive */
        return;
    }
    snprintf(out_path, sizeof out_path, "%s.%d", out, (int)getpid());
    const char *s = getenv("RCLIFY_PROF_INTERVAL_MS");
    if (s && *s)
        interval_ns = strtoull(s, NULL, 10) * 1000000u;
    s = getenv("RCLIFY_PROF_CACHE");
    pmu_wanted = !(s && strcmp(s, "0") == 0);
    records = map_anon((size_t)MAX_RECORDS * sizeof *records);
    map = map_anon((size_t)MAP_SLOTS * sizeof *map);
    folded = map_anon((size_t)MAX_RECORDS * sizeof *folded);
    if (!records || !map || !folded || pthread_key_create(&exit_key, thread_exit) != 0) {
        fprintf(stderr, "rclify profile: cannot allocate the profiler's tables; not profiling\n");
        __atomic_store_n(&state, 0, __ATOMIC_RELEASE);
        return;
    }
    if (pmu_wanted) {
        struct prof_pmu probe;
        pmu_status = prof_pmu_open(&probe);
        if (pmu_status == 0)
            close(probe.fd);
    } else {
        pmu_status = -1;
    }
    void *warm[2];
    backtrace(warm, 2); /* loads the unwinder now, not inside the program's first init call */
    start_ns = last_snapshot = prof_now_ns();
    install_signal_handlers();
    atexit(at_exit);
    __atomic_store_n(&state, 2, __ATOMIC_RELEASE);
    thread_state(); /* the main thread */
    write_profile("snapshot", 0, 0); /* something exists even if the program dies at once */
}

/* ---- measurements -------------------------------------------------------------------------- */

static inline void pmu_sample(struct tstate *ts, struct held *h)
{
    h->pmu_ok = ts->pmu.fd >= 0 && prof_pmu_read(&ts->pmu, &h->pmu) == 0;
}

/* Adds the cache misses since h's sample to s. */
static inline void pmu_account(struct tstate *ts, struct held *h, struct lock_stat *s, int end_of_cs)
{
    struct prof_pmu_sample now;
    if (!h->pmu_ok || prof_pmu_read(&ts->pmu, &now) != 0) {
        h->pmu_ok = 0;
        return;
    }
    for (int i = 0; i < PROF_PMU_EVENTS; i++)
        s->miss[i] += now.v[i] - h->pmu.v[i];
    if (end_of_cs)
        s->cs_measured++;
}

static void acquired(struct tstate *ts, pthread_mutex_t *m, uint64_t t0, uint64_t t1, int contended)
{
    for (unsigned i = ts->nheld; i-- > 0;)
        if (ts->held[i].m == m) { /* recursive mutex taken again: one section */
            ts->held[i].depth++;
            return;
        }
    uint32_t rec = record_of(m);
    struct lock_stat *s = rec ? thread_stat(ts, rec) : NULL;
    if (!s) {
        __atomic_add_fetch(&untracked_acq, 1, __ATOMIC_RELAXED);
        return;
    }
    s->acq++;
    s->contended += contended;
    s->wait_ns += t1 - t0;
    for (unsigned i = 0; i < ts->nheld; i++) { /* nesting: taken while holding held[i] */
        uint32_t outer = ts->held[i].rec;
        for (int j = 0; j < MAX_NESTED && outer != rec; j++) {
            if (s->nested[j] == outer)
                break;
            if (s->nested[j] == 0) {
                s->nested[j] = outer;
                break;
            }
        }
    }
    if (ts->nheld == MAX_HELD)
        return; /* deeper than we follow: counted, not timed */
    struct held *h = &ts->held[ts->nheld++];
    h->m = m;
    h->rec = rec;
    h->depth = 1;
    pmu_sample(ts, h);
    h->t_acq = t1;
}

static struct held *find_held(struct tstate *ts, pthread_mutex_t *m)
{
    for (unsigned i = ts->nheld; i-- > 0;)
        if (ts->held[i].m == m)
            return &ts->held[i];
    return NULL;
}

/* Takes m, timing the wait; `timed` selects pthread_mutex_timedlock. */
static int take(pthread_mutex_t *m, const struct timespec *deadline, int timed)
{
    struct tstate *ts = thread_state();
    if (!ts)
        return timed ? real_timedlock(m, deadline) : real_lock(m);
    uint64_t t0 = prof_now_ns(), t1 = t0;
    int contended = 0;
    int rc = real_trylock(m);
    if (rc == EBUSY) {
        contended = 1;
        rc = timed ? real_timedlock(m, deadline) : real_lock(m);
        t1 = prof_now_ns();
    }
    if (rc == 0 || rc == EOWNERDEAD)
        acquired(ts, m, t0, t1, contended);
    return rc;
}

EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
    if (__builtin_expect(!real_lock, 0))
        resolve();
    return take(m, NULL, 0);
}

EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *deadline)
{
    if (__builtin_expect(!real_timedlock, 0))
        resolve();
    return take(m, deadline, 1);
}

EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
    if (__builtin_expect(!real_trylock, 0))
        resolve();
    int rc = real_trylock(m);
    struct tstate *ts;
    if ((rc == 0 || rc == EOWNERDEAD) && (ts = thread_state()) != NULL) {
        uint64_t t = prof_now_ns();
        acquired(ts, m, t, t, 0);
    }
    return rc;
}

EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
    if (__builtin_expect(!real_unlock, 0))
        resolve();
    struct tstate *ts = self;
    struct held *h = ts ? find_held(ts, m) : NULL;
    if (!h)
        return real_unlock(m);
    if (h->depth > 1) {
        h->depth--;
        return real_unlock(m);
    }
    struct held copy = *h;
    *h = ts->held[--ts->nheld]; /* usually h is the top: order among the rest does not matter */
    /* no lookup can fail here: the entry was created when the lock was taken */
    struct lock_stat *s = table_find(ts->table, copy.rec);
    if (s)
        pmu_account(ts, &copy, s, 1);
    int rc = real_unlock(m);
    uint64_t t2 = prof_now_ns(); /* after the release: release cost (waking a waiter) included */
    if (s)
        s->hold_ns += t2 - copy.t_acq;
    if (__builtin_expect((++ts->ops & 0xffff) == 0, 0))
        maybe_snapshot(t2);
    return rc;
}

EXPORT int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr)
{
    if (__builtin_expect(!real_init, 0))
        resolve();
    int rc = real_init(m, attr);
    if (rc == 0 && __atomic_load_n(&state, __ATOMIC_ACQUIRE) == 2 && !in_profiler) {
        struct map_slot *slot = map_slot((uintptr_t)m, 1);
        uint32_t rec = slot ? new_record((uintptr_t)m, (uintptr_t)__builtin_return_address(0), KIND_INIT) : 0;
        if (rec) {
            in_profiler = 1; /* what the unwinder itself initialises is not the program's */
            record_callers(&records[rec - 1]);
            in_profiler = 0;
            __atomic_store_n(&slot->rec, rec, __ATOMIC_RELEASE);
        }
    }
    return rc;
}

EXPORT int pthread_mutex_destroy(pthread_mutex_t *m)
{
    if (__builtin_expect(!real_destroy, 0))
        resolve();
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == 2) {
        struct map_slot *slot = map_slot((uintptr_t)m, 0);
        uint32_t rec = slot ? __atomic_exchange_n(&slot->rec, 0, __ATOMIC_ACQ_REL) : 0;
        if (rec)
            records[rec - 1].destroyed = 1; /* the address may be reused by another lock */
    }
    return real_destroy(m);
}

/* The mutex is released for the wait: that time is not critical-section time. */
static int cond_wait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *deadline, int timed)
{
    struct tstate *ts = self;
    struct held *h = ts ? find_held(ts, m) : NULL;
    struct lock_stat *s = h ? table_find(ts->table, h->rec) : NULL;
    if (s) {
        pmu_account(ts, h, s, 0);
        s->hold_ns += prof_now_ns() - h->t_acq;
    }
    unsigned index = h ? (unsigned)(h - ts->held) : 0;
    int rc = timed ? real_cond_timedwait(c, m, deadline) : real_cond_wait(c, m);
    if (s) {
        h = &ts->held[index]; /* the stack only changes in this thread: still ours */
        h->t_acq = prof_now_ns();
        pmu_sample(ts, h);
    }
    return rc;
}

EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    if (__builtin_expect(!real_cond_wait, 0))
        resolve();
    return cond_wait(c, m, NULL, 0);
}

EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *deadline)
{
    if (__builtin_expect(!real_cond_timedwait, 0))
        resolve();
    return cond_wait(c, m, deadline, 1);
}

struct start {
    void *(*fn)(void *);
    void *arg;
};

static void *thread_main(void *p)
{
    struct start st = *(struct start *)p;
    free(p);
    thread_state(); /* the thread's lifetime starts now */
    return st.fn(st.arg);
}

EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (__builtin_expect(!real_create, 0))
        resolve();
    struct start *st;
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2 || !(st = malloc(sizeof *st)))
        return real_create(t, attr, fn, arg);
    st->fn = fn;
    st->arg = arg;
    int rc = real_create(t, attr, thread_main, st);
    if (rc != 0)
        free(st);
    return rc;
}
