/* kernels/sim_cuda.h — the CUDA built-ins and runtime calls kernels/kernels.cu and kernels/device.cu use, for the
 * simulated device (`--device sim`): the same two sources compiled by the C++ compiler (kernels/sim_runner.cc). A
 * launch runs every block in turn, a block's threads as fibers that switch at __syncthreads, __syncwarp and the
 * shuffles (kernels/sim_device.cc); the runtime calls act on host memory (kernels/sim_runtime.cc). C++ only: private
 * to the kernels module, as arith.inc is. */
#ifndef FUSECHECK_KERNELS_SIM_CUDA_H
#define FUSECHECK_KERNELS_SIM_CUDA_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <functional>
#include <tuple>
#include <utility>

#define KERNELS_SIM 1

/* ── Qualifiers: kernels and device functions are plain functions; __shared__ variables live in one section ── */

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
/* A block's static shared memory: every __shared__ variable in the section fusecheck_sim_shared, which the
 * simulator poisons before each block (a read of a value no thread wrote then differs between schedules). Blocks run
 * one at a time, so one copy serves them all. A kernel's own (KC_SHARED) are charged to its launches as they declare
 * them: each variable's bytes, 16-byte aligned, counted once a kernel. */
#define __shared__ static __attribute__((section("fusecheck_sim_shared"), aligned(16)))

/* ── Indices and geometry ─────────────────────────────────────────────────────────────────────────────────── */

struct sim_uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
/* The running thread's index, its block's, and the launch's dimensions (set by the scheduler at every switch). */
extern sim_uint3 sim_thread_idx, sim_block_idx, sim_block_dim, sim_grid_dim;
#define threadIdx sim_thread_idx
#define blockIdx sim_block_idx
#define blockDim sim_block_dim
#define gridDim sim_grid_dim

/* ── Barriers and warp exchanges: the running fiber waits until its partners arrive ───────────────────────── */

/* __syncthreads at source line `line` (threads of a block must all reach the same one). */
void sim_syncthreads(int line);
/* __syncwarp over `mask`. */
void sim_syncwarp(unsigned mask);
/* A shuffle over `mask`: this lane's `size` bytes at v, its partner's (lane ^ xor) bytes into out. */
void sim_shfl_xor(unsigned mask, const void *v, void *out, size_t size, int xor_lanes);
/* The dynamic shared memory of the running block. */
void *sim_dynamic_shared(void);

#define __syncthreads() sim_syncthreads(__LINE__)
inline void __syncwarp(unsigned mask = 0xffffffffu) { sim_syncwarp(mask); }
template <typename T> inline T __shfl_xor_sync(unsigned mask, T v, int xor_lanes, int width = 32)
{
    (void)width;
    T out;
    sim_shfl_xor(mask, &v, &out, sizeof v, xor_lanes);
    return out;
}

/* The kernels' hooks (kernels/kernels.cu defines nvcc's): a launch, and a block's dynamic shared memory. */
#define KC_DYNAMIC_SHARED(type, name) type *name = (type *)sim_dynamic_shared()
#define KC_LAUNCH(kernel, grid, block, smem, stream) sim_launcher(#kernel, kernel, grid, block, smem, stream)
#define KC_SHARED(type, name, dims) \
    __shared__ type name dims;      \
    sim_static_shared(&name, sizeof name)
/* The running launch's kernel declares the static __shared__ variable of n bytes at p. */
void sim_static_shared(const void *p, size_t n);

/* ── The runtime ──────────────────────────────────────────────────────────────────────────────────────────── */

enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevice = 101,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorLaunchFailure = 719,
};
typedef enum cudaError_t cudaError;
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3 };
enum cudaStreamCaptureMode { cudaStreamCaptureModeThreadLocal = 1 };
enum cudaDeviceAttr { cudaDevAttrMaxSharedMemoryPerBlockOptin = 97 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
#define cudaStreamNonBlocking 0x01u

struct sim_stream;
struct sim_event;
struct sim_graph;
typedef sim_stream *cudaStream_t;
typedef sim_event *cudaEvent_t;
typedef sim_graph *cudaGraph_t;
typedef sim_graph *cudaGraphExec_t;

struct cudaDeviceProp {
    char name[256];
    int major, minor;
};
struct cudaFuncAttributes {
    size_t sharedSizeBytes;
};

cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaSetDevice(int index);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int index);
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int index);
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, const void *kernel);
cudaError_t cudaFuncSetAttribute(const void *kernel, cudaFuncAttribute attr, int value);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total);
cudaError_t cudaMalloc(void **p, size_t n);
cudaError_t cudaFree(void *p);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind, cudaStream_t s);
cudaError_t cudaMemsetAsync(void *dst, int byte, size_t n, cudaStream_t s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b);
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphDestroy(cudaGraph_t g);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGetLastError(void);
const char *cudaGetErrorString(cudaError_t e);

/* ── Between the simulator's runtime (sim_runtime.cc) and its launch engine (sim_device.cc) ──────────────── */

/* A launch: its kernel's name, geometry, dynamic shared memory and the body one thread runs. */
struct sim_launch_rec {
    const char *kernel;
    dim3 grid, block;
    size_t smem;
    std::function<void()> body;
};
/* Run launch r on every block under the engine's schedules: cudaSuccess, or the error sim_fail made. */
cudaError_t sim_run(const sim_launch_rec &r);
/* The launch failure `fmt` says (cudaGetErrorString gives it back): cudaErrorLaunchFailure. */
cudaError_t sim_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The device buffers (each allocation's, or each buffer the runner laid out in one: never their guard pages): their
 * number, and the i-th's bytes (its size into *n). */
int sim_region_count(void);
unsigned char *sim_region(int i, size_t *n);

/* Device memory ends every buffer at a guard page (no access): an access past a buffer's end, from a kernel's thread,
 * is recorded (the page opened so that the thread goes on) until sim_guard_hit reports it: true with what it was
 * into out, the page closed again. */
bool sim_guard_hit(char *out, size_t cap);
/* Whether a kernel's thread runs now (set by the launch engine): only its accesses are let through a guard page. */
extern volatile bool sim_in_kernel;

/* The runner's layout on the simulated device (kernels/device.cu's KD_PLACE, KD_LAYOUT_BEGIN, KD_GUARD): each buffer
 * of n bytes placed at *top to end exactly at a page's end (its start aligned as n is: its elements' alignment), the
 * page after it a guard page, *top
 * past it; the layout begun afresh; the layout's guard pages closed in the allocation at mem, its buffers those
 * sim_region gives. */
int64_t sim_place(int64_t *top, int64_t n);
void sim_layout_begin(void);
void sim_guard(void *mem);
#define KD_PLACE(top, n) sim_place(top, n)
#define KD_LAYOUT_BEGIN() sim_layout_begin()
#define KD_GUARD(mem) sim_guard(mem)

/* A launch handed to the stream: run now, or recorded into the graph the stream is capturing. `body` runs one
 * thread of it (the kernel called with its own copy of the arguments). */
void sim_launch(const char *kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t s, std::function<void()> body);

/* KC_LAUNCH's object: called with the kernel's arguments, it converts them to the kernel's parameter types (as a
 * launch does) and hands the launch to the stream. */
template <typename... P> struct sim_launch_of {
    const char *name;
    void (*fn)(P...);
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
    template <typename... A> void operator()(A &&...a) const
    {
        std::tuple<P...> args(std::forward<A>(a)...);
        void (*f)(P...) = fn;
        sim_launch(name, grid, block, smem, stream, [f, args]() { std::apply(f, args); });
    }
};
template <typename... P>
sim_launch_of<P...> sim_launcher(const char *name, void (*fn)(P...), dim3 grid, dim3 block, size_t smem,
                                 cudaStream_t s)
{
    return sim_launch_of<P...>{name, fn, grid, block, smem, s};
}

#endif
