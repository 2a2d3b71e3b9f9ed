/* A debug macro that prints a variable's name with its value (`#x`), applied under the lock to
   a local of the function: the name printed must stay the local's. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 200

#define show(x) show_(#x, &(x), sizeof(x))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total;
static char last_name[32];

static void show_(const char *name, const void *value, size_t size)
{
    (void)value;
    snprintf(last_name, sizeof last_name, "%s/%zu", name, size);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        long lu4 = i;
        pthread_mutex_lock(&lock);
        total += lu4;
        show(lu4);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    printf("total=%ld last=%s\n", total, last_name);
    if (strncmp(last_name, "lu4/", 4) != 0) {
        fprintf(stderr, "the macro printed %s\n", last_name);
        return 1;
    }
    return 0;
}
