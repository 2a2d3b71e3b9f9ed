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

struct s0_q { pthread_mutex_t m; pthread_cond_t not_full, not_empty; long buf[5]; int head, count, producers; };
struct s0_parg { struct s0_q *q; int tid; };
static void *s0_producer(void *p)
{
    struct s0_parg *a = p;
    struct s0_q *q = a->q;
    for (int i = 0; i < 153; i++) {
        long v = (long)i * 7 + a->tid;
        LOCK(&q->m);
        while (q->count == 5)
            pthread_cond_wait(&q->not_full, &q->m);
        q->buf[(q->head + q->count) % 5] = v;
        q->count++;
        pthread_cond_signal(&q->not_empty);
        UNLOCK(&q->m);
    }
    LOCK(&q->m);
    q->producers--;
    pthread_cond_broadcast(&q->not_empty);
    UNLOCK(&q->m);
    return NULL;
}

static unsigned long s0(void)
{
    struct s0_q q;
    memset(&q, 0, sizeof q);
    pthread_mutex_init(&q.m, NULL);
    pthread_cond_init(&q.not_full, NULL);
    pthread_cond_init(&q.not_empty, NULL);
    q.producers = 1;
    pthread_t th[1];
    struct s0_parg args[1];
    for (int t = 0; t < 1; t++) {
        args[t].q = &q;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, s0_producer, &args[t]) != 0) abort();
    }
    unsigned long sum = 0, xs = 0;
    long got = 0;
    for (;;) {
        long v;
        LOCK(&q.m);
        while (q.count == 0 && q.producers > 0)
            pthread_cond_wait(&q.not_empty, &q.m);
        if (q.count == 0) {
            UNLOCK(&q.m);
            break;
        }
        v = q.buf[q.head];
        q.head = (q.head + 1) % 5;
        q.count--;
        pthread_cond_signal(&q.not_full);
        UNLOCK(&q.m);
        sum += (unsigned long)v;
        xs ^= (unsigned long)v * 40503u;
        got++;
    }
    for (int t = 0; t < 1; t++)
        pthread_join(th[t], NULL);
    return sum * 7u + xs + (unsigned long)got;
}

static pthread_mutex_t s1_m = PTHREAD_MUTEX_INITIALIZER;

struct s1_pt { long x; int y; };

static unsigned long s1(void)
{
    struct s1_pt pt = { 1, 2 }, cp = { 0, 0 };
    long arr[8] = { 0 };
    volatile long vol = 1;
    static long stat_n;
    const long cst = 88;
    long total = 0, tv = 5, *tp = &tv;
    long found = 0, hits = 0, *hp = &found;
    const char *name = "";
    (void)pt; (void)cp; (void)tp; (void)hp; (void)name; (void)cst; (void)vol; (void)hits; (void)arr;
    for (long i = 0; i < 10; i++) {
        
        LOCK(&s1_m);
        long tmpv0 = i * 3 + total % 5; total += tmpv0;
        vol += i & 3; total += vol;
        pt.x += i; pt.y ^= (int)i; cp = pt;
        vol += i & 3; total += vol;
        *hp = (i % 3 == 0); if (found) hits++;
        UNLOCK(&s1_m);
        
    }
    return (unsigned long)total + (unsigned long)cp.x * 3u + (unsigned long)cp.y + (unsigned long)tv
           + (unsigned long)hits * 1009u + (unsigned long)arr[2] + (unsigned long)stat_n;
}

struct s2_shared { pthread_mutex_t m; long sum; unsigned long x; long maxv; long cnt; long cnt2; long accs; };


struct s2_arg { struct s2_shared *sh; int tid; };
static void *s2_worker(void *p)
{
    struct s2_arg *a = p;
    struct s2_shared *sh = a->sh;
    int tid = a->tid;
    long acc = 0;
    for (int i = 0; i < 207; i++) {
        long v = (long)((i * 3 + tid * 3) % 1000);
        pthread_mutex_lock(&sh->m);
        sh->sum += fz_fnptr(v, tid);
        sh->x ^= (unsigned long)v * 2654435761u;
        if (i == 103) { sh->cnt += 77; pthread_mutex_unlock(&sh->m); goto out; }
        sh->x ^= (unsigned long)v * 2654435761u;
        sh->sum += FN_LEN();
        pthread_mutex_unlock(&sh->m);
    }
out:
    (void)0;
    pthread_mutex_lock(&sh->m);
    sh->accs += acc;
    pthread_mutex_unlock(&sh->m);
    return NULL;
}

static unsigned long s2(void)
{
    struct s2_shared *shp = calloc(1, sizeof *shp); pthread_mutex_init(&shp->m, NULL);
    pthread_t th[3];
    struct s2_arg args[3];
    for (int t = 0; t < 3; t++) {
        args[t].sh = shp;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, s2_worker, &args[t]) != 0) abort();
    }
    for (int t = 0; t < 3; t++)
        pthread_join(th[t], NULL);
    unsigned long r = (unsigned long)shp->sum * 31u + shp->x + (unsigned long)shp->maxv * 7u
                      + (unsigned long)shp->cnt * 13u + (unsigned long)shp->cnt2 * 17u + (unsigned long)shp->accs;
    pthread_mutex_destroy(&shp->m);
    free(shp);
    return r;
}

