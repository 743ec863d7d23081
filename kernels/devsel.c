/* kernels/devsel.c — which runner a device is: a CUDA device (kernels/device.cu built by nvcc, its entries
 * kernels_cuda_*; kernels/device_none.c's without CUDA) or the simulated device (the same sources built by the C++
 * compiler, kernels_sim_*: kernels/sim_runner.cc). kernels.h's kernels_device_* pass each call on to the runner the
 * device was opened on; before a simulated launch the simulator is told the lane's chip, whose per-block shared
 * memory it holds each launch to. */
#include "kernels.h"

#include <stdlib.h>

/* A runner's entries, prefix P (kernels/device_names.h). */
#define KD_RUNNER(P)                                                                                                  \
    struct P##_device;                                                                                                \
    bool P##_built(void);                                                                                             \
    const char *P##_archs(void);                                                                                      \
    int P##_count(char err[IR_ERR_LEN]);                                                                              \
    struct P##_device *P##_open(int index, char err[IR_ERR_LEN]);                                                     \
    void P##_close(struct P##_device *D);                                                                             \
    const char *P##_backend(const struct P##_device *D);                                                              \
    int P##_prepare(struct P##_device *D, const struct kernels_point *p, const struct ir_graph *g,                    \
                    char err[IR_ERR_LEN]);                                                                            \
    void P##_plant_fault(struct P##_device *D, enum kernels_fault f);                                                 \
    int P##_launch(struct P##_device *D, struct kernels_lane *L, const struct ir_graph *g, int32_t op,                \
                   struct ir_values *v, char err[IR_ERR_LEN]);                                                        \
    double P##_seconds(const struct P##_device *D);                                                                   \
    void P##_forget(struct P##_device *D);                                                                            \
    int P##_step(struct P##_device *D, struct kernels_lane *L, const struct ir_graph *g, struct ir_values *v,         \
                 char err[IR_ERR_LEN]);                                                                               \
    void P##_use_graphs(struct P##_device *D, bool on);                                                               \
    void P##_release(struct P##_device *D, const struct ir_values *v);                                                \
    void P##_stats_get(const struct P##_device *D, struct kernels_device_stats *out);
KD_RUNNER(kernels_cuda)
KD_RUNNER(kernels_sim)
/* The simulated device's backend name set to "sim" (kernels/sim_runner.cc). */
void kernels_sim_name(struct kernels_sim_device *D);

/* A device: a CUDA device's runner, or the simulated device's (exactly one set). */
struct kernels_device {
    struct kernels_cuda_device *cuda;
    struct kernels_sim_device *sim;
};

bool kernels_device_built(void) { return kernels_cuda_built(); }
const char *kernels_device_archs(void) { return kernels_cuda_archs(); }
int kernels_device_count(char err[IR_ERR_LEN]) { return kernels_cuda_count(err); }

struct kernels_device *kernels_device_open(int index, char err[IR_ERR_LEN])
{
    struct kernels_device *D = calloc(1, sizeof *D);
    if (!D) {
        snprintf(err, IR_ERR_LEN, "out of memory");
        return NULL;
    }
    if (index == KERNELS_DEVICE_SIM) {
        D->sim = kernels_sim_open(0, err);
        if (D->sim)
            kernels_sim_name(D->sim);
    } else {
        D->cuda = kernels_cuda_open(index, err);
    }
    if (!D->sim && !D->cuda) {
        free(D);
        return NULL;
    }
    return D;
}

void kernels_device_close(struct kernels_device *D)
{
    if (!D)
        return;
    if (D->sim)
        kernels_sim_close(D->sim);
    else
        kernels_cuda_close(D->cuda);
    free(D);
}

const char *kernels_device_backend(const struct kernels_device *D)
{
    return !D ? "host" : D->sim ? kernels_sim_backend(D->sim) : kernels_cuda_backend(D->cuda);
}

int kernels_device_prepare(struct kernels_device *D, const struct kernels_point *p, const struct ir_graph *g,
                           char err[IR_ERR_LEN])
{
    return D->sim ? kernels_sim_prepare(D->sim, p, g, err) : kernels_cuda_prepare(D->cuda, p, g, err);
}

void kernels_device_plant_fault(struct kernels_device *D, enum kernels_fault f)
{
    if (D->sim)
        kernels_sim_plant_fault(D->sim, f);
    else
        kernels_cuda_plant_fault(D->cuda, f);
}

/* The simulator told lane L's chip (its name and the shared memory it gives a block). */
static void sim_chip_of(const struct kernels_lane *L)
{
    const struct kernels_chip *c = kernels_lane_point(L)->chip;
    kernels_sim_chip(c->name, (int64_t)c->smem_kib * 1024);
}

int kernels_device_launch(struct kernels_device *D, struct kernels_lane *L, const struct ir_graph *g, int32_t op,
                          struct ir_values *v, char err[IR_ERR_LEN])
{
    if (!D->sim)
        return kernels_cuda_launch(D->cuda, L, g, op, v, err);
    sim_chip_of(L);
    return kernels_sim_launch(D->sim, L, g, op, v, err);
}

double kernels_device_seconds(const struct kernels_device *D)
{
    return D->sim ? kernels_sim_seconds(D->sim) : kernels_cuda_seconds(D->cuda);
}

void kernels_device_forget(struct kernels_device *D)
{
    if (D->sim)
        kernels_sim_forget(D->sim);
    else
        kernels_cuda_forget(D->cuda);
}

int kernels_device_step(struct kernels_device *D, struct kernels_lane *L, const struct ir_graph *g,
                        struct ir_values *v, char err[IR_ERR_LEN])
{
    if (!D->sim)
        return kernels_cuda_step(D->cuda, L, g, v, err);
    sim_chip_of(L);
    return kernels_sim_step(D->sim, L, g, v, err);
}

void kernels_device_use_graphs(struct kernels_device *D, bool on)
{
    if (D->sim)
        kernels_sim_use_graphs(D->sim, on);
    else
        kernels_cuda_use_graphs(D->cuda, on);
}

void kernels_device_release(struct kernels_device *D, const struct ir_values *v)
{
    if (!D)
        return;
    if (D->sim)
        kernels_sim_release(D->sim, v);
    else
        kernels_cuda_release(D->cuda, v);
}

void kernels_device_stats_get(const struct kernels_device *D, struct kernels_device_stats *out)
{
    if (D->sim)
        kernels_sim_stats_get(D->sim, out);
    else
        kernels_cuda_stats_get(D->cuda, out);
}
