/* kernels/sim_runtime.cc — the CUDA runtime calls the device runner makes, on the host for the simulated device:
 * allocations (host memory, poisoned), copies and sets, one in-order stream whose work runs at once (or is recorded
 * while the stream captures), events (wall-clock), graphs (the recorded work, replayed in order) and errors (a
 * launch's failure kept for cudaGetLastError, its message for cudaGetErrorString). */
#include "sim_cuda.h"

#include <time.h>

#include <vector>

/* Stream work: a copy, a set or a launch. */
struct sim_op {
    enum { COPY, SET, LAUNCH } kind;
    void *dst;
    const void *src;
    size_t n;
    int byte;
    sim_launch_rec launch;
};
struct sim_stream {
    bool capturing;
    std::vector<sim_op> ops;
};
struct sim_graph {
    std::vector<sim_op> ops;
};
struct sim_event {
    double seconds;
};

namespace {

/* The simulated device's memory: 16 GiB, its allocations (host memory), the error cudaGetLastError returns next,
 * and the last launch failure's words. */
const size_t MEMORY = (size_t)16 << 30;
struct region {
    unsigned char *p;
    size_t n;
};
std::vector<region> regions;
size_t allocated;
cudaError_t pending = cudaSuccess;
char message[480] = "";

/* Run one piece of stream work now. */
cudaError_t run_op(const sim_op &op)
{
    switch (op.kind) {
    case sim_op::COPY: memmove(op.dst, op.src, op.n); return cudaSuccess;
    case sim_op::SET: memset(op.dst, op.byte, op.n); return cudaSuccess;
    case sim_op::LAUNCH: return sim_run(op.launch);
    }
    return cudaErrorInvalidValue;
}

/* Stream work: recorded while s captures, else run now (a launch's failure kept for cudaGetLastError). */
cudaError_t submit(cudaStream_t s, sim_op op)
{
    if (!s)
        return cudaErrorInvalidValue;
    if (s->capturing) {
        s->ops.push_back(std::move(op));
        return cudaSuccess;
    }
    cudaError_t e = run_op(op);
    if (op.kind == sim_op::LAUNCH && e != cudaSuccess) {
        pending = e;
        return cudaSuccess; /* a launch's error comes from cudaGetLastError, as a device's does */
    }
    return e;
}

/* Seconds on a monotonic clock. */
double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

} /* namespace */

cudaError_t sim_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return cudaErrorLaunchFailure;
}

int sim_region_count(void) { return (int)regions.size(); }

unsigned char *sim_region(int i, size_t *n)
{
    *n = regions[(size_t)i].n;
    return regions[(size_t)i].p;
}

void sim_launch(const char *kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t s, std::function<void()> body)
{
    sim_op op = {sim_op::LAUNCH, nullptr, nullptr, 0, 0, {kernel, grid, block, smem, std::move(body)}};
    cudaError_t e = submit(s, std::move(op));
    if (e != cudaSuccess)
        pending = e;
}

cudaError_t cudaGetDeviceCount(int *n)
{
    *n = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int index) { return index == 0 ? cudaSuccess : cudaErrorInvalidDevice; }

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int index)
{
    if (index != 0)
        return cudaErrorInvalidDevice;
    snprintf(prop->name, sizeof prop->name, "fusecheck simulator");
    prop->major = 9;
    prop->minor = 0;
    return cudaSuccess;
}

/* The opt-in shared memory a block may ask for: the most any chip of the table gives; each launch is held to its
 * own chip's limit by the launch engine. */
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int index)
{
    (void)index;
    *value = attr == cudaDevAttrMaxSharedMemoryPerBlockOptin ? 227 * 1024 : 0;
    return cudaSuccess;
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, const void *kernel)
{
    (void)kernel;
    a->sharedSizeBytes = 0; /* the launch engine counts the static shared memory itself */
    return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void *kernel, cudaFuncAttribute attr, int value)
{
    (void)kernel;
    (void)attr;
    return value >= 0 ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    *total = MEMORY;
    *free_bytes = MEMORY - allocated;
    return cudaSuccess;
}

/* An allocation of n bytes, poisoned (0xff: NaN) as a device's memory holds whatever it held. */
cudaError_t cudaMalloc(void **p, size_t n)
{
    *p = nullptr;
    if (n > MEMORY - allocated)
        return cudaErrorMemoryAllocation;
    unsigned char *m = (unsigned char *)malloc(n ? n : 1);
    if (!m)
        return cudaErrorMemoryAllocation;
    memset(m, 0xff, n);
    regions.push_back({m, n});
    allocated += n;
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    for (size_t i = 0; i < regions.size(); i++)
        if (regions[i].p == p) {
            allocated -= regions[i].n;
            free(p);
            regions.erase(regions.begin() + (long)i);
            return cudaSuccess;
        }
    return p ? cudaErrorInvalidValue : cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind, cudaStream_t s)
{
    (void)kind;
    return submit(s, {sim_op::COPY, dst, src, n, 0, {}});
}

cudaError_t cudaMemsetAsync(void *dst, int byte, size_t n, cudaStream_t s)
{
    return submit(s, {sim_op::SET, dst, nullptr, n, byte, {}});
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    (void)flags;
    *s = new sim_stream{false, {}};
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    delete s;
    return cudaSuccess;
}

/* The stream's work is done as it is submitted; a capturing stream cannot be waited on (as on a device). */
cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    if (s && s->capturing)
        return cudaErrorStreamCaptureUnsupported;
    cudaError_t e = pending;
    pending = cudaSuccess;
    return e;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    *e = new sim_event{0.0};
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    delete e;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    if (s && s->capturing)
        return cudaErrorStreamCaptureUnsupported; /* the runner times outside its captures */
    e->seconds = now();
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    *ms = (float)(1e3 * (b->seconds - a->seconds));
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode)
{
    (void)mode;
    if (s->capturing)
        return cudaErrorStreamCaptureUnsupported;
    s->capturing = true;
    s->ops.clear();
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
    *g = nullptr;
    if (!s->capturing)
        return cudaErrorStreamCaptureUnsupported;
    s->capturing = false;
    *g = new sim_graph{std::move(s->ops)};
    s->ops.clear();
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags)
{
    (void)flags;
    *exec = new sim_graph{g->ops};
    return cudaSuccess;
}

/* The graph's work replayed in order; the first failure stops it and is the launch's word. */
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s)
{
    if (s->capturing)
        return cudaErrorStreamCaptureUnsupported;
    for (const sim_op &op : exec->ops) {
        cudaError_t e = run_op(op);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    delete g;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    delete exec;
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = pending;
    pending = cudaSuccess;
    return e;
}

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorLaunchFailure: return message;
    }
    return "unknown error";
}
