/*
 * Recursive and error-checking locks (pthread mutexattr kinds), on every registered algorithm
 * (FOR_EACH_ALG):
 *   - recursive: relock and trylock by the holder in hybrid mode; inside an extracted section,
 *     relocking the section's own lock (hybrid) and nesting rcl_execute on it, several levels;
 *     a multi-threaded count through nested relocks; RCL_RECURSIVE_MUTEX_INITIALIZER;
 *     rcl_execute on a recursive lock the caller already holds in hybrid mode (child process);
 *   - error-checking: relock EDEADLK (hybrid, and from inside the lock's own section on its own
 *     thread: failed_elsewhere.c has the section run for another thread), unlock by
 *     a thread that does not hold it EPERM, unlock of an unlocked lock EPERM, trylock EBUSY;
 *     RCL_ERRORCHECK_MUTEX_INITIALIZER;
 *   - rcl_mutex_destroy of a held lock EBUSY (every kind), then 0 once released.
 */
#include "test_util.h"

#ifdef RCLIFY_TSAN
/* The EPERM / EBUSY checks misuse mutexes on purpose; ThreadSanitizer would report each one. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "report_mutex_bugs=0 report_destroy_locked=0";
}
#endif

static const char *kind_name(int kind)
{
    switch (kind) {
    case PTHREAD_MUTEX_RECURSIVE: return "recursive";
    case PTHREAD_MUTEX_ERRORCHECK: return "errorcheck";
    case PTHREAD_MUTEX_NORMAL: return "normal";
    default: return "default";
    }
}

/* ---- recursive ---- */

struct rec {
    rcl_mutex_t *m;
    long count;
    int depth;
};

/* Nests rcl_execute on the section's own lock d levels deep, relocking it in hybrid mode too. */
static int cs_nest(void *p)
{
    struct rec *r = p;
    int rc = rcl_mutex_lock(r->m);
    if (rc != 0)
        return 100 + rc;
    r->count++;
    if (r->depth > 0) {
        r->depth--;
        rc = rcl_execute(r->m, cs_nest, r);
        r->depth++;
        if (rc != 0) {
            rcl_mutex_unlock(r->m);
            return rc;
        }
    }
    rc = rcl_mutex_trylock(r->m); /* the holder may also trylock a recursive lock */
    if (rc != 0)
        return 200 + rc;
    rcl_mutex_unlock(r->m);
    rc = rcl_mutex_unlock(r->m);
    return rc ? 300 + rc : 0;
}

static void rec_worker(int index, void *arg)
{
    struct rec *shared = arg;
    for (int i = 0; i < ITERS(2000); i++) {
        struct rec r = { shared->m, 0, 2 };
        /* count is per call (context); add it to the shared total under the lock, hybrid. */
        int rc = rcl_execute(shared->m, cs_nest, &r);
        CHECK_EQ(rc, 0, "nested recursive section (100+: relock, 200+: trylock, 300+: unlock failed)");
        CHECK_EQ(r.count, 3, "nesting levels run");
        CHECK_EQ(rcl_mutex_lock(shared->m), 0, "hybrid lock (recursive)");
        CHECK_EQ(rcl_mutex_lock(shared->m), 0, "hybrid relock (recursive)");
        shared->count += r.count;
        CHECK_EQ(rcl_mutex_unlock(shared->m), 0, "hybrid unlock (recursive)");
        CHECK_EQ(rcl_mutex_unlock(shared->m), 0, "hybrid unlock (recursive)");
    }
}

