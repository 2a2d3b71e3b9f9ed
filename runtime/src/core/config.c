/*
 * Run-time configuration, read once at start-up (constructor):
 *   RCLIFY_LOCKS   comma-separated PATTERN=ALG[/POLICY][:SERVER[@CPU]]; PATTERN is an fnmatch glob
 *                  over lock ids ('*' also matches anonymous locks); the first matching entry wins.
 *                  POLICY is a waiting policy (auto, spin, yield, park) the algorithm honours.
 *   RCLIFY_CLUSTERS=N  groups of CPUs for hierarchical locks (h-synch, cohort locks), 1 .. the
 *                  CPU count; default: the machine's NUMA nodes, else its shared last-level caches.
 *   RCLIFY_ADMISSION=0  no admission (core/admission.h) for raw-lock algorithms: their strict
 *                  FIFO order under auto and park too, at the price of collapse when oversubscribed.
 *   RCLIFY_STATS=1 statistics table on stderr at exit.
 *   RCLIFY_FIFO=1  servicing threads under SCHED_FIFO when permitted (RCLIFY_NO_FIFO=1 forbids it).
 *   RCLIFY_IDLE_US / RCLIFY_MGR_US  idle time before a server parks / management timeout.
 * A malformed RCLIFY_LOCKS is reported on one line naming the entry, and the program exits(2).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/runtime.h"

struct rcl_settings rcl_settings = { .stats = 0, .fifo = 0, .idle_us = 200, .mgr_us = 5000, .admission = 1 };

struct override {
    char *pattern;
    int algorithm, server, cpu, policy;
};

static const char *const policy_names[RCL_WAIT_COUNT] = { "auto", "spin", "yield", "park" };

const char *rcl_policy_name(int policy)
{
    return policy >= 0 && policy < RCL_WAIT_COUNT ? policy_names[policy] : "unknown";
}

/* The policies an algorithm honours, as a readable list ("auto, spin, yield, park"). */
static void honoured_list(int alg, char *buf, size_t len)
{
    unsigned mask = rcl_algorithm_policies(alg);
    buf[0] = '\0';
    for (int p = 0; p < RCL_WAIT_COUNT; p++)
        if (mask & RCL_POLICY_BIT(p))
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "", policy_names[p]);
}
static struct override *overrides;
static int n_overrides;

void rcl_fatal(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if (n > (int)sizeof buf - 2)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    rcl_dprintf(2, "rclify: %.*s", n, buf);
    abort();
}

const char *rcl_lock_name(const rcl_mutex_t *m)
{
    return m->config.id ? m->config.id : "(anonymous)";
}

/* Names come from the registry (include/rclify/algorithms.def), as does the error message. */
static int algorithm_by_name(const char *name, size_t len)
{
    for (int a = RCL_ALG_POSIX; a < RCL_ALG_COUNT; a++) {
        const char *n = rcl_algorithm_name(a);
        if (strlen(n) == len && strncmp(n, name, len) == 0)
            return a;
    }
    return -1;
}

static long number_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_CONF);
    return n > 0 ? n : 1;
}

static void __attribute__((noreturn)) bad_entry(const char *entry, const char *why)
{
    fprintf(stderr, "rclify: RCLIFY_LOCKS: bad entry '%s': %s\n", entry, why);
    exit(2);
}

static void __attribute__((noreturn)) unknown_algorithm(const char *entry)
{
    char why[1024] = "unknown algorithm (expected one of ";
    for (int a = RCL_ALG_POSIX; a < RCL_ALG_COUNT; a++) {
        size_t len = strlen(why);
        snprintf(why + len, sizeof why - len, "%s%s", rcl_algorithm_name(a), a + 1 < RCL_ALG_COUNT ? ", " : ")");
    }
    bad_entry(entry, why);
}

