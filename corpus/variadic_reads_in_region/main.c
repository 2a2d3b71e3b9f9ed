#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

enum option { OPT_TIMEOUT, OPT_NAME };
struct conn { pthread_mutex_t lock; unsigned timeout; const char *name; int changes; };
static struct conn conn = { PTHREAD_MUTEX_INITIALIZER, 0, "", 0 };

/* libmicrohttpd's MHD_set_connection_option: the option's argument read under the lock.
 * OPT_TIMEOUT reads it on every path of its region (the reads run before the lock); OPT_NAME
 * after an early exit (that region stays hybrid: va_list). */
static int set_option(struct conn *c, enum option option, ...)
{
    va_list ap;
    unsigned value;
    const char *name;

    switch (option) {
    case OPT_TIMEOUT:
        pthread_mutex_lock(&c->lock);
        c->changes++;
        va_start(ap, option);
        value = va_arg(ap, unsigned int);
        va_end(ap);
        if (value > c->timeout)
            c->timeout = value;
        pthread_mutex_unlock(&c->lock);
        return 1;
    case OPT_NAME:
        pthread_mutex_lock(&c->lock);
        if (c->changes > 1000000) {
            pthread_mutex_unlock(&c->lock);
            return 0;
        }
        va_start(ap, option);
        name = va_arg(ap, const char *);
        va_end(ap);
        c->name = name;
        c->changes++;
        pthread_mutex_unlock(&c->lock);
        return 1;
    }
    return 0;
}

static void *worker(void *arg)
{
    unsigned base = (unsigned)(long)arg;
    for (unsigned i = 0; i < 1000; i++) {
        set_option(&conn, OPT_TIMEOUT, base * 1000 + i);
        set_option(&conn, OPT_NAME, "worker");
    }
    return NULL;
}

int main(void)
{
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    printf("timeout %u name %s changes %d\n", conn.timeout, conn.name, conn.changes);
    if (conn.timeout != 3999 || conn.changes != 8000) {
        fprintf(stderr, "variadic_reads_in_region: wrong totals\n");
        return 1;
    }
    return 0;
}
