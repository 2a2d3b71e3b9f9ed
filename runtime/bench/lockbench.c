/*
 * lockbench: the runtime's microbenchmark, after the paper's (Lozi et al., TOCS 2016, sections
 * 5.3 and 5.5), over every lock algorithm of the registry (include/rclify/algorithms.def) in one
 * run.  It measures:
 *   1. the physical floor: two threads on two CPUs bouncing one cache line, round trip in ns, and
 *      the RCL round trip (one client running empty sections on a server on another CPU), paired
 *      line by line (see measure_roundtrip); an uncontended posix lock+unlock for reference;
 *   2. the bytes each algorithm needs per lock: sizeof(rcl_mutex_t) plus the heap a lock takes
 *      (mallinfo2 around initialising and using 1000 locks);
 *   3. throughput and latency of every algorithm ("series": an algorithm and a form) at each
 *      point of a grid:
 *        threads  client threads, 1 ... 4x the CPUs;
 *        delay    iterations of local work between two sections: 0 is the highest contention,
 *                 long delays none;
 *        lines    shared cache lines each section reads and writes, through dependent accesses
 *                 (each line's address is read from the line before, the lines are in different
 *                 pages in a random order: no prefetcher brings them early);
 *      and two variants at the first delay and line count of the grid:
 *        ctx      5.5.1: the section also increments N 32-bit context variables, which the
 *                 client copies into a context structure before the section and back after it
 *                 (as rclify transform's extracted sections do; rcl_execute_sized);
 *        nested   5.5.2: N locks of the series' algorithm, always taken in the same order, each
 *                 level incrementing its own counter, the innermost touching the lines.
 *      Forms: "execute" is the extracted form (rcl_execute), measured for every algorithm;
 *      "lock" is rcl_mutex_lock / section / rcl_mutex_unlock on the caller's thread, measured as
 *      a second series where it differs from execute (RCL, whose execute runs the section on the
 *      server, and combining locks, whose execute may run it on another thread).
 *
 * Every series is measured side by side with posix: at each point, --repeat rounds each measure
 * every series once, in an order that rotates from round to round, and a series' ratio to posix is
 * the median of its per-round ratios.  A virtual machine's host moves its vCPUs around within
 * seconds; figures taken seconds apart would compare different machines.
 *
 * After each measurement the benchmark checks mutual exclusion: every shared line and nesting
 * counter was incremented exactly once per section, and every thread's context variables once per
 * section of that thread.  It exits 1, naming the series and the point, when one was not.
 *
 * The algorithm `profile` is left out: it is a measuring posix lock (rclify profile), not a
 * choice of algorithm.  Output: tables on stdout (--brief: only parts 1 and 2), progress on stderr,
 * --csv FILE one row per measurement, --memory-csv FILE one row per algorithm, --json all of it as
 * one JSON object on stdout.  `lockbench --help` lists the flags.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rclify.h"
/* Internal headers (the bench is built with -Isrc): which algorithms combine, and their waiting
 * policies. */
#include "core/runtime.h"
#include "bench_util.h"

#define CACHE_LINE 64
#define PAGE 4096
#define MAX_THREADS 1024
#define MAX_LINES 64
#define MAX_CTX 256
#define MAX_NESTED 16
#define MAX_REPEAT 32
#define MAX_LIST 32
#define MAX_POINTS 4096
#define MAX_SERIES (2 * RCL_ALG_COUNT)
#define MEMORY_LOCKS 1000
#define LATENCY_SAMPLE 8 /* one section in 8 is timed, so that clock reads do not dominate */

enum form { FORM_EXECUTE, FORM_LOCK };
static const char *const form_names[] = { "execute", "lock" };
enum forms_choice { FORMS_AUTO, FORMS_EXECUTE, FORMS_BOTH };

struct int_list {
    int n;
    int v[MAX_LIST];
};

struct options {
    double duration;   /* seconds per measurement; 0: from --budget */
    double budget;     /* seconds for all throughput measurements together, when duration is 0 */
    double rt_duration; /* seconds of one round-trip round (8 floor/rcl pairs) */
    int repeat;        /* rounds per point (median) */
    struct int_list threads, delays, lines, ctx, nested;
    int forms;         /* enum forms_choice */
    int policy;        /* enum rcl_wait_policy for every lock but posix */
    char algorithms[512]; /* comma-separated names; empty: every registered one but profile */
    int server_cpu;    /* CPU of the RCL server; -1: unpinned, -2: the last CPU */
    int client_cpu;    /* CPU of the round trip's client and of the ping-pong's first thread */
    int pin_clients;   /* pin throughput clients to the CPUs other than the server's */
    int roundtrip;     /* measure part 1 */
    int json, brief, quiet;
    int fault;         /* enum fault: --inject-fault */
    const char *csv, *memory_csv;
};

static struct options opt = {
    .duration = 0, .budget = 110, .rt_duration = 0.25, .repeat = 3, .forms = FORMS_AUTO,
    .policy = RCL_WAIT_AUTO, .server_cpu = -2, .client_cpu = 0, .roundtrip = 1,
};

static long ncpus;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void pin_self(int cpu)
{
    if (cpu < 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void unpin_self(void)
{
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int c = 0; c < ncpus && c < CPU_SETSIZE; c++)
        CPU_SET(c, &all);
    pthread_setaffinity_np(pthread_self(), sizeof all, &all);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p) {
        fprintf(stderr, "lockbench: out of memory\n");
        exit(1);
    }
    return p;
}

static void loadavg(double out[3])
{
    out[0] = out[1] = out[2] = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf %lf %lf", &out[0], &out[1], &out[2]) != 3)
            out[0] = out[1] = out[2] = -1;
        fclose(f);
    }
}

#define progress(...) bench_progress("lockbench", opt.quiet, __VA_ARGS__)

static rcl_lock_config_t config_for(int alg, const char *id, int server)
{
    rcl_lock_config_t c = RCL_LOCK_CONFIG_POLICY(id, alg, server, alg == RCL_ALG_RCL ? opt.server_cpu : -1,
                                                 alg == RCL_ALG_POSIX ? RCL_WAIT_AUTO : opt.policy);
    return c;
}

static void init_or_die(rcl_mutex_t *m, const rcl_lock_config_t *c)
{
    int rc = rcl_mutex_init(m, NULL, c);
    if (rc) {
        fprintf(stderr, "lockbench: rcl_mutex_init (%s) failed: %s\n", rcl_algorithm_name(c->algorithm),
                strerror(rc));
        exit(1);
    }
}

static int cs_empty(void *ctx)
{
    return 0;
}

/* ---- 1. the floor and the RCL round trip ---- */

/*
 * The floor and the RCL round trip are measured in pairs: a short ping-pong on one cache line,
 * then a short RCL run through one client's mailbox, PROBE_LINES pairs (lines, mailboxes) per
 * repeat.  Two reasons:
 *   - on a mesh (Intel Xeon) a line's transfer time depends on which L3 slice is its home, a hash
 *     of its physical address: one line's ping-pong ranged from 103 to 141 ns between lines on
 *     the same two CPUs, so one line on each side would make the ratio a draw of two addresses;
 *   - this VM's host moves its two vCPUs between sibling hyperthreads of one core (a ~30-60 ns
 *     floor), two cores of one socket (~110-140 ns) and, it seems, further apart (~300 ns)
 *     from one second to the next: the two sides of a ratio must be taken a few milliseconds
 *     apart, not seconds.
 * The ratio reported is the median of the per-pair ratios; pairs whose floor is under
 * SIBLING_NS (the two CPUs share a core's L1/L2: not a cross-core transfer) are counted apart.
 */
