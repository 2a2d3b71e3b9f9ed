/*
 * Pieces shared by the two lock profilers: the LD_PRELOAD library for unmodified programs
 * (profiler/preload.c) and the `profile` lock algorithm of the runtime (src/pthread/profile.c).
 *
 *   prof_now_ns()        CLOCK_MONOTONIC in nanoseconds (vDSO: no system call)
 *   struct prof_pmu      per-thread L1D / last-level cache-miss counters via perf_event_open,
 *                        or the reason they are unavailable on this machine
 *   struct prof_out      a buffered writer made only of async-signal-safe calls (write(2)), so a
 *                        profile can be written from a SIGSEGV/SIGTERM handler
 *
 * Everything is static inline: each profiler includes its own copy.
 */
#ifndef RCLIFY_PROF_COMMON_H
#define RCLIFY_PROF_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t prof_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- cache-miss counters ------------------------------------------------------------------ */

#define PROF_PMU_EVENTS 2 /* L1D read misses, last-level-cache read misses */

struct prof_pmu {
    int fd; /* group leader (L1D); -1 when not open */
};

struct prof_pmu_sample {
    uint64_t v[PROF_PMU_EVENTS];
};

static inline long prof_perf_open(struct perf_event_attr *attr, int group)
{
    return syscall(SYS_perf_event_open, attr, 0 /* this thread */, -1 /* any cpu */, group, 0);
}

static inline uint64_t prof_cache_config(unsigned cache)
{
    return cache | (PERF_COUNT_HW_CACHE_OP_READ << 8) | (PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
}

/*
 * Opens the calling thread's counter group.  Returns 0, or an errno value; the caller says
 * "unavailable on this machine" with strerror of it.  User-space counting only, which
 * perf_event_paranoid <= 2 allows for a process's own threads.
 */
static inline int prof_pmu_open(struct prof_pmu *p)
{
    static const unsigned caches[PROF_PMU_EVENTS] = { PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_LL };
    p->fd = -1;
    for (int i = 0; i < PROF_PMU_EVENTS; i++) {
        struct perf_event_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.size = sizeof attr;
        attr.type = PERF_TYPE_HW_CACHE;
        attr.config = prof_cache_config(caches[i]);
        attr.exclude_kernel = 1;
        attr.exclude_hv = 1;
        attr.read_format = PERF_FORMAT_GROUP;
        long fd = prof_perf_open(&attr, i == 0 ? -1 : p->fd);
        if (fd < 0) {
            int err = errno ? errno : ENOENT;
            if (p->fd >= 0)
                close(p->fd);
            p->fd = -1;
            return err;
        }
        if (i == 0)
            p->fd = (int)fd;
    }
    return 0;
}

static inline int prof_pmu_read(const struct prof_pmu *p, struct prof_pmu_sample *s)
{
    uint64_t buf[1 + PROF_PMU_EVENTS];
    if (p->fd < 0 || read(p->fd, buf, sizeof buf) != (ssize_t)sizeof buf)
        return -1;
    for (int i = 0; i < PROF_PMU_EVENTS; i++)
        s->v[i] = buf[1 + i];
    return 0;
}

/* ---- async-signal-safe output ------------------------------------------------------------- */

struct prof_out {
    int fd;
    int failed;
    size_t len;
    char buf[8192];
};

static inline void prof_flush(struct prof_out *o)
{
    size_t off = 0;
    while (off < o->len && !o->failed) {
        ssize_t n = write(o->fd, o->buf + off, o->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            o->failed = 1;
        else
            off += (size_t)n;
    }
    o->len = 0;
}

static inline void prof_put_mem(struct prof_out *o, const char *s, size_t n)
{
    while (n > 0) {
        if (o->len == sizeof o->buf)
            prof_flush(o);
        size_t k = sizeof o->buf - o->len;
        if (k > n)
            k = n;
        memcpy(o->buf + o->len, s, k);
        o->len += k;
        s += k;
        n -= k;
    }
}

static inline void prof_put(struct prof_out *o, const char *s)
{
    prof_put_mem(o, s, strlen(s));
}

static inline void prof_put_u64(struct prof_out *o, uint64_t v)
{
    char tmp[24];
    int i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    prof_put_mem(o, tmp + i, sizeof tmp - (size_t)i);
}

static inline void prof_put_i64(struct prof_out *o, int64_t v)
{
    if (v < 0) {
        prof_put_mem(o, "-", 1);
        prof_put_u64(o, (uint64_t)0 - (uint64_t)v);
    } else {
        prof_put_u64(o, (uint64_t)v);
    }
}

static inline void prof_put_hex(struct prof_out *o, uint64_t v)
{
    char tmp[18];
    int i = sizeof tmp;
    do {
        tmp[--i] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    tmp[--i] = 'x';
    tmp[--i] = '0';
    prof_put_mem(o, tmp + i, sizeof tmp - (size_t)i);
}

/* A JSON string literal, quotes included; control characters escaped. */
static inline void prof_put_json(struct prof_out *o, const char *s)
{
    prof_put_mem(o, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = { '\\', (char)c };
            prof_put_mem(o, e, 2);
        } else if (c < 0x20) {
            char e[6] = { '\\', 'u', '0', '0', "0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15] };
            prof_put_mem(o, e, 6);
        } else {
            prof_put_mem(o, (const char *)&c, 1);
        }
    }
    prof_put_mem(o, "\"", 1);
}

/* Copies a whole file (e.g. /proc/self/maps) into the output. */
static inline void prof_put_file(struct prof_out *o, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char tmp[4096];
    ssize_t n;
    while ((n = read(fd, tmp, sizeof tmp)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0)
            prof_put_mem(o, tmp, (size_t)n);
    close(fd);
}

#endif
