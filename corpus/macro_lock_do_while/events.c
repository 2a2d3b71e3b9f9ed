/* Locking through statement macros wrapped in do { } while (0). */
#include <pthread.h>
#include <stdio.h>

#define LOCK(m)   do { pthread_mutex_lock(&(m)); } while (0)
#define UNLOCK(m) do { pthread_mutex_unlock(&(m)); } while (0)

#define NTHREADS 4
#define ITERS 3000
#define NKINDS 5

static pthread_mutex_t events_mu = PTHREAD_MUTEX_INITIALIZER;
static long counts[NKINDS];
static long dropped;

static void record(int kind)
{
    LOCK(events_mu);
    if (kind >= NKINDS) {
        dropped++;
        UNLOCK(events_mu);
        return;
    }
    counts[kind]++;
    UNLOCK(events_mu);
}

static void *run(void *p)
{
    int id = *(int *)p;

    for (int i = 0; i < ITERS; i++)
        record((i + id) % (NKINDS + 1));
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int ids[NTHREADS];
    long total;

    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);

    total = dropped;
    for (int k = 0; k < NKINDS; k++) {
        printf("kind%d=%ld\n", k, counts[k]);
        total += counts[k];
    }
    printf("dropped=%ld\n", dropped);
    if (total != NTHREADS * ITERS) {
        fprintf(stderr, "macro_lock_do_while: events lost\n");
        return 1;
    }
    return 0;
}
