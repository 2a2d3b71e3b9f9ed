/*
 * Condition variables with every algorithm, waited on inside extracted sections (called with
 * rcl_execute_may_wait, as rclify transform calls sections that wait: under rcl the wait blocks a
 * servicing thread, under a combining lock the section runs on its own thread holding the lock;
 * sections that only signal use rcl_execute) and inside hybrid ones:
 *   - producer/consumer over a bounded buffer: extracted, hybrid, and mixed (producers extracted
 *     with a copied context, consumers hybrid); exact item count and sum;
 *   - broadcast wakes all N waiters (half waiting in extracted sections, half in hybrid ones);
 *   - timedwait: times out with ETIMEDOUT after the deadline (realtime and monotonic clocks) and
 *     returns holding the lock; returns 0 well before the deadline when signalled;
 *   - timedwait with a deadline already past: ETIMEDOUT at once; with tv_nsec out of range: EINVAL;
 *   - a barrier built from a mutex and a condvar, extracted and hybrid.
 */
#include "test_util.h"

static rcl_mutex_t *cur_lock; /* the lock of the current sub-test */

/* ---- bounded buffer ---- */

#define CAP 4
#define NPROD 3
#define NCONS 2

struct buffer {
    rcl_cond_t not_full, not_empty;
    long item[CAP];
    int head, count;
    long sum_in, sum_out, n_out;
};
static struct buffer buf;

struct put_ctx {
    long value;
};
static int cs_put(void *p)
{
    struct put_ctx *c = p;
    while (buf.count == CAP) {
        int rc = rcl_cond_wait(&buf.not_full, cur_lock);
        if (rc)
            return 100 + rc;
    }
    buf.item[(buf.head + buf.count++) % CAP] = c->value;
    buf.sum_in += c->value;
    rcl_cond_signal(&buf.not_empty);
    return 0;
}

struct get_ctx {
    long value;
};
static int cs_get(void *p)
{
    struct get_ctx *c = p;
    while (buf.count == 0) {
        int rc = rcl_cond_wait(&buf.not_empty, cur_lock);
        if (rc)
            return 100 + rc;
    }
    c->value = buf.item[buf.head];
    buf.head = (buf.head + 1) % CAP;
    buf.count--;
    buf.sum_out += c->value;
    buf.n_out++;
    rcl_cond_signal(&buf.not_full);
    return 0;
}

enum pc_mode { PC_EXTRACTED, PC_HYBRID, PC_MIXED };
struct pc {
    enum pc_mode mode;
    int items; /* per producer */
};

static void pc_worker(int index, void *arg)
{
    struct pc *pc = arg;
    if (index < NPROD) {
        for (int i = 0; i < pc->items; i++) {
            struct put_ctx c = { (long)index * 1000003 + i };
            int rc;
            if (pc->mode == PC_HYBRID) {
                rcl_mutex_lock(cur_lock);
                rc = cs_put(&c);
                rcl_mutex_unlock(cur_lock);
            } else if (pc->mode == PC_MIXED) {
                rc = RCL_EXECUTE_MAY_WAIT(cur_lock, cs_put, &c);
            } else {
                rc = rcl_execute_may_wait(cur_lock, cs_put, &c, 0);
            }
            CHECK_EQ(rc, 0, "put section (100+: rcl_cond_wait failed)");
        }
    } else {
        int share = pc->items * NPROD / NCONS;
        for (int i = 0; i < share; i++) {
            struct get_ctx c = { -1 };
            int rc;
            if (pc->mode == PC_EXTRACTED) {
                rc = rcl_execute_may_wait(cur_lock, cs_get, &c, 0);
            } else {
                rcl_mutex_lock(cur_lock);
                rc = cs_get(&c);
                rcl_mutex_unlock(cur_lock);
            }
            CHECK_EQ(rc, 0, "get section (100+: rcl_cond_wait failed)");
            CHECK(c.value >= 0, "got %ld", c.value);
        }
    }
}

