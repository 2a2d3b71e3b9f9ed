/* A start gate: workers check in and sleep on a condvar; once all have
 * checked in, main opens the gate with pthread_cond_broadcast. */
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 6
#define ITERS 1000

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_open_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t all_ready_cv = PTHREAD_COND_INITIALIZER;
static int ready, gate_open, started_before_open;
static long work_done;

static void *run(void *p)
{
    int id = *(int *)p;

    pthread_mutex_lock(&gate_lock);
    ready++;
    if (ready == NTHREADS)
        pthread_cond_signal(&all_ready_cv);
    while (!gate_open)
        pthread_cond_wait(&gate_open_cv, &gate_lock);
    pthread_mutex_unlock(&gate_lock);

    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&gate_lock);
        work_done += id + 1;
        pthread_mutex_unlock(&gate_lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int ids[NTHREADS];
    int waiting;

    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }

    pthread_mutex_lock(&gate_lock);
    while (ready < NTHREADS)
        pthread_cond_wait(&all_ready_cv, &gate_lock);
    waiting = ready;
    started_before_open = work_done != 0;
    gate_open = 1;
    pthread_cond_broadcast(&gate_open_cv);
    pthread_mutex_unlock(&gate_lock);

    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);

    printf("waiting_at_open=%d early_work=%d work=%ld\n", waiting,
           started_before_open, work_done);
    if (waiting != NTHREADS || started_before_open ||
        work_done != (long)ITERS * NTHREADS * (NTHREADS + 1) / 2) {
        fprintf(stderr, "condvar_broadcast_gate: gate leaked\n");
        return 1;
    }
    return 0;
}
