/* Locks taken only when a flag says the data is shared: `if (c) lock(&m); ... if (c) unlock(&m);`
 * with the flag a struct field, a global set before the threads start, and a parameter; the
 * unlocked runs (a private pool, the single-threaded phase) run the same code without the lock. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4
#define ROUNDS 20000

#define LOCK(m) pthread_mutex_lock(m)
#define UNLOCK(m) pthread_mutex_unlock(m)
/* the flag inside the lock macros: a statement (nuphase's USING(d)) and git's do-while form */
#define POOL_LOCK(p) if ((p)->shared) pthread_mutex_lock(&(p)->lock);
#define POOL_UNLOCK(p) if ((p)->shared) pthread_mutex_unlock(&(p)->lock);
#define STATS_LOCK() do { if (threaded) pthread_mutex_lock(&stats_lock); } while (0)
#define STATS_UNLOCK() do { if (threaded) pthread_mutex_unlock(&stats_lock); } while (0)

struct pool {
    int shared; /* set once, before any thread uses the pool */
    pthread_mutex_t lock;
    long items;
    long adds;
    long largest;
};

static struct pool shared_pool = {1, PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static int threaded; /* written by main only while no other thread runs */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static long log_lines;
static long log_sum;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long stats_calls;
static long taken_shared[NTHREADS]; /* each worker its own slot, read by main after the joins */

static void pool_add(struct pool *p, long k)
{
    long before;

    if (p->shared)
        pthread_mutex_lock(&p->lock);
    before = p->items;
    p->items = before + k;
    p->adds++;
    if (k > p->largest)
        p->largest = k;
    if (p->shared)
        pthread_mutex_unlock(&p->lock);
}

/* takes up to k items; how many it took */
static long pool_take(struct pool *p, long k)
{
    long took;

    POOL_LOCK(p);
    took = p->items < k ? p->items : k;
    p->items -= took;
    POOL_UNLOCK(p);
    return took;
}

static void stats_count(void)
{
    STATS_LOCK();
    stats_calls++;
    STATS_UNLOCK();
}

/* the previous value, read under the lock and returned after it */
static long counter_bump(long k)
{
    long old;

    if (threaded)
        LOCK(&counter_lock);
    old = counter;
    counter = old + k;
    if (threaded)
        UNLOCK(&counter_lock);
    return old;
}

static void log_value(long v, int locked)
{
    if (locked) {
        pthread_mutex_lock(&log_lock);
    }
    log_lines++;
    log_sum += v;
    if (locked) {
        pthread_mutex_unlock(&log_lock);
    }
}

static void *worker(void *arg)
{
    long id = (long)arg;
    struct pool mine = {0, PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
    long seen = 0;
    long taken_mine = 0;

    for (long i = 0; i < ROUNDS; i++) {
        pool_add(&shared_pool, (i + id) % 7);
        pool_add(&mine, i % 5);
        seen += counter_bump(1) >= 0;
        stats_count();
        if (i % 10 == 0) {
            taken_shared[id] += pool_take(&shared_pool, 1);
            taken_mine += pool_take(&mine, 2);
        }
        if (i % 100 == 0)
            log_value(i, 1);
    }
    if (mine.items + taken_mine != (ROUNDS / 5) * 10 || mine.adds != ROUNDS || seen != ROUNDS) {
        fprintf(stderr, "worker %ld: private pool %ld/%ld, seen %ld\n", id, mine.items, mine.adds, seen);
        exit(1);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[NTHREADS];

    /* single-threaded phase: no lock taken */
    for (long i = 0; i < 10; i++) {
        counter_bump(i);
        log_value(i, 0);
        stats_count();
    }
    threaded = 1;
    for (long i = 0; i < NTHREADS; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
            return 1;
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    threaded = 0;
    long last = counter_bump(0);

    long taken = 0;
    for (int i = 0; i < NTHREADS; i++)
        taken += taken_shared[i];
    long expect_items = 0;
    for (long id = 0; id < NTHREADS; id++)
        for (long i = 0; i < ROUNDS; i++)
            expect_items += (i + id) % 7;
    printf("shared pool: %ld items added in %ld adds, largest %ld\n", shared_pool.items + taken,
           shared_pool.adds, shared_pool.largest);
    printf("stats: %ld calls\n", stats_calls);
    printf("counter: %ld (last read %ld)\n", counter, last);
    printf("log: %ld lines, sum %ld\n", log_lines, log_sum);
    if (shared_pool.items + taken != expect_items || stats_calls != NTHREADS * ROUNDS + 10 || shared_pool.adds != NTHREADS * ROUNDS
        || counter != 45 + NTHREADS * ROUNDS || last != counter || log_lines != 10 + NTHREADS * (ROUNDS / 100)) {
        fprintf(stderr, "wrong totals\n");
        return 1;
    }
    return 0;
}
