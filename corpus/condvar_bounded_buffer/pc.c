/* Producer/consumer over a bounded ring buffer: pthread_cond_wait inside
 * the region on both sides, -1 poison pills stop the consumers. */
#include <pthread.h>
#include <stdio.h>

#define NPRODUCERS 2
#define NCONSUMERS 2
#define PER_PRODUCER 2000
#define CAP 8

static pthread_mutex_t buf_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static int buf[CAP];
static int head, tail, count;

static void put(int v)
{
    pthread_mutex_lock(&buf_lock);
    while (count == CAP)
        pthread_cond_wait(&not_full, &buf_lock);
    buf[tail] = v;
    tail = (tail + 1) % CAP;
    count++;
    pthread_cond_signal(&not_empty);
    pthread_mutex_unlock(&buf_lock);
}

static int get(void)
{
    int v;

    pthread_mutex_lock(&buf_lock);
    while (count == 0)
        pthread_cond_wait(&not_empty, &buf_lock);
    v = buf[head];
    head = (head + 1) % CAP;
    count--;
    pthread_cond_signal(&not_full);
    pthread_mutex_unlock(&buf_lock);
    return v;
}

static void *producer(void *p)
{
    int id = *(int *)p;

    for (int i = 0; i < PER_PRODUCER; i++)
        put(id * PER_PRODUCER + i + 1);
    return NULL;
}

struct consumed { long sum; long n; };

static void *consumer(void *p)
{
    struct consumed *c = p;
    int v;

    while ((v = get()) != -1) {
        c->sum += v;
        c->n++;
    }
    return NULL;
}

int main(void)
{
    pthread_t prod[NPRODUCERS], cons[NCONSUMERS];
    int ids[NPRODUCERS];
    struct consumed res[NCONSUMERS] = {{0, 0}};
    long sum = 0, n = 0, total = (long)NPRODUCERS * PER_PRODUCER;

    for (int i = 0; i < NCONSUMERS; i++)
        pthread_create(&cons[i], NULL, consumer, &res[i]);
    for (int i = 0; i < NPRODUCERS; i++) {
        ids[i] = i;
        pthread_create(&prod[i], NULL, producer, &ids[i]);
    }
    for (int i = 0; i < NPRODUCERS; i++)
        pthread_join(prod[i], NULL);
    for (int i = 0; i < NCONSUMERS; i++)
        put(-1);
    for (int i = 0; i < NCONSUMERS; i++) {
        pthread_join(cons[i], NULL);
        sum += res[i].sum;
        n += res[i].n;
    }

    printf("consumed=%ld sum=%ld left=%d\n", n, sum, count);
    if (n != total || sum != total * (total + 1) / 2 || count != 0) {
        fprintf(stderr, "condvar_bounded_buffer: items lost\n");
        return 1;
    }
    return 0;
}
