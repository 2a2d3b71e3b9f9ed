/* Worker loops that hold their lock at the loop's test and release it in the body to do the work
 * (libuv's threadpool worker, libmicrohttpd's cleanup loops): a for(;;) thread-pool worker that
 * waits on a condvar, skips jobs with a `continue` under the lock and leaves with
 * `unlock; break;`; a while loop whose lock is released after it, with work after the loop;
 * a for loop with a first clause and a step, a `continue` after the relock and a lock-held break;
 * a carried loop inside an outer loop, whose `unlock; continue;` after it continues the outer one. */
#include <pthread.h>
#include <stdio.h>

#define NWORKERS 3
#define NJOBS 2000

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t done_mutex = PTHREAD_MUTEX_INITIALIZER;
static int queue[NJOBS + NWORKERS];
static int head, tail, idle;
static long done_sum, done_count;

static void *worker(void *arg)
{
    int job;
    long mine = 0;
    (void)arg;
    pthread_mutex_lock(&mutex);
    for (;;) {
        while (head == tail) {
            idle++;
            pthread_cond_wait(&cond, &mutex);
            idle--;
        }
        job = queue[head];
        if (job < 0) {
            pthread_cond_signal(&cond);
            pthread_mutex_unlock(&mutex);
            break;
        }
        head++;
        if (job % 5 == 0)
            continue; /* skipped under the lock */
        pthread_mutex_unlock(&mutex);
        mine += job;
        pthread_mutex_lock(&done_mutex);
        done_sum += job;
        done_count++;
        pthread_mutex_unlock(&done_mutex);
        pthread_mutex_lock(&mutex);
        if (job % 7 == 0)
            idle += 0;
    }
    return (void *)mine;
}

static long drain(int *left)
{
    long seen = 0;
    pthread_mutex_lock(&done_mutex);
    while (*left > 0) {
        (*left)--;
        pthread_mutex_unlock(&done_mutex);
        seen++;
        pthread_mutex_lock(&done_mutex);
        seen += done_count > 0;
    }
    seen *= 2;
    pthread_mutex_unlock(&done_mutex);
    return seen;
}

/* lock and unlock wrappers with work of their own: counted once per taking and per release */
static long takes, gives;
static void take(void) { pthread_mutex_lock(&done_mutex); takes++; }
static void give(void) { gives++; pthread_mutex_unlock(&done_mutex); }

static long rounds(int n)
{
    long done = 0;
    take();
    while (done < n) {
        done++;
        give();
        done += 0;
        take();
    }
    give();
    return done;
}

static long scan(void)
{
    long hits = 0;
    int i;
    pthread_mutex_lock(&done_mutex);
    for (i = 0; i < 50; i++) {
        if (i == 40)
            break; /* leaves the loop holding the lock */
        hits += i;
        pthread_mutex_unlock(&done_mutex);
        hits += 1000;
        pthread_mutex_lock(&done_mutex);
        if (i % 3 == 0)
            continue;
        hits -= 1;
    }
    hits += i;
    pthread_mutex_unlock(&done_mutex);
    return hits;
}

/* the exit after the carried loop continues the outer loop (the caller's, not the section's) */
static long batches(void)
{
    long worked = 0, skipped = 0;
    int pending = 0, round, x;
    for (round = 0; round < 20; round++) {
        pthread_mutex_lock(&done_mutex);
        while (pending > 0) {
            x = pending--;
            pthread_mutex_unlock(&done_mutex);
            worked += x;
            pthread_mutex_lock(&done_mutex);
        }
        if (round % 2) {
            skipped++;
            pthread_mutex_unlock(&done_mutex);
            continue;
        }
        pending += 3;
        pthread_mutex_unlock(&done_mutex);
    }
    return worked * 100 + skipped;
}

int main(void)
{
    pthread_t t[NWORKERS];
    long total = 0;
    int left = 10;
    for (int i = 0; i < NWORKERS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int j = 1; j <= NJOBS; j++) {
        pthread_mutex_lock(&mutex);
        queue[tail++] = j;
        pthread_cond_signal(&cond);
        pthread_mutex_unlock(&mutex);
    }
    pthread_mutex_lock(&mutex);
    queue[tail++] = -1;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&mutex);
    for (int i = 0; i < NWORKERS; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (long)r;
    }
    long scanned = scan();
    long round_count = rounds(25);
    long batched = batches();
    printf("sum=%ld count=%ld total=%ld drain=%ld scan=%ld rounds=%ld takes=%ld gives=%ld batches=%ld\n", done_sum,
           done_count, total, drain(&left), scanned, round_count, takes, gives, batched);
    if (done_sum != 1600000 || total != done_sum || scanned != 40794 || takes != 26 || gives != 26 || batched != 6010) {
        fprintf(stderr, "wrong totals\n");
        return 1;
    }
    return 0;
}
