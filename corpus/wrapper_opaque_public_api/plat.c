/* The platform layer's lock calls go through a static checked helper (nng's
   nni_pthread_mutex_lock): the layers above reach the mutex through generated accessors. */
#include <stdio.h>
#include <stdlib.h>
#include "plat.h"

void plat_panic(const char *what, int err)
{
    fprintf(stderr, "%s: error %d\n", what, err);
    abort();
}

static void checked_lock(pthread_mutex_t *m)
{
    int rv;
    if ((rv = pthread_mutex_lock(m)) != 0) {
        plat_panic("pthread_mutex_lock", rv);
    }
}

static void checked_unlock(pthread_mutex_t *m)
{
    int rv;
    if ((rv = pthread_mutex_unlock(m)) != 0) {
        plat_panic("pthread_mutex_unlock", rv);
    }
}

void plat_mtx_init(plat_mtx *m)
{
    pthread_mutex_init(&m->mtx, NULL);
}

void plat_mtx_lock(plat_mtx *m)
{
    checked_lock(&m->mtx);
}

void plat_mtx_unlock(plat_mtx *m)
{
    checked_unlock(&m->mtx);
}