static void producer_consumer(enum pc_mode mode, const char *alg)
{
    static const char *const names[] = { "extracted", "hybrid", "mixed (copied ctx + hybrid)" };
    memset(&buf, 0, sizeof buf);
    rcl_cond_init(&buf.not_full, NULL);
    rcl_cond_init(&buf.not_empty, NULL);
    struct pc pc = { mode, ITERS(2000) };
    uint64_t t0 = t_now_ns();
    t_run_threads(NPROD + NCONS, pc_worker, &pc);
    CHECK_EQ(buf.n_out, (long)NPROD * pc.items, "items consumed");
    CHECK_EQ(buf.sum_out, buf.sum_in, "sum consumed == sum produced");
    CHECK_EQ(buf.count, 0, "items left");
    CHECK_EQ(rcl_cond_destroy(&buf.not_full), 0, "rcl_cond_destroy");
    CHECK_EQ(rcl_cond_destroy(&buf.not_empty), 0, "rcl_cond_destroy");
    OK("%s: producer/consumer %s, %d producers x %d items, %d consumers, buffer of %d (%.0f ms)", alg,
       names[mode], NPROD, pc.items, NCONS, CAP, (double)(t_now_ns() - t0) / 1e6);
}

/* ---- broadcast ---- */

#define NWAIT 6
static rcl_cond_t bc_cond;
static int bc_go, bc_waiting, bc_woken;

static int cs_bc_wait(void *p)
{
    __atomic_fetch_add(&bc_waiting, 1, __ATOMIC_RELEASE);
    while (!bc_go) {
        int rc = rcl_cond_wait(&bc_cond, cur_lock);
        if (rc)
            return 100 + rc;
    }
    __atomic_fetch_add(&bc_woken, 1, __ATOMIC_RELEASE);
    return 0;
}

static int cs_bc_go(void *p)
{
    bc_go = 1;
    return rcl_cond_broadcast(&bc_cond);
}

static void bc_worker(int index, void *arg)
{
    if (index == NWAIT) { /* the broadcaster */
        t_wait_flag(&bc_waiting, NWAIT);
        usleep(20000); /* let the last waiters reach rcl_cond_wait (the predicate keeps it correct) */
        CHECK_EQ(rcl_execute(cur_lock, cs_bc_go, NULL), 0, "rcl_cond_broadcast");
        uint64_t deadline = t_now_ns() + 10000000000ull;
        while (__atomic_load_n(&bc_woken, __ATOMIC_ACQUIRE) < NWAIT && t_now_ns() < deadline)
            usleep(1000);
        CHECK_EQ(__atomic_load_n(&bc_woken, __ATOMIC_ACQUIRE), NWAIT, "waiters woken by one broadcast (10 s)");
        return;
    }
    int rc;
    if (index % 2) {
        rc = rcl_execute_may_wait(cur_lock, cs_bc_wait, NULL, 0);
    } else {
        rcl_mutex_lock(cur_lock);
        rc = cs_bc_wait(NULL);
        rcl_mutex_unlock(cur_lock);
    }
    CHECK_EQ(rc, 0, "waiter (100+: rcl_cond_wait failed)");
}

static void broadcast(const char *alg)
{
    bc_go = bc_waiting = bc_woken = 0;
    rcl_cond_init(&bc_cond, NULL);
    t_run_threads(NWAIT + 1, bc_worker, NULL);
    rcl_cond_destroy(&bc_cond);
    OK("%s: one broadcast woke all %d waiters (3 in extracted sections, 3 hybrid)", alg, NWAIT);
}

/* ---- timedwait ---- */

struct tw {
    rcl_cond_t cond;
    clockid_t clock;
    long wait_ms;
    int pred;
    int rc;
    double waited_ms;
    int waiting, back, checked; /* handshake with the checking thread */
};

