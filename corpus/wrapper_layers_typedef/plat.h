#ifndef PLAT_H
#define PLAT_H
#include <pthread.h>
typedef struct plat_mtx { pthread_mutex_t mtx; } plat_mtx;
typedef struct plat_cv { pthread_cond_t cv; plat_mtx *m; } plat_cv;
int plat_mtx_init(plat_mtx *m);
void plat_mtx_lock(plat_mtx *m);
void plat_mtx_unlock(plat_mtx *m);
void plat_cv_init(plat_cv *c, plat_mtx *m);
void plat_cv_wait(plat_cv *c);
void plat_cv_signal(plat_cv *c);
#endif
