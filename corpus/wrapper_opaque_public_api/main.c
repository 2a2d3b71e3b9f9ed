/* A user of the public API: it sees lib_mtx only as an opaque pointer. Sections through the
   outer wrapper are extracted; the generated code names no type of the inner layers. */
#include <pthread.h>
#include <stdio.h>
#include "lib.h"

static lib_mtx *mx;
static long total, rounds;

static void *worker(void *arg)
{
    for (int i = 0; i < 5000; i++) {
        lib_mtx_lock(mx);
        total += (long)arg;
        rounds++;
        lib_mtx_unlock(mx);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[4];
    mx = lib_mtx_new();
    if (mx == NULL)
        return 1;
    for (long k = 0; k < 4; k++)
        pthread_create(&t[k], NULL, worker, (void *)(k + 1));
    for (int k = 0; k < 4; k++)
        pthread_join(t[k], NULL);
    lib_mtx_free(mx);
    printf("total %ld rounds %ld\n", total, rounds);
    if (total != 5000L * 10 || rounds != 20000) {
        fprintf(stderr, "lost updates\n");
        return 1;
    }
    return 0;
}
