/* kernels/device.cu — the device runner: the lane's launches on a CUDA device. It takes the kernels in (kernels.cu,
 * one translation unit) and gives them a stage table mirroring the host lane's (kernels/host.c): each wrapper reads
 * its leaf's operands as the host stage does, launches the matching kc_* kernel with the geometry the host lane
 * walks, on the device's one stream, and checks CUDA's word after every launch, naming the launch and the stage.
 *
 * Memory: one allocation a graph, sized before any launch by kernels_device_need (refused, with the bytes, when the
 * device has not that much free). Its top holds what persists: each checkpoint constant uploaded once in its GGML
 * block format, each quantize result's int8 words (so the products of a later launch read them there). Its bottom
 * is the stage's transient room: the stage's f32 operands are copied in, its result copied out. The arithmetic is
 * arith.inc's only: nothing here computes a value. */
#include "kernels.cu"

#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Threads of an elementwise stage's block, and the most blocks its grid-stride loop takes. */
#define KD_THREADS 256
#define KD_MAX_BLOCKS 4096
/* Alignment of every buffer cut from the device's allocation. */
#define KD_ALIGN 256

/* A persistent slot of the allocation: tensor t's checkpoint rows (and the host bytes last uploaded there), or its
 * quantized words. */
struct kd_slot {
    int64_t weights, words;     /* offsets into the allocation, -1 when none */
    const void *uploaded;       /* the host bytes the weight slot holds */
    int64_t nblocks;            /* the words it holds (0: none yet) */
    int nwords;
};

struct kernels_device {
    int index;
    char backend[128];
    cudaStream_t stream;
    char *mem;                  /* the allocation */
    int64_t size, transient, used;   /* its bytes, the transient room's, and what the stage has taken of it */
    struct kd_slot *slots;      /* by tensor of the prepared graph */
    int32_t nslots;
    const struct ir_graph *g;   /* the graph prepared */
    struct kernels_lane *L;     /* the lane of the launch running, and its buffers */
    struct ir_values *v;
    enum kernels_fault fault;
    cudaEvent_t t0, t1;         /* around the stage's kernels: its first launch, its last */
    bool timing;                /* t0 recorded for the stage running */
    double seconds;             /* the kernels' time so far */
};

/* ── Errors ──────────────────────────────────────────────────────────────────────────────────────────────── */

/* CUDA's word on the last launch or copy of `what`: 0, or the leaf failed naming it (the walk prefixes the launch). */
static int kd_check(struct ir_leaf *l, const char *what, cudaError_t e)
{
    if (e == cudaSuccess)
        e = cudaGetLastError();
    if (e == cudaSuccess)
        return 0;
    return ir_leaf_fail(l, "%s on the device: CUDA error %d (%s)", what, (int)e, cudaGetErrorString(e));
}

/* Wait for the stage's work and check it. */
static int kd_sync(struct kernels_device *D, struct ir_leaf *l, const char *what)
{
    cudaError_t e = cudaGetLastError();
    return kd_check(l, what, e != cudaSuccess ? e : cudaStreamSynchronize(D->stream));
}

/* Mark the start of the stage's kernels (at its first launch) and the end (after each launch). */
static void kd_begin(struct kernels_device *D)
{
    if (!D->timing)
        cudaEventRecord(D->t0, D->stream);
    D->timing = true;
}
static void kd_end(struct kernels_device *D) { cudaEventRecord(D->t1, D->stream); }

/* One launch of the stage, its time counted: KD_RUN(D, kernel<<<...>>>(...)). */
#define KD_RUN(D, ...)        \
    do {                      \
        kd_begin(D);          \
        __VA_ARGS__;          \
        kd_end(D);            \
    } while (0)

/* ── The allocation ──────────────────────────────────────────────────────────────────────────────────────── */

/* n bytes rounded up to the alignment. */
static int64_t kd_round(int64_t n) { return (n + KD_ALIGN - 1) / KD_ALIGN * KD_ALIGN; }

/* n bytes of the transient room, or NULL (the leaf failed) when it is spent. */
static void *kd_take(struct kernels_device *D, struct ir_leaf *l, int64_t n)
{
    int64_t need = kd_round(n > 0 ? n : 1);
    if (D->used + need > D->transient) {
        ir_leaf_fail(l, "the device's transient room (%lld bytes) is spent", (long long)D->transient);
        return NULL;
    }
    void *p = D->mem + D->used;
    D->used += need;
    return p;
}

/* n host values copied into the transient room; NULL on failure. */
static float *kd_put(struct kernels_device *D, struct ir_leaf *l, const float *h, int64_t n)
{
    float *d = (float *)kd_take(D, l, n * (int64_t)sizeof(float));
    if (d && n > 0 && kd_check(l, "an operand's copy", cudaMemcpyAsync(d, h, sizeof(float) * (size_t)n,
                                                                       cudaMemcpyHostToDevice, D->stream)))
        return NULL;
    return d;
}

/* n values of room for a result; NULL on failure. */
static float *kd_room(struct kernels_device *D, struct ir_leaf *l, int64_t n)
{
    return (float *)kd_take(D, l, n * (int64_t)sizeof(float));
}

/* The stage's result d (n values) copied into the host's h once the stage is done; 0 or -1. */
static int kd_get(struct kernels_device *D, struct ir_leaf *l, const char *what, float *h, const float *d, int64_t n)
{
    if (kd_sync(D, l, what))
        return -1;
    float ms = 0.0f;
    if (D->timing && cudaEventElapsedTime(&ms, D->t0, D->t1) == cudaSuccess)
        D->seconds += 1e-3 * ms;
    D->timing = false;
    if (n > 0 && kd_check(l, "a result's copy", cudaMemcpyAsync(h, d, sizeof(float) * (size_t)n,
                                                               cudaMemcpyDeviceToHost, D->stream)))
        return -1;
    return kd_sync(D, l, "a result's copy");
}

/* A grid-stride grid for n values. */
static unsigned kd_blocks(int64_t n)
{
    int64_t b = (n + KD_THREADS - 1) / KD_THREADS;
    return (unsigned)(b < 1 ? 1 : b > KD_MAX_BLOCKS ? KD_MAX_BLOCKS : b);
}

/* ── Weights ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* Operand i of the leaf as the kernels read a matrix: checkpoint rows from their slot (uploaded when the host's bytes
 * are not those it holds), or plain f32 values copied in. 0, or -1. */
