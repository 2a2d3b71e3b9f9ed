/* Struct locals: a snapshot of the shared stats is copied by value inside
 * the region, a local struct is modified field by field and then stored. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 2500

struct stats { long hits; long misses; long bytes; };
struct point { int x; int y; };

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stats global_stats;
static struct point last_point;

struct worker { int id; long max_hits_seen; long xy_sum; };

static void *run(void *p)
{
    struct worker *w = p;
    struct stats snap = { 0, 0, 0 };
    struct point pt = { w->id, 0 };
    long xy_sum = 0;

    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&stats_lock);
        if (i % 4 == 0)
            global_stats.misses++;
        else
            global_stats.hits++;
        global_stats.bytes += 10;
        snap = global_stats;           /* whole-struct copy into a local */
        pt.y = i;                      /* local struct modified in place */
        pt.x += 1;
        last_point = pt;               /* and copied out by value */
        pthread_mutex_unlock(&stats_lock);

        if (snap.hits > w->max_hits_seen)
            w->max_hits_seen = snap.hits;
        if (snap.bytes != 10 * (snap.hits + snap.misses))
            return p;
        xy_sum += pt.x - pt.y;
    }
    w->xy_sum = xy_sum;
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    struct worker workers[NTHREADS];
    long xy = 0;
    int failed = 0;

    for (int i = 0; i < NTHREADS; i++) {
        workers[i] = (struct worker){ .id = i };
        pthread_create(&threads[i], NULL, run, &workers[i]);
    }
    for (int i = 0; i < NTHREADS; i++) {
        void *ret;
        pthread_join(threads[i], &ret);
        failed |= ret != NULL;
        xy += workers[i].xy_sum;
    }
    for (int i = 0; i < NTHREADS; i++)
        failed |= workers[i].max_hits_seen > global_stats.hits;

    printf("hits=%ld misses=%ld bytes=%ld xy_sum=%ld last_y=%d\n",
           global_stats.hits, global_stats.misses, global_stats.bytes, xy,
           last_point.y);
    if (failed || global_stats.hits + global_stats.misses != NTHREADS * ITERS) {
        fprintf(stderr, "locals_struct_by_value: torn snapshot or lost update\n");
        return 1;
    }
    return 0;
}
