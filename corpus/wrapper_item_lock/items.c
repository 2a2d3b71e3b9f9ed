/* memcached-style lock wrappers: item_lock(hv)/item_unlock(hv) pick a
 * stripe from the hash value and are used around several regions. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 2000
#define ITEM_LOCK_COUNT 16
#define NITEMS 64

static pthread_mutex_t item_locks[ITEM_LOCK_COUNT];
static int refcount[NITEMS];
static long value[NITEMS];

static void item_lock(uint32_t hv)
{
    pthread_mutex_lock(&item_locks[hv % ITEM_LOCK_COUNT]);
}

static void item_unlock(uint32_t hv)
{
    pthread_mutex_unlock(&item_locks[hv % ITEM_LOCK_COUNT]);
}

static uint32_t hash(uint32_t key)
{
    return key * 2654435761u;
}

static long item_get(uint32_t key)
{
    uint32_t hv = hash(key);
    long v;

    item_lock(hv);
    refcount[key]++;
    v = value[key];
    item_unlock(hv);
    return v;
}

static void item_release(uint32_t key)
{
    uint32_t hv = hash(key);

    item_lock(hv);
    refcount[key]--;
    item_unlock(hv);
}

static int item_incr(uint32_t key, long delta)
{
    uint32_t hv = hash(key);

    item_lock(hv);
    if (refcount[key] < 0) {
        item_unlock(hv);
        return -1;
    }
    value[key] += delta;
    item_unlock(hv);
    return 0;
}

static void *run(void *p)
{
    int id = *(int *)p;

    for (int i = 0; i < ITERS; i++) {
        uint32_t key = (uint32_t)(i * 5 + id) % NITEMS;
        item_get(key);
        if (item_incr(key, 3) != 0)
            return p;
        item_release(key);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int ids[NTHREADS];
    long total = 0;
    int refs = 0, failed = 0;

    for (int i = 0; i < ITEM_LOCK_COUNT; i++)
        pthread_mutex_init(&item_locks[i], NULL);
    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++) {
        void *ret;
        pthread_join(threads[i], &ret);
        failed |= ret != NULL;
    }
    for (uint32_t k = 0; k < NITEMS; k++) {
        total += item_get(k);
        item_release(k);
        refs += refcount[k];
    }

    printf("total=%ld refs=%d\n", total, refs);
    if (failed || total != 3L * NTHREADS * ITERS || refs != 0) {
        fprintf(stderr, "wrapper_item_lock: refcounts or values wrong\n");
        return 1;
    }
    return 0;
}
