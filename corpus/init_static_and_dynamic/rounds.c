/* Statically initialised locks (PTHREAD_MUTEX_INITIALIZER) next to locks
 * created with pthread_mutex_init and destroyed with pthread_mutex_destroy,
 * re-created for every round. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4
#define ROUNDS 3
#define ITERS 1500

struct counter {
    pthread_mutex_t lock;
    long value;
};

static pthread_mutex_t totals_lock = PTHREAD_MUTEX_INITIALIZER;
static long grand_total;
static int rounds_seen;

static void *run(void *p)
{
    struct counter *c = p;
    long mine = 0;

    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&c->lock);
        c->value++;
        pthread_mutex_unlock(&c->lock);
        mine++;
    }
    pthread_mutex_lock(&totals_lock);
    grand_total += mine;
    pthread_mutex_unlock(&totals_lock);
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    long per_round[ROUNDS];

    for (int r = 0; r < ROUNDS; r++) {
        struct counter *c = malloc(sizeof(*c));
        if (c == NULL || pthread_mutex_init(&c->lock, NULL) != 0) {
            fprintf(stderr, "init_static_and_dynamic: init failed\n");
            return 1;
        }
        c->value = r * 1000;
        for (int i = 0; i < NTHREADS; i++)
            pthread_create(&threads[i], NULL, run, c);
        for (int i = 0; i < NTHREADS; i++)
            pthread_join(threads[i], NULL);

        pthread_mutex_lock(&c->lock);
        per_round[r] = c->value;
        pthread_mutex_unlock(&c->lock);
        pthread_mutex_destroy(&c->lock);
        free(c);

        pthread_mutex_lock(&totals_lock);
        rounds_seen++;
        pthread_mutex_unlock(&totals_lock);
    }

    for (int r = 0; r < ROUNDS; r++)
        printf("round%d=%ld\n", r, per_round[r]);
    printf("grand_total=%ld rounds=%d\n", grand_total, rounds_seen);
    if (grand_total != (long)ROUNDS * NTHREADS * ITERS || rounds_seen != ROUNDS ||
        per_round[ROUNDS - 1] != (ROUNDS - 1) * 1000 + NTHREADS * ITERS) {
        fprintf(stderr, "init_static_and_dynamic: counts wrong\n");
        return 1;
    }
    return 0;
}
