/* A small chained hash table with one mutex per bucket and a global stats
 * mutex taken after (never around) the bucket lock. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4
#define NBUCKETS 16
#define KEYS_PER_THREAD 500

struct entry { int key; long value; struct entry *next; };

struct bucket {
    pthread_mutex_t lock;
    struct entry *head;
};

static struct bucket table[NBUCKETS];
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long inserts, updates, hits, misses;

static unsigned bucket_of(int key)
{
    return ((unsigned)key * 2654435761u) % NBUCKETS;
}

static void put(int key, long value)
{
    struct bucket *b = &table[bucket_of(key)];
    struct entry *e, *fresh = malloc(sizeof(*fresh));
    int inserted = 0;

    if (fresh == NULL)
        abort();
    pthread_mutex_lock(&b->lock);
    for (e = b->head; e != NULL; e = e->next)
        if (e->key == key)
            break;
    if (e != NULL) {
        e->value += value;
    } else {
        fresh->key = key;
        fresh->value = value;
        fresh->next = b->head;
        b->head = fresh;
        fresh = NULL;
        inserted = 1;
    }
    pthread_mutex_unlock(&b->lock);
    free(fresh);

    pthread_mutex_lock(&stats_lock);
    if (inserted)
        inserts++;
    else
        updates++;
    pthread_mutex_unlock(&stats_lock);
}

static int get(int key, long *value)
{
    struct bucket *b = &table[bucket_of(key)];
    int found = 0;

    pthread_mutex_lock(&b->lock);
    for (struct entry *e = b->head; e != NULL; e = e->next) {
        if (e->key == key) {
            *value = e->value;
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&b->lock);

    pthread_mutex_lock(&stats_lock);
    if (found)
        hits++;
    else
        misses++;
    pthread_mutex_unlock(&stats_lock);
    return found;
}

static void *run(void *p)
{
    int id = *(int *)p;

    /* Key ranges overlap between neighbouring threads: some puts update. */
    for (int k = 0; k < KEYS_PER_THREAD; k++)
        put(id * (KEYS_PER_THREAD / 2) + k, 1);
    for (int k = 0; k < KEYS_PER_THREAD; k++) {
        long v;
        get(10000 + k, &v);            /* never present */
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int ids[NTHREADS];
    long sum = 0, found = 0;
    int nkeys = (NTHREADS + 1) * KEYS_PER_THREAD / 2;

    for (int i = 0; i < NBUCKETS; i++)
        pthread_mutex_init(&table[i].lock, NULL);
    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    for (int k = 0; k < nkeys; k++) {
        long v;
        if (get(k, &v)) {
            found++;
            sum += v;
        }
    }

    printf("keys=%ld sum=%ld inserts=%ld updates=%ld hits=%ld misses=%ld\n",
           found, sum, inserts, updates, hits, misses);
    for (int i = 0; i < NBUCKETS; i++) {
        while (table[i].head != NULL) {
            struct entry *e = table[i].head;
            table[i].head = e->next;
            free(e);
        }
        pthread_mutex_destroy(&table[i].lock);
    }
    if (found != nkeys || sum != (long)NTHREADS * KEYS_PER_THREAD ||
        inserts != nkeys || inserts + updates != sum) {
        fprintf(stderr, "hashtable_bucket_locks: table inconsistent\n");
        return 1;
    }
    return 0;
}