static int kd_weights(struct kernels_device *D, struct ir_leaf *l, int i, int64_t rows, int64_t cols, kc_weights *w)
{
    struct kernels_weights h;
    memset(w, 0, sizeof *w);
    if (kernels_weights_get(l, D->v, i, rows, cols, &h))
        return -1;
    w->cols = cols;
    if (!h.ckpt) {
        w->plain = kd_put(D, l, h.plain, rows * cols);
        return w->plain ? 0 : -1;
    }
    ir_tid t = ir_leaf_operand(l, i);
    struct kd_slot *s = t >= 0 && t < D->nslots ? &D->slots[t] : NULL;
    if (!s || s->weights < 0)
        return ir_leaf_fail(l, "checkpoint rows of %s have no slot on the device", ir_leaf_graph(l)->tensors[t].name);
    if (s->uploaded != h.ck.bytes) {
        size_t n = (size_t)(h.ck.srows * h.ck.row_bytes);
        if (kd_check(l, "a weights upload", cudaMemcpyAsync(D->mem + s->weights, h.ck.bytes, n,
                                                            cudaMemcpyHostToDevice, D->stream)))
            return -1;
        s->uploaded = h.ck.bytes;
    }
    w->bytes = (const unsigned char *)(D->mem + s->weights);
    w->row_bytes = h.ck.row_bytes;
    w->format = (int)h.ck.format;
    w->transposed = h.ck.transposed;
    return 0;
}

/* The quantized words of the stage's operand i when it is read whole: the device's own (a quantize ran here) or the
 * lane's (loaded on the host), copied in. *q NULL when there are none; 0, or -1. */
static int kd_words(struct kernels_device *D, struct ir_leaf *l, int i, const struct ka_qblock **q, int *words,
                    int64_t *nvalues)
{
    const struct ir_op *op = ir_leaf_op(l);
    *q = NULL;
    if (i >= op->nins || op->access[i].strided)
        return 0;
    ir_tid t = op->ins[i];
    struct kd_slot *s = t >= 0 && t < D->nslots ? &D->slots[t] : NULL;
    if (s && s->nblocks > 0) {
        *q = (const struct ka_qblock *)(D->mem + s->words);
        *words = s->nwords;
        *nvalues = s->nblocks * KA_QBLOCK;
        return 0;
    }
    int64_t nb;
    const void *h = kernels_lane_quantized(D->L, t, &nb, words);
    if (!h)
        return 0;
    void *d = kd_take(D, l, nb * (int64_t)sizeof(struct ka_qblock));
    if (!d || kd_check(l, "a quantized activation's copy", cudaMemcpyAsync(d, h, sizeof(struct ka_qblock) * (size_t)nb,
                                                                          cudaMemcpyHostToDevice, D->stream)))
        return -1;
    *q = (const struct ka_qblock *)d;
    *nvalues = nb * KA_QBLOCK;
    return 0;
}

/* ── Stages ──────────────────────────────────────────────────────────────────────────────────────────────── */

/* A product's m × n outputs on the device: the host lane's blocks (a GEMV's warps of per_warp outputs, or a GEMM
 * tile's 128 outputs over four warps), heads side by side in the grid's y (x, r0 and y shifted by xh, rh, yh). The
 * planted GEMV fault shifts every output to the next (output j + 1 gets output j's value). */
static void kd_product(struct kernels_device *D, const kc_product &p, int64_t m, int64_t n, int per_warp, float *y,
                       int64_t ys, int64_t heads, int64_t xh, int64_t rh, int64_t yh)
{
    int64_t threads = m <= KERNELS_GEMV_ROWS ? kernels_gemv_blk_norm_threads(per_warp) : 128;
    int64_t warps = threads / KA_WARP, per_block = m <= KERNELS_GEMV_ROWS ? warps * per_warp : KERNELS_GEMM_TILE_N;
    int pw = (int)(per_block / warps);
    if (D->fault == KERNELS_FAULT_GEMV_ROW && n > 1) {
        cudaMemsetAsync(y, 0, sizeof(float) * (size_t)(m * ys), D->stream);
        y += 1;
        n -= 1;
    }
    dim3 grid((unsigned)((n + per_block - 1) / per_block), (unsigned)heads);
    KD_RUN(D, kc_gemv<<<grid, (unsigned)threads, 0, D->stream>>>(p, m, n, pw, y, ys, xh, rh, yh));
}

/* matmul: y[m×n] = x[m×k] · W[k×n], x's int8 words where the lane holds them. */
static int kd_matmul(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_matmul *s = &ir_leaf_op(l)->spec.u.matmul;
    kc_product p;
    memset(&p, 0, sizeof p);
    int64_t qn = 0;
    const float *x = ir_leaf_arg(l, 0, s->m * s->k);
    float *y = x ? ir_leaf_result(l, s->m * s->n) : NULL;
    if (!y || kd_weights(D, l, 1, s->k, s->n, &p.w) || kd_words(D, l, 0, &p.q, &p.words, &qn))
        return -1;
    if (p.q && qn < s->m * s->k)
        return ir_leaf_fail(l, "its quantized activation holds %lld values, it reads %lld", (long long)qn,
                            (long long)(s->m * s->k));
    p.x = kd_put(D, l, x, s->m * s->k);
    float *dy = p.x ? kd_room(D, l, s->m * s->n) : NULL;
    if (!dy)
        return -1;
    p.xs = s->k;
    p.k = s->k;
    int per_warp = kernels_rows_a_warp(p.w.bytes ? (enum ir_format)p.w.format : IR_FMT_F32, s->n, s->k, s->m);
    kd_product(D, p, s->m, s->n, per_warp, dy, s->n, 1, 0, 0, 0);
    return kd_get(D, l, "matmul", y, dy, s->m * s->n);
}

/* head_matmul: each head's slice of x by its rows of W, a head a grid row. */
static int kd_head_matmul(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_head_matmul *s = &ir_leaf_op(l)->spec.u.head_matmul;
    kc_product p;
    memset(&p, 0, sizeof p);
    int64_t xa = s->heads * s->a, yb = s->heads * s->b;
    const float *x = ir_leaf_arg(l, 0, s->m * xa);
    float *y = x ? ir_leaf_result(l, s->m * yb) : NULL;
    if (!y || kd_weights(D, l, 1, xa, s->b, &p.w))
        return -1;
    p.x = kd_put(D, l, x, s->m * xa);
    float *dy = p.x ? kd_room(D, l, s->m * yb) : NULL;
    if (!dy)
        return -1;
    p.xs = xa;
    p.k = s->a;
    kd_product(D, p, s->m, s->b, 1, dy, yb, s->heads, s->a, s->a, s->b);
    return kd_get(D, l, "head_matmul", y, dy, s->m * yb);
}

