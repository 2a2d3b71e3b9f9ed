#include <stdio.h>
#include <stdlib.h>

#include "lockutil.h"

int my_mutex_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t attr;
    int err;

    if (pthread_mutexattr_init(&attr))
        abort();
    if (pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK))
        abort();
    err = pthread_mutex_init(m, &attr);
    if (pthread_mutexattr_destroy(&attr))
        abort();
    return err;
}

struct counter_lock *new_lock(long start)
{
    struct counter_lock *l = malloc(sizeof *l);
    if (l == NULL)
        return NULL;
    l->value = start;
    if (my_mutex_init(&l->m) != 0) {
        fprintf(stderr, "new_lock: cannot set up the mutex\n");
        free(l);
        return NULL;
    }
    return l;
}

void free_lock(struct counter_lock *l)
{
    pthread_mutex_destroy(&l->m);
    free(l);
}
