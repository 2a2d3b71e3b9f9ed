/* A fixed pool of tickets: take_ticket() unlocks and returns early when the
 * pool is empty, and unlocks and returns an expression otherwise. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ATTEMPTS 3000
#define POOL_SIZE 10000

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static int next_ticket;
static int refused;

static int take_ticket(void)
{
    pthread_mutex_lock(&pool_lock);
    if (next_ticket >= POOL_SIZE) {
        refused++;
        pthread_mutex_unlock(&pool_lock);
        return -1;
    }
    int t = next_ticket++;
    pthread_mutex_unlock(&pool_lock);
    return t * 2 + 1;
}

struct result { long taken; long sum; };

static void *worker(void *arg)
{
    struct result *r = arg;

    for (int i = 0; i < ATTEMPTS; i++) {
        int code = take_ticket();
        if (code < 0)
            continue;
        r->taken++;
        r->sum += (code - 1) / 2;
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    struct result res[NTHREADS] = {{0, 0}};
    long taken = 0, sum = 0;

    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, worker, &res[i]);
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        taken += res[i].taken;
        sum += res[i].sum;
    }

    printf("taken=%ld refused=%d sum=%ld\n", taken, refused, sum);
    if (taken != POOL_SIZE || refused != NTHREADS * ATTEMPTS - POOL_SIZE ||
        sum != (long)POOL_SIZE * (POOL_SIZE - 1) / 2) {
        fprintf(stderr, "exit_unlock_return: tickets lost or duplicated\n");
        return 1;
    }
    return 0;
}
