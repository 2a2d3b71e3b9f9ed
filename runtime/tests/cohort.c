/*
 * The cohort locks (src/cohort/: cbomcs, ctkttkt, cptltkt) with one CPU cluster and with two
 * (RCLIFY_CLUSTERS=2 splits this machine's CPUs in two, so the cross-cluster paths run), each in
 * a re-executed child:
 *   - mutual exclusion under every waiting policy (auto, spin, yield, park) with lock, trylock and
 *     timedlock mixed, threads pinned round-robin to one CPU of each cluster: exact counts, no
 *     overlap;
 *   - local hand-offs happen and are bounded, from the lock's own counts (rcl_cohort_counts):
 *     every section is counted once as a global take or a hand-off, in the cluster the thread was
 *     pinned to; hand-offs happened; no chain of hand-offs exceeds RCL_COHORT_PASS_LIMIT; and the
 *     sections' own log never changes cluster more often than the global lock was taken (a
 *     hand-off across clusters would);
 *   - threads that move to the other cluster while holding the lock release the local lock they
 *     queued on (a release of the current cluster's one would leave a local lock held: destroy
 *     says EBUSY, or the next locker hangs);
 *   - a condvar hand-off between threads of different clusters;
 * and RCLIFY_CLUSTERS beyond the CPU count is refused at start-up with one line.
 */
#include "test_util.h"

#include <sched.h>

#include "cohort/cohort.h"
#include "core/topology.h"

#define NTHREADS 8
#define ITERATIONS 3000

static const int cohort_algs[] = { RCL_ALG_CBOMCS, RCL_ALG_CTKTTKT, RCL_ALG_CPTLTKT };
#define NCOHORT ((int)(sizeof cohort_algs / sizeof cohort_algs[0]))
static const char *const policy_names[RCL_WAIT_COUNT] = { "auto", "spin", "yield", "park" };

/* One allowed CPU per cluster, for pinning; -1 when the affinity mask has none there. */
static int cpu_of_cluster[RCL_MAX_CLUSTERS];
static int nclusters;

static void find_cluster_cpus(void)
{
    cpu_set_t allowed;
    CHECK(sched_getaffinity(0, sizeof allowed, &allowed) == 0, "sched_getaffinity: %s", strerror(errno));
    nclusters = rcl_cluster_count();
    for (int c = 0; c < RCL_MAX_CLUSTERS; c++)
        cpu_of_cluster[c] = -1;
    for (int cpu = CPU_SETSIZE - 1; cpu >= 0; cpu--)
        if (CPU_ISSET(cpu, &allowed) && rcl_cluster_of_cpu(cpu) < RCL_MAX_CLUSTERS)
            cpu_of_cluster[rcl_cluster_of_cpu(cpu)] = cpu;
    for (int c = 0; c < nclusters && c < RCL_MAX_CLUSTERS; c++)
        CHECK(cpu_of_cluster[c] >= 0, "no CPU of cluster %d in this process's affinity mask", c);
}

/* Moves the calling thread to cluster c's CPU and checks that it runs there.  With one cluster
 * threads are left where the scheduler puts them (pinning them all to one CPU would only slow). */
static void pin_to_cluster(int c)
{
    if (nclusters == 1)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu_of_cluster[c], &set);
    int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    CHECK(rc == 0, "pthread_setaffinity_np(CPU %d): %s", cpu_of_cluster[c], strerror(rc));
    CHECK_EQ(rcl_current_cluster(), c, "cluster after pinning");
}

static rcl_mutex_t lock;

/* ---- mutual exclusion, counted hand-offs ---- */

struct stress {
    int nthreads;
    int iterations;
    int sleep_every;       /* every n-th section sleeps 100 us, so that the others queue up */
    int mixed;             /* trylock and timedlock besides lock */
    long counter;          /* split read-modify-write in each section */
    int inside;            /* sections inside now: 0 or 1 */
    long overlaps;
    int started;           /* threads at the start line: they start together, to contend */
    long sections;         /* index into log */
    unsigned char *log;    /* per section: its thread's cluster, | LOG_OTHERS_LEFT */
    long per_cluster[RCL_MAX_CLUSTERS];
    int left[RCL_MAX_CLUSTERS]; /* threads of each cluster that have sections left */
    long line[4][8];       /* more cache lines written in each section */
};
#define LOG_OTHERS_LEFT 0x80 /* another cluster had threads with sections left */

