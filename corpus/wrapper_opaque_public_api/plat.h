/* The platform layer: a mutex type the library's own files see, and its checked lock calls. */
#ifndef PLAT_H
#define PLAT_H
#include <pthread.h>
typedef struct plat_mtx {
    pthread_mutex_t mtx;
} plat_mtx;
void plat_panic(const char *what, int err);
void plat_mtx_init(plat_mtx *m);
void plat_mtx_lock(plat_mtx *m);
void plat_mtx_unlock(plat_mtx *m);
#endif
