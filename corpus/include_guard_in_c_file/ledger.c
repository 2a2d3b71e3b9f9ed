/* A header's text pasted into a .c file (amalgamated builds do this): everything sits under an
 * include guard, and a section captures the caller's locals. */
#ifndef LEDGER_H
#define LEDGER_H
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ROUNDS 2000

static pthread_mutex_t ledger_lock = PTHREAD_MUTEX_INITIALIZER;
static long balance, entries;

static void post(long amount, int times)
{
    long posted = 0;
    pthread_mutex_lock(&ledger_lock);
    for (int i = 0; i < times; i++) {
        balance += amount;
        posted += amount;
    }
    entries += times;
    pthread_mutex_unlock(&ledger_lock);
    if (posted != amount * times)
        printf("lost a posting\n");
}

static void *worker(void *arg)
{
    long amount = (long)arg;
    for (int r = 0; r < ROUNDS; r++)
        post(amount, 1 + r % 3);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("balance %ld, entries %ld\n", balance, entries);
    return 0;
}
#endif /* LEDGER_H */
