/* A token bucket: when the bucket is empty the consumer drops the lock,
 * prepares a refill, retakes the lock and jumps back to the `retry` label
 * right after its lock: one section with a window, the goto inside it. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#define NTHREADS 4
#define TAKES 1000
#define REFILL 10

static pthread_mutex_t bucket_lock = PTHREAD_MUTEX_INITIALIZER;
static long tokens;
static long refilled, consumed;

/* Stand-in for slow work done without the lock (e.g. asking a server). */
static long prepare_refill(void)
{
    sched_yield();
    return REFILL;
}

static void take_token(void)
{
    long batch;

    pthread_mutex_lock(&bucket_lock);
retry:
    if (tokens == 0) {
        pthread_mutex_unlock(&bucket_lock);
        batch = prepare_refill();
        pthread_mutex_lock(&bucket_lock);
        tokens += batch;
        refilled += batch;
        goto retry;
    }
    tokens--;
    consumed++;
    pthread_mutex_unlock(&bucket_lock);
}

static void *run(void *p)
{
    (void)p;
    for (int i = 0; i < TAKES; i++)
        take_token();
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];

    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, run, NULL);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);

    /* How often refills race varies; the accounting must not. */
    int balanced = refilled == consumed + tokens && refilled % REFILL == 0;
    printf("consumed=%ld balanced=%d\n", consumed, balanced);
    if (consumed != NTHREADS * TAKES || !balanced) {
        fprintf(stderr, "window_goto_retry: token accounting wrong\n");
        return 1;
    }
    return 0;
}