/* Parses a decimal in [lo, hi] spanning exactly [s, end). */
static int parse_int(const char *s, const char *end, long lo, long hi, int *out)
{
    if (s == end)
        return -1;
    long v = 0;
    for (const char *p = s; p < end; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
        if (v > hi)
            return -1;
    }
    if (v < lo)
        return -1;
    *out = (int)v;
    return 0;
}

static void parse_entry(char *entry, struct override *o)
{
    char *eq = strrchr(entry, '=');
    if (!eq || eq == entry)
        bad_entry(entry, "expected PATTERN=ALG[/POLICY][:SERVER[@CPU]]");
    const char *alg = eq + 1, *colon = strchr(alg, ':');
    const char *alg_end = colon ? colon : alg + strlen(alg);
    const char *slash = memchr(alg, '/', (size_t)(alg_end - alg));
    o->algorithm = algorithm_by_name(alg, (size_t)((slash ? slash : alg_end) - alg));
    o->server = 0;
    o->cpu = -1;
    o->policy = RCL_WAIT_AUTO;
    if (o->algorithm < 0)
        unknown_algorithm(entry);
    if (slash) {
        size_t len = (size_t)(alg_end - slash - 1);
        o->policy = -1;
        for (int p = 0; p < RCL_WAIT_COUNT; p++)
            if (strlen(policy_names[p]) == len && strncmp(policy_names[p], slash + 1, len) == 0)
                o->policy = p;
        if (o->policy < 0)
            bad_entry(entry, "unknown waiting policy (expected one of auto, spin, yield, park)");
        if (!(rcl_algorithm_policies(o->algorithm) & RCL_POLICY_BIT(o->policy))) {
            char list[64], why[160];
            honoured_list(o->algorithm, list, sizeof list);
            snprintf(why, sizeof why, "algorithm %s cannot honour policy %s (it honours: %s)",
                     rcl_algorithm_name(o->algorithm), policy_names[o->policy], list);
            bad_entry(entry, why);
        }
    }
    if (colon) {
        const char *srv = colon + 1, *at = strchr(srv, '@');
        const char *srv_end = at ? at : srv + strlen(srv);
        if (parse_int(srv, srv_end, 0, RCL_MAX_SERVERS - 1, &o->server) < 0)
            bad_entry(entry, "server must be an integer from 0 to 63");
        if (at && parse_int(at + 1, at + 1 + strlen(at + 1), 0, number_cpus() - 1, &o->cpu) < 0) {
            char why[96];
            snprintf(why, sizeof why, "cpu must be an integer from 0 to %ld", number_cpus() - 1);
            bad_entry(entry, why);
        }
    }
    *eq = '\0';
    o->pattern = entry;
}

static void parse_locks(const char *spec)
{
    char *copy = strdup(spec);
    if (!copy)
        abort();
    int n = 1;
    for (const char *p = copy; *p; p++)
        n += *p == ',';
    overrides = calloc((size_t)n, sizeof *overrides);
    if (!overrides)
        abort();
    for (char *rest = copy, *e; (e = strsep(&rest, ",")) != NULL;) {
        while (*e == ' ')
            e++;
        size_t len = strlen(e);
        while (len > 0 && e[len - 1] == ' ')
            e[--len] = '\0';
        if (len == 0)
            bad_entry(spec, "empty entry (two commas in a row, or a comma at an end)");
        parse_entry(e, &overrides[n_overrides++]);
    }
    if (n_overrides == 0)
        bad_entry(spec, "no entries");
}

static unsigned env_unsigned(const char *name, unsigned dflt, unsigned lo, unsigned hi)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    unsigned long x = strtoul(v, &end, 10);
    if (*end || x < lo || x > hi) {
        fprintf(stderr, "rclify: %s=%s: expected an integer from %u to %u\n", name, v, lo, hi);
        exit(2);
    }
    return (unsigned)x;
}

static int env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

