/* Shared statistics: the lock is declared here and defined in stats.c without any initializer
 * (a zero-filled pthread mutex is an unlocked default one with glibc), as a lot of C code does. */
#ifndef STATS_H
#define STATS_H
#include <pthread.h>

extern pthread_mutex_t stats_lock;
extern long stats_hits, stats_misses;

void stats_hit(void);
long shard_total(void);
void shard_add(int shard, long n);
long next_ticket(void);

#define SHARDS 4
#endif
