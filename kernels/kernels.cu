/* kernels/kernels.cu — the CUDA lane's device kernels, one __global__ kernel a stage (launch wrappers come with the
 * device runner). Their arithmetic is kernels/arith.inc's, shared with the host lane (kernels/host.c): a kernel only
 * moves data (indices, shared memory, warp shuffles) and calls it, in host.c's decomposition and combining order,
 * so both lanes compute the same bits: every sum, product and activation is the arith.inc helper host.c calls at the
 * same place (ka_acc, ka_scale, ka_glu, ka_moe_act, ka_axpy, ka_logit, ...), never an inline operator. Built with -fmad=false,
 * as the host build keeps products out of sums. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern "C" {
#include "kernels.h"
}

#include "arith.inc"

#ifndef KERNELS_SIM
/* A launch, a block's dynamic shared memory and a static __shared__ variable (`dims` its array bounds, or nothing)
 * as nvcc spells them (kernels/sim_cuda.h spells them for the simulated device, which builds this file with the C++
 * compiler and charges each launch the static variables its kernel declares). */
#define KC_LAUNCH(kernel, grid, block, smem, stream) kernel<<<grid, block, smem, stream>>>
#define KC_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#define KC_SHARED(type, name, dims) __shared__ type name dims
#endif

/* Every lane of a warp (the shuffles' mask); the most threads a block has. */
#define KC_FULL 0xffffffffu
#define KC_MAX_THREADS 1024

/* ── Indices and the two reductions ──────────────────────────────────────────────────────────────────────── */

