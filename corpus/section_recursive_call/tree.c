/* Sections that call their own function: a tree whose every level has its own lock, walked
   by a recursive function that holds its level's lock while it recurses into the next; and a
   recursive counter that takes the lock at its leaves only. */
#include <pthread.h>
#include <stdio.h>

#define DEPTH 4

static pthread_mutex_t level_locks[DEPTH + 1];
static long level_visits[DEPTH + 1];
static pthread_mutex_t leaf_lock = PTHREAD_MUTEX_INITIALIZER;
static long leaves;

static long walk(int depth, long weight)
{
    long total;
    if (depth == 0)
        return weight;
    pthread_mutex_lock(&level_locks[depth]);
    level_visits[depth]++;
    total = walk(depth - 1, weight * 2) + depth;
    pthread_mutex_unlock(&level_locks[depth]);
    return total;
}

static long count_leaves(int n)
{
    if (n <= 1) {
        pthread_mutex_lock(&leaf_lock);
        leaves++;
        pthread_mutex_unlock(&leaf_lock);
        return 1;
    }
    return count_leaves(n - 1) + count_leaves(n - 2);
}

static void *worker(void *arg)
{
    long sum = 0;
    for (int i = 0; i < 500; i++)
        sum += walk(DEPTH, (long)arg + i % 3);
    sum += count_leaves(12);
    return (void *)sum;
}

int main(void)
{
    pthread_t threads[3];
    long sum = 0;
    for (int d = 0; d <= DEPTH; d++)
        pthread_mutex_init(&level_locks[d], NULL);
    for (long t = 0; t < 3; t++)
        pthread_create(&threads[t], NULL, worker, (void *)(t + 1));
    for (int t = 0; t < 3; t++) {
        void *r;
        pthread_join(threads[t], &r);
        sum += (long)r;
    }
    printf("sum=%ld visits=%ld/%ld leaves=%ld\n", sum, level_visits[1], level_visits[DEPTH], leaves);
    return 0;
}
