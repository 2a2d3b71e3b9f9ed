/* Nested regions: the stats lock is taken inside the queue lock's region
 * (always in that order), and released before the queue lock. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 2500

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long queue_len;
static long enqueued, dequeued, empty_polls;

static void *run(void *p)
{
    int id = *(int *)p;

    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&queue_lock);
        if ((i + id) % 2 == 0) {
            queue_len++;
            pthread_mutex_lock(&stats_lock);
            enqueued++;
            pthread_mutex_unlock(&stats_lock);
        } else if (queue_len > 0) {
            queue_len--;
            pthread_mutex_lock(&stats_lock);
            dequeued++;
            pthread_mutex_unlock(&stats_lock);
        } else {
            pthread_mutex_lock(&stats_lock);
            empty_polls++;
            pthread_mutex_unlock(&stats_lock);
        }
        pthread_mutex_unlock(&queue_lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int ids[NTHREADS];

    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);

    pthread_mutex_lock(&queue_lock);
    pthread_mutex_lock(&stats_lock);
    long ok = enqueued - dequeued == queue_len &&
              dequeued + empty_polls == NTHREADS * ITERS / 2;
    printf("enqueued=%ld consistent=%ld\n", enqueued, ok);
    pthread_mutex_unlock(&stats_lock);
    pthread_mutex_unlock(&queue_lock);
    if (!ok || enqueued != NTHREADS * ITERS / 2) {
        fprintf(stderr, "nested_two_locks: queue and stats disagree\n");
        return 1;
    }
    return 0;
}
