#ifndef STATS_H
#define STATS_H

#include <pthread.h>

struct stats {
    pthread_mutex_t m;
    long entered, left, events;
};

void stats_enter(struct stats *s); /* locks, then counts the entry */
void stats_leave(struct stats *s); /* counts the exit, then unlocks */

#endif