/* rms_norm: a block a row of kernels_norm_threads(cols) threads. */
static int kd_rms_norm(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_rms_norm *s = &ir_leaf_op(l)->spec.u.rms_norm;
    int64_t n = s->rows * s->cols;
    const float *x = ir_leaf_arg(l, 0, n);
    const float *w = x && s->weight ? ir_leaf_arg(l, 1, s->cols) : NULL;
    const float *res = x && s->residual ? ir_leaf_arg(l, s->weight ? 2 : 1, n) : NULL;
    if (!x || (s->weight && !w) || (s->residual && !res))
        return -1;
    float *y = ir_leaf_result(l, n);
    float *dx = y ? kd_put(D, l, x, n) : NULL, *dw = NULL, *dr = NULL, *dy;
    if (!dx || (w && !(dw = kd_put(D, l, w, s->cols))) || (res && !(dr = kd_put(D, l, res, n))) ||
        !(dy = kd_room(D, l, n)))
        return -1;
    KD_RUN(D, kc_rms_norm<<<(unsigned)s->rows, (unsigned)kernels_norm_threads(s->cols), 0, D->stream>>>(
        dx, dw, dr, s->cols, (float)s->eps, (float)s->offset, dy));
    return kd_get(D, l, "rms_norm", y, dy, n);
}

/* l2_norm: as the RMS norm's block. */
static int kd_l2_norm(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_l2_norm *s = &ir_leaf_op(l)->spec.u.l2_norm;
    int64_t n = s->rows * s->cols;
    const float *x = ir_leaf_arg(l, 0, n);
    float *y = x ? ir_leaf_result(l, n) : NULL;
    float *dx = y ? kd_put(D, l, x, n) : NULL, *dy = dx ? kd_room(D, l, n) : NULL;
    if (!dy)
        return -1;
    KD_RUN(D, kc_l2_norm<<<(unsigned)s->rows, (unsigned)kernels_norm_threads(s->cols), 0, D->stream>>>(
        dx, s->cols, (float)s->eps, dy));
    return kd_get(D, l, "l2_norm", y, dy, n);
}

/* rope: a warp a head, at table row pos + head / (h / rows). */
static int kd_rope(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_rope *s = &ir_leaf_op(l)->spec.u.rope;
    if (s->rows <= 0 || s->h % s->rows != 0 || 2 * s->half > s->hd)
        return ir_leaf_fail(l, "h %lld over rows %lld, half %lld of hd %lld do not fit", (long long)s->h,
                            (long long)s->rows, (long long)s->half, (long long)s->hd);
    int64_t n = s->h * s->hd, clen = 0, slen = 0, p = 0;
    const float *x = ir_leaf_arg(l, 0, n);
    const float *ct = x ? ir_leaf_arg_all(l, 1, &clen) : NULL;
    const float *st = ct ? ir_leaf_arg_all(l, 2, &slen) : NULL;
    if (!st || ir_leaf_row(l, &s->pos, 3, IR_MAX_DIM, "position", &p))
        return -1;
    int64_t per_row = s->h / s->rows, trows = s->half ? (clen < slen ? clen : slen) / s->half : INT64_MAX;
    if (s->half && p + (s->h - 1) / per_row >= trows)
        return ir_leaf_fail(l, "position %lld is past the tables' %lld rows", (long long)(p + (s->h - 1) / per_row),
                            (long long)trows);
    float *y = ir_leaf_result(l, n);
    float *dx = y ? kd_put(D, l, x, n) : NULL, *dc = dx ? kd_put(D, l, ct, clen) : NULL;
    float *ds = dc ? kd_put(D, l, st, slen) : NULL, *dy = ds ? kd_room(D, l, n) : NULL;
    if (!dy)
        return -1;
    int64_t warps = KD_THREADS / KA_WARP;
    unsigned blocks = (unsigned)((s->h + warps - 1) / warps);
    KD_RUN(D, kc_rope<<<blocks, KD_THREADS, 0, D->stream>>>(dx, dc, ds, s->h, s->hd, s->half, per_row, p, dy));
    return kd_get(D, l, "rope", y, dy, n);
}

/* quantize: a warp a block of 32; the words kept in the tensor's slot for the products that read them. */
static int kd_quantize(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_op *op = ir_leaf_op(l);
    const struct ir_graph *g = ir_leaf_graph(l);
    int64_t n = op->out >= 0 && op->out < g->ntensors ? ir_tensor_len(g, op->out) : 0;
    if (op->quant_words != 1 && op->quant_words != 2)
        return ir_leaf_fail(l, "%d words a value (1 or 2)", (int)op->quant_words);
    struct kd_slot *s = op->out >= 0 && op->out < D->nslots ? &D->slots[op->out] : NULL;
    if (!s || s->words < 0)
        return ir_leaf_fail(l, "its result has no slot for its words on the device");
    const float *x = ir_leaf_arg(l, 0, n);
    float *y = x ? ir_leaf_result(l, n) : NULL;
    float *dx = y ? kd_put(D, l, x, n) : NULL, *dy = dx ? kd_room(D, l, n) : NULL;
    if (!dy)
        return -1;
    int64_t nb = (n + KA_QBLOCK - 1) / KA_QBLOCK, warps = KD_THREADS / KA_WARP;
    KD_RUN(D, kc_quantize<<<(unsigned)((nb + warps - 1) / warps), KD_THREADS, 0, D->stream>>>(
        dx, n, op->quant_words, (struct ka_qblock *)(D->mem + s->words), dy));
    s->nblocks = nb;
    s->nwords = op->quant_words;
    return kd_get(D, l, "quantize", y, dy, n);
}

/* attention: a block a query head and chunk (tiles of KERNELS_ATTN_TILE_ROWS rows), then a block a head merging
 * its chunks in order; the chunks and the tiles' operands as the host lane takes them. */
