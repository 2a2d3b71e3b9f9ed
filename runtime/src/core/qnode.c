/*
 * Per-thread pools of queue nodes (core/qnode.h).  The fast path is a thread-local list; a
 * thread's exit hands its list to a global stack under a mutex (rare: thread exit only).
 *
 * fork(): the child's one thread keeps its own pool (a copy); the other threads' pools are lost
 * with them (leaked, as their nodes may sit in the queues of locks held at the fork).  The
 * orphans' mutex is taken around the fork, so that the child never finds it held by a thread that
 * does not exist there.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/qnode.h"
#include "core/runtime.h"

#define NODES_PER_REFILL 8

static __thread struct rcl_qnode *pool;
static __thread int pool_registered;

static pthread_mutex_t orphans_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rcl_qnode *orphans; /* pools of exited threads */
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void on_thread_exit(void *unused)
{
    struct rcl_qnode *list = pool;
    pool = NULL;
    if (!list)
        return;
    struct rcl_qnode *last = list;
    while (last->pool_next)
        last = last->pool_next;
    pthread_mutex_lock(&orphans_lock);
    last->pool_next = orphans;
    orphans = list;
    pthread_mutex_unlock(&orphans_lock);
}

static void make_exit_key(void)
{
    if (pthread_key_create(&exit_key, on_thread_exit) != 0)
        rcl_fatal("cannot create the thread-exit key of queue-node pools");
}

static void refill(void)
{
    if (!pool_registered) {
        pthread_once(&exit_key_once, make_exit_key);
        pthread_setspecific(exit_key, (void *)1); /* non-NULL: the destructor runs */
        pool_registered = 1;
    }
    pthread_mutex_lock(&orphans_lock);
    for (int i = 0; i < NODES_PER_REFILL && orphans; i++) {
        struct rcl_qnode *n = orphans;
        orphans = n->pool_next;
        n->pool_next = pool;
        pool = n;
    }
    pthread_mutex_unlock(&orphans_lock);
    if (pool)
        return;
    struct rcl_qnode *block = aligned_alloc(RCL_CACHE_LINE, NODES_PER_REFILL * sizeof *block);
    if (!block)
        rcl_fatal("out of memory for queue nodes");
    for (int i = 0; i < NODES_PER_REFILL; i++) {
        block[i].pool_next = pool;
        pool = &block[i];
    }
}

struct rcl_qnode *rcl_qnode_get(void)
{
    if (__builtin_expect(pool == NULL, 0))
        refill();
    struct rcl_qnode *n = pool;
    pool = n->pool_next;
    memset(n, 0, sizeof *n);
    return n;
}

void rcl_qnode_put(struct rcl_qnode *n)
{
    n->pool_next = pool;
    pool = n;
}

static void before_fork(void)
{
    pthread_mutex_lock(&orphans_lock);
}

static void after_fork(void) /* in the parent and in the child (the forking thread holds it) */
{
    pthread_mutex_unlock(&orphans_lock);
}

__attribute__((constructor(104))) static void rcl_qnode_init(void)
{
    pthread_atfork(before_fork, after_fork, after_fork);
}
