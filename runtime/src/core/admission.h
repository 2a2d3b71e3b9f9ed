/*
 * Concurrency restriction for locks that hand over in FIFO order (after Dice & Kogan, "Avoiding
 * scalability collapse by restricting concurrency", Euro-Par 2019, GCR).
 *
 * When threads outnumber CPUs, a FIFO lock hands each release to one particular waiter, usually
 * asleep: the lock then sits idle for a wake-up (tens of microseconds) per section, where
 * posix lets the running thread take it again.  On this project's 2-CPU machine ticket, MCS,
 * CLH and the cohort locks fell to 0.001x posix at 8 threads.  Admission caps the threads that
 * compete inside the algorithm (waiting in its queue) at the CPU count; the others wait outside,
 * asleep on one futex word, and are let in one at a time: when the admitted ones are all gone,
 * and every RCL_ADMISSION_PERIOD releases for fairness (a thread let in that way enters even over
 * the cap, so that nobody waits outside forever).
 *
 * Only threads that failed a first try enter: an uncontended lock pays nothing.
 */
#ifndef RCLIFY_ADMISSION_H
#define RCLIFY_ADMISSION_H

#include "core/atomics.h"

#define RCL_ADMISSION_PERIOD 256

struct rcl_admission {
    int active;  /* admitted threads: waiting inside the algorithm or holding after waiting */
    int admit;   /* futex word, bumped to let one outside thread in */
    int outside; /* threads asleep on admit */
} RCL_ALIGNED;

/* Waits until the calling thread may compete for the lock; it is then counted in active. */
void rcl_admission_enter(struct rcl_admission *a);
/* Called by an admitted thread after releasing the lock; `fair`: let one outside thread in
 * even though others are still admitted. */
void rcl_admission_leave(struct rcl_admission *a, int fair);

#endif
