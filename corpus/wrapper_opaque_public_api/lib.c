#include <stdlib.h>
#include "lib.h"
#include "core.h"

struct lib_mtx {
    core_mtx m;
};

lib_mtx *lib_mtx_new(void)
{
    lib_mtx *m = malloc(sizeof(*m));
    if (m != NULL)
        core_mtx_init(&m->m);
    return m;
}

void lib_mtx_free(lib_mtx *m)
{
    free(m);
}

void lib_mtx_lock(lib_mtx *m)
{
    core_mtx_lock(&m->m);
}

void lib_mtx_unlock(lib_mtx *m)
{
    core_mtx_unlock(&m->m);
}
