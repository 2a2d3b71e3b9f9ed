/* A robust lock made consistent through a pointer (a helper taking pthread_mutex_t *, as apr's
   proc mutexes are): its owner, a worker, exits holding it; the next locker gets EOWNERDEAD and
   repairs the state.  An ordinary counter lock beside it. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t robust;
static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static long counter, repairs, state;

/* locks m, repairing the state its dead owner left half-done */
static int lock_and_repair(pthread_mutex_t *m)
{
    int rc = pthread_mutex_lock(m);
    if (rc == EOWNERDEAD) {
        state = 0;
        repairs++;
        rc = pthread_mutex_consistent(m);
    }
    return rc;
}

static void *dies_holding(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&robust);
    state = -1; /* half-done */
    return NULL; /* exits holding the robust lock */
}

static void *counts(void *arg)
{
    for (int i = 0; i < 2000; i++) {
        pthread_mutex_lock(&counter_lock);
        counter += (long)arg;
        pthread_mutex_unlock(&counter_lock);
    }
    return NULL;
}

int main(void)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&robust, &attr);
    pthread_mutexattr_destroy(&attr);

    pthread_t t[3];
    pthread_create(&t[0], NULL, dies_holding, NULL);
    pthread_join(t[0], NULL);
    for (long i = 1; i < 3; i++)
        pthread_create(&t[i], NULL, counts, (void *)i);
    int rc = lock_and_repair(&robust);
    state++;
    pthread_mutex_unlock(&robust);
    int again = lock_and_repair(&robust);
    pthread_mutex_unlock(&robust);
    for (int i = 1; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("rc=%d again=%d repairs=%ld state=%ld counter=%ld\n", rc, again, repairs, state, counter);
    return rc != 0 || again != 0 || repairs != 1;
}
