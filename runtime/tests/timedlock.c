/*
 * Timed locks and timed condition waits, on every registered algorithm (FOR_EACH_ALG):
 *   - rcl_mutex_timedlock (CLOCK_REALTIME) and rcl_mutex_clocklock (CLOCK_MONOTONIC, REALTIME) on
 *     a free lock take it (also with a deadline already past, or a malformed one: as glibc);
 *   - on a lock held by another thread, in hybrid mode or by an extracted section (rcl_execute;
 *     under RCL the section runs on the server), they return ETIMEDOUT once the deadline has
 *     passed and not long after; EINVAL for a malformed deadline or another clock; the lock is
 *     then as if nothing had been tried (trylock, lock and rcl_execute work, the holder unlocks);
 *   - a lock released before the deadline is taken;
 *   - kinds: errorcheck relock EDEADLK, recursive relock counts, normal relock times out;
 *   - mutual exclusion under a mix of timed locks with short deadlines (many time out, some race
 *     the grant), lock/unlock and rcl_execute from several threads;
 *   - rcl_cond_clockwait times out (hybrid section and extracted section), is woken by a signal,
 *     rejects another clock and a malformed deadline;
 *   - none of them changes errno.
 */
#include "test_util.h"

#ifdef RCLIFY_TSAN
#define LATE_NS 3000000000LL /* how late a timeout may return: a loaded 2-core machine, TSan */
#else
#define LATE_NS 1000000000LL
#endif
#define SHORT_NS 40000000L /* the deadline of the timeouts tested: 40 ms */

static struct timespec in_ns(clockid_t clock, long long ns)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    long long t = (long long)ts.tv_nsec + ns;
    ts.tv_sec += (time_t)(t / 1000000000LL);
    ts.tv_nsec = (long)(t % 1000000000LL);
    if (ts.tv_nsec < 0) {
        ts.tv_nsec += 1000000000L;
        ts.tv_sec--;
    }
    return ts;
}

