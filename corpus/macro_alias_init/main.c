/* Two producers and two consumers through a queue whose lock, condvar and init go through
   object-like aliases; a second lock created through the same init alias counts the gets. */
#include <stdio.h>
#include <stdlib.h>
#include "mtx.h"
static struct queue q;
static my_mutex_t count_lock;
static long count;
static void *producer(void *arg)
{
    for (int i = 1; i <= 40; i++) queue_put(&q, i);
    return arg;
}
static void *consumer(void *arg)
{
    long sum = 0;
    for (int i = 0; i < 40; i++) {
        sum += queue_get(&q);
        my_mutex_lock(&count_lock);
        count++;
        my_mutex_unlock(&count_lock);
    }
    return (void *)sum;
}
int main(void)
{
    pthread_t p[2], c[2];
    queue_init(&q);
    my_mutex_init(&count_lock, NULL);
    for (int i = 0; i < 2; i++) { pthread_create(&p[i], NULL, producer, NULL); pthread_create(&c[i], NULL, consumer, NULL); }
    long sum = 0;
    for (int i = 0; i < 2; i++) { void *r; pthread_join(p[i], NULL); pthread_join(c[i], &r); sum += (long)r; }
    printf("sum %ld count %ld total %d\n", sum, count, q.total);
    my_cond_destroy(&q.nonempty);
    my_mutex_destroy(&q.mutex);
    if (sum != 2 * 820 || count != 80 || q.total != 2 * 820) {
        fprintf(stderr, "lost or repeated items\n");
        return 1;
    }
    return 0;
}
