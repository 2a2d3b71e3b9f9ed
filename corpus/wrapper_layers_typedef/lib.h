#ifndef LIB_H
#define LIB_H
#include "plat.h"
typedef plat_mtx lib_mtx;
typedef plat_cv lib_cv;
int lib_mtx_init(lib_mtx *m);
void lib_mtx_lock(lib_mtx *m);
void lib_mtx_unlock(lib_mtx *m);
void lib_cv_init(lib_cv *c, lib_mtx *m);
void lib_cv_wait(lib_cv *c);
void lib_cv_signal(lib_cv *c);
#endif
