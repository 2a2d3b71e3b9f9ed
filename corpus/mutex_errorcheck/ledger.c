/* An error-checking mutex (PTHREAD_MUTEX_ERRORCHECK); every lock and unlock
 * result is checked and must be 0 in this correct program. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 4
#define ITERS 3000

static pthread_mutex_t ledger_lock;
static long credits, debits;

static void die(const char *what, int err)
{
    fprintf(stderr, "mutex_errorcheck: %s: %s\n", what, strerror(err));
    exit(1);
}

static void post(long amount)
{
    int err;

    if ((err = pthread_mutex_lock(&ledger_lock)) != 0)
        die("lock", err);
    if (amount >= 0)
        credits += amount;
    else
        debits -= amount;
    if ((err = pthread_mutex_unlock(&ledger_lock)) != 0)
        die("unlock", err);
}

static void *run(void *p)
{
    int id = *(int *)p;

    for (int i = 0; i < ITERS; i++)
        post(i % 2 ? id + 1 : -(long)(id + 1));
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    pthread_mutexattr_t attr;
    int ids[NTHREADS];
    int err;

    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    if ((err = pthread_mutex_init(&ledger_lock, &attr)) != 0)
        die("init", err);
    pthread_mutexattr_destroy(&attr);

    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    if ((err = pthread_mutex_destroy(&ledger_lock)) != 0)
        die("destroy", err);

    printf("credits=%ld debits=%ld\n", credits, debits);
    if (credits != 1500L * 10 || debits != credits) {
        fprintf(stderr, "mutex_errorcheck: ledger unbalanced\n");
        return 1;
    }
    return 0;
}
