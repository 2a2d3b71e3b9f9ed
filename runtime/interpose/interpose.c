/*
 * librclify_run.so: the runtime under an UNMODIFIED program (`rclify run -- CMD`), by LD_PRELOAD.
 *
 * It interposes pthread_mutex_{init,destroy,lock,trylock,timedlock,clocklock,unlock} and
 * pthread_cond_{init,destroy,wait,timedwait,clockwait,signal,broadcast}.  Each mutex is decided
 * once, by its lock id and RCLIFY_LOCKS (the runtime's own rcl_config_resolve: the same grammar
 * and ids as lock_config.h and `rclify profile`):
 *   - posix: it stays glibc's mutex, untouched; every call goes straight to glibc;
 *   - any other algorithm: an rcl_mutex_t is allocated beside it (fixed size whatever the thread
 *     count: queue nodes come from per-thread pools) and the pthread_mutex_t's own bytes hold a
 *     pointer to it and a tag (see struct mutex_tag): the lookup is two loads from the cache line
 *     the program touches anyway, no table.
 * Process-shared, robust and priority-protocol mutexes stay posix (their bytes are shared or
 * read by the kernel), as they do in the runtime.
 *
 * Lock ids: `rclify run` writes a table (RCLIFY_RUN_SITES) of the program's init sites (the
 * return address of each pthread_mutex_init call, named as `rclify profile` names it) and of its
 * static mutex variables (address ranges); a lock found in neither is anonymous ('*' matches it).
 *
 * Static initializers: a zero-filled (or PTHREAD_*_MUTEX_INITIALIZER) mutex is decided at its
 * first use.  When some untagged lock could need the runtime (an algorithm for anonymous locks,
 * or a static variable configured so), such a first use is decided by its id; one decided posix
 * is remembered in a hashed set (posix_set), which an untagged lock then costs: one probe.  When
 * no untagged lock can need the runtime, an untagged lock costs nothing but the tag test.
 *
 * Condition variables: a condvar first waited on with a runtime lock gets an rcl_cond_t beside it,
 * tagged the same way in the pthread_cond_t's bytes; waits on a posix mutex then use that
 * rcl_cond_t's own pthread_cond_t, and signal / broadcast wake both kinds of waiters.  No shadow
 * mutex: the rcl_cond_t waits on a futex sequence word (core/cond.c).
 *
 * RCL is the lock form (hybrid) only here: sections are not extracted, so they run on their
 * threads, with the RCL lock as a lock.
 */
#define _GNU_SOURCE
#define RCLIFY_NO_TYPE_GUARD
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rclify.h"
#include "core/atomics.h"
#include "core/runtime.h"

#define EXPORT __attribute__((visibility("default")))

#if !defined(__x86_64__) || !defined(__GLIBC__)
#error "librclify_run.so knows glibc's x86_64 pthread_mutex_t and pthread_cond_t layouts only"
#endif

/* ---- glibc's functions: ours fall back on them, and the runtime inside calls them ---------- */

#define LIBC_FUNCTIONS(X)                                                                                   \
    X(int, pthread_mutex_init, (pthread_mutex_t * m, const pthread_mutexattr_t *a), (m, a))                 \
    X(int, pthread_mutex_destroy, (pthread_mutex_t * m), (m))                                               \
    X(int, pthread_mutex_lock, (pthread_mutex_t * m), (m))                                                  \
    X(int, pthread_mutex_trylock, (pthread_mutex_t * m), (m))                                               \
    X(int, pthread_mutex_unlock, (pthread_mutex_t * m), (m))                                                \
    X(int, pthread_mutex_timedlock, (pthread_mutex_t * m, const struct timespec *t), (m, t))                \
    X(int, pthread_mutex_clocklock, (pthread_mutex_t * m, clockid_t k, const struct timespec *t), (m, k, t)) \
    X(int, pthread_cond_init, (pthread_cond_t * c, const pthread_condattr_t *a), (c, a))                    \
    X(int, pthread_cond_destroy, (pthread_cond_t * c), (c))                                                 \
    X(int, pthread_cond_wait, (pthread_cond_t * c, pthread_mutex_t * m), (c, m))                            \
    X(int, pthread_cond_timedwait, (pthread_cond_t * c, pthread_mutex_t * m, const struct timespec *t),      \
      (c, m, t))                                                                                            \
    X(int, pthread_cond_clockwait,                                                                          \
      (pthread_cond_t * c, pthread_mutex_t * m, clockid_t k, const struct timespec *t), (c, m, k, t))       \
    X(int, pthread_cond_signal, (pthread_cond_t * c), (c))                                                  \
    X(int, pthread_cond_broadcast, (pthread_cond_t * c), (c))

