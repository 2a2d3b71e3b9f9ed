#include "core.h"

void core_mtx_init(core_mtx *m)
{
    plat_mtx_init(m);
}

void core_mtx_lock(core_mtx *m)
{
    plat_mtx_lock(m);
}

void core_mtx_unlock(core_mtx *m)
{
    plat_mtx_unlock(m);
}
