#include "stats.h"

pthread_mutex_t stats_lock; /* zero-initialised, never passed to pthread_mutex_init */
long stats_hits, stats_misses;

static pthread_mutex_t shard_locks[SHARDS]; /* zero-initialised array */
static long shard_sums[SHARDS];

void stats_hit(void)
{
    pthread_mutex_lock(&stats_lock);
    stats_hits++;
    pthread_mutex_unlock(&stats_lock);
}

void shard_add(int shard, long n)
{
    pthread_mutex_lock(&shard_locks[shard]);
    shard_sums[shard] += n;
    pthread_mutex_unlock(&shard_locks[shard]);
}

long shard_total(void)
{
    long total = 0;
    for (int i = 0; i < SHARDS; i++) {
        pthread_mutex_lock(&shard_locks[i]);
        total += shard_sums[i];
        pthread_mutex_unlock(&shard_locks[i]);
    }
    return total;
}

long next_ticket(void)
{
    static pthread_mutex_t ticket_lock; /* function-local static, zero-initialised */
    static long ticket;
    pthread_mutex_lock(&ticket_lock);
    long t = ++ticket;
    pthread_mutex_unlock(&ticket_lock);
    return t;
}
