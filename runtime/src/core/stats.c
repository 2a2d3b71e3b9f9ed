/*
 * Statistics output: rcl_stats_print, and the tables printed at exit with RCLIFY_STATS=1.  The
 * tables are the algorithms' own (rcl_lock_ops.print_process_stats: rcl's servers and locks).
 * The exit handler never waits on a server: the tables only read counters.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/runtime.h"

void rcl_dprintf(int fd, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n >= (int)sizeof buf)
        n = (int)sizeof buf - 1;
    for (int off = 0; off < n;) {
        ssize_t w = write(fd, buf + off, (size_t)(n - off));
        if (w <= 0)
            return;
        off += (int)w;
    }
}

void rcl_stats_print(int fd)
{
    rcl_dprintf(fd, "rclify statistics (pid %d)\n", (int)getpid());
    /* Each algorithm's own tables (rcl_lock_ops.print_process_stats): rcl's servers and locks. */
    for (int alg = RCL_ALG_UNRESOLVED + 1; alg < RCL_ALG_COUNT; alg++)
        if (rcl_algorithms[alg]->print_process_stats)
            rcl_algorithms[alg]->print_process_stats(fd);
}

static void print_at_exit(void)
{
    rcl_stats_print(2);
}

__attribute__((constructor(102))) static void rcl_stats_init(void)
{
    if (rcl_settings.stats)
        atexit(print_at_exit);
}
