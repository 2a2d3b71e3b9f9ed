/* session_find() returns with the session table lock still held when it
 * finds the session; the caller updates the session and unlocks. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITERS 2000
#define NSESSIONS 20

struct session { int id; long requests; long bytes; };

static pthread_mutex_t sessions_lock = PTHREAD_MUTEX_INITIALIZER;
static struct session sessions[NSESSIONS];
static long lookups_failed;

/* On success returns the session with sessions_lock held; the caller must
 * call pthread_mutex_unlock(&sessions_lock). Returns NULL unlocked. */
static struct session *session_find(int id)
{
    pthread_mutex_lock(&sessions_lock);
    for (int i = 0; i < NSESSIONS; i++)
        if (sessions[i].id == id)
            return &sessions[i];
    lookups_failed++;
    pthread_mutex_unlock(&sessions_lock);
    return NULL;
}

static void *run(void *p)
{
    int tid = *(int *)p;
    int *missed = p;

    *missed = 0;
    for (int i = 0; i < ITERS; i++) {
        int id = 100 + (i + tid) % (NSESSIONS + 5);   /* 5 ids don't exist */
        struct session *s = session_find(id);
        if (s == NULL) {
            (*missed)++;
            continue;
        }
        s->requests++;
        s->bytes += 64;
        pthread_mutex_unlock(&sessions_lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int args[NTHREADS];
    long requests = 0, bytes = 0;
    int missed = 0;

    for (int i = 0; i < NSESSIONS; i++)
        sessions[i].id = 100 + i;
    for (int i = 0; i < NTHREADS; i++) {
        args[i] = i;
        pthread_create(&threads[i], NULL, run, &args[i]);
    }
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        missed += args[i];
    }
    for (int i = 0; i < NSESSIONS; i++) {
        requests += sessions[i].requests;
        bytes += sessions[i].bytes;
    }

    printf("requests=%ld bytes=%ld missed=%d failed=%ld\n", requests, bytes,
           missed, lookups_failed);
    if (requests + missed != NTHREADS * ITERS || missed != lookups_failed ||
        bytes != 64 * requests) {
        fprintf(stderr, "refuse_return_while_locked: session stats wrong\n");
        return 1;
    }
    return 0;
}
