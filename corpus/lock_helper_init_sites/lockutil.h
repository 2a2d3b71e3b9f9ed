#ifndef LOCKUTIL_H
#define LOCKUTIL_H

#include <pthread.h>

/* A libuv-style helper: sets up the mutex it is given (error-checking), returns 0 or an errno. */
int my_mutex_init(pthread_mutex_t *m);

/* A lock with the counter it protects, allocated and set up by new_lock(). */
struct counter_lock {
    pthread_mutex_t m;
    long value;
};
struct counter_lock *new_lock(long start);
void free_lock(struct counter_lock *l);

#endif
