/* Lock wrappers that assert their argument before the call (the MapReduce library's
 * lock_acquire(l): `assert(l);` then the lock; lock_release(l) the same before the unlock). */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ROUNDS 5000

struct queue {
    pthread_mutex_t lock;
    long items;
    long puts;
};

static struct queue queue = {PTHREAD_MUTEX_INITIALIZER, 0, 0};

static void lock_acquire(pthread_mutex_t *l)
{
    assert(l != NULL);
    pthread_mutex_lock(l);
}

static void lock_release(pthread_mutex_t *l)
{
    assert(l != NULL);
    pthread_mutex_unlock(l);
}

static long queue_put(struct queue *q, long n)
{
    long now;
    lock_acquire(&q->lock);
    q->items += n;
    q->puts++;
    now = q->items;
    lock_release(&q->lock);
    return now;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (long i = 0; i < ROUNDS; i++)
        queue_put(&queue, id + 1);
    return NULL;
}

int main(void)
{
    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; t++)
        pthread_create(&threads[t], NULL, worker, (void *)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    printf("items=%ld\n", queue.items);
    printf("puts=%ld\n", queue.puts);
    return queue.items == (long)ROUNDS * THREADS * (THREADS + 1) / 2 && queue.puts == (long)ROUNDS * THREADS ? 0 : 1;
}
