/* unbound's util/locks.h: every lock macro passes its pthread call through LOCKRET, which checks
 * the result, unless the includer has defined its own LOCKRET first. */
#ifndef LOCKS_H
#define LOCKS_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef LOCKRET
#define LOCKRET(func) do {\
	int lockret_err;		\
	if( (lockret_err=(func)) != 0) {	\
		fprintf(stderr, "%s at %d could not " #func ": %s\n", \
		__FILE__, __LINE__, strerror(lockret_err));	\
		abort(); }	\
 	} while(0)
#endif

typedef pthread_mutex_t lock_basic_type;
#define lock_basic_init(lock) LOCKRET(pthread_mutex_init(lock, NULL))
#define lock_basic_destroy(lock) LOCKRET(pthread_mutex_destroy(lock))
#define lock_basic_lock(lock) LOCKRET(pthread_mutex_lock(lock))
#define lock_basic_unlock(lock) LOCKRET(pthread_mutex_unlock(lock))

#endif
