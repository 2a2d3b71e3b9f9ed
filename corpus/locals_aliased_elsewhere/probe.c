/* Locals the section only reads by name but that change through a pointer taken elsewhere in
   the function: a lookup helper writes `found` through a pointer stored in a struct before the
   lock, an alias `fp` written inside the section, and a countdown latch on main's stack that
   workers decrement through its address while main waits on it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ROUNDS 3000

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t all_done = PTHREAD_COND_INITIALIZER;
static long hits, misses, alias_hits;

struct probe {
    int *found;
    int key;
};

struct job {
    int *remaining; /* main's latch */
    long id;
    long sum;
};

static long total;

static void lookup(struct probe *p)
{
    if (p->key % 3 == 0)
        *p->found = 1;
}

static void *worker(void *arg)
{
    struct job *job = arg;
    for (int i = 0; i < ROUNDS; i++) {
        int found = 0;
        struct probe pr = { &found, i + (int)job->id };
        pthread_mutex_lock(&table_lock);
        lookup(&pr);
        if (found)
            hits++;
        else
            misses++;
        pthread_mutex_unlock(&table_lock);

        int seen = 0, *fp = &seen;
        pthread_mutex_lock(&table_lock);
        if (i % 2 == 0)
            *fp = 1;
        if (seen)
            alias_hits++;
        pthread_mutex_unlock(&table_lock);
        job->sum += i;
    }
    pthread_mutex_lock(&table_lock);
    total += job->sum;
    if (--*job->remaining == 0)
        pthread_cond_broadcast(&all_done);
    pthread_mutex_unlock(&table_lock);
    return NULL;
}

int main(void)
{
    pthread_t threads[THREADS];
    struct job jobs[THREADS];
    int remaining = THREADS;
    for (long t = 0; t < THREADS; t++) {
        jobs[t] = (struct job){ &remaining, t, 0 };
        pthread_create(&threads[t], NULL, worker, &jobs[t]);
    }
    pthread_mutex_lock(&table_lock);
    while (remaining > 0)
        pthread_cond_wait(&all_done, &table_lock);
    long seen_total = total;
    pthread_mutex_unlock(&table_lock);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    printf("hits=%ld misses=%ld alias_hits=%ld total=%ld\n", hits, misses, alias_hits, seen_total);
    if (hits + misses != THREADS * ROUNDS || alias_hits != THREADS * ROUNDS / 2) {
        fprintf(stderr, "lost a write through a pointer\n");
        return 1;
    }
    return 0;
}
