/* kernels/device_none.c — the device runner where fusecheck is built without CUDA: every entry says so, and the
 * host lane is the only place launches run. (With CUDA, kernels/device.cu defines these and this file is empty.) */
#include "device_names.h" /* kernels_cuda_*: the CUDA runner's names */
#include "kernels.h"

#ifndef FUSECHECK_HAVE_CUDA

#include <stdio.h>
#include <string.h>

/* The one reason every entry gives. */
static void not_built(char err[IR_ERR_LEN]) { snprintf(err, IR_ERR_LEN, "fusecheck was built without CUDA"); }

bool kernels_device_built(void) { return false; }
const char *kernels_device_archs(void) { return NULL; }

int kernels_device_count(char err[IR_ERR_LEN])
{
    not_built(err);
    return -1;
}

struct kernels_device *kernels_device_open(int index, char err[IR_ERR_LEN])
{
    (void)index;
    not_built(err);
    return NULL;
}

void kernels_device_close(struct kernels_device *D) { (void)D; }
const char *kernels_device_backend(const struct kernels_device *D) { return D ? "cuda" : "host"; }

int kernels_device_prepare(struct kernels_device *D, const struct kernels_point *p, const struct ir_graph *g,
                           char err[IR_ERR_LEN])
{
    (void)D;
    (void)p;
    (void)g;
    not_built(err);
    return -1;
}

void kernels_device_plant_fault(struct kernels_device *D, enum kernels_fault f)
{
    (void)D;
    (void)f;
}

int kernels_device_launch(struct kernels_device *D, struct kernels_lane *L, const struct ir_graph *g, int32_t op,
                          struct ir_values *v, char err[IR_ERR_LEN])
{
    (void)D;
    (void)L;
    (void)g;
    (void)op;
    (void)v;
    not_built(err);
    return -1;
}

void kernels_device_forget(struct kernels_device *D) { (void)D; }

int kernels_device_step(struct kernels_device *D, struct kernels_lane *L, const struct ir_graph *g,
                        struct ir_values *v, char err[IR_ERR_LEN])
{
    (void)D;
    (void)L;
    (void)g;
    (void)v;
    not_built(err);
    return -1;
}

void kernels_device_use_graphs(struct kernels_device *D, bool on)
{
    (void)D;
    (void)on;
}

void kernels_device_release(struct kernels_device *D, const struct ir_values *v)
{
    (void)D;
    (void)v;
}

void kernels_device_stats_get(const struct kernels_device *D, struct kernels_device_stats *out)
{
    (void)D;
    memset(out, 0, sizeof *out);
}

double kernels_device_seconds(const struct kernels_device *D)
{
    (void)D;
    return 0.0;
}

#endif
