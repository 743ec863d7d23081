/* bench/bench_kernels.c — figures for the host lane: one decode step run end to end on the lane (every launch's
 * kernels walked over their grids) beside the evaluator on the reference graph of the same step, for tiny-qwen3 (the
 * median of 9 runs) and qwen3-0.6b (one run of 2 steps), under cuda-lane:h200 with int8 and dequant activations.
 * On a CUDA device, the device's figures too: each GEMV block format at decode sizes, and a whole decode step of
 * qwen3-8b and llama3-8b, each run as steps on the device's own buffers — the device's time a step (CUDA events
 * around the step's graph, or its launches one by one), the bytes they move, GB/s and the fraction of the chip's
 * bandwidth (the chip table's), with the host's wall time a step and what went up and came back; without one, a line
 * saying why they were skipped. */
#include "bench/bench.h"
#include "kernels/kernels.h"
#include "models/models.h"
#include "rules/rules.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The median of n samples (sorted in place). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
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
        struct kernels_tol_input in = {r.graph, ref, g, &p, 1, steps, KERNELS_FAULT_NONE, true, NULL, NULL};
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

/* The chip of the table whose name the device's backend name holds (case aside), or NULL. */
static const struct kernels_chip *chip_of_device(const char *backend)
{
    char low[160];
    size_t n = 0;
    for (; backend[n] && n + 1 < sizeof low; n++)
        low[n] = (char)tolower((unsigned char)backend[n]);
    low[n] = 0;
    for (int i = 0; i < kernels_chip_count(); i++)
        if (strstr(low, kernels_chip_get(i)->name))
            return kernels_chip_get(i);
    return NULL;
}

/* Every i32 parameter (token, position) set to 0: a step at the start of its cache. */
static void zero_params(const struct ir_graph *g, struct ir_values *v)
{
    for (ir_tid t = 0; t < g->ntensors; t++) {
        float *d = g->tensors[t].elem == IR_ELEM_I32 ? ir_values_data(v, t) : NULL;
        if (d)
            memset(d, 0, sizeof(float) * (size_t)ir_tensor_len(g, t));
    }
}

/* The seconds of a monotonic clock. */
static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Time `reps` steps of g on device D at point p, on the device's own buffers (after one to warm it: the weights go
 * up once), as CUDA graphs replayed or launch by launch (`graphs`); the device's seconds a step (*wall: the host's,
 * with the inputs' upload and the observed tensors' read back), or a negative value with err. */
static double device_runs(struct kernels_device *D, const struct kernels_point *p, const struct ir_graph *g,
                          int reps, bool graphs, double *wall, char err[IR_ERR_LEN])
{
    struct ir_values *v = ir_values_new(g, 1, err);
    struct kernels_lane *L = v ? kernels_lane_new(p) : NULL;
    double s = -1.0;
    kernels_device_use_graphs(D, graphs);
    if (L && !kernels_device_prepare(D, p, g, err)) {
        kernels_lane_use_device(L, D);
        zero_params(g, v);
        int rc = 0;
        double t0 = 0.0, w0 = 0.0;
        for (int r = 0; !rc && r <= reps; r++) {
            if (r == 1) {
                t0 = kernels_device_seconds(D);
                w0 = wall_s();
            }
            rc = kernels_lane_step(L, g, v, err);
            kernels_lane_forget(L);
        }
        *wall = (wall_s() - w0) / reps;
        s = rc ? -1.0 : (kernels_device_seconds(D) - t0) / reps;
    }
    kernels_device_release(D, v);
    kernels_lane_free(L);
    ir_values_free(v);
    kernels_device_use_graphs(D, true);
    return s;
}

/* Bytes a run of g's launches reads at least: every checkpoint constant once, and every input and state. */
static int64_t step_bytes(const struct ir_graph *g)
{
    int64_t b = 0;
    for (ir_tid t = 0; t < g->ntensors; t++)
        if (g->tensors[t].checkpoint || g->tensors[t].role == IR_ROLE_INPUT || g->tensors[t].role == IR_ROLE_PARAM)
            b += kernels_device_tensor_bytes(g, t);
    return b;
}

/* One figure line: the time, the bytes, GB/s and the fraction of the chip's bandwidth. */
static void device_line(const char *what, double s, int64_t bytes, const struct kernels_chip *chip)
{
    double gbs = s > 0 ? (double)bytes / s / 1e9 : 0.0;
    printf("%-40s %10.1f us  %8.1f MB  %8.1f GB/s  %5.1f%% of %s\n", what, 1e6 * s, (double)bytes / 1e6, gbs,
           chip ? 100.0 * gbs / chip->bandwidth_gbs : 0.0, chip ? chip->label : "an unknown chip's bandwidth");
}

