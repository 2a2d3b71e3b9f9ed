/* Several threads increment one global counter under one global mutex. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 5000

static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static long sum_of_ids;

static void *worker(void *arg)
{
    long id = (long)arg;

    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&counter_lock);
        counter++;
        sum_of_ids += id;
        pthread_mutex_unlock(&counter_lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];

    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, worker, (void *)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);

    printf("counter=%ld\n", counter);
    printf("sum_of_ids=%ld\n", sum_of_ids);
    if (counter != (long)NTHREADS * ITERS || sum_of_ids != 6L * ITERS) {
        fprintf(stderr, "plain_global_counter: lost updates\n");
        return 1;
    }
    return 0;
}
