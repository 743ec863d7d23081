/* bench/bench_optimize.c — the optimizer's speed: qwen3-8b decode (36 layers) under `reference` (target < 20 ms,
 * median), and its scaling: the time for 2× the layers over the time for 1× (target ≤ 2.3: no quadratic scans). */
#include "models/models.h"
#include "rules/rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Ascending doubles, for qsort. */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The fastest of `rounds` runs in ms, written by median_ms (the least disturbed figure on a shared machine). */
static double fastest;

/* The median milliseconds of optimizing `model` cut to `layers` layers in `mode` under shim, over `rounds` runs. */
static double median_ms(const char *model, const char *mode, int32_t layers, const struct shim *shim, int rounds,
                        int32_t *ops, int32_t *decisions)
{
    char err[IR_ERR_LEN];
    struct models_options o = models_default_options();
    o.layers = layers;
    models_parse_mode(mode, &o.mode, err);
    struct ir_graph *g = models_lift(models_find(model), &o, err);
    if (!g) {
        fprintf(stderr, "%s\n", err);
        exit(2);
    }
    double *t = malloc(sizeof *t * (size_t)rounds);
    for (int k = 0; k < rounds; k++) {
        struct rules_optimized out;
        double t0 = now();
        rules_optimize(g, shim, NULL, 0, &out, err);
        t[k] = (now() - t0) * 1e3;
        *decisions = out.report.n;
        rules_optimized_free(&out);
    }
    *ops = g->nops;
    qsort(t, (size_t)rounds, sizeof *t, cmp_double);
    double m = t[rounds / 2];
    fastest = t[0];
    free(t);
    ir_graph_free(g);
    return m;
}

int main(void)
{
    struct shim *reference = shim_reference(), *none = shim_none();
    int32_t ops, decisions;
    double full = median_ms("qwen3-8b", "decode", 0, reference, 21, &ops, &decisions);
    printf("optimize qwen3-8b decode (36 layers, %d ops) under reference: median %.2f ms (%d decisions); target < 20 ms\n",
           ops, full, decisions);
    double none_ms = median_ms("qwen3-8b", "decode", 0, none, 11, &ops, &decisions);
    printf("optimize qwen3-8b decode under none: median %.2f ms (%d decisions)\n", none_ms, decisions);
    static const char *const modes[] = {"decode", "prefill:8", "batch:4"};
    for (int m = 0; m < 3; m++) {
        double one = median_ms("qwen3-8b", modes[m], 18, reference, 31, &ops, &decisions), one_min = fastest;
        int32_t ops2;
        double two = median_ms("qwen3-8b", modes[m], 36, reference, 31, &ops2, &decisions), two_min = fastest;
        printf("scaling %-9s: 18 layers (%d ops) %.2f ms, 36 layers (%d ops) %.2f ms: median ratio %.2f, fastest "
               "%.2f / %.2f ms ratio %.2f (target <= 2.3)\n",
               modes[m], ops, one, ops2, two, two / one, one_min, two_min, two_min / one_min);
    }
    shim_free(reference);
    shim_free(none);
    return 0;
}