#define PROBE_LINES 8
#define SIBLING_NS 70.0
#define MAX_PAIRS (MAX_REPEAT * PROBE_LINES)

static volatile uint64_t *pp_line; /* the line being bounced */
static int pp_stop;

static void *pong(void *arg)
{
    pin_self(*(int *)arg);
    uint64_t want = 1;
    for (;;) {
        uint64_t s;
        while ((s = __atomic_load_n(pp_line, __ATOMIC_ACQUIRE)) != want) {
            if (__atomic_load_n(&pp_stop, __ATOMIC_RELAXED))
                return NULL;
            cpu_relax();
        }
        __atomic_store_n(pp_line, s + 1, __ATOMIC_RELEASE);
        want = s + 2;
    }
}

/* Round trip in ns on one line: this thread writes an odd value, the other answers with the next
 * even one. */
static double pingpong_line(volatile uint64_t *line, int cpu_a, int cpu_b, double seconds)
{
    pthread_t t;
    pp_stop = 0;
    pp_line = line;
    *line = 0;
    pthread_create(&t, NULL, pong, &cpu_b);
    pin_self(cpu_a);
    /* Warm-up: 1000 rounds, or a quarter of the time when the pair is descheduled (a loaded
     * machine), then the measured rounds until the deadline. */
    uint64_t rounds = 0, warm = 0, s = 0, start = 0, deadline = 0;
    uint64_t warm_end = now_ns() + (uint64_t)(seconds * 0.25e9);
    for (;; rounds++) {
        if (!start && (rounds == 1000 || ((rounds & 15) == 0 && now_ns() > warm_end))) {
            start = now_ns();
            deadline = start + (uint64_t)(seconds * 1e9);
            warm = rounds;
        }
        __atomic_store_n(line, s + 1, __ATOMIC_RELEASE);
        while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != s + 2)
            cpu_relax();
        s += 2;
        if (start && rounds > warm && ((rounds - warm) & 15) == 0 && now_ns() > deadline)
            break;
    }
    double ns = (double)(now_ns() - start) / (double)(rounds - warm);
    __atomic_store_n(&pp_stop, 1, __ATOMIC_RELAXED);
    __atomic_store_n(line, s + 3, __ATOMIC_RELEASE); /* not what pong waits for: it sees stop */
    pthread_join(t, NULL);
    return ns;
}

/* The k-th probe line: each in its own page, at a different offset. */
static volatile uint64_t *probe_line(int k)
{
    static char *pages;
    if (!pages) {
        pages = aligned_alloc(PAGE, PAGE * PROBE_LINES);
        if (!pages) {
            fprintf(stderr, "lockbench: out of memory\n");
            exit(1);
        }
        memset(pages, 0, PAGE * PROBE_LINES);
    }
    return (volatile uint64_t *)(pages + PAGE * k + CACHE_LINE * (5 * k % 64));
}

static double roundtrip_loop(rcl_mutex_t *m, int hybrid, double seconds)
{
    /* Warm-up as in pingpong_line: 1000 sections or a quarter of the time. */
    uint64_t n = 0, warm = 0, start = 0, deadline = 0;
    uint64_t warm_end = now_ns() + (uint64_t)(seconds * 0.25e9);
    for (;; n++) {
        if (!start && (n == 1000 || ((n & 15) == 0 && now_ns() > warm_end))) {
            start = now_ns();
            deadline = start + (uint64_t)(seconds * 1e9);
            warm = n;
        }
        if (hybrid) {
            rcl_mutex_lock(m);
            rcl_mutex_unlock(m);
        } else {
            rcl_execute(m, cs_empty, NULL);
        }
        if (start && n > warm && ((n - warm) & 15) == 0 && now_ns() > deadline)
            break;
    }
    return (double)(now_ns() - start) / (double)(n - warm);
}

struct roundtrip_result {
    double floor_ns, floor_best_ns, rcl_ns, rcl_best_ns; /* medians and best over all pairs */
    double ratio;                   /* median of the per-pair ratios, all pairs */
    int cross_pairs, sibling_pairs; /* pairs with a floor >= / < SIBLING_NS */
    double cross_ratio, sibling_ratio; /* median ratio of each kind (0: none) */
};

/* Medians of the pairs whose floor is on the requested side of SIBLING_NS (all when side < 0). */
static double median_ratio(const double *floor, const double *ratio, int n, int side, int *count)
{
    double v[MAX_PAIRS];
    int k = 0;
    for (int i = 0; i < n; i++)
        if (side < 0 || (floor[i] < SIBLING_NS) == side)
            v[k++] = ratio[i];
    if (count)
        *count = k;
    return k ? bench_median(v, k) : 0;
}

/*
 * One client (this thread) and PROBE_LINES locks, lock k on RCL server k, every server on the
 * server CPU: the client's mailbox on server k is a line of server k's own request array, so the
 * pairs go through PROBE_LINES different mailbox lines, and each server polls one mailbox.
 */
static struct roundtrip_result measure_roundtrip(int cpu_a, int cpu_b)
{
    double slice = opt.rt_duration / 2 / PROBE_LINES;
    rcl_mutex_t locks[PROBE_LINES];
    for (int k = 0; k < PROBE_LINES; k++) {
        rcl_lock_config_t c = config_for(RCL_ALG_RCL, "lockbench:roundtrip", k);
        init_or_die(&locks[k], &c);
    }
    double fl[MAX_PAIRS], rt[MAX_PAIRS], ratio[MAX_PAIRS];
    int n = 0;
    for (int r = 0; r < opt.repeat; r++)
        for (int k = 0; k < PROBE_LINES; k++, n++) {
            fl[n] = pingpong_line(probe_line(k), cpu_a, cpu_b, slice);
            rt[n] = roundtrip_loop(&locks[k], 0, slice);
            ratio[n] = rt[n] / fl[n];
            /* Let server k go idle and park before the next pair, so that it does not spin
             * beside the ping-pong's second thread or the next server. */
            struct timespec idle = { 0, 2000000 };
            nanosleep(&idle, NULL);
        }
    for (int k = 0; k < PROBE_LINES; k++)
        rcl_mutex_destroy(&locks[k]);
    struct roundtrip_result res;
    res.ratio = median_ratio(fl, ratio, n, -1, NULL);
    res.cross_ratio = median_ratio(fl, ratio, n, 0, &res.cross_pairs);
    res.sibling_ratio = median_ratio(fl, ratio, n, 1, &res.sibling_pairs);
    res.floor_ns = bench_median(fl, n); /* sorts */
    res.floor_best_ns = fl[0];
    res.rcl_ns = bench_median(rt, n);
    res.rcl_best_ns = rt[0];
    return res;
}

/* An uncontended posix lock+unlock, ns (median of --repeat). */
static double posix_uncontended_ns(void)
{
    rcl_mutex_t m;
    rcl_lock_config_t c = config_for(RCL_ALG_POSIX, "lockbench:uncontended", 0);
    init_or_die(&m, &c);
    double v[MAX_REPEAT];
    for (int r = 0; r < opt.repeat; r++)
        v[r] = roundtrip_loop(&m, 1, 0.02);
    rcl_mutex_destroy(&m);
    return bench_median(v, opt.repeat);
}

/* ---- 2. bytes per lock ---- */

struct memory_result {
    int alg;
    double heap_per_lock;     /* heap bytes one initialised and used lock holds */
    double retained_per_lock; /* heap bytes still held per lock after all were destroyed */
};

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2(); /* main arena: this thread allocates there */
    return mi.uordblks + mi.hblkhd;
}

