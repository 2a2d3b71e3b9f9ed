/* A record built as a compound literal under the lock, its address kept in a pointer and read
   after the unlock: the literal lives to the end of its block, which goes on after the unlock. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ROUNDS 1500

struct rec {
    int id;
    int twice;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int next_id;
static long ids_total;

static long take(void)
{
    struct rec *keep;
    pthread_mutex_lock(&lock);
    int got = ++next_id;
    keep = &(struct rec){ .id = got, .twice = 2 * got };
    pthread_mutex_unlock(&lock);
    return keep->twice - keep->id;
}

static void *worker(void *arg)
{
    long sum = 0;
    (void)arg;
    for (int i = 0; i < ROUNDS; i++)
        sum += take();
    pthread_mutex_lock(&lock);
    ids_total += sum;
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void)
{
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    long n = (long)THREADS * ROUNDS;
    printf("reads=%ld sum=%ld\n", n, ids_total);
    if (ids_total != n * (n + 1) / 2) {
        fprintf(stderr, "a record read after the unlock was not the one built\n");
        return 1;
    }
    return 0;
}