static int kd_attention(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_attention *s = &ir_leaf_op(l)->spec.u.attention;
    if (s->kv <= 0 || s->h % s->kv != 0)
        return ir_leaf_fail(l, "h %lld is not a multiple of kv %lld", (long long)s->h, (long long)s->kv);
    const struct kernels_point *pt = kernels_lane_point(D->L);
    int64_t p = 0, nq = s->rows * s->h * s->hd, nk = s->l * s->kv * s->hd, nv = s->l * s->kv * s->vd;
    int64_t ny = s->rows * s->h * s->vd, heads = s->rows * s->h;
    int at = s->pos.kind == IR_RIDX_NAMED ? 4 : 3;
    const float *q = ir_leaf_arg(l, 0, nq);
    const float *k = q ? ir_leaf_arg(l, 1, nk) : NULL;
    const float *v = k ? ir_leaf_arg(l, 2, nv) : NULL;
    if (!v || ir_leaf_row(l, &s->pos, 3, IR_MAX_DIM, "position", &p))
        return -1;
    const float *sinks = s->sinks ? ir_leaf_arg(l, at, s->h) : NULL;
    float *y = (!s->sinks || sinks) ? ir_leaf_result(l, ny) : NULL;
    if (!y)
        return -1;
    kc_attention a;
    a.h = s->h;
    a.group = s->h / s->kv;
    a.hd = s->hd;
    a.vd = s->vd;
    a.kstride = s->kv * s->hd;
    a.vstride = s->kv * s->vd;
    a.pos = p;
    a.len = s->l;
    a.window = s->window;
    a.splits = kernels_attention_chunks(pt, s);
    a.scale = s->scale.has ? (float)s->scale.v : 1.0f / sqrtf((float)s->hd);
    a.capped = s->softcap.has;
    a.cap = (float)s->softcap.v;
    a.tile = kernels_attention_tile(pt, s);
    float *dq = kd_put(D, l, q, nq), *dk = dq ? kd_put(D, l, k, nk) : NULL, *dv = dk ? kd_put(D, l, v, nv) : NULL;
    float *dsink = dv && sinks ? kd_put(D, l, sinks, s->h) : NULL, *dy = dv ? kd_room(D, l, ny) : NULL;
    struct ka_softmax *st = dy ? (struct ka_softmax *)kd_take(D, l, heads * a.splits * (int64_t)sizeof *st) : NULL;
    float *acc = st ? kd_room(D, l, heads * a.splits * s->vd) : NULL;
    if (!acc || (sinks && !dsink))
        return -1;
    a.q = dq;
    a.k = dk;
    a.v = dv;
    int64_t wide = s->hd > s->vd ? s->hd : s->vd;
    size_t smem = sizeof(float) * (size_t)(s->hd + s->vd + KERNELS_ATTN_TILE_ROWS * (wide + s->vd));
    if (kd_check(l, "attention's shared memory", cudaFuncSetAttribute(kc_attention_chunk,
                                                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                                      (int)smem)))
        return -1;
    KD_RUN(D, kc_attention_chunk<<<dim3((unsigned)a.splits, (unsigned)heads), 128, smem, D->stream>>>(a, st, acc));
    if (kd_check(l, "attention's chunks", cudaSuccess))
        return -1;
    KD_RUN(D, kc_attention_merge<<<(unsigned)heads, 128, 0, D->stream>>>(st, acc, s->h, s->vd, a.splits, dsink, dy));
    return kd_get(D, l, "attention", y, dy, ny);
}

/* A mixture's bias rows (router, gate, up, down) copied in, each NULL without bias; 0, or -1. */
static int kd_moe_biases(struct kernels_device *D, struct ir_leaf *l, const struct ir_moe *s, kc_moe_extra *ex)
{
    ex->router_b = ex->gate_b = ex->up_b = ex->down_b = NULL;
    if (!s->bias)
        return 0;
    int64_t n[4] = {s->experts, s->experts * s->dff, s->experts * s->dff, s->experts * s->d};
    const float **b[4] = {&ex->router_b, &ex->gate_b, &ex->up_b, &ex->down_b};
    for (int i = 0; i < 4; i++) {
        const float *h = ir_leaf_arg(l, 5 + i, n[i]);
        if (!h || !(*b[i] = kd_put(D, l, h, n[i])))
            return -1;
    }
    return 0;
}

/* moe: the router and its routing (one block), each kept expert's gate and up (a warp an output, a grid row a rank),
 * the down products summed by rank. */
static int kd_moe(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_moe *s = &ir_leaf_op(l)->spec.u.moe;
    if (s->experts < 1 || s->k > s->experts || s->k < 0)
        return ir_leaf_fail(l, "top-%lld of %lld experts", (long long)s->k, (long long)s->experts);
    kc_product router, gate;
    kc_weights up, down;
    kc_moe_extra ex;
    memset(&router, 0, sizeof router);
    memset(&gate, 0, sizeof gate);
    int64_t wide = s->experts * s->dff, qn = 0;
    const float *x = ir_leaf_arg(l, 0, s->d);
    float *y = x ? ir_leaf_result(l, s->d) : NULL;
    if (!y || kd_weights(D, l, 1, s->d, s->experts, &router.w) || kd_weights(D, l, 2, s->d, wide, &gate.w) ||
        kd_weights(D, l, 3, s->d, wide, &up) || kd_weights(D, l, 4, s->dff, s->experts * s->d, &down) ||
        kd_moe_biases(D, l, s, &ex) || kd_words(D, l, 0, &gate.q, &gate.words, &qn))
        return -1;
    ex.act = (int)s->act;
    ex.alpha = (float)s->alpha.v;
    ex.limit = (float)s->limit.v;
    float *dx = kd_put(D, l, x, s->d), *prob = dx ? kd_room(D, l, s->experts) : NULL;
    int64_t *sel = prob ? (int64_t *)kd_take(D, l, s->k * (int64_t)sizeof(int64_t)) : NULL;
    float *wts = sel ? kd_room(D, l, s->k) : NULL, *hid = wts ? kd_room(D, l, s->k * s->dff) : NULL;
    float *dy = hid ? kd_room(D, l, s->d) : NULL;
    if (!dy)
        return -1;
    router.x = gate.x = dx;
    router.xs = router.k = gate.xs = gate.k = s->d;
    KD_RUN(D, kc_moe_route<<<1, KD_THREADS, 0, D->stream>>>(router, ex, s->experts, s->k, s->topk_softmax, prob, sel,
                                                            wts));
    if (kd_check(l, "moe's routing", cudaSuccess))
        return -1;
    int64_t warps = KD_THREADS / KA_WARP;
    if (s->k > 0) {
        dim3 grid((unsigned)((s->dff + warps - 1) / warps), (unsigned)s->k);
        KD_RUN(D, kc_moe_gate_up<<<grid, KD_THREADS, 0, D->stream>>>(gate, up, ex, sel, s->dff, hid));
        if (kd_check(l, "moe's gate and up", cudaSuccess))
            return -1;
    }
    unsigned blocks = (unsigned)((s->d + warps - 1) / warps);
    KD_RUN(D, kc_moe_down<<<blocks, KD_THREADS, 0, D->stream>>>(down, ex, sel, wts, hid, s->k, s->d, s->dff, dy));
    return kd_get(D, l, "moe", y, dy, s->d);
}

