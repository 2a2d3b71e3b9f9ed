/*
 * Client identifiers: each thread that talks to an RCL server gets, on first use, the smallest
 * free identifier; it indexes that thread's mailbox in every server's request array.  The
 * identifier is given back when the thread exits (pthread key destructor), so identifiers stay
 * small and servers only poll up to the highest live one.
 */
#include <errno.h>
#include <stdint.h>

#include "rcl/rcl_internal.h"

__thread int rcl_tls_client_id;
__thread int *rcl_tls_errno;

static pthread_mutex_t ids_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t used[RCL_MAX_CLIENTS / 64]; /* bit i: identifier i is live (under ids_lock) */
static int max_live;                        /* highest live identifier; read by servers */
static int n_live;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void release_id(void *p)
{
    int id = (int)(intptr_t)p;
    pthread_mutex_lock(&ids_lock);
    used[id / 64] &= ~(UINT64_C(1) << (id % 64));
    st_relaxed(&n_live, n_live - 1);
    if (id == max_live) {
        int m = id - 1;
        while (m > 0 && !(used[m / 64] & (UINT64_C(1) << (m % 64))))
            m--;
        st_relaxed(&max_live, m);
    }
    pthread_mutex_unlock(&ids_lock);
}

static void make_key(void)
{
    if (pthread_key_create(&exit_key, release_id) != 0)
        rcl_fatal("pthread_key_create failed for client identifiers");
}

/* Called on a thread's first section: the errno its section will see is read just after. */
int rcl_client_id_alloc(void)
{
    int saved_errno = errno;
    rcl_tls_errno = &errno;
    pthread_once(&key_once, make_key);
    pthread_mutex_lock(&ids_lock);
    int id = 0;
    for (int w = 0; w < RCL_MAX_CLIENTS / 64 && !id; w++) {
        uint64_t free_bits = ~used[w];
        if (w == 0)
            free_bits &= ~UINT64_C(1); /* identifier 0 means "no holder" */
        if (free_bits)
            id = w * 64 + __builtin_ctzll(free_bits);
    }
    if (!id) {
        pthread_mutex_unlock(&ids_lock);
        rcl_fatal("out of RCL client identifiers: more than %d threads use RCL locks at once",
                  RCL_MAX_CLIENTS - 1);
    }
    used[id / 64] |= UINT64_C(1) << (id % 64);
    st_relaxed(&n_live, n_live + 1);
    if (id > max_live)
        st_relaxed(&max_live, id);
    pthread_mutex_unlock(&ids_lock);
    pthread_setspecific(exit_key, (void *)(intptr_t)id);
    rcl_tls_client_id = id;
    errno = saved_errno;
    return id;
}

int rcl_clients_max(void)
{
    return ld_relaxed(&max_live);
}

int rcl_clients_live(void)
{
    return ld_relaxed(&n_live);
}

/* fork(): ids_lock is taken around it, so that the child never finds it held by a thread that
 * does not exist there.  The identifiers of the parent's other threads stay marked live in the
 * child (a few mailboxes polled for nothing); the forking thread keeps its own. */
static void before_fork(void)
{
    pthread_mutex_lock(&ids_lock);
}

static void after_fork(void)
{
    pthread_mutex_unlock(&ids_lock);
}

__attribute__((constructor(104))) static void rcl_clients_init(void)
{
    pthread_atfork(before_fork, after_fork, after_fork);
}
