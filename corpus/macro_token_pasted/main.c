/* Lock macros that build the lock's name by token pasting: LOCKED(stats) locks &stats_lock. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 5000

#define LOCKED(name) pthread_mutex_lock(&name##_lock)
#define UNLOCKED(name) pthread_mutex_unlock(&name##_lock)
#define SHARD_LOCKED(s, i) do { pthread_mutex_lock(&s##_locks[i]); } while (0)
#define SHARD_UNLOCKED(s, i) do { pthread_mutex_unlock(&s##_locks[i]); } while (0)

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t shard_locks[2] = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER };
static long hits, misses, queued, shard_count[2];

static void *run(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        LOCKED(stats);
        if (i % 3 == 0)
            misses++;
        else
            hits++;
        UNLOCKED(stats);

        LOCKED(queue);
        queued += id;
        UNLOCKED(queue);

        int s = (i + (int)id) % 2;
        SHARD_LOCKED(shard, s);
        shard_count[s]++;
        SHARD_UNLOCKED(shard, s);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, run, (void *)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    printf("hits=%ld misses=%ld queued=%ld shards=%ld+%ld\n", hits, misses, queued, shard_count[0], shard_count[1]);
    long total = (long)NTHREADS * ITERS;
    if (hits + misses != total || queued != (long)ITERS * (0 + 1 + 2 + 3) || shard_count[0] + shard_count[1] != total) {
        fprintf(stderr, "macro_token_pasted: lost updates\n");
        return 1;
    }
    return 0;
}
