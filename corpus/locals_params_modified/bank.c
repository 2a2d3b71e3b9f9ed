/* A parameter is modified inside the region (clamped to what is available)
 * and its new value is used after the unlock. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4
#define ITERS 2000
#define START 30000

struct account { pthread_mutex_t lock; long balance; long withdrawals; };

static long withdraw(struct account *acct, long amount, int *short_count)
{
    pthread_mutex_lock(&acct->lock);
    if (amount > acct->balance) {
        amount = acct->balance;        /* parameter written in the region */
        (*short_count)++;
    }
    acct->balance -= amount;
    if (amount > 0)
        acct->withdrawals++;
    pthread_mutex_unlock(&acct->lock);
    return amount;                     /* and read after it */
}

static struct account acct = { PTHREAD_MUTEX_INITIALIZER, START, 0 };

struct worker { long got; int short_count; };

static void *run(void *p)
{
    struct worker *w = p;

    for (int i = 0; i < ITERS; i++)
        w->got += withdraw(&acct, 1 + i % 7, &w->short_count);
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    struct worker workers[NTHREADS] = {{0, 0}};
    long got = 0;

    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, run, &workers[i]);
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        got += workers[i].got;
    }

    printf("withdrawn=%ld balance=%ld\n", got, acct.balance);
    if (got + acct.balance != START || acct.balance != 0) {
        fprintf(stderr, "locals_params_modified: money created or lost\n");
        return 1;
    }
    return 0;
}
