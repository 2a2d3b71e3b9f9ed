/* Lock macros defined per platform and per debug level: only the branch the build compiles
 * counts (here: POSIX threads, LOCK_DEBUG 1, a checked lock). */
#ifndef LOCKS_H
#define LOCKS_H

#include "config.h"

#if defined(_WIN32)
#include <windows.h>
typedef CRITICAL_SECTION lock_t;
#define LOCK_RAW(m) EnterCriticalSection(&(m))
#define UNLOCK_RAW(m) LeaveCriticalSection(&(m))
#elif defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
typedef pthread_mutex_t lock_t;
#define LOCK_RAW(m) pthread_mutex_lock(&(m))
#define UNLOCK_RAW(m) pthread_mutex_unlock(&(m))
#else
#error "no threads on this platform"
#endif

#include <stdio.h>
#include <stdlib.h>

#ifndef LOCK_DEBUG
#define LOCK_DEBUG 0
#endif

#if LOCK_DEBUG >= 2
/* owner tracking: a function of another file, not built at this level */
void lock_debug_take(lock_t *m, const char *file, int line);
void lock_debug_give(lock_t *m, const char *file, int line);
#define LOCK(m) lock_debug_take(&(m), __FILE__, __LINE__)
#define UNLOCK(m) lock_debug_give(&(m), __FILE__, __LINE__)
#elif LOCK_DEBUG == 1
#define LOCK(m) do { if (LOCK_RAW(m) != 0) { fprintf(stderr, "lock failed\n"); abort(); } } while (0)
#define UNLOCK(m) do { if (UNLOCK_RAW(m) != 0) abort(); } while (0)
#else
#define LOCK(m) LOCK_RAW(m)
#define UNLOCK(m) UNLOCK_RAW(m)
#endif

#endif /* LOCKS_H */
