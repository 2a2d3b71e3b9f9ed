/* `__attribute__((cleanup))` lock guards: the lock is held from the guard's declaration to the
 * end of its block, released however the block is left (falling off its end, return, break):
 *   #define GUARD(m) pthread_mutex_t *g_ __attribute__((cleanup(guard_unlock))) = guard_lock(&(m))
 * A return's value is computed under the lock, before the cleanup unlocks. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 3000
#define NSLOTS 8

static inline pthread_mutex_t *guard_lock(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
    return m;
}

static inline void guard_unlock(pthread_mutex_t **m)
{
    pthread_mutex_unlock(*m);
}

#define GUARD(m) pthread_mutex_t *g_ __attribute__((cleanup(guard_unlock))) = guard_lock(&(m))

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t slot_locks[NSLOTS];
static long hits, total, slots[NSLOTS], full;

static void count(long n)
{
    GUARD(stats_lock);
    hits++;
    total += n;
}

static long read_total(void)
{
    GUARD(stats_lock);
    return total; /* read under the lock: the cleanup runs after the value is computed */
}

static int put(int slot, long n)
{
    if (slot < 0)
        return -1;
    {
        GUARD(slot_locks[slot % NSLOTS]);
        if (slots[slot % NSLOTS] >= 1000000)
            return 0; /* never: the cleanup unlocks */
        slots[slot % NSLOTS] += n;
    }
    return 1;
}

static void *run(void *arg)
{
    long id = (long)arg;
    long last = 0;
    for (int i = 0; i < ITERS; i++) {
        count(i % 5);
        put((int)(id + i), 2);
        for (int j = 0; j < 3; j++) {
            GUARD(stats_lock);
            if (j == 1)
                break; /* leaves the block: the cleanup unlocks */
            full++;
        }
        long now = read_total();
        if (now < last) {
            fprintf(stderr, "total went backwards\n");
            return (void *)1;
        }
        last = now;
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    for (int i = 0; i < NSLOTS; i++)
        pthread_mutex_init(&slot_locks[i], NULL);
    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, run, (void *)i);
    int failed = 0;
    for (int i = 0; i < NTHREADS; i++) {
        void *result;
        pthread_join(threads[i], &result);
        failed |= result != NULL;
    }
    long sum = 0;
    for (int i = 0; i < NSLOTS; i++)
        sum += slots[i];
    long want = 0;
    for (int i = 0; i < ITERS; i++)
        want += i % 5;
    printf("hits=%ld total=%ld slots=%ld full=%ld\n", hits, read_total(), sum, full);
    if (failed || hits != (long)NTHREADS * ITERS || total != NTHREADS * want || sum != 2L * NTHREADS * ITERS
        || full != (long)NTHREADS * ITERS) {
        fprintf(stderr, "macro_cleanup_guard: lost updates\n");
        return 1;
    }
    return 0;
}
