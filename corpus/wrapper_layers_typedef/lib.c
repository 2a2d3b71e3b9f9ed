/* The public layer: typedefs of the platform types, wrappers over the platform wrappers. */
#include "lib.h"
int lib_mtx_init(lib_mtx *m) { return plat_mtx_init(m); }
void lib_mtx_lock(lib_mtx *m) { plat_mtx_lock(m); }
void lib_mtx_unlock(lib_mtx *m) { plat_mtx_unlock(m); }
void lib_cv_init(lib_cv *c, lib_mtx *m) { plat_cv_init(c, m); }
void lib_cv_wait(lib_cv *c) { plat_cv_wait(c); }
void lib_cv_signal(lib_cv *c) { plat_cv_signal(c); }
