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
    long acc = 0; s0_tls = tid * 10 + 1;
    for (int i = 0; i < 206; i++) {
        long v = (long)((i * 80 + tid * 82) % 1000);
        fz_lock(&sh->m);
        acc += v & 15;
        sh->sum += s0_tls;
        fz_unlock(&sh->m);
    }

    fz_lock(&sh->m);
    sh->accs += acc;
    fz_unlock(&sh->m);
    return NULL;
}

static unsigned long s0(void)
{
    struct s0_shared *shp = calloc(1, sizeof *shp); pthread_mutex_init(&shp->m, NULL);
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
    free(shp);
    return r;
}

struct s1_latch { pthread_mutex_t m; pthread_cond_t c; int remaining; int *remp; long sum; };
struct s1_arg { struct s1_latch *l; int tid; };
static void *s1_worker(void *p)
{
    struct s1_arg *a = p;
    struct s1_latch *l = a->l;
    long mine = 0;
    for (int i = 0; i <= 169; i++)
        mine += (i * (a->tid + 1)) % 48;
    pthread_mutex_lock(&l->m);
    l->sum += mine;
    if (--*l->remp == 0)
        pthread_cond_broadcast(&l->c);
    pthread_mutex_unlock(&l->m);
    return NULL;
}

static unsigned long s1(void)
{
    struct s1_latch lt;
    memset(&lt, 0, sizeof lt);
    pthread_mutex_init(&lt.m, NULL);
    pthread_cond_init(&lt.c, NULL);
    lt.remaining = 3; lt.remp = &lt.remaining; struct s1_latch *lp = &lt;
    pthread_t th[3];
    struct s1_arg args[3];
    for (int t = 0; t < 3; t++) {
        args[t].l = &lt;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, s1_worker, &args[t]) != 0) abort();
    }
    long seen;
    pthread_mutex_lock(&lt.m);
    while (*lp->remp > 0)
        pthread_cond_wait(&lt.c, &lt.m);
    seen = lt.sum;
    pthread_mutex_unlock(&lt.m);
    for (int t = 0; t < 3; t++)
        pthread_join(th[t], NULL);
    pthread_cond_destroy(&lt.c);
    pthread_mutex_destroy(&lt.m);
    return (unsigned long)seen * 3u + 1u;
}

struct s2_acct { pthread_mutex_t m; long bal; long log; };
static pthread_mutex_t s2_m = PTHREAD_MUTEX_INITIALIZER;
static long s2_total;
static int s2_take(struct s2_acct *a, long amt)
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
static int s2_classify(long v)
{
    int r;
    CHECKED_LOCK(&s2_m);
    switch (v % 4) {
    case 0:
        s2_total += 1;
        CHECKED_UNLOCK(&s2_m);
        return 10;
    case 1:
        s2_total += 2;
        r = 11;
        CHECKED_UNLOCK(&s2_m);
        break;
    default:
        s2_total += fz_extern_helper(v, 3);
        r = 12;
        CHECKED_UNLOCK(&s2_m);
        break;
    }
    return r;
}

static unsigned long s2(void)
{
    struct s2_acct acct = { PTHREAD_MUTEX_INITIALIZER, 2130, 0 };
    unsigned long h = 0;
    long i;
    for (i = 0; i < 99; i++) {
        long amt = (i * 25) % 142 - 0;
        h = h * 33u + (unsigned long)(s2_take(&acct, amt) + 3);
        h += (unsigned long)s2_classify(i * 6);
        CHECKED_LOCK(&s2_m);
        if (i % 2 == 0) {
            s2_total += i;
            CHECKED_UNLOCK(&s2_m);
            continue;
        }
        if (s2_total > 182293) {
            CHECKED_UNLOCK(&s2_m);
            break;
        }
        s2_total ^= i;
        CHECKED_UNLOCK(&s2_m);
    }
    return h + (unsigned long)acct.bal * 7u + (unsigned long)acct.log + (unsigned long)s2_total + (unsigned long)i;
}

struct s3_shared { pthread_mutex_t m; long sum; unsigned long x; long maxv; long cnt; long cnt2; long accs; };
static struct s3_shared s3_g = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0 };

