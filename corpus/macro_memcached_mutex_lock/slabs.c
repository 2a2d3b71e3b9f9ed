/* memcached-style lock macros: `mutex_lock(x)` takes a pointer, exactly as
 * memcached.h defines it, and is used with &slabs_lock and per-class locks. */
#include <pthread.h>
#include <stdio.h>

#define mutex_lock(x) pthread_mutex_lock(x)
#define mutex_unlock(x) pthread_mutex_unlock(x)

#define NTHREADS 4
#define ITERS 2000
#define NCLASSES 4
#define PER_CLASS_LIMIT 1500

typedef struct {
    pthread_mutex_t lock;
    unsigned int used;
    unsigned int failures;
} slabclass_t;

static pthread_mutex_t slabs_lock = PTHREAD_MUTEX_INITIALIZER;
static slabclass_t slabclass[NCLASSES];
static size_t mem_malloced;

static int slabs_alloc(unsigned int id, size_t size)
{
    slabclass_t *p = &slabclass[id];
    int ret;

    mutex_lock(&p->lock);
    if (p->used >= PER_CLASS_LIMIT) {
        p->failures++;
        ret = -1;
    } else {
        p->used++;
        ret = 0;
    }
    mutex_unlock(&p->lock);
    if (ret == 0) {
        mutex_lock(&slabs_lock);
        mem_malloced += size;
        mutex_unlock(&slabs_lock);
    }
    return ret;
}

static void *run(void *arg)
{
    int id = *(int *)arg;
    int *ok = arg;

    *ok = 0;
    for (int i = 0; i < ITERS; i++)
        if (slabs_alloc((unsigned int)(i + id) % NCLASSES, 64) == 0)
            (*ok)++;
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int args[NTHREADS];
    int ok = 0;
    unsigned int failures = 0;

    for (int i = 0; i < NCLASSES; i++)
        pthread_mutex_init(&slabclass[i].lock, NULL);
    for (int i = 0; i < NTHREADS; i++) {
        args[i] = i;
        pthread_create(&threads[i], NULL, run, &args[i]);
    }
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        ok += args[i];
    }
    for (int i = 0; i < NCLASSES; i++) {
        printf("class%d used=%u\n", i, slabclass[i].used);
        failures += slabclass[i].failures;
    }
    printf("allocated=%d failed=%u mem=%zu\n", ok, failures, mem_malloced);
    if (ok != NCLASSES * PER_CLASS_LIMIT || mem_malloced != 64u * (size_t)ok) {
        fprintf(stderr, "macro_memcached_mutex_lock: slab accounting wrong\n");
        return 1;
    }
    return 0;
}
