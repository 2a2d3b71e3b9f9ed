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

struct s0_latch { pthread_mutex_t m; pthread_cond_t c; int remaining; int *remp; long sum; };
struct s0_arg { struct s0_latch *l; int tid; };
static void *s0_worker(void *p)
{
    struct s0_arg *a = p;
    struct s0_latch *l = a->l;
    long mine = 0;
    for (int i = 0; i <= 199; i++)
        mine += (i * (a->tid + 1)) % 30;
    if (pthread_mutex_lock(&l->m) != 0) abort();
    l->sum += mine;
    if (--*l->remp == 0)
        pthread_cond_broadcast(&l->c);
    if (pthread_mutex_unlock(&l->m) != 0) abort();
    return NULL;
}

static unsigned long s0(void)
{
    struct s0_latch lt;
    memset(&lt, 0, sizeof lt);
    pthread_mutex_init(&lt.m, NULL);
    pthread_cond_init(&lt.c, NULL);
    lt.remaining = 2; lt.remp = &lt.remaining; struct s0_latch *lp = &lt;
    pthread_t th[2];
    struct s0_arg args[2];
    for (int t = 0; t < 2; t++) {
        args[t].l = &lt;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, s0_worker, &args[t]) != 0) abort();
    }
    long seen;
    if (pthread_mutex_lock(&lt.m) != 0) abort();
    while (*lp->remp > 0)
        pthread_cond_wait(&lt.c, &lt.m);
    seen = lt.sum;
    if (pthread_mutex_unlock(&lt.m) != 0) abort();
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    pthread_cond_destroy(&lt.c);
    pthread_mutex_destroy(&lt.m);
    return (unsigned long)seen * 3u + 1u;
}

struct s1_acct { pthread_mutex_t m; long bal; long log; };
static pthread_mutex_t s1_m = PTHREAD_MUTEX_INITIALIZER;
static long s1_total;
static int s1_take(struct s1_acct *a, long amt)
{
    int rc = 0;
    CHECKED_LOCK(&a->m);
    if (amt < 0) {
        CHECKED_UNLOCK(&a->m);
        return -2;
    }
    if (a->bal < amt) {
        rc = -1;
        a->log += 1000;
        CHECKED_UNLOCK(&a->m);
        goto out;
    }
    if (amt == 0) { CHECKED_UNLOCK(&a->m); return 0; }
    a->bal -= amt;
    a->log += amt;
    CHECKED_UNLOCK(&a->m);
out:
    return rc;
}
static int s1_classify(long v)
{
    int r;
    CHECKED_LOCK(&s1_m);
    switch (v % 4) {
    case 0:
        s1_total += 1;
        CHECKED_UNLOCK(&s1_m);
        return 10;
    case 1:
        s1_total += 2;
        r = 11;
        CHECKED_UNLOCK(&s1_m);
        break;
    default:
        s1_total += fz_static_helper(v, 3);
        r = 12;
        CHECKED_UNLOCK(&s1_m);
        break;
    }
    return r;
}

static unsigned long s1(void)
{
    struct s1_acct acct = { PTHREAD_MUTEX_INITIALIZER, 744, 0 };
    unsigned long h = 0;
    long i;
    for (i = 0; i < 39; i++) {
        long amt = (i * 25) % 125 - 5;
        h = h * 33u + (unsigned long)(s1_take(&acct, amt) + 3);
        h += (unsigned long)s1_classify(i * 6);
        CHECKED_LOCK(&s1_m);
        if (i % 6 == 0) {
            s1_total += i;
            CHECKED_UNLOCK(&s1_m);
            continue;
        }
        if (s1_total > 130491) {
            CHECKED_UNLOCK(&s1_m);
            break;
        }
        s1_total ^= i;
        CHECKED_UNLOCK(&s1_m);
    }
    return h + (unsigned long)acct.bal * 7u + (unsigned long)acct.log + (unsigned long)s1_total + (unsigned long)i;
}

struct s2_shared { pthread_mutex_t m; long sum; unsigned long x; long maxv; long cnt; long cnt2; long accs; };

__attribute__((unused)) static _Thread_local long s2_tls;
struct s2_arg { struct s2_shared *sh; int tid; };
static void *s2_worker(void *p)
{
    struct s2_arg *a = p;
    struct s2_shared *sh = a->sh;
    int tid = a->tid;
    long acc = 0; char *ap = 0; s2_tls = tid * 10 + 1;
    for (int i = 0; i < 97; i++) {
        long v = (long)((i * 61 + tid * 40) % 1000);
        pthread_mutex_lock(&sh->m);
        sh->cnt++;
        acc += v & 15;
        sh->cnt++;
        ap = alloca(32); snprintf(ap, 32, "%ld", v * 7);
        sh->sum += s2_tls;
        sh->sum += (long)strlen(__func__); assert(strcmp(__func__, "s2_worker") == 0);
        pthread_mutex_unlock(&sh->m);
        acc += (long)strlen(ap);
    }

    pthread_mutex_lock(&sh->m);
    sh->accs += acc;
    pthread_mutex_unlock(&sh->m);
    return NULL;
}

static unsigned long s2(void)
{
    struct s2_shared *shp = calloc(1, sizeof *shp); pthread_mutex_init(&shp->m, NULL);
    pthread_t th[4];
    struct s2_arg args[4];
    for (int t = 0; t < 4; t++) {
        args[t].sh = shp;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, s2_worker, &args[t]) != 0) abort();
    }
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
    unsigned long r = (unsigned long)shp->sum * 31u + shp->x + (unsigned long)shp->maxv * 7u
                      + (unsigned long)shp->cnt * 13u + (unsigned long)shp->cnt2 * 17u + (unsigned long)shp->accs;
    pthread_mutex_destroy(&shp->m);
    free(shp);
    return r;
}

struct s3_latch { pthread_mutex_t m; pthread_cond_t c; int remaining; int *remp; long sum; };
struct s3_arg { struct s3_latch *l; int tid; };
static void *s3_worker(void *p)
{
    struct s3_arg *a = p;
    struct s3_latch *l = a->l;
    long mine = 0;
    for (int i = 0; i <= 105; i++)
        mine += (i * (a->tid + 1)) % 29;
    LOCK(&l->m);
    l->sum += mine;
    if (--*l->remp == 0)
        pthread_cond_broadcast(&l->c);
    UNLOCK(&l->m);
    return NULL;
}

static unsigned long s3(void)
{
    struct s3_latch lt;
    memset(&lt, 0, sizeof lt);
    pthread_mutex_init(&lt.m, NULL);
    pthread_cond_init(&lt.c, NULL);
    lt.remaining = 2; lt.remp = &lt.remaining;
    pthread_t th[2];
    struct s3_arg args[2];
    for (int t = 0; t < 2; t++) {
        args[t].l = &lt;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, s3_worker, &args[t]) != 0) abort();
    }
    long seen;
    LOCK(&lt.m);
    while (lt.remaining > 0)
        pthread_cond_wait(&lt.c, &lt.m);
    seen = lt.sum;
    UNLOCK(&lt.m);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    pthread_cond_destroy(&lt.c);
    pthread_mutex_destroy(&lt.m);
    return (unsigned long)seen * 3u + 1u;
}

int main(void)
{
    printf("s0 latch = %lu\n", s0());
    printf("s1 exits = %lu\n", s1());
    printf("s2 threads = %lu\n", s2());
    printf("s3 latch = %lu\n", s3());
    return 0;
}
