/*
 * Lock configurations the runtime must refuse, and the waiting policies it must honour.
 *
 * Refused, each in a child process (re-executing this binary): one line on stderr naming the
 * entry or the lock, a non-zero exit, and nothing else run:
 *   - RCLIFY_LOCKS with an unknown algorithm ('*=nosuch'), an unknown waiting policy
 *     ('*=ttas/bogus'), or a policy the algorithm cannot honour ('*=posix/spin': posix honours
 *     auto only), for every algorithm and every policy it does not honour: the program stops
 *     before main (the variable is read by a constructor);
 *   - RCLIFY_CLUSTERS above the machine's CPU count (and 0, and not a number): before main too;
 *   - a lock_config.h entry (RCL_LOCK_CONFIG_POLICY) with a policy number out of range, or a
 *     policy its algorithm cannot honour: the program stops where the lock is set up (rcl_mutex_init,
 *     or a static lock's first use), before the section that would have used it runs.
 *
 * Honoured: every algorithm under every policy it honours (the runtime's own mask,
 * rcl_algorithm_policies) runs a short mutual-exclusion loop (exclusion.h), configured both
 * ways: from its lock_config entry in this process, and from RCLIFY_LOCKS in a child, which also
 * checks that the lock resolved to that algorithm and policy.
 */
#include "exclusion.h" /* first: test_util.h defines _GNU_SOURCE */

#include <sys/resource.h>

#include "core/runtime.h" /* rcl_algorithm_policies, rcl_policy_name, RCL_POLICY_BIT: not public API */

#define THREADS 4
#define ITERATIONS 2000

/* ---- children ---- */

static void marker(const char *what)
{
    fprintf(stderr, "[%s]\n", what);
}

static rcl_mutex_t env_lock = RCL_MUTEX_INITIALIZER(RCL_LOCK_CONFIG("bad_config.c:env_lock", RCL_ALG_POSIX, 0, -1));

/* The configuration comes from RCLIFY_LOCKS: says what env_lock resolved to, runs the loop. */
static int child_env(void)
{
    marker("main");
    t_excl_run(&env_lock, THREADS, ITERS(ITERATIONS), "loop under RCLIFY_LOCKS");
    fprintf(stderr, "[alg=%s policy=%s]\n", rcl_algorithm_name(rcl_mutex_algorithm(&env_lock)),
            rcl_policy_name(env_lock.config.policy));
    marker("loop ok");
    return 0;
}

static int section_ran(void *p)
{
    marker("section ran");
    return 0;
}

/* arg "ALG:POLICY" (numbers): a lock set up by rcl_mutex_init with that lock_config entry. */
static int child_config(const char *arg)
{
    int alg = 0, policy = 0;
    int fields = sscanf(arg, "%d:%d", &alg, &policy);
    CHECK(fields == 2, "bad child argument %s", arg);
    marker("main");
    rcl_lock_config_t cfg = RCL_LOCK_CONFIG_POLICY("bad_config.c:configured", alg, 0, -1, policy);
    rcl_mutex_t m;
    int rc = rcl_mutex_init(&m, NULL, &cfg);
    fprintf(stderr, "[init returned %d]\n", rc);
    rcl_execute(&m, section_ran, NULL);
    return 0;
}

/* A static lock whose entry has a policy number out of range: resolved on first use. */
static rcl_mutex_t bad_static =
    RCL_MUTEX_INITIALIZER(RCL_LOCK_CONFIG_POLICY("bad_config.c:bad_static", RCL_ALG_TTAS, 0, -1, 7));

static int child_static(void)
{
    marker("main");
    rcl_execute(&bad_static, section_ran, NULL);
    return 0;
}

/* ---- parent ---- */

static int contains(const char *haystack, const char *needle)
{
    return strstr(haystack, needle) != NULL;
}

/* c.err without the children's own "[...]" marker lines: what the runtime printed. */
static void runtime_lines(const char *err, char *out, size_t len, int *lines)
{
    *lines = 0;
    out[0] = '\0';
    for (const char *p = err; *p;) {
        size_t n = strcspn(p, "\n");
        if (p[0] != '[') {
            snprintf(out + strlen(out), len - strlen(out), "%.*s\n", (int)n, p);
            (*lines)++;
        }
        p += n + (p[n] == '\n');
    }
}

/*
 * Runs a child that must be refused: non-zero exit, quickly, exactly one runtime line on stderr
 * that contains each of `want`, and no marker from the child's code beyond those in `allowed`
 * ("main" when the refusal comes after main started, NULL when it must come before).
 */
