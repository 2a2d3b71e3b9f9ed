/* A tiny key/value array; apply() takes the lock once and unlocks in each
 * `case` of a switch on the operation (return, break, fall out). */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ROUNDS 1000
#define NKEYS 16

enum op { OP_PUT, OP_ADD, OP_GET, OP_DEL, OP_BOGUS };

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static long store[NKEYS];
static int bogus_ops;

static long apply(enum op op, int key, long arg)
{
    long old;

    pthread_mutex_lock(&store_lock);
    switch (op) {
    case OP_PUT:
        old = store[key];
        store[key] = arg;
        pthread_mutex_unlock(&store_lock);
        return old;
    case OP_ADD:
        store[key] += arg;
        old = store[key];
        pthread_mutex_unlock(&store_lock);
        break;
    case OP_GET:
        old = store[key];
        pthread_mutex_unlock(&store_lock);
        return old;
    case OP_DEL:
        old = store[key];
        store[key] = 0;
        pthread_mutex_unlock(&store_lock);
        return -old;
    default:
        bogus_ops++;
        pthread_mutex_unlock(&store_lock);
        return 0;
    }
    return old > 0 ? 1 : 0;
}

static void *worker(void *arg)
{
    int id = *(int *)arg;
    int key = id;                      /* each thread owns keys id and id+8 */

    for (int r = 0; r < ROUNDS; r++) {
        apply(OP_PUT, key, 0);
        apply(OP_ADD, key, r);
        apply(OP_ADD, key + 8, 1);
        if (apply(OP_GET, key, 0) != r)
            apply(OP_BOGUS, 0, 0);
        if (apply(OP_DEL, key, 0) != -r)
            apply(OP_BOGUS, 0, 0);
    }
    apply(OP_BOGUS, 0, 0);             /* exactly one expected per thread */
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int ids[NTHREADS];
    long total = 0;

    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, worker, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    for (int k = 0; k < NKEYS; k++)
        total += store[k];

    printf("total=%ld bogus=%d\n", total, bogus_ops);
    if (total != (long)NTHREADS * ROUNDS || bogus_ops != NTHREADS) {
        fprintf(stderr, "exit_unlock_in_switch: wrong store contents\n");
        return 1;
    }
    return 0;
}
