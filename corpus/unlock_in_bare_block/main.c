/* zstd's POOL_thread: a worker locks at the top of its loop, waits for a job, then pops it in a
 * bare block whose const local is used after the block unlocks (to run the job), and relocks in
 * the same block to count it done.  The first section ends inside the block; the block's local is
 * declared before the section and set in it. */
#include <pthread.h>
#include <stdio.h>

#define NWORKERS 3
#define NJOBS 3000
#define QSIZE 16

typedef struct { long value; long weight; } job_t;

static struct {
    pthread_mutex_t m;
    pthread_cond_t not_empty, not_full;
    job_t q[QSIZE];
    int head, count, busy, shutdown;
} pool = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, {{0, 0}}, 0, 0, 0, 0 };

static pthread_mutex_t sum_mutex = PTHREAD_MUTEX_INITIALIZER;
static long sum, done;

static void run(job_t job)
{
    pthread_mutex_lock(&sum_mutex);
    sum += job.value * job.weight;
    pthread_mutex_unlock(&sum_mutex);
}

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&pool.m);
        while (pool.count == 0) {
            if (pool.shutdown) {
                pthread_mutex_unlock(&pool.m);
                return NULL;
            }
            pthread_cond_wait(&pool.not_empty, &pool.m);
        }
        {   job_t const job = pool.q[pool.head];
            const int slot = pool.head;
            pool.head = (pool.head + 1) % QSIZE;
            pool.count--;
            pool.busy++;
            pthread_cond_signal(&pool.not_full);
            pthread_mutex_unlock(&pool.m);

            run(job);
            (void)slot;

            pthread_mutex_lock(&pool.m);
            pool.busy--;
            done++;
            pthread_mutex_unlock(&pool.m);
        }
    }
}

int main(void)
{
    pthread_t t[NWORKERS];
    for (int i = 0; i < NWORKERS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (long v = 1; v <= NJOBS; v++) {
        pthread_mutex_lock(&pool.m);
        while (pool.count == QSIZE)
            pthread_cond_wait(&pool.not_full, &pool.m);
        pool.q[(pool.head + pool.count) % QSIZE] = (job_t){ v, v % 3 };
        pool.count++;
        pthread_cond_signal(&pool.not_empty);
        pthread_mutex_unlock(&pool.m);
    }
    pthread_mutex_lock(&pool.m);
    pool.shutdown = 1;
    pthread_cond_broadcast(&pool.not_empty);
    pthread_mutex_unlock(&pool.m);
    for (int i = 0; i < NWORKERS; i++)
        pthread_join(t[i], NULL);
    long want = 0;
    for (long v = 1; v <= NJOBS; v++)
        want += v * (v % 3);
    printf("sum=%ld done=%ld\n", sum, done);
    if (sum != want || done != NJOBS) {
        fprintf(stderr, "wrong totals\n");
        return 1;
    }
    return 0;
}
