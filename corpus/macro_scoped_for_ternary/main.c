/* Scoped lock macros in xz-utils' style (mythread.h): a producer hands blocks to workers through
 * a queue guarded by my_sync() sections; workers wait on a condvar inside one, `break` out of one
 * early and `continue` out of another; totals are exact. */
#include <pthread.h>
#include <stdio.h>
#include "mythread.h"

#define NWORKERS 3
#define NBLOCKS 3000
#define QSIZE 8

struct queue {
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	int items[QSIZE];
	int head, count, done;
};

static struct queue q = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0, 0 };
static pthread_mutex_t stats_mutex = PTHREAD_MUTEX_INITIALIZER;
static long total, odd, big, taken;

static void put(int v)
{
	int queued = 0;
	while (!queued) {
		my_sync(q.mutex) {
			if (q.count == QSIZE)
				break; /* full: leave the section, try again */
			q.items[(q.head + q.count) % QSIZE] = v;
			q.count++;
			queued = 1;
			pthread_cond_signal(&q.cond);
		}
	}
}

static int take(int *v)
{
	int got = 0;
	my_sync(q.mutex) {
		while (q.count == 0 && !q.done)
			my_cond_wait(&q.cond, &q.mutex);
		if (q.count == 0)
			continue; /* done and drained */
		*v = q.items[q.head];
		q.head = (q.head + 1) % QSIZE;
		q.count--;
		got = 1;
	}
	return got;
}

static void *worker(void *arg)
{
	int v;
	(void)arg;
	while (take(&v)) {
		my_sync(stats_mutex) {
			total += v;
			taken++;
			if (v % 2 == 0)
				continue;
			odd++;
			if (v < NBLOCKS / 2)
				break;
			big++;
		}
	}
	return NULL;
}

int main(void)
{
	pthread_t t[NWORKERS];
	for (int i = 0; i < NWORKERS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int v = 1; v <= NBLOCKS; v++)
		put(v);
	my_sync(q.mutex) {
		q.done = 1;
		pthread_cond_broadcast(&q.cond);
	}
	for (int i = 0; i < NWORKERS; i++)
		pthread_join(t[i], NULL);
	printf("taken=%ld total=%ld odd=%ld big=%ld\n", taken, total, odd, big);
	if (taken != NBLOCKS || total != (long)NBLOCKS * (NBLOCKS + 1) / 2 || odd != NBLOCKS / 2 || big != NBLOCKS / 4) {
		fprintf(stderr, "wrong totals\n");
		return 1;
	}
	return 0;
}
