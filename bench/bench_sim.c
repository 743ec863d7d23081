/* bench/bench_sim.c — the simulated device's cost: one decode step of tiny-qwen3 under cuda-lane:h100:int8, run end
 * to end on the host lane and on the simulated device (`--device sim`: kernels.cu and device.cu on the CPU, every
 * block's threads as fibers) under 3 schedules (every launch run thrice, device memory saved, restored and compared)
 * and under 1; the median of 5 runs of each, in seconds, and the ratios to the host lane. */
#include "bench/bench.h"
#include "kernels/kernels.h"
#include "models/models.h"
#include "rules/rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The median over `runs` of one decode step's time on D (NULL: the host lane); -1 when a run fails. */
static double step_seconds(const struct ir_graph *rw, const struct ir_graph *ref, const struct ir_graph *g,
                           const struct kernels_point *p, struct kernels_device *D, int runs)
{
    double t[16];
    for (int i = 0; i < runs; i++) {
        struct kernels_tol_input in = {rw, ref, g, p, 7, 1, KERNELS_FAULT_NONE, true, D, NULL};
        struct kernels_tol_result r;
        char err[IR_ERR_LEN];
        int rc = kernels_tolerance(&in, &r, err);
        t[i] = r.seconds_lane; /* the lane's (or the device's) own time over the step */
        bool ok = rc == 0 && r.failed == 0;
        kernels_tol_result_free(&r);
        if (!ok) {
            fprintf(stderr, "bench_sim: %s\n", rc ? err : "a step unequal to the host lane");
            return -1;
        }
    }
    qsort(t, (size_t)runs, sizeof *t, bench_cmp_double);
    return t[runs / 2];
}

int main(void)
{
    char err[IR_ERR_LEN];
    struct models_options mo = models_default_options();
    struct ir_graph *g = models_lift(models_find("tiny-qwen3"), &mo, err);
    struct shim *shim = g ? shim_lookup("cuda-lane:h100:int8", err) : NULL;
    struct kernels_point p;
    struct rules_optimized o;
    if (!shim || kernels_point_of(shim, &p, err) || rules_optimize(g, shim, NULL, 0, &o, err)) {
        fprintf(stderr, "bench_sim: %s\n", err);
        return 1;
    }
    struct ir_graph *ref = rules_quantized_lifted(g, shim);
    struct kernels_device *D = kernels_device_open(KERNELS_DEVICE_SIM, err);
    if (!D) {
        fprintf(stderr, "bench_sim: %s\n", err);
        return 1;
    }
    const int runs = 5;
    double host = step_seconds(o.graph, ref, g, &p, NULL, runs);
    kernels_sim_schedules(3, 1);
    double three = step_seconds(o.graph, ref, g, &p, D, runs);
    kernels_sim_schedules(1, 1);
    double one = step_seconds(o.graph, ref, g, &p, D, runs);
    int rc = host < 0 || three < 0 || one < 0;
    if (!rc) {
        printf("tiny-qwen3 decode step under cuda-lane:h100:int8, median of %d runs (the lane's own time "
               "over the step)\n", runs);
        printf("  host lane                 %9.4f s\n", host);
        printf("  simulator, 3 schedules    %9.4f s   %7.1fx the host lane\n", three, three / host);
        printf("  simulator, 1 schedule     %9.4f s   %7.1fx the host lane\n", one, one / host);
    }
    kernels_device_close(D);
    ir_graph_free(ref);
    rules_optimized_free(&o);
    shim_free(shim);
    ir_graph_free(g);
    return rc;
}
