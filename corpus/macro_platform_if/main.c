#include "locks.h"

#define NTHREADS 4
#define ITERS 4000

static lock_t count_lock;
static long count, evens;

static void *run(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        LOCK(count_lock);
        count++;
        if (i % 2 == 0) {
            evens++;
            UNLOCK(count_lock);
            continue;
        }
        UNLOCK(count_lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    pthread_mutex_init(&count_lock, NULL);
    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, run, (void *)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    printf("count=%ld evens=%ld debug=%d\n", count, evens, LOCK_DEBUG);
    if (count != (long)NTHREADS * ITERS || evens != (long)NTHREADS * ITERS / 2) {
        fprintf(stderr, "macro_platform_if: lost updates\n");
        return 1;
    }
    return 0;
}