struct s3_acct { pthread_mutex_t m; long bal; long log; };
static pthread_mutex_t s3_m = PTHREAD_MUTEX_INITIALIZER;
static long s3_total;
static int s3_take(struct s3_acct *a, long amt)
{
    int rc = 0;
    LOCK(&a->m);
    if (amt < 0) {
        UNLOCK(&a->m);
        return -2;
    }
    if (a->bal < amt) {
        rc = -1;
        a->log += 1000;
        UNLOCK(&a->m);
        goto out;
    }
    if (amt == 0) { UNLOCK(&a->m); return 0; }
    a->bal -= amt;
    a->log += amt;
    UNLOCK(&a->m);
out:
    return rc;
}
static int s3_classify(long v)
{
    int r;
    LOCK(&s3_m);
    switch (v % 4) {
    case 0:
        s3_total += 1;
        UNLOCK(&s3_m);
        return 10;
    case 1:
        s3_total += 2;
        r = 11;
        UNLOCK(&s3_m);
        break;
    default:
        s3_total += fz_fnptr(v, 3);
        r = 12;
        UNLOCK(&s3_m);
        break;
    }
    return r;
}

static unsigned long s3(void)
{
    struct s3_acct acct = { PTHREAD_MUTEX_INITIALIZER, 3054, 0 };
    unsigned long h = 0;
    long i;
    for (i = 0; i < 53; i++) {
        long amt = (i * 34) % 63 - 2;
        h = h * 33u + (unsigned long)(s3_take(&acct, amt) + 3);
        h += (unsigned long)s3_classify(i * 4);
        LOCK(&s3_m);
        if (i % 8 == 0) {
            s3_total += i;
            UNLOCK(&s3_m);
            continue;
        }
        if (s3_total > 97011) {
            UNLOCK(&s3_m);
            break;
        }
        s3_total ^= i;
        UNLOCK(&s3_m);
    }
    return h + (unsigned long)acct.bal * 7u + (unsigned long)acct.log + (unsigned long)s3_total + (unsigned long)i;
}

struct s4_acct { pthread_mutex_t m; long bal; long log; };
static pthread_mutex_t s4_m = PTHREAD_MUTEX_INITIALIZER;
static long s4_total;
static int s4_take(struct s4_acct *a, long amt)
{
    int rc = 0;
    pthread_mutex_lock(&a->m);
    if (amt < 0) {
        pthread_mutex_unlock(&a->m);
        return -2;
    }
    if (a->bal < amt) {
        rc = -1;
        a->log += 1000;
        pthread_mutex_unlock(&a->m);
        goto out;
    }
    if (amt == 0) { pthread_mutex_unlock(&a->m); return 0; }
    a->bal -= amt;
    a->log += amt;
    pthread_mutex_unlock(&a->m);
out:
    return rc;
}
static int s4_classify(long v)
{
    int r;
    pthread_mutex_lock(&s4_m);
    switch (v % 4) {
    case 0:
        s4_total += 1;
        pthread_mutex_unlock(&s4_m);
        return 10;
    case 1:
        s4_total += 2;
        r = 11;
        pthread_mutex_unlock(&s4_m);
        break;
    default:
        s4_total += fz_fnptr(v, 3);
        r = 12;
        pthread_mutex_unlock(&s4_m);
        break;
    }
    return r;
}

static unsigned long s4(void)
{
    struct s4_acct acct = { PTHREAD_MUTEX_INITIALIZER, 4466, 0 };
    unsigned long h = 0;
    long i;
    for (i = 0; i < 120; i++) {
        long amt = (i * 4) % 108 - 5;
        h = h * 33u + (unsigned long)(s4_take(&acct, amt) + 3);
        h += (unsigned long)s4_classify(i * 3);
        pthread_mutex_lock(&s4_m);
        if (i % 7 == 0) {
            s4_total += i;
            pthread_mutex_unlock(&s4_m);
            continue;
        }
        if (s4_total > 8926) {
            pthread_mutex_unlock(&s4_m);
            break;
        }
        s4_total ^= i;
        pthread_mutex_unlock(&s4_m);
    }
    return h + (unsigned long)acct.bal * 7u + (unsigned long)acct.log + (unsigned long)s4_total + (unsigned long)i;
}

int main(void)
{
    printf("s0 bounded-buffer = %lu\n", s0());
    printf("s1 locals = %lu\n", s1());
    printf("s2 threads = %lu\n", s2());
    printf("s3 exits = %lu\n", s3());
    printf("s4 exits = %lu\n", s4());
    return 0;
}
