/* pthread_cond_timedwait inside a region: first every wait times out
 * (nobody signals), then waiters with a long deadline are woken in time. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define NTHREADS 4
#define SHORT_WAITS 3
#define SHORT_NS 10000000L            /* 10 ms */
#define LONG_S 10

static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ev_cond = PTHREAD_COND_INITIALIZER;
static int event_ready;
static int timeouts, woken, spurious_checks;

static void deadline_in(struct timespec *ts, long sec, long nsec)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += sec;
    ts->tv_nsec += nsec;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Returns 1 if the event arrived, 0 on timeout. */
static int wait_event(long sec, long nsec)
{
    struct timespec deadline;
    int rc = 0, got;

    deadline_in(&deadline, sec, nsec);
    pthread_mutex_lock(&ev_lock);
    while (!event_ready && rc != ETIMEDOUT) {
        rc = pthread_cond_timedwait(&ev_cond, &ev_lock, &deadline);
        spurious_checks++;
    }
    got = event_ready;
    if (got)
        woken++;
    else
        timeouts++;
    pthread_mutex_unlock(&ev_lock);
    return got;
}

static void *short_waiter(void *p)
{
    int *got = p;

    for (int i = 0; i < SHORT_WAITS; i++)
        *got += wait_event(0, SHORT_NS);
    return NULL;
}

static void *long_waiter(void *p)
{
    int *got = p;

    *got += wait_event(LONG_S, 0);
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int got[NTHREADS] = {0};
    int got_short = 0, got_long = 0;

    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, short_waiter, &got[i]);
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        got_short += got[i];
        got[i] = 0;
    }

    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&threads[i], NULL, long_waiter, &got[i]);
    pthread_mutex_lock(&ev_lock);
    event_ready = 1;
    pthread_cond_broadcast(&ev_cond);
    pthread_mutex_unlock(&ev_lock);
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        got_long += got[i];
    }

    printf("timeouts=%d woken=%d short_got=%d long_got=%d\n", timeouts, woken,
           got_short, got_long);
    if (timeouts != NTHREADS * SHORT_WAITS || woken != NTHREADS ||
        got_short != 0 || got_long != NTHREADS) {
        fprintf(stderr, "condvar_timedwait_timeout: wrong wakeups\n");
        return 1;
    }
    return 0;
}
