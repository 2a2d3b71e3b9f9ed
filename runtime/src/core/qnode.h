/*
 * Queue nodes for queue, cohort and combining locks: per thread, never per lock.
 *
 * A lock holds only pointers (its tail, its holder's node); a thread takes a node from its own
 * pool when it starts waiting for a lock and gives it back when it is done with it, so memory per
 * lock stays a few words whatever the thread count (LiTL's flaw was a node per possible thread in
 * every lock).  Pools are thread-local free lists; a node may be given back by another thread
 * than the one that took it (CLH passes nodes on): it joins that thread's pool.  Nodes are never
 * unmapped: a thread that exits leaves its pool to a global list, which later threads draw from
 * first, so a late wake-up on a node (core/wait.h's grant) never touches freed memory.
 */
#ifndef RCLIFY_QNODE_H
#define RCLIFY_QNODE_H

#include "core/atomics.h"

struct rcl_qnode {
    struct rcl_qnode *next; /* successor in the lock's queue */
    int flag;               /* core/wait.h flag: waiting, granted, parked */
    int cluster;            /* cohort locks: the waiter's cluster */
    void *arg;              /* combining locks: the request */
    uintptr_t word;         /* per-algorithm scratch */
    struct rcl_qnode *pool_next; /* free list link (owned by the pool) */
} RCL_ALIGNED;

/* A zeroed node from the calling thread's pool. */
struct rcl_qnode *rcl_qnode_get(void);
/* Gives a node back to the calling thread's pool. */
void rcl_qnode_put(struct rcl_qnode *n);

#endif
