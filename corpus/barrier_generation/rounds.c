/* A reusable barrier built from a mutex and a condvar with a generation
 * counter, used by 4 threads for several rounds. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ROUNDS 8

struct barrier {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    int arrived;
    int parties;
    unsigned long generation;
};

static struct barrier bar = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NTHREADS, 0
};

static pthread_mutex_t sum_lock = PTHREAD_MUTEX_INITIALIZER;
static long round_sum[ROUNDS];

/* Returns 1 in exactly one thread per round (the last to arrive). */
static int barrier_wait(struct barrier *b)
{
    int leader = 0;

    pthread_mutex_lock(&b->lock);
    unsigned long gen = b->generation;
    if (++b->arrived == b->parties) {
        b->arrived = 0;
        b->generation++;
        leader = 1;
        pthread_cond_broadcast(&b->cv);
    } else {
        while (gen == b->generation)
            pthread_cond_wait(&b->cv, &b->lock);
    }
    pthread_mutex_unlock(&b->lock);
    return leader;
}

static void *run(void *p)
{
    int id = *(int *)p;
    int *leads = p;
    int bad = 0;

    *leads = 0;
    for (int r = 0; r < ROUNDS; r++) {
        pthread_mutex_lock(&sum_lock);
        round_sum[r] += (long)(r + 1) * (id + 1);
        pthread_mutex_unlock(&sum_lock);

        *leads += barrier_wait(&bar);

        /* After the barrier every thread must see the complete round. */
        pthread_mutex_lock(&sum_lock);
        if (round_sum[r] != (long)(r + 1) * NTHREADS * (NTHREADS + 1) / 2)
            bad = 1;
        if (r + 1 < ROUNDS && round_sum[r + 1] > (long)(r + 2) * NTHREADS * (NTHREADS + 1) / 2)
            bad = 1;
        pthread_mutex_unlock(&sum_lock);
    }
    return bad ? p : NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int args[NTHREADS];
    int leads = 0, failed = 0;
    long total = 0;

    for (int i = 0; i < NTHREADS; i++) {
        args[i] = i;
        pthread_create(&threads[i], NULL, run, &args[i]);
    }
    for (int i = 0; i < NTHREADS; i++) {
        void *ret;
        pthread_join(threads[i], &ret);
        failed |= ret != NULL;
        leads += args[i];
    }
    for (int r = 0; r < ROUNDS; r++)
        total += round_sum[r];

    printf("rounds=%lu leaders=%d total=%ld\n", bar.generation, leads, total);
    if (failed || bar.generation != ROUNDS || leads != ROUNDS || total != 360) {
        fprintf(stderr, "barrier_generation: a thread ran ahead\n");
        return 1;
    }
    return 0;
}