/*
 * Heap growth around initialising MEMORY_LOCKS locks of one algorithm and running one section in
 * each (an algorithm may allocate its state on first use).  One lock is set up, used and destroyed
 * first, so that what an algorithm allocates once per process or per thread (an RCL server, a
 * thread's queue nodes) is not counted as per-lock memory.
 */
static struct memory_result measure_memory(int alg)
{
    struct memory_result res = { .alg = alg };
    rcl_lock_config_t c = config_for(alg, "lockbench:memory", 0);
    rcl_mutex_t warm;
    init_or_die(&warm, &c);
    rcl_execute(&warm, cs_empty, NULL);
    rcl_mutex_lock(&warm);
    rcl_mutex_unlock(&warm);
    rcl_mutex_destroy(&warm);

    rcl_mutex_t *locks = xcalloc(MEMORY_LOCKS, sizeof *locks);
    size_t before = heap_in_use();
    for (int i = 0; i < MEMORY_LOCKS; i++)
        init_or_die(&locks[i], &c);
    for (int i = 0; i < MEMORY_LOCKS; i++) {
        rcl_execute(&locks[i], cs_empty, NULL);
        rcl_mutex_lock(&locks[i]);
        rcl_mutex_unlock(&locks[i]);
    }
    size_t used = heap_in_use();
    for (int i = 0; i < MEMORY_LOCKS; i++)
        rcl_mutex_destroy(&locks[i]);
    size_t after = heap_in_use();
    free(locks);
    res.heap_per_lock = ((double)used - (double)before) / MEMORY_LOCKS;
    res.retained_per_lock = ((double)after - (double)before) / MEMORY_LOCKS;
    return res;
}

/* ---- 3. throughput and latency ---- */

/* A shared line the sections touch: its counter, and the address of the next line to touch
 * (each address is read from the line before: dependent, not prefetchable accesses). */
struct shared_line {
    _Alignas(CACHE_LINE) volatile long count;
    struct shared_line *volatile next;
};
static char *line_pages;                /* MAX_LINES pages, one line used in each */
static struct shared_line *line_chain; /* the first line; the chain covers MAX_LINES lines */

