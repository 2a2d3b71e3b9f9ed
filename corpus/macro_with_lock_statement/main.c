/* Statement macros that take a lock, run something and release it:
 *   WITH_LOCK(l, x++);       the section is the macro's argument
 *   FAIL_JOB(job, e);        zstd's JOB_ERROR: `{ lock; job->err = e; unlock; goto out; }`, used as the
 *                            body of an `if`; the jump after the unlock runs in the caller
 *   DRAIN_OR_STOP(q);        a `break` inside its section: it cannot leave the section's function,
 *                            so that one stays lock/unlock calls (section-in-macro)
 * Each invocation's expansion is read once (its arguments substituted): the section between the
 * lock and the unlock is extracted at the invocation; the macros themselves stay defined. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 5000

#define WITH_LOCK(m, body) do { pthread_mutex_lock(&(m)); body; pthread_mutex_unlock(&(m)); } while (0)

#define FAIL_JOB(j, e) {                    \
    pthread_mutex_lock(&(j)->lock);         \
    (j)->err = (e);                         \
    (j)->failures++;                        \
    pthread_mutex_unlock(&(j)->lock);       \
    goto out;                               \
}

#define DRAIN_OR_STOP(q) do {                                           \
    pthread_mutex_lock(&(q)->lock);                                     \
    for (;;) { if ((q)->items == 0) break; (q)->items--; (q)->drained++; } \
    pthread_mutex_unlock(&(q)->lock);                                   \
} while (0)

struct job { pthread_mutex_t lock; int err; long failures, done; long items, drained; };

static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t sum_lock = PTHREAD_MUTEX_INITIALIZER;
static long count, sum;
static struct job job = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0 };

static int step(struct job *j, int i)
{
    if (i % 7 == 0)
        FAIL_JOB(j, -i);
    pthread_mutex_lock(&j->lock);
    j->done++;
    j->items += 2;
    pthread_mutex_unlock(&j->lock);
    DRAIN_OR_STOP(j);
    return 0;
out:
    return -1;
}

static void *run(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        WITH_LOCK(count_lock, count++);
        pthread_mutex_lock(&sum_lock);
        sum += id;
        pthread_mutex_unlock(&sum_lock);
        step(&job, i);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, run, (void *)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    printf("count=%ld sum=%ld failures=%ld done=%ld drained=%ld\n", count, sum, job.failures, job.done, job.drained);
    if (count != (long)NTHREADS * ITERS || sum != (long)ITERS * (0 + 1 + 2 + 3) || job.failures != NTHREADS * 715
        || job.done != NTHREADS * (ITERS - 715) || job.drained != 2 * job.done || job.items != 0) {
        fprintf(stderr, "macro_with_lock_statement: lost updates\n");
        return 1;
    }
    return 0;
}
