/* Critical sections that read thread-local state: a __thread counter, a pthread_getspecific
 * value reached through a helper (as memcached's LOGGER_LOG does), and errno.  Run on another
 * thread (an RCL server), they would see that thread's values instead. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4
#define ITERS 2000

static pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t worker_key;
static __thread long my_calls;
static long per_worker_sum[NTHREADS];
static long total_calls, errno_seen;

static long worker_id(void)
{
    long *id = pthread_getspecific(worker_key);
    return id ? *id : -1;
}

static void record(void)
{
    pthread_mutex_lock(&tally_lock);
    my_calls++;
    total_calls++;
    long id = worker_id();
    if (id < 0 || id >= NTHREADS) {
        pthread_mutex_unlock(&tally_lock);
        fprintf(stderr, "thread_local_in_region: section ran on a thread without a worker id\n");
        exit(1);
    }
    per_worker_sum[id] += my_calls;
    if (errno == ERANGE)
        errno_seen++;
    pthread_mutex_unlock(&tally_lock);
}

static void *run(void *p)
{
    pthread_setspecific(worker_key, p);
    errno = ERANGE;
    for (int i = 0; i < ITERS; i++)
        record();
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    long ids[NTHREADS];
    pthread_key_create(&worker_key, NULL);
    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    long expected = (long)ITERS * (ITERS + 1) / 2;
    int ok = 1;
    for (int i = 0; i < NTHREADS; i++)
        ok &= per_worker_sum[i] == expected;
    printf("calls=%ld per-worker sums %s errno_seen=%ld\n", total_calls, ok ? "exact" : "WRONG", errno_seen);
    if (!ok || errno_seen != total_calls) {
        fprintf(stderr, "thread_local_in_region: thread-local state seen from the wrong thread\n");
        return 1;
    }
    return 0;
}
