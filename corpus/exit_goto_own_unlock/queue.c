/* The kernel idiom: error paths `goto out_unlock;` to a label on the region's own unlock,
   from nested blocks and loops, one function with two labels on two regions. */
#include <pthread.h>
#include <stdio.h>

#define CAPACITY 64

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long queue[CAPACITY];
static int length;
static long rejected_full, rejected_negative, rejected_duplicate, pushed;

static int push(long v)
{
    int err = 0;
    pthread_mutex_lock(&queue_lock);
    if (length == CAPACITY) {
        err = -1;
        goto out_unlock;
    }
    if (v < 0) {
        err = -2;
        goto out_unlock;
    }
    for (int i = 0; i < length; i++) {
        if (queue[i] == v) {
            err = -3;
            goto out_unlock;
        }
    }
    queue[length++] = v;
out_unlock:
    pthread_mutex_unlock(&queue_lock);

    pthread_mutex_lock(&stats_lock);
    if (err == 0) {
        pushed++;
        goto stats_done;
    }
    if (err == -1)
        rejected_full++;
    else if (err == -2)
        rejected_negative++;
    else
        rejected_duplicate++;
stats_done:
    pthread_mutex_unlock(&stats_lock);
    return err;
}

static void *producer(void *arg)
{
    long base = (long)arg;
    for (long i = -3; i < 30; i++)
        push(i % 20 + base);
    return NULL;
}

int main(void)
{
    pthread_t threads[4];
    for (long t = 0; t < 4; t++)
        pthread_create(&threads[t], NULL, producer, (void *)(t * 10));
    for (int t = 0; t < 4; t++)
        pthread_join(threads[t], NULL);
    long sum = 0;
    for (int i = 0; i < length; i++)
        sum += queue[i];
    printf("length=%d sum=%ld pushed=%ld full=%ld negative=%ld duplicate=%ld\n", length, sum, pushed,
           rejected_full, rejected_negative, rejected_duplicate);
    return 0;
}
