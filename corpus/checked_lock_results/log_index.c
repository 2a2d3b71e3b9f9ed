/* Lock and unlock results are checked by the caller, as careful code does
 * (outside assert(), which NDEBUG would compile away). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 4
#define ITERS 2500

static pthread_mutex_t index_lock = PTHREAD_MUTEX_INITIALIZER;
static long entries;
static long offset_sum;

static long append_entry(int len)
{
    long off;
    int rc;

    if (pthread_mutex_lock(&index_lock) != 0)
        abort();
    off = entries * 16 + len;
    entries++;
    offset_sum += off - len;
    rc = pthread_mutex_unlock(&index_lock);
    if (rc != 0) {
        fprintf(stderr, "unlock: %s\n", strerror(rc));
        exit(1);
    }
    return off - len;
}

static int entry_count(long *out)
{
    int err = pthread_mutex_lock(&index_lock);
    if (err)
        return err;
    *out = entries;
    err = pthread_mutex_unlock(&index_lock);
    return err;
}

static void *run(void *p)
{
    long *sum = p;

    for (int i = 0; i < ITERS; i++)
        *sum += append_entry(i % 10) / 16;
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    long sums[NTHREADS] = {0};
    long total = 0, count = 0, n = (long)NTHREADS * ITERS;

    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, run, &sums[i]);
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        total += sums[i];
    }
    if (entry_count(&count) != 0) {
        fprintf(stderr, "checked_lock_results: entry_count failed\n");
        return 1;
    }

    printf("entries=%ld index_sum=%ld offset_sum=%ld\n", count, total, offset_sum);
    if (count != n || total != n * (n - 1) / 2 || offset_sum != 16 * total) {
        fprintf(stderr, "checked_lock_results: index corrupted\n");
        return 1;
    }
    return 0;
}
