/* Locals declared inside the region whose address outlives the section: a buffer formatted
   under the lock and printed after it through a pointer, a struct initialised with a braced
   list whose address is kept in an outer pointer, used after the unlock. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *names[] = { "alpha", "beta", "gamma", "delta" };
static int lookups;

struct entry {
    const char *name;
    int index;
};

static void *reader(void *arg)
{
    long id = (long)arg;
    long checksum = 0;
    for (int i = 0; i < 2000; i++) {
        const char *p;
        const struct entry *e;
        pthread_mutex_lock(&names_lock);
        char buf[16];
        strcpy(buf, names[(i + id) % 4]);
        struct entry found = { names[(i + id) % 4], (int)((i + id) % 4) };
        lookups++;
        p = buf;
        e = &found;
        pthread_mutex_unlock(&names_lock);
        checksum += (long)strlen(p) * (e->index + 1) + (p[0] == e->name[0]);
    }
    return (void *)checksum;
}

int main(void)
{
    pthread_t threads[3];
    long sum = 0;
    for (long t = 0; t < 3; t++)
        pthread_create(&threads[t], NULL, reader, (void *)t);
    for (int t = 0; t < 3; t++) {
        void *r;
        pthread_join(threads[t], &r);
        sum += (long)r;
    }
    printf("lookups=%d checksum=%ld\n", lookups, sum);
    return 0;
}
