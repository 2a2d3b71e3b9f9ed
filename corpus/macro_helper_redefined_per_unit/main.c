/* A helper macro of the lock macros (unbound's LOCKRET) defined differently by one file: four
 * threads take both files' locks. */
#include <pthread.h>
#include <stdio.h>

#include "program.h"

#define THREADS 4
#define ROUNDS 5000

static void *worker(void *arg)
{
	(void)arg;
	for (long i = 0; i < ROUNDS; i++)
		counter_add((long)(sequence_next() % 3));
	return NULL;
}

int main(void)
{
	pthread_t threads[THREADS];
	counter_init();
	sequence_init();
	for (long t = 0; t < THREADS; t++)
		pthread_create(&threads[t], NULL, worker, NULL);
	for (int t = 0; t < THREADS; t++)
		pthread_join(threads[t], NULL);
	unsigned long last = sequence_next();
	long sum = 0;
	for (unsigned long k = 1; k < last; k++)
		sum += (long)(k % 3);
	printf("sequence=%lu\n", last);
	printf("counter=%ld\n", counter_get());
	if (last != (unsigned long)THREADS * ROUNDS + 1 || counter_get() != sum) {
		fprintf(stderr, "wrong totals\n");
		return 1;
	}
	return 0;
}
