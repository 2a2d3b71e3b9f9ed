/* A lock-protected counter whose operations are static inline functions of the header,
 * included by both .c files (one of them uses only some of the functions). */
#ifndef COUNTER_H
#define COUNTER_H

#include <pthread.h>

struct counter {
    pthread_mutex_t lock;
    long value;
    long updates;
};

static inline void counter_add(struct counter *c, long n)
{
    pthread_mutex_lock(&c->lock);
    c->value += n;
    c->updates++;
    pthread_mutex_unlock(&c->lock);
}

static inline long counter_get(struct counter *c)
{
    long v;
    pthread_mutex_lock(&c->lock);
    v = c->value;
    pthread_mutex_unlock(&c->lock);
    return v;
}

static inline int counter_take(struct counter *c, long n)
{
    pthread_mutex_lock(&c->lock);
    if (c->value < n) {
        pthread_mutex_unlock(&c->lock);
        return 0;
    }
    c->value -= n;
    c->updates++;
    pthread_mutex_unlock(&c->lock);
    return 1;
}

void *producer(void *arg);

#endif /* COUNTER_H */
