/* `const` and `volatile` locals used inside the region: a const step and
 * limit are read, a volatile local is written in the region and read after. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 2500

static pthread_mutex_t meter_lock = PTHREAD_MUTEX_INITIALIZER;
static long meter;
static int clamped;

static void *run(void *p)
{
    int id = *(const int *)p;
    const int step = 2 + id;
    const long limit = 40000;
    volatile long seen = 0;
    volatile int last_clamp = 0;
    long max_seen = 0;

    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&meter_lock);
        if (meter + step > limit) {
            clamped++;
            last_clamp = i;
        } else {
            meter += step;
        }
        seen = meter;
        pthread_mutex_unlock(&meter_lock);

        if (seen > max_seen)
            max_seen = seen;
    }
    (void)last_clamp;
    return max_seen <= limit ? NULL : p;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int ids[NTHREADS];
    int failed = 0;

    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++) {
        void *ret;
        pthread_join(threads[i], &ret);
        failed |= ret != NULL;
    }

    /* 2500 * (2+3+4+5) = 35000 fits under the limit: nothing is clamped. */
    printf("meter=%ld clamped=%d\n", meter, clamped);
    if (failed || meter != 35000 || clamped != 0) {
        fprintf(stderr, "locals_const_volatile: meter is wrong\n");
        return 1;
    }
    return 0;
}
