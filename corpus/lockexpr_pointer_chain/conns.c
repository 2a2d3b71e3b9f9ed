/* memcached-style per-thread stats: the lock is reached through a pointer
 * chain, `c->thread->stats.mutex`. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#define NWORKERS 2
#define NTHREADS 4
#define NCONNS 8
#define REQUESTS 1500

struct thread_stats {
    pthread_mutex_t mutex;
    uint64_t get_cmds;
    uint64_t get_hits;
    uint64_t bytes_read;
};

struct worker_thread {
    int id;
    struct thread_stats stats;
};

struct conn {
    int fd;
    struct worker_thread *thread;
};

static struct worker_thread workers[NWORKERS];
static struct conn conns[NCONNS];

static void process_get(struct conn *c, int key)
{
    int hit = key % 3 != 0;

    pthread_mutex_lock(&c->thread->stats.mutex);
    c->thread->stats.get_cmds++;
    if (hit)
        c->thread->stats.get_hits++;
    c->thread->stats.bytes_read += 16;
    pthread_mutex_unlock(&c->thread->stats.mutex);
}

static void *serve(void *p)
{
    int id = *(int *)p;

    /* Thread id serves conns id and id+4; conns share worker stats. */
    for (int r = 0; r < REQUESTS; r++) {
        process_get(&conns[id], r);
        process_get(&conns[id + NTHREADS], r + 1);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int ids[NTHREADS];
    uint64_t cmds = 0, hits = 0, bytes = 0;

    for (int i = 0; i < NWORKERS; i++) {
        workers[i].id = i;
        pthread_mutex_init(&workers[i].stats.mutex, NULL);
    }
    for (int i = 0; i < NCONNS; i++) {
        conns[i].fd = 100 + i;
        conns[i].thread = &workers[i % NWORKERS];
    }
    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, serve, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < NWORKERS; i++) {
        struct worker_thread *t = &workers[i];
        pthread_mutex_lock(&t->stats.mutex);
        printf("worker%d get_cmds=%llu get_hits=%llu\n", t->id,
               (unsigned long long)t->stats.get_cmds,
               (unsigned long long)t->stats.get_hits);
        cmds += t->stats.get_cmds;
        hits += t->stats.get_hits;
        bytes += t->stats.bytes_read;
        pthread_mutex_unlock(&t->stats.mutex);
    }

    printf("total get_cmds=%llu get_hits=%llu bytes=%llu\n",
           (unsigned long long)cmds, (unsigned long long)hits,
           (unsigned long long)bytes);
    if (cmds != 2ULL * NTHREADS * REQUESTS || bytes != 16 * cmds) {
        fprintf(stderr, "lockexpr_pointer_chain: stats lost\n");
        return 1;
    }
    return 0;
}