/* The pointers, resolved on first need (dlsym RTLD_NEXT: glibc, or a sanitizer's interceptor). */
#define X(ret, name, params, args) static ret(*libc_##name) params;
LIBC_FUNCTIONS(X)
#undef X

/* glibc keeps an old pthread_cond_* ABI (GLIBC_2.2.5) beside the current one (GLIBC_2.3.2 on
 * x86_64); should a plain dlsym return the old one, take the current one.  (Not dlvsym first: it
 * would skip a sanitizer's unversioned interceptor, and TSan would not see the wait's unlock.) */
static void *next_symbol(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p && strncmp(name, "pthread_cond_", 13) == 0 && p == dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5")) {
        void *current = dlvsym(RTLD_NEXT, name, "GLIBC_2.3.2");
        if (current)
            p = current;
    }
    return p;
}

static void resolve_libc(void)
{
#define X(ret, name, params, args)                               \
    if (!libc_##name)                                            \
        *(void **)&libc_##name = next_symbol(#name);             \
    if (!libc_##name) {                                          \
        static const char msg[] = "rclify run: no " #name "\n";  \
        if (write(2, msg, sizeof msg - 1) < 0) {                 \
        }                                                        \
        abort();                                                 \
    }
    LIBC_FUNCTIONS(X)
#undef X
}

/* The runtime's own references to these names were renamed rcl_libc_<name> when this library was
 * linked (runtime/Makefile: objcopy --redefine-sym): they land here, on glibc's. */
#define X(ret, name, params, args)                 \
    ret rcl_libc_##name params;                    \
    ret rcl_libc_##name params                     \
    {                                              \
        if (__builtin_expect(!libc_##name, 0))     \
            resolve_libc();                        \
        return libc_##name args;                   \
    }
LIBC_FUNCTIONS(X)
#undef X

#define LIBC(name) (__builtin_expect(libc_##name != NULL, 1) ? libc_##name : (resolve_libc(), libc_##name))

/* ---- tags inside the program's own pthread objects ----------------------------------------- */

/*
 * glibc x86_64 pthread_mutex_t (40 bytes): __lock, __count, __owner, __nusers, __kind, __spins,
 * __elision, then __list (two pointers: the robust list, unused by non-robust mutexes, which are
 * the only ones we take).  The tag puts our pointer and a check word over __list; the rest is left
 * as the program or the initializer wrote it (__kind: the kind of a static initializer).
 */
struct mutex_tag {
    int lock_word, count, owner;
    unsigned nusers;
    int kind;
    short spins, elision;
    rcl_mutex_t *impl;
    uintptr_t check; /* TAG(m) once impl is valid (release); BUSY(m) while one thread sets it up */
};
_Static_assert(sizeof(struct mutex_tag) == sizeof(pthread_mutex_t), "glibc x86_64 mutex layout");

/* glibc x86_64 pthread_cond_t (48 bytes): __wseq, __g1_start, __g_refs[2], __g_size[2],
 * __g1_orig_size, __wrefs (bit 1: CLOCK_MONOTONIC, bit 2: process-shared), __g_signals[2].  A
 * condvar becomes ours only between waits (no glibc waiter: POSIX binds a condvar to one mutex
 * while it has waiters), and ours keeps __wrefs as it was. */
struct cond_tag {
    rcl_cond_t *impl;
    uintptr_t check;
    unsigned g_refs[2], g_size[2], g1_orig_size, wrefs, g_signals[2];
};
_Static_assert(sizeof(struct cond_tag) == sizeof(pthread_cond_t), "glibc x86_64 condvar layout");

/* The check word depends on the object's address: a copy of a tagged object is not tagged. */
#define TAG(p) ((uintptr_t)(p) ^ (uintptr_t)0x52434c4946595f54ull)  /* "RCLIFY_T" */
#define BUSY(p) ((uintptr_t)(p) ^ (uintptr_t)0x52434c4946595f42ull) /* "RCLIFY_B" */

static inline rcl_mutex_t *mutex_impl(pthread_mutex_t *m)
{
    struct mutex_tag *t = (struct mutex_tag *)m;
    if (__atomic_load_n(&t->check, __ATOMIC_ACQUIRE) == TAG(m))
        return __atomic_load_n(&t->impl, __ATOMIC_RELAXED);
    return NULL;
}

static inline rcl_cond_t *cond_impl(pthread_cond_t *c)
{
    struct cond_tag *t = (struct cond_tag *)c;
    if (__atomic_load_n(&t->check, __ATOMIC_ACQUIRE) == TAG(c))
        return __atomic_load_n(&t->impl, __ATOMIC_RELAXED);
    return NULL;
}

/* ---- lock ids: the site table from `rclify run` -------------------------------------------- */

#define CALLERS 3 /* frames above an init site that may name its lock (the profiler's CALLERS) */

struct site {
    uintptr_t vaddr, size;     /* size 0: an init call's return address; else a static variable */
    uintptr_t callers[CALLERS]; /* init sites: return addresses of the calls above it, ncallers of them */
    int ncallers;
    char *id;
};
static struct site *sites, *statics, *adopted; /* adopted: the statics whose id gets the runtime */
static size_t n_sites, n_statics, n_adopted;
static uintptr_t adopted_lo = UINTPTR_MAX, adopted_hi; /* their span: most locks are outside */
static uintptr_t exe_bias;
static int adopt_anonymous;     /* an untagged lock with no static id gets the runtime */
static int adopt_some_statics;  /* some static variable's id gets the runtime */

static int by_vaddr(const void *a, const void *b)
{
    uintptr_t x = ((const struct site *)a)->vaddr, y = ((const struct site *)b)->vaddr;
    return x < y ? -1 : x > y;
}

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
    *(uintptr_t *)data = info->dlpi_addr; /* the first object is the program */
    return 1;
}

static int resolves_to_runtime(const char *id)
{
    rcl_lock_config_t own = RCL_LOCK_CONFIG(id, 0, 0, -1), out;
    rcl_config_resolve(&own, &out);
    return out.algorithm != 0 && out.algorithm != RCL_ALG_POSIX;
}

static void read_sites(void)
{
    const char *path = getenv("RCLIFY_RUN_SITES");
    FILE *f = path && *path ? fopen(path, "re") : NULL;
    if (f) {
        char line[4096], self[4096];
        size_t cap_s = 0, cap_v = 0;
        ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
        self[len > 0 ? len : 0] = '\0';
        int mine = 1;
        while (fgets(line, sizeof line, f)) {
            /* exe PATH: the lines up to the next exe name that program's locks; a program the
             * table does not name (a script's interpreter, a child not given) has anonymous ones */
            if (strncmp(line, "exe ", 4) == 0) {
                line[strcspn(line, "\n")] = '\0';
                mine = strcmp(line + 4, self) == 0;
                continue;
            }
            if (!mine)
                continue;
            unsigned long long vaddr, size = 0, c[CALLERS] = { 0 };
            char id[4000];
            int fields = 0;
            int static_var = sscanf(line, "static %llx %llx %3999s", &vaddr, &size, id) == 3;
            /* site RET [CALLER [CALLER [CALLER]]] ID: the id is the last field, not hexadecimal */
            if (!static_var && strncmp(line, "site ", 5) == 0) {
                char *tok[CALLERS + 2], *save = NULL;
                for (char *t = strtok_r(line + 5, " \n", &save); t && fields < CALLERS + 2; t = strtok_r(NULL, " \n", &save))
                    tok[fields++] = t;
                if (fields < 2)
                    continue;
                vaddr = strtoull(tok[0], NULL, 16);
                for (int k = 1; k < fields - 1; k++)
                    c[k - 1] = strtoull(tok[k], NULL, 16);
                snprintf(id, sizeof id, "%s", tok[fields - 1]);
                fields -= 2; /* callers */
            } else if (!static_var) {
                continue;
            }
            struct site **arr = static_var ? &statics : &sites;
            size_t *n = static_var ? &n_statics : &n_sites, *cap = static_var ? &cap_v : &cap_s;
            if (*n == *cap) {
                *cap = *cap ? 2 * *cap : 64;
                *arr = realloc(*arr, *cap * sizeof **arr);
                if (!*arr)
                    rcl_fatal("rclify run: out of memory for the lock ids");
            }
            struct site e = { (uintptr_t)vaddr, (uintptr_t)size, { 0 }, static_var ? 0 : fields, strdup(id) };
            for (int k = 0; k < CALLERS; k++)
                e.callers[k] = (uintptr_t)c[k];
            (*arr)[(*n)++] = e;
        }
        fclose(f);
    }
    qsort(sites, n_sites, sizeof *sites, by_vaddr);
    qsort(statics, n_statics, sizeof *statics, by_vaddr);
    dl_iterate_phdr(first_object, &exe_bias);
    adopt_anonymous = resolves_to_runtime(NULL);
    for (size_t i = 0; i < n_statics; i++)
        n_adopted += resolves_to_runtime(statics[i].id);
    if (n_adopted) {
        adopted = malloc(n_adopted * sizeof *adopted);
        if (!adopted)
            rcl_fatal("rclify run: out of memory for the lock ids");
        n_adopted = 0;
        for (size_t i = 0; i < n_statics; i++)
            if (resolves_to_runtime(statics[i].id)) {
                adopted[n_adopted++] = statics[i];
                if (statics[i].vaddr < adopted_lo)
                    adopted_lo = statics[i].vaddr;
                if (statics[i].vaddr + statics[i].size > adopted_hi)
                    adopted_hi = statics[i].vaddr + statics[i].size;
            }
        adopt_some_statics = 1;
    }
}

/* The last entry at or below vaddr. */
static const struct site *find(const struct site *arr, size_t n, uintptr_t vaddr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (arr[mid].vaddr <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? &arr[lo - 1] : NULL;
}

/*
 * The id of the lock an init call at `ret` sets up: the site's own, or, when the site is inside
 * the program's lock helpers, the longest chain of callers the table has that the stack matches
 * (backtrace: .eh_frame unwinding, as the profiler does; only sites with such chains pay for it).
 */
static __attribute__((noinline)) const char *site_id(void *ret)
{
    uintptr_t v = (uintptr_t)ret - exe_bias;
    const struct site *last = find(sites, n_sites, v);
    if (!last || last->vaddr != v)
        return NULL;
    const struct site *first = last;
    while (first > sites && first[-1].vaddr == v)
        first--;
    const struct site *best = NULL;
    void *frames[CALLERS + 6];
    int n = -1, at = -1;
    for (const struct site *s = first; s <= last; s++) {
        if (s->ncallers == 0) {
            if (!best)
                best = s;
            continue;
        }
        if (n < 0) {
            n = backtrace(frames, CALLERS + 6);
            for (int i = 0; i < n && at < 0; i++)
                if (frames[i] == ret)
                    at = i;
        }
        if (at < 0 || at + s->ncallers >= n)
            continue;
        int match = 1;
        for (int k = 0; k < s->ncallers && match; k++)
            match = (uintptr_t)frames[at + 1 + k] - exe_bias == s->callers[k];
        if (match && (!best || s->ncallers > best->ncallers))
            best = s;
    }
    return best ? best->id : NULL;
}

static const char *static_id(const void *m)
{
    const struct site *s = find(statics, n_statics, (uintptr_t)m - exe_bias);
    return s && (uintptr_t)m - exe_bias < s->vaddr + s->size ? s->id : NULL;
}

/* ---- posix_set: untagged locks decided posix, when untagged locks may be adopted ------------ */

/* Open addressing, linear probing, keys never moved; a removed key becomes TOMB (1).  A lookup is
 * one hashed probe (and the run of its neighbours).  Sized for a million live posix locks that
 * could otherwise be adopted (mmap: pages are touched only as used). */
#define SET_BITS 21
#define SET_SIZE (1u << SET_BITS)
#define TOMB ((uintptr_t)1)
static uintptr_t *posix_set;

static inline size_t slot_of(const void *p)
{
    return (size_t)(((uintptr_t)p * 0x9e3779b97f4a7c15ull) >> (64 - SET_BITS));
}

static inline int set_contains(const void *p)
{
    if (!posix_set)
        return 0;
    for (size_t i = slot_of(p), n = 0; n < SET_SIZE; i = (i + 1) & (SET_SIZE - 1), n++) {
        uintptr_t k = __atomic_load_n(&posix_set[i], __ATOMIC_ACQUIRE);
        if (k == (uintptr_t)p)
            return 1;
        if (k == 0)
            return 0;
    }
    return 0;
}

static void set_add(const void *p)
{
    if (!posix_set || set_contains(p))
        return;
    for (size_t i = slot_of(p), n = 0; n < SET_SIZE; i = (i + 1) & (SET_SIZE - 1), n++) {
        uintptr_t k = __atomic_load_n(&posix_set[i], __ATOMIC_RELAXED);
        if ((k == 0 || k == TOMB) &&
            __atomic_compare_exchange_n(&posix_set[i], &k, (uintptr_t)p, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
            return;
    }
    rcl_fatal("rclify run: more than %u posix locks to remember", SET_SIZE);
}

static void set_remove(const void *p)
{
    if (!posix_set)
        return;
    for (size_t i = slot_of(p), n = 0; n < SET_SIZE; i = (i + 1) & (SET_SIZE - 1), n++) {
        uintptr_t k = __atomic_load_n(&posix_set[i], __ATOMIC_ACQUIRE);
        if (k == 0)
            return;
        if (k == (uintptr_t)p)
            __atomic_store_n(&posix_set[i], TOMB, __ATOMIC_RELEASE);
    }
}

/* Could an untagged lock at m be one the runtime must take?  (Cheap when none can.) */
static inline int may_adopt(const void *m)
{
    if (adopt_anonymous)
        return 1;
    if (!adopt_some_statics)
        return 0;
    uintptr_t v = (uintptr_t)m - exe_bias;
    if (v < adopted_lo || v >= adopted_hi)
        return 0;
    const struct site *s = find(adopted, n_adopted, v);
    return s && v < s->vaddr + s->size;
}

/* ---- mutexes -------------------------------------------------------------------------------- */

static rcl_mutex_t *new_impl(const char *id, int kind)
{
    int saved = errno;
    rcl_mutex_t *r = aligned_alloc(64, (sizeof *r + 63) & ~(size_t)63);
    if (!r)
        rcl_fatal("rclify run: out of memory for a lock");
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, kind);
    rcl_lock_config_t cfg = RCL_LOCK_CONFIG(id, 0, 0, -1);
    int rc = rcl_mutex_init(r, &attr, &cfg);
    pthread_mutexattr_destroy(&attr);
    if (rc != 0)
        rcl_fatal("rclify run: lock %s: init failed: %s", id ? id : "(anonymous)", strerror(rc));
    errno = saved;
    return r;
}

static void publish(struct mutex_tag *t, pthread_mutex_t *m, rcl_mutex_t *r)
{
    __atomic_store_n(&t->impl, r, __ATOMIC_RELAXED);
    __atomic_store_n(&t->check, TAG(m), __ATOMIC_RELEASE);
}

/*
 * First use of an untagged lock (a static initializer, or memory the program zeroed): decide.
 * Returns the runtime lock, or NULL for posix.  One thread sets a lock up (the check word goes
 * to BUSY(m) by CAS); the others wait for it.
 */
static rcl_mutex_t *adopt_locked(pthread_mutex_t *m);

/* No lock operation changes errno (the program's section may read it): setting a lock up reads
 * /sys (cohort locks' clusters), which may. */
static __attribute__((noinline)) rcl_mutex_t *adopt(pthread_mutex_t *m)
{
    int saved = errno;
    rcl_mutex_t *r = adopt_locked(m);
    errno = saved;
    return r;
}

static rcl_mutex_t *adopt_locked(pthread_mutex_t *m)
{
    struct mutex_tag *t = (struct mutex_tag *)m;
    for (unsigned n = 0;; n++) {
        if (set_contains(m))
            return NULL;
        uintptr_t check = __atomic_load_n(&t->check, __ATOMIC_ACQUIRE);
        if (check == TAG(m))
            return t->impl;
        if (check == BUSY(m)) { /* another thread sets it up */
            if (n < 64)
                rcl_pause();
            else
                sched_yield();
            continue;
        }
        const char *id = static_id(m);
        if (!resolves_to_runtime(id)) {
            set_add(m);
            return NULL;
        }
        if (!__atomic_compare_exchange_n(&t->check, &check, BUSY(m), 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            continue;
        int kind = t->kind & 3; /* the initializer's: normal, recursive, errorcheck (adaptive: normal) */
        rcl_mutex_t *r = new_impl(id, kind == 3 ? PTHREAD_MUTEX_NORMAL : kind);
        publish(t, m, r);
        return r;
    }
}

static inline rcl_mutex_t *lookup(pthread_mutex_t *m)
{
    rcl_mutex_t *r = mutex_impl(m);
    if (__builtin_expect(r != NULL, 1))
        return r;
    if (__builtin_expect(!may_adopt(m), 1) || set_contains(m)) /* posix: the one hashed probe */
        return NULL;
    return adopt(m);
}

/* Attributes that keep a lock posix: the runtime's rule (process-shared, robust, a protocol). */
static int posix_only(const pthread_mutexattr_t *a)
{
    int v;
    if (!a)
        return 0;
    return (pthread_mutexattr_getpshared(a, &v) == 0 && v == PTHREAD_PROCESS_SHARED) ||
           (pthread_mutexattr_getrobust(a, &v) == 0 && v == PTHREAD_MUTEX_ROBUST) ||
           (pthread_mutexattr_getprotocol(a, &v) == 0 && v != PTHREAD_PRIO_NONE);
}

EXPORT int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
    const char *id = site_id(__builtin_return_address(0));
    if (!id)
        id = static_id(m); /* a static variable set up by an init call without a known site */
    struct mutex_tag *t = (struct mutex_tag *)m;
    rcl_mutex_t *old = mutex_impl(m); /* initialised again without a destroy */
    if (posix_only(a) || !resolves_to_runtime(id)) {
        if (old)
            __atomic_store_n(&t->check, 0, __ATOMIC_RELAXED); /* leaked: it might still be in use */
        int rc = LIBC(pthread_mutex_init)(m, a);
        if (rc == 0 && may_adopt(m))
            set_add(m);
        return rc;
    }
    int kind = PTHREAD_MUTEX_DEFAULT;
    if (a && pthread_mutexattr_gettype(a, &kind) != 0)
        return EINVAL;
    set_remove(m);
    LIBC(pthread_mutex_init)(m, a); /* glibc's fields as the program expects to find them */
    publish(t, m, new_impl(id, kind));
    return 0;
}

EXPORT int pthread_mutex_destroy(pthread_mutex_t *m)
{
    struct mutex_tag *t = (struct mutex_tag *)m;
    rcl_mutex_t *r = mutex_impl(m);
    if (!r) {
        set_remove(m);
        return LIBC(pthread_mutex_destroy)(m);
    }
    int rc = rcl_mutex_destroy(r);
    if (rc != 0)
        return rc;
    __atomic_store_n(&t->check, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&t->impl, NULL, __ATOMIC_RELAXED);
    free(r);
    return 0;
}

EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
    rcl_mutex_t *r = lookup(m);
    return r ? rcl_mutex_lock(r) : LIBC(pthread_mutex_lock)(m);
}

EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
    rcl_mutex_t *r = lookup(m);
    return r ? rcl_mutex_trylock(r) : LIBC(pthread_mutex_trylock)(m);
}

EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
    rcl_mutex_t *r = lookup(m);
    return r ? rcl_mutex_unlock(r) : LIBC(pthread_mutex_unlock)(m);
}

EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
    rcl_mutex_t *r = lookup(m);
    return r ? rcl_mutex_timedlock(r, abstime) : LIBC(pthread_mutex_timedlock)(m, abstime);
}

EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
    rcl_mutex_t *r = lookup(m);
    if (r)
        return rcl_mutex_clocklock(r, clock, abstime);
#ifdef RCLIFY_TSAN
    /* GCC 12's libtsan does not intercept pthread_mutex_clocklock (core/pthread_clock.h): a
     * monotonic deadline becomes a realtime one, through pthread_mutex_timedlock, which it does. */
    if (clock == CLOCK_MONOTONIC && rcl_abstime_valid(abstime)) {
        struct timespec real;
        int64_t left = rcl_ns_until(clock, abstime);
        clock_gettime(CLOCK_REALTIME, &real);
        int64_t ns = (int64_t)real.tv_nsec + (left > 0 ? left : 0);
        real.tv_sec += (time_t)(ns / 1000000000);
        real.tv_nsec = (long)(ns % 1000000000);
        return LIBC(pthread_mutex_timedlock)(m, &real);
    }
#endif
    return LIBC(pthread_mutex_clocklock)(m, clock, abstime);
}

