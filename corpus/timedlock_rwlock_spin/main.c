/* A job queue whose producers give up after a deadline (pthread_mutex_timedlock, and
 * pthread_mutex_clocklock on the monotonic clock) while consumers take the same lock normally;
 * a configuration read under a reader-writer lock and a statistics counter under a spinlock sit
 * in the same file.  One producer times out for certain: main holds the queue lock until it has
 * given up. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PRODUCERS 2
#define CONSUMERS 2
#define JOBS 500

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static long queued, taken, sum_taken;

static pthread_rwlock_t config_lock = PTHREAD_RWLOCK_INITIALIZER;
static int config_weight = 1;

static pthread_spinlock_t stats_lock;
static long stats_events;

static void deadline_in(struct timespec *ts, clockid_t clock, long ms)
{
    clock_gettime(clock, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void count_event(void)
{
    pthread_spin_lock(&stats_lock);
    stats_events++;
    pthread_spin_unlock(&stats_lock);
}

static int weight(void)
{
    pthread_rwlock_rdlock(&config_lock);
    int w = config_weight;
    pthread_rwlock_unlock(&config_lock);
    return w;
}

static void *producer(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < JOBS; i++) {
        struct timespec ts;
        int rc;
#ifndef __SANITIZE_THREAD__ /* gcc 12's ThreadSanitizer does not intercept pthread_mutex_clocklock */
        if (id == 1) {
            deadline_in(&ts, CLOCK_MONOTONIC, 10000);
            rc = pthread_mutex_clocklock(&queue_lock, CLOCK_MONOTONIC, &ts);
        } else
#endif
        {
            deadline_in(&ts, CLOCK_REALTIME, 10000);
            rc = pthread_mutex_timedlock(&queue_lock, &ts);
        }
        if (rc != 0) {
            fprintf(stderr, "producer %ld: lock failed: %d\n", id, rc);
            exit(1);
        }
        queued++;
        pthread_mutex_unlock(&queue_lock);
        count_event();
    }
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    for (;;) {
        int w = weight();
        pthread_mutex_lock(&queue_lock);
        if (taken == (long)PRODUCERS * JOBS) {
            pthread_mutex_unlock(&queue_lock);
            return NULL;
        }
        if (taken < queued) {
            taken++;
            sum_taken += w;
        }
        pthread_mutex_unlock(&queue_lock);
        count_event();
    }
}

static void *impatient(void *arg)
{
    int *result = arg;
    struct timespec ts;
    deadline_in(&ts, CLOCK_REALTIME, 20);
    *result = pthread_mutex_timedlock(&queue_lock, &ts); /* main holds it: times out */
    if (*result == 0)
        pthread_mutex_unlock(&queue_lock);
    return NULL;
}

int main(void)
{
    pthread_t p[PRODUCERS], c[CONSUMERS], late;
    int late_rc = -1;
    pthread_spin_init(&stats_lock, PTHREAD_PROCESS_PRIVATE);

    pthread_mutex_lock(&queue_lock);
    pthread_create(&late, NULL, impatient, &late_rc);
    pthread_join(late, NULL);
    pthread_mutex_unlock(&queue_lock);

    pthread_rwlock_wrlock(&config_lock);
    config_weight = 3;
    pthread_rwlock_unlock(&config_lock);

    for (long i = 0; i < PRODUCERS; i++)
        pthread_create(&p[i], NULL, producer, (void *)i);
    for (long i = 0; i < CONSUMERS; i++)
        pthread_create(&c[i], NULL, consumer, NULL);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(p[i], NULL);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(c[i], NULL);
    pthread_spin_destroy(&stats_lock);

    int ok = late_rc == ETIMEDOUT && taken == (long)PRODUCERS * JOBS && sum_taken == 3L * taken
             && stats_events >= 2L * PRODUCERS * JOBS;
    printf("late producer timed out: %s\n", late_rc == ETIMEDOUT ? "yes" : "no");
    printf("queued %ld taken %ld weighted %ld\n", queued, taken, sum_taken);
    printf("events at least %d: %s\n", 2 * PRODUCERS * JOBS, stats_events >= 2L * PRODUCERS * JOBS ? "yes" : "no");
    if (!ok) {
        fprintf(stderr, "check failed\n");
        return 1;
    }
    return 0;
}
