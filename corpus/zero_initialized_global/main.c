/* Several threads take a zero-initialised global lock (declared in stats.h, defined in stats.c
 * with no initializer and no pthread_mutex_init), a zero-initialised array of shard locks and a
 * function-local static one. */
#include <stdio.h>
#include "stats.h"

#define THREADS 4
#define ROUNDS 2000

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ROUNDS; i++) {
        stats_hit();
        pthread_mutex_lock(&stats_lock);
        if (i % 3 == 0)
            stats_misses++;
        pthread_mutex_unlock(&stats_lock);
        shard_add((int)((id + i) % SHARDS), i);
        next_ticket();
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long expect_sum = (long)THREADS * ROUNDS * (ROUNDS - 1) / 2;
    long ticket = next_ticket();
    printf("hits %ld misses %ld\n", stats_hits, stats_misses);
    printf("shard total %ld (expected %ld)\n", shard_total(), expect_sum);
    printf("last ticket %ld\n", ticket);
    if (stats_hits != (long)THREADS * ROUNDS || shard_total() != expect_sum || ticket != (long)THREADS * ROUNDS + 1) {
        fprintf(stderr, "check failed\n");
        return 1;
    }
    return 0;
}
