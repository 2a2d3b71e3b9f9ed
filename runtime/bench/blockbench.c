/*
 * blockbench: what a critical section that blocks costs the other locks of its RCL server
 * (issue 34).  Two locks, A and B, on the same server (server 0, pinned like lockbench's):
 *   - B's client threads (--b-threads) run empty sections back to back with rcl_execute;
 *   - A's client threads (--a-threads) do the same on A, and every --every-th time sleep
 *     --sleep-us microseconds (nanosleep): inside the section in the "blocking" case, right after
 *     it, outside the lock, in the "outside" case.
 * Both cases put the same sections on the server at the same pace; they differ only in where the
 * sleep is.  The figure is B's throughput in the blocking case divided by B's throughput in the
 * outside case: what the sleep costs the server's other lock.  The threads run through all the
 * windows of a point; the two cases are measured in turn, in windows of --duration (the order
 * alternates), --repeat rounds, and the ratio reported is the median of the per-round ratios: the
 * two sides of a ratio are tens of milliseconds apart, on a machine whose load changes from
 * second to second.  1.0 means a blocked section costs the server's other locks
 * nothing; 0.01 means B was served 1% as often.  posix is measured as the reference (a sleeping
 * section there holds its own lock only); every registered algorithm can be asked for.
 *
 * After each measurement the counts are checked: each lock's counter was incremented exactly once
 * per section its threads ran (mutual exclusion; exit 1 otherwise).
 *
 * Output: a table on stdout, or --json; progress on stderr (--quiet: none).  --help lists the flags.
 */
#define _GNU_SOURCE
#include <errno.h>
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
#include "bench_util.h"

#define MAX_THREADS 64
#define MAX_LIST 16
#define MAX_REPEAT 32

