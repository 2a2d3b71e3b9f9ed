/*
 * Per-thread pools of queue nodes (core/qnode.h), on core/node_pool.h: thread exit and fork are
 * handled there.
 */
#include <string.h>

#include "core/node_pool.h"
#include "core/qnode.h"

RCL_NODE_POOL(qnodes, struct rcl_qnode, pool_next);

struct rcl_qnode *rcl_qnode_get(void)
{
    struct rcl_qnode *n = rcl_node_pool_get(&qnodes_local);
    memset(n, 0, sizeof *n);
    return n;
}

void rcl_qnode_put(struct rcl_qnode *n)
{
    rcl_node_pool_put(&qnodes_local, n);
}
