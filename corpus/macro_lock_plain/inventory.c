/* Locking through function-like macros that expand to the pthread call. */
#include <pthread.h>
#include <stdio.h>

#define LOCK(m)   pthread_mutex_lock(&(m))
#define UNLOCK(m) pthread_mutex_unlock(&(m))

#define NTHREADS 4
#define ITERS 2500
#define NITEMS 10

struct inventory {
    pthread_mutex_t mu;
    int stock[NITEMS];
    int sold;
    int refused;
};

static struct inventory inv = { .mu = PTHREAD_MUTEX_INITIALIZER };

static int sell(int item)
{
    LOCK(inv.mu);
    if (inv.stock[item] == 0) {
        inv.refused++;
        UNLOCK(inv.mu);
        return 0;
    }
    inv.stock[item]--;
    inv.sold++;
    UNLOCK(inv.mu);
    return 1;
}

static void restock(int item, int n)
{
    LOCK(inv.mu);
    inv.stock[item] += n;
    UNLOCK(inv.mu);
}

static void *run(void *p)
{
    int id = *(int *)p;
    int *sold = p;

    *sold = 0;
    for (int i = 0; i < ITERS; i++) {
        int item = (id + i) % NITEMS;
        if (i % 2 == 0)
            restock(item, 1);
        *sold += sell(item);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int args[NTHREADS];
    int sold = 0, left = 0;

    for (int i = 0; i < NTHREADS; i++) {
        args[i] = i;
        pthread_create(&threads[i], NULL, run, &args[i]);
    }
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        sold += args[i];
    }
    for (int i = 0; i < NITEMS; i++)
        left += inv.stock[i];

    /* Each thread restocks 1250 units: sold + left must equal 5000. */
    printf("restocked=%d consistent=%d\n", NTHREADS * ITERS / 2,
           sold == inv.sold && sold + left == NTHREADS * ITERS / 2 &&
           inv.sold + inv.refused == NTHREADS * ITERS);
    if (sold != inv.sold || sold + left != NTHREADS * ITERS / 2) {
        fprintf(stderr, "macro_lock_plain: stock inconsistent\n");
        return 1;
    }
    return 0;
}
