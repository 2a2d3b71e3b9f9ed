/*
 * Uncontended pthread_mutex_lock + unlock, one thread: ns per pair on a static lock
 * (`uncontended.c:bench_lock`).  `rclify bench interpose` runs it plain and under rclify run's
 * interposer with several specs, alternating, and reports each against plain in the same round.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef RCL_DIRECT
/* The same loop on the runtime linked in (a transformed program's lock form), the algorithm from
 * RCLIFY_LOCKS: what the algorithm costs without the interposer. */
#include "rclify.h"
#define CONFIG(id) RCL_LOCK_CONFIG(id, RCL_ALG_POSIX, 0, -1)
static rcl_mutex_t bench_lock = RCL_MUTEX_INITIALIZER(CONFIG("uncontended.c:bench_lock"));
static rcl_mutex_t other_lock = RCL_MUTEX_INITIALIZER(CONFIG("uncontended.c:other_lock"));
#define pthread_mutex_lock rcl_mutex_lock
#define pthread_mutex_unlock rcl_mutex_unlock
#else
static pthread_mutex_t bench_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t other_lock = PTHREAD_MUTEX_INITIALIZER;
#endif
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
