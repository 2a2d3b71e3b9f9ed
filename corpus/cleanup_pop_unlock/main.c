/* Sections whose lock pthread_cleanup_pop(1) releases, the pushed handler being the unlock: the
 * push before the lock (form_b) or after it (form_a). The pop is the region's unlock: a section
 * that reaches no cancellation point is extracted (the call site keeps the push and pops with 0);
 * the waiter's, which waits on a condvar (a cancellation point), stays on its thread. A thread
 * looping over such a section is cancelled at a pthread_testcancel() outside the pair and joined;
 * the lock is free after. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter, waits;
static char last[16];
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static void *form_b(void *arg)
{
    for (int i = 0; i < 3000; i++) {
        pthread_cleanup_push((void (*)(void *))pthread_mutex_unlock, &m);
        pthread_mutex_lock(&m);
        counter += (long)arg;
        memcpy(last, "form_b", 7);
        pthread_cleanup_pop(1);
    }
    return NULL;
}
static void *form_a(void *arg)
{
    for (int i = 0; i < 3000; i++) {
        pthread_mutex_lock(&m);
        pthread_cleanup_push((void (*)(void *))pthread_mutex_unlock, &m);
        counter += 2 * (long)arg;
        pthread_cleanup_pop(1);
    }
    pthread_mutex_lock(&m);
    pthread_cleanup_push((void (*)(void *))pthread_mutex_unlock, &m);
    waits++;
    pthread_cond_broadcast(&c);
    pthread_cleanup_pop(1);
    return NULL;
}
static long spins;
static void *cancelled(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_cleanup_push((void (*)(void *))pthread_mutex_unlock, &m);
        pthread_mutex_lock(&m);
        spins++;
        pthread_cleanup_pop(1);
        pthread_testcancel(); /* outside the push/pop pair */
    }
    return NULL;
}
static void *waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m);
    pthread_cleanup_push((void (*)(void *))pthread_mutex_unlock, &m);
    while (waits < 2)
        pthread_cond_wait(&c, &m); /* a cancellation point: this section stays on its thread */
    pthread_cleanup_pop(1);
    return NULL;
}
int main(void)
{
    pthread_t t[5], spinner;
    pthread_create(&spinner, NULL, cancelled, NULL);
    pthread_create(&t[4], NULL, waiter, NULL);
    for (long k = 0; k < 2; k++) {
        pthread_create(&t[2 * k], NULL, form_b, (void *)(k + 1));
        pthread_create(&t[2 * k + 1], NULL, form_a, (void *)(k + 1));
    }
    for (int k = 0; k < 5; k++)
        pthread_join(t[k], NULL);
    pthread_cancel(spinner);
    pthread_join(spinner, NULL);
    if (pthread_mutex_trylock(&m) != 0) {
        fprintf(stderr, "the lock is still held after the cancelled thread ended\n");
        return 1;
    }
    pthread_mutex_unlock(&m);
    printf("counter %ld waits %ld last %s\n", counter, waits, last);
    if (counter != 3000L * 3 * 3 || waits != 2) {
        fprintf(stderr, "lost updates\n");
        return 1;
    }
    return 0;
}
