/* <stdatomic.h> counters beside a mutex, in the same functions as its sections: the analysis
   must parse them (gcc's stdatomic.h is written for gcc only). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

static pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_long calls;
static atomic_int high_water;
static long total;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < 2000; i++) {
        atomic_fetch_add(&calls, 1);
        pthread_mutex_lock(&total_lock);
        total += id;
        int seen = atomic_load_explicit(&high_water, memory_order_relaxed);
        if (i > seen)
            atomic_store(&high_water, i);
        pthread_mutex_unlock(&total_lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[3];
    for (long t = 0; t < 3; t++)
        pthread_create(&threads[t], NULL, worker, (void *)(t + 1));
    for (int t = 0; t < 3; t++)
        pthread_join(threads[t], NULL);
    printf("calls=%ld total=%ld high_water=%d\n", atomic_load(&calls), total, atomic_load(&high_water));
    return 0;
}
