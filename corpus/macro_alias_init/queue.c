#include <stdio.h>
#include "mtx.h"
void queue_init(struct queue *q)
{
    q->head = q->tail = q->total = 0;
    my_mutex_init(&q->mutex, NULL);
    my_cond_init(&q->nonempty, NULL);
}
void queue_put(struct queue *q, int v)
{
    my_mutex_lock(&q->mutex);
    q->items[q->tail++ % 128] = v;
    my_cond_signal(&q->nonempty);
    my_mutex_unlock(&q->mutex);
}
int queue_get(struct queue *q)
{
    int v;
    my_mutex_lock(&q->mutex);
    while (q->head == q->tail)
        my_cond_wait(&q->nonempty, &q->mutex);
    v = q->items[q->head++ % 128];
    q->total += v;
    my_mutex_unlock(&q->mutex);
    return v;
}
