#include <pthread.h>
#include <stdio.h>
#include "synch.h"

#define THREADS 4
#define ROUNDS 5000

struct queue {
    mr_lock_t lock;
    long items;
    long puts;
};

static struct queue queue;

static void queue_put(struct queue *q, long n)
{
    lock_acquire(q->lock);
    q->items += n;
    q->puts++;
    lock_release(q->lock);
}

static long queue_take(struct queue *q, long n)
{
    long taken;
    lock_acquire(q->lock);
    taken = q->items < n ? q->items : n;
    q->items -= taken;
    lock_release(q->lock);
    return taken;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    long got = 0;
    for (long i = 0; i < ROUNDS; i++) {
        queue_put(&queue, id + 2);
        got += queue_take(&queue, 1);
    }
    return (void *)got;
}

int main(void)
{
    pthread_t threads[THREADS];
    long taken = 0;
    queue.lock = lock_alloc();
    for (long t = 0; t < THREADS; t++)
        pthread_create(&threads[t], NULL, worker, (void *)t);
    for (int t = 0; t < THREADS; t++) {
        void *got;
        pthread_join(threads[t], &got);
        taken += (long)got;
    }
    lock_free(queue.lock);
    printf("items=%ld taken=%ld puts=%ld\n", queue.items, taken, queue.puts);
    return queue.items + taken == (long)ROUNDS * (2 + 3 + 4 + 5) && queue.puts == (long)ROUNDS * THREADS ? 0 : 1;
}