static void deadline_in(clockid_t clock, long ms, struct timespec *ts)
{
    clock_gettime(clock, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}

static int cs_timedwait(void *p)
{
    struct tw *t = p;
    struct timespec ts;
    deadline_in(t->clock, t->wait_ms, &ts);
    uint64_t t0 = t_now_ns();
    __atomic_store_n(&t->waiting, 1, __ATOMIC_RELEASE);
    int rc = 0;
    while (!t->pred && rc == 0)
        rc = rcl_cond_timedwait(&t->cond, cur_lock, &ts);
    t->rc = rc;
    t->waited_ms = (double)(t_now_ns() - t0) / 1e6;
    /* Back from the wait: the lock must be held again; the checker tries it. */
    __atomic_store_n(&t->back, 1, __ATOMIC_RELEASE);
    t_wait_flag(&t->checked, 1);
    return 0;
}

static int cs_signal(void *p)
{
    struct tw *t = p;
    t->pred = 1;
    return rcl_cond_signal(&t->cond);
}

static int tw_extracted;
static void tw_worker(int index, void *arg)
{
    struct tw *t = arg;
    if (index == 0) {
        if (tw_extracted) {
            rcl_execute_may_wait(cur_lock, cs_timedwait, t, 0);
        } else {
            rcl_mutex_lock(cur_lock);
            cs_timedwait(t);
            rcl_mutex_unlock(cur_lock);
        }
        return;
    }
    t_wait_flag(&t->waiting, 1);
    if (t->wait_ms > 1000) { /* the signalled case: its section runs once the waiter waits */
        usleep(50000);
        CHECK_EQ(rcl_execute(cur_lock, cs_signal, t), 0, "rcl_cond_signal");
    }
    t_wait_flag(&t->back, 1);
    CHECK_EQ(rcl_mutex_trylock(cur_lock), EBUSY, "trylock while the waiter is back from timedwait (lock held)");
    __atomic_store_n(&t->checked, 1, __ATOMIC_RELEASE);
}

static void timedwait(const char *alg, int extracted, clockid_t clock)
{
    const char *where = extracted ? "extracted" : "hybrid";
    const char *clk = clock == CLOCK_MONOTONIC ? "monotonic" : "realtime";
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, clock);
    tw_extracted = extracted;

    struct tw t = { .clock = clock, .wait_ms = 100 };
    CHECK_EQ(rcl_cond_init(&t.cond, &attr), 0, "rcl_cond_init");
    t_run_threads(2, tw_worker, &t);
    CHECK_EQ(t.rc, ETIMEDOUT, "rcl_cond_timedwait with nobody signalling");
    CHECK(t.waited_ms >= 90 && t.waited_ms < 5000, "timed out after %.1f ms, deadline 100 ms", t.waited_ms);
    OK("%s %s timedwait (%s clock): ETIMEDOUT after %.1f ms (deadline 100 ms), returns holding the lock", alg, where,
       clk, t.waited_ms);
    rcl_cond_destroy(&t.cond);

    struct tw s = { .clock = clock, .wait_ms = 10000 };
    CHECK_EQ(rcl_cond_init(&s.cond, &attr), 0, "rcl_cond_init");
    t_run_threads(2, tw_worker, &s);
    CHECK_EQ(s.rc, 0, "rcl_cond_timedwait signalled");
    CHECK_EQ(s.pred, 1, "predicate set by the signaller");
    CHECK(s.waited_ms < 5000, "signalled wait took %.1f ms", s.waited_ms);
    OK("%s %s timedwait (%s clock): signalled after %.1f ms, returns 0 holding the lock", alg, where, clk, s.waited_ms);
    rcl_cond_destroy(&s.cond);
    pthread_condattr_destroy(&attr);
}

/* A deadline already past: ETIMEDOUT at once; a malformed one: EINVAL (as pthread). */
struct odd_deadline {
    rcl_cond_t cond;
    int past_rc, bad_rc;
    double past_ms;
};

static int cs_odd_deadlines(void *p)
{
    struct odd_deadline *o = p;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec -= 1;
    uint64_t t0 = t_now_ns();
    o->past_rc = rcl_cond_timedwait(&o->cond, cur_lock, &ts);
    o->past_ms = (double)(t_now_ns() - t0) / 1e6;
    ts.tv_sec += 10;
    ts.tv_nsec = 1000000000; /* out of range */
    o->bad_rc = rcl_cond_timedwait(&o->cond, cur_lock, &ts);
    return 0;
}

