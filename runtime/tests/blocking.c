/*
 * Sections that block in the kernel while running on the server: the server must go on serving
 * its other locks (paper section 3.2.1: a blocked servicing thread is replaced).
 *   - a section on A sleeps (usleep in a loop) until a section on B, same server, sets a flag;
 *   - a section on A writes 256 KiB into a pipe (blocking on the full pipe) while a reader drains
 *     it outside any lock and runs a section on B after each read;
 *   - many short sections each writing one byte to a pipe and sleeping 100 us, from 3 threads,
 *     alongside 2 threads running plain sections on another lock of the server: exact counts;
 *   - sections on A block in sem_wait on a semaphore that only a section on B (same server) posts,
 *     from 2 threads, a third posting once per section that entered (issue 34);
 *   - a section on A blocks in read() on a pipe that a plain thread writes only after a third
 *     thread's sections on B have run SECTIONS_WHILE_BLOCKED times meanwhile.
 * With every registered algorithm (FOR_EACH_ALG).  Then, under rcl, the last two again in a child
 * whose management thread looks only every 10 s (RCLIFY_MGR_US=10000000): the clients of the
 * blocked sections must keep the server's other locks live by themselves (rcl.c, wait_long: a
 * section running longer than 20 us gets another servicing thread), so the child must end long
 * before the manager would have stepped in once per blocked section.
 */
#include "test_util.h"

#include <semaphore.h>

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

/* ---- a semaphore posted by a section of another lock of the server ---- */

#define SEM_ROUNDS 20
static sem_t sem;
static int entered; /* sections of A that entered sem_wait (atomic) */
static long a_done; /* protected by A */

static int cs_sem_wait(void *p)
{
    __atomic_fetch_add(&entered, 1, __ATOMIC_RELEASE);
    while (sem_wait(&sem) != 0)
        if (errno != EINTR)
            return -1;
    a_done++;
    return 5;
}

static int cs_sem_post(void *p)
{
    b_count++;
    return sem_post(&sem) == 0 ? 6 : -1;
}

static void sem_users(int index, void *arg)
{
    int rounds = ITERS(SEM_ROUNDS);
    if (index < 2) {
        for (int i = 0; i < rounds; i++)
            CHECK_EQ(rcl_execute(&A, cs_sem_wait, NULL), 5, "section blocked in sem_wait");
        return;
    }
    for (int i = 0; i < 2 * rounds; i++) { /* one post per section that has entered: each blocks */
        t_wait_flag(&entered, i + 1);
        CHECK_EQ(rcl_execute(&B, cs_sem_post, NULL), 6, "section posting the semaphore");
    }
}

static void scenario_semaphore(const char *alg)
{
    CHECK(sem_init(&sem, 0, 0) == 0, "sem_init");
    entered = 0;
    a_done = b_count = 0;
    uint64_t t0 = t_now_ns();
    t_run_threads(3, sem_users, NULL);
    CHECK_EQ(a_done, 2L * ITERS(SEM_ROUNDS), "sections that waited on the semaphore");
    CHECK_EQ(b_count, 2L * ITERS(SEM_ROUNDS), "sections that posted it");
    sem_destroy(&sem);
    OK("%s: %d sections on A blocked in sem_wait, each posted by a section on B (same server) (%.0f ms)", alg,
       2 * ITERS(SEM_ROUNDS), (double)(t_now_ns() - t0) / 1e6);
}

/* ---- a read on a pipe that a plain thread writes ---- */

#define READ_ROUNDS 10
#define SECTIONS_WHILE_BLOCKED 20
static int reading;      /* A's section is about to read (atomic; rounds counted) */
static long b_progress;  /* B's sections, read outside B (atomic) */
static int reads_done;   /* (atomic) */

static int cs_read_pipe(void *p)
{
    char c;
    __atomic_fetch_add(&reading, 1, __ATOMIC_RELEASE);
    ssize_t n;
    while ((n = read(pfd[0], &c, 1)) < 0 && errno == EINTR)
        ;
    return n == 1 && c == 'r' ? 7 : -1;
}

