#include "shared.h"

struct lock table_lock = { PTHREAD_MUTEX_INITIALIZER, 0 };
long table[8];
long total;

static long sum_table(void)
{
    long sum = 0;
    LOCK_TAKE(&table_lock);
    table_lock.held++;
    for (int i = 0; i < 8; i++)
        sum += table[i];
    LOCK_GIVE(&table_lock);
    return sum;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, worker, (void *)i);
    int failed = 0;
    for (int i = 0; i < NTHREADS; i++) {
        void *result;
        pthread_join(threads[i], &result);
        failed |= result != NULL;
    }
    long sum = sum_table();
    printf("sum=%ld total=%ld held=%ld\n", sum, total, table_lock.held);
    if (failed || sum != 2L * NTHREADS * ITERS || total != (long)NTHREADS * ITERS
        || table_lock.held != 2L * NTHREADS * ITERS + 1) {
        fprintf(stderr, "wrapper_static_inline_header: lost updates\n");
        return 1;
    }
    return 0;
}
