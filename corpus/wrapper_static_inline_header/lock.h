/* Checked lock wrappers as static inline functions of a header, reached through macros that
 * add the caller's file and line: LOCK_TAKE(l) / LOCK_GIVE(l).  A function of the header locks
 * through them too. */
#ifndef LOCK_H
#define LOCK_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lock {
    pthread_mutex_t m;
    long held; /* how many times it was taken */
};

static inline void lock_die(int err, const char *what, const char *file, int line)
{
    fprintf(stderr, "%s:%d: %s: %s\n", file, line, what, strerror(err));
    abort();
}

static inline void lock_take_(struct lock *l, const char *file, int line)
{
    int err = pthread_mutex_lock(&l->m);
    if (err != 0)
        lock_die(err, "pthread_mutex_lock", file, line);
}

static inline void lock_give_(struct lock *l, const char *file, int line)
{
    int err = pthread_mutex_unlock(&l->m);
    if (__builtin_expect(err, 0))
        lock_die(err, "pthread_mutex_unlock", file, line);
}

#define LOCK_TAKE(l) lock_take_((l), __FILE__, __LINE__)
#define LOCK_GIVE(l) lock_give_((l), __FILE__, __LINE__)

/* a section in the header itself, through the same wrappers */
static inline long lock_add(struct lock *l, long *value, long n)
{
    long now;
    LOCK_TAKE(l);
    l->held++;
    *value += n;
    now = *value;
    LOCK_GIVE(l);
    return now;
}

void *worker(void *arg);

#endif /* LOCK_H */