static void check_recursive(rcl_mutex_t *m, const char *what)
{
    CHECK_EQ(rcl_mutex_lock(m), 0, "lock");
    CHECK_EQ(rcl_mutex_lock(m), 0, "relock by the holder");
    CHECK_EQ(rcl_mutex_trylock(m), 0, "trylock by the holder");
    CHECK_EQ(rcl_mutex_unlock(m), 0, "unlock 3");
    CHECK_EQ(rcl_mutex_unlock(m), 0, "unlock 2");
    CHECK_EQ(rcl_mutex_unlock(m), 0, "unlock 1");
    OK("%s: hybrid relock and trylock by the holder", what);

    struct rec r = { m, 0, 5 };
    CHECK_EQ(rcl_execute(m, cs_nest, &r), 0, "rcl_execute nested 6 levels on its own lock");
    CHECK_EQ(r.count, 6, "levels run");
    OK("%s: inside its section: hybrid relock, trylock and rcl_execute nested 6 levels", what);

    struct rec shared = { m, 0, 0 };
    t_run_threads(4, rec_worker, &shared);
    CHECK_EQ(shared.count, 4L * ITERS(2000) * 3, "sections counted");
    OK("%s: 4 threads x %d nested sections, exact count", what, ITERS(2000));
}

/* ---- error-checking ---- */

struct errchk {
    rcl_mutex_t *m;
    int unlock_rc;
    int trylock_rc;
    int relock_rc;
};

static void other_thread_unlock(int index, void *arg)
{
    struct errchk *e = arg;
    e->unlock_rc = rcl_mutex_unlock(e->m);
    e->trylock_rc = rcl_mutex_trylock(e->m);
    if (e->trylock_rc == 0)
        rcl_mutex_unlock(e->m);
}

static int cs_relock(void *p)
{
    struct errchk *e = p;
    e->relock_rc = rcl_mutex_lock(e->m);
    if (e->relock_rc == 0)
        rcl_mutex_unlock(e->m);
    e->trylock_rc = rcl_mutex_trylock(e->m);
    if (e->trylock_rc == 0)
        rcl_mutex_unlock(e->m);
    return 7;
}

static void check_errorcheck(rcl_mutex_t *m, const char *what)
{
    struct errchk e = { m, -1, -1, -1 };
    CHECK_EQ(rcl_mutex_unlock(m), EPERM, "unlock of an unlocked errorcheck lock");
    CHECK_EQ(rcl_mutex_lock(m), 0, "lock");
    CHECK_EQ(rcl_mutex_lock(m), EDEADLK, "relock by the holder");
    CHECK_EQ(rcl_mutex_trylock(m), EBUSY, "trylock by the holder");
    t_run_threads(1, other_thread_unlock, &e);
    CHECK_EQ(e.unlock_rc, EPERM, "unlock by a thread that does not hold it");
    CHECK_EQ(e.trylock_rc, EBUSY, "trylock by another thread");
    CHECK_EQ(rcl_mutex_unlock(m), 0, "unlock by the holder");
    CHECK_EQ(rcl_mutex_unlock(m), EPERM, "second unlock");
    OK("%s: hybrid: relock EDEADLK, trylock EBUSY, unlock by non-owner / of unlocked EPERM", what);

    /* On its caller's thread: pthread's answers.  (A section the runtime runs for another thread,
     * on an RCL server or a combiner, ends the process on such a failure: failed_elsewhere.c.) */
    CHECK_EQ(rcl_execute_local(m, cs_relock, &e), 7, "section's return value");
    CHECK_EQ(e.relock_rc, EDEADLK, "relock from inside the lock's own section");
    CHECK_EQ(e.trylock_rc, EBUSY, "trylock from inside the lock's own section");
    /* The lock still works. */
    CHECK_EQ(rcl_mutex_lock(m), 0, "lock after");
    CHECK_EQ(rcl_mutex_unlock(m), 0, "unlock after");
    OK("%s: inside its section on its own thread: relock EDEADLK, trylock EBUSY", what);
}

/* ---- destroy of a held lock ---- */

static void check_destroy_busy(int kind, int alg, const char *alg_name)
{
    rcl_mutex_t m;
    t_mutex_init(&m, kind, "mutex_kinds.c:destroy", alg, 0);
    CHECK_EQ(rcl_mutex_lock(&m), 0, "lock");
    CHECK_EQ(rcl_mutex_destroy(&m), EBUSY, "destroy of a held lock");
    CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock after the refused destroy");
    /* Still usable after the refused destroy. */
    CHECK_EQ(rcl_mutex_lock(&m), 0, "lock again");
    CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock again");
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy of a free lock");
    OK("%s %s: destroy of a held lock EBUSY, of a free one 0", alg_name, kind_name(kind));
}

