/*
 * Concurrency restriction (core/admission.h).  The futex protocol is a Dekker pair on
 * (outside, active), both with sequentially consistent RMWs and loads: a thread going outside
 * counts itself in `outside` and then looks at `active`; a leaving thread decrements `active` and
 * then looks at `outside`.  One of the two sees the other, so a thread never sleeps outside while
 * nobody is left inside to let it in.
 */
#include "core/admission.h"
#include "core/wait.h"

static int cap(void)
{
    return rcl_cpu_count();
}

void rcl_admission_enter(struct rcl_admission *a)
{
    for (;;) {
        if (__atomic_add_fetch(&a->active, 1, __ATOMIC_SEQ_CST) <= cap())
            return;
        __atomic_add_fetch(&a->active, -1, __ATOMIC_SEQ_CST);
        int seen = __atomic_load_n(&a->admit, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&a->outside, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&a->active, __ATOMIC_SEQ_CST) >= cap())
            rcl_futex_wait(&a->admit, seen, NULL);
        __atomic_add_fetch(&a->outside, -1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&a->admit, __ATOMIC_SEQ_CST) != seen) {
            /* let in (or another thread was): enter, over the cap if need be */
            __atomic_add_fetch(&a->active, 1, __ATOMIC_SEQ_CST);
            return;
        }
    }
}

void rcl_admission_leave(struct rcl_admission *a, int fair)
{
    int left = __atomic_add_fetch(&a->active, -1, __ATOMIC_SEQ_CST);
    if ((left == 0 || fair) && __atomic_load_n(&a->outside, __ATOMIC_SEQ_CST) > 0) {
        __atomic_add_fetch(&a->admit, 1, __ATOMIC_SEQ_CST);
        rcl_futex_wake(&a->admit, 1);
    }
}
