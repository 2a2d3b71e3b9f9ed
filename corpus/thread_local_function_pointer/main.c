/* A critical section calls a getter through a function pointer; the getter reads a __thread
 * variable.  Run on another thread (an RCL server), the section would add that thread's value
 * (0) instead of its caller's (1): rclify cannot see through the pointer, so the section must
 * stay on its caller's thread.  A second section calls only memcpy/strlen (known to use no
 * thread-local state) and a function of the file: it may run anywhere. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define NTHREADS 6
#define ITERS 1000

static pthread_mutex_t sum_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread long my_weight;
static long sum;
static char last[16];
static long name_bytes;

static long weight(void)
{
    return my_weight;
}

static long (*volatile getter)(void) = weight;

static long twice(long v)
{
    return 2 * v;
}

static void *run(void *arg)
{
    const char *name = arg;
    my_weight = 1;
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&sum_lock);
        sum += getter();
        pthread_mutex_unlock(&sum_lock);

        pthread_mutex_lock(&sum_lock);
        memcpy(last, name, strlen(name) + 1);
        name_bytes += twice((long)strlen(last)) / 2;
        pthread_mutex_unlock(&sum_lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    static const char *names[NTHREADS] = { "ann", "bob", "cy", "dee", "eve", "flo" };
    long expected_bytes = 0;
    for (int i = 0; i < NTHREADS; i++) {
        pthread_create(&threads[i], NULL, run, (void *)names[i]);
        expected_bytes += (long)strlen(names[i]) * ITERS;
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    printf("sum=%ld name_bytes=%ld\n", sum, name_bytes);
    if (sum != (long)NTHREADS * ITERS || name_bytes != expected_bytes) {
        fprintf(stderr, "thread_local_function_pointer: section saw another thread's state\n");
        return 1;
    }
    return 0;
}