static void expect_refusal(const char *label, const char *mode, const char *arg, const char *const *env,
                           const char *allowed, const char *const *want)
{
    struct t_child c;
    int rc = t_run_child(mode, arg, env, 20, &c);
    CHECK(rc != 0 && !c.timed_out, "%s: child exited %d%s (expected a refusal)\n%s", label, rc,
          c.timed_out ? " (timed out)" : "", c.err);
    CHECK(c.seconds < 10, "%s: took %.1f s to fail", label, c.seconds);
    char printed[4096];
    int lines;
    runtime_lines(c.err, printed, sizeof printed, &lines);
    CHECK(lines == 1, "%s: expected exactly one line from the runtime, got %d:\n%s", label, lines, c.err);
    CHECK(strncmp(printed, "rclify: ", 8) == 0, "%s: the line does not start with 'rclify: ': %s", label, printed);
    for (int i = 0; want[i]; i++)
        CHECK(contains(printed, want[i]), "%s: the line does not say '%s': %s", label, want[i], printed);
    for (const char *p = c.err; (p = strchr(p, '[')) != NULL; p++) {
        size_t n = strcspn(p + 1, "]");
        CHECK(allowed && strlen(allowed) == n && strncmp(p + 1, allowed, n) == 0,
              "%s: the child went on after the error (printed [%.*s]):\n%s", label, (int)n, p + 1, c.err);
    }
    printed[strcspn(printed, "\n")] = '\0';
    OK("%s: exit %d in %.2f s, one line: %s", label, rc, c.seconds, printed);
}

/* RCLIFY_LOCKS=spec, whose entry `bad` is refused for `why`. */
static void expect_bad_locks(const char *spec, const char *bad, const char *why)
{
    char var[256], label[300], entry[256];
    snprintf(var, sizeof var, "RCLIFY_LOCKS=%s", spec);
    snprintf(label, sizeof label, "RCLIFY_LOCKS='%s'", spec);
    snprintf(entry, sizeof entry, "bad entry '%s'", bad);
    const char *const env[] = { var, NULL };
    const char *const want[] = { "RCLIFY_LOCKS", entry, why, NULL };
    expect_refusal(label, "--child-env", NULL, env, NULL, want);
}

static void expect_bad_clusters(const char *value, long cpus)
{
    char var[64], label[96], range[64];
    snprintf(var, sizeof var, "RCLIFY_CLUSTERS=%s", value);
    snprintf(label, sizeof label, "RCLIFY_CLUSTERS=%s on %ld CPUs", value, cpus);
    snprintf(range, sizeof range, "expected an integer from 1 to %ld", cpus);
    const char *const env[] = { var, NULL };
    const char *const want[] = { var, range, NULL };
    expect_refusal(label, "--child-env", NULL, env, NULL, want);
}

static void check_refusals(void)
{
    char every_name[1024] = "unknown algorithm (expected one of ";
    FOR_EACH_ALG(a)
    {
        size_t len = strlen(every_name);
        snprintf(every_name + len, sizeof every_name - len, "%s%s", a->name, a + 1 < t_algs + T_NALGS ? ", " : ")");
    }
    expect_bad_locks("*=nosuch", "*=nosuch", every_name);
    expect_bad_locks("*=ttas/bogus", "*=ttas/bogus", "unknown waiting policy (expected one of auto, spin, yield, park)");
    expect_bad_locks("*=posix/spin", "*=posix/spin", "algorithm posix cannot honour policy spin (it honours: auto)");
    expect_bad_locks("a.c:x=rcl,*=ttas/", "*=ttas/", "unknown waiting policy");

    /* Every policy an algorithm does not honour, from RCLIFY_LOCKS and from lock_config.h. */
    int refused = 0;
    FOR_EACH_ALG(a)
    {
        unsigned honoured = rcl_algorithm_policies(a->alg);
        CHECK(honoured & RCL_POLICY_BIT(RCL_WAIT_AUTO), "%s does not honour auto", a->name);
        for (int p = 0; p < RCL_WAIT_COUNT; p++) {
            if (honoured & RCL_POLICY_BIT(p))
                continue;
            char spec[64], why[128], arg[32], cant[160], label[96];
            snprintf(spec, sizeof spec, "*=%s/%s", a->name, rcl_policy_name(p));
            snprintf(why, sizeof why, "algorithm %s cannot honour policy %s", a->name, rcl_policy_name(p));
            expect_bad_locks(spec, spec, why);

            snprintf(arg, sizeof arg, "%d:%d", a->alg, p);
            snprintf(cant, sizeof cant, "algorithm %s cannot honour waiting policy %s", a->name, rcl_policy_name(p));
            snprintf(label, sizeof label, "lock_config entry %s with policy %s", a->name, rcl_policy_name(p));
            const char *const want[] = { "lock bad_config.c:configured", cant, NULL };
            expect_refusal(label, "--child-config", arg, NULL, "main", want);
            refused++;
        }
    }
    OK("%d algorithm/policy pairs not honoured: each refused from RCLIFY_LOCKS and from lock_config.h", refused);

    /* Policy numbers out of range in a lock_config entry: rcl_mutex_init, and a static lock. */
    char arg[32];
    snprintf(arg, sizeof arg, "%d:%d", RCL_ALG_TTAS, RCL_WAIT_COUNT);
    char number[96];
    snprintf(number, sizeof number, "unknown waiting policy number %d in its configuration", RCL_WAIT_COUNT);
    const char *const want_init[] = { "lock bad_config.c:configured", number, NULL };
    expect_refusal("lock_config entry with policy number RCL_WAIT_COUNT (rcl_mutex_init)", "--child-config", arg,
                   NULL, "main", want_init);
    snprintf(arg, sizeof arg, "%d:-1", RCL_ALG_POSIX);
    const char *const want_neg[] = { "lock bad_config.c:configured", "unknown waiting policy number -1", NULL };
    expect_refusal("lock_config entry with policy number -1 (rcl_mutex_init)", "--child-config", arg, NULL, "main",
                   want_neg);
    const char *const want_static[] = { "lock bad_config.c:bad_static", "unknown waiting policy number 7", NULL };
    expect_refusal("static lock with policy number 7 (first use)", "--child-static", NULL, NULL, "main", want_static);

    /* Cluster counts the machine does not have (config.c counts the configured CPUs). */
    long cpus = sysconf(_SC_NPROCESSORS_CONF);
    if (cpus < 1)
        cpus = 1;
    char more[32];
    snprintf(more, sizeof more, "%ld", cpus + 1);
    expect_bad_clusters(more, cpus);
    expect_bad_clusters("0", cpus);
    expect_bad_clusters("two", cpus);
    static const char *const one_cluster[] = { "RCLIFY_CLUSTERS=1", NULL };
    struct t_child c;
    int rc = t_run_child("--child-env", NULL, one_cluster, 30, &c);
    CHECK(rc == 0 && contains(c.err, "[loop ok]"), "RCLIFY_CLUSTERS=1: child exited %d\n%s", rc, c.err);
    OK("RCLIFY_CLUSTERS=1 and =%ld are accepted", cpus);
    if (cpus > 1) {
        char var[64];
        snprintf(var, sizeof var, "RCLIFY_CLUSTERS=%ld", cpus);
        const char *const all[] = { var, NULL };
        rc = t_run_child("--child-env", NULL, all, 30, &c);
        CHECK(rc == 0 && contains(c.err, "[loop ok]"), "%s: child exited %d\n%s", var, rc, c.err);
    }
}

