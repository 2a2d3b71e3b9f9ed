/*
 * Reader-writer locks: readers (rdlock, a nested rdlock by the same reader, tryrdlock, timedrdlock)
 * and writers (wrlock, trywrlock) over a table whose entries a writer keeps equal, on a statically
 * initialised rwlock and on one set up by pthread_rwlock_init in a struct, beside a mutex region.
 * A reader that saw unequal entries, or a writer that lost an update, changes what is printed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define ENTRIES 16
#define READERS 4
#define WRITERS 2
#define ROUNDS 2000

static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
static long table[ENTRIES];

struct stats {
    pthread_rwlock_t lock;
    long writes;
};
static struct stats stats;

static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static long reads, torn;

/* called holding table_lock for reading: takes it again (a reader may) */
static long first_entry(void)
{
    pthread_rwlock_rdlock(&table_lock);
    long v = table[0];
    pthread_rwlock_unlock(&table_lock);
    return v;
}

static int all_equal(void)
{
    for (int i = 1; i < ENTRIES; i++)
        if (table[i] != table[0])
            return 0;
    return 1;
}

static void *reader(void *arg)
{
    long id = (long)arg, seen = 0, bad = 0;
    struct timespec ts;
    for (int i = 0; i < ROUNDS; i++) {
        switch ((i + id) % 3) {
        case 0:
            pthread_rwlock_rdlock(&table_lock);
            break;
        case 1:
            while (pthread_rwlock_tryrdlock(&table_lock) == EBUSY)
                ;
            break;
        default:
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 60;
            pthread_rwlock_timedrdlock(&table_lock, &ts);
        }
        bad += !all_equal() || first_entry() != table[ENTRIES - 1];
        pthread_rwlock_unlock(&table_lock);
        seen++;
    }
    pthread_mutex_lock(&count_lock);
    reads += seen;
    torn += bad;
    pthread_mutex_unlock(&count_lock);
    return NULL;
}

static void *writer(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ROUNDS; i++) {
        if ((i + id) % 2)
            pthread_rwlock_wrlock(&table_lock);
        else
            while (pthread_rwlock_trywrlock(&table_lock) == EBUSY)
                ;
        for (int e = 0; e < ENTRIES; e++)
            table[e]++;
        pthread_rwlock_unlock(&table_lock);
        pthread_rwlock_wrlock(&stats.lock);
        stats.writes++;
        pthread_rwlock_unlock(&stats.lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t r[READERS], w[WRITERS];
    pthread_rwlock_init(&stats.lock, NULL);
    for (long i = 0; i < READERS; i++)
        pthread_create(&r[i], NULL, reader, (void *)i);
    for (long i = 0; i < WRITERS; i++)
        pthread_create(&w[i], NULL, writer, (void *)i);
    for (int i = 0; i < READERS; i++)
        pthread_join(r[i], NULL);
    for (int i = 0; i < WRITERS; i++)
        pthread_join(w[i], NULL);
    pthread_rwlock_rdlock(&stats.lock);
    printf("writes %ld\n", stats.writes);
    pthread_rwlock_unlock(&stats.lock);
    printf("entries %ld (all equal: %s)\n", table[0], all_equal() ? "yes" : "no");
    printf("reads %ld, torn %ld\n", reads, torn);
    pthread_rwlock_destroy(&stats.lock);
    return 0;
}
