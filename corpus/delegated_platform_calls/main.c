/* Sections that call what a program commonly calls under a lock: formatted output into a
 * buffer and onto a pipe, a read from a pipe, a short sleep, a semaphore, an operations table of
 * function pointers, errno, and error branches that end the process or that only a failed
 * lock call takes.  rclify's analysis lets each run away from its caller's thread (an RCL
 * server, a combiner); the output must be what it is on the caller's thread. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define ROUNDS 40

struct ops {
    long (*combine)(long, long);
    const char *(*name)(void);
};

static long add(long a, long b) { return a + b; }
static long mul(long a, long b) { return a * b % 1000003; }
static const char *add_name(void) { return "add"; }
static const char *mul_name(void) { return "mul"; }
static const struct ops adding = { .combine = add, .name = add_name };
static const struct ops multiplying = { mul, mul_name };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static sem_t tokens;
static int pipe_fds[2];
static long sum, product = 1, bytes_written, bytes_read, sleeps, names;
static char last[64];

static void die(const char *what, int err)
{
    fprintf(stderr, "%s: %s\n", what, strerror(err));
    exit(1);
}

static void checked_signal(void)
{
    int rc = pthread_cond_signal(&changed);
    if (rc)
        die("pthread_cond_signal", rc);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    const struct ops *ops = id % 2 ? &adding : &multiplying;
    for (int r = 0; r < ROUNDS; r++) {
        char line[48];
        pthread_mutex_lock(&lock);
        if (ops->combine == add)
            sum = ops->combine(sum, id + r);
        else
            product = ops->combine(product, id + r + 1);
        names += strlen(ops->name());
        int n = snprintf(line, sizeof line, "%ld:%d\n", id, r);
        if (write(pipe_fds[1], line, (size_t)n) != n)
            die("write", errno);
        bytes_written += n;
        char back[48];
        ssize_t got = read(pipe_fds[0], back, (size_t)n);
        if (got < 0)
            die("read", errno);
        bytes_read += got;
        memcpy(last, back, (size_t)got);
        last[got] = '\0';
        checked_signal();
        pthread_mutex_unlock(&lock);

        sem_wait(&tokens);
        pthread_mutex_lock(&lock);
        struct timespec pause = { 0, 1000 };
        nanosleep(&pause, NULL);
        sleeps++;
        sem_post(&tokens);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void)
{
    if (pipe(pipe_fds) != 0 || sem_init(&tokens, 0, 2) != 0)
        return 1;
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long expected_sum = 0;
    for (long id = 1; id < THREADS; id += 2)
        for (int r = 0; r < ROUNDS; r++)
            expected_sum += id + r;
    printf("sum %ld (expected %ld)\n", sum, expected_sum);
    printf("product %ld\n", product);
    printf("bytes written %ld, read %ld\n", bytes_written, bytes_read);
    printf("names %ld, sleeps %ld, last line ends with a newline: %d\n", names, sleeps,
           last[strlen(last) - 1] == '\n');
    return sum == expected_sum && bytes_written == bytes_read ? 0 : 1;
}
