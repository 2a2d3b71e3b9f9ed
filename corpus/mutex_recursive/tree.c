/* A PTHREAD_MUTEX_RECURSIVE lock: add_many() holds the lock and calls add(),
 * which locks the same mutex again (nested relock by the owner). */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 800

static pthread_mutex_t rlock;
static long total;
static int depth_max;
static int depth;

static void add(long v)
{
    pthread_mutex_lock(&rlock);
    depth++;
    if (depth > depth_max)
        depth_max = depth;
    total += v;
    depth--;
    pthread_mutex_unlock(&rlock);
}

static void add_many(long v, int n)
{
    pthread_mutex_lock(&rlock);
    depth++;
    for (int i = 0; i < n; i++)
        add(v);
    depth--;
    pthread_mutex_unlock(&rlock);
}

static void *run(void *p)
{
    int id = *(int *)p;

    for (int i = 0; i < ITERS; i++) {
        if (i % 2)
            add(id);
        else
            add_many(1, 3);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    pthread_mutexattr_t attr;
    int ids[NTHREADS];

    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&rlock, &attr);
    pthread_mutexattr_destroy(&attr);

    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    pthread_mutex_destroy(&rlock);

    /* odd iterations add id (0+1+2+3 = 6 per 400), even ones add 3 */
    printf("total=%ld max_depth=%d depth=%d\n", total, depth_max, depth);
    if (total != 400L * 6 + 400L * 3 * NTHREADS || depth_max != 2 || depth != 0) {
        fprintf(stderr, "mutex_recursive: nesting broken\n");
        return 1;
    }
    return 0;
}
