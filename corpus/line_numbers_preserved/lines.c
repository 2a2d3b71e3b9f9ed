/* __LINE__ after a transformation: before the first extraction, in an early exit's tail, after
 * a wrapper's generated accessor, and after a section.  Assert messages and logs print it. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ROUNDS 1000

static int before_any = __LINE__;
static pthread_mutex_t locks[2];
static long counts[2];
static int tail_line, after_accessor_line, after_section_line;

void slot_lock(unsigned i)
{
    pthread_mutex_lock(&locks[i % 2]);
}
static int after_wrapper = __LINE__;

void slot_unlock(unsigned i)
{
    pthread_mutex_unlock(&locks[i % 2]);
}

static int bump(unsigned i, long limit)
{
    slot_lock(i);
    if (counts[i % 2] >= limit) {
        slot_unlock(i);
        tail_line = __LINE__;
        return 0;
    }
    counts[i % 2]++;
    slot_unlock(i);
    after_section_line = __LINE__;
    return 1;
}

static void *worker(void *arg)
{
    unsigned id = (unsigned)(unsigned long)arg;
    for (int r = 0; r < ROUNDS; r++)
        bump(id + (unsigned)r, (long)ROUNDS * THREADS);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (int i = 0; i < 2; i++)
        pthread_mutex_init(&locks[i], NULL);
    after_accessor_line = after_wrapper;
    for (unsigned long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    bump(0, 0); /* takes the early exit */
    printf("before any: %d\nafter the wrapper: %d\nexit tail: %d\nafter a section: %d\ntotal: %ld\n",
           before_any, after_accessor_line, tail_line, after_section_line, counts[0] + counts[1]);
    printf("main: %d\n", __LINE__);
    return counts[0] + counts[1] == (long)ROUNDS * THREADS ? 0 : 1;
}
