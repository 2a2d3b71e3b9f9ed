/* Lock calls written alone in braces, the way a macro expansion such as
 * `#define TBL_LOCK(t, i) {pthread_mutex_lock(&((t)->locks[i]));}` leaves
 * them in preprocessed sources. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4
#define NBUCKETS 8
#define ITERS 3000

struct table {
    pthread_mutex_t locks[NBUCKETS];
    long sums[NBUCKETS];
    int counts[NBUCKETS];
};

static struct table *tbl;

static void *run(void *p)
{
    int id = *(int *)p;

    for (int n = 0; n < ITERS; n++) {
        int i = (n * 3 + id) % NBUCKETS;
        {pthread_mutex_lock(&(tbl->locks[i]));}
        tbl->sums[i] += n;
        tbl->counts[i]++;
        {pthread_mutex_unlock(&(tbl->locks[i]));}
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int ids[NTHREADS];
    long sum = 0;
    int count = 0;

    tbl = calloc(1, sizeof(*tbl));
    if (tbl == NULL)
        return 1;
    for (int i = 0; i < NBUCKETS; i++)
        pthread_mutex_init(&tbl->locks[i], NULL);
    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < NBUCKETS; i++) {
        sum += tbl->sums[i];
        count += tbl->counts[i];
        pthread_mutex_destroy(&tbl->locks[i]);
    }
    free(tbl);

    printf("count=%d sum=%ld\n", count, sum);
    if (count != NTHREADS * ITERS ||
        sum != (long)NTHREADS * ITERS * (ITERS - 1) / 2) {
        fprintf(stderr, "macro_bare_braces: lost update\n");
        return 1;
    }
    return 0;
}
