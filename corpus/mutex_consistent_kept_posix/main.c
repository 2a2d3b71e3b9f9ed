/* A robust mutex guards a journal; a writer thread dies holding it (it returns without
 * unlocking), the next locker gets EOWNERDEAD, repairs the journal and calls
 * pthread_mutex_consistent.  An ordinary counter lock next to it is taken by four threads.  The
 * runtime has no pthread_mutex_consistent: the robust mutex (and the condition variable waited
 * on with it) stay pthread ones, the counter lock is transformed. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ROUNDS 5000

static pthread_mutex_t journal_lock;
static pthread_cond_t journal_cond = PTHREAD_COND_INITIALIZER;
static int journal_entries, journal_torn, journal_repairs, journal_ready;

static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *dies_holding(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&journal_lock);
    journal_entries++;
    journal_torn = 1; /* half written when its thread ends */
    return NULL;
}

/* Called by whoever gets EOWNERDEAD (exactly one locker after the death), holding the lock. */
static void journal_repair(void)
{
    journal_torn = 0;
    journal_repairs++;
    pthread_mutex_consistent(&journal_lock);
}

static int journal_append(void)
{
    int rc = pthread_mutex_lock(&journal_lock);
    if (rc == EOWNERDEAD)
        journal_repair();
    else if (rc != 0)
        return -1;
    journal_entries++;
    journal_ready = 1;
    pthread_cond_broadcast(&journal_cond);
    pthread_mutex_unlock(&journal_lock);
    return 0;
}

static void *worker(void *arg)
{
    (void)arg;
    int rc = pthread_mutex_lock(&journal_lock); /* may be the first locker after the death */
    if (rc == EOWNERDEAD)
        journal_repair();
    while (!journal_ready) {
        rc = pthread_cond_wait(&journal_cond, &journal_lock);
        if (rc == EOWNERDEAD)
            journal_repair();
    }
    pthread_mutex_unlock(&journal_lock);
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&counter_lock);
        counter++;
        pthread_mutex_unlock(&counter_lock);
    }
    return NULL;
}

int main(void)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&journal_lock, &attr);
    pthread_mutexattr_destroy(&attr);

    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    pthread_t dead;
    pthread_create(&dead, NULL, dies_holding, NULL);
    pthread_join(dead, NULL);
    int rc = journal_append();
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    journal_append();
    pthread_mutex_destroy(&journal_lock);

    printf("journal entries %d torn %d repairs %d\n", journal_entries, journal_torn, journal_repairs);
    printf("counter %ld\n", counter);
    if (rc != 0 || journal_repairs != 1 || journal_torn || counter != (long)THREADS * ROUNDS) {
        fprintf(stderr, "check failed\n");
        return 1;
    }
    return 0;
}