/* MAX_LINES lines, line i in page perm[i] at a random offset, chained in that order. */
static void setup_lines(void)
{
    line_pages = aligned_alloc(PAGE, (size_t)PAGE * MAX_LINES);
    if (!line_pages) {
        fprintf(stderr, "lockbench: out of memory\n");
        exit(1);
    }
    memset(line_pages, 0, (size_t)PAGE * MAX_LINES);
    int perm[MAX_LINES];
    unsigned seed = 12345;
    for (int i = 0; i < MAX_LINES; i++)
        perm[i] = i;
    for (int i = MAX_LINES - 1; i > 0; i--) { /* Fisher-Yates, fixed seed: the same layout each run */
        int j = (int)(rand_r(&seed) % (unsigned)(i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    struct shared_line *prev = NULL;
    for (int i = 0; i < MAX_LINES; i++) {
        int offset = (int)(rand_r(&seed) % (PAGE / CACHE_LINE)) * CACHE_LINE;
        struct shared_line *l = (struct shared_line *)(line_pages + (size_t)PAGE * perm[i] + offset);
        if (prev)
            prev->next = l;
        else
            line_chain = l;
        prev = l;
    }
    prev->next = NULL;
}

/* One series: an algorithm in one form, with its own locks (MAX_NESTED, for the nested variant). */
struct series {
    int alg;
    int form;
    rcl_mutex_t *locks;
};

/* The point being measured, read by the sections. */
struct point {
    int threads, delay, lines, ctx, nested;
};
static struct point cur;
static struct series *cur_series;

/* Nesting level i's counter, protected by lock i. */
static struct {
    _Alignas(CACHE_LINE) volatile long count;
} level_count[MAX_NESTED];

/* The context variables of 5.5.1, copied in before the section and back after it. */
struct ctx_vars {
    int v[MAX_CTX];
};

/*
 * --inject-fault: one section of the run skips one increment, a lost update the checks of
 * measure_once must report (exit 1).  The tests use it to show those checks can fail.
 */
enum fault { FAULT_NONE, FAULT_LINES, FAULT_CTX, FAULT_NESTED };
static const char *const fault_names[] = { "none", "lines", "ctx", "nested" };
static int fault_armed; /* enum fault: the next section of that kind skips an increment */

static int take_fault(int kind)
{
    return __atomic_load_n(&fault_armed, __ATOMIC_RELAXED) == kind &&
           __atomic_exchange_n(&fault_armed, FAULT_NONE, __ATOMIC_RELAXED) == kind;
}

static void touch_lines(void)
{
    struct shared_line *l = line_chain;
    int skip = take_fault(FAULT_LINES);
    for (int i = 0; i < cur.lines; i++) {
        if (!(skip && i == 0))
            l->count = l->count + 1;
        l = l->next;
    }
}

static int cs_touch(void *ctx)
{
    touch_lines();
    return 0;
}

static int cs_ctx(void *p)
{
    struct ctx_vars *c = p;
    touch_lines();
    int skip = take_fault(FAULT_CTX);
    for (int i = skip; i < cur.ctx; i++)
        c->v[i]++;
    return 0;
}

/* Level i of the nested variant: its counter, then level i+1 under lock i+1, or the lines. */
static const int nest_level[MAX_NESTED] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static int cs_nested(void *p)
{
    int level = *(const int *)p;
    if (!(take_fault(FAULT_NESTED)))
        level_count[level].count = level_count[level].count + 1;
    if (level + 1 < cur.nested)
        return rcl_execute(&cur_series->locks[level + 1], cs_nested, (void *)&nest_level[level + 1]);
    touch_lines();
    return 0;
}

/* A client thread.  Its counters are written by it alone, with relaxed atomic stores, and read
 * by the main thread at the start and the end of the measured window (after a warm-up). */
struct worker {
    int cpu;
    uint64_t sections;        /* sections run so far */
    uint64_t latency_sum_ns;  /* time of the sampled section calls so far */
    uint64_t latency_samples; /* sampled calls so far */
    int local[MAX_CTX];       /* the thread's own copies of the context variables */
} __attribute__((aligned(CACHE_LINE)));

static pthread_barrier_t tp_start;
static int tp_stop;

/* One section of the current point, in the current series' form. */
static void one_section(struct worker *w)
{
    struct series *s = cur_series;
    if (s->form == FORM_LOCK) {
        for (int i = 0; i < cur.nested; i++)
            rcl_mutex_lock(&s->locks[i]);
        if (cur.nested > 1)
            for (int i = take_fault(FAULT_NESTED); i < cur.nested; i++)
                level_count[i].count = level_count[i].count + 1;
        touch_lines();
        for (int i = take_fault(FAULT_CTX); i < cur.ctx; i++)
            w->local[i]++;
        for (int i = cur.nested - 1; i >= 0; i--)
            rcl_mutex_unlock(&s->locks[i]);
    } else if (cur.nested > 1) {
        rcl_execute(&s->locks[0], cs_nested, (void *)&nest_level[0]);
    } else if (cur.ctx > 0) {
        /* As an extracted section: the variables copied into a context, the section, back. */
        struct ctx_vars c;
        size_t size = sizeof c.v[0] * (size_t)cur.ctx;
        memcpy(c.v, w->local, size);
        rcl_execute_sized(&s->locks[0], cs_ctx, &c, size);
        memcpy(w->local, c.v, size);
    } else {
        rcl_execute(&s->locks[0], cs_touch, NULL);
    }
}

static void *tp_worker(void *p)
{
    struct worker *w = p;
    pin_self(w->cpu);
    pthread_barrier_wait(&tp_start);
    uint64_t n = 0, lat = 0, samples = 0;
    volatile unsigned local = 0;
    while (!__atomic_load_n(&tp_stop, __ATOMIC_RELAXED)) {
        if (n % LATENCY_SAMPLE == 0) {
            uint64_t t0 = now_ns();
            one_section(w);
            lat += now_ns() - t0;
            samples++;
            __atomic_store_n(&w->latency_sum_ns, lat, __ATOMIC_RELAXED);
            __atomic_store_n(&w->latency_samples, samples, __ATOMIC_RELAXED);
        } else {
            one_section(w);
        }
        __atomic_store_n(&w->sections, ++n, __ATOMIC_RELAXED);
        for (int d = 0; d < cur.delay; d++)
            local += (unsigned)d;
    }
    return NULL;
}

struct measurement {
    double throughput; /* sections per second, all threads */
    double latency_ns; /* mean time of one section call (waiting included), sampled */
};

static const char *series_label(const struct series *s)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "%s%s", rcl_algorithm_name(s->alg), s->form == FORM_LOCK ? " (lock)" : "");
    return buf;
}

/* Totals of the workers' counters at one instant (read one worker after the other). */
struct snapshot {
    uint64_t at_ns, sections, latency_sum_ns, latency_samples;
};

static struct snapshot take_snapshot(struct worker *w, int n)
{
    struct snapshot s = { 0 };
    for (int i = 0; i < n; i++) {
        s.sections += __atomic_load_n(&w[i].sections, __ATOMIC_RELAXED);
        s.latency_sum_ns += __atomic_load_n(&w[i].latency_sum_ns, __ATOMIC_RELAXED);
        s.latency_samples += __atomic_load_n(&w[i].latency_samples, __ATOMIC_RELAXED);
    }
    s.at_ns = now_ns();
    return s;
}

static void sleep_s(double seconds)
{
    struct timespec d = { (time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9) };
    while (nanosleep(&d, &d) == -1 && errno == EINTR)
        ;
}

/* The warm-up before each measured window: threads started, servers and parked waiters woken,
 * caches filled.  Sections of the warm-up and of the drain after it are not counted. */
static double warmup_s(double duration)
{
    return duration / 5 > 0.005 ? duration / 5 : 0.005;
}

/* Sections per second and latency of series s at point cur: a warm-up, then a window of
 * `duration` seconds between two snapshots of the counters. */
static struct measurement measure_once(struct series *s, double duration)
{
    static struct worker workers[MAX_THREADS];
    static pthread_t tids[MAX_THREADS];
    int n = cur.threads;
    cur_series = s;
    for (struct shared_line *l = line_chain; l; l = l->next)
        l->count = 0;
    for (int i = 0; i < MAX_NESTED; i++)
        level_count[i].count = 0;
    tp_stop = 0;
    if (opt.fault == FAULT_LINES || (opt.fault == FAULT_CTX && cur.ctx > 0) ||
        (opt.fault == FAULT_NESTED && cur.nested > 1))
        fault_armed = opt.fault;
    pthread_barrier_init(&tp_start, NULL, (unsigned)n + 1);
    int k = 0;
    for (int i = 0; i < n; i++) {
        memset(&workers[i], 0, sizeof workers[i]);
        workers[i].cpu = -1;
        if (opt.pin_clients && ncpus > 1) {
            do
                k = (k + 1) % (int)ncpus;
            while (k == opt.server_cpu);
            workers[i].cpu = k;
        }
        if (pthread_create(&tids[i], NULL, tp_worker, &workers[i])) {
            fprintf(stderr, "lockbench: cannot create thread %d\n", i);
            exit(1);
        }
    }
    pthread_barrier_wait(&tp_start);
    sleep_s(warmup_s(duration));
    struct snapshot a = take_snapshot(workers, n);
    sleep_s(duration);
    struct snapshot b = take_snapshot(workers, n);
    __atomic_store_n(&tp_stop, 1, __ATOMIC_RELAXED);
    long total = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(tids[i], NULL);
        total += (long)workers[i].sections;
    }
    pthread_barrier_destroy(&tp_start);

    /* Mutual exclusion held: every line and every level counter was incremented once per
     * section, and each thread's context variables once per section of that thread. */
    int i = 0;
    for (struct shared_line *l = line_chain; i < cur.lines; l = l->next, i++)
        if (l->count != total) {
            fprintf(stderr, "lockbench: %s lost updates (threads %d, delay %d, lines %d, ctx %d, nested %d): "
                    "line %d = %ld, sections = %ld\n", series_label(s), cur.threads, cur.delay, cur.lines, cur.ctx,
                    cur.nested, i, l->count, total);
            exit(1);
        }
    for (i = 0; cur.nested > 1 && i < cur.nested; i++)
        if (level_count[i].count != total) {
            fprintf(stderr, "lockbench: %s lost updates at nesting level %d: %ld, sections = %ld\n",
                    series_label(s), i, level_count[i].count, total);
            exit(1);
        }
    for (int t = 0; t < n; t++)
        for (i = 0; i < cur.ctx; i++)
            if ((uint64_t)workers[t].local[i] != workers[t].sections) {
                fprintf(stderr, "lockbench: %s lost a context update: thread %d variable %d = %d, its sections = %lu\n",
                        series_label(s), t, i, workers[t].local[i], (unsigned long)workers[t].sections);
                exit(1);
            }
    struct measurement m;
    m.throughput = (double)(b.sections - a.sections) / ((double)(b.at_ns - a.at_ns) / 1e9);
    uint64_t samples = b.latency_samples - a.latency_samples;
    m.latency_ns = samples ? (double)(b.latency_sum_ns - a.latency_sum_ns) / (double)samples : 0;
    return m;
}

/* One row of results: a series at a point. */
struct row {
    const struct series *s;
    struct point p;
    double throughput, throughput_best, latency_ns, ratio;
};

static struct row *rows;
static int nrows, rows_cap;
static double delay_ns_per_iteration;

static const char *const csv_header =
    "algorithm,form,threads,delay,lines,ctx,nested,throughput,latency_ns,ratio_to_posix,delay_ns,"
    "throughput_best,repeat,duration_s\n";

static void csv_row(FILE *f, const struct row *r, double duration)
{
    fprintf(f, "%s,%s,%d,%d,%d,%d,%d,%.0f,%.1f,%.4f,%.0f,%.0f,%d,%.3f\n", rcl_algorithm_name(r->s->alg),
            form_names[r->s->form], r->p.threads, r->p.delay, r->p.lines, r->p.ctx, r->p.nested, r->throughput,
            r->latency_ns, r->ratio, r->p.delay * delay_ns_per_iteration, r->throughput_best, opt.repeat, duration);
}

/*
 * Every series at point p, side by side: opt.repeat rounds, each measuring every series once,
 * starting from a different series each round; series 0 is posix, the reference of the ratios.
 */