/* ---- condition variables -------------------------------------------------------------------- */

/* The rcl_cond_t of c, set up at its first wait with a runtime lock (clock from glibc's bits). */
static rcl_cond_t *cond_adopt(pthread_cond_t *c)
{
    struct cond_tag *t = (struct cond_tag *)c;
    for (unsigned n = 0;; n++) {
        uintptr_t check = __atomic_load_n(&t->check, __ATOMIC_ACQUIRE);
        if (check == TAG(c))
            return t->impl;
        if (check == BUSY(c)) {
            if (n < 64)
                rcl_pause();
            else
                sched_yield();
            continue;
        }
        if (!__atomic_compare_exchange_n(&t->check, &check, BUSY(c), 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            continue;
        int saved = errno;
        rcl_cond_t *rc = aligned_alloc(64, (sizeof *rc + 63) & ~(size_t)63);
        if (!rc)
            rcl_fatal("rclify run: out of memory for a condition variable");
        pthread_condattr_t attr;
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, (t->wrefs & 2) ? CLOCK_MONOTONIC : CLOCK_REALTIME);
        rcl_cond_init(rc, &attr);
        pthread_condattr_destroy(&attr);
        __atomic_store_n(&t->impl, rc, __ATOMIC_RELAXED);
        __atomic_store_n(&t->check, TAG(c), __ATOMIC_RELEASE);
        errno = saved;
        return rc;
    }
}

EXPORT int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a)
{
    rcl_cond_t *old = cond_impl(c);
    if (old && rcl_cond_destroy(old) == 0)
        free(old);
    return LIBC(pthread_cond_init)(c, a); /* rewrites every byte: the tag is gone */
}

