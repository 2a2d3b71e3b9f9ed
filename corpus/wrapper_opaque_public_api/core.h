/* The library's core layer: its mutex is the platform's under another name (nng's nni_mtx). */
#ifndef CORE_H
#define CORE_H
#include "plat.h"
typedef plat_mtx core_mtx;
void core_mtx_init(core_mtx *m);
void core_mtx_lock(core_mtx *m);
void core_mtx_unlock(core_mtx *m);
#endif
