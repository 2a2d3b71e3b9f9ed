/*
 * Locks created through a program's helper functions (RCL_LOCK_SITE, rclify.h), with every
 * registered algorithm (FOR_EACH_ALG):
 *   - three locks set up by one helper, each call wrapped with its own call site's configuration:
 *     each runs its call site's algorithm and carries its id; a call not wrapped keeps the
 *     helper's own configuration;
 *   - an allocator (returns the lock) and a void helper, wrapped the same way;
 *   - a helper calling a helper: the outermost call site names the lock;
 *   - a lock the helper initialises at another init site (another id) keeps its own configuration;
 *   - the site is closed when the call returns (a later init in the helper is the helper's again);
 *   - a site open on one thread does not reach a lock another thread initialises meanwhile;
 *   - the locks work: 4 threads, lock/unlock and rcl_execute, exact counts;
 *   - RCLIFY_LOCKS overrides by the call site's id (child process).
 */
#include "test_util.h"

#define HELPER_ID "helper.c:m"
#define OTHER_ID "helper.c:other"

struct obj {
    rcl_mutex_t m;
    long count;
};

static rcl_mutex_t other; /* initialised by the helper at another init site */
static int init_other;

/* The helper, as the transform leaves it: its own init site keeps the helper's configuration. */
static int obj_setup(struct obj *o)
{
    o->count = 0;
    if (init_other)
        rcl_mutex_init(&other, NULL, RCL_CONFIG_REF(RCL_LOCK_CONFIG(OTHER_ID, RCL_ALG_POSIX, 0, -1)));
    return rcl_mutex_init(&o->m, NULL, RCL_CONFIG_REF(RCL_LOCK_CONFIG(HELPER_ID, RCL_ALG_POSIX, 0, -1)));
}

static void obj_setup_void(struct obj *o)
{
    obj_setup(o);
}

static struct obj *obj_new(void)
{
    struct obj *o = malloc(sizeof *o);
    if (o && obj_setup(o) != 0) { /* a helper calling a helper: its own site is wrapped too */
        free(o);
        return NULL;
    }
    return o;
}

/* obj_new as the transform leaves it: the obj_setup call inside is a call site of its own. */
static struct obj *obj_new_wrapped(void)
{
    struct obj *o = malloc(sizeof *o);
    if (o && RCL_LOCK_SITE(obj_setup(o), RCL_SITE(HELPER_ID, RCL_LOCK_CONFIG("helper.c:o->m", RCL_ALG_POSIX, 0, -1))) != 0) {
        free(o);
        return NULL;
    }
    return o;
}

static void check_lock(rcl_mutex_t *m, const char *id, int alg)
{
    CHECK(m->config.id && strcmp(m->config.id, id) == 0, "lock id %s, expected %s", m->config.id ? m->config.id : "(anonymous)", id);
    CHECK_EQ(rcl_mutex_algorithm(m), alg, id);
}

static int cs_inc(void *p)
{
    (*(long *)p)++;
    return 0;
}

static void use_lock(int index, void *arg)
{
    struct obj *o = arg;
    for (int i = 0; i < ITERS(2000); i++) {
        if (i % 2) {
            CHECK_EQ(rcl_execute(&o->m, cs_inc, &o->count), 0, "section");
        } else {
            CHECK_EQ(rcl_mutex_lock(&o->m), 0, "lock");
            o->count++;
            CHECK_EQ(rcl_mutex_unlock(&o->m), 0, "unlock");
        }
    }
}

static void destroy(struct obj *o)
{
    CHECK_EQ(rcl_mutex_destroy(&o->m), 0, "destroy");
}

/* ---- one algorithm's worth of call sites ---- */

static void per_call_site(int alg, const char *name)
{
    struct obj a, b, c, plain;
    int rc = RCL_LOCK_SITE(obj_setup(&a), RCL_SITE(HELPER_ID, RCL_LOCK_CONFIG("main.c:a.m", alg, 0, -1)));
    CHECK_EQ(rc, 0, "wrapped helper's value");
    rc = RCL_LOCK_SITE(obj_setup(&b), RCL_SITE(HELPER_ID, RCL_LOCK_CONFIG("main.c:b.m", RCL_ALG_POSIX, 0, -1)));
    CHECK_EQ(rc, 0, "wrapped helper's value");
    RCL_LOCK_SITE_VOID(obj_setup_void(&c), RCL_SITE(HELPER_ID, RCL_LOCK_CONFIG("main.c:c.m", alg, 1, -1)));
    CHECK_EQ(obj_setup(&plain), 0, "helper");
    check_lock(&a.m, "main.c:a.m", alg);
    check_lock(&b.m, "main.c:b.m", RCL_ALG_POSIX);
    check_lock(&c.m, "main.c:c.m", alg);
    CHECK_EQ(c.m.config.server, 1, "call site's server");
    check_lock(&plain.m, HELPER_ID, RCL_ALG_POSIX);

    struct obj *heap = RCL_LOCK_SITE(obj_new(), RCL_SITE(HELPER_ID, RCL_LOCK_CONFIG("main.c:heap->m", alg, 0, -1)));
    CHECK(heap != NULL, "allocator's value");
    check_lock(&heap->m, "main.c:heap->m", alg);
    struct obj *outer = RCL_LOCK_SITE(obj_new_wrapped(), RCL_SITE(HELPER_ID, RCL_LOCK_CONFIG("main.c:outer->m", alg, 0, -1)));
    check_lock(&outer->m, "main.c:outer->m", alg); /* not helper.c:o->m: the outermost site wins */
    struct obj *inner = obj_new_wrapped();
    check_lock(&inner->m, "helper.c:o->m", RCL_ALG_POSIX); /* called from elsewhere: the inner site */

    t_run_threads(4, use_lock, &a);
    CHECK_EQ(a.count, 4 * ITERS(2000), "count on the call site's lock");
    t_run_threads(4, use_lock, heap);
    CHECK_EQ(heap->count, 4 * ITERS(2000), "count on the allocated lock");
    destroy(&a), destroy(&b), destroy(&c), destroy(&plain), destroy(heap), destroy(outer), destroy(inner);
    free(heap), free(outer), free(inner);
    OK("%s: three call sites of one helper, an allocator, a void helper, nested helpers", name);
}

