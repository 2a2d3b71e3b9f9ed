/* Cleanup locals declared under the lock in a block that goes on after the unlock (used after it,
   or not, an early `unlock; return` between): each cleanup runs where its block ends, after the
   unlock, and takes the lock itself. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 500

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long entries, cleanups, freed;

/* runs at the end of the variable's block, after the unlock: it takes the lock itself (run under
   the lock, it would deadlock) */
static void release(char **p)
{
    pthread_mutex_lock(&lock);
    cleanups++;
    if (*p != NULL) {
        freed++;
        free(*p);
    }
    pthread_mutex_unlock(&lock);
}

static int record(int id, int round)
{
    pthread_mutex_lock(&lock);
    char *__attribute__((cleanup(release))) line = malloc(32);
    snprintf(line, 32, "%d:%d", id, round);
    entries++;
    if (round % 7 == 0) {
        pthread_mutex_unlock(&lock);
        return 0;
    }
    pthread_mutex_unlock(&lock);
    return (int)strlen(line);
}

static void note(void)
{
    {
        pthread_mutex_lock(&lock);
        __attribute__((cleanup(release))) char *unused = NULL;
        entries++;
        pthread_mutex_unlock(&lock);
    }
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    long length = 0;
    for (int round = 0; round < ROUNDS; round++) {
        length += record(id, round);
        note();
    }
    return (void *)length;
}

int main(void)
{
    pthread_t threads[THREADS];
    long total = 0;
    for (long i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) {
        void *length;
        pthread_join(threads[i], &length);
        total += (long)length;
    }
    printf("entries=%ld cleanups=%ld freed=%ld length=%ld\n", entries, cleanups, freed, total);
    if (cleanups != entries) {
        fprintf(stderr, "%ld cleanups for %ld entries\n", cleanups, entries);
        return 1;
    }
    return 0;
}
