/*
 * A lock or condition-variable call that fails inside a section the runtime runs for another
 * thread ends the process (rcl_failed_elsewhere); on the section's own thread it returns its
 * error, as pthread's.  rclify's analysis relies on the first: a section whose error branch
 * (`if (rc) fail()` after such a call) is thread-bound may still leave its thread.
 *
 * The failing call: unlocking an errorcheck mutex the section does not hold (EPERM).
 *   - on every algorithm, a section run with rcl_execute_local gets EPERM back;
 *   - under rcl (the section runs on a server), in a child: the child ends, and its stderr names
 *     the call and the lock.
 */
#include "test_util.h"

#ifdef RCLIFY_TSAN
/* The failing unlock misuses a mutex on purpose; ThreadSanitizer would report it. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "report_mutex_bugs=0";
}
#endif

struct unheld {
    rcl_mutex_t *errorcheck;
    int rc;
};

static int cs_unlock_unheld(void *p)
{
    struct unheld *u = p;
    u->rc = rcl_mutex_unlock(u->errorcheck);
    return 0;
}

static int child_on_server(void)
{
    rcl_mutex_t lock, errorcheck;
    t_mutex_init(&lock, -1, "failed_elsewhere.c:lock", RCL_ALG_RCL, 0);
    t_mutex_init(&errorcheck, PTHREAD_MUTEX_ERRORCHECK, "failed_elsewhere.c:errorcheck", RCL_ALG_RCL, 0);
    struct unheld u = { &errorcheck, -1 };
    rcl_execute(&lock, cs_unlock_unheld, &u);
    printf("the section's unlock returned %d on the server\n", u.rc);
    return 0; /* the parent fails on this: the process should have ended */
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "failed_elsewhere");
    if (argc > 1 && strcmp(argv[1], "--child-on-server") == 0)
        return child_on_server();

    FOR_EACH_ALG(a)
    {
        rcl_mutex_t lock, errorcheck;
        t_mutex_init(&lock, -1, "failed_elsewhere.c:lock", a->alg, 0);
        t_mutex_init(&errorcheck, PTHREAD_MUTEX_ERRORCHECK, "failed_elsewhere.c:errorcheck", a->alg, 0);
        struct unheld u = { &errorcheck, -1 };
        rcl_execute_local(&lock, cs_unlock_unheld, &u);
        CHECK_EQ(u.rc, EPERM, "unlock of an unheld errorcheck mutex, on the caller's thread");
        OK("%s: on the section's own thread the failed unlock returns EPERM", a->name);
        CHECK_EQ(rcl_mutex_destroy(&errorcheck), 0, "destroy");
        CHECK_EQ(rcl_mutex_destroy(&lock), 0, "destroy");
    }

    struct t_child res;
    int rc = t_run_child("--child-on-server", NULL, NULL, 30, &res);
    CHECK(rc != 0 && !res.timed_out, "the child went on after the failed unlock on the server (exit %d)", rc);
    CHECK(strstr(res.err, "pthread_mutex_unlock failed inside a critical section running for another thread"),
          "the child's message: %s", res.err);
    CHECK(strstr(res.err, "failed_elsewhere.c:errorcheck"), "the message names the lock: %s", res.err);
    OK("rcl: the failed unlock inside a section on the server ends the process, naming the call (exit %d)", rc);
    return t_done();
}
