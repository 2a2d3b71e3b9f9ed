/* Lock striping: NSLOTS counters protected by NLOCKS mutexes, slot i is
 * guarded by locks[i % NLOCKS]. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define NSLOTS 64
#define NLOCKS 8
#define ITERS 4000

static pthread_mutex_t locks[NLOCKS];
static long slots[NSLOTS];

static void *run(void *p)
{
    int id = *(int *)p;

    for (int i = 0; i < ITERS; i++) {
        int slot = (i * 13 + id * 5) % NSLOTS;

        pthread_mutex_lock(&locks[slot % NLOCKS]);
        slots[slot] += slot + 1;
        pthread_mutex_unlock(&locks[slot % NLOCKS]);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int ids[NTHREADS];
    long total = 0, expected = 0;

    for (int i = 0; i < NLOCKS; i++)
        pthread_mutex_init(&locks[i], NULL);
    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    for (int t = 0; t < NTHREADS; t++)
        for (int i = 0; i < ITERS; i++)
            expected += (i * 13 + t * 5) % NSLOTS + 1;
    for (int i = 0; i < NSLOTS; i++)
        total += slots[i];
    for (int i = 0; i < NLOCKS; i++)
        pthread_mutex_destroy(&locks[i]);

    printf("total=%ld slot0=%ld slot63=%ld\n", total, slots[0], slots[63]);
    if (total != expected) {
        fprintf(stderr, "lockexpr_striped_array: lost update\n");
        return 1;
    }
    return 0;
}
