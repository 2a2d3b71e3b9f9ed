#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <errno.h>
#include <assert.h>
#include <alloca.h>

#define LOCK(m) pthread_mutex_lock(m)
#define UNLOCK(m) pthread_mutex_unlock(m)
#define CHECKED_LOCK(m) do { if (pthread_mutex_lock(m) != 0) abort(); } while (0)
#define CHECKED_UNLOCK(m) do { if (pthread_mutex_unlock(m) != 0) abort(); } while (0)
#define FN_LEN() ((unsigned long)strlen(__func__))

__attribute__((unused)) static void fz_lock(pthread_mutex_t *m) { pthread_mutex_lock(m); }
__attribute__((unused)) static void fz_unlock(pthread_mutex_t *m) { pthread_mutex_unlock(m); }
__attribute__((unused)) static long fz_static_helper(long a, long b) { return a * 3 + (b ^ 5); }
__attribute__((unused)) static long fz_rec_helper(long n) { return n <= 0 ? 1 : (n % 7) + fz_rec_helper(n - 1); }
__attribute__((unused)) static long fz_var_helper(int n, ...)
{
    va_list ap;
    long s = 0;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        s += va_arg(ap, long) * (i + 1);
    va_end(ap);
    return s;
}
__attribute__((unused)) static void fz_add_to(long *p, long v) { *p += v; }
long fz_extern_helper(long a, long b);
__attribute__((unused)) static long (*fz_fnptr)(long, long) = fz_static_helper;

struct s0_shared { pthread_mutex_t m; long sum; unsigned long x; long maxv; long cnt; long cnt2; long accs; };

__attribute__((unused)) static _Thread_local long s0_tls;
struct s0_arg { struct s0_shared *sh; int tid; };
static void *s0_worker(void *p)
{
    struct s0_arg *a = p;
    struct s0_shared *sh = a->sh;
    int tid = a->tid;
    long acc = 0;
    for (int i = 0; i < 181; i++) {
        long v = (long)((i * 60 + tid * 26) % 1000);
        errno = tid + 3;
        if (pthread_mutex_lock(&sh->m) != 0) abort();
        sh->x ^= (unsigned long)v * 2654435761u;
        acc += v & 15;
        if (i == 175) { sh->cnt += 1000; if (pthread_mutex_unlock(&sh->m) != 0) abort(); break; }
        sh->sum += errno;
        if (pthread_mutex_unlock(&sh->m) != 0) abort();
    }

    if (pthread_mutex_lock(&sh->m) != 0) abort();
    sh->accs += acc;
    if (pthread_mutex_unlock(&sh->m) != 0) abort();
    return NULL;
}

static unsigned long s0(void)
{
    struct s0_shared shs; memset(&shs, 0, sizeof shs); pthread_mutex_init(&shs.m, NULL); struct s0_shared *shp = &shs;
    pthread_t th[3];
    struct s0_arg args[3];
    for (int t = 0; t < 3; t++) {
        args[t].sh = shp;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, s0_worker, &args[t]) != 0) abort();
    }
    for (int t = 0; t < 3; t++)
        pthread_join(th[t], NULL);
    unsigned long r = (unsigned long)shp->sum * 31u + shp->x + (unsigned long)shp->maxv * 7u
                      + (unsigned long)shp->cnt * 13u + (unsigned long)shp->cnt2 * 17u + (unsigned long)shp->accs;
    pthread_mutex_destroy(&shp->m);
    
    return r;
}

static pthread_mutex_t s1_m = PTHREAD_MUTEX_INITIALIZER;

struct s1_pt { long x; int y; };

static unsigned long s1(void)
{
    struct s1_pt pt = { 1, 2 }, cp = { 0, 0 };
    long arr[8] = { 0 };
    volatile long vol = 1;
    static long stat_n;
    const long cst = 64;
    long total = 0, tv = 5, *tp = &tv;
    long found = 0, hits = 0, *hp = &found;
    const char *name = "";
    (void)pt; (void)cp; (void)tp; (void)hp; (void)name; (void)cst; (void)vol; (void)hits; (void)arr;
    for (long i = 0; i < 40; i++) {
        
        LOCK(&s1_m);
        stat_n++; total += stat_n;
        *tp += 2; total += *tp;
        long tmpv2 = i * 3 + total % 5; total += tmpv2;
        total += fz_fnptr(i, total % 11);
        UNLOCK(&s1_m);
        
    }
    return (unsigned long)total + (unsigned long)cp.x * 3u + (unsigned long)cp.y + (unsigned long)tv
           + (unsigned long)hits * 1009u + (unsigned long)arr[2] + (unsigned long)stat_n;
}

