/* The public API (nng's shape): the mutex is an opaque struct, its platform type is not visible
   to the library's users. */
#ifndef LIB_H
#define LIB_H
typedef struct lib_mtx lib_mtx;
lib_mtx *lib_mtx_new(void);
void lib_mtx_free(lib_mtx *m);
void lib_mtx_lock(lib_mtx *m);
void lib_mtx_unlock(lib_mtx *m);
#endif
