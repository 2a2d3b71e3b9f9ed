/* The platform layer of a portable library: a mutex struct, a static checked helper that panics
   on error, exported wrappers over it, and a condition variable that carries its mutex. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "plat.h"
static void plat_panic(const char *what, int err) { fprintf(stderr, "%s: %s\n", what, strerror(err)); abort(); }
static void mtx_lock_checked(plat_mtx *m) { int err = pthread_mutex_lock(&m->mtx); if (err) plat_panic("lock", err); }
static void mtx_unlock_checked(plat_mtx *m) { int err = pthread_mutex_unlock(&m->mtx); if (err) plat_panic("unlock", err); }
int plat_mtx_init(plat_mtx *m) { return pthread_mutex_init(&m->mtx, NULL); }
void plat_mtx_lock(plat_mtx *m) { mtx_lock_checked(m); }
void plat_mtx_unlock(plat_mtx *m) { mtx_unlock_checked(m); }
void plat_cv_init(plat_cv *c, plat_mtx *m) { pthread_cond_init(&c->cv, NULL); c->m = m; }
void plat_cv_wait(plat_cv *c) { pthread_cond_wait(&c->cv, &c->m->mtx); }
void plat_cv_signal(plat_cv *c) { pthread_cond_signal(&c->cv); }