static void section(struct stress *s, int cluster, int last)
{
    if (s->inside++ != 0)
        s->overlaps++;
    /* Long sections now and then: the others queue up behind, whatever the scheduler does (this
     * machine's CPUs are shared: short sections alone may well run one thread after the other). */
    if (s->sections % s->sleep_every == 0)
        usleep(100);
    long c = *(volatile long *)&s->counter;
    for (int i = 0; i < 4; i++)
        s->line[i][0]++;
    int others = 0;
    for (int k = 0; k < nclusters; k++)
        others |= k != cluster && s->left[k] > 0;
    s->log[s->sections++] = (unsigned char)(cluster | (others ? LOG_OTHERS_LEFT : 0));
    s->per_cluster[cluster]++;
    s->left[cluster] -= last;
    *(volatile long *)&s->counter = c + 1;
    s->inside--;
}

static void stress_worker(int index, void *arg)
{
    struct stress *s = arg;
    int cluster = index % nclusters;
    pin_to_cluster(cluster);
    __atomic_add_fetch(&s->started, 1, __ATOMIC_ACQ_REL);
    t_wait_flag(&s->started, s->nthreads);
    for (int i = 0; i < s->iterations; i++) {
        if (s->mixed && i % 8 == 3) {
            /* trylock: the local lock by try, then the global one, undone when busy */
            int rc;
            while ((rc = rcl_mutex_trylock(&lock)) == EBUSY)
                sched_yield();
            CHECK_EQ(rc, 0, "trylock");
        } else if (s->mixed && i % 16 == 5) {
            struct timespec deadline;
            clock_gettime(CLOCK_REALTIME, &deadline);
            deadline.tv_sec += 20;
            CHECK_EQ(rcl_mutex_timedlock(&lock, &deadline), 0, "timedlock");
        } else {
            CHECK_EQ(rcl_mutex_lock(&lock), 0, "lock");
        }
        section(s, cluster, i == s->iterations - 1);
        CHECK_EQ(rcl_mutex_unlock(&lock), 0, "unlock");
    }
}

static void init_lock(int alg, int policy, const char *id)
{
    rcl_lock_config_t cfg = RCL_LOCK_CONFIG(id, alg, 0, -1);
    cfg.policy = policy;
    CHECK_EQ(rcl_mutex_init(&lock, NULL, &cfg), 0, "rcl_mutex_init");
    CHECK_EQ(rcl_mutex_algorithm(&lock), alg, "algorithm");
}

/* Runs s on a new lock of alg under policy, checks exclusion and the lock's counts, returns them
 * (the lock is destroyed). */
static struct rcl_cohort_counts run_stress(struct stress *s, int alg, int policy, const char *label)
{
    const char *name = rcl_algorithm_name(alg);
    long total = (long)s->nthreads * s->iterations;
    s->log = malloc((size_t)total);
    CHECK(s->log != NULL, "out of memory");
    for (int i = 0; i < s->nthreads; i++)
        s->left[i % nclusters]++;
    init_lock(alg, policy, "cohort.c:stress");
    uint64_t t0 = t_now_ns();
    t_run_threads(s->nthreads, stress_worker, s);
    double ms = (double)(t_now_ns() - t0) / 1e6;

    CHECK_EQ(s->overlaps, 0, "sections that overlapped");
    CHECK_EQ(s->counter, total, "sections counted");
    CHECK_EQ(s->sections, total, "sections logged");

    struct rcl_cohort_counts n;
    CHECK_EQ(rcl_cohort_counts(&lock, &n), 0, "rcl_cohort_counts");
    CHECK_EQ(n.clusters, nclusters, "local locks of the lock (one per cluster)");
    long takes = 0, passes = 0;
    for (int c = 0; c < nclusters; c++) {
        /* Each section is one acquisition, counted in the local lock of its thread's cluster. */
        CHECK_EQ((long)(n.global_takes[c] + n.passes[c]), s->per_cluster[c], "acquisitions counted in the cluster");
        takes += (long)n.global_takes[c];
        passes += (long)n.passes[c];
    }
    CHECK(n.longest_chain <= n.pass_limit, "%s/%s: %u hand-offs in a row, limit %u", name, policy_names[policy],
          n.longest_chain, n.pass_limit);
    /* Each global take allows at most pass_limit hand-offs after it. */
    CHECK(takes * ((long)n.pass_limit + 1) >= total, "%s: %ld global takes for %ld sections", name, takes, total);
    /* A section of another cluster than the last one's needs a global take. */
    long switches = 0;
    for (long i = 1; i < total; i++)
        switches += (s->log[i] & ~LOG_OTHERS_LEFT) != (s->log[i - 1] & ~LOG_OTHERS_LEFT);
    CHECK(switches < takes, "%s/%s: the holder's cluster changed %ld times, the global lock was taken %ld times",
          name, policy_names[policy], switches, takes);
    /* with 4 threads a cluster or more some always queue; with 2 per cluster (the spin run) they
     * may never overlap on a slow run (ThreadSanitizer): no hand-off is then no failure */
    if (s->nthreads >= 4 * nclusters)
        CHECK(passes > 0, "%s/%s: %d threads on %d cluster(s) and no local hand-off", name, policy_names[policy],
              s->nthreads, nclusters);
    CHECK_EQ(rcl_mutex_destroy(&lock), 0, "destroy after the stress (no local lock left held)");
    OK("%s/%s, %s, %d cluster(s), %d threads: %ld sections exact, %ld global takes, %ld hand-offs (longest run %u of "
       "limit %u), cluster changed %ld times, %zu bytes per lock (%.0f ms)",
       name, policy_names[policy], label, nclusters, s->nthreads, total, takes, passes, n.longest_chain, n.pass_limit,
       switches, n.bytes, ms);
    return n;
}

