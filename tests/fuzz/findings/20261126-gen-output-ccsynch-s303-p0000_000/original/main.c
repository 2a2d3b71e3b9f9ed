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
static struct s0_shared s0_g = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0 };
__attribute__((unused)) static _Thread_local long s0_tls;
struct s0_arg { struct s0_shared *sh; int tid; };
static void *s0_worker(void *p)
{
    struct s0_arg *a = p;
    struct s0_shared *sh = a->sh;
    int tid = a->tid;
    long acc = 0; s0_tls = tid * 10 + 1;
    for (int i = 0; i < 381; i++) {
        long v = (long)((i * 7 + tid * 50) % 1000);
        fz_lock(&sh->m);
        sh->sum += fz_extern_helper(v, tid);
        if (i == 190) { sh->cnt += 77; fz_unlock(&sh->m); goto out; }
        sh->cnt++;
        sh->x ^= (unsigned long)v * 2654435761u;
        if (v > sh->maxv) sh->maxv = v;
        sh->sum += s0_tls;
        fz_unlock(&sh->m);
    }
out:
    (void)0;
    fz_lock(&sh->m);
    sh->accs += acc;
    fz_unlock(&sh->m);
    return NULL;
}

static unsigned long s0(void)
{
    struct s0_shared *shp = &s0_g;
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
    const long cst = 33;
    long total = 0, tv = 5, *tp = &tv;
    long found = 0, hits = 0, *hp = &found;
    const char *name = "";
    (void)pt; (void)cp; (void)tp; (void)hp; (void)name; (void)cst; (void)vol; (void)hits; (void)arr;
    for (long i = 0; i < 32; i++) {
        
        pthread_mutex_lock(&s1_m);
        arr[i % 8] += i * 1; total += arr[(i + 3) % 8];
        total += fz_fnptr(i, total % 11);
        pt.x += i; pt.y ^= (int)i; cp = pt;
        pt.x += i; pt.y ^= (int)i; cp = pt;
        long tmpv4 = i * 3 + total % 5; total += tmpv4;
        total += fz_fnptr(i, total % 11);
        char nb[20]; snprintf(nb, sizeof nb, "n%ld", i); name = nb;
        total += (long)strlen(__func__); assert(strcmp(__func__, "s1") == 0);
        pthread_mutex_unlock(&s1_m);
        total += (long)strlen(name) * name[1];
    }
    return (unsigned long)total + (unsigned long)cp.x * 3u + (unsigned long)cp.y + (unsigned long)tv
           + (unsigned long)hits * 1009u + (unsigned long)arr[2] + (unsigned long)stat_n;
}

struct s2_latch { pthread_mutex_t m; pthread_cond_t c; int remaining; int *remp; long sum; };
struct s2_arg { struct s2_latch *l; int tid; };
static void *s2_worker(void *p)
{
    struct s2_arg *a = p;
    struct s2_latch *l = a->l;
    long mine = 0;
    for (int i = 0; i <= 177; i++)
        mine += (i * (a->tid + 1)) % 22;
    LOCK(&l->m);
    l->sum += mine;
    if (--*l->remp == 0)
        pthread_cond_broadcast(&l->c);
    UNLOCK(&l->m);
    return NULL;
}

static unsigned long s2(void)
{
    struct s2_latch lt;
    memset(&lt, 0, sizeof lt);
    pthread_mutex_init(&lt.m, NULL);
    pthread_cond_init(&lt.c, NULL);
    lt.remaining = 3; lt.remp = &lt.remaining; struct s2_latch *lp = &lt;
    pthread_t th[3];
    struct s2_arg args[3];
    for (int t = 0; t < 3; t++) {
        args[t].l = &lt;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, s2_worker, &args[t]) != 0) abort();
    }
    long seen;
    LOCK(&lt.m);
    while (*lp->remp > 0)
        pthread_cond_wait(&lt.c, &lt.m);
    seen = lt.sum;
    UNLOCK(&lt.m);
    for (int t = 0; t < 3; t++)
        pthread_join(th[t], NULL);
    pthread_cond_destroy(&lt.c);
    pthread_mutex_destroy(&lt.m);
    return (unsigned long)seen * 3u + 1u;
}

