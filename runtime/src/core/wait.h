/*
 * Waiting for another thread, under a lock's waiting policy (enum rcl_wait_policy in rclify.h).
 * Every queue, spin, combining and cohort lock waits through these two shapes:
 *
 *   a flag with one waiter (a queue node, a combining request): the waiter calls rcl_flag_wait
 *   until the flag is granted; the granting thread calls rcl_flag_grant, which wakes the waiter
 *   only when it went to sleep (its flag says PARKED), so a spinning hand-off costs no syscall;
 *
 *   a word with many waiters (a ticket counter, a lock word): rcl_word_wait sleeps while the
 *   word holds a value; whoever changes it calls rcl_word_wake, which makes a syscall only when
 *   some waiter counted itself in `sleepers`.
 *
 * Spinning budgets: `spin` never sleeps; `yield` spins RCL_SPIN_SHORT pauses then yields the CPU
 * between checks; `park` spins RCL_SPIN_SHORT then sleeps; `auto` spins up to RCL_SPIN_LONG
 * (LiTL's spin-then-park threshold) while fewer threads spin than there are CPUs, and parks at
 * once when they outnumber them: a spinning waiter would then only take the CPU the lock holder
 * needs to finish.
 */
#ifndef RCLIFY_WAIT_H
#define RCLIFY_WAIT_H

#include <time.h>

#include "core/atomics.h"

#define RCL_FLAG_WAITING 0
#define RCL_FLAG_GRANTED 1
#define RCL_FLAG_PARKED 2

#define RCL_SPIN_SHORT 128
#define RCL_SPIN_LONG 2700

/* Waits until *flag is RCL_FLAG_GRANTED (acquire: what the granter wrote before is visible).
 * The flag must start at RCL_FLAG_WAITING and have one waiter. */
void rcl_flag_wait(int *flag, int policy);

/* Grants *flag (release) and wakes its waiter if it sleeps.  The waiter may reuse the flag's
 * memory as soon as it sees the grant: nothing but the wake-up touches it after the store. */
void rcl_flag_grant(int *flag);

/* Waits while *word == value, or until abstime (on clock; NULL: no deadline).  Returns 0 once the
 * word was seen different (acquire), ETIMEDOUT when the deadline passed first, EINVAL for a
 * malformed abstime.  *sleepers counts the threads asleep on the word. */
int rcl_word_wait(int *word, int value, int *sleepers, int policy, clockid_t clock,
                  const struct timespec *abstime);

/* Called after changing *word (with a release store or RMW): wakes up to n sleepers, if any. */
void rcl_word_wake(int *word, int *sleepers, int n);

/* One step of a waiting loop that has no word to sleep on (a combiner's empty pass, a backoff):
 * pauses, yields or sleeps briefly according to policy and how long it has waited (*spins). */
void rcl_wait_step(unsigned *spins, int policy);

/* Online CPUs, read once. */
int rcl_cpu_count(void);

#endif