/* ---- static initializers ---- */

static rcl_mutex_t static_rec[T_NALGS] = {
#define RCL_ALGORITHM(ENUM, name, description) \
    RCL_RECURSIVE_MUTEX_INITIALIZER(RCL_LOCK_CONFIG("mutex_kinds.c:static_rec_" #name, RCL_ALG_##ENUM, 0, -1)),
#include "rclify/algorithms.def"
#undef RCL_ALGORITHM
};
static rcl_mutex_t static_err[T_NALGS] = {
#define RCL_ALGORITHM(ENUM, name, description) \
    RCL_ERRORCHECK_MUTEX_INITIALIZER(RCL_LOCK_CONFIG("mutex_kinds.c:static_err_" #name, RCL_ALG_##ENUM, 0, -1)),
#include "rclify/algorithms.def"
#undef RCL_ALGORITHM
};

/* ---- child: rcl_execute on a recursive lock held (hybrid) by the caller ---- */

static int cs_count(void *p)
{
    (*(long *)p)++;
    return 11;
}

static int child_hybrid_then_execute(const char *alg_name)
{
    int alg = t_alg_by_name(alg_name);
    rcl_mutex_t m;
    long n = 0;
    t_mutex_init(&m, PTHREAD_MUTEX_RECURSIVE, "mutex_kinds.c:held", alg, 0);
    CHECK_EQ(rcl_mutex_lock(&m), 0, "lock");
    CHECK_EQ(rcl_execute(&m, cs_count, &n), 11, "rcl_execute while holding the recursive lock");
    CHECK_EQ(rcl_mutex_unlock(&m), 0, "unlock");
    CHECK_EQ(n, 1, "section ran");
    return t_done();
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "mutex_kinds");
    if (t_is_child(argc, argv))
        return child_hybrid_then_execute(argv[2]);

    FOR_EACH_ALG(a)
    {
        char what[64];
        rcl_mutex_t m;
        t_mutex_init(&m, PTHREAD_MUTEX_RECURSIVE, "mutex_kinds.c:rec", a->alg, 0);
        snprintf(what, sizeof what, "%s recursive (init)", a->name);
        check_recursive(&m, what);
        CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");

        int i = T_ALG_INDEX(a);
        snprintf(what, sizeof what, "%s recursive (static)", a->name);
        check_recursive(&static_rec[i], what);
        CHECK(rcl_mutex_algorithm(&static_rec[i]) == a->alg, "static recursive lock on %s",
              rcl_algorithm_name(rcl_mutex_algorithm(&static_rec[i])));

        t_mutex_init(&m, PTHREAD_MUTEX_ERRORCHECK, "mutex_kinds.c:err", a->alg, 0);
        snprintf(what, sizeof what, "%s errorcheck (init)", a->name);
        check_errorcheck(&m, what);
        CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");
        snprintf(what, sizeof what, "%s errorcheck (static)", a->name);
        check_errorcheck(&static_err[i], what);

        check_destroy_busy(-1, a->alg, a->name);
        check_destroy_busy(PTHREAD_MUTEX_NORMAL, a->alg, a->name);
        check_destroy_busy(PTHREAD_MUTEX_RECURSIVE, a->alg, a->name);
        check_destroy_busy(PTHREAD_MUTEX_ERRORCHECK, a->alg, a->name);

        struct t_child c;
        int rc = t_run_child("--child-hybrid-then-execute", a->name, NULL, 20, &c);
        CHECK(rc == 0, "%s: rcl_execute on a recursive lock the caller holds in hybrid mode: child exited %d%s\n%s",
              a->name, rc, c.timed_out ? " (timed out: deadlock)" : "", c.err);
        OK("%s recursive: rcl_execute by the thread holding the lock in hybrid mode runs the section", a->name);
    }
    return t_done();
}