/* ---- what a site does not reach ---- */

static void other_init_sites(void)
{
    struct obj a, later;
    init_other = 1;
    RCL_LOCK_SITE(obj_setup(&a), RCL_SITE(HELPER_ID, RCL_LOCK_CONFIG("main.c:a.m", RCL_ALG_RCL, 0, -1)));
    init_other = 0;
    check_lock(&a.m, "main.c:a.m", RCL_ALG_RCL);
    check_lock(&other, OTHER_ID, RCL_ALG_POSIX);
    CHECK_EQ(obj_setup(&later), 0, "helper");
    check_lock(&later.m, HELPER_ID, RCL_ALG_POSIX); /* the site closed when the call returned */
    destroy(&a), destroy(&later);
    CHECK_EQ(rcl_mutex_destroy(&other), 0, "destroy");
    OK("another init site in the helper keeps its id; the site closes when the call returns");
}

static int site_open, other_done;
static struct obj from_other_thread;

static int blocking_setup(struct obj *o)
{
    __atomic_store_n(&site_open, 1, __ATOMIC_RELEASE);
    t_wait_flag(&other_done, 1); /* the other thread initialises its lock while this site is open */
    return obj_setup(o);
}

static void other_thread(int index, void *arg)
{
    if (index == 0) {
        struct obj *a = arg;
        RCL_LOCK_SITE(blocking_setup(a), RCL_SITE(HELPER_ID, RCL_LOCK_CONFIG("main.c:a.m", RCL_ALG_RCL, 0, -1)));
    } else {
        t_wait_flag(&site_open, 1);
        obj_setup(&from_other_thread);
        __atomic_store_n(&other_done, 1, __ATOMIC_RELEASE);
    }
}

static void other_threads(void)
{
    struct obj a;
    t_run_threads(2, other_thread, &a);
    check_lock(&a.m, "main.c:a.m", RCL_ALG_RCL);
    check_lock(&from_other_thread.m, HELPER_ID, RCL_ALG_POSIX);
    destroy(&a), destroy(&from_other_thread);
    OK("a site open on one thread leaves the locks other threads initialise alone");
}

/* ---- RCLIFY_LOCKS names call sites ---- */

static int child(const char *mode)
{
    (void)mode;
    struct obj a, b;
    RCL_LOCK_SITE(obj_setup(&a), RCL_SITE(HELPER_ID, RCL_LOCK_CONFIG("main.c:a.m", RCL_ALG_POSIX, 0, -1)));
    RCL_LOCK_SITE(obj_setup(&b), RCL_SITE(HELPER_ID, RCL_LOCK_CONFIG("main.c:b.m", RCL_ALG_POSIX, 0, -1)));
    check_lock(&a.m, "main.c:a.m", RCL_ALG_RCL);
    check_lock(&b.m, "main.c:b.m", RCL_ALG_POSIX);
    t_run_threads(4, use_lock, &a);
    CHECK_EQ(a.count, 4 * ITERS(2000), "count");
    destroy(&a), destroy(&b);
    return t_done();
}

static void environment_override(void)
{
    static const char *const env[] = { "RCLIFY_LOCKS=main.c:a.m=rcl,*=posix", NULL };
    struct t_child res;
    int rc = t_run_child("--child-override", NULL, env, 30, &res);
    CHECK(rc == 0, "child exit status %d:\n%s", rc, res.err);
    OK("RCLIFY_LOCKS overrides a call site's lock by its id");
}

int main(int argc, char **argv)
{
    if (t_is_child(argc, argv)) {
        t_init(argc, argv, "lock_sites");
        return child(argv[1]);
    }
    t_init(argc, argv, "lock_sites");
    FOR_EACH_ALG(a)
    per_call_site(a->alg, a->name);
    other_init_sites();
    other_threads();
    environment_override();
    return t_done();
}