struct s2_q { pthread_mutex_t m; pthread_cond_t not_full, not_empty; long buf[6]; int head, count, producers; };
struct s2_parg { struct s2_q *q; int tid; };
static void *s2_producer(void *p)
{
    struct s2_parg *a = p;
    struct s2_q *q = a->q;
    for (int i = 0; i < 82; i++) {
        long v = (long)i * 2 + a->tid;
        pthread_mutex_lock(&q->m);
        while (q->count == 6)
            pthread_cond_wait(&q->not_full, &q->m);
        q->buf[(q->head + q->count) % 6] = v;
        q->count++;
        pthread_cond_signal(&q->not_empty);
        pthread_mutex_unlock(&q->m);
    }
    pthread_mutex_lock(&q->m);
    q->producers--;
    pthread_cond_broadcast(&q->not_empty);
    pthread_mutex_unlock(&q->m);
    return NULL;
}

static unsigned long s2(void)
{
    struct s2_q q;
    memset(&q, 0, sizeof q);
    pthread_mutex_init(&q.m, NULL);
    pthread_cond_init(&q.not_full, NULL);
    pthread_cond_init(&q.not_empty, NULL);
    q.producers = 2;
    pthread_t th[2];
    struct s2_parg args[2];
    for (int t = 0; t < 2; t++) {
        args[t].q = &q;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, s2_producer, &args[t]) != 0) abort();
    }
    unsigned long sum = 0, xs = 0;
    long got = 0;
    for (;;) {
        long v;
        pthread_mutex_lock(&q.m);
        while (q.count == 0 && q.producers > 0)
            pthread_cond_wait(&q.not_empty, &q.m);
        if (q.count == 0) {
            pthread_mutex_unlock(&q.m);
            break;
        }
        v = q.buf[q.head];
        q.head = (q.head + 1) % 6;
        q.count--;
        pthread_cond_signal(&q.not_full);
        pthread_mutex_unlock(&q.m);
        sum += (unsigned long)v;
        xs ^= (unsigned long)v * 40503u;
        got++;
    }
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    return sum * 7u + xs + (unsigned long)got;
}

static pthread_mutex_t s3_m = PTHREAD_MUTEX_INITIALIZER;

struct s3_pt { long x; int y; };

static unsigned long s3(void)
{
    struct s3_pt pt = { 1, 2 }, cp = { 0, 0 };
    long arr[8] = { 0 };
    volatile long vol = 1;
    static long stat_n;
    const long cst = 51;
    long total = 0, tv = 5, *tp = &tv;
    long found = 0, hits = 0, *hp = &found;
    const char *name = "";
    (void)pt; (void)cp; (void)tp; (void)hp; (void)name; (void)cst; (void)vol; (void)hits; (void)arr;
    for (long i = 0; i < 25; i++) {
        
        CHECKED_LOCK(&s3_m);
        total += fz_fnptr(i, total % 11);
        pt.x += i; pt.y ^= (int)i; cp = pt;
        char nb[20]; snprintf(nb, sizeof nb, "n%ld", i); name = nb;
        CHECKED_UNLOCK(&s3_m);
        total += (long)strlen(name) * name[1];
    }
    return (unsigned long)total + (unsigned long)cp.x * 3u + (unsigned long)cp.y + (unsigned long)tv
           + (unsigned long)hits * 1009u + (unsigned long)arr[2] + (unsigned long)stat_n;
}

struct s4_shared { pthread_mutex_t m; long sum; unsigned long x; long maxv; long cnt; long cnt2; long accs; };
static struct s4_shared s4_g = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0 };

struct s4_arg { struct s4_shared *sh; int tid; };
static void *s4_worker(void *p)
{
    struct s4_arg *a = p;
    struct s4_shared *sh = a->sh;
    int tid = a->tid;
    long acc = 0;
    for (int i = 0; i < 353; i++) {
        long v = (long)((i * 55 + tid * 29) % 1000);
        if (pthread_mutex_lock(&sh->m) != 0) abort();
        sh->x ^= (unsigned long)v * 2654435761u;
        if (v > sh->maxv) sh->maxv = v;
        sh->sum += (v + tid);
        if (v > sh->maxv) sh->maxv = v;
        if (pthread_mutex_unlock(&sh->m) != 0) abort();
    }

    if (pthread_mutex_lock(&sh->m) != 0) abort();
    sh->accs += acc;
    if (pthread_mutex_unlock(&sh->m) != 0) abort();
    return NULL;
}

static unsigned long s4(void)
{
    struct s4_shared *shp = &s4_g;
    pthread_t th[2];
    struct s4_arg args[2];
    for (int t = 0; t < 2; t++) {
        args[t].sh = shp;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, s4_worker, &args[t]) != 0) abort();
    }
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    unsigned long r = (unsigned long)shp->sum * 31u + shp->x + (unsigned long)shp->maxv * 7u
                      + (unsigned long)shp->cnt * 13u + (unsigned long)shp->cnt2 * 17u + (unsigned long)shp->accs;
    
    
    return r;
}

int main(void)
{
    printf("s0 threads = %lu\n", s0());
    printf("s1 locals = %lu\n", s1());
    printf("s2 bounded-buffer = %lu\n", s2());
    printf("s3 locals = %lu\n", s3());
    printf("s4 threads = %lu\n", s4());
    return 0;
}
