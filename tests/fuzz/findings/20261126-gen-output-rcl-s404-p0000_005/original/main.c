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

struct s0_pair { pthread_mutex_t a, b; long x, y; unsigned long h; };
static struct s0_pair s0_p = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, 1000, 1000, 0 };
static void *s0_worker(void *arg)
{
    long tid = (long)(size_t)arg;
    struct s0_pair *p = &s0_p;
    for (int i = 0; i < 196; i++) {
        long amt = (i + tid * 10) % 11;
        if (pthread_mutex_lock(&p->a) != 0) abort();
        p->x -= amt;
        fz_lock(&p->b);
        p->y += amt;
        p->h += (unsigned long)fz_static_helper(amt, tid);
        fz_unlock(&p->b);
        p->x += amt / 2;
        if (pthread_mutex_unlock(&p->a) != 0) abort();
    }
    return NULL;
}

static unsigned long s0(void)
{
    pthread_t th[2];
    for (long t = 0; t < 2; t++)
        if (pthread_create(&th[t], NULL, s0_worker, (void *)(size_t)t) != 0) abort();
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    return (unsigned long)s0_p.x * 1000003u + (unsigned long)s0_p.y + s0_p.h;
}

static pthread_mutex_t s1_m = PTHREAD_MUTEX_INITIALIZER;

struct s1_pt { long x; int y; };

static unsigned long s1(void)
{
    struct s1_pt pt = { 1, 2 }, cp = { 0, 0 };
    long arr[8] = { 0 };
    volatile long vol = 1;
    static long stat_n;
    const long cst = 6;
    long total = 0, tv = 5, *tp = &tv;
    long found = 0, hits = 0, *hp = &found;
    const char *name = "";
    (void)pt; (void)cp; (void)tp; (void)hp; (void)name; (void)cst; (void)vol; (void)hits; (void)arr;
    for (long i = 0; i < 30; i++) {
        
        CHECKED_LOCK(&s1_m);
        total += cst * i;
        fz_add_to(&total, i + 1);
        arr[i % 8] += i * 3; total += arr[(i + 3) % 8];
        char nb[20]; snprintf(nb, sizeof nb, "n%ld", i); name = nb;
        CHECKED_UNLOCK(&s1_m);
        total += (long)strlen(name) * name[1];
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
    for (int i = 0; i < 236; i++) {
        long v = (long)((i * 19 + tid * 45) % 1000);
        fz_lock(&sh->m);
        sh->cnt++;
        sh->cnt++;
        sh->sum += (v + tid);
        if (v > sh->maxv) sh->maxv = v;
        if (i == 217) { sh->cnt += 1000; fz_unlock(&sh->m); break; }
        fz_unlock(&sh->m);
    }

    fz_lock(&sh->m);
    sh->accs += acc;
    fz_unlock(&sh->m);
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
    if (amt == 0) { if (pthread_mutex_unlock(&a->m) != 0) abort(); return 0; }
    a->bal -= amt;
    a->log += amt;
    if (pthread_mutex_unlock(&a->m) != 0) abort();
out:
    return rc;
}
static int s3_classify(long v)
{
    int r;
    if (pthread_mutex_lock(&s3_m) != 0) abort();
    switch (v % 4) {
    case 0:
        s3_total += 1;
        if (pthread_mutex_unlock(&s3_m) != 0) abort();
        return 10;
    case 1:
        s3_total += 2;
        r = 11;
        if (pthread_mutex_unlock(&s3_m) != 0) abort();
        break;
    default:
        s3_total += fz_rec_helper((v) % 9);
        r = 12;
        if (pthread_mutex_unlock(&s3_m) != 0) abort();
        break;
    }
    return r;
}

static unsigned long s3(void)
{
    struct s3_acct acct = { PTHREAD_MUTEX_INITIALIZER, 3719, 0 };
    unsigned long h = 0;
    long i;
    for (i = 0; i < 33; i++) {
        long amt = (i * 10) % 128 - 5;
        h = h * 33u + (unsigned long)(s3_take(&acct, amt) + 3);
        h += (unsigned long)s3_classify(i * 8);
        if (pthread_mutex_lock(&s3_m) != 0) abort();
        if (i % 8 == 0) {
            s3_total += i;
            if (pthread_mutex_unlock(&s3_m) != 0) abort();
            continue;
        }
        if (s3_total > 156478) {
            if (pthread_mutex_unlock(&s3_m) != 0) abort();
            break;
        }
        s3_total ^= i;
        if (pthread_mutex_unlock(&s3_m) != 0) abort();
    }
    return h + (unsigned long)acct.bal * 7u + (unsigned long)acct.log + (unsigned long)s3_total + (unsigned long)i;
}

struct s4_bar { pthread_mutex_t m; pthread_cond_t c; int n, count; unsigned gen; };
static void s4_wait(struct s4_bar *b)
{
    LOCK(&b->m);
    unsigned g = b->gen;
    if (++b->count == b->n) {
        b->count = 0;
        b->gen++;
        pthread_cond_broadcast(&b->c);
    } else {
        while (g == b->gen)
            pthread_cond_wait(&b->c, &b->m);
    }
    UNLOCK(&b->m);
}
struct s4_arg { struct s4_bar *b; long *slots; int tid; };
static void *s4_worker(void *p)
{
    struct s4_arg *a = p;
    for (int ph = 0; ph < 2; ph++) {
        long s = 0;
        for (int j = 0; j < 4; j++)
            s += a->slots[j];
        s4_wait(a->b);
        a->slots[a->tid] = (s * 5 + a->tid + ph) % 100003;
        s4_wait(a->b);
    }
    return NULL;
}

static unsigned long s4(void)
{
    struct s4_bar bar = { .n = 4 };
    long slots[4];
    pthread_mutex_init(&bar.m, NULL);
    pthread_cond_init(&bar.c, NULL);
    for (int j = 0; j < 4; j++)
        slots[j] = j + 1;
    pthread_t th[4];
    struct s4_arg args[4];
    for (int t = 0; t < 4; t++) {
        args[t].b = &bar;
        args[t].slots = slots;
        args[t].tid = t;
        if (pthread_create(&th[t], NULL, s4_worker, &args[t]) != 0) abort();
    }
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
    unsigned long h = bar.gen;
    for (int j = 0; j < 4; j++)
        h = h * 131u + (unsigned long)slots[j];
    return h;
}

int main(void)
{
    printf("s0 nested = %lu\n", s0());
    printf("s1 locals = %lu\n", s1());
    printf("s2 threads = %lu\n", s2());
    printf("s3 exits = %lu\n", s3());
    printf("s4 barrier = %lu\n", s4());
    return 0;
}