/* Each GEMV block format at the decode sizes (outputs × inputs). */
static int bench_device_gemv(struct kernels_device *D, const struct kernels_chip *chip)
{
    static const enum ir_format formats[] = {IR_FMT_Q8_0, IR_FMT_Q4_0, IR_FMT_Q4_K, IR_FMT_Q6_K, IR_FMT_F16, IR_FMT_BF16};
    static const int64_t sizes[][2] = {{4096, 4096}, {4096, 14336}, {14336, 4096}, {151936, 4096}};
    struct kernels_point p = {chip ? chip : kernels_chip_find("h200"), KERNELS_ACTS_DEQUANT, SHIM_KEEP_F16,
                              SHIM_KEEP_F32};
    int rc = 0;
    for (size_t f = 0; f < sizeof formats / sizeof *formats; f++)
        for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
            long long n = sizes[z][0], k = sizes[z][1];
            char text[512], err[IR_ERR_LEN], what[96];
            snprintf(text, sizeof text,
                     "graph gemv family=bench mode=decode\ntensor x f32 1x%lld input\n"
                     "tensor w f32 %lldx%lld constant %s transposed\ntensor y f32 1x%lld activation observed\n"
                     "op y = matmul(x, w) m=1 k=%lld n=%lld\n",
                     k, k, n, ir_format_name(formats[f]), n, k, n);
            struct ir_graph *g = ir_parse(text, strlen(text), "gemv", err);
            double wall = 0.0, s = g ? device_runs(D, &p, g, 20, true, &wall, err) : -1.0;
            snprintf(what, sizeof what, "gemv %s %lldx%lld", ir_format_name(formats[f]), n, k);
            if (s < 0) {
                fprintf(stderr, "bench_kernels: %s: %s\n", what, err);
                rc = 1;
            } else
                device_line(what, s, step_bytes(g) + 4 * n, chip);
            ir_graph_free(g);
        }
    return rc;
}

/* A whole decode step of model (4096 positions of cache) under shim_name, rewritten by the optimizer. */
static int bench_device_step(struct kernels_device *D, const char *model, const char *shim_name,
                             const struct kernels_chip *chip)
{
    char err[IR_ERR_LEN], what[96];
    struct models_options o = models_default_options();
    o.ctx = 4096;
    struct ir_graph *g = models_lift(models_find(model), &o, err);
    struct shim *shim = g ? shim_lookup(shim_name, err) : NULL;
    struct kernels_point p;
    struct rules_optimized r;
    double s = -1.0;
    if (shim && !kernels_point_of(shim, &p, err) && !rules_optimize(g, shim, NULL, 0, &r, err)) {
        for (int graphs = 1; graphs >= 0; graphs--) {
            struct kernels_device_stats a, b;
            double wall = 0.0;
            kernels_device_stats_get(D, &a);
            s = device_runs(D, &p, r.graph, 5, graphs, &wall, err);
            kernels_device_stats_get(D, &b);
            if (s < 0)
                break;
            snprintf(what, sizeof what, "%s decode step, %d launches%s", model, (int)r.graph->nops,
                     graphs ? " (graph)" : "");
            device_line(what, s, step_bytes(r.graph), chip);
            printf("    host wall %.1f us a step; %lld captures, %lld instantiated, %lld replays; "
                   "%.1f MB up, %.3f MB back over %lld steps\n",
                   1e6 * wall, (long long)(b.captures - a.captures), (long long)(b.instantiations - a.instantiations),
                   (long long)(b.replays - a.replays),
                   (double)(b.uploaded - a.uploaded) / 1e6, (double)(b.read - a.read) / 1e6,
                   (long long)(b.steps - a.steps));
        }
        rules_optimized_free(&r);
    }
    if (s < 0)
        fprintf(stderr, "bench_kernels: %s under %s: %s\n", model, shim_name, err);
    shim_free(shim);
    ir_graph_free(g);
    return s < 0;
}

/* The device's figures, or one line saying why there are none. */
static int bench_device(void)
{
    char err[IR_ERR_LEN];
    struct kernels_device *D = kernels_device_count(err) > 0 ? kernels_device_open(0, err) : NULL;
    if (!D) {
        printf("bench_kernels: the device figures skipped: %s\n", err);
        return 0;
    }
    const struct kernels_chip *chip = chip_of_device(kernels_device_backend(D));
    printf("device %s (%s: %d GB/s)\n", kernels_device_backend(D), chip ? chip->label : "not in the chip table",
           chip ? (int)chip->bandwidth_gbs : 0);
    int rc = bench_device_gemv(D, chip);
    char shim[64];
    snprintf(shim, sizeof shim, "cuda-lane:%s:int8", chip ? chip->name : "h200");
    rc |= bench_device_step(D, "qwen3-8b", shim, chip);
    rc |= bench_device_step(D, "llama3-8b", shim, chip);
    kernels_device_close(D);
    return rc;
}

/* bench_kernels [--device]: the host lane's figures and the device's; --device: the device's only. */
int main(int argc, char **argv)
{
    bool device_only = argc > 1 && strcmp(argv[1], "--device") == 0;
    if (argc > 2 || (argc == 2 && !device_only)) {
        fprintf(stderr, "usage: bench_kernels [--device]\n");
        return 2;
    }
    int rc = 0;
    if (!device_only) {
        rc |= bench("tiny-qwen3", "cuda-lane:h200:int8", 1, 9);
        rc |= bench("tiny-qwen3", "cuda-lane:h200:dequant", 1, 9);
        rc |= bench("qwen3-0.6b", "cuda-lane:h200:int8", 2, 1);
        rc |= bench("qwen3-0.6b", "cuda-lane:h200:dequant", 2, 1);
    }
    rc |= bench_device();
    return rc;
}
