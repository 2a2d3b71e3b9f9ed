/* An early exit whose tail ends in a conditional directive: `unlock; #ifndef X ... #endif` at the
 * end of an else block (unbound's ub_stop_bg).  The tail's last statement ends before the #endif,
 * which must move into the caller with it. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ROUNDS 500

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long shared_turns, even_after, odd_after;

static void step(long r)
{
    pthread_mutex_lock(&lock);
    shared_turns++;
    if (r % 2 == 0) {
        pthread_mutex_unlock(&lock);
        __atomic_fetch_add(&even_after, 1, __ATOMIC_RELAXED);
    } else {
        pthread_mutex_unlock(&lock);
#ifndef NOT_DEFINED_ANYWHERE
        if (r % 3 == 0) {
            __atomic_fetch_add(&odd_after, 3, __ATOMIC_RELAXED);
        }
#endif
    }
}

static void *worker(void *arg)
{
    for (long r = 0; r < ROUNDS; r++)
        step(r + (long)arg);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("turns %ld, even %ld, odd multiples of 3 %ld\n", shared_turns, even_after, odd_after);
    return 0;
}
