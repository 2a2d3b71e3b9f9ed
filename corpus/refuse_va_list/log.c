/* A variadic logging function formats into a shared buffer under a lock;
 * va_start/vsnprintf/va_end happen inside the region. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define NTHREADS 4
#define ITERS 300
#define LOG_CAP 65536

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_buf[LOG_CAP];
static size_t log_len;
static int log_lines, log_truncated;

static void log_msg(const char *fmt, ...)
{
    va_list ap;
    int n;

    pthread_mutex_lock(&log_lock);
    va_start(ap, fmt);
    n = vsnprintf(log_buf + log_len, LOG_CAP - log_len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= LOG_CAP - log_len)
        log_truncated++;
    else
        log_len += (size_t)n;
    log_lines++;
    pthread_mutex_unlock(&log_lock);
}

static void *run(void *p)
{
    int id = *(int *)p;

    for (int i = 0; i < ITERS; i++)
        log_msg("t%d req=%d status=%s\n", id, i, i % 5 ? "ok" : "miss");
    return NULL;
}

int main(void)
{
    pthread_t threads[NTHREADS];
    int ids[NTHREADS];
    unsigned long bytesum = 0;
    int newlines = 0, misses = 0;

    for (int i = 0; i < NTHREADS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, run, &ids[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i], NULL);

    /* Line order varies between runs; these summaries do not. */
    for (size_t i = 0; i < log_len; i++) {
        bytesum += (unsigned char)log_buf[i];
        newlines += log_buf[i] == '\n';
    }
    for (const char *s = log_buf; (s = strstr(s, "miss")) != NULL; s++)
        misses++;

    printf("lines=%d bytes=%zu bytesum=%lu misses=%d truncated=%d\n",
           log_lines, log_len, bytesum, misses, log_truncated);
    if (log_lines != NTHREADS * ITERS || newlines != log_lines ||
        misses != NTHREADS * ITERS / 5 || log_truncated) {
        fprintf(stderr, "refuse_va_list: log corrupted\n");
        return 1;
    }
    return 0;
}