/* The elementwise family: a thread a value, grid-stride. Operands a (n_a values) and b (n_b, none when 0) copied in,
 * the result of n values out, `launch` launching the kernel over them. */
typedef void (*kd_ew_launch)(struct kernels_device *D, const struct ir_op *op, const float *a, const float *b,
                             float *y);
static int kd_ew(struct kernels_device *D, struct ir_leaf *l, const char *what, int64_t na, int64_t nb, int64_t n,
                 kd_ew_launch launch)
{
    const float *a = ir_leaf_arg(l, 0, na), *b = a && nb ? ir_leaf_arg(l, 1, nb) : NULL;
    float *y = a && (b || !nb) ? ir_leaf_result(l, n) : NULL;
    float *da = y ? kd_put(D, l, a, na) : NULL, *db = da && nb ? kd_put(D, l, b, nb) : NULL;
    float *dy = da && (db || !nb) ? kd_room(D, l, n) : NULL;
    if (!dy)
        return -1;
    launch(D, ir_leaf_op(l), da, db, dy);
    return kd_get(D, l, what, y, dy, n);
}

/* The launches of the elementwise family, each over its spec's values. */
static void kd_launch_ew(struct kernels_device *D, const struct ir_op *op, const float *a, const float *b, float *y)
{
    const struct ir_elementwise *s = &op->spec.u.elementwise;
    KD_RUN(D, kc_elementwise<<<kd_blocks(s->n), KD_THREADS, 0, D->stream>>>(a, b, s->n, s->row, (int)s->op, y));
}
static void kd_launch_unary(struct kernels_device *D, const struct ir_op *op, const float *a, const float *b, float *y)
{
    (void)b;
    int64_t n = op->spec.u.unary.n;
    KD_RUN(D, kc_unary<<<kd_blocks(n), KD_THREADS, 0, D->stream>>>(a, n, (int)op->spec.kind, y));
}
static void kd_launch_scale(struct kernels_device *D, const struct ir_op *op, const float *a, const float *b, float *y)
{
    (void)b;
    const struct ir_scale *s = &op->spec.u.scale;
    KD_RUN(D, kc_scale<<<kd_blocks(s->n), KD_THREADS, 0, D->stream>>>(a, s->n, (float)s->factor, y));
}
static void kd_launch_swiglu(struct kernels_device *D, const struct ir_op *op, const float *a, const float *b, float *y)
{
    int64_t n = op->spec.u.swiglu.total;
    KD_RUN(D, kc_swiglu<<<kd_blocks(n), KD_THREADS, 0, D->stream>>>(a, b, n, y));
}
static void kd_launch_softcap(struct kernels_device *D, const struct ir_op *op, const float *a, const float *b,
                              float *y)
{
    (void)b;
    const struct ir_softcap *s = &op->spec.u.softcap;
    KD_RUN(D, kc_softcap<<<kd_blocks(s->n), KD_THREADS, 0, D->stream>>>(a, s->n, (float)s->cap, y));
}
static void kd_launch_head_slice(struct kernels_device *D, const struct ir_op *op, const float *a, const float *b,
                                 float *y)
{
    (void)b;
    const struct ir_head_slice *s = &op->spec.u.head_slice;
    int64_t n = (s->every > 0 ? s->n / s->every : 0) * s->width;
    KD_RUN(D, kc_head_slice<<<kd_blocks(n), KD_THREADS, 0, D->stream>>>(a, n, s->every, s->from, s->width, y));
}
static void kd_launch_join(struct kernels_device *D, const struct ir_op *op, const float *a, const float *b, float *y)
{
    const struct ir_join *s = &op->spec.u.join;
    int64_t ha = s->wa / s->heads, hb = s->wb / s->heads, n = s->rows * (s->wa + s->wb);
    KD_RUN(D, kc_join<<<kd_blocks(n), KD_THREADS, 0, D->stream>>>(a, b, n, ha, hb, y));
}

/* elementwise, the activations, scale, swiglu, softcap, head_slice, join: their operands' and result's sizes. */
static int kd_elementwise(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_elementwise *s = &ir_leaf_op(l)->spec.u.elementwise;
    return kd_ew(D, l, "elementwise", s->n, s->row > 0 ? s->row : s->n, s->n, kd_launch_ew);
}
static int kd_unary(struct kernels_device *D, struct ir_leaf *l)
{
    int64_t n = ir_leaf_op(l)->spec.u.unary.n;
    return kd_ew(D, l, ir_kind_name(ir_leaf_op(l)->spec.kind), n, 0, n, kd_launch_unary);
}
static int kd_scale(struct kernels_device *D, struct ir_leaf *l)
{
    int64_t n = ir_leaf_op(l)->spec.u.scale.n;
    return kd_ew(D, l, "scale", n, 0, n, kd_launch_scale);
}
static int kd_swiglu(struct kernels_device *D, struct ir_leaf *l)
{
    int64_t n = ir_leaf_op(l)->spec.u.swiglu.total;
    return kd_ew(D, l, "swiglu", n, n, n, kd_launch_swiglu);
}
static int kd_softcap(struct kernels_device *D, struct ir_leaf *l)
{
    int64_t n = ir_leaf_op(l)->spec.u.softcap.n;
    return kd_ew(D, l, "softcap", n, 0, n, kd_launch_softcap);
}
static int kd_head_slice(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_head_slice *s = &ir_leaf_op(l)->spec.u.head_slice;
    return kd_ew(D, l, "head_slice", s->n, 0, (s->every > 0 ? s->n / s->every : 0) * s->width, kd_launch_head_slice);
}
static int kd_join(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_join *s = &ir_leaf_op(l)->spec.u.join;
    if (s->heads < 1 || (s->wa + s->wb) / s->heads < 1)
        return ir_leaf_fail(l, "a join of empty units");
    return kd_ew(D, l, "join", s->rows * s->wa, s->rows * s->wb, s->rows * (s->wa + s->wb), kd_launch_join);
}

