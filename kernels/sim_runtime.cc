/* kernels/sim_runtime.cc — the CUDA runtime calls the device runner makes, on the host for the simulated device:
 * allocations (host pages, poisoned, every buffer ending at a guard page), copies and sets, one in-order stream whose
 * work runs at once (or is recorded while the stream captures), events (wall-clock), graphs (the recorded work,
 * replayed in order) and errors (a launch's failure kept for cudaGetLastError, its message for cudaGetErrorString). */
#include "sim_cuda.h"

#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

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

/* The simulated device's memory: 16 GiB; its allocations (host pages: the mapping, its bytes, where the allocation
 * starts in it and its size) with their buffers and guard pages; the layout the runner is placing; the error
 * cudaGetLastError returns next, and the last launch failure's words. */
const size_t MEMORY = (size_t)16 << 30;
struct buffer {
    unsigned char *p;
    size_t n;
};
struct allocation {
    unsigned char *map, *p;
    size_t mapped, n;
    std::vector<buffer> buffers;
    std::vector<unsigned char *> guards;
};
std::vector<allocation> allocations;
std::vector<buffer> buffers; /* every allocation's, in order (sim_region's) */
std::vector<std::pair<int64_t, int64_t>> layout; /* placed buffers: offset and bytes */
size_t allocated;
cudaError_t pending = cudaSuccess;
char message[480] = "";

/* The page size; n rounded up to it. */
size_t page(void)
{
    static size_t p = (size_t)sysconf(_SC_PAGESIZE);
    return p;
}
size_t page_up(size_t n) { return (n + page() - 1) / page() * page(); }

/* The guard page the access at a falls in: its allocation's buffer it ends (into *b), or null. */
unsigned char *guard_of(const unsigned char *a, const buffer **b)
{
    for (const allocation &m : allocations)
        if (a >= m.map && a < m.map + m.mapped)
            for (size_t i = 0; i < m.guards.size(); i++)
                if (a >= m.guards[i] && a < m.guards[i] + page()) {
                    *b = &m.buffers[i];
                    return m.guards[i];
                }
    return nullptr;
}

/* The first access through a guard page since it was last reported: the page (left open), the byte, whether written,
 * the buffer's size and how far past its end; and the handler SIGSEGV had before. */
struct hit {
    unsigned char *page;
    const unsigned char *at;
    bool write;
    size_t n;
    size_t past;
};
volatile sig_atomic_t hits;
hit first_hit;
struct sigaction before_handler;

/* SIGSEGV: an access by a kernel's thread to a guard page is recorded and the page opened (the thread goes on); any
 * other fault goes to the handler before (and so crashes as it would have). */
void on_fault(int sig, siginfo_t *si, void *ctx)
{
    const buffer *b = nullptr;
    unsigned char *g = sim_in_kernel ? guard_of((const unsigned char *)si->si_addr, &b) : nullptr;
    if (!g) {
        sigaction(SIGSEGV, &before_handler, nullptr);
        return;
    }
    bool write = false;
#if defined(__x86_64__)
    write = (((ucontext_t *)ctx)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
    (void)ctx;
#endif
    if (!hits)
        first_hit = {g, (const unsigned char *)si->si_addr, write, b->n,
                     (size_t)((const unsigned char *)si->si_addr - (b->p + b->n))};
    hits = hits + 1;
    mprotect(g, page(), PROT_READ | PROT_WRITE);
    (void)sig;
}

/* The SIGSEGV handler installed, once. */
void catch_faults(void)
{
    static bool installed;
    if (installed)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &before_handler);
    installed = true;
}

/* The list of every allocation's buffers, made again. */
void list_buffers(void)
{
    buffers.clear();
    for (const allocation &m : allocations)
        buffers.insert(buffers.end(), m.buffers.begin(), m.buffers.end());
}

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

int sim_region_count(void) { return (int)buffers.size(); }

unsigned char *sim_region(int i, size_t *n)
{
    *n = buffers[(size_t)i].n;
    return buffers[(size_t)i].p;
}

volatile bool sim_in_kernel;

bool sim_guard_hit(char *out, size_t cap)
{
    if (!hits)
        return false;
    const hit &h = first_hit;
    snprintf(out, cap, "%s byte %zu past the end of a %zu-byte device buffer (its guard page)",
             h.write ? "wrote" : "read", h.past, h.n);
    for (const allocation &m : allocations) /* every page opened since is closed again */
        for (unsigned char *g : m.guards)
            mprotect(g, page(), PROT_NONE);
    hits = 0;
    return true;
}

extern "C" int64_t kernels_sim_guard_gap(int64_t n, int64_t *align)
{
    int64_t top = (int64_t)page() + 4, at = sim_place(&top, n); /* placed after an odd start, as a layout goes on */
    layout.clear();
    *align = at & -at;
    return (int64_t)page_up((size_t)(at + n)) - (at + n);
}

void sim_layout_begin(void) { layout.clear(); }

int64_t sim_place(int64_t *top, int64_t n)
{
    if (n <= 0)
        return *top;
    /* end - n is aligned as the buffer's elements need: each one's alignment divides its size, so n, and the page */
    int64_t end = (int64_t)page_up((size_t)(*top + n)), at = end - n;
    layout.push_back({at, n});
    *top = end + (int64_t)page();
    return at;
}

void sim_guard(void *mem)
{
    for (allocation &m : allocations)
        if (m.p == mem) {
            m.buffers.clear();
            m.guards.clear();
            for (const std::pair<int64_t, int64_t> &b : layout) {
                unsigned char *g = m.p + page_up((size_t)(b.first + b.second));
                if (g + page() > m.map + m.mapped)
                    continue; /* past the allocation: the layout is not this one's */
                m.buffers.push_back({m.p + b.first, (size_t)b.second});
                m.guards.push_back(g);
                mprotect(g, page(), PROT_NONE);
            }
            layout.clear();
            list_buffers();
            return;
        }
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

/* An allocation of n bytes, poisoned (0xff: NaN) as a device's memory holds whatever it held: host pages, the
 * allocation ending at a guard page (one buffer, until the runner lays out its own: sim_guard). */
cudaError_t cudaMalloc(void **p, size_t n)
{
    *p = nullptr;
    if (n > MEMORY - allocated)
        return cudaErrorMemoryAllocation;
    size_t body = page_up(n ? n : 1), mapped = body + page();
    void *map = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED)
        return cudaErrorMemoryAllocation;
    catch_faults();
    allocation m;
    m.map = (unsigned char *)map;
    m.mapped = mapped;
    m.n = n;
    m.p = m.map + (body - n); /* ending at the guard page: aligned as sim_place's buffers are */
    memset(m.p, 0xff, n);
    m.buffers.push_back({m.p, n});
    m.guards.push_back(m.map + body);
    mprotect(m.map + body, page(), PROT_NONE);
    allocations.push_back(m);
    list_buffers();
    allocated += n;
    *p = m.p;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    for (size_t i = 0; i < allocations.size(); i++)
        if (allocations[i].p == p) {
            allocated -= allocations[i].n;
            munmap(allocations[i].map, allocations[i].mapped);
            allocations.erase(allocations.begin() + (long)i);
            list_buffers();
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
