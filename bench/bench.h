/* bench/bench.h — what the benchmarks share: the ascending order of doubles their medians sort by, and a positive
 * count read from the environment. */
#ifndef FUSECHECK_BENCH_H
#define FUSECHECK_BENCH_H

#include <stdlib.h>

/* Ascending order of doubles, for qsort. */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A positive count from the environment variable `name`, else `fallback`. */
static inline int bench_env_count(const char *name, int fallback)
{
    const char *s = getenv(name);
    int v = s ? atoi(s) : 0;
    return v > 0 ? v : fallback;
}

#endif
