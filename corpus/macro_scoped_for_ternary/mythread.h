/* xz-utils' mythread.h shape: static inline wrappers that assert the result, and a scoped lock
 * macro whose `for` locks and unlocks in the two arms of its condition, with the body in a
 * run-once inner `for` (so `break` and `continue` both leave the section, unlocking). */
#ifndef MYTHREAD_H
#define MYTHREAD_H
#include <assert.h>
#include <pthread.h>

static inline void my_mutex_lock(pthread_mutex_t *mutex)
{
	int ret = pthread_mutex_lock(mutex);
	assert(ret == 0);
	(void)ret;
}

static inline void my_mutex_unlock(pthread_mutex_t *mutex)
{
	int ret = pthread_mutex_unlock(mutex);
	assert(ret == 0);
	(void)ret;
}

static inline void my_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
	int ret = pthread_cond_wait(cond, mutex);
	assert(ret == 0);
	(void)ret;
}

#define my_sync(mutex) my_sync_helper1(mutex, __LINE__)
#define my_sync_helper1(mutex, line) my_sync_helper2(mutex, line)
#define my_sync_helper2(mutex, line) \
	for (unsigned int my_i_ ## line = 0; \
			my_i_ ## line \
				? (my_mutex_unlock(&(mutex)), 0) \
				: (my_mutex_lock(&(mutex)), 1); \
			my_i_ ## line = 1) \
		for (unsigned int my_j_ ## line = 0; \
				!my_j_ ## line; \
				my_j_ ## line = 1)
#endif
