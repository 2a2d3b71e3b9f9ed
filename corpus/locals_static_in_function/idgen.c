/* A function-local `static` counter is updated inside the region: it is
 * shared by all threads and must stay one object after extraction. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 3000

static pthread_mutex_t gen_lock = PTHREAD_MUTEX_INITIALIZER;

static long next_serial(int *wrapped)
{
    static long serial = 100;
    static int generation;
    long s;

    pthread_mutex_lock(&gen_lock);
    s = serial++;
    if (serial % 1000 == 0)
        generation++;
    *wrapped = generation;
    pthread_mutex_unlock(&gen_lock);
    return s;
}

static void *run(void *p)
{
    long *sum = p;
    int wrapped = 0;

    for (int i = 0; i < ITERS; i++)
        *sum += next_serial(&wrapped) - 100;
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    long sums[NTHREADS] = {0};
    long total = 0;
    int wrapped = 0;
    long n = (long)NTHREADS * ITERS;

    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, run, &sums[i]);
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        total += sums[i];
    }
    long last = next_serial(&wrapped);

    printf("sum=%ld next=%ld generation=%d\n", total, last, wrapped);
    if (total != n * (n - 1) / 2 || last != 100 + n || wrapped != 12) {
        fprintf(stderr, "locals_static_in_function: serials duplicated\n");
        return 1;
    }
    return 0;
}
