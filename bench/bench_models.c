/* bench/bench_models.c — figures for the model zoo: lifting and validating a large model's decode step, evaluating a
 * tiny model's, and one real-sized step with quantized weights (its time and peak memory beside the weights' size). */
#include "bench/bench.h"
#include "models/models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The median of n samples (sorted in place). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Peak resident memory of the process so far, in MiB. */
static double peak_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* Linux reports KiB */
}

/* Bytes of a graph's constants as stored (checkpoint rows in their block format, plain values as f32) and as f32,
 * and of its state tensors. */
static void sizes(const struct ir_graph *g, double *weights, double *f32, double *state)
{
    *weights = *f32 = *state = 0;
    for (int i = 0; i < g->ntensors; i++) {
        const struct ir_tensor *t = &g->tensors[i];
        if (t->role == IR_ROLE_STATE)
            *state += 4.0 * (double)(t->rows * t->cols);
        if (t->role != IR_ROLE_CONSTANT)
            continue;
        *f32 += 4.0 * (double)(t->rows * t->cols);
        if (!t->checkpoint) {
            *weights += 4.0 * (double)(t->rows * t->cols);
            continue;
        }
        int64_t stored = t->transposed ? t->cols : t->rows, width = t->transposed ? t->rows : t->cols;
        *weights += (double)stored * (double)ir_ggml_row_bytes(t->format, width);
    }
}

/* A model lifted in `mode` with ctx rows of context (0: the model's); exits on error. */
static struct ir_graph *lift(const char *name, const char *mode, int64_t ctx)
{
    char err[IR_ERR_LEN];
    struct models_options o = models_default_options();
    o.ctx = ctx;
    const struct models_config *c = models_find(name);
    struct ir_graph *g = NULL;
    if (c && models_parse_mode(mode, &o.mode, err) == 0)
        g = models_lift(c, &o, err);
    if (!g) {
        fprintf(stderr, "bench_models: %s %s: %s\n", name, mode, c ? err : "unknown model");
        exit(1);
    }
    return g;
}

/* Median ms to lift and validate qwen3-8b's decode step (wall clock: on a loaded machine, compare with the CPU
 * figures). */
static void bench_lift(void)
{
    enum { REPS = 31 };
    double t[REPS];
    int ops = 0;
    for (int r = 0; r < REPS; r++) {
        char err[IR_ERR_LEN];
        double t0 = now();
        struct ir_graph *g = lift("qwen3-8b", "decode", 0);
        if (ir_validate(g, err) != 0) {
            fprintf(stderr, "bench_models: qwen3-8b decode invalid: %s\n", err);
            exit(1);
        }
        t[r] = (now() - t0) * 1e3;
        ops = g->nops;
        ir_graph_free(g);
    }
    printf("lift+validate qwen3-8b decode (%d ops): median %.3f ms over %d (target < 20 ms)\n", ops, median(t, REPS),
           REPS);
}

/* Median ms to evaluate tiny-qwen3's decode step. */
static void bench_tiny(void)
{
    enum { REPS = 51 };
    char err[IR_ERR_LEN];
    struct ir_graph *g = lift("tiny-qwen3", "decode", 0);
    double t0 = now();
    struct ir_values *v = ir_values_new(g, 1, err);
    double fill = (now() - t0) * 1e3;
    if (!v) {
        fprintf(stderr, "bench_models: tiny-qwen3 values: %s\n", err);
        exit(1);
    }
    double t[REPS];
    clock_t cpu0 = clock();
    for (int r = 0; r < REPS; r++) {
        t0 = now();
        if (ir_eval(g, v, err) != 0) {
            fprintf(stderr, "bench_models: tiny-qwen3 eval: %s\n", err);
            exit(1);
        }
        t[r] = (now() - t0) * 1e3;
    }
    double cpu = (double)(clock() - cpu0) / CLOCKS_PER_SEC * 1e3 / REPS;
    printf("eval tiny-qwen3 decode: median %.3f ms over %d, %.3f ms CPU each (target < 5 ms); values filled in "
           "%.3f ms\n",
           median(t, REPS), REPS, cpu, fill);
    ir_values_free(v);
    ir_graph_free(g);
}

/* One qwen3-0.6b decode step with q8_0 weights (real dimensions, seeded weights, 256 rows of context): the time to
 * fill its values and to evaluate it, and the process's peak memory beside the quantized weights' size. */
static void bench_real(void)
{
    char err[IR_ERR_LEN];
    const int64_t ctx = 256;
    struct ir_graph *g = lift("qwen3-0.6b", "decode", ctx);
    double weights, f32, state;
    sizes(g, &weights, &f32, &state);
    double before = peak_mib(), t0 = now();
    struct ir_values *v = ir_values_new(g, 1, err);
    double fill = now() - t0;
    if (!v) {
        fprintf(stderr, "bench_models: qwen3-0.6b values: %s\n", err);
        exit(1);
    }
    t0 = now();
    if (ir_eval(g, v, err) != 0) {
        fprintf(stderr, "bench_models: qwen3-0.6b eval: %s\n", err);
        exit(1);
    }
    double step = now() - t0;
    const double mib = 1024.0 * 1024.0;
    printf("qwen3-0.6b decode, q8_0, ctx %lld: values filled in %.2f s, step evaluated in %.3f s\n", (long long)ctx,
           fill, step);
    printf("  quantized weights %.1f MiB (f32 would be %.1f MiB), state %.1f MiB, values hold %.1f MiB\n",
           weights / mib, f32 / mib, state / mib,
           (double)ir_values_bytes(v) / mib);
    printf("  peak RSS %.1f MiB (%.1f MiB before filling): %.2fx the quantized weights and state\n", peak_mib(),
           before, peak_mib() / ((weights + state) / mib));
    ir_values_free(v);
    ir_graph_free(g);
}

int main(void)
{
    bench_lift();
    bench_tiny();
    bench_real();
    return 0;
}
