#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include "shared.h"

#define C_WORKERS 2
#define C_ROUNDS 2000

struct ledger ledger;

void ledger_init(void)
{
    pthread_mutex_init(&ledger.lock, NULL);
    pthread_cond_init(&ledger.changed, NULL);
}

void ledger_destroy(void)
{
    pthread_cond_destroy(&ledger.changed);
    pthread_mutex_destroy(&ledger.lock);
}

void ledger_deposit(int slot, long amount)
{
    pthread_mutex_lock(&ledger.lock);
    ledger.total += amount;
    ledger.deposits[slot % NSLOTS] += amount;
    pthread_mutex_unlock(&ledger.lock);
}

long ledger_slot(int slot)
{
    long v;
    pthread_mutex_lock(&ledger.lock);
    v = ledger.deposits[slot];
    pthread_mutex_unlock(&ledger.lock);
    return v;
}

static void *c_worker(void *arg)
{
    int id = (int)(long)arg;
    for (int i = 0; i < C_ROUNDS; i++)
        ledger_deposit(id + i, i % 7 + 1);
    pthread_mutex_lock(&ledger.lock);
    ledger.c_done++;
    pthread_cond_broadcast(&ledger.changed);
    pthread_mutex_unlock(&ledger.lock);
    return NULL;
}

int main(void)
{
    pthread_t c[C_WORKERS];
    ledger_init();
    for (long i = 0; i < C_WORKERS; i++)
        if (pthread_create(&c[i], NULL, c_worker, (void *)i) != 0)
            return 1;
    long from_cxx = app_run(2, 1500, C_WORKERS);
    for (int i = 0; i < C_WORKERS; i++)
        pthread_join(c[i], NULL);

    long total, sum = 0;
    pthread_mutex_lock(&ledger.lock);
    total = ledger.total;
    pthread_mutex_unlock(&ledger.lock);
    for (int s = 0; s < NSLOTS; s++) {
        long v = ledger_slot(s);
        printf("slot %d: %ld\n", s, v);
        sum += v;
    }
    printf("total %ld, slots %ld, from C++ %ld, C workers done %d\n", total, sum, from_cxx, ledger.c_done);
    ledger_destroy();
    if (total != sum) {
        fprintf(stderr, "total %ld != sum of slots %ld\n", total, sum);
        return 1;
    }
    return 0;
}
