/*
 * lockbench: the runtime's microbenchmark (after the paper's section 5.3).  One run prints:
 *   1. the physical floor: two threads on two CPUs bouncing one cache line, round trip in ns;
 *   2. the RCL round trip: one client running empty sections on a server on another CPU, in ns,
 *      and its ratio to the floor (plus an uncontended posix lock/unlock for reference);
 *   3. throughput, sections per second, of posix and rcl locks with 1, 2, 4, 8 client threads,
 *      each section reading and writing a few shared cache lines (not contiguous, so the
 *      prefetcher does not bring them in pairs), with a configurable pause between sections, and
 *      the rcl/posix ratio per thread count.
 * The two sides of each ratio are measured in turn and the ratio shown is the median of the
 * per-measurement ratios: on a virtual machine the host may move the two vCPUs between sibling
 * hyperthreads (a 30 ns floor) and separate cores (110-140 ns) during a run, and a ratio of
 * figures taken seconds apart would compare different machines.  1 and 2 are paired line by line
 * in short slices (see measure_roundtrip); each throughput figure is the median of --repeat runs
 * of --duration seconds.  The best figures are shown too: on a shared machine they are the closer
 * to what the hardware can do.  --json prints the same as one JSON object.  Run
 * `lockbench --help` for the flags.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rclify.h"

#define CACHE_LINE 64
#define MAX_THREADS 256
#define MAX_LINES 64
#define MAX_REPEAT 32

struct options {
    double duration;       /* seconds per measurement */
    int repeat;            /* measurements per figure (median) */
    int threads[16];       /* thread counts */
    int nthreads;
    int lines;             /* shared cache lines touched per section */
    int delay;             /* iterations of local work between two sections */
    int server_cpu;        /* CPU of the RCL server; -1: unpinned */
    int client_cpu;        /* CPU of the single client and of the ping-pong's first thread */
    int pin_clients;       /* pin throughput clients to the CPUs other than the server's */
    int json;
};

static struct options opt = {
    .duration = 0.5, .repeat = 3, .threads = { 1, 2, 4, 8 }, .nthreads = 4, .lines = 4, .delay = 50,
    .server_cpu = -2, .client_cpu = 0, .pin_clients = 0, .json = 0,
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
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

/* ---- 1. cache-line ping-pong ---- */

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
    uint64_t rounds = 0, start = 0, deadline = 0, s = 0;
    for (;; rounds++) {
        if (rounds == 1000) { /* warm-up done */
            start = now_ns();
            deadline = start + (uint64_t)(seconds * 1e9);
        }
        __atomic_store_n(line, s + 1, __ATOMIC_RELEASE);
        while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != s + 2)
            cpu_relax();
        s += 2;
        if (rounds > 1000 && (rounds & 255) == 0 && now_ns() > deadline)
            break;
    }
    double ns = (double)(now_ns() - start) / (double)(rounds - 1000);
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
        pages = aligned_alloc(4096, 4096 * PROBE_LINES);
        if (!pages) {
            fprintf(stderr, "lockbench: out of memory\n");
            exit(1);
        }
        memset(pages, 0, 4096 * PROBE_LINES);
    }
    return (volatile uint64_t *)(pages + 4096 * k + CACHE_LINE * (5 * k % 64));
}

/* ---- 2. single-client round trip ---- */

static int cs_empty(void *ctx)
{
    return 0;
}

static double roundtrip_loop(rcl_mutex_t *m, int hybrid, double seconds)
{
    uint64_t n = 0, start = 0, deadline = 0;
    for (;; n++) {
        if (n == 1000) {
            start = now_ns();
            deadline = start + (uint64_t)(seconds * 1e9);
        }
        if (hybrid) {
            rcl_mutex_lock(m);
            rcl_mutex_unlock(m);
        } else {
            rcl_execute(m, cs_empty, NULL);
        }
        if (n > 1000 && (n & 255) == 0 && now_ns() > deadline)
            break;
    }
    return (double)(now_ns() - start) / (double)(n - 1000);
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
    return k ? median(v, k) : 0;
}