/* ns from abstime to now on clock (positive: now is later) */
static long long late_ns(clockid_t clock, const struct timespec *abstime)
{
    struct timespec now;
    clock_gettime(clock, &now);
    return (long long)(now.tv_sec - abstime->tv_sec) * 1000000000LL + (now.tv_nsec - abstime->tv_nsec);
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* One timed lock through either entry point: CLOCK_REALTIME through timedlock (and clocklock,
 * alternately), CLOCK_MONOTONIC through clocklock. */
static int timed(rcl_mutex_t *m, clockid_t clock, const struct timespec *abstime, int n)
{
    if (clock == CLOCK_REALTIME && n % 2 == 0)
        return rcl_mutex_timedlock(m, abstime);
    return rcl_mutex_clocklock(m, clock, abstime);
}

static const char *clock_name(clockid_t clock)
{
    return clock == CLOCK_REALTIME ? "REALTIME" : "MONOTONIC";
}

/* ---- a holder on another thread: hybrid lock or extracted section ---- */

struct holder {
    rcl_mutex_t *m;
    int section;      /* 1: hold through rcl_execute, 0: rcl_mutex_lock */
    int entered;      /* it holds the lock */
    int release;      /* it may let go */
    int release_after_ms; /* > 0: let go by itself after this long */
    pthread_t tid;
};

static void hold_body(struct holder *h)
{
    __atomic_store_n(&h->entered, 1, __ATOMIC_RELEASE);
    if (h->release_after_ms > 0)
        sleep_ms(h->release_after_ms);
    else
        t_wait_flag(&h->release, 1);
}

static int cs_hold(void *p)
{
    hold_body(p);
    return 7;
}

static void *holder_main(void *p)
{
    struct holder *h = p;
    if (h->section) {
        CHECK_EQ(rcl_execute(h->m, cs_hold, h), 7, "holding section's value");
    } else {
        CHECK_EQ(rcl_mutex_lock(h->m), 0, "holder: rcl_mutex_lock");
        hold_body(h);
        CHECK_EQ(rcl_mutex_unlock(h->m), 0, "holder: rcl_mutex_unlock");
    }
    return NULL;
}

static void hold_start(struct holder *h, rcl_mutex_t *m, int section, int release_after_ms)
{
    *h = (struct holder){ .m = m, .section = section, .release_after_ms = release_after_ms };
    CHECK_EQ(pthread_create(&h->tid, NULL, holder_main, h), 0, "pthread_create");
    t_wait_flag(&h->entered, 1);
}

static void hold_end(struct holder *h)
{
    __atomic_store_n(&h->release, 1, __ATOMIC_RELEASE);
    pthread_join(h->tid, NULL);
}

static int cs_incr(void *p)
{
    (*(long *)p)++;
    return 1;
}

/* After a timeout: nothing of it is left, the lock works in every way. */
static void check_usable(rcl_mutex_t *m, const char *alg, const char *after)
{
    CHECK(rcl_mutex_trylock(m) == 0, "%s: trylock after %s", alg, after);
    CHECK_EQ(rcl_mutex_unlock(m), 0, "unlock");
    CHECK_EQ(rcl_mutex_lock(m), 0, "lock");
    CHECK_EQ(rcl_mutex_unlock(m), 0, "unlock");
    long x = 0;
    CHECK_EQ(rcl_execute(m, cs_incr, &x), 1, "rcl_execute");
    CHECK_EQ(x, 1, "the section ran");
    struct timespec ts = in_ns(CLOCK_MONOTONIC, 1000000000LL);
    CHECK_EQ(rcl_mutex_clocklock(m, CLOCK_MONOTONIC, &ts), 0, "clocklock on the free lock");
    CHECK_EQ(rcl_mutex_unlock(m), 0, "unlock");
}

/* ---- the checks ---- */

static void free_lock(const struct t_alg *a)
{
    rcl_mutex_t m;
    t_mutex_init(&m, -1, "free", a->alg, 0);
    struct timespec past = { 0, 0 }, bad = { 0, 1000000000L };
    for (int n = 0; n < 4; n++) {
        clockid_t clock = n < 2 ? CLOCK_REALTIME : CLOCK_MONOTONIC;
        struct timespec later = in_ns(clock, 1000000000LL);
        errno = 777;
        CHECK_EQ(timed(&m, clock, &later, n), 0, "free lock, deadline in 1 s");
        CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock");
        CHECK_EQ(timed(&m, clock, &past, n), 0, "free lock, deadline passed (POSIX: taken at once)");
        CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock");
        CHECK_EQ(timed(&m, clock, &bad, n), 0, "free lock, tv_nsec 1e9 (glibc: taken, not checked)");
        CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock");
        CHECK_EQ(errno, 777, "errno after timed locks");
    }
    struct timespec later = in_ns(CLOCK_MONOTONIC, 1000000000LL);
    CHECK_EQ(rcl_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &later), EINVAL, "clocklock on another clock");
    CHECK_EQ(rcl_mutex_clocklock(&m, (clockid_t)12345, &later), EINVAL, "clocklock on no clock");
    check_usable(&m, a->name, "the free-lock checks");
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");
    OK("%s: free lock: timedlock/clocklock take it (deadline ahead, past, malformed); other clocks EINVAL", a->name);
}

