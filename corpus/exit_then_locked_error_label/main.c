/* nng's callback shape: gotos to an error label taken with the lock held, the label placed after
 * an `unlock; return;` at the section's top level, its cleanup run locked, then one more unlock.
 * The top-level unlock and return are an exit: the section goes on at the label. */
#include <pthread.h>
#include <stdio.h>
struct ep { pthread_mutex_t mtx; long sent, errors, closed; };
static struct ep ep = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 };
static long reaped;
static void reap(void) { __atomic_fetch_add(&reaped, 1, __ATOMIC_RELAXED); }
static void cb(int rv, long n)
{
    pthread_mutex_lock(&ep.mtx);
    if (rv != 0) {
        goto error;
    }
    if (n > 5) {
        ep.sent += n;
        pthread_mutex_unlock(&ep.mtx);
        return;
    }
    if (n < 0) {
        rv = -1;
        goto error;
    }
    ep.sent += 1;
    pthread_mutex_unlock(&ep.mtx);
    return;

error:
    ep.errors += rv;
    ep.closed++;
    pthread_mutex_unlock(&ep.mtx);
    reap();
}
static void *worker(void *arg)
{
    long k = (long)arg;
    for (long i = 0; i < 3000; i++)
        cb((int)((i + k) % 7 == 0), (i % 11) - 3);
    return NULL;
}
int main(void)
{
    pthread_t t[4];
    for (long k = 0; k < 4; k++)
        pthread_create(&t[k], NULL, worker, (void *)k);
    for (int k = 0; k < 4; k++)
        pthread_join(t[k], NULL);
    printf("sent %ld errors %ld closed %ld reaped %ld\n", ep.sent, ep.errors, ep.closed, reaped);
    if (ep.closed != reaped) {
        fprintf(stderr, "a locked error path was not followed by its unlocked tail\n");
        return 1;
    }
    return 0;
}
