/*
 * Uncontended pthread_mutex_lock + unlock, one thread: ns per pair on a static lock
 * (`uncontended.c:bench_lock`).  `rclify bench interpose` runs it plain and under rclify run's
 * interposer with several specs, alternating, and reports each against plain in the same round.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t bench_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t other_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile long sink;

int main(int argc, char **argv)
{
    long pairs = argc > 1 ? atol(argv[1]) : 2000000;
    pthread_mutex_lock(&other_lock); /* the other lock is used once: a per-lock spec can name it */
    pthread_mutex_unlock(&other_lock);
    for (long i = 0; i < pairs / 10; i++) { /* warm-up: first use, caches */
        pthread_mutex_lock(&bench_lock);
        sink++;
        pthread_mutex_unlock(&bench_lock);
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < pairs; i++) {
        pthread_mutex_lock(&bench_lock);
        sink++;
        pthread_mutex_unlock(&bench_lock);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    printf("%.2f\n", ns / (double)pairs);
    return 0;
}
