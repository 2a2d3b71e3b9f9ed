/* Eight locks created through four init macros: a zstd-style thr_mutex_init() (a macro in the
 * release build, a function under THREADS_DEBUG) for a static lock and a heap struct's lock,
 * BUCKET_INIT() for an array of four buckets, OBJECT_LOCK_INIT() for a logging lock,
 * QUIET_LOCK_INIT() (no value) for the lock counting finished workers. */
#include <stdio.h>
#include <stdlib.h>

#include "threads.h"

#define THREADS 4
#define ROUNDS 2500
#define BUCKETS 4

static pthread_mutex_t stats_lock;
static long stats_ops;

struct pool {
    pthread_mutex_t mutex;
    long taken;
};
static struct pool *pool;

struct bucket {
    pthread_mutex_t lock;
    long count;
};
static struct bucket buckets[BUCKETS];

static pthread_mutex_t log_lock;
static long log_lines;

static pthread_mutex_t done_lock;
static int done_workers;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (long i = 0; i < ROUNDS; i++) {
        thr_mutex_lock(&stats_lock);
        stats_ops++;
        thr_mutex_unlock(&stats_lock);

        thr_mutex_lock(&pool->mutex);
        pool->taken += id + 1;
        thr_mutex_unlock(&pool->mutex);

        struct bucket *b = &buckets[(id + i) % BUCKETS];
        pthread_mutex_lock(&b->lock);
        b->count++;
        pthread_mutex_unlock(&b->lock);

        if (i % 10 == 0) {
            pthread_mutex_lock(&log_lock);
            log_lines++;
            pthread_mutex_unlock(&log_lock);
        }
    }
    pthread_mutex_lock(&done_lock);
    done_workers++;
    pthread_mutex_unlock(&done_lock);
    return NULL;
}

static int setup(void)
{
    int err = thr_mutex_init(&stats_lock, NULL);
    pool = calloc(1, sizeof *pool);
    if (pool == NULL)
        return -1;
    err |= thr_mutex_init(&pool->mutex, NULL);
    for (int k = 0; k < BUCKETS; k++)
        err |= BUCKET_INIT(&buckets[k]);
    err |= OBJECT_LOCK_INIT(log_lock);
    QUIET_LOCK_INIT(&done_lock);
    return err;
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

    long counted = 0;
    for (int k = 0; k < BUCKETS; k++)
        counted += buckets[k].count;
    printf("stats_ops=%ld\n", stats_ops);
    printf("taken=%ld\n", pool->taken);
    printf("buckets=%ld\n", counted);
    printf("log_lines=%ld\n", log_lines);
    printf("done_workers=%d\n", done_workers);
    if (stats_ops != (long)THREADS * ROUNDS || pool->taken != (long)ROUNDS * THREADS * (THREADS + 1) / 2 ||
        counted != (long)THREADS * ROUNDS || log_lines != (long)THREADS * (ROUNDS / 10) || done_workers != THREADS) {
        fprintf(stderr, "wrong totals\n");
        return 1;
    }
    free(pool);
    return 0;
}