static void measure_point(struct series *series, int nseries, struct point p, double duration, FILE *csv)
{
    static double tp[MAX_REPEAT][MAX_SERIES], lat[MAX_REPEAT][MAX_SERIES];
    cur = p;
    for (int r = 0; r < opt.repeat; r++)
        for (int j = 0; j < nseries; j++) {
            int s = (j + r) % nseries;
            struct measurement m = measure_once(&series[s], duration);
            tp[r][s] = m.throughput;
            lat[r][s] = m.latency_ns;
        }
    for (int s = 0; s < nseries; s++) {
        double t[MAX_REPEAT], l[MAX_REPEAT], ratio[MAX_REPEAT];
        int nratio = 0;
        for (int r = 0; r < opt.repeat; r++) {
            t[r] = tp[r][s];
            l[r] = lat[r][s];
            if (tp[r][0] > 0) /* a round where posix finished no section has no reference */
                ratio[nratio++] = tp[r][s] / tp[r][0];
        }
        if (nrows == rows_cap) {
            rows_cap = rows_cap ? 2 * rows_cap : 256;
            rows = realloc(rows, (size_t)rows_cap * sizeof *rows);
            if (!rows) {
                fprintf(stderr, "lockbench: out of memory\n");
                exit(1);
            }
        }
        struct row *row = &rows[nrows++];
        row->s = &series[s];
        row->p = p;
        row->ratio = nratio ? bench_median(ratio, nratio) : 0;
        row->latency_ns = bench_median(l, opt.repeat);
        row->throughput = bench_median(t, opt.repeat); /* sorts t */
        row->throughput_best = t[opt.repeat - 1];
        if (csv) {
            csv_row(csv, row, duration);
            fflush(csv);
        }
    }
}

/* ns per iteration of the delay loop (the same loop as tp_worker's), on this thread. */
static double calibrate_delay(void)
{
    volatile unsigned local = 0;
    int iters = 1000000;
    double best = 1e9;
    for (int r = 0; r < 3; r++) {
        uint64_t t0 = now_ns();
        for (int d = 0; d < iters; d++)
            local += (unsigned)d;
        double ns = (double)(now_ns() - t0) / iters;
        if (ns < best)
            best = ns;
    }
    return best;
}

/* ---- options ---- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: lockbench [options]\n"
            "  --algorithms LIST   algorithm names, comma-separated (default: every registered one but\n"
            "                      profile; posix is always measured: it is the reference)\n"
            "  --forms F           auto: execute for every algorithm, lock/unlock too where it differs\n"
            "                      (rcl, combining locks); execute; both (default auto)\n"
            "  --threads LIST      client threads (default 1,2,4,... up to 4x the CPUs)\n"
            "  --delays LIST       local work between two sections, loop iterations (default 0,300,3000,30000)\n"
            "  --lines LIST        shared cache lines per section (default 1,5)\n"
            "  --ctx LIST          context-variable counts of the 5.5.1 variant, 'none' for none (default 16)\n"
            "  --nested LIST       lock counts of the 5.5.2 variant, 'none' for none (default 3)\n"
            "  --duration S        seconds per measurement (default: --budget shared among them)\n"
            "  --budget S          seconds for all the throughput measurements (default 110)\n"
            "  --repeat N          rounds per point, medians shown (default 3)\n"
            "  --full              the full sweep: delays 0..1000000, lines 1,5, ctx 1..64, nested 2..8,\n"
            "                      every power of two and CPU multiple up to 4x the CPUs, 5 rounds of 0.2 s\n"
            "                      (flags given too take precedence)\n"
            "  --policy P          waiting policy of every lock but posix: auto, spin, yield, park;\n"
            "                      algorithms that cannot honour it are left out (default auto)\n"
            "  --roundtrip-duration S  seconds of one round of the floor / RCL round trip (default 0.25)\n"
            "  --no-roundtrip      skip the floor / RCL round trip\n"
            "  --server-cpu N      CPU of the RCL server (default: the last CPU; -1: unpinned)\n"
            "  --client-cpu N      CPU of the round trip's client / ping-pong initiator (default 0)\n"
            "  --pin-clients       pin throughput clients to CPUs other than the server's\n"
            "  --csv FILE          one row per measurement (algorithm, form, threads, delay, lines, ctx,\n"
            "                      nested, throughput, latency_ns, ratio_to_posix, ...)\n"
            "  --memory-csv FILE   one row per algorithm: whether it combines, bytes per lock\n"
            "  --json              everything as one JSON object on stdout instead of the tables\n"
            "  --brief             tables of the round trip and the memory only\n"
            "  --quiet             no progress lines on stderr\n"
            "  --inject-fault K    for tests: one section skips an increment (K: lines, ctx, nested),\n"
            "                      which the mutual-exclusion checks must report (exit 1)\n");
}

static int parse_list(const char *flag, const char *s, struct int_list *out, int lo, int hi, int none_value)
{
    out->n = 0;
    if (!strcmp(s, "none")) {
        out->v[out->n++] = none_value;
        return 0;
    }
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < lo || v > hi || out->n == MAX_LIST || (*end && *end != ',')) {
            fprintf(stderr, "lockbench: bad %s list (integers %d-%d, at most %d, comma-separated)\n", flag, lo, hi,
                    MAX_LIST);
            exit(2);
        }
        out->v[out->n++] = (int)v;
        s = *end == ',' ? end + 1 : end;
    }
    if (out->n == 0) {
        fprintf(stderr, "lockbench: empty %s list\n", flag);
        exit(2);
    }
    return 0;
}

static void set_list(struct int_list *l, const int *v, int n)
{
    l->n = n;
    memcpy(l->v, v, sizeof *v * (size_t)n);
}

/* 1, 2, 4, ... up to max, and max itself; with `multiples`, every multiple of the CPU count too. */
static void default_threads(struct int_list *l, int max, int multiples)
{
    l->n = 0;
    for (int t = 1; t <= max && l->n < MAX_LIST; t++) {
        int power = (t & (t - 1)) == 0;
        if (power || t == max || (multiples && t % ncpus == 0))
            l->v[l->n++] = t;
    }
}