static int cs_b_progress(void *p)
{
    b_count++;
    __atomic_store_n(&b_progress, b_count, __ATOMIC_RELAXED);
    return 0;
}

static void pipe_users(int index, void *arg)
{
    int rounds = ITERS(READ_ROUNDS);
    if (index == 0) { /* the reader: its sections block in read() */
        for (int i = 0; i < rounds; i++) {
            CHECK_EQ(rcl_execute(&A, cs_read_pipe, NULL), 7, "section blocked in read() on a pipe");
            __atomic_store_n(&reads_done, i + 1, __ATOMIC_RELEASE);
        }
    } else if (index == 1) { /* the plain writer: writes once B has progressed meanwhile */
        for (int i = 0; i < rounds; i++) {
            t_wait_flag(&reading, i + 1);
            long from = __atomic_load_n(&b_progress, __ATOMIC_RELAXED);
            for (unsigned n = 0; __atomic_load_n(&b_progress, __ATOMIC_RELAXED) < from + SECTIONS_WHILE_BLOCKED; n++)
                if (n > 1000)
                    sched_yield();
            CHECK(write(pfd[1], "r", 1) == 1, "write to the pipe");
        }
    } else { /* sections on B, until the reader is done */
        while (__atomic_load_n(&reads_done, __ATOMIC_ACQUIRE) < rounds)
            rcl_execute(&B, cs_b_progress, NULL);
    }
}

static void scenario_read(const char *alg)
{
    CHECK(pipe(pfd) == 0, "pipe");
    reading = reads_done = 0;
    b_count = b_progress = 0;
    uint64_t t0 = t_now_ns();
    t_run_threads(3, pipe_users, NULL);
    CHECK(b_count >= (long)ITERS(READ_ROUNDS) * SECTIONS_WHILE_BLOCKED, "sections on B: %ld", b_count);
    close(pfd[0]);
    close(pfd[1]);
    OK("%s: %d sections on A blocked in read() on a pipe, each until %d sections on B (same server) ran and a "
       "plain thread wrote (%.0f ms)",
       alg, ITERS(READ_ROUNDS), SECTIONS_WHILE_BLOCKED, (double)(t_now_ns() - t0) / 1e6);
}

/* The child: rcl only, the management thread all but asleep (RCLIFY_MGR_US=10000000). */
static int child_without_manager(void)
{
    t_mutex_init(&A, -1, "blocking.c:A", RCL_ALG_RCL, 0);
    t_mutex_init(&B, -1, "blocking.c:B", RCL_ALG_RCL, 0);
    scenario_semaphore("rcl, manager every 10 s");
    scenario_read("rcl, manager every 10 s");
    CHECK_EQ(rcl_mutex_destroy(&A), 0, "destroy A");
    CHECK_EQ(rcl_mutex_destroy(&B), 0, "destroy B");
    return t_done();
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "blocking");
    if (t_is_child(argc, argv))
        return child_without_manager();
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

        scenario_semaphore(a->name);
        scenario_read(a->name);

        CHECK_EQ(rcl_mutex_destroy(&A), 0, "destroy A");
        CHECK_EQ(rcl_mutex_destroy(&B), 0, "destroy B");
    }

    /* Every blocked section would wait out at least one 10 s management timeout without the
     * clients' help: 30 s is far below that for 50 of them, far above what the child needs. */
    static const char *const env[] = { "RCLIFY_MGR_US=10000000", NULL };
    struct t_child c;
    int rc = t_run_child("--child", NULL, env, 30, &c);
    CHECK(rc == 0, "child with RCLIFY_MGR_US=10000000 exited %d%s:\n%s", rc,
          c.timed_out ? " (timed out: the server's other locks waited for the manager)" : "", c.err);
    OK("rcl with the management thread every 10 s: blocked sections did not stop their server (%.2f s)", c.seconds);
    return t_done();
}
