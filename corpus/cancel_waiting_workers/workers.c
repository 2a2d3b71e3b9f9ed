/* squashfs-tools' shutdown: workers wait on a queue's condvar inside
 * pthread_cleanup_push(pthread_mutex_unlock, &q->mutex); the main thread cancels them while they
 * wait, joins them, then takes the queue's lock (each handler released it).  One worker releases
 * the lock through pthread_cleanup_pop(1), the other unlocks explicitly inside its push/pop pair. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

struct queue {
    pthread_mutex_t mutex;
    pthread_cond_t empty;
    int size;
    int taken;
};

static struct queue q = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
static int waiting;

static int get_popping(struct queue *queue)
{
    int item;
    pthread_cleanup_push((void *) pthread_mutex_unlock, &queue->mutex);
    pthread_mutex_lock(&queue->mutex);
    waiting++;
    while (queue->size == 0)
        pthread_cond_wait(&queue->empty, &queue->mutex);
    item = queue->size--;
    queue->taken++;
    pthread_cleanup_pop(1);
    return item;
}

static void *popping_worker(void *arg)
{
    for (;;)
        get_popping(arg);
    return NULL;
}

static void *unlocking_worker(void *arg)
{
    struct queue *queue = arg;
    pthread_cleanup_push((void *) pthread_mutex_unlock, &queue->mutex);
    for (;;) {
        pthread_mutex_lock(&queue->mutex);
        waiting++;
        while (queue->size == 0)
            pthread_cond_wait(&queue->empty, &queue->mutex);
        queue->size--;
        queue->taken++;
        pthread_mutex_unlock(&queue->mutex);
    }
    pthread_cleanup_pop(0);
    return NULL;
}

int main(void)
{
    pthread_t workers[2];
    pthread_create(&workers[0], NULL, popping_worker, &q);
    pthread_create(&workers[1], NULL, unlocking_worker, &q);
    for (int i = 0; i < 100; i++) {  /* feed them, one item at a time */
        pthread_mutex_lock(&q.mutex);
        q.size++;
        pthread_cond_signal(&q.empty);
        pthread_mutex_unlock(&q.mutex);
        for (int done = 0; !done; usleep(100)) {
            pthread_mutex_lock(&q.mutex);
            done = q.size == 0;
            pthread_mutex_unlock(&q.mutex);
        }
    }
    for (int both = 0; !both; usleep(1000)) {  /* both waiting again */
        pthread_mutex_lock(&q.mutex);
        both = waiting >= 102;
        pthread_mutex_unlock(&q.mutex);
    }
    usleep(20000);
    for (int i = 0; i < 2; i++) {
        void *result;
        pthread_cancel(workers[i]);
        pthread_join(workers[i], &result);
        if (result != PTHREAD_CANCELED) {
            fprintf(stderr, "worker %d was not cancelled\n", i);
            return 1;
        }
    }
    pthread_mutex_lock(&q.mutex);  /* released by the cancelled workers' handlers */
    printf("taken=%d cancelled=2\n", q.taken);
    pthread_mutex_unlock(&q.mutex);
    return q.taken == 100 ? 0 : 1;
}