static void parse_args(int argc, char **argv)
{
    struct {
        int threads, delays, lines, ctx, nested, repeat, duration;
    } given = { 0 };
    int full = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) {
            opt.json = 1;
        } else if (!strcmp(a, "--brief")) {
            opt.brief = 1;
        } else if (!strcmp(a, "--quiet")) {
            opt.quiet = 1;
        } else if (!strcmp(a, "--full")) {
            full = 1;
        } else if (!strcmp(a, "--no-roundtrip")) {
            opt.roundtrip = 0;
        } else if (!strcmp(a, "--pin-clients")) {
            opt.pin_clients = 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (v && !strcmp(a, "--duration")) {
            opt.duration = atof(v), i++, given.duration = 1;
        } else if (v && !strcmp(a, "--budget")) {
            opt.budget = atof(v), i++;
        } else if (v && !strcmp(a, "--roundtrip-duration")) {
            opt.rt_duration = atof(v), i++;
        } else if (v && !strcmp(a, "--repeat")) {
            opt.repeat = atoi(v), i++, given.repeat = 1;
        } else if (v && (!strcmp(a, "--lines"))) {
            parse_list(a, argv[++i], &opt.lines, 1, MAX_LINES, 0), given.lines = 1;
        } else if (v && (!strcmp(a, "--delays") || !strcmp(a, "--delay"))) {
            parse_list(a, argv[++i], &opt.delays, 0, 100000000, 0), given.delays = 1;
        } else if (v && !strcmp(a, "--threads")) {
            parse_list(a, argv[++i], &opt.threads, 1, MAX_THREADS, 0), given.threads = 1;
        } else if (v && !strcmp(a, "--ctx")) {
            parse_list(a, argv[++i], &opt.ctx, 0, MAX_CTX, 0), given.ctx = 1;
        } else if (v && !strcmp(a, "--nested")) {
            parse_list(a, argv[++i], &opt.nested, 1, MAX_NESTED, 1), given.nested = 1;
        } else if (v && !strcmp(a, "--algorithms")) {
            snprintf(opt.algorithms, sizeof opt.algorithms, "%s", argv[++i]);
        } else if (v && !strcmp(a, "--forms")) {
            i++;
            if (!strcmp(v, "auto"))
                opt.forms = FORMS_AUTO;
            else if (!strcmp(v, "execute"))
                opt.forms = FORMS_EXECUTE;
            else if (!strcmp(v, "both"))
                opt.forms = FORMS_BOTH;
            else {
                fprintf(stderr, "lockbench: --forms is auto, execute or both\n");
                exit(2);
            }
        } else if (v && !strcmp(a, "--policy")) {
            i++;
            opt.policy = -1;
            for (int p = 0; p < RCL_WAIT_COUNT; p++)
                if (!strcmp(v, rcl_policy_name(p)))
                    opt.policy = p;
            if (opt.policy < 0) {
                fprintf(stderr, "lockbench: unknown policy '%s' (auto, spin, yield, park)\n", v);
                exit(2);
            }
        } else if (v && !strcmp(a, "--server-cpu")) {
            opt.server_cpu = atoi(v), i++;
        } else if (v && !strcmp(a, "--client-cpu")) {
            opt.client_cpu = atoi(v), i++;
        } else if (v && !strcmp(a, "--inject-fault")) {
            i++;
            opt.fault = -1;
            for (int f = FAULT_LINES; f <= FAULT_NESTED; f++)
                if (!strcmp(v, fault_names[f]))
                    opt.fault = f;
            if (opt.fault < 0) {
                fprintf(stderr, "lockbench: --inject-fault is lines, ctx or nested\n");
                exit(2);
            }
        } else if (v && !strcmp(a, "--csv")) {
            opt.csv = argv[++i];
        } else if (v && !strcmp(a, "--memory-csv")) {
            opt.memory_csv = argv[++i];
        } else {
            fprintf(stderr, "lockbench: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            exit(2);
        }
    }
    int max_threads = 4 * (int)ncpus > MAX_THREADS ? MAX_THREADS : 4 * (int)ncpus;
    if (!given.threads)
        default_threads(&opt.threads, max_threads, full);
    if (!given.delays) {
        static const int quick[] = { 0, 300, 3000, 30000 };
        static const int sweep[] = { 0, 100, 300, 1000, 3000, 10000, 30000, 100000, 300000, 1000000 };
        if (full)
            set_list(&opt.delays, sweep, sizeof sweep / sizeof *sweep);
        else
            set_list(&opt.delays, quick, sizeof quick / sizeof *quick);
    }
    if (!given.lines) {
        static const int l[] = { 1, 5 };
        set_list(&opt.lines, l, 2);
    }
    if (!given.ctx) {
        static const int quick[] = { 16 }, sweep[] = { 1, 2, 4, 8, 16, 32, 64 };
        if (full)
            set_list(&opt.ctx, sweep, sizeof sweep / sizeof *sweep);
        else
            set_list(&opt.ctx, quick, 1);
    }
    if (!given.nested) {
        static const int quick[] = { 3 }, sweep[] = { 2, 3, 4, 6, 8 };
        if (full)
            set_list(&opt.nested, sweep, sizeof sweep / sizeof *sweep);
        else
            set_list(&opt.nested, quick, 1);
    }
    if (full && !given.repeat)
        opt.repeat = 5;
    if (full && !given.duration)
        opt.duration = 0.2;
    if (opt.duration < 0 || opt.duration > 60 || opt.budget <= 0 || opt.rt_duration <= 0 || opt.rt_duration > 60 ||
        opt.repeat < 1 || opt.repeat > MAX_REPEAT) {
        fprintf(stderr, "lockbench: option out of range (duration 0-60 s, budget > 0, repeat 1-%d)\n", MAX_REPEAT);
        exit(2);
    }
}

/* The algorithms to measure: posix first (the reference), then the registry's order. */
static int choose_algorithms(int *algs, const char **why_skipped)
{
    int n = 0;
    algs[n++] = RCL_ALG_POSIX;
    for (int a = 1; a < RCL_ALG_COUNT; a++) {
        why_skipped[a] = NULL;
        if (a == RCL_ALG_POSIX)
            continue;
        if (opt.algorithms[0]) {
            char list[sizeof opt.algorithms + 2];
            char name[64];
            snprintf(list, sizeof list, ",%s,", opt.algorithms);
            snprintf(name, sizeof name, ",%s,", rcl_algorithm_name(a));
            if (!strstr(list, name)) {
                why_skipped[a] = "not in --algorithms";
                continue;
            }
        } else if (a == RCL_ALG_PROFILE) {
            why_skipped[a] = "a measuring posix lock (rclify profile), not a lock choice";
            continue;
        }
        if (!(rcl_algorithm_policies(a) & RCL_POLICY_BIT(opt.policy))) {
            why_skipped[a] = "cannot honour --policy";
            continue;
        }
        algs[n++] = a;
    }
    if (opt.algorithms[0]) { /* every name given must exist */
        char copy[sizeof opt.algorithms];
        snprintf(copy, sizeof copy, "%s", opt.algorithms);
        for (char *save, *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
            int found = 0;
            for (int a = 1; a < RCL_ALG_COUNT; a++)
                found |= !strcmp(name, rcl_algorithm_name(a));
            if (!found) {
                fprintf(stderr, "lockbench: unknown algorithm '%s'\n", name);
                exit(2);
            }
        }
    }
    return n;
}

/* Whether an algorithm's execute is something else than lock, call, unlock on the calling
 * thread: RCL ships the section to its server, a combining lock may run it on a combiner. */
static int execute_differs(int alg)
{
    return alg == RCL_ALG_RCL || rcl_algorithms[alg]->combines;
}

/* ---- output ---- */

static int same_group(const struct point *a, const struct point *b)
{
    return a->delay == b->delay && a->lines == b->lines && a->ctx == b->ctx && a->nested == b->nested;
}

/* One table per (delay, lines, ctx, nested): a row per series, a column per thread count. */
static void print_tables(const struct series *series, int nseries)
{
    for (int start = 0; start < nrows;) {
        int end = start;
        while (end < nrows && same_group(&rows[end].p, &rows[start].p))
            end++;
        const struct point *g = &rows[start].p;
        printf("\ndelay %d (%.0f ns), %d line%s", g->delay, g->delay * delay_ns_per_iteration, g->lines,
               g->lines == 1 ? "" : "s");
        if (g->ctx)
            printf(", %d context variables", g->ctx);
        if (g->nested > 1)
            printf(", %d nested locks", g->nested);
        printf(": sections/s (x posix) and latency per section\n  %-18s", "algorithm");
        int threads[MAX_LIST], nt = 0;
        for (int i = start; i < end; i++) {
            int seen = 0;
            for (int t = 0; t < nt; t++)
                seen |= threads[t] == rows[i].p.threads;
            if (!seen && nt < MAX_LIST)
                threads[nt++] = rows[i].p.threads;
        }
        for (int t = 0; t < nt; t++)
            printf(" %11d thread%s     ", threads[t], threads[t] == 1 ? " " : "s");
        putchar('\n');
        for (int s = 0; s < nseries; s++) {
            printf("  %-18s", series_label(&series[s]));
            for (int t = 0; t < nt; t++)
                for (int i = start; i < end; i++)
                    if (rows[i].s == &series[s] && rows[i].p.threads == threads[t])
                        printf(" %7.2fM (%5.2fx) %6.0fns", rows[i].throughput / 1e6, rows[i].ratio,
                               rows[i].latency_ns);
            putchar('\n');
        }
        start = end;
    }
}

