/* A portability header of the usual shape: object-like aliases of the pthread names and types,
   and checked lock macros one level deep. */
#ifndef QUEUE_H
#define QUEUE_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define my_mutex_t pthread_mutex_t
#define my_cond_t pthread_cond_t
#define my_mutex_lock pthread_mutex_lock
#define my_mutex_unlock pthread_mutex_unlock
#define my_cond_wait pthread_cond_wait
#define my_cond_signal pthread_cond_signal

/* the result kept in a variable of the macro's own block; the call an argument of the macro */
#define CHECKED(call) do { int err_; if ((err_ = (call)) != 0) { \
        fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, strerror(err_)); abort(); } } while (0)
#define PASS(call) call
#define LOCK(m) CHECKED(pthread_mutex_lock(m))
#define UNLOCK(m) CHECKED(pthread_mutex_unlock(m))
#define TAKE(m) PASS(pthread_mutex_lock(m))
#define GIVE(m) PASS(pthread_mutex_unlock(m))

struct queue {
    my_mutex_t mutex;
    my_cond_t nonempty;
    long items[64];
    int head, tail;
};

#endif
