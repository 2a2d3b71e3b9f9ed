/* Two files define the same lock macro over different mutexes (memcached's STAT_L in proxy.h and
 * extstore.c); four threads use both. */
#include <pthread.h>
#include <stdio.h>

#include "proxy.h"
#include "store.h"

#define THREADS 4
#define ROUNDS 5000

static struct proxy_ctx ctx;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (long i = 0; i < ROUNDS; i++) {
        proxy_request(&ctx);
        store_write((int)(id + 1));
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[THREADS];
    proxy_init(&ctx);
    for (long t = 0; t < THREADS; t++)
        pthread_create(&threads[t], NULL, worker, (void *)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    printf("requests=%ld\n", ctx.requests);
    printf("pages=%ld\n", store_pages());
    if (ctx.requests != (long)THREADS * ROUNDS || store_pages() != (long)ROUNDS * THREADS * (THREADS + 1) / 2) {
        fprintf(stderr, "wrong totals\n");
        return 1;
    }
    return 0;
}
