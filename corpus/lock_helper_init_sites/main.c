/* Five locks created through two helpers: my_mutex_init() for three of them (a static variable,
 * a field of a file-scope struct, a field of a heap struct), new_lock() for two counters. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "lockutil.h"

#define THREADS 4
#define ROUNDS 3000

static pthread_mutex_t stats_lock;
static long stats_ops;

static struct {
    pthread_mutex_t lock;
    long items[8];
} queue;

struct table {
    pthread_mutex_t lock;
    long sum;
};
static struct table *tbl;

static struct counter_lock *hits, *misses;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (long i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&stats_lock);
        stats_ops++;
        pthread_mutex_unlock(&stats_lock);

        pthread_mutex_lock(&queue.lock);
        queue.items[(id + i) % 8] += 1;
        pthread_mutex_unlock(&queue.lock);

        pthread_mutex_lock(&tbl->lock);
        tbl->sum += i;
        pthread_mutex_unlock(&tbl->lock);

        struct counter_lock *c = i % 3 == 0 ? hits : misses;
        pthread_mutex_lock(&c->m);
        c->value++;
        pthread_mutex_unlock(&c->m);
    }
    return NULL;
}

static int setup(void)
{
    if (my_mutex_init(&stats_lock) != 0)
        return -1;
    if (my_mutex_init(&queue.lock) != 0)
        return -1;
    tbl = calloc(1, sizeof *tbl);
    if (tbl == NULL || my_mutex_init(&tbl->lock) != 0)
        return -1;
    hits = new_lock(0);
    misses = new_lock(100);
    return hits && misses ? 0 : -1;
}

int main(void)
{
    pthread_t threads[THREADS];
    if (setup() != 0) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }
    for (long t = 0; t < THREADS; t++)
        pthread_create(&threads[t], NULL, worker, (void *)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);

    long queued = 0;
    for (int k = 0; k < 8; k++)
        queued += queue.items[k];
    printf("stats_ops=%ld\n", stats_ops);
    printf("queued=%ld\n", queued);
    printf("sum=%ld\n", tbl->sum);
    printf("hits=%ld misses=%ld\n", hits->value, misses->value);

    long want_sum = (long)THREADS * ROUNDS * (ROUNDS - 1) / 2;
    long want_hits = (long)THREADS * ((ROUNDS + 2) / 3);
    if (stats_ops != (long)THREADS * ROUNDS || queued != (long)THREADS * ROUNDS || tbl->sum != want_sum ||
        hits->value != want_hits || misses->value != 100 + (long)THREADS * ROUNDS - want_hits) {
        fprintf(stderr, "wrong totals\n");
        return 1;
    }
    free_lock(hits);
    free_lock(misses);
    pthread_mutex_destroy(&tbl->lock);
    free(tbl);
    return 0;
}
