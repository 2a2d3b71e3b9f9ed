/* An inline asm statement in a section whose output operand is a local used after the unlock
 * (GCC's torture program pr43560.c with a lock region inserted, found by the differential
 * fuzzer): the output is a write the text does not show as an assignment, so the local must be
 * captured by reference, not copied into the section. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ROUNDS 1000

struct slot { long value; };
static struct slot slots[THREADS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int r = 0; r < ROUNDS; r++) {
        struct slot *p;
        pthread_mutex_lock(&lock);
        __asm__("" : "=r"(p) : "0"(&slots[id]));
        p->value += r;
        total += 1;
        pthread_mutex_unlock(&lock);
        p->value += 1;
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
        printf("slot %d: %ld\n", i, slots[i].value);
    printf("sections %ld\n", total);
    return 0;
}
