/* Bounded job list: push_job() allocates, then under the lock either links
 * the job or finds the list full and jumps to the error-path cleanup. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4
#define PUSHES 500
#define CAPACITY 1200

struct job { int value; struct job *next; };

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct job *head;
static int length;

static int push_job(int value)
{
    int err = -1;
    struct job *j = malloc(sizeof(*j));
    if (j == NULL)
        goto out;
    j->value = value;

    pthread_mutex_lock(&list_lock);
    if (length >= CAPACITY) {
        pthread_mutex_unlock(&list_lock);
        err = -2;
        goto free_job;
    }
    j->next = head;
    head = j;
    length++;
    pthread_mutex_unlock(&list_lock);
    return 0;

free_job:
    free(j);
out:
    return err;
}

static void *worker(void *arg)
{
    int *failures = arg;

    for (int i = 0; i < PUSHES; i++)
        if (push_job(i) != 0)
            (*failures)++;
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int failures[NTHREADS] = {0};
    int total_failures = 0;
    long sum = 0, count = 0;

    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, worker, &failures[i]);
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        total_failures += failures[i];
    }
    while (head != NULL) {
        struct job *j = head;
        head = j->next;
        sum += j->value >= 0;
        count++;
        free(j);
    }

    printf("linked=%ld failures=%d\n", count, total_failures);
    if (count != CAPACITY || length != CAPACITY || sum != CAPACITY ||
        total_failures != NTHREADS * PUSHES - CAPACITY) {
        fprintf(stderr, "exit_unlock_goto_cleanup: wrong list length\n");
        return 1;
    }
    return 0;
}
