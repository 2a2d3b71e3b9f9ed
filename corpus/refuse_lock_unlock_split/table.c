/* The lock is taken in lock_table() and released in unlock_table(); each
 * also does bookkeeping, and callers run their critical code in between. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 2000
#define NROWS 32

struct table {
    pthread_mutex_t lock;
    pthread_cond_t idle;
    int flushing;
    long rows[NROWS];
    unsigned long epoch;
    int dirty;
    long flushes;
};

static struct table tbl = { .lock = PTHREAD_MUTEX_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER };

/* once locked, waits until no flush is under way (none is, in this program): a condvar wait,
 * which rclify does not copy into sections, so this is no lock wrapper it reads through */
static void lock_table(struct table *t)
{
    pthread_mutex_lock(&t->lock);
    while (t->flushing)
        pthread_cond_wait(&t->idle, &t->lock);
    t->epoch++;
}

static void unlock_table(struct table *t)
{
    if (t->dirty) {
        t->flushes++;
        t->dirty = 0;
    }
    pthread_mutex_unlock(&t->lock);
}

static void *run(void *p)
{
    int id = *(int *)p;

    for (int i = 0; i < ITERS; i++) {
        int row = (i * 7 + id) % NROWS;

        lock_table(&tbl);
        tbl.rows[row] += 2;
        if (i % 4 == 0)
            tbl.dirty = 1;
        unlock_table(&tbl);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int ids[NTHREADS];
    long sum = 0;

    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);

    lock_table(&tbl);
    for (int r = 0; r < NROWS; r++)
        sum += tbl.rows[r];
    unsigned long epoch = tbl.epoch;
    long flushes = tbl.flushes;
    unlock_table(&tbl);

    printf("sum=%ld epoch=%lu flushes=%ld\n", sum, epoch, flushes);
    if (sum != 2L * NTHREADS * ITERS || epoch != NTHREADS * ITERS + 1 ||
        flushes != NTHREADS * ITERS / 4) {
        fprintf(stderr, "refuse_lock_unlock_split: table inconsistent\n");
        return 1;
    }
    return 0;
}
