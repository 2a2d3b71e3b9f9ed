/* Sections as plain as lib_mtx_lock(&s.mtx); ...; lib_mtx_unlock(&s.mtx); through two wrapper
   layers, and a wait on a condition variable that carries its mutex. */
#include <stdio.h>
#include "lib.h"
struct stats { lib_mtx mtx; lib_cv ready; long total; int done; };
static struct stats s;
static void *worker(void *arg) {
    for (int i = 0; i < 1000; i++) {
        lib_mtx_lock(&s.mtx);
        s.total += (long)arg;
        lib_mtx_unlock(&s.mtx);
    }
    lib_mtx_lock(&s.mtx);
    s.done++;
    lib_cv_signal(&s.ready);
    lib_mtx_unlock(&s.mtx);
    return NULL;
}
int main(void) {
    pthread_t t[3];
    lib_mtx_init(&s.mtx);
    lib_cv_init(&s.ready, &s.mtx);
    for (long i = 0; i < 3; i++) pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    lib_mtx_lock(&s.mtx);
    while (s.done < 3) lib_cv_wait(&s.ready);
    long total = s.total;
    lib_mtx_unlock(&s.mtx);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    printf("total=%ld\n", total);
    return 0;
}
