/* Opportunistic updates with pthread_mutex_trylock: on success the shared
 * total is updated in place, on failure the work is kept locally and
 * flushed later under a blocking lock. Successes + fallbacks is exact. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 5000

static pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;
static long total;
static long fast_path, slow_path;

static void *run(void *p)
{
    int id = *(int *)p;
    long pending = 0;
    long misses = 0, hits = 0;

    for (int i = 0; i < ITERS; i++) {
        long v = (i % 10) + id;

        if (pthread_mutex_trylock(&total_lock) == 0) {
            total += v + pending;
            pending = 0;
            hits++;
            pthread_mutex_unlock(&total_lock);
        } else {
            pending += v;
            misses++;
        }
    }
    pthread_mutex_lock(&total_lock);
    total += pending;
    fast_path += hits;
    slow_path += misses;
    pthread_mutex_unlock(&total_lock);
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int ids[NTHREADS];
    long expected = 0;

    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    for (int t = 0; t < NTHREADS; t++)
        for (int i = 0; i < ITERS; i++)
            expected += (i % 10) + t;

    printf("total=%ld attempts=%ld\n", total, fast_path + slow_path);
    if (total != expected || fast_path + slow_path != NTHREADS * ITERS) {
        fprintf(stderr, "trylock_fallback: work lost\n");
        return 1;
    }
    return 0;
}
