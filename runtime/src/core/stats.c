/*
 * Statistics output: rcl_stats_print, and the table printed at exit with RCLIFY_STATS=1.
 * Definitions (paper, section 3.2.3), per server:
 *   use rate          sections executed in active passes (passes that ran at least one section)
 *                     divided by the number of client threads, summed over those passes;
 *   false-ser rate    distinct locks served in an active pass divided by the number of client
 *                     threads, likewise;
 *   slow-path rate    fraction of passes that took the slow path (more than one servicing thread);
 *   mgr-wake / no-prog  management thread wake-ups / wake-ups that found no progress.
 * The exit handler never waits on a server: it only reads counters.
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
    rcl_servers_print_stats(fd);
    rcl_locks_print_stats(fd);
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
