/* A statement macro that takes the lock, runs its body argument and releases the lock:
 * WITH_LOCK(l, x++);  The section is inside the macro's argument list: rclify cannot move it
 * into a function without rewriting the macro, so the region is left as lock/unlock calls. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 5000

#define WITH_LOCK(m, body) do { pthread_mutex_lock(&(m)); body; pthread_mutex_unlock(&(m)); } while (0)

static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t sum_lock = PTHREAD_MUTEX_INITIALIZER;
static long count, sum;

static void *run(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        WITH_LOCK(count_lock, count++);
        pthread_mutex_lock(&sum_lock);
        sum += id;
        pthread_mutex_unlock(&sum_lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, run, (void *)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    printf("count=%ld sum=%ld\n", count, sum);
    if (count != (long)NTHREADS * ITERS || sum != (long)ITERS * (0 + 1 + 2 + 3)) {
        fprintf(stderr, "macro_with_lock_statement: lost updates\n");
        return 1;
    }
    return 0;
}
