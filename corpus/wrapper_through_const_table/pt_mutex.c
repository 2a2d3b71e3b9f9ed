#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include "synch.h"

static mr_lock_t ptmutex_alloc(void)
{
    pthread_mutex_t *m = malloc(sizeof(*m));
    assert(m != NULL);
    pthread_mutex_init(m, NULL);
    return m;
}

static void ptmutex_acquire(mr_lock_t l)
{
    pthread_mutex_lock(l);
}

static void ptmutex_release(mr_lock_t l)
{
    pthread_mutex_unlock(l);
}

static void ptmutex_free(mr_lock_t l)
{
    pthread_mutex_destroy(l);
    free(l);
}

const mr_lock_ops mr_ptmutex_ops = {
    .alloc = ptmutex_alloc,
    .acquire = ptmutex_acquire,
    .release = ptmutex_release,
    .free = ptmutex_free,
};
