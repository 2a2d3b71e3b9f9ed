/* A mutex declared `static` inside the function that uses it. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 4000

static long unique_id(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static long last;
    long id;

    pthread_mutex_lock(&lock);
    id = ++last;
    pthread_mutex_unlock(&lock);
    return id;
}

static void *run(void *p)
{
    long *sum = p;

    for (int i = 0; i < ITERS; i++)
        *sum += unique_id();
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    long sums[NTHREADS] = {0};
    long total = 0, n = (long)NTHREADS * ITERS;

    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, run, &sums[i]);
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        total += sums[i];
    }
    long next = unique_id();

    printf("sum=%ld next=%ld\n", total, next);
    if (total != n * (n + 1) / 2 || next != n + 1) {
        fprintf(stderr, "lockexpr_static_local_lock: duplicate ids\n");
        return 1;
    }
    return 0;
}
