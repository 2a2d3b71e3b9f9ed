/* Per-thread node pools (core/node_pool.h): refill, thread exit, fork. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomics.h"
#include "core/node_pool.h"
#include "core/runtime.h"

#define NODES_PER_REFILL 8

static pthread_mutex_t orphans_lock = PTHREAD_MUTEX_INITIALIZER; /* every pool's orphans */
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static __thread struct rcl_node_pool_local *registered; /* this thread's lists */

/* At a thread's exit (its thread-locals are still there): each of its lists joins its pool's orphans. */
static void on_thread_exit(void *unused)
{
    pthread_mutex_lock(&orphans_lock);
    for (struct rcl_node_pool_local *local = registered; local; local = local->next_registered) {
        void *list = local->head;
        local->head = NULL;
        local->registered = 0; /* a use after this (another key's destructor) registers again */
        if (!list)
            continue;
        void *last = list;
        while (*rcl_node_pool_link(local, last))
            last = *rcl_node_pool_link(local, last);
        *rcl_node_pool_link(local, last) = local->pool->orphans;
        local->pool->orphans = list;
    }
    pthread_mutex_unlock(&orphans_lock);
    registered = NULL;
}

static void make_exit_key(void)
{
    if (pthread_key_create(&exit_key, on_thread_exit) != 0)
        rcl_fatal("cannot create the thread-exit key of the node pools");
}

void rcl_node_pool_refill(struct rcl_node_pool_local *local)
{
    struct rcl_node_pool *pool = local->pool;
    if (!local->registered) {
        pthread_once(&exit_key_once, make_exit_key);
        pthread_setspecific(exit_key, (void *)1); /* non-NULL: the destructor runs */
        local->next_registered = registered;
        registered = local;
        local->registered = 1;
    }
    pthread_mutex_lock(&orphans_lock);
    for (int i = 0; i < NODES_PER_REFILL && pool->orphans; i++) {
        void *node = pool->orphans;
        pool->orphans = *rcl_node_pool_link(local, node);
        rcl_node_pool_put(local, node);
    }
    pthread_mutex_unlock(&orphans_lock);
    if (local->head)
        return;
    char *block = aligned_alloc(RCL_CACHE_LINE, NODES_PER_REFILL * pool->size);
    if (!block)
        rcl_fatal("out of memory for lock queue nodes");
    memset(block, 0, NODES_PER_REFILL * pool->size);
    for (int i = 0; i < NODES_PER_REFILL; i++)
        rcl_node_pool_put(local, block + (size_t)i * pool->size);
}

static void before_fork(void)
{
    pthread_mutex_lock(&orphans_lock);
}

static void after_fork(void) /* in the parent and in the child (the forking thread holds it) */
{
    pthread_mutex_unlock(&orphans_lock);
}

__attribute__((constructor(104))) static void rcl_node_pool_init(void)
{
    pthread_atfork(before_fork, after_fork, after_fork);
}