/* argmax: a block a row, kernels_norm_threads(cols) threads. */
static int kd_argmax(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_argmax *s = &ir_leaf_op(l)->spec.u.argmax;
    const float *x = ir_leaf_arg(l, 0, s->rows * s->cols);
    float *y = x ? ir_leaf_result(l, s->rows) : NULL;
    float *dx = y ? kd_put(D, l, x, s->rows * s->cols) : NULL, *dy = dx ? kd_room(D, l, s->rows) : NULL;
    if (!dy)
        return -1;
    KD_RUN(D, kc_argmax<<<(unsigned)s->rows, (unsigned)kernels_norm_threads(s->cols), 0, D->stream>>>(dx, s->cols, dy));
    return kd_get(D, l, "argmax", y, dy, s->rows);
}

/* row_gather: one row of a table, decoded from its blocks. */
static int kd_row_gather(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_row_gather *s = &ir_leaf_op(l)->spec.u.row_gather;
    kc_weights w;
    int64_t r = 0;
    if (ir_leaf_row(l, &s->index, 1, s->rows - 1, "row", &r) || kd_weights(D, l, 0, s->rows, s->cols, &w))
        return -1;
    float *y = ir_leaf_result(l, s->cols), *dy = y ? kd_room(D, l, s->cols) : NULL;
    if (!dy)
        return -1;
    KD_RUN(D, kc_row_gather<<<kd_blocks(s->cols), KD_THREADS, 0, D->stream>>>(w, r, s->cols, dy));
    return kd_get(D, l, "row_gather", y, dy, s->cols);
}

/* rows_gather: the rows an index vector names; an index out of the table fails the stage. */
static int kd_rows_gather(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_rows_gather *s = &ir_leaf_op(l)->spec.u.rows_gather;
    kc_weights w;
    int bad = 0;
    int64_t n = s->count * s->cols;
    const float *idx = ir_leaf_arg(l, 1, s->count);
    float *y = idx ? ir_leaf_result(l, n) : NULL;
    if (!y || kd_weights(D, l, 0, s->rows, s->cols, &w))
        return -1;
    float *di = kd_put(D, l, idx, s->count), *dy = di ? kd_room(D, l, n) : NULL;
    int *dbad = dy ? (int *)kd_take(D, l, sizeof(int)) : NULL;
    if (!dbad || kd_check(l, "rows_gather's flag", cudaMemsetAsync(dbad, 0, sizeof(int), D->stream)))
        return -1;
    KD_RUN(D, kc_rows_gather<<<kd_blocks(n), KD_THREADS, 0, D->stream>>>(w, di, s->count, s->rows, s->cols, dbad, dy));
    if (kd_get(D, l, "rows_gather", y, dy, n) ||
        kd_check(l, "rows_gather's flag", cudaMemcpy(&bad, dbad, sizeof(int), cudaMemcpyDeviceToHost)))
        return -1;
    return bad ? ir_leaf_fail(l, "a row index is not an integer in [0, %lld]", (long long)(s->rows - 1)) : 0;
}

/* set_row: rows of a cache written in place on the device, rounded to the cache's type; the table copied back. */
static int kd_set_row(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_set_row *s = &ir_leaf_op(l)->spec.u.set_row;
    int64_t n = s->rows * s->cols, r = 0;
    float *table = ir_leaf_state(l, 0, n);
    const float *src = table ? ir_leaf_arg(l, 1, s->count * s->cols) : NULL;
    if (!src || ir_leaf_row(l, &s->index, 2, s->rows - s->count, "row", &r))
        return -1;
    float *y = ir_leaf_result(l, n);
    float *dt = y ? kd_put(D, l, table, n) : NULL, *ds = dt ? kd_put(D, l, src, s->count * s->cols) : NULL;
    if (!ds)
        return -1;
    int keep = (int)kernels_lane_row_keep(D->L, ir_leaf_op(l)->ins[0]);
    int64_t nsrc = s->count * s->cols;
    KD_RUN(D, kc_set_row<<<kd_blocks(nsrc), KD_THREADS, 0, D->stream>>>(ds, s->count, s->cols, r, keep, dt));
    if (kd_get(D, l, "set_row", table, dt, n))
        return -1;
    if (y != table)
        memcpy(y, table, sizeof(float) * (size_t)n);
    return 0;
}

/* causal_conv: a thread a channel; the ring moved on in place and copied back. */
static int kd_causal_conv(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_causal_conv *s = &ir_leaf_op(l)->spec.u.causal_conv;
    if (s->taps < 1)
        return ir_leaf_fail(l, "taps must be at least 1");
    int64_t keep = (s->taps - 1) * s->chan, nx = s->rows * s->chan;
    const float *x = ir_leaf_arg(l, 0, nx);
    const float *w = x ? ir_leaf_arg(l, 1, s->chan * s->taps) : NULL;
    float *ring = w ? ir_leaf_state(l, 2, keep) : NULL;
    float *y = ring ? ir_leaf_result(l, nx) : NULL;
    float *dx = y ? kd_put(D, l, x, nx) : NULL, *dw = dx ? kd_put(D, l, w, s->chan * s->taps) : NULL;
    float *dr = dw ? kd_put(D, l, ring, keep) : NULL, *dy = dr ? kd_room(D, l, nx) : NULL;
    if (!dy)
        return -1;
    KD_RUN(D, kc_causal_conv<<<kd_blocks(s->chan), KD_THREADS, 0, D->stream>>>(
        dx, dw, s->chan, s->taps, s->rows, (int)kernels_lane_point(D->L)->state, dr, dy));
    return kd_get(D, l, "causal_conv", y, dy, nx) || kd_get(D, l, "causal_conv's ring", ring, dr, keep) ? -1 : 0;
}

