/* bench/bench_kernels.c — figures for the host lane: one decode step run end to end on the lane (every launch's
 * kernels walked over their grids) beside the evaluator on the reference graph of the same step, for tiny-qwen3 (the
 * median of 9 runs) and qwen3-0.6b (one run of 2 steps), under cuda-lane:h200 with int8 and dequant activations. */
#include "kernels/kernels.h"
#include "models/models.h"
#include "rules/rules.h"

#include <stdio.h>
#include <stdlib.h>

/* Ascending order of doubles, for qsort. */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of n samples (sorted in place). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Time `runs` chained runs of `steps` steps of model's decode under shim; print the medians per step. */
static int bench(const char *model, const char *shim_name, int steps, int runs)
{
    char err[IR_ERR_LEN];
    struct models_options o = models_default_options();
    struct ir_graph *g = models_lift(models_find(model), &o, err);
    struct shim *shim = g ? shim_lookup(shim_name, err) : NULL;
    struct kernels_point p;
    struct rules_optimized r;
    if (!shim || kernels_point_of(shim, &p, err) || rules_optimize(g, shim, NULL, 0, &r, err)) {
        fprintf(stderr, "bench_kernels: %s\n", err);
        return 1;
    }
    struct ir_graph *ref = rules_quantized_lifted(g, shim);
    double lane[16], eval[16];
    int rc = 0;
    for (int i = 0; !rc && i < runs; i++) {
        struct kernels_tol_input in = {r.graph, ref, g, &p, 1, steps, KERNELS_FAULT_NONE, true, NULL};
        struct kernels_tol_result res;
        rc = kernels_tolerance(&in, &res, err);
        lane[i] = res.seconds_lane / steps;
        eval[i] = res.seconds_eval / steps;
        kernels_tol_result_free(&res);
    }
    if (rc)
        fprintf(stderr, "bench_kernels: %s\n", err);
    else {
        double l = median(lane, runs), e = median(eval, runs);
        printf("%-12s %-22s %4d launches  host lane %9.3f ms a step  evaluator %9.3f ms  ratio %.2f\n", model,
               shim_name, (int)r.graph->nops, 1e3 * l, 1e3 * e, l / e);
    }
    ir_graph_free(ref);
    rules_optimized_free(&r);
    shim_free(shim);
    ir_graph_free(g);
    return rc;
}

int main(void)
{
    int rc = 0;
    rc |= bench("tiny-qwen3", "cuda-lane:h200:int8", 1, 9);
    rc |= bench("tiny-qwen3", "cuda-lane:h200:dequant", 1, 9);
    rc |= bench("qwen3-0.6b", "cuda-lane:h200:int8", 2, 1);
    rc |= bench("qwen3-0.6b", "cuda-lane:h200:dequant", 2, 1);
    return rc;
}
