/* Accounts are malloc'd structs that embed their own mutex; regions lock
 * `&a->lock` through a pointer to the heap object. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4
#define NACCOUNTS 6
#define ITERS 2000

struct account {
    pthread_mutex_t lock;
    long balance;
    int ops;
};

static struct account *accounts[NACCOUNTS];

static struct account *account_new(long balance)
{
    struct account *a = malloc(sizeof(*a));
    if (a == NULL)
        abort();
    pthread_mutex_init(&a->lock, NULL);
    a->balance = balance;
    a->ops = 0;
    return a;
}

static void account_add(struct account *a, long delta)
{
    pthread_mutex_lock(&a->lock);
    a->balance += delta;
    a->ops++;
    pthread_mutex_unlock(&a->lock);
}

static void *run(void *p)
{
    int id = *(int *)p;

    for (int i = 0; i < ITERS; i++) {
        int from = (id + i) % NACCOUNTS;
        int to = (from + 1 + i % (NACCOUNTS - 1)) % NACCOUNTS;
        long amount = 1 + (i % 9);

        account_add(accounts[from], -amount);
        struct account *dst = accounts[to];
        pthread_mutex_lock(&dst->lock);
        dst->balance += amount;
        dst->ops++;
        pthread_mutex_unlock(&dst->lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int ids[NTHREADS];
    long total = 0;
    int ops = 0;

    for (int i = 0; i < NACCOUNTS; i++)
        accounts[i] = account_new(1000 * (i + 1));
    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < NACCOUNTS; i++) {
        total += accounts[i]->balance;
        ops += accounts[i]->ops;
        printf("account%d=%ld\n", i, accounts[i]->balance);
        pthread_mutex_destroy(&accounts[i]->lock);
        free(accounts[i]);
    }

    printf("total=%ld ops=%d\n", total, ops);
    if (total != 21000 || ops != 2 * NTHREADS * ITERS) {
        fprintf(stderr, "lockexpr_heap_struct_field: money not conserved\n");
        return 1;
    }
    return 0;
}
