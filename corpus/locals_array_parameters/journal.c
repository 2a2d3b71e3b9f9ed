/* Parameters declared as arrays are pointers in the function: a `va_list` parameter (ag's
 * vplog(level, fmt, va_list args)), `long totals[2]`, `const int steps[]` reassigned in the
 * section; a parameter declared as a function is a pointer to it (fio's exit_thread(...,
 * void fn(struct writer_thread *)), reassigned in the section.  Four threads log, add, walk and
 * apply under one lock. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 2000

static pthread_mutex_t journal_lock = PTHREAD_MUTEX_INITIALIZER;
static char journal[64];
static long lines;
static long walked;

static void vrecord(const char *fmt, va_list args)
{
    pthread_mutex_lock(&journal_lock);
    vsnprintf(journal, sizeof journal, fmt, args);
    lines++;
    pthread_mutex_unlock(&journal_lock);
}

static void record(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vrecord(fmt, args);
    va_end(args);
}

static void add(long totals[2], long n)
{
    pthread_mutex_lock(&journal_lock);
    totals[0] += n;
    totals[1]++;
    pthread_mutex_unlock(&journal_lock);
}

static void walk(const int steps[], int skip)
{
    pthread_mutex_lock(&journal_lock);
    steps = steps + skip;
    walked += steps[0];
    pthread_mutex_unlock(&journal_lock);
}

static long applied;

static void bump_one(long *n)
{
    (*n)++;
}

static void bump_two(long *n)
{
    *n += 2;
}

static void apply(void step(long *), int twice)
{
    pthread_mutex_lock(&journal_lock);
    if (twice)
        step = bump_two;
    step(&applied);
    pthread_mutex_unlock(&journal_lock);
}

static long totals[2];
static const int steps[4] = {1, 2, 3, 4};

static void *worker(void *arg)
{
    long id = (long)arg;
    for (long i = 0; i < ROUNDS; i++) {
        record("worker %ld round %ld", id, i);
        add(totals, id + 1);
        walk(steps, (int)(i % 4));
        apply(bump_one, (int)(i % 2));
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; t++)
        pthread_create(&threads[t], NULL, worker, (void *)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    int last_ok = strncmp(journal, "worker ", 7) == 0 && strstr(journal, "round 1999") != NULL;
    printf("lines=%ld\n", lines);
    printf("totals=%ld %ld\n", totals[0], totals[1]);
    printf("walked=%ld\n", walked);
    printf("applied=%ld\n", applied);
    printf("last line well formed=%d\n", last_ok);
    if (lines != (long)THREADS * ROUNDS || totals[0] != (long)ROUNDS * THREADS * (THREADS + 1) / 2 ||
        totals[1] != (long)THREADS * ROUNDS || walked != (long)THREADS * ROUNDS / 4 * 10 || applied != (long)THREADS * ROUNDS / 2 * 3 || !last_ok) {
        fprintf(stderr, "wrong totals\n");
        return 1;
    }
    return 0;
}
