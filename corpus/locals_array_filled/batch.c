/* A worker reserves a batch of ids at once: a local array is filled inside
 * the region and consumed after the unlock; a second local array is only
 * read inside the region. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define BATCH 8
#define ROUNDS 400

static pthread_mutex_t id_lock = PTHREAD_MUTEX_INITIALIZER;
static long next_id;
static long weights_total;

struct worker { long id_sum; long count; };

static void *run(void *p)
{
    struct worker *w = p;
    long ids[BATCH];
    const int weights[4] = { 1, 2, 3, 4 };
    char tag[32];

    for (int r = 0; r < ROUNDS; r++) {
        pthread_mutex_lock(&id_lock);
        for (int j = 0; j < BATCH; j++)
            ids[j] = next_id++;
        for (int j = 0; j < 4; j++)
            weights_total += weights[j];
        snprintf(tag, sizeof(tag), "b%ld", ids[0] / BATCH);
        pthread_mutex_unlock(&id_lock);

        if (tag[0] != 'b')
            return p;
        for (int j = 0; j < BATCH; j++) {
            if (j > 0 && ids[j] != ids[j - 1] + 1)
                return p;              /* batches must be contiguous */
            w->id_sum += ids[j];
            w->count++;
        }
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    struct worker workers[NTHREADS] = {{0, 0}};
    long sum = 0, count = 0;
    int failed = 0;

    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, run, &workers[i]);
    for (int i = 0; i < NTHREADS; i++) {
        void *ret;
        pthread_join(threads[i], &ret);
        failed |= ret != NULL;
        sum += workers[i].id_sum;
        count += workers[i].count;
    }

    printf("ids=%ld sum=%ld weights_total=%ld\n", count, sum, weights_total);
    if (failed || count != next_id || sum != count * (count - 1) / 2) {
        fprintf(stderr, "locals_array_filled: ids duplicated or lost\n");
        return 1;
    }
    return 0;
}
