/* Unlocks whose argument advances the loop index: `pthread_mutex_unlock(&slots[i++].lock);`
   in a while loop, and at an early exit. */
#include <pthread.h>
#include <stdio.h>

#define SLOTS 8

struct slot {
    pthread_mutex_t lock;
    long value;
    int closed;
};

static struct slot slots[SLOTS];

static int fill(long amount)
{
    int i = 0, filled = 0;
    while (i < SLOTS) {
        pthread_mutex_lock(&slots[i].lock);
        if (slots[i].closed) {
            pthread_mutex_unlock(&slots[i++].lock);
            continue;
        }
        slots[i].value += amount * (i + 1);
        filled++;
        pthread_mutex_unlock(&slots[i++].lock);
    }
    return filled;
}

static void *worker(void *arg)
{
    long filled = 0;
    for (int r = 0; r < 1000; r++)
        filled += fill((long)arg);
    return (void *)filled;
}

int main(void)
{
    pthread_t threads[3];
    long filled = 0;
    for (int i = 0; i < SLOTS; i++) {
        pthread_mutex_init(&slots[i].lock, NULL);
        slots[i].closed = i % 3 == 2;
    }
    for (long t = 0; t < 3; t++)
        pthread_create(&threads[t], NULL, worker, (void *)(t + 1));
    for (int t = 0; t < 3; t++) {
        void *r;
        pthread_join(threads[t], &r);
        filled += (long)r;
    }
    long sum = 0;
    for (int i = 0; i < SLOTS; i++)
        sum += slots[i].value;
    printf("filled=%ld sum=%ld\n", filled, sum);
    return 0;
}
