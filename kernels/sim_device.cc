/* kernels/sim_device.cc — the simulated device's launch engine. A launch runs its blocks one at a time; a block's
 * threads are fibers (ucontext) that run until they reach a barrier, a warp exchange or their end, then the next
 * runs; once every thread waits, warps exchange values at shuffles and the block passes __syncthreads. What a GPU
 * would not say is an error naming the kernel, the block and the threads:
 *   - a __syncthreads some threads of the block reach and others do not (returned, or at another one);
 *   - a shuffle or __syncwarp whose mask names a lane that has returned or waits elsewhere, or leaves out a lane
 *     that takes part;
 *   - a write past the launch's dynamic shared memory (a canary checked after every thread's turn);
 *   - a read or write past the end of a device buffer (each ends at a guard page: kernels/sim_runtime.cc);
 *   - a launch asking more shared memory (its dynamic bytes and its own kernel's static __shared__ bytes, as the
 *     kernel declares them: KC_SHARED) than the chip gives a block (the chip table's limit: the device would refuse
 *     the launch);
 *   - a race: each launch runs under several schedules (threads in order, reversed, and a seeded random order
 *     drawn afresh at every barrier), each with shared memory poisoned with its own bytes, and must leave the same
 *     bits in device memory; a read of shared memory no thread wrote shows there too. */
#include "sim_cuda.h"

#include <sys/mman.h>
#include <ucontext.h>

#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define SIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SIM_ASAN 1
#endif
#endif
#ifdef SIM_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

sim_uint3 sim_thread_idx, sim_block_idx, sim_block_dim, sim_grid_dim;

#if defined(__x86_64__)
/* A switch of stacks on x86-64 (System V): the callee-saved registers, the SSE and x87 control words pushed on the
 * current stack, its pointer saved to *save, then the same popped from `to` (ucontext's switch, without its system
 * call for the signal mask). A new stack starts as if it had been switched away from at its entry function. */
extern "C" void sim_switch(void **save, void *to);
__asm__(".text\n"
        ".globl sim_switch\n"
        ".type sim_switch,@function\n"
        "sim_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  subq $8, %rsp\n  stmxcsr (%rsp)\n  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n  fldcw 4(%rsp)\n  addq $8, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size sim_switch,.-sim_switch\n");
#define SIM_SWITCH 1
#endif

/* Every static __shared__ byte of the kernels (the section's bounds, from the linker). */
extern "C" char __start_fusecheck_sim_shared[] __attribute__((weak));
extern "C" char __stop_fusecheck_sim_shared[] __attribute__((weak));