static void check_policy(int alg, int policy)
{
    /* spin: no more spinners than CPUs, or a preempted holder stalls everyone for a time slice */
    struct stress s = {
        .nthreads = policy == RCL_WAIT_SPIN ? 2 : NTHREADS,
        .iterations = ITERS(ITERATIONS),
        .sleep_every = 50,
        .mixed = 1,
    };
    run_stress(&s, alg, policy, "lock+trylock+timedlock");
    free(s.log);
}

/*
 * Every section sleeps, so all the other threads are queued at each release: chains of local
 * hand-offs grow until the limit stops them, and the limit must be reached exactly.  With two
 * clusters and a FIFO global lock (ctkttkt, cptltkt), the other cluster's holder waits on it at
 * each global release, so no cluster runs more than limit + 1 sections in a row while the other
 * has sections left (C-BO-MCS's global lock has no order: there, only the counts).
 */
static void check_bound(int alg)
{
    struct stress s = { .nthreads = NTHREADS, .iterations = 120, .sleep_every = 1, .mixed = 0 };
    /* yield: under auto and park, admission (core/admission.h) keeps threads beyond the CPU count
     * out of the algorithm, so the other cluster may have no thread queued at all: the bound is
     * a property of the cohort protocol, checked with every thread inside it */
    struct rcl_cohort_counts n = run_stress(&s, alg, RCL_WAIT_YIELD, "every section sleeps");
    CHECK_EQ(n.longest_chain, n.pass_limit, "longest chain of hand-offs with all threads queued");
    long total = (long)s.nthreads * s.iterations, run = 0, longest_run = 0;
    for (long i = 0; i < total; i++) {
        int cluster = s.log[i] & ~LOG_OTHERS_LEFT;
        if (i > 0 && cluster == (s.log[i - 1] & ~LOG_OTHERS_LEFT) && (s.log[i] & LOG_OTHERS_LEFT))
            run++;
        else
            run = 1;
        if (run > longest_run)
            longest_run = run;
    }
    if (nclusters > 1 && alg != RCL_ALG_CBOMCS)
        CHECK(longest_run <= (long)n.pass_limit + 1, "%s: %ld sections in a row by one cluster while the other waited",
              rcl_algorithm_name(alg), longest_run);
    OK("%s, %d cluster(s): longest chain of hand-offs %u = the limit; longest run of one cluster while another had "
       "sections left: %ld", rcl_algorithm_name(alg), nclusters, n.longest_chain, longest_run);
    free(s.log);
}

/* ---- threads that change clusters while holding the lock ---- */

static long moved_counter;
static int moved_inside;

static void mover(int index, void *arg)
{
    int cluster = index % nclusters;
    pin_to_cluster(cluster);
    for (int i = 0; i < ITERS(400); i++) {
        CHECK_EQ(rcl_mutex_lock(&lock), 0, "lock");
        CHECK_EQ(moved_inside++, 0, "sections inside");
        cluster = (cluster + 1) % nclusters;
        pin_to_cluster(cluster); /* holding the lock: its release must use the cluster it queued on */
        moved_counter++;
        moved_inside--;
        CHECK_EQ(rcl_mutex_unlock(&lock), 0, "unlock");
    }
}

