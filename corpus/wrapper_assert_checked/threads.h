/* libusb's threads_posix.h: static inline wrappers whose lock call is checked by an assert
   through two macros, PTHREAD_CHECK(e) -> ASSERT_EQ(e, 0) -> assert(e == 0) (or (void)e under
   NDEBUG). The failure path ends in __assert_fail, which does not return: the wrappers are lock
   wrappers and the sections through them are extracted. */
#ifndef THREADS_H
#define THREADS_H
#include <assert.h>
#include <pthread.h>
#ifdef NDEBUG
#define ASSERT_EQ(expression, value)	(void)expression
#else
#define ASSERT_EQ(expression, value)	assert(expression == value)
#endif
#define PTHREAD_CHECK(expression)	ASSERT_EQ(expression, 0)
typedef pthread_mutex_t usbi_mutex_t;
static inline void usbi_mutex_init(usbi_mutex_t *mutex)
{
	PTHREAD_CHECK(pthread_mutex_init(mutex, NULL));
}
static inline void usbi_mutex_lock(usbi_mutex_t *mutex)
{
	PTHREAD_CHECK(pthread_mutex_lock(mutex));
}
static inline void usbi_mutex_unlock(usbi_mutex_t *mutex)
{
	PTHREAD_CHECK(pthread_mutex_unlock(mutex));
}
#endif
