/*
 * Oversubscription: 4x the online CPUs in threads (8 on a 2-CPU machine) contend for one lock, on
 * every algorithm under every waiting policy it honours.  Lock holders are preempted here, and
 * waiters outnumber the CPUs: a lock whose waiters keep the holder off a CPU, or whose hand-off
 * to a preempted waiter is lost, shows up as a lost update, an overlap (exclusion.h), or a run that
 * never ends (watchdog).
 *
 * Speed is not checked (lockbench measures it): each thread stops at a deadline after its first
 * section, so that a policy that is slow here by design (spin, which assumes a CPU per thread,
 * on a FIFO queue lock that hands the lock to preempted waiters) still finishes well within the
 * test's time limit.  What is checked: exclusion, no lost update, every thread's sections done,
 * and that every run ends.  The OK lines give sections per second, and whether the deadline cut
 * the run short, for the record.
 */
/* Every pair may run into its deadline: room for some 40 pairs at DEADLINE_MS each, and the
 * stragglers' last sections, under the watchdog and tests/run.sh's 120 s. */
#define T_TIMEOUT_S 100
#include "exclusion.h"

#include "core/runtime.h" /* rcl_algorithm_policies, rcl_policy_name, RCL_POLICY_BIT: not public API */

#define THREADS_PER_CPU 4
#define MAX_THREADS 64
#define ITERATIONS 5000
#ifdef RCLIFY_TSAN
#define DEADLINE_MS 600
#else
#define DEADLINE_MS 300
#endif

int main(int argc, char **argv)
{
    t_init(argc, argv, "oversubscription");
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int cpus = online > 0 ? (int)online : 1;
    int threads = THREADS_PER_CPU * cpus < MAX_THREADS ? THREADS_PER_CPU * cpus : MAX_THREADS;
    int runs = 0, cut = 0;
    uint64_t start = t_now_ns();
    FOR_EACH_ALG(a)
    {
        unsigned honoured = rcl_algorithm_policies(a->alg);
        for (int p = 0; p < RCL_WAIT_COUNT; p++) {
            if (!(honoured & RCL_POLICY_BIT(p)))
                continue;
            char what[96];
            snprintf(what, sizeof what, "%s/%s, %d threads on %d CPUs", a->name, rcl_policy_name(p), threads, cpus);
            rcl_lock_config_t cfg = RCL_LOCK_CONFIG_POLICY("oversubscription.c:lock", a->alg, 0, -1, p);
            rcl_mutex_t m;
            CHECK_EQ(rcl_mutex_init(&m, NULL, &cfg), 0, what);
            uint64_t t0 = t_now_ns();
            int stopped = 0;
            long done = t_excl_run_until(&m, threads, ITERS(ITERATIONS), t0 + DEADLINE_MS * 1000000ull, &stopped, what);
            double s = (double)(t_now_ns() - t0) / 1e9;
            CHECK_EQ(rcl_mutex_destroy(&m), 0, what);
            OK("%s: %ld sections exclusive in %.3f s (%.0f/s)%s", what, done, s, (double)done / s,
               stopped ? ", cut short by the deadline" : "");
            runs++;
            cut += stopped > 0;
        }
    }
    OK("%d algorithm/policy pairs, %d cut short by the %d ms deadline, %.1f s in all", runs, cut, DEADLINE_MS,
       (double)(t_now_ns() - start) / 1e9);
    return t_done();
}