/*
 * One client (this thread) and PROBE_LINES locks, lock k on RCL server k, every server on the
 * server CPU: the client's mailbox on server k is a line of server k's own request array, so the
 * pairs go through PROBE_LINES different mailbox lines, and each server polls one mailbox.
 */
static struct roundtrip_result measure_roundtrip(const rcl_lock_config_t *cfg, int cpu_a, int cpu_b)
{
    double slice = opt.duration / 2 / PROBE_LINES;
    rcl_mutex_t locks[PROBE_LINES];
    for (int k = 0; k < PROBE_LINES; k++) {
        rcl_lock_config_t c = *cfg;
        c.server = k;
        if (rcl_mutex_init(&locks[k], NULL, &c)) {
            fprintf(stderr, "lockbench: rcl_mutex_init failed\n");
            exit(1);
        }
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
    res.floor_ns = median(fl, n); /* sorts */
    res.floor_best_ns = fl[0];
    res.rcl_ns = median(rt, n);
    res.rcl_best_ns = rt[0];
    return res;
}

/* ---- 3. throughput ---- */

struct shared_line {
    _Alignas(CACHE_LINE) volatile long v;
    volatile int next; /* index of the next line to touch */
};
/* Lines used are 3 apart: never adjacent, so adjacent-line prefetching does not help. */
static struct shared_line lines[MAX_LINES * 3];
static int tp_go, tp_stop;

struct tp_arg {
    rcl_mutex_t *m;
    int cpu;
    long sections;
} __attribute__((aligned(CACHE_LINE)));

static int cs_touch(void *ctx)
{
    /* The address of each access comes from the previous line read, as in the paper. */
    int idx = 0;
    for (int i = 0; i < opt.lines; i++) {
        struct shared_line *l = &lines[idx];
        l->v = l->v + 1;
        idx = l->next;
    }
    return 0;
}

static void *tp_worker(void *p)
{
    struct tp_arg *a = p;
    pin_self(a->cpu);
    while (!__atomic_load_n(&tp_go, __ATOMIC_ACQUIRE))
        cpu_relax();
    long n = 0;
    volatile unsigned local = 0;
    while (!__atomic_load_n(&tp_stop, __ATOMIC_RELAXED)) {
        rcl_execute(a->m, cs_touch, NULL);
        n++;
        for (int d = 0; d < opt.delay; d++)
            local += (unsigned)d;
    }
    a->sections = n;
    return NULL;
}

/* Sections per second with n client threads. */
static double throughput_once(rcl_mutex_t *m, int n)
{
    static struct tp_arg args[MAX_THREADS];
    pthread_t tids[MAX_THREADS];
    memset(lines, 0, sizeof lines);
    for (int i = 0; i < opt.lines; i++)
        lines[3 * i].next = 3 * (i + 1);
    tp_go = tp_stop = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        args[i].m = m;
        args[i].sections = 0;
        args[i].cpu = -1;
        if (opt.pin_clients && ncpus > 1) {
            do
                k = (k + 1) % (int)ncpus;
            while (k == opt.server_cpu);
            args[i].cpu = k;
        }
        pthread_create(&tids[i], NULL, tp_worker, &args[i]);
    }
    uint64_t start = now_ns();
    __atomic_store_n(&tp_go, 1, __ATOMIC_RELEASE);
    struct timespec d = { (time_t)opt.duration, (long)((opt.duration - (double)(time_t)opt.duration) * 1e9) };
    nanosleep(&d, NULL);
    __atomic_store_n(&tp_stop, 1, __ATOMIC_RELAXED);
    uint64_t elapsed = now_ns() - start;
    long total = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(tids[i], NULL);
        total += args[i].sections;
    }
    /* Mutual exclusion held: every line was incremented once per section. */
    for (int i = 0; i < opt.lines; i++) {
        if (lines[3 * i].v != total) {
            fprintf(stderr, "lockbench: %s lock lost updates: line %d = %ld, sections = %ld\n",
                    rcl_algorithm_name(rcl_mutex_algorithm(m)), i, lines[3 * i].v, total);
            exit(1);
        }
    }
    return (double)total / ((double)elapsed / 1e9);
}