/* Every honoured policy runs, configured by lock_config entry here and by RCLIFY_LOCKS in a child. */
static void check_honoured(void)
{
    int runs = 0;
    FOR_EACH_ALG(a)
    {
        unsigned honoured = rcl_algorithm_policies(a->alg);
        for (int p = 0; p < RCL_WAIT_COUNT; p++) {
            if (!(honoured & RCL_POLICY_BIT(p)))
                continue;
            char what[96];
            snprintf(what, sizeof what, "%s/%s from its lock_config entry", a->name, rcl_policy_name(p));
            rcl_lock_config_t cfg = RCL_LOCK_CONFIG_POLICY("bad_config.c:honoured", a->alg, 0, -1, p);
            rcl_mutex_t m;
            CHECK_EQ(rcl_mutex_init(&m, NULL, &cfg), 0, what);
            CHECK(rcl_mutex_algorithm(&m) == a->alg && m.config.policy == p, "%s: resolved to %s/%s", what,
                  rcl_algorithm_name(rcl_mutex_algorithm(&m)), rcl_policy_name(m.config.policy));
            uint64_t t0 = t_now_ns();
            t_excl_run(&m, THREADS, ITERS(ITERATIONS), what);
            CHECK_EQ(rcl_mutex_destroy(&m), 0, "rcl_mutex_destroy");
            double ms = (double)(t_now_ns() - t0) / 1e6;

            char var[96], resolved[96];
            snprintf(var, sizeof var, "RCLIFY_LOCKS=bad_config.c:*=%s/%s", a->name, rcl_policy_name(p));
            snprintf(resolved, sizeof resolved, "[alg=%s policy=%s]", a->name, rcl_policy_name(p));
            const char *const env[] = { var, NULL };
            struct t_child c;
            int rc = t_run_child("--child-env", NULL, env, 30, &c);
            CHECK(rc == 0 && contains(c.err, "[loop ok]"), "%s: child exited %d%s\n%s", var, rc,
                  c.timed_out ? " (timed out)" : "", c.err);
            CHECK(contains(c.err, resolved), "%s: expected %s in:\n%s", var, resolved, c.err);
            OK("%s/%s: %d threads x %d sections exclusive (%.0f ms); the same from %s", a->name, rcl_policy_name(p),
               THREADS, ITERS(ITERATIONS), ms, var);
            runs++;
        }
    }
    OK("%d algorithm/policy pairs honoured and run", runs);
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "bad_config");
    struct rlimit no_core = { 0, 0 };
    setrlimit(RLIMIT_CORE, &no_core); /* refusals abort(): no core files */
    if (t_is_child(argc, argv)) {
        if (strcmp(argv[1], "--child-config") == 0)
            return child_config(argc > 2 ? argv[2] : "");
        if (strcmp(argv[1], "--child-static") == 0)
            return child_static();
        return child_env();
    }
    check_refusals();
    check_honoured();
    return t_done();
}
