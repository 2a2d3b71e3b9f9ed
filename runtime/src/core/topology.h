/*
 * CPU clusters for hierarchical locks (h-synch, cohort locks): threads on one cluster share a
 * cache level, so handing a lock over inside a cluster is cheaper than across.  Read once from
 * /sys: the NUMA nodes when there are several, else the groups sharing a last-level cache, else
 * one cluster.  RCLIFY_CLUSTERS=N overrides it: CPUs are split into N equal groups (1 .. CPUs;
 * more is a start-up error in config.c).
 */
#ifndef RCLIFY_TOPOLOGY_H
#define RCLIFY_TOPOLOGY_H

#define RCL_MAX_CLUSTERS 64

int rcl_cluster_count(void);
/* The cluster of the CPU the calling thread runs on now (a hint: threads migrate). */
int rcl_current_cluster(void);
int rcl_cluster_of_cpu(int cpu);

#endif
