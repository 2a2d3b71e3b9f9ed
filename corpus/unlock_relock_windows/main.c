/* Regions that drop their lock in the middle of nested code and take it again (a window):
 * a cache that loads on a miss with the lock released (libmicrohttpd-style `if (miss) { unlock;
 * load; lock; insert; }`); a shutdown sweep that joins each worker with the lock released, inside
 * an `if` of a while loop that restarts from the list's head after each join, then a second
 * window in a for loop (libmicrohttpd's close_all_connections); a window in a switch case; a
 * window whose unlocked part runs a loop of its own with a break; windows through lock and unlock
 * wrappers that do work of their own; a loop whose body's locals live across its window. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4
#define NKEYS 64

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static int cache[NKEYS], valid[NKEYS];
static long loads;

static int load_from_disk(int key) { return key * 7 + 1; }

static int cache_get(int key)
{
    int v;

    pthread_mutex_lock(&cache_lock);
    if (!valid[key]) {
        pthread_mutex_unlock(&cache_lock);
        v = load_from_disk(key);
        pthread_mutex_lock(&cache_lock);
        if (!valid[key]) {
            cache[key] = v;
            valid[key] = 1;
            loads++;
        }
    }
    v = cache[key];
    pthread_mutex_unlock(&cache_lock);
    return v;
}

struct worker { pthread_t pid; int claimed, joined, audited; long result; struct worker *prev; };
struct pool { pthread_mutex_t mutex; struct worker *tail; long audit; int sweeps; };
static struct pool pool = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 };

static void *work(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < 200; i++)
        w->result += cache_get((i * 13) % NKEYS) % 3;
    return NULL;
}

static long audit_of(const struct worker *w) { return w->result % 11; }

/* libmicrohttpd's close_all_connections: join with the lock released, restart from the tail */
static void close_all(struct pool *p)
{
    struct worker *pos;
    long value;

    pthread_mutex_lock(&p->mutex);
    p->sweeps++;
    pos = p->tail;
    while (NULL != pos) {
        if (!pos->claimed) {
            pos->claimed = 1;
            pthread_mutex_unlock(&p->mutex);
            if (pthread_join(pos->pid, NULL) != 0)
                return; /* never taken: the caller's return, unlocked */
            pthread_mutex_lock(&p->mutex);
            pos->joined = 1;
            pos = p->tail;
            continue;
        }
        pos = pos->prev;
    }
    for (pos = p->tail; NULL != pos; pos = pos->prev) {
        if (!pos->audited) {
            pos->audited = 1;
            pthread_mutex_unlock(&p->mutex);
            value = audit_of(pos);
            pthread_mutex_lock(&p->mutex);
            p->audit += value;
        }
    }
    pthread_mutex_unlock(&p->mutex);
}

/* a window in a switch case; one whose unlocked part loops and breaks on its own */
static long classify(struct pool *p, int kind)
{
    long seen = 0;
    int i;

    pthread_mutex_lock(&p->mutex);
    switch (kind) {
    case 0:
        seen = p->sweeps;
        break;
    case 1:
        pthread_mutex_unlock(&p->mutex);
        seen = cache_get(kind) + 1000;
        pthread_mutex_lock(&p->mutex);
        seen += p->sweeps;
        break;
    default:
        if (p->audit > 0) {
            pthread_mutex_unlock(&p->mutex);
            for (i = 0; i < 100; i++) {
                if (i * i > 50)
                    break;
                seen += i;
            }
            pthread_mutex_lock(&p->mutex);
            seen += p->audit;
        }
        break;
    }
    pthread_mutex_unlock(&p->mutex);
    return seen;
}

/* windows through wrappers whose work counts each taking and each release */
static long takes, gives;
static void take(struct pool *p) { pthread_mutex_lock(&p->mutex); takes++; }
static void give(struct pool *p) { gives++; pthread_mutex_unlock(&p->mutex); }

static long tally(struct pool *p)
{
    long sum = 0;
    struct worker *pos;

    take(p);
    for (pos = p->tail; pos != NULL; pos = pos->prev) {
        if (pos->joined) {
            give(p);
            sum += pos->result;
            take(p);
        }
    }
    give(p);
    return sum;
}

/* a worker loop's locals declared in its body, live across its window (memcached's
   storage_write_thread): the caller holds them between the section's runs */
static long rounds_with_locals(struct pool *p)
{
    long total = 0;
    int round = 0;

    pthread_mutex_lock(&p->mutex);
    while (round < 5) {
        int before = p->sweeps + round;
        long weight = before * 2;
        round++;
        if (round % 2) {
            pthread_mutex_unlock(&p->mutex);
            weight += cache_get(round);
            pthread_mutex_lock(&p->mutex);
        }
        total += weight + before;
    }
    pthread_mutex_unlock(&p->mutex);
    return total;
}

int main(void)
{
    static struct worker workers[NTHREADS];
    long expected_audit = 0, expected_sum = 0;

    for (int i = 0; i < NTHREADS; i++) {
        workers[i].result = i;
        workers[i].prev = pool.tail;
        pool.tail = &workers[i];
        pthread_create(&workers[i].pid, NULL, work, &workers[i]);
    }
    close_all(&pool);
    close_all(&pool); /* nothing left to join or audit */
    for (int i = 0; i < NTHREADS; i++) {
        expected_audit += workers[i].result % 11;
        expected_sum += workers[i].result;
        if (!workers[i].joined) {
            fprintf(stderr, "worker %d not joined\n", i);
            return 1;
        }
    }
    long c0 = classify(&pool, 0), c1 = classify(&pool, 1), c2 = classify(&pool, 2);
    long sum = tally(&pool);
    long weighted = rounds_with_locals(&pool);
    printf("loads=%ld sweeps=%d audit_ok=%d classify=%ld,%ld,%ld tally_ok=%d takes=%ld gives=%ld weighted=%ld\n",
           loads, pool.sweeps, pool.audit == expected_audit, c0, c1, c2 - pool.audit, sum == expected_sum, takes,
           gives, weighted);
    if (loads != NKEYS || pool.audit != expected_audit || sum != expected_sum || c1 != 1010 || c2 - pool.audit != 28
        || takes != NTHREADS + 1 || gives != NTHREADS + 1 || weighted != 126) {
        fprintf(stderr, "wrong totals\n");
        return 1;
    }
    return 0;
}