struct options {
    int algs[RCL_ALG_COUNT], nalgs;
    int every[MAX_LIST], nevery;
    long sleep_us;
    int a_threads, b_threads;
    double duration;
    int repeat;
    int server_cpu; /* -2: the last CPU */
    int json, quiet;
};
static struct options opt = {
    .sleep_us = 1000, .a_threads = 1, .b_threads = 1, .duration = 0.05, .repeat = 15, .server_cpu = -2,
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_s(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static double loadavg1(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

#define progress(...) bench_progress("blockbench", opt.quiet, __VA_ARGS__)

/* ---- one measurement ---- */

static rcl_mutex_t lock_a, lock_b;
static long count_a, count_b; /* under their locks */
static int every;             /* A's threads sleep every `every`-th section ... */
static int inside;            /* ... inside it (1) or right after it (0) */
static int stop;

static void sleep_a(void)
{
    struct timespec ts = { opt.sleep_us / 1000000, (opt.sleep_us % 1000000) * 1000 };
    nanosleep(&ts, NULL);
}

static int cs_a(void *p)
{
    count_a++;
    return 0;
}

static int cs_a_sleeping(void *p)
{
    count_a++;
    sleep_a();
    return 0;
}

static int cs_b(void *p)
{
    count_b++;
    return 0;
}

struct worker {
    pthread_t tid;
    int on_a;
    long sections; /* written by its thread, read by the main thread (relaxed) */
} __attribute__((aligned(64)));
static struct worker workers[2 * MAX_THREADS];

static void *worker_main(void *p)
{
    struct worker *w = p;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        long n = w->sections + 1;
        if (!w->on_a) {
            rcl_execute(&lock_b, cs_b, NULL);
        } else if (n % every) {
            rcl_execute(&lock_a, cs_a, NULL);
        } else if (__atomic_load_n(&inside, __ATOMIC_RELAXED)) {
            rcl_execute(&lock_a, cs_a_sleeping, NULL);
        } else {
            rcl_execute(&lock_a, cs_a, NULL);
            sleep_a();
        }
        __atomic_store_n(&w->sections, n, __ATOMIC_RELAXED);
    }
    return NULL;
}

static long sum_sections(int on_a)
{
    long n = 0;
    for (int i = 0; i < opt.a_threads + opt.b_threads; i++)
        if (workers[i].on_a == on_a)
            n += __atomic_load_n(&workers[i].sections, __ATOMIC_RELAXED);
    return n;
}

struct measurement {
    double a_per_s, b_per_s;
};

/* One window: the sleep inside A's sections or not; the threads run on, the window starts once
 * the last sleep of the other kind is surely over (settle). */
static struct measurement window(int sleep_inside, double settle)
{
    __atomic_store_n(&inside, sleep_inside, __ATOMIC_RELAXED);
    sleep_s(settle);
    long a0 = sum_sections(1), b0 = sum_sections(0);
    uint64_t t0 = now_ns();
    sleep_s(opt.duration);
    long a1 = sum_sections(1), b1 = sum_sections(0);
    double secs = (double)(now_ns() - t0) / 1e9;
    return (struct measurement){ (double)(a1 - a0) / secs, (double)(b1 - b0) / secs };
}

/* ---- a point: an algorithm and a blocking period, both cases in turn ---- */

struct result {
    int alg, every;
    double outside_a, outside_b, block_a, block_b; /* medians, sections/s (outside: the sleep after the section) */
    double ratio;                                  /* median of the per-round B ratios */
    double ratio_min, ratio_max;
};

/*
 * The threads start once per point and run through every window; each round is two windows, the
 * sleep inside A's sections and after them, in an order that alternates, a few tens of
 * milliseconds apart: the two sides of a ratio see the same machine.
 */
static struct result measure_point(int alg, int k)
{
    rcl_lock_config_t ca = RCL_LOCK_CONFIG("blockbench:A", alg, 0, alg == RCL_ALG_RCL ? opt.server_cpu : -1);
    rcl_lock_config_t cb = RCL_LOCK_CONFIG("blockbench:B", alg, 0, alg == RCL_ALG_RCL ? opt.server_cpu : -1);
    if (rcl_mutex_init(&lock_a, NULL, &ca) || rcl_mutex_init(&lock_b, NULL, &cb)) {
        fprintf(stderr, "blockbench: rcl_mutex_init (%s) failed\n", rcl_algorithm_name(alg));
        exit(1);
    }
    count_a = count_b = 0;
    every = k;
    inside = 0;
    stop = 0;
    int n = opt.a_threads + opt.b_threads;
    for (int i = 0; i < n; i++) {
        workers[i] = (struct worker){ .on_a = i < opt.a_threads };
        if (pthread_create(&workers[i].tid, NULL, worker_main, &workers[i])) {
            fprintf(stderr, "blockbench: pthread_create failed\n");
            exit(1);
        }
    }
    /* Settle: a few sleeps of A, at least 5 ms (threads started, server awake, the other case's
     * last sleep over). */
    double settle = 3e-6 * (double)opt.sleep_us;
    settle = settle < 0.005 ? 0.005 : settle;
    double oa[MAX_REPEAT], ob[MAX_REPEAT], ba[MAX_REPEAT], bb[MAX_REPEAT], ratio[MAX_REPEAT];
    for (int r = 0; r < opt.repeat; r++) {
        struct measurement outside, block;
        if (r % 2 == 0) {
            outside = window(0, settle);
            block = window(1, settle);
        } else {
            block = window(1, settle);
            outside = window(0, settle);
        }
        oa[r] = outside.a_per_s;
        ob[r] = outside.b_per_s;
        ba[r] = block.a_per_s;
        bb[r] = block.b_per_s;
        ratio[r] = outside.b_per_s > 0 ? block.b_per_s / outside.b_per_s : 0;
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < n; i++)
        pthread_join(workers[i].tid, NULL);
    if (count_a != sum_sections(1) || count_b != sum_sections(0)) {
        fprintf(stderr, "blockbench: %s: lost updates: A %ld of %ld sections, B %ld of %ld\n",
                rcl_algorithm_name(alg), count_a, sum_sections(1), count_b, sum_sections(0));
        exit(1);
    }
    rcl_mutex_destroy(&lock_a);
    rcl_mutex_destroy(&lock_b);
    struct result res = { .alg = alg, .every = k };
    res.ratio = bench_median(ratio, opt.repeat); /* sorts */
    res.ratio_min = ratio[0];
    res.ratio_max = ratio[opt.repeat - 1];
    res.outside_a = bench_median(oa, opt.repeat);
    res.outside_b = bench_median(ob, opt.repeat);
    res.block_a = bench_median(ba, opt.repeat);
    res.block_b = bench_median(bb, opt.repeat);
    return res;
}

/* ---- options ---- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: blockbench [options]\n"
            "  --algorithms LIST  algorithm names, comma-separated (default rcl; posix is always measured)\n"
            "  --every LIST       A's threads sleep every k-th section, comma-separated (default 1,10,100)\n"
            "  --sleep-us N       how long, microseconds (default 1000)\n"
            "  --a-threads N      client threads on A (default 1)\n"
            "  --b-threads N      client threads on B (default 1)\n"
            "  --duration S       seconds per window (default 0.05)\n"
            "  --repeat N         rounds per point, each a window of both cases (default 15)\n"
            "  --server-cpu N     CPU of the RCL server (default: the last CPU; -1: unpinned)\n"
            "  --json             the results as one JSON object on stdout instead of the table\n"
            "  --quiet            no progress lines on stderr\n");
}

static void bad(const char *what, const char *value)
{
    fprintf(stderr, "blockbench: bad %s '%s'\n", what, value ? value : "");
    exit(2);
}

static long parse_long(const char *flag, const char *v, long lo, long hi)
{
    char *end;
    if (!v)
        bad(flag, v);
    long n = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || n < lo || n > hi)
        bad(flag, v);
    return n;
}

static int alg_by_name(const char *name)
{
    for (int a = 1; a < RCL_ALG_COUNT; a++)
        if (strcmp(rcl_algorithm_name(a), name) == 0)
            return a;
    fprintf(stderr, "blockbench: unknown algorithm '%s'\n", name);
    exit(2);
}

static void parse_args(int argc, char **argv)
{
    const char *algs = "rcl", *everys = "1,10,100";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--algorithms") && v) {
            algs = v, i++;
        } else if (!strcmp(a, "--every") && v) {
            everys = v, i++;
        } else if (!strcmp(a, "--sleep-us")) {
            opt.sleep_us = parse_long(a, v, 1, 10000000), i++;
        } else if (!strcmp(a, "--a-threads")) {
            opt.a_threads = (int)parse_long(a, v, 1, MAX_THREADS), i++;
        } else if (!strcmp(a, "--b-threads")) {
            opt.b_threads = (int)parse_long(a, v, 1, MAX_THREADS), i++;
        } else if (!strcmp(a, "--duration") && v) {
            char *end;
            opt.duration = strtod(v, &end);
            if (*end || opt.duration <= 0 || opt.duration > 60)
                bad(a, v);
            i++;
        } else if (!strcmp(a, "--repeat")) {
            opt.repeat = (int)parse_long(a, v, 1, MAX_REPEAT), i++;
        } else if (!strcmp(a, "--server-cpu")) {
            opt.server_cpu = (int)parse_long(a, v, -1, 4095), i++;
        } else if (!strcmp(a, "--json")) {
            opt.json = 1;
        } else if (!strcmp(a, "--quiet")) {
            opt.quiet = 1;
        } else {
            fprintf(stderr, "blockbench: unknown option '%s' (--help lists them)\n", a);
            exit(2);
        }
    }
    char buf[512];
    opt.algs[opt.nalgs++] = RCL_ALG_POSIX; /* the reference, first */
    snprintf(buf, sizeof buf, "%s", algs);
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int alg = alg_by_name(t);
        int seen = 0;
        for (int k = 0; k < opt.nalgs; k++)
            seen |= opt.algs[k] == alg;
        if (!seen)
            opt.algs[opt.nalgs++] = alg;
    }
    snprintf(buf, sizeof buf, "%s", everys);
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (opt.nevery == MAX_LIST)
            bad("--every", everys);
        opt.every[opt.nevery++] = (int)parse_long("--every", t, 1, 1000000000);
    }
    if (!opt.nevery)
        bad("--every", everys);
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (opt.server_cpu == -2)
        opt.server_cpu = ncpus > 1 ? (int)ncpus - 1 : -1;
    if (opt.server_cpu >= ncpus) {
        fprintf(stderr, "blockbench: only %ld CPUs online\n", ncpus);
        return 2;
    }
    static struct result results[RCL_ALG_COUNT * MAX_LIST];
    int nres = 0;
    double load_before = loadavg1();
    for (int i = 0; i < opt.nalgs; i++)
        for (int e = 0; e < opt.nevery; e++) {
            progress("%s, A sleeps %ld us every %d-th section: %d rounds of 2 x %.2f s",
                     rcl_algorithm_name(opt.algs[i]), opt.sleep_us, opt.every[e], opt.repeat, opt.duration);
            results[nres++] = measure_point(opt.algs[i], opt.every[e]);
        }
    double load_after = loadavg1();
    if (opt.json) {
        printf("{\"sleep_us\": %ld, \"a_threads\": %d, \"b_threads\": %d, \"duration_s\": %g, \"repeat\": %d, "
               "\"server_cpu\": %d, \"cpus\": %ld, \"loadavg_before\": %.2f, \"loadavg_after\": %.2f, \"rows\": [",
               opt.sleep_us, opt.a_threads, opt.b_threads, opt.duration, opt.repeat, opt.server_cpu, ncpus,
               load_before, load_after);
        for (int i = 0; i < nres; i++) {
            const struct result *r = &results[i];
            printf("%s{\"algorithm\": \"%s\", \"every\": %d, \"b_outside\": %.0f, \"b_blocking\": %.0f, "
                   "\"a_outside\": %.0f, \"a_blocking\": %.0f, \"b_ratio\": %.4f, \"b_ratio_min\": %.4f, "
                   "\"b_ratio_max\": %.4f}",
                   i ? ", " : "", rcl_algorithm_name(r->alg), r->every, r->outside_b, r->block_b, r->outside_a,
                   r->block_a, r->ratio, r->ratio_min, r->ratio_max);
        }
        printf("]}\n");
        return 0;
    }
    printf("blockbench: every k-th section of A sleeps %ld us inside the section (blocks) or after it (outside); "
           "%d thread(s) on A, %d on B, same server (cpu %d); %d rounds of %.2f s per case; load %.2f -> %.2f\n",
           opt.sleep_us, opt.a_threads, opt.b_threads, opt.server_cpu, opt.repeat, opt.duration, load_before,
           load_after);
    printf("%-10s %7s %14s %14s %9s %13s %13s %13s\n", "algorithm", "every", "B/s outside", "B/s blocks",
           "B ratio", "(min-max)", "A/s outside", "A/s blocks");
    for (int i = 0; i < nres; i++) {
        const struct result *r = &results[i];
        printf("%-10s %7d %14.0f %14.0f %9.3f   %5.3f-%5.3f %13.0f %13.0f\n", rcl_algorithm_name(r->alg), r->every,
               r->outside_b, r->block_b, r->ratio, r->ratio_min, r->ratio_max, r->outside_a, r->block_a);
    }
    return 0;
}
