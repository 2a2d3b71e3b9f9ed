#ifndef REGISTRY_H
#define REGISTRY_H

#include <pthread.h>

#define REGISTRY_SIZE 32

/* Defined in registry.c; callers in other files lock it directly. */
extern pthread_mutex_t registry_lock;
extern long registry[REGISTRY_SIZE];
extern long registry_writes;

long registry_total(void);

#endif