/* This thread's first index of a grid-stride loop, and the loop's stride. */
__device__ __forceinline__ int64_t kc_first(void) { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t kc_stride(void) { return (int64_t)gridDim.x * blockDim.x; }

/* This thread's lane in its warp, and its warp in the block. */
__device__ __forceinline__ int kc_lane(void) { return (int)(threadIdx.x % KA_WARP); }
__device__ __forceinline__ int kc_warp(void) { return (int)(threadIdx.x / KA_WARP); }

/* The warp's butterfly at offsets 16, 8, 4, 2, 1 (lane 0's result is ka_warp_sum_host's). */
__device__ __forceinline__ float kc_warp_sum(float v)
{
    for (int o = KA_WARP / 2; o > 0; o >>= 1)
        v = ka_tree_step(v, __shfl_xor_sync(KC_FULL, v, o));
    return v;
}

/* host.c's block_sum: warps' butterflies, then warp 0's over their sums (zero-padded); whole warps. A kernel may call
 * it twice in a row (a layer norm's mean, then its squares): every thread reads `total` before it reaches the next
 * call's first barrier, and only after that barrier is `total` written again. */
__device__ float kc_block_sum(float part)
{
    KC_SHARED(float, wsum, [KA_WARP]);
    KC_SHARED(float, total, );
    float s = kc_warp_sum(part);
    if (kc_lane() == 0)
        wsum[kc_warp()] = s;
    __syncthreads();
    if (kc_warp() == 0) {
        float t = kc_warp_sum(kc_lane() < (int)(blockDim.x / KA_WARP) ? wsum[kc_lane()] : 0.0f);
        if (kc_lane() == 0)
            total = t;
    }
    __syncthreads();
    return total;
}

/* ── Row indices ─────────────────────────────────────────────────────────────────────────────────────────── */

/* A row index as a kernel reads it: the value at `at` (a named index's buffer on the device: a position or a token
 * the step's inputs carry, or a value an earlier launch computed) when at is set, else `fixed`; it must be an integer
 * in [0, hi], else the launch's flag word *bad is set and the kernel writes nothing. Read on the device, it lets a
 * captured step replay at every position. */
struct kc_row {
    const float *at;
    int64_t fixed, hi;
    int *bad;
};

/* The row r names into *out: true, or false with its flag set (not an integer in [0, hi]). */
__device__ __forceinline__ bool kc_row_get(const kc_row &r, int64_t *out)
{
    double d = r.at ? (double)r.at[0] : (double)r.fixed;
    if (!(d >= 0.0 && d <= (double)r.hi) || d != floor(d)) {
        if (r.bad)
            *r.bad = 1;
        return false;
    }
    *out = (int64_t)d;
    return true;
}

/* ── Weights ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* A weight matrix: checkpoint rows of enum ka_format `format` (transposed: a stored row a column), or plain f32. */
struct kc_weights {
    const unsigned char *bytes;
    const float *plain;
    int64_t row_bytes, cols;
    int format;
    int transposed;
};

/* W[t][j], decoded from its block where the checkpoint keeps it (host.c's wmat_at). */
__device__ __forceinline__ float kc_weight(const kc_weights &w, int64_t t, int64_t j)
{
    if (!w.bytes)
        return w.plain[t * w.cols + j];
    if (w.transposed)
        return ka_decode(w.format, w.bytes + j * w.row_bytes, t);
    return ka_decode(w.format, w.bytes + t * w.row_bytes, j);
}

/* Whether a column's weights are integer-coded blocks of one stored row (host.c's wmat_codes). */
__device__ __forceinline__ bool kc_weight_codes(const kc_weights &w)
{
    return w.bytes && w.transposed && ka_integer_codes(w.format);
}

/* ── Products ────────────────────────────────────────────────────────────────────────────────────────────── */

/* host.c's struct product: activations x (rows of xs) or their words q, weights; j reads W[r0, r0 + k) x (c0 + j). */
struct kc_product {
    const float *x;
    int64_t xs;
    const struct ka_qblock *q;
    int words;
    kc_weights w;
    int64_t k, r0, c0;
    int plant; /* a planted fault (enum kernels_fault; tests only) */
};

/* Up to 32 weights of column col from W row r on. */
__device__ __forceinline__ void kc_weight_run(const kc_weights &w, int64_t r, int64_t col, int64_t n, float *out)
{
    for (int64_t t = 0; t < n; t++)
        out[t] = kc_weight(w, r + t, col);
}

/* Chunk c's term of output (i, j): integer codes, int8 words by decoded weights, or f32 (host.c's chunk_term). */
__device__ float kc_chunk_term(const kc_product &p, int64_t i, int64_t j, int64_t c)
{
    int64_t t0 = c * KA_QBLOCK, n = p.k - t0 < KA_QBLOCK ? p.k - t0 : KA_QBLOCK, col = p.c0 + j;
    float w[KA_QBLOCK];
    if (p.q) {
        const struct ka_qblock *xb = &p.q[i * ((p.k + KA_QBLOCK - 1) / KA_QBLOCK) + c];
        if (kc_weight_codes(p.w) && n == KA_QBLOCK && p.r0 % KA_QBLOCK == 0) {
            int codes[KA_QBLOCK];
            float d = ka_codes32(p.w.format, p.w.bytes + col * p.w.row_bytes, (p.r0 + t0) / KA_QBLOCK, codes);
            return ka_chunk_i8(xb, p.words, codes, d, KA_QBLOCK);
        }
        kc_weight_run(p.w, p.r0 + t0, col, n, w);
        return ka_chunk_i8_float(xb, p.words, w, (int)n);
    }
    kc_weight_run(p.w, p.r0 + t0, col, n, w);
    return ka_dot_f32(p.x + i * p.xs + t0, w, (int)n);
}

/* Output (i, j) by a warp: lane l sums chunks c ≡ l (mod 32), the butterfly the lanes (host.c's product_out). */
__device__ float kc_product_out(const kc_product &p, int64_t i, int64_t j)
{
    float acc = 0.0f;
    int64_t chunks = (p.k + KA_QBLOCK - 1) / KA_QBLOCK;
    for (int64_t c = kc_lane(); c < chunks; c += KA_WARP)
        acc = ka_acc(acc, kc_chunk_term(p, i, j, c));
    if (p.plant == KERNELS_FAULT_PARTIAL_WARP && kc_lane() >= chunks) /* planted: a reduction over a partial warp */
        return acc;
    return kc_warp_sum(acc);
}

/* gemv (matmul, head_matmul): a warp per_warp outputs, all m rows; head blockIdx.y shifts x, r0, y by xh, rh, yh. */
__global__ void kc_gemv(kc_product p, int64_t m, int64_t n, int per_warp, float *y, int64_t ys, int64_t xh,
                        int64_t rh, int64_t yh)
{
    p.x += blockIdx.y * xh;
    p.r0 += blockIdx.y * rh;
    y += blockIdx.y * yh;
    int64_t first = (int64_t)blockIdx.x * (blockDim.x / KA_WARP) * per_warp + (int64_t)kc_warp() * per_warp;
    for (int64_t j = first; j < first + per_warp && j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            float out = kc_product_out(p, i, j);
            if (kc_lane() == 0)
                y[i * ys + j] = out;
        }
}

/* ── Norms ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* rms_norm: a block a row (kernels_norm_threads(cols) threads); optional weight w (+ off), residual res and bias b;
 * a layer norm first sums the row for its mean and centres every value on it. */
__global__ void kc_rms_norm(const float *x, const float *w, const float *res, const float *b, int64_t cols,
                           float eps, float off, bool layer, float *y)
{
    int64_t r = blockIdx.x;
    const float *xr = x + r * cols, *rr = res ? res + r * cols : NULL;
    float mean = 0.0f;
    if (layer)
        mean = ka_norm_mean(kc_block_sum(ka_norm_sum_partial(xr, rr, cols, threadIdx.x, blockDim.x)), cols);
    float ss = kc_block_sum(ka_norm_centred_partial(xr, rr, cols, threadIdx.x, blockDim.x, layer, mean));
    float inv = ka_norm_factor(ss, cols, eps);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        y[r * cols + j] =
            ka_norm_biased(ka_norm_value(ka_norm_centred(ka_norm_in(xr[j], rr, j), layer, mean), inv, w, j, off), b, j);
}

/* l2_norm: a block a row (kernels_norm_threads(cols) threads), as rms_norm with the factor 1/sqrt(ss + eps). */
__global__ void kc_l2_norm(const float *x, int64_t cols, float eps, float *y)
{
    int64_t r = blockIdx.x;
    const float *xr = x + r * cols;
    float ss = kc_block_sum(ka_norm_partial(xr, NULL, cols, threadIdx.x, blockDim.x));
    float inv = ka_l2_factor(ss, eps);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        y[r * cols + j] = ka_norm_value(xr[j], inv, NULL, j, 0.0f);
}

/* ── Rotation ────────────────────────────────────────────────────────────────────────────────────────────── */

/* rope (pairs i, i + half, or adjacent 2i, 2i + 1): a warp a head g, lane l its i ≡ l (mod 32), at table row
 * pos + g / per_row (past the tables' trows rows: the flag set, nothing written). */
__global__ void kc_rope(const float *x, const float *cosv, const float *sinv, int64_t h, int64_t hd, int64_t half,
                        bool adjacent, int64_t per_row, kc_row posr, int64_t trows, float *y)
{
    int64_t g = (int64_t)blockIdx.x * (blockDim.x / KA_WARP) + kc_warp(), pos;
    if (g >= h || !kc_row_get(posr, &pos))
        return;
    int64_t at = pos + g / per_row;
    if (half && at >= trows) {
        if (posr.bad)
            *posr.bad = 1;
        return;
    }
    const float *xh = x + g * hd, *c = cosv + at * half, *s = sinv + at * half;
    float *yh = y + g * hd;
    for (int64_t i = kc_lane(); i < half; i += KA_WARP) {
        int64_t a, b;
        ka_rope_index(i, half, adjacent, &a, &b);
        ka_rope_pair(xh[a], xh[b], c[i], s[i], &yh[a], &yh[b]);
    }
    for (int64_t i = 2 * half + kc_lane(); i < hd; i += KA_WARP)
        yh[i] = xh[i];
}

/* ── Quantize ────────────────────────────────────────────────────────────────────────────────────────────── */

/* quantize (1 or 2 words): a warp a block of 32, staged in shared memory, quantized by lane 0. */
__global__ void kc_quantize(const float *x, int64_t n, int words, struct ka_qblock *blocks, float *y)
{
    KC_SHARED(float, xs, [KC_MAX_THREADS / KA_WARP][KA_QBLOCK]);
    KC_SHARED(float, ys, [KC_MAX_THREADS / KA_WARP][KA_QBLOCK]);
    int lane = kc_lane(), warp = kc_warp();
    int64_t b = (int64_t)blockIdx.x * (blockDim.x / KA_WARP) + warp, at = b * KA_QBLOCK;
    if (at >= n)
        return;
    int m = (int)(n - at < KA_QBLOCK ? n - at : KA_QBLOCK);
    if (lane < m)
        xs[warp][lane] = x[at + lane];
    __syncwarp();
    if (lane == 0)
        ka_quant_block(xs[warp], m, words, &blocks[b], ys[warp]);
    __syncwarp();
    if (lane < m)
        y[at + lane] = ys[warp][lane];
}

/* ── Attention ───────────────────────────────────────────────────────────────────────────────────────────── */

/* An attention: queries (h heads a row), cache keys/values (rows of kstride/vstride), first position, cache rows,
 * window (0: none), chunks, logit scale and cap; tile: how the tiles hold their operands (enum ka_tile: KA_TILE_F32,
 * or under kernels_attention_in_tiles KA_TILE_I8X2 for int8x2 and KA_TILE_F16 otherwise, as host.c's st_attention). */
struct kc_attention {
    const float *q, *k, *v;
    int64_t h, group, hd, vd, kstride, vstride;
    int64_t pos, len, window, splits; /* pos: read from posr by the chunks' kernel */
    kc_row posr;
    float scale, cap;
    int capped, tile;
    int64_t tile_rows; /* rows of a tile (kernels_attn_tile_rows: its shared memory within the chip's) */
    int plant; /* a planted fault (enum kernels_fault; tests only) */
};

/* The cache rows [*lo, *hi] query row r attends (host.c's st_attention). */
__device__ __forceinline__ void kc_span(const kc_attention &a, int64_t r, int64_t *lo, int64_t *hi)
{
    int64_t pos = a.pos + r;
    *hi = pos < a.len - 1 ? pos : a.len - 1;
    *lo = a.window > 0 && pos - a.window + 1 > 0 ? pos - a.window + 1 : 0;
}

/* Rows [0, n) of x (row stride xs, len values) staged as the tile holds them into out (row j at j·len): a thread a
 * row under int8x2 (a row's words share its largest residual), a thread a value otherwise (ka_tile_row of one value
 * is that value's rounding). */
__device__ void kc_tile_rows(const float *x, int64_t xs, int64_t len, int n, int tile, float *out)
{
    if (tile == KA_TILE_I8X2) {
        for (int j = threadIdx.x; j < n; j += blockDim.x)
            ka_tile_row(x + j * xs, len, tile, 2, out + j * len);
        return;
    }
    for (int64_t e = threadIdx.x; e < n * len; e += blockDim.x)
        ka_tile_row(x + (e / len) * xs + e % len, 1, tile, 2, out + e);
}

/* The staged query qt and the staged key rows kt[j·hd]: tile row j's logit into lg[j], warp w taking the rows
 * j ≡ w (mod warps), lane l ka_dot_lane's share, the butterfly, ka_logit (lane 0 writes). */
__device__ void kc_tile_logits(const kc_attention &a, const float *qt, const float *kt, int n, float *lg)
{
    for (int j = kc_warp(); j < n; j += (int)(blockDim.x / KA_WARP)) {
        float l = ka_logit(kc_warp_sum(ka_dot_lane(qt, kt + j * a.hd, a.hd, kc_lane())), a.scale, a.capped, a.cap);
        if (kc_lane() == 0)
            lg[j] = l;
    }
}

/* Thread `tid`'s value columns [*t, *t + *cnt): vd cut into runs of ceil(vd / threads), in thread order. */
__device__ __forceinline__ void kc_cols(int64_t vd, int64_t tid, int64_t *t, int64_t *cnt)
{
    int64_t per = (vd + blockDim.x - 1) / blockDim.x;
    *t = tid * per < vd ? tid * per : vd;
    *cnt = vd - *t < per ? vd - *t : per;
}

/* The tile's staged value rows vt[j·vd + u] regrouped by owning thread into vs: the thread with columns [t, t + cnt)
 * finds them at vs + n·t as n rows of cnt (vs[n·t + j·cnt + u − t]), the layout ka_softmax_tile reads. */
__device__ void kc_tile_by_cols(const float *vt, int64_t vd, int n, float *vs)
{
    int64_t per = (vd + blockDim.x - 1) / blockDim.x;
    for (int64_t e = threadIdx.x; e < n * vd; e += blockDim.x) {
        int64_t j = e / vd, u = e % vd, t, cnt;
        kc_cols(vd, u / per, &t, &cnt);
        vs[n * t + j * cnt + (u - t)] = vt[e];
    }
}

/* attention: a block a query head (y) and chunk (x), tiles of a.tile_rows rows (host.c's head_run for
 * one chunk): the query staged, per tile the key rows staged, the logits, the value rows staged and regrouped, then
 * each thread folds the tile into its copy of the state (every thread computes the same weights, held weights and
 * denominator) and its own value columns (a column's sum needs no other's); state and acc[head][column][chunk] out.
 * Dynamic shared memory: hd + vd + tile_rows · (max(hd, vd) + vd) floats (kernels_attn_smem). */
__global__ void kc_attention_chunk(kc_attention a, struct ka_softmax *st, float *acc)
{
    KC_SHARED(float, lg, [KERNELS_ATTN_STATIC_SMEM / sizeof(float)]); /* a tile's logits: the plan leaves its bytes */
    if (!kc_row_get(a.posr, &a.pos)) /* the same for every thread: the block returns whole */
        return;
    KC_DYNAMIC_SHARED(float, kc_smem);
    int64_t wide = a.hd > a.vd ? a.hd : a.vd;
    float *qt = kc_smem, *ac = qt + a.hd, *rows = ac + a.vd, *vs = rows + a.tile_rows * wide;
    float p[KERNELS_ATTN_TILE_ROWS], pt[KERNELS_ATTN_TILE_ROWS];
    int64_t head = blockIdx.y, c = blockIdx.x, g = head % a.h, lo, hi, t, cnt;
    const float *k = a.k + (g / a.group) * a.hd, *v = a.v + (g / a.group) * a.vd;
    kc_span(a, head / a.h, &lo, &hi);
    kc_cols(a.vd, threadIdx.x, &t, &cnt);
    kc_tile_rows(a.q + head * a.hd, a.hd, a.hd, 1, a.tile, qt);
    for (int64_t u = threadIdx.x; u < a.vd; u += blockDim.x)
        ac[u] = 0.0f;
    __syncthreads();
    struct ka_softmax s = {0.0f, 0.0f, 0};
    int64_t per = hi >= lo ? (hi - lo + 1 + a.splits - 1) / a.splits : 0, c0 = lo + c * per;
    int64_t c1 = c0 + per - 1 < hi ? c0 + per - 1 : hi;
    for (int64_t t0 = c0; per > 0 && t0 <= c1; t0 += a.tile_rows) {
        int n = (int)(c1 - t0 + 1 < a.tile_rows ? c1 - t0 + 1 : a.tile_rows);
        kc_tile_rows(k + t0 * a.kstride, a.kstride, a.hd, n - (a.plant == KERNELS_FAULT_TILE_SHORT), a.tile, rows);
        if (a.plant != KERNELS_FAULT_MISSING_SYNC) /* the same for every thread */
            __syncthreads();
        kc_tile_logits(a, qt, rows, n, lg);
        __syncthreads();
        kc_tile_rows(v + t0 * a.vstride, a.vstride, a.vd, n, a.tile, rows);
        __syncthreads();
        kc_tile_by_cols(rows, a.vd, n, vs);
        __syncthreads();
        ka_softmax_tile(&s, lg, n, ka_max(lg, n), vs + n * t, cnt, ac + t, p, pt, a.tile);
        __syncthreads();
    }
    if (threadIdx.x == 0)
        st[head * a.splits + c] = s;
    for (int64_t u = threadIdx.x; u < a.vd; u += blockDim.x)
        acc[(head * a.vd + u) * a.splits + c] = ac[u];
}

/* attention's merge: a block a head, a thread a column, chunks in order (a column's merge is the row's for it). */
__global__ void kc_attention_merge(const struct ka_softmax *st, const float *acc, int64_t h, int64_t vd,
                                   int64_t splits, const float *sinks, float *y)
{
    int64_t head = blockIdx.x;
    float sink = sinks ? sinks[head % h] : 0.0f;
    for (int64_t t = threadIdx.x; t < vd; t += blockDim.x)
        ka_softmax_merge(st + head * splits, acc + (head * vd + t) * splits, (int)splits, 1, sinks != NULL, sink,
                         y + head * vd + t);
}

/* ── Mixture of experts (host.c's st_moe, as three kernels) ──────────────────────────────────────────────── */

/* A mixture's bias rows (each NULL without bias: router experts, gate and up experts·dff, down experts·d) and its
 * activation (enum ir_moeact's index, the clamped SwiGLU's alpha and limit). */
struct kc_moe_extra {
    const float *router_b, *gate_b, *up_b, *down_b;
    int act;
    float alpha, limit;
};

/* v + b[i], or v without a bias row: host.c's bias_add for one value. */
__device__ __forceinline__ float kc_biased(float v, const float *b, int64_t i) { return b ? ka_ew(0, v, b[i]) : v; }

/* moe's router: one block; warp w the f32 router outputs e ≡ w (mod warps) into the scratch prob[experts] (router:
 * x, xs = k = d, no words, c0 = 0; a GEMV's lane order) plus the router's bias, then thread 0 the routing (ka_route
 * by rt: scores, correction, groups, weights; room of ka_route_room values) into sel[k] and wts[k]. */
__global__ void kc_moe_route(kc_product router, kc_moe_extra ex, struct ka_routing rt, float *prob, float *room,
                             int64_t *sel, float *wts)
{
    for (int64_t e = kc_warp(); e < rt.experts; e += blockDim.x / KA_WARP) {
        float out = kc_product_out(router, 0, e);
        if (kc_lane() == 0)
            prob[e] = kc_biased(out, ex.router_b, e);
    }
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    ka_route(&rt, prob, room, sel, wts);
}

/* moe's gate and up: rank r = blockIdx.y, a warp an output j of its expert sel[r] (gate: x, xs = k = d, the
 * activation's words or none, the gate weights; c0 set here; up: its weights), each plus its bias, then
 * hid[r·dff + j] = ka_moe_act(gate, up) (SiLU, GELU or the clamped SwiGLU by ex.act). */
__global__ void kc_moe_gate_up(kc_product gate, kc_weights up, kc_moe_extra ex, const int64_t *sel, int64_t dff,
                               float *hid)
{
    int64_t r = blockIdx.y, j = (int64_t)blockIdx.x * (blockDim.x / KA_WARP) + kc_warp();
    if (j >= dff)
        return;
    gate.c0 = sel[r] * dff;
    kc_product pu = gate;
    pu.w = up;
    float gv = kc_product_out(gate, 0, j), uv = kc_product_out(pu, 0, j);
    gv = kc_biased(gv, ex.gate_b, sel[r] * dff + j);
    uv = kc_biased(uv, ex.up_b, sel[r] * dff + j);
    if (kc_lane() == 0)
        hid[r * dff + j] = ka_moe_act(gv, uv, ex.act, ex.alpha, ex.limit);
}

/* moe's down and sum: a warp an output i; over the ranks in order, the f32 product of hid's row r by expert sel[r]'s
 * down weights (dff in) plus its down bias, added into the output by ka_axpy with weight wts[r]. */
__global__ void kc_moe_down(kc_weights down, kc_moe_extra ex, const int64_t *sel, const float *wts, const float *hid,
                            int64_t k, int64_t d, int64_t dff, float *y)
{
    int64_t i = (int64_t)blockIdx.x * (blockDim.x / KA_WARP) + kc_warp();
    if (i >= d)
        return;
    float out = 0.0f;
    for (int64_t r = 0; r < k; r++) {
        kc_product p = {hid + r * dff, dff, NULL, 0, down, dff, 0, sel[r] * d, 0};
        float o = kc_biased(kc_product_out(p, 0, i), ex.down_b, sel[r] * d + i);
        out = ka_axpy(out, wts[r], o);
    }
    if (kc_lane() == 0)
        y[i] = out;
}

/* ── Elementwise stages: a thread a value, grid-stride ───────────────────────────────────────────────────── */

/* elementwise: y = a (op) b, op an enum ir_ewop, b one row broadcast when row > 0. */
__global__ void kc_elementwise(const float *a, const float *b, int64_t n, int64_t row, int op, float *y)
{
    for (int64_t i = kc_first(); i < n; i += kc_stride())
        y[i] = ka_ew(op, a[i], b[row > 0 ? i % row : i]);
}

/* silu, sigmoid, gelu, relu by kind (enum ir_kind; any other kind: relu). */
__global__ void kc_unary(const float *x, int64_t n, int kind, float *y)
{
    for (int64_t i = kc_first(); i < n; i += kc_stride()) {
        float v = x[i];
        y[i] = kind == IR_KIND_SILU ? ka_silu(v) : kind == IR_KIND_SIGMOID ? ka_sigmoid(v)
             : kind == IR_KIND_GELU ? ka_gelu(v) : ka_relu(v);
    }
}

/* swiglu: y = silu(g) · u. */
__global__ void kc_swiglu(const float *g, const float *u, int64_t n, float *y)
{
    for (int64_t i = kc_first(); i < n; i += kc_stride())
        y[i] = ka_glu(g[i], u[i], 0);
}

/* scale: y = factor · x. */
__global__ void kc_scale(const float *x, int64_t n, float factor, float *y)
{
    for (int64_t i = kc_first(); i < n; i += kc_stride())
        y[i] = ka_scale(factor, x[i]);
}

/* softcap: y = cap · tanh(x / cap). */
__global__ void kc_softcap(const float *x, int64_t n, float cap, float *y)
{
    for (int64_t i = kc_first(); i < n; i += kc_stride())
        y[i] = ka_softcap(x[i], cap);
}

/* head_slice: the values [from, from + width) of every `every`-wide unit of x (host.c's st_head_slice). */
__global__ void kc_head_slice(const float *x, int64_t n, int64_t every, int64_t from, int64_t width, float *y)
{
    for (int64_t i = kc_first(); i < n; i += kc_stride())
        y[i] = x[i / width * every + from + i % width];
}

/* join: each unit's ha values of a then its hb values of b, n values in all (host.c's st_join). */
__global__ void kc_join(const float *a, const float *b, int64_t n, int64_t ha, int64_t hb, float *y)
{
    for (int64_t i = kc_first(); i < n; i += kc_stride()) {
        int64_t u = i / (ha + hb), at = i % (ha + hb);
        y[i] = at < ha ? a[u * ha + at] : b[u * hb + at - ha];
    }
}

/* ── Tables, rows and caches ─────────────────────────────────────────────────────────────────────────────── */

/* A value rounded to a cache's type (keep: enum shim_keep; host.c's keep_round). */
__device__ __forceinline__ float kc_keep(int keep, float x)
{
    return keep == SHIM_KEEP_F16 ? ka_round_half(x) : keep == SHIM_KEEP_BF16 ? ka_round_bf16(x) : x;
}

/* set_row: count rows of src into the cache table from row rr names, rounded to the cache's type at the write. */
__global__ void kc_set_row(const float *src, int64_t count, int64_t cols, kc_row rr, int keep, float *table)
{
    int64_t r;
    if (!kc_row_get(rr, &r))
        return;
    for (int64_t i = kc_first(); i < count * cols; i += kc_stride())
        table[r * cols + i] = kc_keep(keep, src[i]);
}

/* row_gather: the row rr names of a table, decoded from its blocks. */
__global__ void kc_row_gather(kc_weights w, kc_row rr, int64_t cols, float *y)
{
    int64_t r;
    if (!kc_row_get(rr, &r))
        return;
    for (int64_t j = kc_first(); j < cols; j += kc_stride())
        y[j] = kc_weight(w, r, j);
}

/* rows_gather: row idx[c] of a table for each of count indices, decoded from its blocks; an index that is not an
 * integer in [0, rows − 1] writes nothing for its row and sets *bad (host.c's failure). */
__global__ void kc_rows_gather(kc_weights w, const float *idx, int64_t count, int64_t rows, int64_t cols, int *bad,
                               float *y)
{
    for (int64_t e = kc_first(); e < count * cols; e += kc_stride()) {
        double d = (double)idx[e / cols];
        if (!(d >= 0.0 && d <= (double)(rows - 1)) || d != floor(d)) {
            *bad = 1;
            continue;
        }
        y[e] = kc_weight(w, (int64_t)d, e % cols);
    }
}

/* argmax: a block a row; threads' strided bests, folded in thread order by thread 0 (host.c's st_argmax). */
__global__ void kc_argmax(const float *x, int64_t cols, float *y)
{
    KC_SHARED(float, tv, [KC_MAX_THREADS]);
    KC_SHARED(int64_t, ti, [KC_MAX_THREADS]);
    const float *xr = x + (int64_t)blockIdx.x * cols;
    float v = 0.0f;
    int64_t vi = -1;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        if (ka_argmax_beats(xr[j], j, v, vi)) {
            v = xr[j];
            vi = j;
        }
    tv[threadIdx.x] = v;
    ti[threadIdx.x] = vi;
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    float bv = 0.0f;
    int64_t bi = -1;
    for (unsigned t = 0; t < blockDim.x; t++)
        if (ti[t] >= 0 && ka_argmax_beats(tv[t], ti[t], bv, bi)) {
            bv = tv[t];
            bi = ti[t];
        }
    y[blockIdx.x] = (float)(bi < 0 ? 0 : bi);
}

/* ── Gated DeltaNet (host.c's st_causal_conv, st_decay, st_gated_delta) ──────────────────────────────────── */

/* causal_conv: a thread a channel (grid-stride); its rows in order from the ring and x, then the ring's rows moved
 * on in ascending order (row r takes row rows + r, not yet overwritten), rounded to the state's type (keep). */
__global__ void kc_causal_conv(const float *x, const float *w, int64_t chan, int64_t taps, int64_t rows, int keep,
                               float *ring, float *y)
{
    for (int64_t c = kc_first(); c < chan; c += kc_stride()) {
        for (int64_t t = 0; t < rows; t++)
            y[t * chan + c] = ka_conv_out(w + c * taps, ring, x, taps, chan, t, c);
        for (int64_t r = 0; r < taps - 1; r++)
            ring[r * chan + c] = kc_keep(keep, ka_conv_at(ring, x, taps - 1, chan, rows + r, c));
    }
}

/* decay: y = −e^alog · softplus(a + dt_bias), by head i mod heads. */
__global__ void kc_decay(const float *a, const float *alog, const float *dtb, int64_t n, int64_t heads, float *y)
{
    for (int64_t i = kc_first(); i < n; i += kc_stride())
        y[i] = ka_decay(a[i], alog[i % heads], dtb[i % heads]);
}

/* A gated delta rule: h value heads of dk × dv memory over `rows` rows, kh key heads (each serving h / kh value
 * heads; h where the op's kh is 0), eps of the head norm, the gate (1: the logistic function, 0: SiLU), the state's
 * type (enum shim_keep). The launch: h blocks of kernels_gdn_threads(dv) threads, 4·(dk + 1)·dv bytes of dynamic
 * shared memory (past 48 KiB by the opt-in attribute: 66 KiB at dk = dv = 128, within every chip's limit). */
struct kc_gdn {
    const float *q, *k, *v, *z, *b, *a, *w;
    float *state, *y;
    int64_t h, dk, dv, rows, kh;
    float eps;
    int sigmoid_gate, keep;
};

/* gated_delta: a block a value head (blockIdx.x), kernels_gdn_threads(dv) threads, thread t the columns j ≡ t. The
 * head's memory is staged in dynamic shared memory (dk·dv floats, then dv for the columns' outputs); per row each
 * thread steps its columns (ka_gdn_column), the block sums the outputs' squares (host.c's block_sum), each thread
 * writes its columns' outputs; the memory is stored back once, rounded to the state's type. */
__global__ void kc_gated_delta(kc_gdn p)
{
    KC_DYNAMIC_SHARED(float, kc_smem);
    int64_t eta = blockIdx.x, n = p.dk * p.dv, group = p.h / p.kh;
    float *S = kc_smem, *o = S + n, *state = p.state + eta * n, rdk = sqrtf((float)p.dk);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        S[i] = state[i];
    __syncthreads();
    for (int64_t t = 0; t < p.rows; t++) {
        int64_t u = t * p.h + eta, uk = (t * p.kh + eta / group) * p.dk;
        float decay = ka_expf(p.a[u]);
        for (int64_t j = threadIdx.x; j < p.dv; j += blockDim.x)
            o[j] = ka_gdn_column(S + j, p.dv, p.dk, decay, p.k + uk, p.q + uk, rdk, p.v[u * p.dv + j], p.b[u]);
        float inv = ka_norm_factor(kc_block_sum(ka_norm_partial(o, NULL, p.dv, threadIdx.x, blockDim.x)), p.dv, p.eps);
        for (int64_t j = threadIdx.x; j < p.dv; j += blockDim.x)
            p.y[u * p.dv + j] = ka_gdn_out(o[j], inv, p.w[j], p.z[u * p.dv + j], p.sigmoid_gate);
        __syncthreads();
    }
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        state[i] = kc_keep(p.keep, S[i]);
}

/* ── Data movement on the device (the evaluator's strided reads, placements and checkpoint reads) ────────── */

/* gather: n values of x read in units of `width` at u·pitch + offset, side by side (a strided read). */
__global__ void kc_gather(const float *x, int64_t n, int64_t width, int64_t pitch, int64_t offset, float *y)
{
    for (int64_t e = kc_first(); e < n; e += kc_stride())
        y[e] = x[e / width * pitch + offset + e % width];
}

/* place: n values of src in units of `width` into dst at row·row_cols + u·pitch + offset (the row rr names; dst
 * holds dst_len values: a region past them sets the flag and writes nothing), each rounded as the buffer keeps it
 * (keep: enum shim_keep; the host lane's placement rounding). */
__global__ void kc_place(const float *src, int64_t n, int64_t width, int64_t pitch, int64_t offset, kc_row rr,
                         int64_t row_cols, int64_t dst_len, int keep, float *dst)
{
    int64_t r;
    if (!kc_row_get(rr, &r))
        return;
    int64_t base = r * row_cols, units = n / width;
    if (units > 0 && base + (units - 1) * pitch + offset + width > dst_len) {
        if (rr.bad)
            *rr.bad = 1;
        return;
    }
    for (int64_t e = kc_first(); e < n; e += kc_stride())
        dst[base + e / width * pitch + offset + e % width] = kc_keep(keep, src[e]);
}

/* dequant: a rows × cols checkpoint matrix's values in row-major order (a checkpoint read as plain values). */
__global__ void kc_dequant(kc_weights w, int64_t rows, int64_t cols, float *y)
{
    for (int64_t e = kc_first(); e < rows * cols; e += kc_stride())
        y[e] = kc_weight(w, e / cols, e % cols);
}
