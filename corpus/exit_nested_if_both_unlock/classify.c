/* Numbers are classified into three shared bins; every branch of a nested
 * if/else unlocks on its own and execution falls through to common code. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 3
#define PER_THREAD 4000

static pthread_mutex_t bins_lock = PTHREAD_MUTEX_INITIALIZER;
static long small_bin, mid_bin, big_bin;
static int small_n, mid_n, big_n;

struct arg { int base; long after; };

static void *worker(void *p)
{
    struct arg *arg = p;
    int base = arg->base;
    long after = 0;

    for (int i = 0; i < PER_THREAD; i++) {
        int v = (base + i * 7) % 100;
        int which;

        pthread_mutex_lock(&bins_lock);
        if (v < 50) {
            if (v < 10) {
                small_bin += v;
                small_n++;
                which = 0;
                pthread_mutex_unlock(&bins_lock);
            } else {
                mid_bin += v;
                mid_n++;
                which = 1;
                pthread_mutex_unlock(&bins_lock);
            }
        } else {
            big_bin += v;
            big_n++;
            which = 2;
            pthread_mutex_unlock(&bins_lock);
        }
        after += which;                 /* code after the if runs unlocked */
    }
    arg->after = after;
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    struct arg args[NTHREADS];
    long which_sum = 0;

    for (int i = 0; i < NTHREADS; i++) {
        args[i].base = i * 33;
        args[i].after = 0;
        pthread_create(&threads[i], NULL, worker, &args[i]);
    }
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        which_sum += args[i].after;
    }

    printf("small=%d/%ld mid=%d/%ld big=%d/%ld which_sum=%ld\n", small_n,
           small_bin, mid_n, mid_bin, big_n, big_bin, which_sum);
    if (small_n + mid_n + big_n != NTHREADS * PER_THREAD ||
        which_sum != mid_n + 2L * big_n) {
        fprintf(stderr, "exit_nested_if_both_unlock: counts disagree\n");
        return 1;
    }
    return 0;
}
