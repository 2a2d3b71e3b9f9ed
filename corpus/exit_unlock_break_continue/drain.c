/* Workers drain a shared array of numbers; inside the loop the region
 * unlocks then `break`s when the work runs out and unlocks then `continue`s
 * for odd numbers. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define NITEMS 8000

static pthread_mutex_t work_lock = PTHREAD_MUTEX_INITIALIZER;
static int items[NITEMS];
static int next_item;
static long odd_sum, even_sum;
static int odd_count, even_count;

static void *worker(void *arg)
{
    int *processed = arg;

    for (;;) {
        pthread_mutex_lock(&work_lock);
        if (next_item == NITEMS) {
            pthread_mutex_unlock(&work_lock);
            break;
        }
        int v = items[next_item++];
        if (v % 2 != 0) {
            odd_sum += v;
            odd_count++;
            pthread_mutex_unlock(&work_lock);
            (*processed)++;
            continue;
        }
        even_sum += v;
        even_count++;
        pthread_mutex_unlock(&work_lock);
        (*processed)++;
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int processed[NTHREADS] = {0};
    int total = 0;

    for (int i = 0; i < NITEMS; i++)
        items[i] = i + 1;
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, worker, &processed[i]);
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        total += processed[i];
    }

    printf("processed=%d odd=%d/%ld even=%d/%ld\n", total, odd_count, odd_sum,
           even_count, even_sum);
    if (total != NITEMS || odd_count + even_count != NITEMS ||
        odd_sum + even_sum != (long)NITEMS * (NITEMS + 1) / 2) {
        fprintf(stderr, "exit_unlock_break_continue: items lost\n");
        return 1;
    }
    return 0;
}