struct s3_arg { struct s3_shared *sh; int tid; };
static void *s3_worker(void *p)
{
    struct s3_arg *a = p;
    struct s3_shared *sh = a->sh;
    int tid = a->tid;
    long acc = 0; const char *bp = 0;
    for (int i = 0; i < 279; i++) {
        long v = (long)((i * 32 + tid * 27) % 1000);
        if (pthread_mutex_lock(&sh->m) != 0) abort();
        sh->sum += fz_var_helper(2, (long)(v), (long)(tid));
        sh->sum += (v + tid);
        sh->x ^= (unsigned long)v * 2654435761u;
        char buf[24]; snprintf(buf, sizeof buf, "v%ld", v); bp = buf;
        if (pthread_mutex_unlock(&sh->m) != 0) abort();
        acc += (long)strlen(bp) + bp[1];
    }

    if (pthread_mutex_lock(&sh->m) != 0) abort();
    sh->accs += acc;
    if (pthread_mutex_unlock(&sh->m) != 0) abort();
    return NULL;
}

static unsigned long s3(void)
{
    struct s3_shared *shp = &s3_g;
    pthread_t th[2];
    struct s3_arg args[2];
    for (int t = 0; t < 2; t++) {
        args[t].sh = shp;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, s3_worker, &args[t]) != 0) abort();
    }
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    unsigned long r = (unsigned long)shp->sum * 31u + shp->x + (unsigned long)shp->maxv * 7u
                      + (unsigned long)shp->cnt * 13u + (unsigned long)shp->cnt2 * 17u + (unsigned long)shp->accs;
    
    
    return r;
}

struct s4_acct { pthread_mutex_t m; long bal; long log; };
static pthread_mutex_t s4_m = PTHREAD_MUTEX_INITIALIZER;
static long s4_total;
static int s4_take(struct s4_acct *a, long amt)
{
    int rc = 0;
    if (pthread_mutex_lock(&a->m) != 0) abort();
    if (amt < 0) {
        if (pthread_mutex_unlock(&a->m) != 0) abort();
        return -2;
    }
    if (a->bal < amt) {
        rc = -1;
        a->log += 1000;
        if (pthread_mutex_unlock(&a->m) != 0) abort();
        goto out;
    }
    if (amt == 0) goto unlock;
    a->bal -= amt;
    a->log += amt;
    unlock:
    if (pthread_mutex_unlock(&a->m) != 0) abort();
out:
    return rc;
}
static int s4_classify(long v)
{
    int r;
    if (pthread_mutex_lock(&s4_m) != 0) abort();
    switch (v % 4) {
    case 0:
        s4_total += 1;
        if (pthread_mutex_unlock(&s4_m) != 0) abort();
        return 10;
    case 1:
        s4_total += 2;
        r = 11;
        if (pthread_mutex_unlock(&s4_m) != 0) abort();
        break;
    default:
        s4_total += (v + 3);
        r = 12;
        if (pthread_mutex_unlock(&s4_m) != 0) abort();
        break;
    }
    return r;
}

static unsigned long s4(void)
{
    struct s4_acct acct = { PTHREAD_MUTEX_INITIALIZER, 4466, 0 };
    unsigned long h = 0;
    long i;
    for (i = 0; i < 115; i++) {
        long amt = (i * 14) % 94 - 0;
        h = h * 33u + (unsigned long)(s4_take(&acct, amt) + 3);
        h += (unsigned long)s4_classify(i * 5);
        if (pthread_mutex_lock(&s4_m) != 0) abort();
        if (i % 9 == 0) {
            s4_total += i;
            if (pthread_mutex_unlock(&s4_m) != 0) abort();
            continue;
        }
        if (s4_total > 187839) {
            if (pthread_mutex_unlock(&s4_m) != 0) abort();
            break;
        }
        s4_total ^= i;
        if (pthread_mutex_unlock(&s4_m) != 0) abort();
    }
    return h + (unsigned long)acct.bal * 7u + (unsigned long)acct.log + (unsigned long)s4_total + (unsigned long)i;
}

int main(void)
{
    printf("s0 threads = %lu\n", s0());
    printf("s1 latch = %lu\n", s1());
    printf("s2 exits = %lu\n", s2());
    printf("s3 threads = %lu\n", s3());
    printf("s4 exits = %lu\n", s4());
    return 0;
}