EXPORT int pthread_cond_destroy(pthread_cond_t *c)
{
    struct cond_tag *t = (struct cond_tag *)c;
    rcl_cond_t *rc = cond_impl(c);
    if (rc) {
        int e = rcl_cond_destroy(rc);
        if (e != 0)
            return e;
        __atomic_store_n(&t->check, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&t->impl, NULL, __ATOMIC_RELAXED);
        free(rc);
    }
    return LIBC(pthread_cond_destroy)(c);
}

EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    rcl_mutex_t *r = lookup(m);
    if (r)
        return rcl_cond_wait(cond_adopt(c), r);
    rcl_cond_t *rc = cond_impl(c);
    return LIBC(pthread_cond_wait)(rc ? &rc->posix : c, m);
}

EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime)
{
    rcl_mutex_t *r = lookup(m);
    if (r)
        return rcl_cond_timedwait(cond_adopt(c), r, abstime);
    rcl_cond_t *rc = cond_impl(c);
    return LIBC(pthread_cond_timedwait)(rc ? &rc->posix : c, m, abstime);
}

EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
                                  const struct timespec *abstime)
{
    rcl_mutex_t *r = lookup(m);
    if (r)
        return rcl_cond_clockwait(cond_adopt(c), r, clock, abstime);
    rcl_cond_t *rc = cond_impl(c);
    return LIBC(pthread_cond_clockwait)(rc ? &rc->posix : c, m, clock, abstime);
}

EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
    rcl_cond_t *rc = cond_impl(c);
    return rc ? rcl_cond_signal(rc) : LIBC(pthread_cond_signal)(c);
}

EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
    rcl_cond_t *rc = cond_impl(c);
    return rc ? rcl_cond_broadcast(rc) : LIBC(pthread_cond_broadcast)(c);
}

/* ---- start-up ------------------------------------------------------------------------------- */

/* After the runtime's constructors (RCLIFY_LOCKS is read at 101..103), before the program's. */
__attribute__((constructor(110))) static void interpose_init(void)
{
    resolve_libc();
    void *warm[2];
    backtrace(warm, 2); /* loads the unwinder now, not inside the program's first init call */
    read_sites();
    if (adopt_anonymous || adopt_some_statics) {
        void *p = mmap(NULL, SET_SIZE * sizeof(uintptr_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            rcl_fatal("rclify run: cannot map the posix lock set");
        posix_set = p;
    }
}
