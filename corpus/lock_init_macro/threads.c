#include <stdio.h>

#include "threads.h"

#ifdef THREADS_DEBUG
int thr_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr)
{
    if (m == NULL) {
        fprintf(stderr, "thr_mutex_init: no mutex\n");
        return 1;
    }
    return pthread_mutex_init(m, attr);
}
#endif
