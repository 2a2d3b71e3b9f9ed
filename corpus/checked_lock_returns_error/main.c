/* Lock statements that fail by returning an error (Berkeley DB's replication manager:
 * `LOCK_MUTEX(m)` is `if (__repmgr_lock_mutex(m) != 0) return (DB_RUNRECOVERY);` in a do-while,
 * over a wrapper returning pthread_mutex_lock's result; UNLOCK_MUTEX keeps the result first). */
#include <pthread.h>
#include <stdio.h>

#define DB_RUNRECOVERY (-30973)
#define THREADS 4
#define ROUNDS 5000

int repmgr_lock_mutex(pthread_mutex_t *mutex)
{
	return (pthread_mutex_lock(mutex));
}

int repmgr_unlock_mutex(pthread_mutex_t *mutex)
{
	return (pthread_mutex_unlock(mutex));
}

#define	LOCK_MUTEX(m) do {						\
	if (repmgr_lock_mutex(m) != 0)					\
		return (DB_RUNRECOVERY);				\
} while (0)

#define	UNLOCK_MUTEX(m) do {						\
	int __ret;							\
	if ((__ret = repmgr_unlock_mutex(m)) != 0)			\
		return (__ret);						\
} while (0)

struct rep {
	pthread_mutex_t mutex;
	long queued;
	long messages;
};

static struct rep rep = {PTHREAD_MUTEX_INITIALIZER, 0, 0};

static int enqueue(struct rep *db_rep, long n)
{
	LOCK_MUTEX(&db_rep->mutex);
	db_rep->queued += n;
	db_rep->messages++;
	UNLOCK_MUTEX(&db_rep->mutex);
	return (0);
}

static int queued(struct rep *db_rep, long *out)
{
	if (repmgr_lock_mutex(&db_rep->mutex) != 0)
		return (DB_RUNRECOVERY);
	*out = db_rep->queued;
	if (repmgr_unlock_mutex(&db_rep->mutex) != 0)
		return (DB_RUNRECOVERY);
	return (0);
}

static void *worker(void *arg)
{
	long id = (long)arg;
	for (long i = 0; i < ROUNDS; i++)
		if (enqueue(&rep, id + 1) != 0)
			return (void *)1;
	return NULL;
}

int main(void)
{
	pthread_t threads[THREADS];
	void *failed;
	int errors = 0;
	long total = -1;
	for (long t = 0; t < THREADS; t++)
		pthread_create(&threads[t], NULL, worker, (void *)t);
	for (int t = 0; t < THREADS; t++) {
		pthread_join(threads[t], &failed);
		errors += failed != NULL;
	}
	if (queued(&rep, &total) != 0)
		errors++;
	printf("queued=%ld\n", total);
	printf("messages=%ld\n", rep.messages);
	printf("errors=%d\n", errors);
	return errors == 0 && total == (long)ROUNDS * THREADS * (THREADS + 1) / 2 ? 0 : 1;
}