__attribute__((constructor(101))) static void rcl_config_init(void)
{
    const char *locks = getenv("RCLIFY_LOCKS");
    if (locks && *locks)
        parse_locks(locks);
    rcl_settings.stats = env_flag("RCLIFY_STATS");
    rcl_settings.fifo = env_flag("RCLIFY_FIFO") && !env_flag("RCLIFY_NO_FIFO");
    rcl_settings.idle_us = env_unsigned("RCLIFY_IDLE_US", rcl_settings.idle_us, 0, 10000000);
    rcl_settings.mgr_us = env_unsigned("RCLIFY_MGR_US", rcl_settings.mgr_us, 100, 10000000);
    rcl_settings.clusters = (int)env_unsigned("RCLIFY_CLUSTERS", 0, 1, (unsigned)number_cpus());
    rcl_settings.admission = (int)env_unsigned("RCLIFY_ADMISSION", 1, 0, 1);
}

void rcl_known_lock_ids(const char *const *ids, int n)
{
    static int checked;
    if (__atomic_exchange_n(&checked, 1, __ATOMIC_ACQ_REL)) /* every file registers the same list */
        return;
    for (int i = 0; i < n_overrides; i++) {
        const char *pattern = overrides[i].pattern;
        int hit = strcmp(pattern, "*") == 0; /* also the anonymous locks' */
        for (int k = 0; k < n && !hit; k++)
            hit = fnmatch(pattern, ids[k], 0) == 0;
        if (hit)
            continue;
        char known[768] = "";
        for (int k = 0; k < n; k++) {
            size_t len = strlen(known);
            if (len + strlen(ids[k]) + 24 >= sizeof known) {
                snprintf(known + len, sizeof known - len, " and %d more", n - k);
                break;
            }
            snprintf(known + len, sizeof known - len, "%s%s", k ? ", " : "", ids[k]);
        }
        fprintf(stderr, "rclify: RCLIFY_LOCKS: '%s' names no lock of this program (its lock ids: %s)\n",
                pattern, known);
        exit(2);
    }
}

void rcl_config_resolve(const rcl_lock_config_t *own, rcl_lock_config_t *out)
{
    *out = *own;
    if (own->algorithm == RCL_ALG_UNRESOLVED) { /* zero-filled lock: the default configuration */
        rcl_lock_config_t dflt = RCL_CONFIG_DEFAULT;
        *out = dflt;
        out->id = own->id;
    }
    const char *name = own->id ? own->id : "(anonymous)";
    for (int i = 0; i < n_overrides; i++) {
        if (fnmatch(overrides[i].pattern, own->id ? own->id : "", 0) == 0 ||
            (!own->id && strcmp(overrides[i].pattern, "*") == 0)) {
            out->algorithm = overrides[i].algorithm;
            out->server = overrides[i].server;
            out->cpu = overrides[i].cpu;
            out->policy = overrides[i].policy;
            return;
        }
    }
    if (out->algorithm <= RCL_ALG_UNRESOLVED || out->algorithm >= RCL_ALG_COUNT)
        rcl_fatal("lock %s: unknown algorithm number %d in its configuration", name, out->algorithm);
    if (out->server < 0 || out->server >= RCL_MAX_SERVERS)
        rcl_fatal("lock %s: server %d out of range 0..%d", name, out->server, RCL_MAX_SERVERS - 1);
    if (out->cpu < -1)
        rcl_fatal("lock %s: cpu %d is invalid (-1 leaves the server unpinned)", name, out->cpu);
    if (out->policy < 0 || out->policy >= RCL_WAIT_COUNT)
        rcl_fatal("lock %s: unknown waiting policy number %d in its configuration", name, out->policy);
    if (!(rcl_algorithm_policies(out->algorithm) & RCL_POLICY_BIT(out->policy))) {
        char list[64];
        honoured_list(out->algorithm, list, sizeof list);
        rcl_fatal("lock %s: algorithm %s cannot honour waiting policy %s (it honours: %s)", name,
                  rcl_algorithm_name(out->algorithm), policy_names[out->policy], list);
    }
}
