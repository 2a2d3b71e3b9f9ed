/* Scoped lock macros: a `for` statement that locks in its first clause and unlocks in its
 * third, followed by the section as a block (or one statement):
 *   #define WITH_LOCK(m) for (int i_ = (pthread_mutex_lock(&(m)), 0); !i_; pthread_mutex_unlock(&(m)), i_ = 1)
 *   WITH_LOCK(stats_lock) { hits++; bytes += n; }
 * `continue` in the block ends the section early (the third clause unlocks). */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 3000
#define NBUCKETS 16

#define WITH_LOCK(m) for (int i_ = (pthread_mutex_lock(&(m)), 0); !i_; pthread_mutex_unlock(&(m)), i_ = 1)

struct bucket {
    pthread_mutex_t lock;
    long count;
};

static void bucket_lock(struct bucket *b) { pthread_mutex_lock(&b->lock); }
static void bucket_unlock(struct bucket *b) { pthread_mutex_unlock(&b->lock); }

/* the same through wrapper functions, with the flag counting down */
#define SYNCHRONIZED(b) for (int once_ = (bucket_lock(b), 1); once_; once_ = 0, bucket_unlock(b))

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long hits, misses, bytes, odd_skipped, sevens;
static struct bucket buckets[NBUCKETS];

static void record(long n)
{
    WITH_LOCK(stats_lock) {
        hits++;
        bytes += n;
    }
}

static void record_miss(void)
{
    WITH_LOCK(stats_lock)
        misses++;
}

static void note(long n)
{
    if (n % 7 == 0) /* the scoped statement is the if's body */
        WITH_LOCK(stats_lock) {
            sevens++;
        }
}

static void add(int key, long n)
{
    struct bucket *b = &buckets[key % NBUCKETS];
    SYNCHRONIZED(b) {
        if (n % 2) {
            b->count += 1;
            continue; /* ends the section: the third clause unlocks */
        }
        b->count += n;
        WITH_LOCK(stats_lock) /* nested, on another lock */
            bytes += 0;
    }
    if (n % 2) {
        WITH_LOCK(stats_lock) {
            odd_skipped++;
        }
    }
}

static void *run(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        if (i % 3)
            record(i % 7);
        else
            record_miss();
        add((int)(id + i), i % 5);
        note(i);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    for (int i = 0; i < NBUCKETS; i++)
        pthread_mutex_init(&buckets[i].lock, NULL);
    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, run, (void *)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    long total = 0;
    for (int i = 0; i < NBUCKETS; i++)
        total += buckets[i].count;
    printf("hits=%ld misses=%ld bytes=%ld odd=%ld buckets=%ld sevens=%ld\n", hits, misses, bytes, odd_skipped, total,
           sevens);
    long want_bytes = 0, want_total = 0, want_odd = 0, want_sevens = 0;
    for (int i = 0; i < ITERS; i++) {
        if (i % 3)
            want_bytes += i % 7;
        want_total += (i % 5) % 2 ? 1 : i % 5;
        want_odd += (i % 5) % 2;
        want_sevens += i % 7 == 0;
    }
    if (hits + misses != (long)NTHREADS * ITERS || bytes != NTHREADS * want_bytes
        || total != NTHREADS * want_total || odd_skipped != NTHREADS * want_odd
        || sevens != NTHREADS * want_sevens) {
        fprintf(stderr, "macro_scoped_for: lost updates\n");
        return 1;
    }
    return 0;
}
