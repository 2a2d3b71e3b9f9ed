/* A logger that formats each line in alloca'd memory under the lock and prints it after. */
#include <alloca.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long sequence;
static unsigned long checksum;

static void log_line(const char *what)
{
    char *line;
    pthread_mutex_lock(&log_lock);
    line = alloca(64);
    snprintf(line, 64, "%lu:%s", ++sequence, what);
    pthread_mutex_unlock(&log_lock);
    for (const char *c = line; *c; c++)
        __atomic_fetch_add(&checksum, (unsigned long)*c, __ATOMIC_RELAXED);
}

static void *worker(void *arg)
{
    for (int i = 0; i < 500; i++)
        log_line((const char *)arg);
    return NULL;
}

int main(void)
{
    pthread_t threads[2];
    pthread_create(&threads[0], NULL, worker, "read");
    pthread_create(&threads[1], NULL, worker, "read");
    for (int t = 0; t < 2; t++)
        pthread_join(threads[t], NULL);
    printf("sequence=%lu checksum=%lu\n", sequence, checksum);
    return 0;
}