namespace {

/* Threads of a block at most; bytes of the canary past a block's dynamic shared memory; a fiber's stack. */
const int MAX_THREADS = 1024;
const size_t CANARY = 256;
#ifdef SIM_ASAN
const size_t STACK = 512 * 1024;
#else
const size_t STACK = 128 * 1024;
#endif

/* What a fiber is doing: running (or ready), waiting at __syncthreads, at a warp exchange, or done. */
enum state { RUN, BAR, WARP, DONE };

struct fiber {
#ifdef SIM_SWITCH
    void *sp;          /* its stack pointer while switched out */
#else
    ucontext_t ctx;
#endif
    char *stack;
    state st = RUN;
    sim_uint3 tid;
    int line;          /* the __syncthreads it waits at */
    unsigned mask;     /* the warp exchange's mask, and its partner offset (-1: __syncwarp) */
    int xor_lanes;
    size_t size;
    unsigned char v[16], out[16];
    void *fake;        /* ASan's fake stack while switched out */
};

/* The engine's settings: schedules a launch runs under, the random schedule's seed, the chip's name and the most
 * shared memory it gives a block. */
struct settings {
    int schedules = 3;
    uint64_t seed = 1;
    char chip[64] = "h100";
    int64_t smem_limit = 227 * 1024;
};
settings cfg;

/* The static __shared__ variables a kernel's launches have declared: their addresses, and their bytes (each 16-byte
 * aligned, as the section lays them out). */
struct kernel_statics {
    const char *kernel;
    std::vector<const void *> vars;
    int64_t bytes = 0;
};
std::vector<kernel_statics> statics_seen;

/* The statics of `kernel` (made empty when it has not run). */
kernel_statics *statics_of(const char *kernel)
{
    for (kernel_statics &k : statics_seen)
        if (strcmp(k.kernel, kernel) == 0)
            return &k;
    statics_seen.push_back(kernel_statics{kernel, {}, 0});
    return &statics_seen.back();
}

/* The block running: its fibers, the running one, the scheduler's context, the kernel's body and name, its dynamic
 * shared memory (with the canary past it) and the first error a fiber raised. */
struct block_run {
    std::vector<fiber> f;
    int n = 0, cur = -1;
#ifdef SIM_SWITCH
    void *sched_sp;
#else
    ucontext_t sched;
#endif
    const std::function<void()> *body = nullptr;
    const sim_launch_rec *rec = nullptr;
    kernel_statics *statics = nullptr; /* the launch's kernel's */
    std::vector<unsigned char> dyn;
    std::vector<unsigned char> canary;
    char error[400] = "";
    const void *sched_bottom = nullptr;
    size_t sched_size = 0;
    /* a watched word: the last block and thread that changed it */
    const unsigned char *watch = nullptr;
    unsigned char watched[4];
    char writer[96] = "";
};
block_run B;

/* xorshift64*: the random schedule's draws. */
uint64_t next_random(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* The threads of `ids` as ranges: "0-31, 64". */
void thread_ranges(const std::vector<int> &ids, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = 0;
    for (size_t i = 0; i < ids.size() && at + 24 < cap;) {
        size_t j = i;
        while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1)
            j++;
        at += (size_t)snprintf(out + at, cap - at, i ? ", %d" : "%d", ids[i]);
        if (j > i)
            at += (size_t)snprintf(out + at, cap - at, "-%d", ids[j]);
        i = j + 1;
    }
}

/* Raise an error naming the kernel and block (the first one wins). */
void raise(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void raise(const char *fmt, ...)
{
    if (B.error[0])
        return;
    int at = snprintf(B.error, sizeof B.error, "%s block (%u,%u,%u): ", B.rec->kernel, sim_block_idx.x,
                      sim_block_idx.y, sim_block_idx.z);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(B.error + at, sizeof B.error - (size_t)at, fmt, ap);
    va_end(ap);
}

/* ── Switching between the scheduler and the fibers ──────────────────────────────────────────────────────── */

/* Back to the scheduler from the running fiber (for good when done). */
void leave(bool done)
{
    fiber &me = B.f[(size_t)B.cur];
#ifdef SIM_ASAN
    __sanitizer_start_switch_fiber(done ? nullptr : &me.fake, B.sched_bottom, B.sched_size);
#else
    (void)done;
#endif
#ifdef SIM_SWITCH
    sim_switch(&me.sp, B.sched_sp);
#else
    swapcontext(&me.ctx, &B.sched);
#endif
#ifdef SIM_ASAN
    __sanitizer_finish_switch_fiber(B.f[(size_t)B.cur].fake, &B.sched_bottom, &B.sched_size);
#endif
}

/* A fiber's start: the kernel's body for its thread, then done. */
void trampoline()
{
#ifdef SIM_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &B.sched_bottom, &B.sched_size);
#endif
    (*B.body)();
    B.f[(size_t)B.cur].st = DONE;
    leave(true);
}

/* Run fiber i until it waits or ends. */
void enter(int i)
{
    fiber &f = B.f[(size_t)i];
    B.cur = i;
    sim_thread_idx = f.tid;
    sim_in_kernel = true;
#ifdef SIM_ASAN
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, f.stack, STACK);
#endif
#ifdef SIM_SWITCH
    sim_switch(&B.sched_sp, f.sp);
#else
    swapcontext(&B.sched, &f.ctx);
#endif
#ifdef SIM_ASAN
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
    sim_in_kernel = false;
    B.cur = -1;
}

/* Fiber i made ready to start the kernel (its stack mapped once, kept for later blocks). */
int fiber_start(int i, sim_uint3 tid)
{
    fiber &f = B.f[(size_t)i];
    if (!f.stack) {
        void *s = mmap(nullptr, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (s == MAP_FAILED)
            return -1;
        f.stack = (char *)s;
    }
#ifdef SIM_ASAN
    if (f.st != DONE) /* a fiber left at an error (or new) keeps its frames' poison; one that returned cleared it */
        ASAN_UNPOISON_MEMORY_REGION(f.stack, STACK);
#endif
    f.st = RUN;
    f.tid = tid;
    f.fake = nullptr;
#ifdef SIM_SWITCH
    /* from the top: a return address for the entry (never used), the entry, six registers, the control words */
    uint64_t *top = (uint64_t *)(f.stack + STACK);
    top[-1] = 0;
    top[-2] = (uint64_t)(uintptr_t)trampoline;
    for (int k = 3; k <= 8; k++)
        top[-k] = 0;
    top[-9] = 0x1f80u | ((uint64_t)0x037fu << 32); /* MXCSR's and the x87 control word's defaults */
    f.sp = top - 9;
#else
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = STACK;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, trampoline, 0);
#endif
    return 0;
}

/* ── Checks after a thread's turn ────────────────────────────────────────────────────────────────────────── */

/* Whether the canary past the dynamic shared memory still holds its bytes; an error naming the thread if not. */
void check_canary(int i)
{
    size_t n = B.rec->smem;
    if (memcmp(B.dyn.data() + n, B.canary.data(), CANARY) == 0)
        return;
    size_t at = 0;
    while (at < CANARY && B.dyn[n + at] == B.canary[at])
        at++;
    raise("thread %d wrote byte %zu of its dynamic shared memory, past the %zu bytes the launch asks for", i, n + at,
          n);
    memcpy(B.dyn.data() + n, B.canary.data(), CANARY);
}

/* Whether thread i reached past a device buffer's end (through its guard page); an error naming the thread if so. */
void check_guard(int i)
{
    char what[160];
    if (sim_guard_hit(what, sizeof what))
        raise("thread %d %s", i, what);
}

/* The watched word changed by thread i: it is the writer so far. */
void check_watch(int i)
{
    if (!B.watch || memcmp(B.watch, B.watched, 4) == 0)
        return;
    memcpy(B.watched, B.watch, 4);
    snprintf(B.writer, sizeof B.writer, "block (%u,%u,%u) thread %d", sim_block_idx.x, sim_block_idx.y,
             sim_block_idx.z, i);
}

/* ── Warp exchanges and barriers, once every thread waits ────────────────────────────────────────────────── */

/* What lane `idx` of the block is doing, for an error. */
const char *doing(int idx)
{
    if (idx >= B.n)
        return "does not exist (the block is not whole warps)";
    switch (B.f[(size_t)idx].st) {
    case DONE: return "has returned";
    case BAR: return "waits at a __syncthreads";
    case WARP: return "waits at another warp exchange";
    default: return "runs";
    }
}

/* Warp w's exchange completed when every lane its mask names waits at it; 1 done, 0 none waiting, -1 error. */
int warp_resolve(int w)
{
    int base = w * 32, first = -1;
    for (int l = 0; l < 32 && base + l < B.n; l++)
        if (B.f[(size_t)(base + l)].st == WARP) {
            first = base + l;
            break;
        }
    if (first < 0)
        return 0;
    const fiber &a = B.f[(size_t)first];
    std::vector<int> missing;
    const char *why = nullptr;
    for (int l = 0; l < 32; l++) {
        int idx = base + l;
        bool named = (a.mask >> l) & 1u;
        bool waits = idx < B.n && B.f[(size_t)idx].st == WARP;
        if (waits && (B.f[(size_t)idx].mask != a.mask || B.f[(size_t)idx].xor_lanes != a.xor_lanes)) {
            raise("warp %d: lanes %d and %d meet at warp exchanges of different masks (0x%08x, 0x%08x) or offsets",
                  w, first - base, l, a.mask, B.f[(size_t)idx].mask);
            return -1;
        }
        if (named && !waits) {
            missing.push_back(idx);
            why = why ? why : doing(idx);
        }
        if (!named && waits) {
            raise("warp %d: thread %d takes part in a %s over mask 0x%08x, which leaves out its lane %d", w, idx,
                  a.xor_lanes < 0 ? "__syncwarp" : "shuffle", a.mask, l);
            return -1;
        }
    }
    if (!missing.empty()) {
        char who[160];
        thread_ranges(missing, who, sizeof who);
        raise("warp %d: a %s over mask 0x%08x waits for threads %s, and thread %d %s (an inactive lane)", w,
              a.xor_lanes < 0 ? "__syncwarp" : "shuffle", a.mask, who, missing[0], why);
        return -1;
    }
    for (int l = 0; l < 32 && base + l < B.n; l++) {
        fiber &f = B.f[(size_t)(base + l)];
        if (f.st != WARP)
            continue;
        if (a.xor_lanes >= 0) {
            int p = l ^ a.xor_lanes;
            if (p >= 32 || !((a.mask >> p) & 1u)) {
                raise("warp %d: thread %d's shuffle partner, lane %d, is not in the mask 0x%08x", w, base + l, p,
                      a.mask);
                return -1;
            }
            memcpy(f.out, B.f[(size_t)(base + p)].v, f.size);
        }
        f.st = RUN;
    }
    return 1;
}

/* The block's barrier passed when every thread waits at the same __syncthreads; 1 passed, 0 all done, -1 error. */
int barrier_resolve()
{
    std::vector<int> at, other;
    int line = -1, other_line = -1, done = 0;
    for (int i = 0; i < B.n; i++) {
        const fiber &f = B.f[(size_t)i];
        if (f.st == DONE) {
            done++;
            other.push_back(i);
        } else if (line < 0 || f.line == line) {
            line = f.line;
            at.push_back(i);
        } else {
            other_line = f.line;
            other.push_back(i);
        }
    }
    if (at.empty())
        return 0;
    if (!other.empty()) {
        char a[160], o[160];
        thread_ranges(at, a, sizeof a);
        thread_ranges(other, o, sizeof o);
        if (other_line >= 0 && done == 0)
            raise("a divergent __syncthreads: threads %s wait at kernels.cu:%d, threads %s at kernels.cu:%d", a, line,
                  o, other_line);
        else
            raise("a divergent __syncthreads: threads %s wait at kernels.cu:%d, threads %s have returned%s", a, line,
                  o, other_line >= 0 ? " or wait at another" : "");
        return -1;
    }
    for (int i : at)
        B.f[(size_t)i].st = RUN;
    return 1;
}

/* ── A block under a schedule ────────────────────────────────────────────────────────────────────────────── */

/* The bytes schedule s poisons shared memory with: 0xff (NaN), 0x7f (a huge value), random bytes. */
void poison(unsigned char *p, size_t n, int s, uint64_t *rng)
{
    if (s < 2) {
        memset(p, s == 0 ? 0xff : 0x7f, n);
        return;
    }
    for (size_t i = 0; i < n; i += 8) {
        uint64_t r = next_random(rng);
        memcpy(p + i, &r, n - i < 8 ? n - i : 8);
    }
}

/* The order threads run in this round: in order, reversed, or drawn afresh. */
void draw_order(std::vector<int> &order, int s, uint64_t *rng)
{
    for (int i = 0; i < B.n; i++)
        order[(size_t)i] = s == 1 ? B.n - 1 - i : i;
    if (s < 2)
        return;
    for (int i = B.n - 1; i > 0; i--)
        std::swap(order[(size_t)i], order[(size_t)(next_random(rng) % (uint64_t)(i + 1))]);
}

/* Block (bx, by, bz) of launch r under schedule s: 0, or -1 with B.error set. */
int run_block(const sim_launch_rec &r, unsigned bx, unsigned by, unsigned bz, int s, uint64_t *rng)
{
    sim_block_idx = {bx, by, bz};
    poison((unsigned char *)__start_fusecheck_sim_shared,
           (size_t)(__stop_fusecheck_sim_shared - __start_fusecheck_sim_shared), s, rng);
    poison(B.dyn.data(), B.dyn.size(), s, rng);
    memcpy(B.canary.data(), B.dyn.data() + r.smem, CANARY);
    for (int i = 0; i < B.n; i++) {
        sim_uint3 tid = {(unsigned)i % r.block.x, (unsigned)i / r.block.x % r.block.y,
                         (unsigned)i / (r.block.x * r.block.y)};
        if (fiber_start(i, tid)) {
            raise("no memory for thread %d's stack", i);
            return -1;
        }
    }
    std::vector<int> order((size_t)B.n);
    for (;;) {
        draw_order(order, s, rng);
        for (int i : order) {
            if (B.f[(size_t)i].st != RUN)
                continue;
            enter(i);
            check_canary(i);
            check_guard(i);
            check_watch(i);
            if (B.error[0])
                return -1;
        }
        int released = 0;
        for (int w = 0; w * 32 < B.n; w++) {
            int rc = warp_resolve(w);
            if (rc < 0)
                return -1;
            released |= rc;
        }
        if (released)
            continue;
        int rc = barrier_resolve();
        if (rc <= 0)
            return rc;
    }
}

/* Every block of launch r in order under schedule s. */
int run_blocks(const sim_launch_rec &r, int s)
{
    uint64_t rng = cfg.seed * 0x9e3779b97f4a7c15ull + (uint64_t)s + 1;
    for (unsigned z = 0; z < r.grid.z; z++)
        for (unsigned y = 0; y < r.grid.y; y++)
            for (unsigned x = 0; x < r.grid.x; x++)
                if (run_block(r, x, y, z, s, &rng))
                    return -1;
    return 0;
}

/* The schedules' names, for errors. */
const char *const schedule_names[] = {"in order", "reversed", "random"};

/* Device memory's bytes now, region by region. */
void save(std::vector<std::vector<unsigned char>> &out)
{
    out.resize((size_t)sim_region_count());
    for (int i = 0; i < sim_region_count(); i++) {
        size_t n;
        unsigned char *p = sim_region(i, &n);
        out[(size_t)i].resize(n);
        memcpy(out[(size_t)i].data(), p, n);
    }
}

/* Device memory set back to `from`. */
void restore(const std::vector<std::vector<unsigned char>> &from)
{
    for (int i = 0; i < sim_region_count() && (size_t)i < from.size(); i++) {
        size_t n;
        unsigned char *p = sim_region(i, &n);
        memcpy(p, from[(size_t)i].data(), n < from[(size_t)i].size() ? n : from[(size_t)i].size());
    }
}

/* The first word of device memory that differs from `ref`: its region and byte offset; false when none does. */
bool first_difference(const std::vector<std::vector<unsigned char>> &ref, int *region, size_t *at)
{
    for (int i = 0; i < sim_region_count() && (size_t)i < ref.size(); i++) {
        size_t n;
        unsigned char *p = sim_region(i, &n);
        if (memcmp(p, ref[(size_t)i].data(), n) == 0)
            continue;
        size_t k = 0;
        while (k < n && p[k] == ref[(size_t)i][k])
            k++;
        *region = i;
        *at = k & ~(size_t)3;
        return true;
    }
    return false;
}

/* The last writer of word `at` of region `region` under schedule s, run from `before`, into out. */
void last_writer(const sim_launch_rec &r, int s, const std::vector<std::vector<unsigned char>> &before, int region,
                 size_t at, char *out, size_t cap)
{
    size_t n;
    restore(before);
    B.watch = sim_region(region, &n) + at;
    memcpy(B.watched, B.watch, 4);
    snprintf(B.writer, sizeof B.writer, "no thread");
    run_blocks(r, s);
    B.error[0] = 0;
    snprintf(out, cap, "%s", B.writer);
    B.watch = nullptr;
}

/* Whether the launch's dynamic shared memory and its kernel's static shared memory fit the chip's per-block bytes;
 * an error naming the kernel if not, as the device would refuse the launch. */
bool smem_fits(const sim_launch_rec &r)
{
    int64_t statics = B.statics->bytes;
    if ((int64_t)r.smem + statics <= cfg.smem_limit)
        return true;
    raise("the launch asks %lld bytes of shared memory a block (%zu dynamic, %lld static), over the %lld %s gives "
          "one: the device would refuse it",
          (long long)r.smem + statics, r.smem, (long long)statics, (long long)cfg.smem_limit, cfg.chip);
    return false;
}

/* The launch's geometry and shared memory checked as a device checks them before it runs (the static shared memory
 * its kernel has declared so far; a variable first declared during the launch is checked as it is). */
int check_launch(const sim_launch_rec &r)
{
    int64_t threads = (int64_t)r.block.x * r.block.y * r.block.z;
    sim_block_idx = {0, 0, 0};
    if (threads < 1 || threads > MAX_THREADS || r.grid.x < 1 || r.grid.y < 1 || r.grid.z < 1) {
        raise("a launch of %lld threads a block and a grid of %u x %u x %u (1 to 1024 threads, a block at least)",
              (long long)threads, r.grid.x, r.grid.y, r.grid.z);
        return -1;
    }
    if (!smem_fits(r))
        return -1;
    B.n = (int)threads;
    if (B.f.size() < (size_t)threads)
        B.f.resize((size_t)threads);
    B.dyn.assign(r.smem + CANARY, 0);
    B.canary.assign(CANARY, 0);
    return 0;
}

} /* namespace */