/* What one run found, for the output functions. */
struct run {
    int algs[RCL_ALG_COUNT], nalgs;       /* measured, posix first */
    const char *why_skipped[RCL_ALG_COUNT]; /* registered algorithms left out, and why */
    struct memory_result mem[RCL_ALG_COUNT]; /* per measured algorithm */
    int roundtrip;                        /* part 1 measured */
    int pp_cpus[2];
    struct roundtrip_result rt;
    double posix_ns;
    double load_before[3], load_after[3];
    double duration; /* seconds per measurement */
    struct series series[MAX_SERIES];
    int nseries;
    struct point points[MAX_POINTS];
    int npoints;
};

/* Every measured algorithm in its execute form, and in its lock form as --forms says; each series
 * with its own MAX_NESTED locks (under rcl all on server 0: the paper's 1-RCL). */
static void setup_series(struct run *run)
{
    for (int i = 0; i < run->nalgs; i++)
        for (int form = FORM_EXECUTE; form <= FORM_LOCK; form++) {
            int alg = run->algs[i];
            if (form == FORM_LOCK && !(opt.forms == FORMS_BOTH || (opt.forms == FORMS_AUTO && execute_differs(alg))))
                continue;
            struct series *s = &run->series[run->nseries++];
            s->alg = alg;
            s->form = form;
            s->locks = xcalloc(MAX_NESTED, sizeof *s->locks);
            for (int k = 0; k < MAX_NESTED; k++) {
                rcl_lock_config_t c = config_for(alg, "lockbench", 0);
                init_or_die(&s->locks[k], &c);
            }
        }
}

/* The main grid (lines x delays x threads), then the context and nesting variants at the first
 * delay and line count. */
static void setup_points(struct run *run)
{
    if ((long)opt.threads.n * (opt.lines.n * opt.delays.n + opt.ctx.n + opt.nested.n) > MAX_POINTS) {
        fprintf(stderr, "lockbench: more than %d points: shorten the lists\n", MAX_POINTS);
        exit(2);
    }
    struct point *p = run->points;
    for (int l = 0; l < opt.lines.n; l++)
        for (int d = 0; d < opt.delays.n; d++)
            for (int t = 0; t < opt.threads.n; t++)
                *p++ = (struct point){ opt.threads.v[t], opt.delays.v[d], opt.lines.v[l], 0, 1 };
    for (int c = 0; c < opt.ctx.n; c++)
        for (int t = 0; t < opt.threads.n && opt.ctx.v[c] > 0; t++)
            *p++ = (struct point){ opt.threads.v[t], opt.delays.v[0], opt.lines.v[0], opt.ctx.v[c], 1 };
    for (int k = 0; k < opt.nested.n; k++)
        for (int t = 0; t < opt.threads.n && opt.nested.v[k] > 1; t++)
            *p++ = (struct point){ opt.threads.v[t], opt.delays.v[0], opt.lines.v[0], 0, opt.nested.v[k] };
    run->npoints = (int)(p - run->points);
}

/* One progress line per point: posix's throughput, the best and the worst ratio. */
static void report_point(const struct run *run, int i, uint64_t t0)
{
    const struct point *p = &run->points[i];
    const struct row *r = &rows[nrows - run->nseries], *best = r, *worst = r;
    for (int s = 1; s < run->nseries; s++) {
        if (r[s].ratio > best->ratio)
            best = &r[s];
        if (r[s].ratio < worst->ratio)
            worst = &r[s];
    }
    char variant[32] = "";
    if (p->ctx)
        snprintf(variant, sizeof variant, ", ctx %d", p->ctx);
    else if (p->nested > 1)
        snprintf(variant, sizeof variant, ", nested %d", p->nested);
    char best_label[64];
    snprintf(best_label, sizeof best_label, "%s", series_label(best->s));
    progress("[%d/%d %.0fs] threads %d, delay %d, lines %d%s: posix %.2fM/s; best %s %.2fx, worst %s %.2fx", i + 1,
             run->npoints, (double)(now_ns() - t0) / 1e9, p->threads, p->delay, p->lines, variant,
             r[0].throughput / 1e6, best_label, best->ratio, series_label(worst->s), worst->ratio);
}

static void write_memory_csv(const struct run *run, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "lockbench: cannot write %s: %s\n", path, strerror(errno));
        exit(2);
    }
    fprintf(f, "algorithm,combines,sizeof_mutex,heap_per_lock,bytes_per_lock,retained_after_destroy\n");
    for (int i = 0; i < run->nalgs; i++) {
        const struct memory_result *m = &run->mem[i];
        fprintf(f, "%s,%d,%zu,%.1f,%.1f,%.1f\n", rcl_algorithm_name(m->alg), rcl_algorithms[m->alg]->combines ? 1 : 0,
                sizeof(rcl_mutex_t), m->heap_per_lock, sizeof(rcl_mutex_t) + m->heap_per_lock, m->retained_per_lock);
    }
    fclose(f);
}

static void print_json_int_list(const char *name, const struct int_list *l)
{
    printf("\"%s\": [", name);
    for (int i = 0; i < l->n; i++)
        printf("%s%d", i ? ", " : "", l->v[i]);
    putchar(']');
}

static void print_json(const struct run *run)
{
    printf("{\n  \"cpus\": %ld, \"server_cpu\": %d, \"client_cpu\": %d, \"pin_clients\": %s,\n", ncpus,
           opt.server_cpu, opt.client_cpu, opt.pin_clients ? "true" : "false");
    printf("  \"duration_s\": %g, \"repeat\": %d, \"policy\": \"%s\", \"delay_ns_per_iteration\": %.3f,\n  ",
           run->duration, opt.repeat, rcl_policy_name(opt.policy), delay_ns_per_iteration);
    print_json_int_list("threads", &opt.threads);
    printf(", ");
    print_json_int_list("delays", &opt.delays);
    printf(", ");
    print_json_int_list("lines", &opt.lines);
    printf(",\n  \"loadavg_before\": [%.2f, %.2f, %.2f], \"loadavg_after\": [%.2f, %.2f, %.2f],\n",
           run->load_before[0], run->load_before[1], run->load_before[2], run->load_after[0], run->load_after[1],
           run->load_after[2]);
    if (run->roundtrip) {
        const struct roundtrip_result *rt = &run->rt;
        printf("  \"pingpong_roundtrip_ns\": %.1f, \"pingpong_roundtrip_best_ns\": %.1f,\n", rt->floor_ns,
               rt->floor_best_ns);
        printf("  \"rcl_roundtrip_ns\": %.1f, \"rcl_roundtrip_best_ns\": %.1f,\n", rt->rcl_ns, rt->rcl_best_ns);
        printf("  \"rcl_roundtrip_vs_floor\": %.3f,\n", rt->ratio);
        printf("  \"cross_core_pairs\": %d, \"rcl_roundtrip_vs_floor_cross_core\": %.3f,\n", rt->cross_pairs,
               rt->cross_ratio);
        printf("  \"sibling_pairs\": %d, \"rcl_roundtrip_vs_floor_siblings\": %.3f,\n", rt->sibling_pairs,
               rt->sibling_ratio);
    }
    printf("  \"posix_uncontended_ns\": %.1f,\n  \"skipped\": [", run->posix_ns);
    const char *sep = "";
    for (int a = 1; a < RCL_ALG_COUNT; a++)
        if (run->why_skipped[a]) {
            printf("%s{\"algorithm\": \"%s\", \"why\": \"%s\"}", sep, rcl_algorithm_name(a), run->why_skipped[a]);
            sep = ", ";
        }
    printf("],\n  \"memory\": [\n");
    for (int i = 0; i < run->nalgs; i++) {
        const struct memory_result *m = &run->mem[i];
        printf("    {\"algorithm\": \"%s\", \"combines\": %s, \"sizeof_mutex\": %zu, \"heap_per_lock\": %.1f, "
               "\"bytes_per_lock\": %.1f, \"retained_after_destroy\": %.1f}%s\n",
               rcl_algorithm_name(m->alg), rcl_algorithms[m->alg]->combines ? "true" : "false", sizeof(rcl_mutex_t),
               m->heap_per_lock, sizeof(rcl_mutex_t) + m->heap_per_lock, m->retained_per_lock,
               i + 1 < run->nalgs ? "," : "");
    }
    printf("  ],\n  \"rows\": [\n");
    for (int i = 0; i < nrows; i++) {
        const struct row *r = &rows[i];
        printf("    {\"algorithm\": \"%s\", \"form\": \"%s\", \"threads\": %d, \"delay\": %d, \"lines\": %d, "
               "\"ctx\": %d, \"nested\": %d, \"throughput\": %.0f, \"latency_ns\": %.1f, \"ratio_to_posix\": %.4f, "
               "\"throughput_best\": %.0f}%s\n",
               rcl_algorithm_name(r->s->alg), form_names[r->s->form], r->p.threads, r->p.delay, r->p.lines, r->p.ctx,
               r->p.nested, r->throughput, r->latency_ns, r->ratio, r->throughput_best, i + 1 < nrows ? "," : "");
    }
    printf("  ]\n}\n");
}

