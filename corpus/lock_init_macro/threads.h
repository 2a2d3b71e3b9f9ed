#ifndef THREADS_H
#define THREADS_H

#include <pthread.h>

/* A zstd-style portability layer: a debug build checks its arguments in a function, the release
 * build initialises straight through a macro (lib/common/threading.h). */
#ifdef THREADS_DEBUG
int thr_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr);
#else
#define thr_mutex_init(m, attr) pthread_mutex_init((m), (attr))
#endif
#define thr_mutex_lock(m) pthread_mutex_lock((m))
#define thr_mutex_unlock(m) pthread_mutex_unlock((m))

/* A lock inside the struct a pointer names, set up by a macro continued on a second line. */
#define BUCKET_INIT(b) \
    pthread_mutex_init(&(b)->lock, NULL)

/* A mutex object named by the macro's argument. */
#define OBJECT_LOCK_INIT(m) pthread_mutex_init(&(m), NULL)

/* An init whose result is thrown away: the macro has no value. */
#define QUIET_LOCK_INIT(m) ((void) pthread_mutex_init((m), NULL))

#endif
