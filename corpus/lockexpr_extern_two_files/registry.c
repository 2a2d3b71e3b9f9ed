#include "registry.h"

pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
long registry[REGISTRY_SIZE];
long registry_writes;

long registry_total(void)
{
    long total = 0;

    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < REGISTRY_SIZE; i++)
        total += registry[i];
    pthread_mutex_unlock(&registry_lock);
    return total;
}
