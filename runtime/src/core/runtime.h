/*
 * Declarations shared between the runtime's source files (not part of the public API).
 */
#ifndef RCLIFY_RUNTIME_H
#define RCLIFY_RUNTIME_H

#include <stdarg.h>

#include "core/lock_ops.h"

/* A value of rcl_mutex_t.alg that only exists while one thread resolves a static lock. */
#define RCL_ALG_RESOLVING (-1)

/* config.c: process-wide settings, read once at start-up. */
struct rcl_settings {
    int stats;          /* RCLIFY_STATS=1: print statistics at exit */
    int fifo;           /* RCLIFY_FIFO=1 (and not RCLIFY_NO_FIFO=1): try SCHED_FIFO servers */
    unsigned idle_us;   /* RCLIFY_IDLE_US: idle time before a servicing thread parks */
    unsigned mgr_us;    /* RCLIFY_MGR_US: management thread timeout */
    int clusters;       /* RCLIFY_CLUSTERS: CPU groups of hierarchical locks; 0: the topology's */
    int admission;      /* RCLIFY_ADMISSION=0 turns admission off (strict FIFO for queue locks) */
};
extern struct rcl_settings rcl_settings;

/*
 * Effective configuration of a lock: the lock's own (from lock_config.h; a zero-filled one is the
 * default), overridden by the first matching RCLIFY_LOCKS entry.  Aborts with a message naming the
 * lock when the configuration is invalid.
 */
void rcl_config_resolve(const rcl_lock_config_t *own, rcl_lock_config_t *out);
const char *rcl_lock_name(const rcl_mutex_t *m); /* id, or "(anonymous)" */
const char *rcl_policy_name(int policy);         /* "auto", "spin", ... */
/* algorithms.c: the policies an algorithm honours (RCL_POLICY_BIT mask; auto at least). */
unsigned rcl_algorithm_policies(int alg);

/*
 * Set while a thread runs sections on other threads' behalf (a combiner): such a thread must not
 * block in a condvar wait for them.  cond.c refuses, naming the lock, instead of deadlocking.
 */
extern __thread int rcl_serving_others;
int rcl_running_for_client(void); /* an RCL servicing thread running a client's section */

/* Fatal errors: one line "rclify: ..." on stderr, then abort(). */
void rcl_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* mutex.c: resolves m (if needed) and returns its algorithm's operations. */
const struct rcl_lock_ops *rcl_mutex_ops(rcl_mutex_t *m, int *alg);

/* stats.c */
void rcl_dprintf(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
