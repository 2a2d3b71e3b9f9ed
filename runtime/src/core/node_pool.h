/*
 * Type-stable per-thread pools of fixed-size nodes, for the runtime's queue nodes (core/qnode.h)
 * and osci's batches: a node, once allocated, is never freed nor used as anything else, so a late
 * reader of a recycled node (a wake-up, a stale door CAS) never touches freed memory.
 *
 * The fast path is a thread-local free list.  A thread's exit hands its lists to a global stack
 * per kind of node (under one mutex for all kinds: thread exit only), which later threads draw
 * from before allocating.  fork(): the child's one thread keeps its own lists (a copy); the other
 * threads' lists are lost with them (leaked: their nodes may sit in the queues of locks held at
 * the fork).  The mutex is taken around the fork, so the child never finds it held by a thread
 * that does not exist there.
 *
 * One kind of node:  RCL_NODE_POOL(batches, struct osci_batch, pool_next);
 * then rcl_node_pool_get(&batches_local) and rcl_node_pool_put(&batches_local, b).
 */
#ifndef RCLIFY_NODE_POOL_H
#define RCLIFY_NODE_POOL_H

#include <stddef.h>

struct rcl_node_pool {
    size_t size;   /* bytes per node: a multiple of RCL_CACHE_LINE */
    size_t link;   /* offset in a node of its free-list link (a pointer) */
    void *orphans; /* the lists of exited threads (under the pools' mutex) */
};

/* A thread's list of one kind of node. */
struct rcl_node_pool_local {
    struct rcl_node_pool *pool;
    void *head;
    struct rcl_node_pool_local *next_registered; /* the thread's lists, handed over at its exit */
    int registered;
};

#define RCL_NODE_POOL(name, type, link_field)                                          \
    static struct rcl_node_pool name = {sizeof(type), offsetof(type, link_field), NULL}; \
    static __thread struct rcl_node_pool_local name##_local = {&name, NULL, NULL, 0}

/* Fills the thread's empty list: nodes of exited threads first, else a new block of zeroed nodes. */
void rcl_node_pool_refill(struct rcl_node_pool_local *local);

static inline void **rcl_node_pool_link(const struct rcl_node_pool_local *local, void *node)
{
    return (void **)((char *)node + local->pool->link);
}

/* A node from the thread's list: as the last user left it (zeroed when new). */
static inline void *rcl_node_pool_get(struct rcl_node_pool_local *local)
{
    if (__builtin_expect(local->head == NULL, 0))
        rcl_node_pool_refill(local);
    void *node = local->head;
    local->head = *rcl_node_pool_link(local, node);
    return node;
}

/* Gives a node back to the calling thread's list (it need not be the thread that took it). */
static inline void rcl_node_pool_put(struct rcl_node_pool_local *local, void *node)
{
    *rcl_node_pool_link(local, node) = local->head;
    local->head = node;
}

#endif
