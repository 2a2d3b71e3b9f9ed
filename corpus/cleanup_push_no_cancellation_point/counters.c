/* Sections inside pthread_cleanup_push(pthread_mutex_unlock, &m) ... pthread_cleanup_pop(0):
   one reaches no cancellation point (a counter and a memcpy), one does (printf), and a worker
   is cancelled between iterations and joined while the others run. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static char last[32];

static void *worker(void *arg)
{
    for (int i = 0; i < 2000; i++) {
        pthread_cleanup_push((void (*)(void *))pthread_mutex_unlock, &m);
        pthread_mutex_lock(&m);
        counter += (long)arg;
        memcpy(last, "worker", 7);
        pthread_mutex_unlock(&m);
        pthread_cleanup_pop(0);
    }
    pthread_cleanup_push((void (*)(void *))pthread_mutex_unlock, &m);
    pthread_mutex_lock(&m);
    printf("a worker ends\n"); /* a cancellation point: this section stays on its thread */
    pthread_mutex_unlock(&m);
    pthread_cleanup_pop(0);
    return NULL;
}

static void *cancelled(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_cleanup_push((void (*)(void *))pthread_mutex_unlock, &m);
        pthread_mutex_lock(&m);
        counter += 0;
        pthread_mutex_unlock(&m);
        pthread_cleanup_pop(0);
        pthread_testcancel(); /* outside the push/pop pair: the handler never runs */
    }
    return NULL;
}

int main(void)
{
    pthread_t t[2], victim;
    void *result;
    pthread_create(&victim, NULL, cancelled, NULL);
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    pthread_cancel(victim);
    pthread_join(victim, &result);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_mutex_lock(&m); /* free: no handler released it twice, no section kept it */
    printf("counter=%ld last=%s cancelled=%d\n", counter, last, result == PTHREAD_CANCELED);
    pthread_mutex_unlock(&m);
    return 0;
}
