/* A token bucket: a consumer that finds tokens jumps, holding the lock, to the
 * `take` label inside the region that a refill opens by retaking the lock:
 * a label inside a region targeted from outside it. */
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
    if (tokens > 0)
        goto take; /* holding the lock: into the second region */
    pthread_mutex_unlock(&bucket_lock);
    batch = prepare_refill();
    pthread_mutex_lock(&bucket_lock);
    tokens += batch;
    refilled += batch;
take:
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
        fprintf(stderr, "refuse_label_from_outside: token accounting wrong\n");
        return 1;
    }
    return 0;
}
