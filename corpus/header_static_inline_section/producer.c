#include "counter.h"

#define ITERS 4000

void *producer(void *arg)
{
    struct counter *c = arg;
    for (int i = 0; i < ITERS; i++)
        counter_add(c, 3);
    return NULL;
}
