/*
 * Section contexts and return values, with every registered algorithm (FOR_EACH_ALG):
 *   - RCL_EXECUTE / rcl_execute_sized with every context size from 1 to 300 bytes, then larger ones
 *     up to 64 KiB: the section sees exactly the caller's bytes and the caller sees exactly what
 *     the section wrote (the runtime may copy a small context into the mailbox and back);
 *   - memory next to the context is never touched;
 *   - fn's return value comes back unchanged (0, small flags, large values), through nested
 *     sections too;
 *   - the same from 3 threads at once, each with its own sizes.
 */
#include "test_util.h"

#define GUARD 64
#define MAXSZ 65536

struct sized {
    size_t size;
    unsigned char seed;
    int ok;
    int ret;
};

/* The section: checks the pattern, writes its complement.  The context is [hdr | bytes]. */
static int cs_pattern(void *p)
{
    unsigned char *b = p;
    struct sized h;
    memcpy(&h, b, sizeof h);
    unsigned char *data = b + sizeof h;
    size_t n = h.size - sizeof h;
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        if (data[i] != (unsigned char)(h.seed + i * 7))
            ok = 0;
        data[i] = (unsigned char)~(h.seed + i * 7);
    }
    h.ok = ok;
    memcpy(b, &h, sizeof h);
    return h.ret;
}

/* Contexts of 1 .. 15 bytes: the section learns the size from a global (sections are serial). */
static size_t small_size;
static int cs_small_pattern(void *p)
{
    unsigned char *b = p;
    int ok = 1;
    for (size_t i = 0; i < small_size; i++) {
        if (b[i] != (unsigned char)(0x40 + i))
            ok = 0;
        b[i] = (unsigned char)(0x80 + i);
    }
    return ok ? 5 : 6;
}

static void small_sizes(rcl_mutex_t *m)
{
    unsigned char buf[16 + 2 * GUARD];
    for (small_size = 1; small_size < 16; small_size++) {
        memset(buf, 0xee, sizeof buf);
        for (size_t i = 0; i < small_size; i++)
            buf[GUARD + i] = (unsigned char)(0x40 + i);
        CHECK_EQ(rcl_execute_sized(m, cs_small_pattern, buf + GUARD, small_size), 5, "section saw the caller's bytes");
        for (size_t i = 0; i < small_size; i++)
            CHECK(buf[GUARD + i] == (unsigned char)(0x80 + i), "context of %zu bytes: byte %zu not written back",
                  small_size, i);
        for (size_t i = 0; i < GUARD; i++)
            CHECK(buf[i] == 0xee && buf[GUARD + small_size + i] == 0xee, "context of %zu bytes: neighbour written",
                  small_size);
    }
}

/* A one-byte context. */
struct tiny {
    char c;
};
static int cs_tiny(void *p)
{
    struct tiny *t = p;
    t->c = (char)(t->c + 1);
    return 77;
}

static void one_size(rcl_mutex_t *m, size_t size, unsigned char seed, int ret, unsigned char *buf)
{
    /* buf: GUARD | context | GUARD */
    memset(buf, 0xee, size + 2 * GUARD);
    unsigned char *ctx = buf + GUARD;
    struct sized h = { size, seed, -1, ret };
    memcpy(ctx, &h, sizeof h);
    for (size_t i = 0; i < size - sizeof h; i++)
        ctx[sizeof h + i] = (unsigned char)(seed + i * 7);
    int rc = rcl_execute_sized(m, cs_pattern, ctx, size);
    CHECK_EQ(rc, ret, "return value");
    memcpy(&h, ctx, sizeof h);
    CHECK(h.ok == 1, "context of %zu bytes: the section saw different bytes (ok=%d)", size, h.ok);
    for (size_t i = 0; i < size - sizeof h; i++)
        CHECK(ctx[sizeof h + i] == (unsigned char)~(seed + i * 7), "context of %zu bytes: byte %zu not written back", size,
              i);
    for (size_t i = 0; i < GUARD; i++) {
        CHECK(buf[i] == 0xee, "context of %zu bytes: byte %zu before it was written", size, GUARD - i);
        CHECK(buf[GUARD + size + i] == 0xee, "context of %zu bytes: byte %zu after it was written", size, i);
    }
}

static void sweep(rcl_mutex_t *m, size_t from, size_t to, size_t step, unsigned char seed)
{
    unsigned char *buf = malloc(MAXSZ + 2 * GUARD);
    CHECK(buf != NULL, "malloc");
    for (size_t s = from; s <= to; s += step)
        one_size(m, s, (unsigned char)(seed + s), (int)(s * 31 % 100000), buf);
    free(buf);
}

static rcl_mutex_t *cur;
static void sweep_thread(int index, void *arg)
{
    for (int r = 0; r < ITERS(20); r++)
        sweep(cur, sizeof(struct sized) + (size_t)index, 300, 3, (unsigned char)(index * 50 + r));
}

/* Return values through nested sections. */
static int cs_ret_inner(void *p)
{
    return *(int *)p;
}
static int cs_ret_outer(void *p)
{
    return rcl_execute(cur, cs_ret_inner, p);
}

int main(int argc, char **argv)
{
    t_init(argc, argv, "context");
    FOR_EACH_ALG(a)
    {
        rcl_mutex_t m, m2;
        t_mutex_init(&m, -1, "context.c:m", a->alg, 0);
        t_mutex_init(&m2, PTHREAD_MUTEX_RECURSIVE, "context.c:m2", a->alg, 0);
        cur = &m;

        small_sizes(&m);
        sweep(&m, sizeof(struct sized), 300, 1, 1);
        OK("%s: rcl_execute_sized with every context size from 1 to 300 bytes: read, written back, neighbours "
           "untouched", a->name);
        sweep(&m, 301, MAXSZ, 4093, 2);
        sweep(&m, 1024, 1024, 1, 3);
        sweep(&m, MAXSZ, MAXSZ, 1, 4);
        OK("%s: context sizes 301 .. 64 KiB: read, written back, neighbours untouched", a->name);

        struct tiny t = { 'a' };
        for (int i = 0; i < 10; i++)
            CHECK_EQ(RCL_EXECUTE(&m, cs_tiny, &t), 77, "return value (1-byte context)");
        CHECK_EQ(t.c, 'a' + 10, "1-byte context updated 10 times");
        OK("%s: 1-byte context updated in place through 10 sections", a->name);

        static const int rets[] = { 0, 1, 2, 255, 256, 65536, 0x7fffffff };
        cur = &m2;
        for (size_t i = 0; i < sizeof rets / sizeof rets[0]; i++) {
            int v = rets[i];
            CHECK_EQ(rcl_execute(&m, cs_ret_inner, &v), v, "return value");
            CHECK_EQ(RCL_EXECUTE(&m, cs_ret_inner, &v), v, "return value (copied context)");
            CHECK_EQ(rcl_execute(&m2, cs_ret_outer, &v), v, "return value through a nested section");
        }
        OK("%s: return values 0 .. INT_MAX come back unchanged, also through nested sections", a->name);

        cur = &m;
        t_run_threads(3, sweep_thread, NULL);
        OK("%s: 3 threads x %d sweeps of context sizes at once", a->name, ITERS(20));
        CHECK_EQ(rcl_mutex_destroy(&m), 0, "destroy");
        CHECK_EQ(rcl_mutex_destroy(&m2), 0, "destroy");
    }
    return t_done();
}
