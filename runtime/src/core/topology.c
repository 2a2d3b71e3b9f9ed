/*
 * CPU clusters from /sys (core/topology.h).  The table is built once, by the first caller, and
 * published with a release store; a CPU the table does not know (hotplug) counts as cluster 0.
 */
#define _GNU_SOURCE /* sched_getcpu */
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomics.h"
#include "core/runtime.h"
#include "core/topology.h"
#include "core/wait.h"

#define MAX_CPUS 4096

static signed char cluster_of[MAX_CPUS];
static int clusters;      /* 0 until built */
static int building;

/* Parses a /sys cpulist ("0-3,8-11") and marks its CPUs with cluster c; returns how many. */
static int mark_cpulist(const char *path, int c)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char buf[1024];
    int n = 0;
    if (fgets(buf, sizeof buf, f)) {
        for (char *p = buf, *tok; (tok = strsep(&p, ",\n")) != NULL;) {
            if (!*tok)
                continue;
            int lo, hi;
            int k = sscanf(tok, "%d-%d", &lo, &hi);
            if (k < 1)
                continue;
            if (k == 1)
                hi = lo;
            for (int cpu = lo; cpu <= hi && cpu < MAX_CPUS; cpu++, n++)
                if (cpu >= 0)
                    cluster_of[cpu] = (signed char)c;
        }
    }
    fclose(f);
    return n;
}

static int from_numa_nodes(void)
{
    int c = 0;
    char path[128];
    for (int node = 0; node < 1024 && c < RCL_MAX_CLUSTERS; node++) {
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", node);
        if (mark_cpulist(path, c) > 0)
            c++;
    }
    return c;
}

/* Groups of CPUs sharing the last-level cache (index3, else index2), numbered as first seen. */
static int from_shared_caches(void)
{
    int ncpu = rcl_cpu_count(), c = 0;
    char path[160];
    memset(cluster_of, -1, sizeof cluster_of);
    for (int cpu = 0; cpu < ncpu && cpu < MAX_CPUS && c < RCL_MAX_CLUSTERS; cpu++) {
        if (cluster_of[cpu] >= 0)
            continue;
        int found = 0;
        for (int level = 3; level >= 2 && !found; level--) {
            snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list", cpu, level);
            found = mark_cpulist(path, c) > 0;
        }
        if (!found)
            cluster_of[cpu] = (signed char)c;
        c++;
    }
    for (int cpu = 0; cpu < MAX_CPUS; cpu++)
        if (cluster_of[cpu] < 0)
            cluster_of[cpu] = 0;
    return c;
}

static int build(void)
{
    int ncpu = rcl_cpu_count(), n;
    if (rcl_settings.clusters > 0) {
        n = rcl_settings.clusters;
        for (int cpu = 0; cpu < MAX_CPUS; cpu++)
            cluster_of[cpu] = (signed char)(cpu < ncpu ? (long)cpu * n / ncpu : 0);
        return n;
    }
    n = from_numa_nodes();
    if (n > 1)
        return n;
    memset(cluster_of, 0, sizeof cluster_of);
    n = from_shared_caches();
    return n > 0 ? n : 1;
}

static int table(void)
{
    int n = ld_acquire(&clusters);
    if (n > 0)
        return n;
    int expected = 0;
    if (cas_acquire(&building, &expected, 1)) {
        n = build();
        st_release(&clusters, n);
        return n;
    }
    while ((n = ld_acquire(&clusters)) == 0)
        sched_yield();
    return n;
}

int rcl_cluster_count(void)
{
    return table();
}

int rcl_cluster_of_cpu(int cpu)
{
    table();
    return cpu >= 0 && cpu < MAX_CPUS ? cluster_of[cpu] : 0;
}

int rcl_current_cluster(void)
{
    return rcl_cluster_of_cpu(sched_getcpu());
}
