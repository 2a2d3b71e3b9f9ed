/* Four threads count through a lock taken by wrappers whose calls are checked by assert. */
#include <stdio.h>
#include "threads.h"
static usbi_mutex_t lock;
static long count;
static void *worker(void *arg)
{
	for (int i = 0; i < 10000; i++) {
		usbi_mutex_lock(&lock);
		count += (long)arg;
		usbi_mutex_unlock(&lock);
	}
	return NULL;
}
int main(void)
{
	pthread_t t[4];
	usbi_mutex_init(&lock);
	for (long k = 0; k < 4; k++)
		pthread_create(&t[k], NULL, worker, (void *)(k + 1));
	for (int k = 0; k < 4; k++)
		pthread_join(t[k], NULL);
	printf("count %ld\n", count);
	if (count != 100000) {
		fprintf(stderr, "lost updates\n");
		return 1;
	}
	return 0;
}