/* ---- driver ---- */

/* Two figures measured in turn, --repeat times each, and their ratio b/a. */
struct paired {
    double a, a_best, b, b_best, ratio;
};

/* Medians of a and b, their best runs (lowest latency or highest throughput) and the median of
 * the per-repeat ratios b/a.  With once_b NULL only a is measured (b and the ratio are 0). */
static struct paired measure_pair(double (*once_a)(void *), void *arg_a, double (*once_b)(void *), void *arg_b,
                                  int higher_is_better)
{
    double va[MAX_REPEAT], vb[MAX_REPEAT], vr[MAX_REPEAT];
    for (int r = 0; r < opt.repeat; r++) {
        va[r] = once_a(arg_a);
        vb[r] = once_b ? once_b(arg_b) : 0;
        vr[r] = vb[r] / va[r];
    }
    struct paired p;
    p.ratio = median(vr, opt.repeat);
    p.a = median(va, opt.repeat); /* sorts va */
    p.b = median(vb, opt.repeat);
    p.a_best = higher_is_better ? va[opt.repeat - 1] : va[0];
    p.b_best = higher_is_better ? vb[opt.repeat - 1] : vb[0];
    return p;
}

static int pp_cpus[2];
struct rt_thunk_arg {
    rcl_mutex_t *m;
    int hybrid;
};
static double rt_thunk(void *a)
{
    struct rt_thunk_arg *r = a;
    return roundtrip_loop(r->m, r->hybrid, opt.duration / 2);
}
struct tp_thunk_arg {
    rcl_mutex_t *m;
    int n;
};
static double tp_thunk(void *a)
{
    struct tp_thunk_arg *t = a;
    return throughput_once(t->m, t->n);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: lockbench [--duration S] [--repeat N] [--threads 1,2,4,8] [--lines N] [--delay N]\n"
            "                 [--server-cpu N] [--client-cpu N] [--pin-clients] [--json]\n"
            "  --duration S    seconds per measurement (default 0.5; a round-trip round splits it\n"
            "                  between its 8 pairs)\n"
            "  --repeat N      measurements per figure, the median is shown (default 3; for the\n"
            "                  round trip: rounds of 8 floor/rcl pairs, one line or server each)\n"
            "  --threads LIST  client thread counts for the throughput table (default 1,2,4,8)\n"
            "  --lines N       shared cache lines read and written per section (default 4)\n"
            "  --delay N       iterations of local work between two sections (default 50)\n"
            "  --server-cpu N  CPU of the RCL server (default: the last CPU; -1: unpinned)\n"
            "  --client-cpu N  CPU of the single client / ping-pong initiator (default 0)\n"
            "  --pin-clients   pin throughput clients to CPUs other than the server's\n"
            "  --json          one JSON object instead of the table\n");
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) {
            opt.json = 1;
        } else if (!strcmp(a, "--pin-clients")) {
            opt.pin_clients = 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (v && !strcmp(a, "--duration")) {
            opt.duration = atof(v), i++;
        } else if (v && !strcmp(a, "--repeat")) {
            opt.repeat = atoi(v), i++;
        } else if (v && !strcmp(a, "--lines")) {
            opt.lines = atoi(v), i++;
        } else if (v && !strcmp(a, "--delay")) {
            opt.delay = atoi(v), i++;
        } else if (v && !strcmp(a, "--server-cpu")) {
            opt.server_cpu = atoi(v), i++;
        } else if (v && !strcmp(a, "--client-cpu")) {
            opt.client_cpu = atoi(v), i++;
        } else if (v && !strcmp(a, "--threads")) {
            opt.nthreads = 0;
            for (char *s = argv[++i]; *s && opt.nthreads < 16;) {
                char *end;
                long n = strtol(s, &end, 10);
                if (end == s || n < 1 || n > MAX_THREADS) {
                    fprintf(stderr, "lockbench: bad --threads list '%s'\n", argv[i]);
                    exit(2);
                }
                opt.threads[opt.nthreads++] = (int)n;
                s = *end == ',' ? end + 1 : end;
            }
        } else {
            fprintf(stderr, "lockbench: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            exit(2);
        }
    }
    if (opt.duration <= 0 || opt.duration > 60 || opt.repeat < 1 || opt.repeat > MAX_REPEAT || opt.lines < 1 ||
        opt.lines > MAX_LINES || opt.delay < 0 || opt.nthreads < 1) {
        fprintf(stderr, "lockbench: option out of range (duration 0-60 s, repeat 1-%d, lines 1-%d, delay >= 0)\n",
                MAX_REPEAT, MAX_LINES);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    ncpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpus < 1)
        ncpus = 1;
    if (opt.server_cpu == -2)
        opt.server_cpu = ncpus > 1 ? (int)ncpus - 1 : -1;
    if (opt.server_cpu >= ncpus || opt.client_cpu >= ncpus) {
        fprintf(stderr, "lockbench: only %ld CPUs online\n", ncpus);
        return 2;
    }
    if (opt.client_cpu == opt.server_cpu && ncpus > 1)
        opt.client_cpu = opt.server_cpu == 0 ? 1 : 0;
    double load_before[3], load_after[3];
    loadavg(load_before);

    rcl_mutex_t mr, mp;
    rcl_lock_config_t cr = RCL_LOCK_CONFIG("lockbench:rcl", RCL_ALG_RCL, 0, opt.server_cpu);
    rcl_lock_config_t cp = RCL_LOCK_CONFIG("lockbench:posix", RCL_ALG_POSIX, 0, -1);
    if (rcl_mutex_init(&mr, NULL, &cr) || rcl_mutex_init(&mp, NULL, &cp)) {
        fprintf(stderr, "lockbench: rcl_mutex_init failed\n");
        return 1;
    }

    /* 1 and 2, in turn: the floor on the two CPUs the RCL client and server use, and one client's
     * round trip with empty sections; then an uncontended posix lock/unlock for reference. */
    pp_cpus[0] = opt.client_cpu;
    pp_cpus[1] = opt.server_cpu >= 0 ? opt.server_cpu : (ncpus > 1 ? 1 : 0);
    struct rt_thunk_arg rp = { &mp, 1 };
    struct roundtrip_result rt = measure_roundtrip(&cr, pp_cpus[0], pp_cpus[1]); /* pins this thread */
    struct paired posix_rt = measure_pair(rt_thunk, &rp, NULL, NULL, 0);
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int c = 0; c < ncpus; c++)
        CPU_SET(c, &all);
    pthread_setaffinity_np(pthread_self(), sizeof all, &all);

    /* 3. throughput, posix and rcl in turn. */
    struct paired tp[16];
    for (int i = 0; i < opt.nthreads; i++) {
        struct tp_thunk_arg p = { &mp, opt.threads[i] }, r = { &mr, opt.threads[i] };
        tp[i] = measure_pair(tp_thunk, &p, tp_thunk, &r, 1);
    }
    loadavg(load_after);

    if (opt.json) {
        printf("{\n  \"cpus\": %ld, \"server_cpu\": %d, \"client_cpu\": %d, \"pin_clients\": %s,\n", ncpus,
               opt.server_cpu, opt.client_cpu, opt.pin_clients ? "true" : "false");
        printf("  \"duration_s\": %g, \"repeat\": %d, \"lines\": %d, \"delay\": %d,\n", opt.duration, opt.repeat,
               opt.lines, opt.delay);
        printf("  \"loadavg_before\": [%.2f, %.2f, %.2f], \"loadavg_after\": [%.2f, %.2f, %.2f],\n", load_before[0],
               load_before[1], load_before[2], load_after[0], load_after[1], load_after[2]);
        printf("  \"pingpong_roundtrip_ns\": %.1f, \"pingpong_roundtrip_best_ns\": %.1f,\n", rt.floor_ns,
               rt.floor_best_ns);
        printf("  \"rcl_roundtrip_ns\": %.1f, \"rcl_roundtrip_best_ns\": %.1f,\n", rt.rcl_ns, rt.rcl_best_ns);
        printf("  \"rcl_roundtrip_vs_floor\": %.3f,\n", rt.ratio);
        printf("  \"cross_core_pairs\": %d, \"rcl_roundtrip_vs_floor_cross_core\": %.3f,\n", rt.cross_pairs,
               rt.cross_ratio);
        printf("  \"sibling_pairs\": %d, \"rcl_roundtrip_vs_floor_siblings\": %.3f,\n", rt.sibling_pairs,
               rt.sibling_ratio);
        printf("  \"posix_uncontended_ns\": %.1f,\n  \"throughput\": [\n", posix_rt.a);
        for (int i = 0; i < opt.nthreads; i++)
            printf("    {\"threads\": %d, \"posix_per_s\": %.0f, \"rcl_per_s\": %.0f, \"rcl_vs_posix\": %.3f, "
                   "\"posix_best_per_s\": %.0f, \"rcl_best_per_s\": %.0f}%s\n",
                   opt.threads[i], tp[i].a, tp[i].b, tp[i].ratio, tp[i].a_best, tp[i].b_best,
                   i + 1 < opt.nthreads ? "," : "");
        printf("  ]\n}\n");
        return 0;
    }

    printf("lockbench: %ld CPUs, RCL server on CPU %d, client CPU %d, throughput clients %s\n", ncpus,
           opt.server_cpu, opt.client_cpu, opt.pin_clients ? "pinned off the server CPU" : "unpinned");
    printf("           %d shared cache lines per section, delay %d, %d x %.2f s per figure, the two sides of\n"
           "           each ratio in turn; ratio: median of the per-run ratios (round trip: %d line/server\n"
           "           pairs per repeat, %.0f ms a side)\n",
           opt.lines, opt.delay, opt.repeat, opt.duration, PROBE_LINES, opt.duration / 2 / PROBE_LINES * 1e3);
    printf("           load average before %.2f, after %.2f\n\n", load_before[0], load_after[0]);
    printf("                                                    median      best\n");
    printf("  cache-line ping-pong round trip (CPU %d <-> %d)  %8.1f  %8.1f ns   (floor)\n", pp_cpus[0], pp_cpus[1],
           rt.floor_ns, rt.floor_best_ns);
    printf("  rcl round trip, 1 client, empty section        %8.1f  %8.1f ns   %.2fx floor\n", rt.rcl_ns,
           rt.rcl_best_ns, rt.ratio);
    if (rt.cross_pairs)
        printf("    pairs with a cross-core floor (>= %.0f ns): %3d, rcl/floor %.2fx\n", SIBLING_NS, rt.cross_pairs,
               rt.cross_ratio);
    if (rt.sibling_pairs)
        printf("    pairs on sibling hyperthreads (< %.0f ns):  %3d, rcl/floor %.2fx\n", SIBLING_NS, rt.sibling_pairs,
               rt.sibling_ratio);
    printf("  posix lock+unlock, uncontended                 %8.1f  %8.1f ns\n\n", posix_rt.a, posix_rt.a_best);
    printf("  threads   posix sections/s     rcl sections/s    rcl/posix   (best posix, best rcl)\n");
    for (int i = 0; i < opt.nthreads; i++)
        printf("  %7d   %16.0f   %16.0f   %9.2f   (%.0f, %.0f)\n", opt.threads[i], tp[i].a, tp[i].b, tp[i].ratio,
               tp[i].a_best, tp[i].b_best);
    return 0;
}
