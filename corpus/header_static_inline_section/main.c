#include <stdio.h>
#include "counter.h"

#define NPRODUCERS 2
#define NCONSUMERS 2
#define ITERS 4000

static struct counter stock;
static long taken[NCONSUMERS];

static void *consumer(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        taken[id] += counter_take(&stock, 2);
    return NULL;
}

int main(void)
{
    pthread_t threads[NPRODUCERS + NCONSUMERS];
    pthread_mutex_init(&stock.lock, NULL);
    for (long i = 0; i < NPRODUCERS; i++)
        pthread_create(&threads[i], NULL, producer, &stock);
    for (long i = 0; i < NCONSUMERS; i++)
        pthread_create(&threads[NPRODUCERS + i], NULL, consumer, (void *)i);
    for (int i = 0; i < NPRODUCERS + NCONSUMERS; i++)
        pthread_join(threads[i], NULL);
    long got = taken[0] + taken[1];
    long left = counter_get(&stock);
    int balanced = left == (long)NPRODUCERS * ITERS * 3 - got * 2;
    int counted = stock.updates == NPRODUCERS * ITERS + got;
    printf("produced=%d balance %s, updates %s\n", NPRODUCERS * ITERS * 3, balanced ? "exact" : "WRONG",
           counted ? "exact" : "WRONG");
    if (!balanced || !counted) {
        fprintf(stderr, "header_static_inline_section: lost updates\n");
        return 1;
    }
    pthread_mutex_destroy(&stock.lock);
    return 0;
}
