/* What the benchmarks share: the median of a sample (each reports medians of paired rounds) and
 * progress lines on stderr. */
#ifndef RCLIFY_BENCH_UTIL_H
#define RCLIFY_BENCH_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v in place. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One line on stderr, "<program>: ...", unless quiet. */
static void bench_progress(const char *program, int quiet, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void bench_progress(const char *program, int quiet, const char *fmt, ...)
{
    if (quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", program);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
}

#endif
