/*
 * Sections that block in the kernel while running on the server: the server must go on serving
 * its other locks (paper section 3.2.1: a blocked servicing thread is replaced).
 *   - a section on A sleeps (usleep in a loop) until a section on B, same server, sets a flag;
 *   - a section on A writes 256 KiB into a pipe (blocking on the full pipe) while a reader drains
 *     it outside any lock and runs a section on B after each read;
 *   - many short sections each writing one byte to a pipe and sleeping 100 us, from 3 threads,
 *     alongside 2 threads running plain sections on another lock of the server: exact counts.
 * With every registered algorithm (FOR_EACH_ALG).
 */
#include "test_util.h"

static rcl_mutex_t A, B;
static int flag, a_in;
static long b_count; /* protected by B */

static int cs_sleep_until_flag(void *p)
{
    __atomic_store_n(&a_in, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 20000 && !__atomic_load_n(&flag, __ATOMIC_ACQUIRE); i++)
        usleep(500);
    return __atomic_load_n(&flag, __ATOMIC_ACQUIRE) ? 1 : -1;
}

static int cs_set_flag(void *p)
{
    b_count++;
    __atomic_store_n(&flag, 1, __ATOMIC_RELEASE);
    return 2;
}

static void sleeper(int index, void *arg)
{
    if (index == 0) {
        CHECK_EQ(rcl_execute(&A, cs_sleep_until_flag, NULL), 1, "sleeping section saw the flag (-1: 10 s without)");
    } else {
        t_wait_flag(&a_in, 1);
        CHECK_EQ(rcl_execute(&B, cs_set_flag, NULL), 2, "flag-setting section on B");
    }
}

/* ---- pipe ---- */

#define PIPE_BYTES (256 * 1024)
static int pfd[2];

static int cs_write_pipe(void *p)
{
    static char chunk[8192];
    size_t done = 0;
    memset(chunk, 'x', sizeof chunk);
    while (done < PIPE_BYTES) {
        ssize_t n = write(pfd[1], chunk, sizeof chunk);
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 4;
}

static int cs_count_b(void *p)
{
    b_count++;
    return 0;
}

static void piper(int index, void *arg)
{
    if (index == 0) {
        CHECK_EQ(rcl_execute(&A, cs_write_pipe, NULL), 4, "section writing 256 KiB to a pipe");
        return;
    }
    size_t got = 0;
    char buf[4096];
    while (got < PIPE_BYTES) {
        ssize_t n = read(pfd[0], buf, sizeof buf);
        CHECK(n > 0, "read from the pipe: %zd", n);
        got += (size_t)n;
        rcl_execute(&B, cs_count_b, NULL); /* B is served while A's section is blocked in write */
    }
}

/* ---- many blocking sections ---- */

static long a_count; /* protected by A */
static int writers_done;

static int cs_write_byte(void *p)
{
    a_count++;
    if (write(pfd[1], "y", 1) != 1)
        return -1;
    usleep(100);
    return 0;
}

static void mixed(int index, void *arg)
{
    int n = ITERS(300);
    if (index < 3) {
        for (int i = 0; i < n; i++)
            CHECK_EQ(rcl_execute(&A, cs_write_byte, NULL), 0, "section writing a byte");
        __atomic_fetch_add(&writers_done, 1, __ATOMIC_RELEASE);
    } else if (index < 5) {
        for (int i = 0; i < 5 * n; i++)
            rcl_execute(&B, cs_count_b, NULL);
    } else { /* drain the pipe */
        long got = 0;
        char buf[256];
        while (got < 3L * n) {
            ssize_t r = read(pfd[0], buf, sizeof buf);
            CHECK(r > 0, "read");
            got += r;
        }
    }
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "blocking");
    FOR_EACH_ALG(a)
    {
        t_mutex_init(&A, -1, "blocking.c:A", a->alg, 0);
        t_mutex_init(&B, -1, "blocking.c:B", a->alg, 0);

        for (int round = 0; round < 3; round++) {
            flag = a_in = 0;
            uint64_t t0 = t_now_ns();
            t_run_threads(2, sleeper, NULL);
            OK("%s: section sleeping on A until a section on B (same server) sets a flag: %.0f ms", a->name,
               (double)(t_now_ns() - t0) / 1e6);
        }

        CHECK(pipe(pfd) == 0, "pipe");
        b_count = 0;
        uint64_t t0 = t_now_ns();
        t_run_threads(2, piper, NULL);
        CHECK(b_count > 0, "sections on B while A wrote");
        OK("%s: section blocked writing 256 KiB to a pipe while %ld sections on B ran (%.0f ms)", a->name, b_count,
           (double)(t_now_ns() - t0) / 1e6);

        a_count = b_count = 0;
        writers_done = 0;
        t0 = t_now_ns();
        t_run_threads(6, mixed, NULL);
        CHECK_EQ(a_count, 3L * ITERS(300), "byte-writing sections");
        CHECK_EQ(b_count, 2L * 5 * ITERS(300), "plain sections on B");
        OK("%s: 3 threads x %d sections doing write()+usleep(100) on A, 2 threads x %d plain ones on B: exact (%.0f ms)",
           a->name, ITERS(300), 5 * ITERS(300), (double)(t_now_ns() - t0) / 1e6);
        close(pfd[0]);
        close(pfd[1]);

        CHECK_EQ(rcl_mutex_destroy(&A), 0, "destroy A");
        CHECK_EQ(rcl_mutex_destroy(&B), 0, "destroy B");
    }
    return t_done();
}