static void busy_lock(const struct t_alg *a, int section)
{
    const char *by = section ? "an extracted section (rcl_execute)" : "a hybrid holder";
    rcl_mutex_t m;
    t_mutex_init(&m, -1, "busy", a->alg, 0);
    struct holder h;
    hold_start(&h, &m, section, 0);
    long long worst = 0;
    for (int n = 0; n < 4; n++) {
        clockid_t clock = n < 2 ? CLOCK_REALTIME : CLOCK_MONOTONIC;
        struct timespec dl = in_ns(clock, SHORT_NS);
        errno = 555;
        int rc = timed(&m, clock, &dl, n);
        long long late = late_ns(clock, &dl);
        CHECK_EQ(rc, ETIMEDOUT, "timed lock on a held lock");
        CHECK_EQ(errno, 555, "errno after a timeout");
        CHECK(late >= 0, "%s: %s: returned %lld ns before the deadline", a->name, clock_name(clock), -late);
        CHECK(late < LATE_NS, "%s: %s: returned %lld ms after the deadline", a->name, clock_name(clock), late / 1000000);
        if (late > worst)
            worst = late;
        struct timespec past = { 0, 0 }, bad = { 0, 1000000000L }, neg = { 0, -1 };
        CHECK_EQ(timed(&m, clock, &past, n), ETIMEDOUT, "held lock, deadline passed");
        CHECK_EQ(timed(&m, clock, &bad, n), EINVAL, "held lock, tv_nsec 1e9");
        CHECK_EQ(timed(&m, clock, &neg, n), EINVAL, "held lock, tv_nsec -1");
    }
    CHECK_EQ(rcl_mutex_trylock(&m), EBUSY, "still held by the holder");
    hold_end(&h);
    check_usable(&m, a->name, "timeouts");
    OK("%s: lock held by %s: ETIMEDOUT at the deadline (at most %.1f ms late), past deadline ETIMEDOUT, "
       "bad tv_nsec EINVAL; the lock works after", a->name, by, (double)worst / 1e6);

    /* released before the deadline: taken */
    for (int n = 0; n < 2; n++) {
        clockid_t clock = n ? CLOCK_MONOTONIC : CLOCK_REALTIME;
        hold_start(&h, &m, section, 20);
        struct timespec dl = in_ns(clock, 20000000000LL);
        int rc = timed(&m, clock, &dl, n);
        CHECK_EQ(rc, 0, "timed lock on a lock released before the deadline");
        CHECK(late_ns(clock, &dl) < 0, "taken before the deadline");
        long x = 0;
        CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock");
        pthread_join(h.tid, NULL);
        CHECK_EQ(rcl_execute(&m, cs_incr, &x), 1, "rcl_execute after");
    }
    OK("%s: lock held by %s and released after 20 ms: a 20 s timed lock takes it", a->name, by);
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");
}

static void kinds(const struct t_alg *a)
{
    rcl_mutex_t m;
    struct timespec dl = in_ns(CLOCK_MONOTONIC, 1000000000LL), bad = { 0, 1000000000L };
    t_mutex_init(&m, PTHREAD_MUTEX_ERRORCHECK, "errorcheck", a->alg, 0);
    CHECK_EQ(rcl_mutex_lock(&m), 0, "lock");
    CHECK_EQ(rcl_mutex_clocklock(&m, CLOCK_MONOTONIC, &dl), EDEADLK, "errorcheck relock");
    CHECK_EQ(rcl_mutex_timedlock(&m, &bad), EDEADLK, "errorcheck relock, bad deadline (glibc: EDEADLK)");
    CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock");
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");

    t_mutex_init(&m, PTHREAD_MUTEX_RECURSIVE, "recursive", a->alg, 0);
    CHECK_EQ(rcl_mutex_lock(&m), 0, "lock");
    CHECK_EQ(rcl_mutex_clocklock(&m, CLOCK_MONOTONIC, &dl), 0, "recursive relock");
    CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock 1");
    CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock 2");
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy (EBUSY if the relock was not counted)");

    t_mutex_init(&m, PTHREAD_MUTEX_NORMAL, "normal", a->alg, 0);
    CHECK_EQ(rcl_mutex_lock(&m), 0, "lock");
    struct timespec soon = in_ns(CLOCK_MONOTONIC, SHORT_NS);
    CHECK_EQ(rcl_mutex_clocklock(&m, CLOCK_MONOTONIC, &soon), ETIMEDOUT, "normal relock times out");
    long long late = late_ns(CLOCK_MONOTONIC, &soon);
    CHECK(late >= 0 && late < LATE_NS, "normal relock returned %lld ns after the deadline", late);
    CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock");
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");
    OK("%s: relock by the holder: errorcheck EDEADLK, recursive counts, normal times out", a->name);
}