/* decay: a thread a value, −e^alog · softplus(a + dt_bias) by its head. */
static int kd_decay(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_decay *s = &ir_leaf_op(l)->spec.u.decay;
    if (s->rows <= 0 || s->n % s->rows)
        return ir_leaf_fail(l, "n %lld is not whole over %lld rows", (long long)s->n, (long long)s->rows);
    int64_t heads = s->n / s->rows;
    const float *a = ir_leaf_arg(l, 0, s->n), *alog = a ? ir_leaf_arg(l, 1, heads) : NULL;
    const float *dtb = alog ? ir_leaf_arg(l, 2, heads) : NULL;
    float *y = dtb ? ir_leaf_result(l, s->n) : NULL;
    float *da = y ? kd_put(D, l, a, s->n) : NULL, *dl = da ? kd_put(D, l, alog, heads) : NULL;
    float *db = dl ? kd_put(D, l, dtb, heads) : NULL, *dy = db ? kd_room(D, l, s->n) : NULL;
    if (!dy)
        return -1;
    KD_RUN(D, kc_decay<<<kd_blocks(s->n), KD_THREADS, 0, D->stream>>>(da, dl, db, s->n, heads, dy));
    return kd_get(D, l, "decay", y, dy, s->n);
}

/* gated_delta: a block a value head, its memory staged in shared memory; the memory copied back. */
static int kd_gated_delta(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_gated_delta *s = &ir_leaf_op(l)->spec.u.gated_delta;
    if (s->kh < 0 || (s->kh > 0 && s->h % s->kh != 0) || s->h < 1)
        return ir_leaf_fail(l, "kh must divide h");
    kc_gdn p;
    p.h = s->h;
    p.dk = s->dk;
    p.dv = s->dv;
    p.rows = s->rows;
    p.kh = s->kh ? s->kh : s->h;
    p.eps = (float)s->eps;
    p.sigmoid_gate = s->gate == IR_GATE_SIGMOID;
    p.keep = (int)kernels_lane_point(D->L)->state;
    int64_t nk = s->rows * p.kh * s->dk, nv = s->rows * s->h * s->dv, nh = s->rows * s->h, ns = s->h * s->dk * s->dv;
    int64_t len[8] = {nk, nk, nv, nv, nh, nh, ns, s->dv};
    const float **in[8] = {&p.q, &p.k, &p.v, &p.z, &p.b, &p.a, NULL, &p.w};
    float *S = ir_leaf_state(l, 6, ns);
    if (!S)
        return -1;
    for (int i = 0; i < 8; i++) {
        const float *h = i == 6 ? S : ir_leaf_arg(l, i, len[i]);
        float *d = h ? kd_put(D, l, h, len[i]) : NULL;
        if (!d)
            return -1;
        if (in[i])
            *in[i] = d;
        else
            p.state = d;
    }
    float *y = ir_leaf_result(l, nv);
    p.y = y ? kd_room(D, l, nv) : NULL;
    if (!p.y)
        return -1;
    size_t smem = sizeof(float) * (size_t)((s->dk + 1) * s->dv);
    if (kd_check(l, "gated_delta's shared memory", cudaFuncSetAttribute(kc_gated_delta,
                                                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                                        (int)smem)))
        return -1;
    KD_RUN(D, kc_gated_delta<<<(unsigned)s->h, (unsigned)kernels_gdn_threads(s->dv), smem, D->stream>>>(p));
    return kd_get(D, l, "gated_delta", y, p.y, nv) || kd_get(D, l, "gated_delta's memory", S, p.state, ns) ? -1 : 0;
}

/* The device's stage for each primitive kind, as the host lane's table; NULL where the lane has none. */
typedef int (*kd_stage)(struct kernels_device *, struct ir_leaf *);
static kd_stage kd_stages[IR_KIND_COUNT];

/* Fill the stage table (once; the same table every time). */
static void kd_stages_fill(void)
{
    kd_stages[IR_KIND_MATMUL] = kd_matmul;
    kd_stages[IR_KIND_ELEMENTWISE] = kd_elementwise;
    kd_stages[IR_KIND_RMS_NORM] = kd_rms_norm;
    kd_stages[IR_KIND_ROPE] = kd_rope;
    kd_stages[IR_KIND_ROW_GATHER] = kd_row_gather;
    kd_stages[IR_KIND_ROWS_GATHER] = kd_rows_gather;
    kd_stages[IR_KIND_SET_ROW] = kd_set_row;
    kd_stages[IR_KIND_ATTENTION] = kd_attention;
    kd_stages[IR_KIND_MOE] = kd_moe;
    kd_stages[IR_KIND_SILU] = kd_stages[IR_KIND_SIGMOID] = kd_stages[IR_KIND_GELU] = kd_stages[IR_KIND_RELU] = kd_unary;
    kd_stages[IR_KIND_SCALE] = kd_scale;
    kd_stages[IR_KIND_SWIGLU] = kd_swiglu;
    kd_stages[IR_KIND_HEAD_MATMUL] = kd_head_matmul;
    kd_stages[IR_KIND_L2_NORM] = kd_l2_norm;
    kd_stages[IR_KIND_ARGMAX] = kd_argmax;
    kd_stages[IR_KIND_SOFTCAP] = kd_softcap;
    kd_stages[IR_KIND_HEAD_SLICE] = kd_head_slice;
    kd_stages[IR_KIND_JOIN] = kd_join;
    kd_stages[IR_KIND_CAUSAL_CONV] = kd_causal_conv;
    kd_stages[IR_KIND_DECAY] = kd_decay;
    kd_stages[IR_KIND_GATED_DELTA] = kd_gated_delta;
}

/* The leaf hook: a quantize, a primitive's stage, a view moved by the evaluator; the transient room emptied first. */
static int kd_leaf(void *ctx, struct ir_leaf *l)
{
    struct kernels_device *D = (struct kernels_device *)ctx;
    const struct ir_op *op = ir_leaf_op(l);
    D->used = 0;
    switch (op->sym) {
    case IR_SYM_QUANT: return kd_quantize(D, l);
    case IR_SYM_VIEW: return 1;
    case IR_SYM_PRIM:
        if ((unsigned)op->spec.kind < IR_KIND_COUNT && kd_stages[op->spec.kind])
            return kd_stages[op->spec.kind](D, l);
        return ir_leaf_fail(l, "the CUDA lane has no kernel for %s", ir_kind_name(op->spec.kind));
    case IR_SYM_FUSED: break;
    }
    return ir_leaf_fail(l, "not a leaf");
}