struct s3_q { pthread_mutex_t m; pthread_cond_t not_full, not_empty; long buf[2]; int head, count, producers; };
struct s3_parg { struct s3_q *q; int tid; };
static void *s3_producer(void *p)
{
    struct s3_parg *a = p;
    struct s3_q *q = a->q;
    for (int i = 0; i < 129; i++) {
        long v = (long)i * 9 + a->tid;
        CHECKED_LOCK(&q->m);
        while (q->count == 2)
            pthread_cond_wait(&q->not_full, &q->m);
        q->buf[(q->head + q->count) % 2] = v;
        q->count++;
        pthread_cond_signal(&q->not_empty);
        CHECKED_UNLOCK(&q->m);
    }
    CHECKED_LOCK(&q->m);
    q->producers--;
    pthread_cond_broadcast(&q->not_empty);
    CHECKED_UNLOCK(&q->m);
    return NULL;
}

static unsigned long s3(void)
{
    struct s3_q q;
    memset(&q, 0, sizeof q);
    pthread_mutex_init(&q.m, NULL);
    pthread_cond_init(&q.not_full, NULL);
    pthread_cond_init(&q.not_empty, NULL);
    q.producers = 3;
    pthread_t th[3];
    struct s3_parg args[3];
    for (int t = 0; t < 3; t++) {
        args[t].q = &q;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, s3_producer, &args[t]) != 0) abort();
    }
    unsigned long sum = 0, xs = 0;
    long got = 0;
    for (;;) {
        long v;
        CHECKED_LOCK(&q.m);
        while (q.count == 0 && q.producers > 0)
            pthread_cond_wait(&q.not_empty, &q.m);
        if (q.count == 0) {
            CHECKED_UNLOCK(&q.m);
            break;
        }
        v = q.buf[q.head];
        q.head = (q.head + 1) % 2;
        q.count--;
        pthread_cond_signal(&q.not_full);
        CHECKED_UNLOCK(&q.m);
        sum += (unsigned long)v;
        xs ^= (unsigned long)v * 40503u;
        got++;
    }
    for (int t = 0; t < 3; t++)
        pthread_join(th[t], NULL);
    return sum * 7u + xs + (unsigned long)got;
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
    for (int i = 0; i < 133; i++) {
        long v = (long)((i * 14 + tid * 58) % 1000);
        CHECKED_LOCK(&sh->m);
        if (v % 5 == 0) { sh->cnt += 2; CHECKED_UNLOCK(&sh->m); continue; }
        acc += v & 15;
        sh->x ^= (unsigned long)v * 2654435761u;
        CHECKED_UNLOCK(&sh->m);
    }

    CHECKED_LOCK(&sh->m);
    sh->accs += acc;
    CHECKED_UNLOCK(&sh->m);
    return NULL;
}

static unsigned long s4(void)
{
    struct s4_shared *shp = &s4_g;
    pthread_t th[3];
    struct s4_arg args[3];
    for (int t = 0; t < 3; t++) {
        args[t].sh = shp;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, s4_worker, &args[t]) != 0) abort();
    }
    for (int t = 0; t < 3; t++)
        pthread_join(th[t], NULL);
    unsigned long r = (unsigned long)shp->sum * 31u + shp->x + (unsigned long)shp->maxv * 7u
                      + (unsigned long)shp->cnt * 13u + (unsigned long)shp->cnt2 * 17u + (unsigned long)shp->accs;
    
    
    return r;
}

int main(void)
{
    printf("s0 threads = %lu\n", s0());
    printf("s1 locals = %lu\n", s1());
    printf("s2 latch = %lu\n", s2());
    printf("s3 bounded-buffer = %lu\n", s3());
    printf("s4 threads = %lu\n", s4());
    return 0;
}
