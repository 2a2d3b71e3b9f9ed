/* An unlock wrapper that publishes the queue's state and wakes the waiters before it unlocks:
 *   q->ready = q->items > 0; q->publishes++; pthread_cond_broadcast(&q->cv); pthread_mutex_unlock(&q->m);
 * That work is part of every section the wrapper closes (the final unlock and an early exit). */
#include <stdio.h>
#include "stats.h"

#define PRODUCERS 2
#define CONSUMERS 2
#define ITEMS 3000 /* per producer, and per consumer */

struct queue {
    pthread_mutex_t m;
    pthread_cond_t cv;
    int items;
    int ready; /* items > 0, as published by the last unlock */
    long produced, consumed, publishes;
};

static struct queue q = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0 };
static struct stats stats = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 };
static long empty_tries;

static void queue_lock(struct queue *qu)
{
    pthread_mutex_lock(&qu->m);
}

static void queue_unlock_publish(struct queue *qu)
{
    qu->ready = qu->items > 0;
    qu->publishes++;
    pthread_cond_broadcast(&qu->cv);
    pthread_mutex_unlock(&qu->m);
}

static int try_take(struct queue *qu)
{
    queue_lock(qu);
    if (!qu->ready) {
        empty_tries++;
        queue_unlock_publish(qu);
        return 0;
    }
    qu->items--;
    qu->consumed++;
    queue_unlock_publish(qu);
    return 1;
}

static void take(struct queue *qu)
{
    queue_lock(qu);
    while (!qu->ready)
        pthread_cond_wait(&qu->cv, &qu->m);
    qu->items--;
    qu->consumed++;
    queue_unlock_publish(qu);
}

/* takes every item left (none, once the threads are done); each branch ends the section */
static long drain(struct queue *qu)
{
    long n;
    queue_lock(qu);
    n = qu->items;
    if (n == 0)
        queue_unlock_publish(qu);
    else {
        qu->items = 0;
        qu->consumed += n;
        queue_unlock_publish(qu);
    }
    return n;
}

static void *producer(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITEMS; i++) {
        queue_lock(&q);
        q.items++;
        q.produced++;
        queue_unlock_publish(&q);
    }
    stats_enter(&stats);
    stats.events += ITEMS;
    stats_leave(&stats);
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITEMS; i++) {
        if (!try_take(&q))
            take(&q);
    }
    stats_enter(&stats);
    stats.events += ITEMS;
    stats_leave(&stats);
    return NULL;
}

int main(void)
{
    pthread_t threads[PRODUCERS + CONSUMERS];
    for (int i = 0; i < PRODUCERS; i++)
        pthread_create(&threads[i], NULL, producer, NULL);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_create(&threads[PRODUCERS + i], NULL, consumer, NULL);
    for (int i = 0; i < PRODUCERS + CONSUMERS; i++)
        pthread_join(threads[i], NULL);
    long drained = drain(&q);
    /* every section published once: one per production, one per try, one per blocking take, the drain */
    long expected_publishes = q.produced + q.consumed + empty_tries + 1;
    printf("produced=%ld consumed=%ld items=%d ready=%d entered=%ld left=%ld events=%ld\n", q.produced, q.consumed,
           q.items, q.ready, stats.entered, stats.left, stats.events);
    if (drained != 0 || q.produced != (long)PRODUCERS * ITEMS || q.consumed != q.produced || q.items != 0 || q.ready
        || q.publishes != expected_publishes || stats.entered != PRODUCERS + CONSUMERS
        || stats.left != stats.entered || stats.events != (long)(PRODUCERS + CONSUMERS) * ITEMS) {
        fprintf(stderr, "wrapper_unlock_does_work: inconsistent (publishes=%ld, expected %ld)\n", q.publishes,
                expected_publishes);
        return 1;
    }
    return 0;
}