/* ── The C interface ─────────────────────────────────────────────────────────────────────────────────────── */

bool kernels_device_built(void) { return true; }
const char *kernels_device_archs(void) { return "sm_80, sm_89, sm_90"; }

int kernels_device_count(char err[IR_ERR_LEN])
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < 1) {
        snprintf(err, IR_ERR_LEN, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        cudaGetLastError(); /* the error is sticky for nothing else */
        return -1;
    }
    return n;
}

struct kernels_device *kernels_device_open(int index, char err[IR_ERR_LEN])
{
    int n = kernels_device_count(err);
    if (n < 0)
        return NULL;
    if (index < 0 || index >= n) {
        snprintf(err, IR_ERR_LEN, "no CUDA device %d (%d present)", index, n);
        return NULL;
    }
    cudaDeviceProp prop;
    memset(&prop, 0, sizeof prop);
    cudaError_t e = cudaSetDevice(index);
    if (e == cudaSuccess)
        e = cudaGetDeviceProperties(&prop, index);
    struct kernels_device *D = e == cudaSuccess ? (struct kernels_device *)calloc(1, sizeof *D) : NULL;
    if (D && ((e = cudaStreamCreateWithFlags(&D->stream, cudaStreamNonBlocking)) != cudaSuccess ||
              (e = cudaEventCreate(&D->t0)) != cudaSuccess || (e = cudaEventCreate(&D->t1)) != cudaSuccess)) {
        free(D);
        D = NULL;
    }
    if (!D) {
        snprintf(err, IR_ERR_LEN, "CUDA device %d: %s", index,
                 e != cudaSuccess ? cudaGetErrorString(e) : "out of memory");
        return NULL;
    }
    D->index = index;
    kernels_device_backend_name(prop.name, prop.major, prop.minor, D->backend, sizeof D->backend);
    kd_stages_fill();
    return D;
}

/* Give back the prepared graph's memory and slots. */
static void kd_release(struct kernels_device *D)
{
    if (D->mem)
        cudaFree(D->mem);
    free(D->slots);
    D->mem = NULL;
    D->slots = NULL;
    D->nslots = 0;
    D->size = D->transient = D->used = 0;
    D->g = NULL;
}

void kernels_device_close(struct kernels_device *D)
{
    if (!D)
        return;
    cudaSetDevice(D->index);
    kd_release(D);
    cudaEventDestroy(D->t0);
    cudaEventDestroy(D->t1);
    cudaStreamDestroy(D->stream);
    free(D);
}

const char *kernels_device_backend(const struct kernels_device *D) { return D ? D->backend : "host"; }

/* The persistent slots of g's tensors (checkpoint rows, quantized words) laid out from offset `at` into slots (when
 * not NULL); their bytes. */
static int64_t kd_layout(const struct ir_graph *g, int64_t at, struct kd_slot *slots)
{
    int64_t top = 0;
    for (ir_tid t = 0; t < g->ntensors; t++) {
        int64_t wb = g->tensors[t].checkpoint ? kernels_device_tensor_bytes(g, t) : 0;
        int64_t qb = kernels_device_words_bytes(g, t);
        if (slots) {
            slots[t].weights = wb ? at + top : -1;
            slots[t].words = qb ? at + top + (wb ? kd_round(wb) : 0) : -1;
        }
        top += (wb ? kd_round(wb) : 0) + (qb ? kd_round(qb) : 0);
    }
    return top;
}

int kernels_device_prepare(struct kernels_device *D, const struct kernels_point *p, const struct ir_graph *g,
                           char err[IR_ERR_LEN])
{
    int64_t need = kernels_device_need(p, g), persist = kd_layout(g, 0, NULL);
    /* the transient room: the f32 buffers and the scratch, with the alignment of a stage's handful of buffers */
    int64_t transient = kd_round(need > persist ? need - persist : 0) + (int64_t)KD_ALIGN * 64;
    size_t free_b = 0, total = 0;
    cudaError_t e = cudaSetDevice(D->index);
    if (e == cudaSuccess)
        e = cudaMemGetInfo(&free_b, &total);
    if (e != cudaSuccess) {
        snprintf(err, IR_ERR_LEN, "%s: %s", D->backend, cudaGetErrorString(e));
        return -1;
    }
    if (transient + persist > (int64_t)free_b) {
        snprintf(err, IR_ERR_LEN, "%s: the graph needs %lld bytes of device memory; the device has %lld free (of %lld)",
                 D->backend, (long long)need, (long long)free_b, (long long)total);
        return -1;
    }
    kd_release(D);
    D->slots = (struct kd_slot *)calloc((size_t)(g->ntensors > 0 ? g->ntensors : 1), sizeof *D->slots);
    if (!D->slots) {
        snprintf(err, IR_ERR_LEN, "out of memory");
        return -1;
    }
    kd_layout(g, transient, D->slots);
    D->nslots = g->ntensors;
    D->transient = transient;
    D->size = transient + persist;
    if ((e = cudaMalloc((void **)&D->mem, (size_t)D->size)) != cudaSuccess) {
        snprintf(err, IR_ERR_LEN, "%s: %lld bytes of device memory: %s", D->backend, (long long)D->size,
                 cudaGetErrorString(e));
        D->mem = NULL;
        kd_release(D);
        return -1;
    }
    D->g = g;
    return 0;
}

void kernels_device_plant_fault(struct kernels_device *D, enum kernels_fault f) { D->fault = f; }

double kernels_device_seconds(const struct kernels_device *D) { return D->seconds; }

int kernels_device_launch(struct kernels_device *D, struct kernels_lane *L, const struct ir_graph *g, int32_t op,
                          struct ir_values *v, char err[IR_ERR_LEN])
{
    if (D->g != g || !D->mem) {
        snprintf(err, IR_ERR_LEN, "launch %d (%s): the device was not prepared for this graph", (int)op,
                 kernels_launch_kernel(&g->ops[op]));
        return -1;
    }
    D->L = L;
    D->v = v;
    int rc = kernels_lane_walk(L, g, op, v, kd_leaf, D, err);
    D->L = NULL;
    D->v = NULL;
    return rc;
}

void kernels_device_forget(struct kernels_device *D)
{
    for (int32_t t = 0; t < D->nslots; t++)
        D->slots[t].nblocks = 0;
}
