/* A producer/consumer queue locked through object-like aliases, with stats under a second lock
   taken through nested checked macros and a pass-through macro. */
#include "queue.h"

#define ITEMS 4000

static struct queue q;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long consumed, produced, waits;

static void *producer(void *arg)
{
    long base = (long)arg;
    for (long i = 1; i <= ITEMS; i++) {
        my_mutex_lock(&q.mutex);
        while (q.tail - q.head == 64) {
            my_mutex_unlock(&q.mutex);
            my_mutex_lock(&q.mutex);
        }
        q.items[q.tail++ % 64] = base + i;
        my_cond_signal(&q.nonempty);
        my_mutex_unlock(&q.mutex);
        LOCK(&stats_lock);
        produced++;
        UNLOCK(&stats_lock);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    for (int n = 0; n < ITEMS; n++) {
        long v;
        int waited = 0;
        my_mutex_lock(&q.mutex);
        while (q.tail == q.head) {
            waited = 1;
            my_cond_wait(&q.nonempty, &q.mutex);
        }
        v = q.items[q.head++ % 64];
        my_mutex_unlock(&q.mutex);
        TAKE(&stats_lock);
        consumed += v;
        waits += waited > 2;
        GIVE(&stats_lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t p, c;
    pthread_mutex_init(&q.mutex, NULL);
    pthread_cond_init(&q.nonempty, NULL);
    pthread_create(&p, NULL, producer, (void *)1000000L);
    pthread_create(&c, NULL, consumer, NULL);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    printf("produced=%ld consumed=%ld waits=%ld\n", produced, consumed, waits);
    pthread_mutex_destroy(&q.mutex);
    return consumed == ITEMS * 1000000L + (long)ITEMS * (ITEMS + 1) / 2 ? 0 : 1;
}
