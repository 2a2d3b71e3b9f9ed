/* A miniature memcached: striped item locks behind item_lock()/item_unlock()
 * wrappers, a global stats lock nested inside item regions, early returns,
 * and an LRU maintainer thread woken with a condvar from inside a region. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4
#define KEYS_PER_THREAD 200
#define KEY_STRIDE 150                /* neighbours overlap by 50 keys */
#define ITEM_LOCK_COUNT 8
#define HASH_SIZE 64                  /* multiple of ITEM_LOCK_COUNT */

typedef struct _item {
    struct _item *h_next;
    uint32_t key;
    int refcount;
    long value;
} item;

static pthread_mutex_t item_locks[ITEM_LOCK_COUNT];
static item *primary_hashtable[HASH_SIZE];

static struct {
    pthread_mutex_t mutex;
    uint64_t get_hits, get_misses, curr_items, total_items, store_dupes;
} stats = { .mutex = PTHREAD_MUTEX_INITIALIZER };

static pthread_mutex_t lru_maintainer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lru_maintainer_cond = PTHREAD_COND_INITIALIZER;
static int lru_pending, lru_stop;
static long lru_processed;

static uint32_t hash(uint32_t key) { return key * 2654435761u; }

static void item_lock(uint32_t hv)
{
    pthread_mutex_lock(&item_locks[hv % ITEM_LOCK_COUNT]);
}

static void item_unlock(uint32_t hv)
{
    pthread_mutex_unlock(&item_locks[hv % ITEM_LOCK_COUNT]);
}

/* Returns a referenced item and its value, or NULL on a miss. */
static item *item_get(uint32_t key, long *value)
{
    uint32_t hv = hash(key);
    item *it;

    item_lock(hv);
    for (it = primary_hashtable[hv % HASH_SIZE]; it != NULL; it = it->h_next)
        if (it->key == key)
            break;
    if (it == NULL) {
        pthread_mutex_lock(&stats.mutex);
        stats.get_misses++;
        pthread_mutex_unlock(&stats.mutex);
        item_unlock(hv);
        return NULL;
    }
    it->refcount++;
    *value = it->value;
    pthread_mutex_lock(&stats.mutex);
    stats.get_hits++;
    pthread_mutex_unlock(&stats.mutex);
    item_unlock(hv);
    return it;
}

static void item_remove(item *it)
{
    uint32_t hv = hash(it->key);

    item_lock(hv);
    it->refcount--;
    item_unlock(hv);
}

/* Returns 1 if a new item was linked, 0 if an existing one was replaced. */
static int item_store(uint32_t key, long value)
{
    uint32_t hv = hash(key);
    item *it, *fresh = malloc(sizeof(*fresh));

    if (fresh == NULL)
        abort();
    item_lock(hv);
    for (it = primary_hashtable[hv % HASH_SIZE]; it != NULL; it = it->h_next)
        if (it->key == key)
            break;
    if (it != NULL) {
        it->value = value;
        pthread_mutex_lock(&stats.mutex);
        stats.store_dupes++;
        pthread_mutex_unlock(&stats.mutex);
        item_unlock(hv);
        free(fresh);
        return 0;
    }
    fresh->key = key;
    fresh->value = value;
    fresh->refcount = 0;
    fresh->h_next = primary_hashtable[hv % HASH_SIZE];
    primary_hashtable[hv % HASH_SIZE] = fresh;
    pthread_mutex_lock(&stats.mutex);
    stats.curr_items++;
    stats.total_items++;
    pthread_mutex_unlock(&stats.mutex);
    pthread_mutex_lock(&lru_maintainer_lock);
    lru_pending++;
    pthread_cond_signal(&lru_maintainer_cond);
    pthread_mutex_unlock(&lru_maintainer_lock);
    item_unlock(hv);
    return 1;
}

static void *lru_maintainer(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lru_maintainer_lock);
    for (;;) {
        while (lru_pending == 0 && !lru_stop)
            pthread_cond_wait(&lru_maintainer_cond, &lru_maintainer_lock);
        if (lru_pending == 0)
            break;
        lru_processed += lru_pending;
        lru_pending = 0;
    }
    pthread_mutex_unlock(&lru_maintainer_lock);
    return NULL;
}

static void *worker(void *p)
{
    uint32_t base = (uint32_t)*(int *)p * KEY_STRIDE;
    int bad = 0;

    for (uint32_t k = base; k < base + KEYS_PER_THREAD; k++)
        item_store(k, (long)k * 10);
    for (uint32_t k = base; k < base + KEYS_PER_THREAD; k++) {
        long v = -1;
        item *it = item_get(k, &v);
        if (it == NULL || v != (long)k * 10)
            bad = 1;
        if (it != NULL)
            item_remove(it);
        if (item_get(100000 + k, &v) != NULL)
            bad = 1;
    }
    return bad ? p : NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS], maintainer;
    int ids[NTHREADS];
    int failed = 0, refs = 0;
    long sum = 0;

    for (int i = 0; i < ITEM_LOCK_COUNT; i++)
        pthread_mutex_init(&item_locks[i], NULL);
    pthread_create(&maintainer, NULL, lru_maintainer, NULL);
    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, worker, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++) {
        void *ret;
        pthread_join(threads[i], &ret);
        failed |= ret != NULL;
    }
    pthread_mutex_lock(&lru_maintainer_lock);
    lru_stop = 1;
    pthread_cond_signal(&lru_maintainer_cond);
    pthread_mutex_unlock(&lru_maintainer_lock);
    pthread_join(maintainer, NULL);

    for (int b = 0; b < HASH_SIZE; b++) {
        while (primary_hashtable[b] != NULL) {
            item *it = primary_hashtable[b];
            primary_hashtable[b] = it->h_next;
            sum += it->value;
            refs += it->refcount;
            free(it);
        }
    }

    printf("curr_items=%llu total_items=%llu store_dupes=%llu\n",
           (unsigned long long)stats.curr_items,
           (unsigned long long)stats.total_items,
           (unsigned long long)stats.store_dupes);
    printf("get_hits=%llu get_misses=%llu lru_processed=%ld value_sum=%ld\n",
           (unsigned long long)stats.get_hits,
           (unsigned long long)stats.get_misses, lru_processed, sum);
    if (failed || refs != 0 || (long)stats.curr_items != lru_processed ||
        stats.curr_items + stats.store_dupes != NTHREADS * KEYS_PER_THREAD) {
        fprintf(stderr, "kitchen_sink_cache: cache inconsistent\n");
        return 1;
    }
    return 0;
}