/* ---- stress: mutual exclusion under timed locks, locks and sections ---- */

struct stress {
    rcl_mutex_t m;
    long data;   /* plain: ThreadSanitizer sees a missing exclusion */
    int inside;  /* atomic: the plain build sees one */
    long done[8], timeouts[8];
};

static void in_section(struct stress *s)
{
    CHECK_EQ(__atomic_exchange_n(&s->inside, 1, __ATOMIC_ACQ_REL), 0, "two holders at once");
    s->data++;
    for (int k = 0; k < 20; k++)
        t_cpu_relax();
    __atomic_store_n(&s->inside, 0, __ATOMIC_RELEASE);
}

static int cs_stress(void *p)
{
    in_section(p);
    return 1;
}

static void stress_worker(int index, void *arg)
{
    struct stress *s = arg;
    unsigned seed = (unsigned)index * 2654435761u + 1;
    for (int i = 0; i < ITERS(4000); i++) {
        seed = seed * 1103515245u + 12345u;
        int op = (int)((seed >> 16) % 4);
        if (op <= 1) { /* timed: deadlines of 0 to 20 us, some time out */
            clockid_t clock = (seed >> 20) & 1 ? CLOCK_MONOTONIC : CLOCK_REALTIME;
            struct timespec dl = in_ns(clock, (long long)((seed >> 8) % 20000));
            int rc = timed(&s->m, clock, &dl, i);
            CHECK(rc == 0 || rc == ETIMEDOUT, "timed lock returned %d", rc);
            if (rc != 0) {
                s->timeouts[index]++;
                continue;
            }
            in_section(s);
            CHECK_EQ(rcl_mutex_unlock(&s->m), 0, "unlock after a timed lock");
        } else if (op == 2) {
            CHECK_EQ(rcl_mutex_lock(&s->m), 0, "lock");
            in_section(s);
            CHECK_EQ(rcl_mutex_unlock(&s->m), 0, "unlock");
        } else {
            CHECK_EQ(rcl_execute(&s->m, cs_stress, s), 1, "rcl_execute");
        }
        s->done[index]++;
    }
}

static void stress(const struct t_alg *a)
{
    struct stress *s = calloc(1, sizeof *s);
    CHECK(s != NULL, "out of memory");
    t_mutex_init(&s->m, -1, "stress", a->alg, 0);
    int nthreads = 4;
    t_run_threads(nthreads, stress_worker, s);
    long done = 0, timeouts = 0;
    for (int i = 0; i < nthreads; i++) {
        done += s->done[i];
        timeouts += s->timeouts[i];
    }
    CHECK_EQ(s->data, done, "sections counted");
    check_usable(&s->m, a->name, "the stress run");
    CHECK_EQ(rcl_mutex_destroy(&s->m), 0, "destroy");
    OK("%s: %d threads mixing timed locks (0-20 us deadlines), locks and rcl_execute: %ld sections, "
       "%ld timeouts, exclusive throughout", a->name, nthreads, done, timeouts);
    free(s);
}

/* ---- condition variables ---- */

struct cwait {
    rcl_mutex_t *m;
    rcl_cond_t *c;
    clockid_t clock;
    int flag;
    int rc;
    long long late;
};

static int cs_wait_timeout(void *p)
{
    struct cwait *w = p;
    struct timespec dl = in_ns(w->clock, SHORT_NS);
    w->rc = rcl_cond_clockwait(w->c, w->m, w->clock, &dl);
    w->late = late_ns(w->clock, &dl);
    return 3;
}