static void check_moving_holders(int alg)
{
    init_lock(alg, RCL_WAIT_AUTO, "cohort.c:moving");
    moved_counter = 0;
    t_run_threads(4, mover, NULL);
    CHECK_EQ(moved_counter, 4L * ITERS(400), "sections of moving holders");
    for (int c = 0; c < nclusters; c++) { /* every local lock is free again */
        pin_to_cluster(c);
        CHECK_EQ(rcl_mutex_trylock(&lock), 0, "trylock from each cluster after the moves");
        CHECK_EQ(rcl_mutex_unlock(&lock), 0, "unlock");
    }
    CHECK_EQ(rcl_mutex_destroy(&lock), 0, "destroy after the moves");
    OK("%s, %d cluster(s): 4 threads moving to another cluster inside each section: %ld sections exact, every "
       "local lock free after", rcl_algorithm_name(alg), nclusters, moved_counter);
}

/* ---- a condvar hand-off across clusters ---- */

static rcl_cond_t cv;
static int turn;
static long passes_done;

static void ping_pong(int index, void *arg)
{
    pin_to_cluster(index % nclusters);
    for (int i = 0; i < ITERS(300); i++) {
        CHECK_EQ(rcl_mutex_lock(&lock), 0, "lock");
        while (turn != index)
            CHECK_EQ(rcl_cond_wait(&cv, &lock), 0, "cond_wait");
        turn = 1 - index;
        passes_done++;
        rcl_cond_signal(&cv);
        CHECK_EQ(rcl_mutex_unlock(&lock), 0, "unlock");
    }
}

static void check_condvar(int alg)
{
    init_lock(alg, RCL_WAIT_AUTO, "cohort.c:condvar");
    CHECK_EQ(rcl_cond_init(&cv, NULL), 0, "cond_init");
    turn = 0;
    passes_done = 0;
    t_run_threads(2, ping_pong, NULL);
    CHECK_EQ(passes_done, 2L * ITERS(300), "condvar hand-offs");
    rcl_cond_destroy(&cv);
    CHECK_EQ(rcl_mutex_destroy(&lock), 0, "destroy");
    OK("%s, %d cluster(s): %ld condvar hand-offs between threads of cluster 0 and cluster %d", rcl_algorithm_name(alg),
       nclusters, passes_done, 1 % nclusters);
}

static void child(int want_clusters)
{
    CHECK_EQ(rcl_cluster_count(), want_clusters, "clusters (RCLIFY_CLUSTERS)");
    find_cluster_cpus();
    for (int a = 0; a < NCOHORT; a++) {
        for (int p = 0; p < RCL_WAIT_COUNT; p++)
            check_policy(cohort_algs[a], p);
        check_bound(cohort_algs[a]);
        check_moving_holders(cohort_algs[a]);
        check_condvar(cohort_algs[a]);
    }
    /* Not a cohort lock: no counts. */
    init_lock(RCL_ALG_TTAS, RCL_WAIT_AUTO, "cohort.c:ttas");
    struct rcl_cohort_counts n;
    CHECK_EQ(rcl_cohort_counts(&lock, &n), EINVAL, "rcl_cohort_counts of a ttas lock");
    CHECK_EQ(rcl_mutex_destroy(&lock), 0, "destroy");
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "cohort");
    if (t_is_child(argc, argv)) {
        child(atoi(argv[2]));
        return t_done();
    }
    int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    for (int clusters = 1; clusters <= 2; clusters++) {
        if (clusters > cpus) {
            OK("RCLIFY_CLUSTERS=%d skipped: %d CPU", clusters, cpus);
            continue;
        }
        char env[32], arg[8];
        snprintf(env, sizeof env, "RCLIFY_CLUSTERS=%d", clusters);
        snprintf(arg, sizeof arg, "%d", clusters);
        const char *const envp[] = { env, NULL };
        struct t_child c;
        int rc = t_run_child("--child", arg, envp, 45, &c);
        CHECK(rc == 0, "child with %s exited %d%s:\n%s", env, rc, c.timed_out ? " (timed out: deadlock?)" : "", c.err);
        OK("child with %s: all checks passed (%.1f s)", env, c.seconds);
    }

    /* A cluster count the machine does not have: one line at start-up, exit 2, nothing runs. */
    char env[32];
    snprintf(env, sizeof env, "RCLIFY_CLUSTERS=%d", cpus + 1);
    const char *const envp[] = { env, NULL };
    struct t_child c;
    int rc = t_run_child("--child", "1", envp, 20, &c);
    CHECK_EQ(rc, 2, "exit status with too many clusters");
    int lines = 0;
    for (const char *p = c.err; *p; p++)
        lines += *p == '\n';
    CHECK(strstr(c.err, "RCLIFY_CLUSTERS") && lines == 1, "one line naming RCLIFY_CLUSTERS, got:\n%s", c.err);
    OK("%s on %d CPUs: refused at start-up: %s", env, cpus, c.err);
    return t_done();
}