static void print_text(const struct run *run)
{
    printf("lockbench: %ld CPUs, RCL server on CPU %d, throughput clients %s, waiting policy %s\n", ncpus,
           opt.server_cpu, opt.pin_clients ? "pinned off the server CPU" : "unpinned", rcl_policy_name(opt.policy));
    printf("           %d rounds of %.3f s per point, every series once per round, ratios: median of the\n"
           "           per-round ratios to posix; delay loop %.2f ns per iteration\n",
           opt.repeat, run->duration, delay_ns_per_iteration);
    printf("           load average before %.2f, after %.2f\n\n", run->load_before[0], run->load_after[0]);
    if (run->roundtrip) {
        const struct roundtrip_result *rt = &run->rt;
        printf("                                                    median      best\n");
        printf("  cache-line ping-pong round trip (CPU %d <-> %d)  %8.1f  %8.1f ns   (floor)\n", run->pp_cpus[0],
               run->pp_cpus[1], rt->floor_ns, rt->floor_best_ns);
        printf("  rcl round trip, 1 client, empty section        %8.1f  %8.1f ns   %.2fx floor\n", rt->rcl_ns,
               rt->rcl_best_ns, rt->ratio);
        if (rt->cross_pairs)
            printf("    pairs with a cross-core floor (>= %.0f ns): %3d, rcl/floor %.2fx\n", SIBLING_NS,
                   rt->cross_pairs, rt->cross_ratio);
        if (rt->sibling_pairs)
            printf("    pairs on sibling hyperthreads (< %.0f ns):  %3d, rcl/floor %.2fx\n", SIBLING_NS,
                   rt->sibling_pairs, rt->sibling_ratio);
    }
    printf("  posix lock+unlock, uncontended                 %8.1f ns\n\n", run->posix_ns);
    printf("  bytes per lock: sizeof(rcl_mutex_t) + heap (%d locks initialised and used once)\n", MEMORY_LOCKS);
    printf("  %-12s %8s %8s %8s %18s\n", "algorithm", "struct", "heap", "total", "left after destroy");
    for (int i = 0; i < run->nalgs; i++) {
        const struct memory_result *m = &run->mem[i];
        printf("  %-12s %8zu %8.1f %8.1f %18.1f\n", rcl_algorithm_name(m->alg), sizeof(rcl_mutex_t),
               m->heap_per_lock, sizeof(rcl_mutex_t) + m->heap_per_lock, m->retained_per_lock);
    }
    for (int a = 1; a < RCL_ALG_COUNT; a++)
        if (run->why_skipped[a])
            printf("  left out: %s (%s)\n", rcl_algorithm_name(a), run->why_skipped[a]);
    if (!opt.brief)
        print_tables(run->series, run->nseries);
}

int main(int argc, char **argv)
{
    ncpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpus < 1)
        ncpus = 1;
    parse_args(argc, argv);
    if (opt.server_cpu == -2)
        opt.server_cpu = ncpus > 1 ? (int)ncpus - 1 : -1;
    if (opt.server_cpu >= ncpus || opt.client_cpu >= ncpus) {
        fprintf(stderr, "lockbench: only %ld CPUs online\n", ncpus);
        return 2;
    }
    if (opt.client_cpu == opt.server_cpu && ncpus > 1)
        opt.client_cpu = opt.server_cpu == 0 ? 1 : 0;

    static struct run run;
    run.nalgs = choose_algorithms(run.algs, run.why_skipped);
    int rcl_chosen = 0;
    for (int i = 0; i < run.nalgs; i++)
        rcl_chosen |= run.algs[i] == RCL_ALG_RCL;
    FILE *csv = NULL;
    if (opt.csv) {
        csv = fopen(opt.csv, "w");
        if (!csv) {
            fprintf(stderr, "lockbench: cannot write %s: %s\n", opt.csv, strerror(errno));
            return 2;
        }
        fputs(csv_header, csv);
    }
    loadavg(run.load_before);
    delay_ns_per_iteration = calibrate_delay();
    setup_lines();

    /* 1. floor and round trip (when rcl is measured), uncontended posix. */
    run.pp_cpus[0] = opt.client_cpu;
    run.pp_cpus[1] = opt.server_cpu >= 0 ? opt.server_cpu : (ncpus > 1 ? 1 : 0);
    run.roundtrip = opt.roundtrip && rcl_chosen && opt.policy == RCL_WAIT_AUTO;
    if (run.roundtrip) {
        progress("floor and RCL round trip, %d x %.2f s", opt.repeat, opt.rt_duration);
        run.rt = measure_roundtrip(run.pp_cpus[0], run.pp_cpus[1]); /* pins this thread */
    }
    run.posix_ns = posix_uncontended_ns();
    unpin_self();

    /* 2. bytes per lock. */
    progress("bytes per lock, %d locks of each algorithm", MEMORY_LOCKS);
    for (int i = 0; i < run.nalgs; i++)
        run.mem[i] = measure_memory(run.algs[i]);
    if (opt.memory_csv)
        write_memory_csv(&run, opt.memory_csv);

    /* 3. every series at every point. */
    setup_series(&run);
    setup_points(&run);
    run.duration = opt.duration;
    if (run.duration <= 0) { /* the budget shared among the measurements and their warm-ups (1/5) */
        run.duration = opt.budget / ((double)run.npoints * opt.repeat * run.nseries) / 1.2;
        run.duration = run.duration < 0.02 ? 0.02 : run.duration > 1.0 ? 1.0 : run.duration;
    }
    progress("%d series x %d points x %d rounds of %.3f s (after a %.3f s warm-up): about %.0f s", run.nseries,
             run.npoints, opt.repeat, run.duration, warmup_s(run.duration),
             run.nseries * run.npoints * opt.repeat * (run.duration + warmup_s(run.duration)));
    for (int a = 1; a < RCL_ALG_COUNT; a++)
        if (run.why_skipped[a])
            progress("left out: %s (%s)", rcl_algorithm_name(a), run.why_skipped[a]);
    uint64_t t0 = now_ns();
    for (int i = 0; i < run.npoints; i++) {
        measure_point(run.series, run.nseries, run.points[i], run.duration, csv);
        report_point(&run, i, t0);
    }
    if (csv)
        fclose(csv);
    loadavg(run.load_after);

    if (opt.json)
        print_json(&run);
    else
        print_text(&run);
    return 0;
}
