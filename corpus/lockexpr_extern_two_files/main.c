/* The lock is defined in registry.c and used through an `extern`
 * declaration in registry.h from this file. */
#include <stdio.h>
#include "registry.h"

#define NTHREADS 4
#define ITERS 3000

static void *run(void *p)
{
    int id = *(int *)p;

    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&registry_lock);
        registry[(id * 7 + i) % REGISTRY_SIZE] += 2;
        registry_writes++;
        pthread_mutex_unlock(&registry_lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int ids[NTHREADS];

    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);

    long total = registry_total();
    printf("total=%ld writes=%ld\n", total, registry_writes);
    if (total != 2L * NTHREADS * ITERS || registry_writes != NTHREADS * ITERS) {
        fprintf(stderr, "lockexpr_extern_two_files: lost update\n");
        return 1;
    }
    return 0;
}
