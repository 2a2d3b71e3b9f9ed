/* Variables declared inside the region (between lock and unlock) and used
 * after the unlock in the same block. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 3000

static pthread_mutex_t seq_lock = PTHREAD_MUTEX_INITIALIZER;
static long next_seq;
static long total_weight;

static void *run(void *p)
{
    long *out = p;
    long seq_sum = 0, weight_sum = 0;

    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&seq_lock);
        long seq = next_seq++;
        int weight = (int)(seq % 7), doubled = weight * 2;
        total_weight += weight;
        pthread_mutex_unlock(&seq_lock);

        seq_sum += seq;                /* used after the unlock */
        weight_sum += doubled / 2;
    }
    out[0] = seq_sum;
    out[1] = weight_sum;
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    long out[NTHREADS][2];
    long seq_sum = 0, weight_sum = 0;
    long n = (long)NTHREADS * ITERS;

    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, run, out[i]);
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        seq_sum += out[i][0];
        weight_sum += out[i][1];
    }

    printf("seq_sum=%ld weight=%ld\n", seq_sum, weight_sum);
    if (seq_sum != n * (n - 1) / 2 || weight_sum != total_weight) {
        fprintf(stderr, "locals_declared_in_region: wrong sums\n");
        return 1;
    }
    return 0;
}
