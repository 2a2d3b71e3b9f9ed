/*
 * The runtime's own threads (RCL servers) take no signal: a program that blocks a signal in all
 * its threads keeps it pending, as it would without the runtime.  mksquashfs blocks SIGINT after
 * its first lock use (which starts the server under rcl) and its handler calls pthread_exit: a
 * server thread that took it ended, and every later section waited forever.
 */
#include "test_util.h"

static long handled;
static void on_usr2(int sig)
{
    (void)sig;
    __atomic_fetch_add(&handled, 1, __ATOMIC_RELAXED);
}

static long counter;
static int cs_bump(void *unused)
{
    counter++;
    return 0;
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "server_signal_mask");
    signal(SIGUSR2, on_usr2);
    rcl_mutex_t m;
    t_mutex_init(&m, -1, "server_signal_mask.c:m", RCL_ALG_RCL, 0);
    CHECK_EQ(rcl_execute(&m, cs_bump, NULL), 0, "first section: the server starts");
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    CHECK_EQ(pthread_sigmask(SIG_BLOCK, &usr2, NULL), 0, "block SIGUSR2 in the program's one thread");
    CHECK_EQ(kill(getpid(), SIGUSR2), 0, "a process-directed SIGUSR2");
    usleep(100000);
    CHECK_EQ(__atomic_load_n(&handled, __ATOMIC_RELAXED), 0, "SIGUSR2 handled by a runtime thread");
    sigset_t pending;
    sigpending(&pending);
    CHECK(sigismember(&pending, SIGUSR2), "SIGUSR2 is not pending");
    for (int i = 0; i < 1000; i++)
        CHECK_EQ(rcl_execute(&m, cs_bump, NULL), 0, "section");
    CHECK_EQ(counter, 1001, "sections run");
    int sig;
    CHECK_EQ(sigwait(&usr2, &sig), 0, "sigwait");
    CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");
    OK("rcl: a signal every program thread blocks stays pending");
    return t_done();
}
