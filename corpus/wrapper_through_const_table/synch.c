/* The MapReduce library's lock layer through an operations table: lock_acquire(l) is
 * `assert(l != NULL); OPS.acquire(l);` with `#define OPS mr_ptmutex_ops`, a const table of
 * pt_mutex.c whose .acquire is a static function calling pthread_mutex_lock. */
#include <assert.h>
#include <stddef.h>
#include "synch.h"

extern const mr_lock_ops mr_ptmutex_ops;
#define OPS mr_ptmutex_ops

mr_lock_t lock_alloc(void)
{
    mr_lock_t l = OPS.alloc();
    assert(l != NULL);
    return l;
}

void lock_acquire(mr_lock_t l)
{
    assert(l != NULL);
    OPS.acquire(l);
}

void lock_release(mr_lock_t l)
{
    assert(l != NULL);
    OPS.release(l);
}

void lock_free(mr_lock_t l)
{
    OPS.free(l);
}