static void *signalled_waiter(void *p)
{
    struct cwait *w = p;
    struct timespec dl = in_ns(w->clock, 20000000000LL);
    CHECK_EQ(rcl_mutex_lock(w->m), 0, "waiter: lock");
    __atomic_store_n(&w->rc, -1, __ATOMIC_RELEASE); /* waiting from now on */
    int rc = 0;
    while (!w->flag && rc == 0)
        rc = rcl_cond_clockwait(w->c, w->m, w->clock, &dl);
    w->rc = rc;
    w->late = late_ns(w->clock, &dl);
    CHECK_EQ(rcl_mutex_unlock(w->m), 0, "waiter: unlock");
    return NULL;
}

static void condvars(const struct t_alg *a)
{
    rcl_mutex_t m;
    rcl_cond_t c;
    t_mutex_init(&m, -1, "cond", a->alg, 0);
    CHECK_EQ(rcl_cond_init(&c, NULL), 0, "rcl_cond_init");
    long long worst = 0;
    for (int n = 0; n < 2; n++) {
        clockid_t clock = n ? CLOCK_MONOTONIC : CLOCK_REALTIME;
        struct cwait w = { &m, &c, clock, 0, 0, 0 };
        /* hybrid section */
        CHECK_EQ(rcl_mutex_lock(&m), 0, "lock");
        errno = 999;
        struct timespec dl = in_ns(clock, SHORT_NS);
        CHECK_EQ(rcl_cond_clockwait(&c, &m, clock, &dl), ETIMEDOUT, "clockwait, no signal");
        long long late = late_ns(clock, &dl);
        CHECK(late >= 0 && late < LATE_NS, "%s: clockwait returned %lld ns after the deadline", clock_name(clock), late);
        worst = late > worst ? late : worst;
        CHECK_EQ(errno, 999, "errno after clockwait");
        struct timespec bad = { 0, 1000000000L };
        CHECK_EQ(rcl_cond_clockwait(&c, &m, clock, &bad), EINVAL, "clockwait, tv_nsec 1e9");
        CHECK_EQ(rcl_cond_clockwait(&c, &m, CLOCK_PROCESS_CPUTIME_ID, &dl), EINVAL, "clockwait, another clock");
        CHECK_EQ(rcl_mutex_unlock(&m), 0, "the mutex is held again after the timeout");
        /* extracted section (on the server under RCL) */
        CHECK_EQ(rcl_execute(&m, cs_wait_timeout, &w), 3, "section's value");
        CHECK_EQ(w.rc, ETIMEDOUT, "clockwait inside rcl_execute");
        CHECK(w.late >= 0 && w.late < LATE_NS, "clockwait in a section returned %lld ns after the deadline", w.late);
        worst = w.late > worst ? w.late : worst;
        /* woken by a signal */
        struct cwait s = { &m, &c, clock, 0, 0, 0 };
        pthread_t tid;
        CHECK_EQ(pthread_create(&tid, NULL, signalled_waiter, &s), 0, "pthread_create");
        while (__atomic_load_n(&s.rc, __ATOMIC_ACQUIRE) != -1)
            sched_yield();
        sleep_ms(10);
        CHECK_EQ(rcl_mutex_lock(&m), 0, "signaller: lock");
        s.flag = 1;
        CHECK_EQ(rcl_cond_signal(&c), 0, "signal");
        CHECK_EQ(rcl_mutex_unlock(&m), 0, "signaller: unlock");
        pthread_join(tid, NULL);
        CHECK_EQ(s.rc, 0, "clockwait woken by a signal");
        CHECK(s.late < 0, "woken before the 20 s deadline");
    }
    check_usable(&m, a->name, "clockwaits");
    CHECK_EQ(rcl_cond_destroy(&c), 0, "rcl_cond_destroy");
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");
    OK("%s: rcl_cond_clockwait (REALTIME, MONOTONIC): times out in hybrid and extracted sections (at most "
       "%.1f ms late), woken by a signal, EINVAL for another clock or tv_nsec", a->name, (double)worst / 1e6);
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "timedlock");
    FOR_EACH_ALG(a) {
        free_lock(a);
        busy_lock(a, 0);
        busy_lock(a, 1);
        kinds(a);
        stress(a);
        condvars(a);
    }
    return t_done();
}
