/* Sections written only with the project's checked macros: this file never names the pthread API. */
#include "internal.h"

#define THREADS 4
#define ROUNDS 2500

static struct daemon the_daemon;

static void connection_done(struct daemon *d, long bytes)
{
    mutex_lock_chk_(&d->cleanup_mutex);
    d->connections--;
    d->served += bytes;
    mutex_unlock_chk_(&d->cleanup_mutex);
}

static int connection_open(struct daemon *d)
{
    int n;
    mutex_lock_chk_(&d->cleanup_mutex);
    n = ++d->connections;
    mutex_unlock_chk_(&d->cleanup_mutex);
    return n;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int r = 0; r < ROUNDS; r++) {
        connection_open(&the_daemon);
        connection_done(&the_daemon, id + r % 7);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    pthread_mutex_init(&the_daemon.cleanup_mutex, NULL);
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("connections %d, served %ld\n", the_daemon.connections, the_daemon.served);
    return the_daemon.connections == 0 ? 0 : 1;
}
