/* Lock macros as libmicrohttpd writes them (mhd_locks.h): the _ macros are true on success, the
 * _chk_ ones panic when the call fails. */
#ifndef MUTEXES_H
#define MUTEXES_H
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define PANIC(msg) do { fprintf(stderr, "panic at %d: %s\n", __LINE__, msg); abort(); } while (0)
#define mutex_lock_(pmutex) (!(pthread_mutex_lock((pmutex))))
#define mutex_unlock_(pmutex) (!(pthread_mutex_unlock((pmutex))))
#define mutex_lock_chk_(pmutex) do { if (!mutex_lock_(pmutex)) PANIC("Failed to lock mutex."); } while (0)
#define mutex_unlock_chk_(pmutex) do { if (!mutex_unlock_(pmutex)) PANIC("Failed to unlock mutex."); } while (0)
#endif