void sim_syncthreads(int line)
{
    B.f[(size_t)B.cur].st = BAR;
    B.f[(size_t)B.cur].line = line;
    leave(false);
}

/* Wait at a warp exchange: a __syncwarp (xor_lanes -1) or a shuffle of `size` bytes. */
static void warp_wait(unsigned mask, const void *v, size_t size, int xor_lanes)
{
    fiber &f = B.f[(size_t)B.cur];
    f.st = WARP;
    f.mask = mask;
    f.xor_lanes = xor_lanes;
    f.size = size;
    if (size)
        memcpy(f.v, v, size);
    leave(false);
}

void sim_syncwarp(unsigned mask) { warp_wait(mask, nullptr, 0, -1); }

void sim_shfl_xor(unsigned mask, const void *v, void *out, size_t size, int xor_lanes)
{
    if (size > sizeof B.f[0].v)
        abort(); /* the kernels shuffle floats */
    warp_wait(mask, v, size, xor_lanes & 31);
    memcpy(out, B.f[(size_t)B.cur].out, size);
}

void *sim_dynamic_shared(void) { return B.dyn.data(); }

void sim_static_shared(const void *p, size_t n)
{
    kernel_statics *k = B.statics;
    for (const void *v : k->vars)
        if (v == p)
            return;
    k->vars.push_back(p);
    k->bytes += (int64_t)((n + 15) & ~(size_t)15);
    smem_fits(*B.rec);
}