static void odd_deadlines(const char *alg)
{
    struct odd_deadline o;
    rcl_cond_init(&o.cond, NULL);
    CHECK_EQ(rcl_execute_may_wait(cur_lock, cs_odd_deadlines, &o, 0), 0, "section");
    CHECK_EQ(o.past_rc, ETIMEDOUT, "timedwait with a deadline in the past");
    CHECK(o.past_ms < 1000, "past deadline took %.1f ms", o.past_ms);
    CHECK_EQ(o.bad_rc, EINVAL, "timedwait with tv_nsec = 1e9");
    /* Still held after both: a hybrid section works. */
    CHECK_EQ(rcl_mutex_lock(cur_lock), 0, "lock after");
    CHECK_EQ(rcl_mutex_unlock(cur_lock), 0, "unlock after");
    rcl_cond_destroy(&o.cond);
    OK("%s: timedwait in a section: past deadline ETIMEDOUT at once (%.2f ms), tv_nsec out of range EINVAL", alg,
       o.past_ms);
}

/* ---- barrier ---- */

#define NBAR 4
struct barrier {
    rcl_cond_t cond;
    int count;
    unsigned gen;
};
static struct barrier bar;
static int bar_slot[2][NBAR];

static int cs_barrier(void *p)
{
    unsigned gen = bar.gen;
    if (++bar.count == NBAR) {
        bar.count = 0;
        bar.gen++;
        return rcl_cond_broadcast(&bar.cond);
    }
    while (gen == bar.gen) {
        int rc = rcl_cond_wait(&bar.cond, cur_lock);
        if (rc)
            return 100 + rc;
    }
    return 0;
}

static void barrier_wait(int extracted)
{
    int rc;
    if (extracted) {
        rc = rcl_execute_may_wait(cur_lock, cs_barrier, NULL, 0);
    } else {
        rcl_mutex_lock(cur_lock);
        rc = cs_barrier(NULL);
        rcl_mutex_unlock(cur_lock);
    }
    CHECK_EQ(rc, 0, "barrier (100+: rcl_cond_wait failed)");
}

static void bar_worker(int index, void *arg)
{
    int mode = *(int *)arg; /* 0 hybrid, 1 extracted, 2 alternate per thread */
    int extracted = mode == 2 ? index % 2 : mode;
    for (int r = 0; r < ITERS(300); r++) {
        bar_slot[r % 2][index] = r; /* outside the lock: published by the barrier */
        barrier_wait(extracted);
        for (int k = 0; k < NBAR; k++)
            CHECK_EQ(bar_slot[r % 2][k], r, "slot written before the barrier, read after");
    }
}

static void barrier(const char *alg, int mode)
{
    static const char *const names[] = { "hybrid", "extracted", "half extracted, half hybrid" };
    memset(&bar, 0, sizeof bar);
    rcl_cond_init(&bar.cond, NULL);
    uint64_t t0 = t_now_ns();
    t_run_threads(NBAR, bar_worker, &mode);
    CHECK_EQ(bar.gen, ITERS(300), "barrier generations");
    rcl_cond_destroy(&bar.cond);
    OK("%s: barrier from mutex + condvar, %s, %d threads x %d rounds (%.0f ms)", alg, names[mode], NBAR, ITERS(300),
       (double)(t_now_ns() - t0) / 1e6);
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "condvar");
    FOR_EACH_ALG(a)
    {
        rcl_mutex_t m;
        t_mutex_init(&m, -1, "condvar.c:m", a->alg, 0);
        cur_lock = &m;
        producer_consumer(PC_EXTRACTED, a->name);
        producer_consumer(PC_HYBRID, a->name);
        producer_consumer(PC_MIXED, a->name);
        broadcast(a->name);
        timedwait(a->name, 1, CLOCK_REALTIME);
        timedwait(a->name, 0, CLOCK_REALTIME);
        timedwait(a->name, 1, CLOCK_MONOTONIC);
        odd_deadlines(a->name);
        barrier(a->name, 1);
        barrier(a->name, 0);
        barrier(a->name, 2);
        CHECK_EQ(rcl_mutex_destroy(&m), 0, "rcl_mutex_destroy");
    }
    return t_done();
}
