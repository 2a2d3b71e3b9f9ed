/* Scalar locals of several types are read, written and read-modify-written
 * inside the region, and used again after it. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 3000

struct worker { int id; long deposited; long fee_units; int odd_seen; };

static pthread_mutex_t bank_lock = PTHREAD_MUTEX_INITIALIZER;
static long balance = 1000;
static unsigned long ops;

static void *run(void *p)
{
    struct worker *w = p;
    long deposited = 0;
    double fees = 0.0;
    unsigned char parity = 0;
    int odd_seen = 0;

    for (int i = 0; i < ITERS; i++) {
        int amount = (i % 5) + w->id;  /* only read in the region */
        long before;                   /* only written in the region */

        pthread_mutex_lock(&bank_lock);
        before = balance;
        balance += amount;
        deposited += amount;           /* read and written */
        fees += 0.5;
        parity = (unsigned char)(amount & 1);
        ops++;
        pthread_mutex_unlock(&bank_lock);

        if (before < 1000) {
            fprintf(stderr, "locals_scalars: balance went down\n");
            return p;
        }
        odd_seen += parity;
    }
    w->deposited = deposited;
    w->fee_units = (long)(fees * 2);
    w->odd_seen = odd_seen;
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    struct worker workers[NTHREADS];
    long deposited = 0, fee_units = 0, odd_seen = 0;
    int failed = 0;

    for (int i = 0; i < NTHREADS; i++) {
        workers[i] = (struct worker){ .id = i };
        pthread_create(&threads[i], NULL, run, &workers[i]);
    }
    for (int i = 0; i < NTHREADS; i++) {
        void *ret;
        pthread_join(threads[i], &ret);
        failed |= ret != NULL;
        deposited += workers[i].deposited;
        fee_units += workers[i].fee_units;
        odd_seen += workers[i].odd_seen;
    }

    printf("balance=%ld ops=%lu deposited=%ld fee_units=%ld odd=%ld\n",
           balance, ops, deposited, fee_units, odd_seen);
    if (failed || balance != 1000 + deposited || ops != NTHREADS * ITERS ||
        fee_units != NTHREADS * ITERS) {
        fprintf(stderr, "locals_scalars: inconsistent totals\n");
        return 1;
    }
    return 0;
}