cudaError_t sim_run(const sim_launch_rec &r)
{
    B.rec = &r;
    B.body = &r.body;
    B.statics = statics_of(r.kernel);
    B.error[0] = 0;
    sim_grid_dim = {r.grid.x, r.grid.y, r.grid.z};
    sim_block_dim = {r.block.x, r.block.y, r.block.z};
    if (check_launch(r))
        return sim_fail("%s", B.error);
    if (cfg.schedules <= 1)
        return run_blocks(r, 0) ? sim_fail("%s", B.error) : cudaSuccess;
    static std::vector<std::vector<unsigned char>> before, first; /* kept: their pages stay mapped between launches */
    save(before);
    if (run_blocks(r, 0))
        return sim_fail("%s", B.error);
    save(first);
    for (int s = 1; s < cfg.schedules && s < 3; s++) {
        restore(before);
        if (run_blocks(r, s))
            return sim_fail("%s", B.error);
        int region;
        size_t at;
        if (first_difference(first, &region, &at)) {
            char w0[96], w1[96];
            last_writer(r, 0, before, region, at, w0, sizeof w0);
            last_writer(r, s, before, region, at, w1, sizeof w1);
            restore(first);
            return sim_fail("%s: the schedules %s and %s leave different bits at byte %zu of device buffer %d "
                            "(written last by %s, and by %s): a race between a block's threads, or a read of shared "
                            "memory no thread wrote",
                            r.kernel, schedule_names[0], schedule_names[s], at, region, w0, w1);
        }
    }
    return cudaSuccess;
}

extern "C" void kernels_sim_schedules(int n, uint64_t seed)
{
    cfg.schedules = n < 1 ? 1 : n > 3 ? 3 : n;
    cfg.seed = seed;
}

extern "C" int64_t kernels_sim_static_smem(const char *kernel)
{
    for (const kernel_statics &k : statics_seen)
        if (strcmp(k.kernel, kernel) == 0)
            return k.bytes;
    return -1;
}

extern "C" void kernels_sim_chip(const char *name, int64_t smem_bytes)
{
    snprintf(cfg.chip, sizeof cfg.chip, "%s", name);
    cfg.smem_limit = smem_bytes;
}
