/* kernels/device.cu — the device runner: the lane's launches on a CUDA device. It takes the kernels in (kernels.cu,
 * one translation unit) and gives them a stage table mirroring the host lane's (kernels/host.c): each stage fetches
 * its operands by kernels/operands.inc's plan — the host lane's own lines — as device pointers, launches the matching
 * kc_* kernel with the geometry the host lane walks, on the device's one stream, and checks CUDA's word after every
 * launch, naming the launch and the stage.
 *
 * Memory: one allocation a graph, sized before any launch by kernels_device_need (refused, with the bytes, when the
 * device has not that much free; the simulated device's layout is larger: a guard page after every buffer). Every tensor of the graph has its buffer there: a checkpoint constant in its GGML
 * block format (uploaded once), every other tensor as f32 values; each quantize result has its int8 words; each
 * launch a flag word; then the room a stage's gathers and scratch take. The walk over a launch's ops, parts and
 * placements is the evaluator's (through kernels_lane_walk), so data moves as it does on the host: a strided read is
 * gathered on the device, a placement copied on the device, a view moved on the device.
 *
 * Two ways to run. kernels_device_launch runs one launch fed from the host (the tolerance run's launch by launch
 * comparison): the tensors it reads uploaded, the tensors it writes read back. kernels_device_step runs a whole step
 * on the device's own buffers: only the host's inputs and params go up, only the observed tensors come back, caches
 * and state stay; the step is captured as a CUDA graph and replayed. The arithmetic is arith.inc's only: nothing here
 * computes a value. */
#include "device_names.h" /* kernels_cuda_*, or kernels_sim_* in the simulator's build */

#include "kernels.cu"

#ifndef KERNELS_SIM
#include <cuda_runtime.h>
#endif
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "operands.inc"

/* Threads of an elementwise stage's block, and the most blocks its grid-stride loop takes. */
#define KD_THREADS 256
#define KD_MAX_BLOCKS 4096
/* The deepest a fused op nests (the evaluator's bound) plus the top-level op and the leaf. */
#define KD_PATH (IR_MAX_DEPTH + 2)

/* Tensor t's place in the allocation: its buffer (f32 values, or checkpoint rows in their block format), the host
 * bytes a checkpoint buffer holds, its quantized words and how many this step's quantize wrote. */
struct kd_slot {
    int64_t at, words;          /* offsets into the allocation; words -1 when no quantize writes t */
    const void *uploaded;       /* the host bytes the checkpoint buffer holds (NULL: none yet) */
    int64_t nblocks;            /* the words it holds (0: none yet) */
    int nwords;
};

struct kernels_device {
    int index;
    char backend[128];
    cudaStream_t stream;
    int smem_attn, smem_gdn;    /* the most dynamic shared memory a block of each may ask for */
    char *mem;                  /* the allocation */
    int64_t size, room_at, room, used; /* its bytes; the stage room's offset, bytes and what the stage has taken */
    int *flags;                 /* a flag word a launch (in the allocation) */
    struct kd_slot *slots;      /* by tensor of the prepared graph */
    int32_t nslots;
    const struct ir_graph *g;   /* the graph prepared */
    struct kernels_lane *L;     /* the lane of the walk running, and its values */
    struct ir_values *v;
    int32_t launch;             /* the launch the walk runs */
    bool stepping;              /* in a step (the device's own buffers) */
    enum kernels_fault fault;
    bool graphs;                /* capture steps as CUDA graphs */
    cudaGraphExec_t exec;       /* the step's graph, instantiated */
    struct kernels_point shot;  /* the lane's point it was captured at */
    const struct ir_values *owner; /* the values whose state the device holds (newer than the host's), or NULL */
    cudaEvent_t t0, t1;
    double seconds;             /* the kernels' time so far */
    struct kernels_device_stats stats;
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

/* CUDA's word on something outside a stage: 0, or -1 with err "<backend>: <what>: CUDA error ...". */
static int kd_fail(const struct kernels_device *D, cudaError_t e, char err[IR_ERR_LEN], const char *fmt, ...)
{
    if (e == cudaSuccess)
        e = cudaGetLastError();
    if (e == cudaSuccess)
        return 0;
    char what[IR_ERR_LEN / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(err, IR_ERR_LEN, "%s: %s: CUDA error %d (%s)", D->backend, what, (int)e, cudaGetErrorString(e));
    return -1;
}

/* ── The allocation ──────────────────────────────────────────────────────────────────────────────────────── */

/* n bytes of the stage's room (none taken for n ≤ 0), or NULL (the leaf failed) when it is spent. */
static void *kd_take(struct kernels_device *D, struct ir_leaf *l, int64_t n)
{
    int64_t need = kernels_device_round(n);
    if (D->used + need > D->room) {
        ir_leaf_fail(l, "the device's stage room (%lld bytes) is spent", (long long)D->room);
        return NULL;
    }
    void *p = D->mem + D->room_at + D->used;
    D->used += need;
    return p;
}

/* n values of the stage's room. */
static float *kd_room(struct kernels_device *D, struct ir_leaf *l, int64_t n)
{
    return (float *)kd_take(D, l, n * (int64_t)sizeof(float));
}

/* Tensor t's buffer on the device. */
static float *kd_buf(const struct kernels_device *D, ir_tid t) { return (float *)(D->mem + D->slots[t].at); }

/* A grid-stride grid for n values. */
static unsigned kd_blocks(int64_t n)
{
    int64_t b = (n + KD_THREADS - 1) / KD_THREADS;
    return (unsigned)(b < 1 ? 1 : b > KD_MAX_BLOCKS ? KD_MAX_BLOCKS : b);
}

/* ── Moving values between the host and the device ───────────────────────────────────────────────────────── */

/* Tensor t's host values copied into its device buffer (a plain tensor the host holds); 0, or -1 with err. */
static int kd_upload(struct kernels_device *D, const struct ir_values *v, ir_tid t, char err[IR_ERR_LEN])
{
    const float *h = ir_values_cdata(v, t);
    int64_t n = ir_tensor_len(D->g, t);
    if (!h || n <= 0 || D->g->tensors[t].checkpoint)
        return 0;
    D->stats.uploaded += n * (int64_t)sizeof(float);
    return kd_fail(D, cudaMemcpyAsync(kd_buf(D, t), h, sizeof(float) * (size_t)n, cudaMemcpyHostToDevice, D->stream),
                   err, "uploading %s", D->g->tensors[t].name);
}

/* Tensor t's device buffer copied back into the host's values (after the stream's work); 0, or -1 with err. */
static int kd_read(struct kernels_device *D, struct ir_values *v, ir_tid t, char err[IR_ERR_LEN])
{
    float *h = ir_values_data(v, t);
    int64_t n = ir_tensor_len(D->g, t);
    if (!h || n <= 0 || D->g->tensors[t].checkpoint)
        return 0;
    D->stats.read += n * (int64_t)sizeof(float);
    return kd_fail(D, cudaMemcpyAsync(h, kd_buf(D, t), sizeof(float) * (size_t)n, cudaMemcpyDeviceToHost, D->stream),
                   err, "reading %s back", D->g->tensors[t].name);
}

/* Every checkpoint constant of the graph that v holds in bytes the device does not have uploaded (once a graph and
 * checkpoint: the host's rows do not move). 0, or -1 with err. */
static int kd_upload_weights(struct kernels_device *D, const struct ir_values *v, char err[IR_ERR_LEN])
{
    for (ir_tid t = 0; t < D->g->ntensors; t++) {
        struct ir_ckpt_rows ck;
        struct kd_slot *s = &D->slots[t];
        if (!D->g->tensors[t].checkpoint || !ir_values_checkpoint(v, t, &ck) || s->uploaded == ck.bytes)
            continue;
        size_t n = (size_t)(ck.srows * ck.row_bytes);
        if ((int64_t)n > kernels_device_tensor_bytes(D->g, t)) {
            snprintf(err, IR_ERR_LEN, "%s: checkpoint rows of %s are %zu bytes, their buffer %lld", D->backend,
                     D->g->tensors[t].name, n, (long long)kernels_device_tensor_bytes(D->g, t));
            return -1;
        }
        D->stats.uploaded += (int64_t)n;
        if (kd_fail(D, cudaMemcpyAsync(D->mem + s->at, ck.bytes, n, cudaMemcpyHostToDevice, D->stream), err,
                    "uploading the checkpoint rows of %s", D->g->tensors[t].name))
            return -1;
        s->uploaded = ck.bytes;
    }
    return 0;
}

/* The owner's state written back into its host values: another use of the device's buffers is about to replace it
 * (the device held the only current copy). Under the planted STALE_STATE fault nothing is written back. 0, or -1. */
static int kd_evict(struct kernels_device *D, char err[IR_ERR_LEN])
{
    struct ir_values *v = D->fault == KERNELS_FAULT_STALE_STATE ? NULL : (struct ir_values *)D->owner;
    D->owner = NULL;
    for (ir_tid t = 0; v && t < D->g->ntensors; t++)
        if (D->g->tensors[t].role == IR_ROLE_STATE && kd_read(D, v, t, err))
            return -1;
    return v ? kd_fail(D, cudaStreamSynchronize(D->stream), err, "writing the state back") : 0;
}

/* ── A stage's operands on the device (kernels/operands.inc's plan) ──────────────────────────────────────── */

/* Row index ri of the stage (a named one at operand `at`, in [0, hi]) as its kernel reads it: a literal resolved
 * here, a named one read by the kernel from its tensor's buffer on the device (so a captured step replays at every
 * position), and checked here too when the host holds its value (a launch fed from the host, or a step's input or
 * param: the host lane's own message), its value into *known (-1 when only the device has it). 0, or -1. */
static int kd_row(struct kernels_device *D, struct ir_leaf *l, const struct ir_rowidx *ri, int at, int64_t hi,
                  const char *what, kc_row *out, int64_t *known)
{
    memset(out, 0, sizeof *out);
    out->hi = hi;
    out->bad = D->flags + D->launch;
    *known = -1;
    if (ri->kind != IR_RIDX_NAMED)
        return ir_leaf_row(l, ri, at, hi, what, &out->fixed) ? -1 : (*known = out->fixed, 0);
    ir_tid t = ir_leaf_operand(l, at);
    if (t == IR_NONE)
        return -1;
    if (D->g->tensors[t].checkpoint)
        return ir_leaf_fail(l, "its %s index %s is not a plain tensor", what, D->g->tensors[t].name);
    out->at = kd_buf(D, t);
    if (D->stepping && !kernels_device_host_given(D->g, t))
        return 0;
    if (ir_leaf_row(l, ri, at, hi, what, known))
        return -1;
    if (D->fault == KERNELS_FAULT_STALE_ROW && D->stepping) { /* planted: the index the capture saw, kept */
        out->at = NULL;
        out->fixed = *known;
    }
    return 0;
}

/* Tensor t's checkpoint rows as the kernels read a matrix (its buffer must hold the host's rows). 0, or -1. */
static int kd_ckpt(struct kernels_device *D, struct ir_leaf *l, ir_tid t, kc_weights *w)
{
    struct ir_ckpt_rows ck;
    memset(w, 0, sizeof *w);
    if (!ir_values_checkpoint(D->v, t, &ck))
        return ir_leaf_fail(l, "%s holds no checkpoint rows", D->g->tensors[t].name);
    if (D->slots[t].uploaded != ck.bytes)
        return ir_leaf_fail(l, "the checkpoint rows of %s are not on the device", D->g->tensors[t].name);
    w->bytes = (const unsigned char *)(D->mem + D->slots[t].at);
    w->row_bytes = ck.row_bytes;
    w->format = (int)ck.format;
    w->transposed = ck.transposed;
    w->cols = D->g->tensors[t].cols;
    return 0;
}

/* Every value of tensor t as f32 on the device: its buffer, or its checkpoint rows decoded into the room. */
static const float *kd_values(struct kernels_device *D, struct ir_leaf *l, ir_tid t)
{
    if (!D->g->tensors[t].checkpoint)
        return kd_buf(D, t);
    kc_weights w;
    const struct ir_tensor *T = &D->g->tensors[t];
    float *y = kd_ckpt(D, l, t, &w) ? NULL : kd_room(D, l, T->rows * T->cols);
    if (!y)
        return NULL;
    KC_LAUNCH(kc_dequant, kd_blocks(T->rows * T->cols), KD_THREADS, 0, D->stream)(w, T->rows, T->cols, y);
    return kd_check(l, "a checkpoint's decode", cudaSuccess) ? NULL : y;
}

/* The first `need` values operand i reads: its buffer when read whole, else its units gathered into the room (the
 * evaluator's read, with its checks). NULL with the failure written. */
static const float *kd_arg(struct kernels_device *D, struct ir_leaf *l, int i, int64_t need)
{
    ir_tid t = ir_leaf_operand(l, i);
    if (t == IR_NONE)
        return NULL;
    const char *name = D->g->tensors[t].name;
    int64_t len = ir_tensor_len(D->g, t);
    if (need < 0) {
        ir_leaf_fail(l, "operand %d (%s): the size the spec asks overflows", i, name);
        return NULL;
    }
    const struct ir_access *a = &ir_leaf_op(l)->access[i];
    if (!a->strided && len < need) {
        ir_leaf_fail(l, "operand %d (%s) holds %lld values, the op reads %lld", i, name, (long long)len,
                     (long long)need);
        return NULL;
    }
    const struct ir_strided *st = &a->s;
    if (a->strided && (st->width <= 0 || st->pitch < 0 || st->offset < 0 || need % st->width != 0)) {
        ir_leaf_fail(l, "operand %d (%s): a strided read of width %lld does not give %lld values", i, name,
                     (long long)st->width, (long long)need);
        return NULL;
    }
    int64_t units = a->strided ? need / st->width : 0;
    if (a->strided && units && (units - 1) * st->pitch + st->offset + st->width > len) {
        ir_leaf_fail(l, "operand %d (%s): %lld units of pitch %lld reach past its %lld values", i, name,
                     (long long)units, (long long)st->pitch, (long long)len);
        return NULL;
    }
    const float *src = kd_values(D, l, t);
    if (!src || !a->strided)
        return src;
    float *y = kd_room(D, l, need);
    if (!y)
        return NULL;
    if (need > 0)
        KC_LAUNCH(kc_gather, kd_blocks(need), KD_THREADS, 0, D->stream)(src, need, st->width, st->pitch, st->offset, y);
    return kd_check(l, "a strided read's gather", cudaSuccess) ? NULL : y;
}

/* Every value operand i can read (a table), their count into *len. */
static const float *kd_all(struct kernels_device *D, struct ir_leaf *l, int i, int64_t *len)
{
    ir_tid t = ir_leaf_operand(l, i);
    if (t == IR_NONE)
        return NULL;
    int64_t n = ir_tensor_len(D->g, t);
    const struct ir_access *a = &ir_leaf_op(l)->access[i];
    if (a->strided && a->s.width > 0 && a->s.offset >= 0 && a->s.pitch >= 0) {
        int64_t first = a->s.offset + a->s.width;
        n = (first > n ? 0 : a->s.pitch == 0 ? 1 : (n - first) / a->s.pitch + 1) * a->s.width;
    }
    *len = n;
    return kd_arg(D, l, i, n);
}

/* Operand i as state written in place: a plain tensor read whole, holding at least need values. */
static float *kd_state(struct kernels_device *D, struct ir_leaf *l, int i, int64_t need)
{
    ir_tid t = ir_leaf_operand(l, i);
    if (t == IR_NONE)
        return NULL;
    if (ir_leaf_op(l)->access[i].strided || D->g->tensors[t].checkpoint || need < 0 || ir_tensor_len(D->g, t) < need) {
        ir_leaf_fail(l, "operand %d (%s), written in place, must be a plain tensor read whole of at least %lld values",
                     i, D->g->tensors[t].name, (long long)need);
        return NULL;
    }
    return kd_buf(D, t);
}

/* Operand i as a rows × cols matrix: checkpoint rows read whole from their buffer, or plain values. 0, or -1. */
static int kd_mat(struct kernels_device *D, struct ir_leaf *l, int i, int64_t rows, int64_t cols, kc_weights *w)
{
    ir_tid t = ir_leaf_operand(l, i);
    memset(w, 0, sizeof *w);
    if (t == IR_NONE)
        return -1;
    const struct ir_tensor *T = &D->g->tensors[t];
    w->cols = cols;
    if (!ir_leaf_op(l)->access[i].strided && T->checkpoint) {
        if (T->rows != rows || T->cols != cols)
            return ir_leaf_fail(l, "weights %s are %lld x %lld, the kernel reads %lld x %lld", T->name,
                                (long long)T->rows, (long long)T->cols, (long long)rows, (long long)cols);
        return kd_ckpt(D, l, t, w);
    }
    w->plain = kd_arg(D, l, i, rows * cols);
    return w->plain ? 0 : -1;
}

/* The stage's result buffer: its result tensor's, of exactly len values. */
static float *kd_result(struct kernels_device *D, struct ir_leaf *l, int64_t len)
{
    ir_tid t = ir_leaf_op(l)->out;
    if (t < 0 || t >= D->g->ntensors || D->g->tensors[t].checkpoint || ir_tensor_len(D->g, t) != len) {
        ir_leaf_fail(l, "its result holds %lld values, the op computes %lld",
                     t >= 0 && t < D->g->ntensors ? (long long)ir_tensor_len(D->g, t) : -1LL, (long long)len);
        return NULL;
    }
    return kd_buf(D, t);
}

/* A stage's operands on the device, by operand index: values, a table's count, a matrix, state written in place;
 * its row index (as the kernel reads it, and its value when the host knows it, else -1) and its result. */
struct kd_fetched {
    const float *x[KO_MAX];
    int64_t len[KO_MAX];
    kc_weights w[KO_MAX];
    float *io[KO_MAX];
    kc_row row;
    int64_t known;
    float *y;
};

/* Make the stage's reads (the plan the host lane's fetch makes) on the device, then its result. 0, or -1. */
static int kd_fetch(struct kernels_device *D, struct ir_leaf *l, struct kd_fetched *f)
{
    struct ko_plan p;
    char why[160];
    memset(f, 0, sizeof *f);
    int rc = ko_plan_of(ir_leaf_op(l), &p, why, sizeof why);
    if (rc)
        return rc < 0 ? ir_leaf_fail(l, "%s", why) : ir_leaf_fail(l, "the device has no stage for it");
    for (int k = 0; k < p.n; k++) {
        const struct ko_read *r = &p.at[k];
        bool ok = true;
        switch (r->use) {
        case KO_ARG: ok = (f->x[r->i] = kd_arg(D, l, r->i, r->n)) != NULL; break;
        case KO_ALL: ok = (f->x[r->i] = kd_all(D, l, r->i, &f->len[r->i])) != NULL; break;
        case KO_STATE: ok = (f->x[r->i] = f->io[r->i] = kd_state(D, l, r->i, r->n)) != NULL; break;
        case KO_MAT: ok = kd_mat(D, l, r->i, r->rows, r->cols, &f->w[r->i]) == 0; break;
        case KO_ROW: ok = kd_row(D, l, p.row, r->i, p.row_hi, p.row_what, &f->row, &f->known) == 0; break;
        }
        if (!ok)
            return -1;
    }
    f->y = kd_result(D, l, p.result);
    return f->y ? 0 : -1;
}

/* The int8 words of the stage's operand i when it is read whole: the device's own (a quantize ran here) or, in a
 * launch fed from the host, the lane's (loaded on the host) copied in. *q NULL when there are none; 0, or -1. */
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
    const void *h = D->stepping ? NULL : kernels_lane_quantized(D->L, t, &nb, words);
    if (!h)
        return 0;
    /* the tensor's own slot when it has one (kept for the launch's later stages), else the stage's room */
    bool slot = s && s->words >= 0 && nb * (int64_t)sizeof(struct ka_qblock) <= kernels_device_words_bytes(D->g, t);
    void *d = slot ? (void *)(D->mem + s->words) : kd_take(D, l, nb * (int64_t)sizeof(struct ka_qblock));
    D->stats.uploaded += nb * (int64_t)sizeof(struct ka_qblock);
    if (!d || kd_check(l, "a quantized activation's copy", cudaMemcpyAsync(d, h, sizeof(struct ka_qblock) * (size_t)nb,
                                                                          cudaMemcpyHostToDevice, D->stream)))
        return -1;
    if (slot) {
        s->nblocks = nb;
        s->nwords = *words;
    }
    *q = (const struct ka_qblock *)d;
    *nvalues = nb * KA_QBLOCK;
    return 0;
}

/* ── Stages ──────────────────────────────────────────────────────────────────────────────────────────────── */

/* A product's m × n outputs on the device: the host lane's blocks (a GEMV's warps of per_warp outputs, or a GEMM
 * tile's 128 outputs over four warps), heads side by side in the grid's y (x, r0 and y shifted by xh, rh, yh). The
 * planted GEMV fault shifts every output to the next (output j + 1 gets output j's value). */
static int kd_product(struct kernels_device *D, struct ir_leaf *l, const kc_product &p, int64_t m, int64_t n,
                      int per_warp, float *y, int64_t ys, int64_t heads, int64_t xh, int64_t rh, int64_t yh)
{
    int64_t threads = m <= KERNELS_GEMV_ROWS ? kernels_gemv_blk_norm_threads(per_warp) : 128;
    int64_t warps = threads / KA_WARP, per_block = m <= KERNELS_GEMV_ROWS ? warps * per_warp : KERNELS_GEMM_TILE_N;
    int pw = (int)(per_block / warps);
    if (D->fault == KERNELS_FAULT_GEMV_ROW && n > 1) {
        if (kd_check(l, "the planted fault's clear", cudaMemsetAsync(y, 0, sizeof(float) * (size_t)(m * ys),
                                                                    D->stream)))
            return -1;
        y += 1;
        n -= 1;
    }
    if (n <= 0 || m <= 0 || heads <= 0)
        return 0;
    dim3 grid((unsigned)((n + per_block - 1) / per_block), (unsigned)heads);
    KC_LAUNCH(kc_gemv, grid, (unsigned)threads, 0, D->stream)(p, m, n, pw, y, ys, xh, rh, yh);
    return kd_check(l, "the GEMV", cudaSuccess);
}

/* matmul: y[m×n] = x[m×k] · W[k×n], x's int8 words where the lane holds them. */
static int kd_matmul(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_matmul *s = &ir_leaf_op(l)->spec.u.matmul;
    kc_product p;
    memset(&p, 0, sizeof p);
    int64_t qn = 0;
    p.w = f->w[1];
    if (kd_words(D, l, 0, &p.q, &p.words, &qn))
        return -1;
    if (p.q && qn < s->m * s->k)
        return ir_leaf_fail(l, "its quantized activation holds %lld values, it reads %lld", (long long)qn,
                            (long long)(s->m * s->k));
    p.x = f->x[0];
    p.xs = s->k;
    p.k = s->k;
    p.plant = D->fault == KERNELS_FAULT_PARTIAL_WARP ? (int)D->fault : 0;
    int per_warp = kernels_rows_a_warp(p.w.bytes ? (enum ir_format)p.w.format : IR_FMT_F32, s->n, s->k, s->m);
    return kd_product(D, l, p, s->m, s->n, per_warp, f->y, s->n, 1, 0, 0, 0);
}

/* head_matmul: each head's slice of x by its rows of W, a head a grid row. */
static int kd_head_matmul(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_head_matmul *s = &ir_leaf_op(l)->spec.u.head_matmul;
    kc_product p;
    memset(&p, 0, sizeof p);
    p.w = f->w[1];
    p.x = f->x[0];
    p.xs = s->heads * s->a;
    p.k = s->a;
    return kd_product(D, l, p, s->m, s->b, 1, f->y, s->heads * s->b, s->heads, s->a, s->a, s->b);
}

/* rms_norm: a block a row of kernels_norm_threads(cols) threads. */
static int kd_rms_norm(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_rms_norm *s = &ir_leaf_op(l)->spec.u.rms_norm;
    const float *w = s->weight ? f->x[1] : NULL, *res = s->residual ? f->x[s->weight ? 2 : 1] : NULL;
    const float *b = s->bias ? f->x[1 + (s->weight ? 1 : 0) + (s->residual ? 1 : 0)] : NULL;
    if (s->rows > 0)
        KC_LAUNCH(kc_rms_norm, (unsigned)s->rows, (unsigned)kernels_norm_threads(s->cols), 0, D->stream)(
            f->x[0], w, res, b, s->cols, (float)s->eps, (float)s->offset, s->kind == IR_NORM_LAYER, f->y);
    return kd_check(l, "rms_norm", cudaSuccess);
}

/* l2_norm: as the RMS norm's block. */
static int kd_l2_norm(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_l2_norm *s = &ir_leaf_op(l)->spec.u.l2_norm;
    if (s->rows > 0)
        KC_LAUNCH(kc_l2_norm, (unsigned)s->rows, (unsigned)kernels_norm_threads(s->cols), 0, D->stream)(f->x[0], s->cols,
                                                                                              (float)s->eps, f->y);
    return kd_check(l, "l2_norm", cudaSuccess);
}

/* rope: a warp a head, at table row pos + head / (h / rows). */
static int kd_rope(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_rope *s = &ir_leaf_op(l)->spec.u.rope;
    int64_t per_row = s->h / s->rows, clen = f->len[1], slen = f->len[2], p = f->known;
    int64_t trows = s->half ? (clen < slen ? clen : slen) / s->half : INT64_MAX;
    if (p >= 0 && s->half && s->h > 0 && p + (s->h - 1) / per_row >= trows) /* the kernel checks it too */
        return ir_leaf_fail(l, "position %lld is past the tables' %lld rows", (long long)(p + (s->h - 1) / per_row),
                            (long long)trows);
    int64_t warps = KD_THREADS / KA_WARP;
    if (s->h > 0)
        KC_LAUNCH(kc_rope, (unsigned)((s->h + warps - 1) / warps), KD_THREADS, 0, D->stream)(
            f->x[0], f->x[1], f->x[2], s->h, s->hd, s->half, s->adjacent, per_row, f->row, trows, f->y);
    return kd_check(l, "rope", cudaSuccess);
}

/* attention: a block a query head and chunk (tiles of kernels_attention_tile_rows rows), then a block a head merging
 * its chunks in order; the chunks and the tiles' operands as the host lane takes them. */
static int kd_attention(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_attention *s = &ir_leaf_op(l)->spec.u.attention;
    const struct kernels_point *pt = kernels_lane_point(D->L);
    int64_t heads = s->rows * s->h;
    kc_attention a;
    memset(&a, 0, sizeof a);
    a.q = f->x[0];
    a.k = f->x[1];
    a.v = f->x[2];
    a.h = s->h;
    a.group = s->h / s->kv;
    a.hd = s->hd;
    a.vd = s->vd;
    a.kstride = s->kv * s->hd;
    a.vstride = s->kv * s->vd;
    a.pos = 0;
    a.posr = f->row;
    a.len = s->l;
    a.window = s->window;
    a.splits = kernels_attention_chunks(pt, s);
    a.scale = s->scale.has ? (float)s->scale.v : 1.0f / sqrtf((float)s->hd);
    a.capped = s->softcap.has;
    a.cap = (float)s->softcap.v;
    a.tile = kernels_attention_tile(pt, s);
    a.tile_rows = kernels_attention_tile_rows(pt, s);
    a.plant = D->fault == KERNELS_FAULT_MISSING_SYNC || D->fault == KERNELS_FAULT_TILE_SHORT ? (int)D->fault : 0;
    const float *sinks = s->sinks ? f->x[s->pos.kind == IR_RIDX_NAMED ? 4 : 3] : NULL;
    struct ka_softmax *st = (struct ka_softmax *)kd_take(D, l, heads * a.splits * (int64_t)sizeof *st);
    float *acc = st ? kd_room(D, l, heads * a.splits * s->vd) : NULL;
    if (!acc)
        return -1;
    size_t smem = (size_t)kernels_attn_smem(a.tile_rows, s->hd, s->vd);
    if ((int64_t)smem > D->smem_attn)
        return ir_leaf_fail(l, "attention's block asks %zu bytes of shared memory, the device gives %d", smem,
                            D->smem_attn);
    if (heads <= 0)
        return 0;
    KC_LAUNCH(kc_attention_chunk, dim3((unsigned)a.splits, (unsigned)heads), 128, smem, D->stream)(a, st, acc);
    if (kd_check(l, "attention's chunks", cudaSuccess))
        return -1;
    KC_LAUNCH(kc_attention_merge, (unsigned)heads, 128, 0, D->stream)(st, acc, s->h, s->vd, a.splits, sinks, f->y);
    return kd_check(l, "attention's merge", cudaSuccess);
}

/* moe: the router and its routing (one block), each kept expert's gate and up (a warp an output, a grid row a rank),
 * the down products summed by rank. */
static int kd_moe(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_moe *s = &ir_leaf_op(l)->spec.u.moe;
    kc_product router, gate;
    kc_moe_extra ex;
    int64_t qn = 0;
    memset(&router, 0, sizeof router);
    memset(&gate, 0, sizeof gate);
    router.w = f->w[1];
    gate.w = f->w[2];
    if (kd_words(D, l, 0, &gate.q, &gate.words, &qn))
        return -1;
    ex.router_b = s->bias ? f->x[5] : NULL; /* without bias x[5] may be the correction row */
    ex.gate_b = s->bias ? f->x[6] : NULL;
    ex.up_b = s->bias ? f->x[7] : NULL;
    ex.down_b = s->bias ? f->x[8] : NULL;
    ex.act = (int)s->act;
    ex.alpha = (float)s->alpha.v;
    ex.limit = (float)s->limit.v;
    struct ka_routing rt = ko_routing(s, s->correction ? f->x[s->bias ? 9 : 5] : NULL);
    float *prob = kd_room(D, l, s->experts), *room = prob ? kd_room(D, l, ka_route_room(&rt)) : NULL;
    int64_t *sel = room ? (int64_t *)kd_take(D, l, s->k * (int64_t)sizeof(int64_t)) : NULL;
    float *wts = sel ? kd_room(D, l, s->k) : NULL, *hid = wts ? kd_room(D, l, s->k * s->dff) : NULL;
    if (!hid)
        return -1;
    router.x = gate.x = f->x[0];
    router.xs = router.k = gate.xs = gate.k = s->d;
    KC_LAUNCH(kc_moe_route, 1, KD_THREADS, 0, D->stream)(router, ex, rt, prob, room, sel, wts);
    if (kd_check(l, "moe's routing", cudaSuccess))
        return -1;
    int64_t warps = KD_THREADS / KA_WARP;
    if (s->k > 0 && s->dff > 0) {
        dim3 grid((unsigned)((s->dff + warps - 1) / warps), (unsigned)s->k);
        KC_LAUNCH(kc_moe_gate_up, grid, KD_THREADS, 0, D->stream)(gate, f->w[3], ex, sel, s->dff, hid);
        if (kd_check(l, "moe's gate and up", cudaSuccess))
            return -1;
    }
    if (s->d > 0)
        KC_LAUNCH(kc_moe_down, (unsigned)((s->d + warps - 1) / warps), KD_THREADS, 0, D->stream)(f->w[4], ex, sel, wts, hid,
                                                                                          s->k, s->d, s->dff, f->y);
    return kd_check(l, "moe's down", cudaSuccess);
}

/* elementwise: a thread a value, b broadcast by rows when it is one row. */
static int kd_elementwise(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_elementwise *s = &ir_leaf_op(l)->spec.u.elementwise;
    int64_t n = s->n - (D->fault == KERNELS_FAULT_GRID_SHORT && s->n > 0) /* planted: one element short */
                + (D->fault == KERNELS_FAULT_ROW_PAST);               /* planted: one element past */
    KC_LAUNCH(kc_elementwise, kd_blocks(n), KD_THREADS, 0, D->stream)(f->x[0], f->x[1], n, s->row, (int)s->op, f->y);
    return kd_check(l, "elementwise", cudaSuccess);
}

/* silu, sigmoid, gelu, relu: a thread a value. */
static int kd_unary(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_op *op = ir_leaf_op(l);
    int64_t n = op->spec.u.unary.n;
    KC_LAUNCH(kc_unary, kd_blocks(n), KD_THREADS, 0, D->stream)(f->x[0], n, (int)op->spec.kind, f->y);
    return kd_check(l, ir_kind_name(op->spec.kind), cudaSuccess);
}

/* scale: a thread a value. */
static int kd_scale(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_scale *s = &ir_leaf_op(l)->spec.u.scale;
    KC_LAUNCH(kc_scale, kd_blocks(s->n), KD_THREADS, 0, D->stream)(f->x[0], s->n, (float)s->factor, f->y);
    return kd_check(l, "scale", cudaSuccess);
}

/* swiglu: a thread a value. */
static int kd_swiglu(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    int64_t n = ir_leaf_op(l)->spec.u.swiglu.total;
    KC_LAUNCH(kc_swiglu, kd_blocks(n), KD_THREADS, 0, D->stream)(f->x[0], f->x[1], n, f->y);
    return kd_check(l, "swiglu", cudaSuccess);
}

/* softcap: a thread a value. */
static int kd_softcap(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_softcap *s = &ir_leaf_op(l)->spec.u.softcap;
    KC_LAUNCH(kc_softcap, kd_blocks(s->n), KD_THREADS, 0, D->stream)(f->x[0], s->n, (float)s->cap, f->y);
    return kd_check(l, "softcap", cudaSuccess);
}

/* head_slice: a thread a value of the slices. */
static int kd_head_slice(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_head_slice *s = &ir_leaf_op(l)->spec.u.head_slice;
    int64_t n = (s->every > 0 ? s->n / s->every : 0) * s->width;
    KC_LAUNCH(kc_head_slice, kd_blocks(n), KD_THREADS, 0, D->stream)(f->x[0], n, s->every, s->from, s->width, f->y);
    return kd_check(l, "head_slice", cudaSuccess);
}

/* join: a thread a value, each unit's part of a then its part of b. */
static int kd_join(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_join *s = &ir_leaf_op(l)->spec.u.join;
    if (s->heads < 1 || (s->wa + s->wb) / s->heads < 1)
        return ir_leaf_fail(l, "a join of empty units");
    int64_t n = s->rows * (s->wa + s->wb);
    KC_LAUNCH(kc_join, kd_blocks(n), KD_THREADS, 0, D->stream)(f->x[0], f->x[1], n, s->wa / s->heads, s->wb / s->heads, f->y);
    return kd_check(l, "join", cudaSuccess);
}

/* argmax: a block a row, kernels_norm_threads(cols) threads. */
static int kd_argmax(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_argmax *s = &ir_leaf_op(l)->spec.u.argmax;
    if (s->rows > 0)
        KC_LAUNCH(kc_argmax, (unsigned)s->rows, (unsigned)kernels_norm_threads(s->cols), 0, D->stream)(f->x[0], s->cols, f->y);
    return kd_check(l, "argmax", cudaSuccess);
}

/* row_gather: one row of a table, decoded from its blocks. */
static int kd_row_gather(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_row_gather *s = &ir_leaf_op(l)->spec.u.row_gather;
    KC_LAUNCH(kc_row_gather, kd_blocks(s->cols), KD_THREADS, 0, D->stream)(f->w[0], f->row, s->cols, f->y);
    return kd_check(l, "row_gather", cudaSuccess);
}

/* rows_gather: the rows an index vector names; an index out of the table sets the launch's flag word (checked once
 * the launch or the step is done). */
static int kd_rows_gather(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_rows_gather *s = &ir_leaf_op(l)->spec.u.rows_gather;
    int64_t n = s->count * s->cols;
    KC_LAUNCH(kc_rows_gather, kd_blocks(n), KD_THREADS, 0, D->stream)(f->w[0], f->x[1], s->count, s->rows, s->cols,
                                                               D->flags + D->launch, f->y);
    return kd_check(l, "rows_gather", cudaSuccess);
}

/* set_row: rows of a cache written in place, rounded to the cache's type; the table copied to the result when it
 * is another tensor. */
static int kd_set_row(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_set_row *s = &ir_leaf_op(l)->spec.u.set_row;
    int64_t nsrc = s->count * s->cols;
    int keep = (int)kernels_lane_row_keep(D->L, ir_leaf_op(l)->ins[0]);
    if (nsrc > 0)
        KC_LAUNCH(kc_set_row, kd_blocks(nsrc), KD_THREADS, 0, D->stream)(f->x[1], s->count, s->cols, f->row, keep, f->io[0]);
    if (kd_check(l, "set_row", cudaSuccess))
        return -1;
    if (f->y == f->io[0] || s->rows * s->cols <= 0)
        return 0;
    return kd_check(l, "set_row's copy", cudaMemcpyAsync(f->y, f->io[0], sizeof(float) * (size_t)(s->rows * s->cols),
                                                        cudaMemcpyDeviceToDevice, D->stream));
}

/* causal_conv: a thread a channel; the ring moved on in place. */
static int kd_causal_conv(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_causal_conv *s = &ir_leaf_op(l)->spec.u.causal_conv;
    if (s->chan > 0)
        KC_LAUNCH(kc_causal_conv, kd_blocks(s->chan), KD_THREADS, 0, D->stream)(
            f->x[0], f->x[1], s->chan, s->taps, s->rows, (int)kernels_lane_point(D->L)->state, f->io[2], f->y);
    return kd_check(l, "causal_conv", cudaSuccess);
}

/* decay: a thread a value, −e^alog · softplus(a + dt_bias) by its head. */
static int kd_decay(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_decay *s = &ir_leaf_op(l)->spec.u.decay;
    KC_LAUNCH(kc_decay, kd_blocks(s->n), KD_THREADS, 0, D->stream)(f->x[0], f->x[1], f->x[2], s->n, s->n / s->rows, f->y);
    return kd_check(l, "decay", cudaSuccess);
}

/* gated_delta: a block a value head, its memory staged in shared memory and updated in place. */
static int kd_gated_delta(struct kernels_device *D, struct ir_leaf *l, const struct kd_fetched *f)
{
    const struct ir_gated_delta *s = &ir_leaf_op(l)->spec.u.gated_delta;
    kc_gdn p;
    p.q = f->x[0];
    p.k = f->x[1];
    p.v = f->x[2];
    p.z = f->x[3];
    p.b = f->x[4];
    p.a = f->x[5];
    p.state = f->io[6];
    p.w = f->x[7];
    p.y = f->y;
    p.h = s->h;
    p.dk = s->dk;
    p.dv = s->dv;
    p.rows = s->rows;
    p.kh = s->kh ? s->kh : s->h;
    p.eps = (float)s->eps;
    p.sigmoid_gate = s->gate == IR_GATE_SIGMOID;
    p.keep = (int)kernels_lane_point(D->L)->state;
    size_t smem = sizeof(float) * (size_t)((s->dk + 1) * s->dv);
    if ((int64_t)smem > D->smem_gdn)
        return ir_leaf_fail(l, "gated_delta's block asks %zu bytes of shared memory, the device gives %d", smem,
                            D->smem_gdn);
    KC_LAUNCH(kc_gated_delta, (unsigned)s->h, (unsigned)kernels_gdn_threads(s->dv), smem, D->stream)(p);
    return kd_check(l, "gated_delta", cudaSuccess);
}

/* The device's stage for each primitive kind, as the host lane's table. */
typedef int (*kd_stage)(struct kernels_device *, struct ir_leaf *, const struct kd_fetched *);
static const struct {
    enum ir_kind kind;
    kd_stage fn;
} kd_stages[] = {
    {IR_KIND_MATMUL, kd_matmul},           {IR_KIND_ELEMENTWISE, kd_elementwise}, {IR_KIND_RMS_NORM, kd_rms_norm},
    {IR_KIND_ROPE, kd_rope},               {IR_KIND_ROW_GATHER, kd_row_gather},   {IR_KIND_ROWS_GATHER, kd_rows_gather},
    {IR_KIND_SET_ROW, kd_set_row},         {IR_KIND_ATTENTION, kd_attention},     {IR_KIND_MOE, kd_moe},
    {IR_KIND_SILU, kd_unary},              {IR_KIND_SIGMOID, kd_unary},           {IR_KIND_GELU, kd_unary},
    {IR_KIND_RELU, kd_unary},              {IR_KIND_SCALE, kd_scale},             {IR_KIND_SWIGLU, kd_swiglu},
    {IR_KIND_HEAD_MATMUL, kd_head_matmul}, {IR_KIND_L2_NORM, kd_l2_norm},         {IR_KIND_ARGMAX, kd_argmax},
    {IR_KIND_SOFTCAP, kd_softcap},         {IR_KIND_HEAD_SLICE, kd_head_slice},   {IR_KIND_JOIN, kd_join},
    {IR_KIND_CAUSAL_CONV, kd_causal_conv}, {IR_KIND_DECAY, kd_decay},             {IR_KIND_GATED_DELTA, kd_gated_delta},
};

/* A primitive: its operands fetched, its stage run. */
static int kd_prim(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_op *op = ir_leaf_op(l);
    for (size_t k = 0; k < sizeof kd_stages / sizeof kd_stages[0]; k++)
        if (kd_stages[k].kind == op->spec.kind) {
            struct kd_fetched f;
            return kd_fetch(D, l, &f) ? -1 : kd_stages[k].fn(D, l, &f);
        }
    return ir_leaf_fail(l, "the CUDA lane has no kernel for %s", ir_kind_name(op->spec.kind));
}

/* quantize: a warp a block of 32; the words kept in the tensor's slot for the products that read them. */
static int kd_quantize(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_op *op = ir_leaf_op(l);
    int64_t n = op->out >= 0 && op->out < D->g->ntensors ? ir_tensor_len(D->g, op->out) : 0;
    if (op->quant_words != 1 && op->quant_words != 2)
        return ir_leaf_fail(l, "%d words a value (1 or 2)", (int)op->quant_words);
    struct kd_slot *s = op->out >= 0 && op->out < D->nslots ? &D->slots[op->out] : NULL;
    if (!s || s->words < 0)
        return ir_leaf_fail(l, "its result has no slot for its words on the device");
    const float *x = kd_arg(D, l, 0, n);
    float *y = x ? kd_result(D, l, n) : NULL;
    if (!y)
        return -1;
    int64_t nb = (n + KA_QBLOCK - 1) / KA_QBLOCK, warps = KD_THREADS / KA_WARP;
    if (nb > 0)
        KC_LAUNCH(kc_quantize, (unsigned)((nb + warps - 1) / warps), KD_THREADS, 0, D->stream)(
            x, n, op->quant_words, (struct ka_qblock *)(D->mem + s->words), y);
    s->nblocks = nb;
    s->nwords = op->quant_words;
    return kd_check(l, "quantize", cudaSuccess);
}

/* view: values [offset, offset + n) of its operand, moved on the device. */
static int kd_view(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_op *op = ir_leaf_op(l);
    int64_t len = 0, n = op->out >= 0 && op->out < D->g->ntensors ? ir_tensor_len(D->g, op->out) : 0;
    const float *x = kd_all(D, l, 0, &len);
    if (!x)
        return -1;
    if (op->view_offset < 0 || op->view_offset + n > len)
        return ir_leaf_fail(l, "values [%lld, +%lld) are past the %lld it reads", (long long)op->view_offset,
                            (long long)n, (long long)len);
    float *y = kd_result(D, l, n);
    if (!y || n == 0)
        return y ? 0 : -1;
    return kd_check(l, "a view's copy", cudaMemcpyAsync(y, x + op->view_offset, sizeof(float) * (size_t)n,
                                                       cudaMemcpyDeviceToDevice, D->stream));
}

/* ── Placements ──────────────────────────────────────────────────────────────────────────────────────────── */

/* The row op's destination selects (the evaluator's dst_base) as kc_place reads it, with its width into *cols (0:
 * no rows); its value into *known when the host holds it (-1: only the device has it). 0, or -1. */
static int kd_dst_row(struct kernels_device *D, struct ir_leaf *l, const struct ir_dst *d, kc_row *r, int64_t *cols,
                      int64_t *known)
{
    memset(r, 0, sizeof *r);
    r->hi = IR_MAX_DIM;
    r->bad = D->flags + D->launch;
    *cols = 0;
    *known = 0;
    if (d->row == IR_ROWSEL_NONE)
        return 0;
    if (d->row_cols <= 0)
        return ir_leaf_fail(l, "its destination's rows are %lld values wide", (long long)d->row_cols);
    *cols = d->row_cols;
    if (d->row == IR_ROWSEL_FIXED) {
        if (d->row_fixed < 1 || d->row_fixed > IR_MAX_DIM)
            return ir_leaf_fail(l, "its destination row %lld (1-based) is out of range", (long long)d->row_fixed);
        r->fixed = *known = d->row_fixed - 1;
        return 0;
    }
    const float *h = d->row_param >= 0 && d->row_param < D->g->ntensors ? ir_values_cdata(D->v, d->row_param) : NULL;
    if (!h || ir_tensor_len(D->g, d->row_param) < 1)
        return ir_leaf_fail(l, "its destination's row param names no value");
    r->at = kd_buf(D, d->row_param);
    *known = -1;
    if (D->stepping && !kernels_device_host_given(D->g, d->row_param))
        return 0;
    double x = (double)h[0];
    if (!(x >= 0.0 && x <= (double)IR_MAX_DIM) || x != floor(x))
        return ir_leaf_fail(l, "destination row %g is not an integer in [0, %lld]", x, (long long)IR_MAX_DIM);
    *known = (int64_t)x;
    return 0;
}

/* Place op's result where its destination says, on the device, each value rounded as the buffer keeps it (the
 * evaluator's place and the host lane's rounding of cache rows); the region checked here when the host knows its
 * row, by the kernel always. 0, or -1. */
static int kd_place(struct kernels_device *D, struct ir_leaf *l, const struct ir_op *op)
{
    const struct ir_dst *d = &op->dst;
    if (!ko_placed(op))
        return 0;
    const struct ir_graph *g = D->g;
    if (op->out < 0 || op->out >= g->ntensors || d->buf < 0 || d->buf >= g->ntensors || g->tensors[d->buf].checkpoint ||
        g->tensors[op->out].checkpoint)
        return ir_leaf_fail(l, "its destination names no plain tensor");
    int64_t n = ir_tensor_len(g, op->out), cols, known, w = n, pitch = 0, off = 0;
    kc_row row;
    if (kd_dst_row(D, l, d, &row, &cols, &known))
        return -1;
    if (d->has_unit) {
        w = d->unit.width;
        pitch = d->unit.pitch;
        off = d->unit.offset;
        if (w <= 0 || pitch < 0 || off < 0 || n % w != 0)
            return ir_leaf_fail(l, "its %lld values are not whole units of %lld", (long long)n, (long long)w);
    }
    int64_t units = w ? n / w : 0, len = ir_tensor_len(g, d->buf);
    int64_t end = known < 0 ? 0 : units ? known * cols + (units - 1) * pitch + off + w : known * cols;
    if (end > len)
        return ir_leaf_fail(l, "its destination reaches value %lld of %s's %lld", (long long)end,
                            g->tensors[d->buf].name, (long long)len);
    if (n == 0)
        return 0;
    const float *src = kd_buf(D, op->out);
    D->used = 0; /* the stage before is done with its room (one stream) */
    if (d->buf == op->out) {
        float *copy = kd_room(D, l, n);
        if (!copy || kd_check(l, "a placement's copy", cudaMemcpyAsync(copy, src, sizeof(float) * (size_t)n,
                                                                      cudaMemcpyDeviceToDevice, D->stream)))
            return -1;
        src = copy;
    }
    int keep = (int)kernels_lane_row_keep(D->L, d->buf);
    KC_LAUNCH(kc_place, kd_blocks(n), KD_THREADS, 0, D->stream)(src, n, w, pitch, off, row, cols, len, keep, kd_buf(D, d->buf));
    return kd_check(l, "a placement", cudaSuccess);
}

/* The chain of ops from `op` down to `leaf` into path (op first); its length, 0 when leaf is not within op. */
static int kd_path(const struct ir_op *op, const struct ir_op *leaf, const struct ir_op **path, int depth)
{
    if (depth >= KD_PATH)
        return 0;
    path[depth] = op;
    if (op == leaf)
        return depth + 1;
    for (int32_t k = 0; op->sym == IR_SYM_FUSED && k < op->nparts; k++) {
        int n = kd_path(&op->parts[k], leaf, path, depth + 1);
        if (n)
            return n;
    }
    return 0;
}

/* After a leaf that is the last part of fused ops (innermost first), each of their own placements, as the
 * evaluator makes them once their parts are done. 0, or -1. */
static int kd_place_enclosing(struct kernels_device *D, struct ir_leaf *l)
{
    const struct ir_op *path[KD_PATH];
    int n = kd_path(&D->g->ops[D->launch], ir_leaf_op(l), path, 0);
    for (int k = n - 2; k >= 0; k--) {
        const struct ir_op *f = path[k];
        if (path[k + 1] != &f->parts[f->nparts - 1])
            break;
        if (!ko_placed_by_part(f) && kd_place(D, l, f))
            return -1;
    }
    return 0;
}

/* The leaf hook: the leaf run on the device (a quantize, a view, a primitive's stage), then its placement and those
 * of the fused ops it ends; the stage's room emptied first. The evaluator's walk then moves the host's copies,
 * which the device's own buffers supersede. */
static int kd_leaf(void *ctx, struct ir_leaf *l)
{
    struct kernels_device *D = (struct kernels_device *)ctx;
    const struct ir_op *op = ir_leaf_op(l);
    D->used = 0;
    int rc;
    switch (op->sym) {
    case IR_SYM_QUANT: rc = kd_quantize(D, l); break;
    case IR_SYM_VIEW: rc = kd_view(D, l); break;
    case IR_SYM_PRIM: rc = kd_prim(D, l); break;
    default: return ir_leaf_fail(l, "not a leaf");
    }
    return rc || kd_place(D, l, op) || kd_place_enclosing(D, l) ? -1 : 0;
}

/* ── Opening and preparing ───────────────────────────────────────────────────────────────────────────────── */

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

/* Kernel k allowed the device's opt-in shared memory less its static shared memory, into *allowed (set once at
 * open, never during a capture). */
static cudaError_t kd_allow_smem(const void *k, int optin, int *allowed)
{
    cudaFuncAttributes a;
    cudaError_t e = cudaFuncGetAttributes(&a, k);
    *allowed = e == cudaSuccess ? optin - (int)a.sharedSizeBytes : 0;
    return e != cudaSuccess ? e : cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, *allowed);
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
    int optin = 0, attn = 0, gdn = 0;
    cudaError_t e = cudaSetDevice(index);
    if (e == cudaSuccess)
        e = cudaGetDeviceProperties(&prop, index);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, index);
    if (e == cudaSuccess)
        e = kd_allow_smem((const void *)kc_attention_chunk, optin, &attn);
    if (e == cudaSuccess)
        e = kd_allow_smem((const void *)kc_gated_delta, optin, &gdn);
    struct kernels_device *D = e == cudaSuccess ? (struct kernels_device *)calloc(1, sizeof *D) : NULL;
    if (D && (e = cudaStreamCreateWithFlags(&D->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        free(D);
        D = NULL;
    }
    if (D && (e = cudaEventCreate(&D->t0)) != cudaSuccess) {
        cudaStreamDestroy(D->stream);
        free(D);
        D = NULL;
    }
    if (D && (e = cudaEventCreate(&D->t1)) != cudaSuccess) {
        cudaEventDestroy(D->t0);
        cudaStreamDestroy(D->stream);
        free(D);
        D = NULL;
    }
    if (!D) {
        snprintf(err, IR_ERR_LEN, "CUDA device %d: %s", index,
                 e != cudaSuccess ? cudaGetErrorString(e) : "out of memory");
        return NULL;
    }
    D->index = index;
    D->smem_attn = attn;
    D->smem_gdn = gdn;
    const char *env = getenv("FUSECHECK_CUDA_GRAPHS");
    D->graphs = !(env && strcmp(env, "0") == 0);
    kernels_device_backend_name(prop.name, prop.major, prop.minor, D->backend, sizeof D->backend);
    return D;
}

/* Drop the step's graph and what it was captured with. */
static void kd_drop_graph(struct kernels_device *D)
{
    if (D->exec)
        cudaGraphExecDestroy(D->exec);
    D->exec = NULL;
}

/* Give back the prepared graph's memory, slots and step graph. */
static void kd_release(struct kernels_device *D)
{
    kd_drop_graph(D);
    if (D->mem)
        cudaFree(D->mem);
    free(D->slots);
    D->mem = NULL;
    D->flags = NULL;
    D->slots = NULL;
    D->nslots = 0;
    D->size = D->room_at = D->room = D->used = 0;
    D->g = NULL;
    D->owner = NULL;
}

void kernels_device_close(struct kernels_device *D)
{
    if (!D)
        return;
    cudaSetDevice(D->index);
    cudaStreamSynchronize(D->stream);
    kd_release(D);
    cudaEventDestroy(D->t0);
    cudaEventDestroy(D->t1);
    cudaStreamDestroy(D->stream);
    free(D);
}

const char *kernels_device_backend(const struct kernels_device *D) { return D ? D->backend : "host"; }

#ifndef KERNELS_SIM
/* A buffer of n bytes laid out at *top, which moves past it to the next multiple of KERNELS_DEVICE_ALIGN: its offset.
 * (The simulated device lays each buffer out to end at a guard page instead, and closes those pages once the
 * allocation is made: KD_PLACE, KD_LAYOUT_BEGIN and KD_GUARD in kernels/sim_cuda.h.) */
static int64_t kd_pack(int64_t *top, int64_t n)
{
    int64_t at = *top;
    *top += kernels_device_round(n);
    return at;
}
#define KD_PLACE(top, n) kd_pack(top, n)
#define KD_LAYOUT_BEGIN() ((void)0)
#define KD_GUARD(mem) ((void)0)
#endif

/* The buffers of g's tensors (each tensor's, then its quantized words), the flag words and the stage room of `room`
 * bytes laid out from offset 0, into D's slots and offsets when D is not NULL; their bytes (kernels_device_need's,
 * packed as nvcc's runner packs them). */
static int64_t kd_layout(const struct ir_graph *g, int64_t room, struct kernels_device *D)
{
    int64_t top = 0;
    KD_LAYOUT_BEGIN();
    for (ir_tid t = 0; t < g->ntensors; t++) {
        int64_t qb = kernels_device_words_bytes(g, t);
        int64_t at = KD_PLACE(&top, kernels_device_tensor_bytes(g, t)), words = qb ? KD_PLACE(&top, qb) : -1;
        if (D) {
            D->slots[t].at = at;
            D->slots[t].words = words;
        }
    }
    int64_t flags = KD_PLACE(&top, kernels_device_flags_bytes(g)), room_at = KD_PLACE(&top, room);
    if (D) {
        D->flags = (int *)(D->mem + flags);
        D->room_at = room_at;
        D->room = room;
    }
    return top;
}

int kernels_device_prepare(struct kernels_device *D, const struct kernels_point *p, const struct ir_graph *g,
                           char err[IR_ERR_LEN])
{
    int64_t room = 0;
    for (int32_t i = 0; i < g->nops; i++) /* the launches run in turn: the largest room is what they take */
        room = kernels_device_scratch(p, g, i) > room ? kernels_device_scratch(p, g, i) : room;
    int64_t need = kd_layout(g, room, NULL);
    size_t free_b = 0, total = 0;
    cudaError_t e = cudaSetDevice(D->index);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(D->stream);
    if (e == cudaSuccess)
        e = cudaMemGetInfo(&free_b, &total);
    if (e != cudaSuccess) {
        snprintf(err, IR_ERR_LEN, "%s: %s", D->backend, cudaGetErrorString(e));
        return -1;
    }
    int64_t held = D->mem ? D->size : 0; /* the graph prepared before gives its memory back first */
    if (need > (int64_t)free_b + held) {
        snprintf(err, IR_ERR_LEN, "%s: the graph needs %lld bytes of device memory; the device has %lld free (of %lld)",
                 D->backend, (long long)need, (long long)free_b + (long long)held, (long long)total);
        return -1;
    }
    kd_release(D);
    D->slots = (struct kd_slot *)calloc((size_t)(g->ntensors > 0 ? g->ntensors : 1), sizeof *D->slots);
    if (!D->slots) {
        snprintf(err, IR_ERR_LEN, "out of memory");
        return -1;
    }
    D->nslots = g->ntensors;
    D->size = need;
    if ((e = cudaMalloc((void **)&D->mem, (size_t)(D->size > 0 ? D->size : 1))) != cudaSuccess) {
        snprintf(err, IR_ERR_LEN, "%s: %lld bytes of device memory: %s", D->backend, (long long)D->size,
                 cudaGetErrorString(e));
        cudaGetLastError();
        D->mem = NULL;
        kd_release(D);
        return -1;
    }
    kd_layout(g, room, D);
    KD_GUARD(D->mem);
    D->g = g;
    return kd_fail(D, cudaMemsetAsync(D->flags, 0, (size_t)kernels_device_flags_bytes(g), D->stream), err,
                   "clearing the flag words");
}

void kernels_device_plant_fault(struct kernels_device *D, enum kernels_fault f)
{
    if (D->fault != f)
        kd_drop_graph(D); /* a captured step holds the launches of the fault it was captured with */
    D->fault = f;
}

double kernels_device_seconds(const struct kernels_device *D) { return D->seconds; }

void kernels_device_use_graphs(struct kernels_device *D, bool on)
{
    D->graphs = on;
    if (!on)
        kd_drop_graph(D);
}

void kernels_device_release(struct kernels_device *D, const struct ir_values *v)
{
    if (!D)
        return;
    if (D->owner == v)
        D->owner = NULL;
    for (int32_t t = 0; t < D->nslots; t++) /* host bytes at a freed address may hold other rows later */
        D->slots[t].uploaded = NULL;
}

void kernels_device_stats_get(const struct kernels_device *D, struct kernels_device_stats *out) { *out = D->stats; }

void kernels_device_forget(struct kernels_device *D)
{
    for (int32_t t = 0; t < D->nslots; t++)
        D->slots[t].nblocks = 0;
}

/* ── Runs ────────────────────────────────────────────────────────────────────────────────────────────────── */

/* The launches' flag words read back and cleared; -1 with err naming the first launch whose kernel read a row index
 * out of its range. */
static int kd_flags(struct kernels_device *D, int32_t from, int32_t n, char err[IR_ERR_LEN])
{
    int *h = (int *)calloc((size_t)(n > 0 ? n : 1), sizeof *h);
    if (!h) {
        snprintf(err, IR_ERR_LEN, "out of memory");
        return -1;
    }
    int rc = kd_fail(D, cudaMemcpyAsync(h, D->flags + from, sizeof(int) * (size_t)n, cudaMemcpyDeviceToHost, D->stream),
                     err, "reading the flag words") ||
             kd_fail(D, cudaMemsetAsync(D->flags + from, 0, sizeof(int) * (size_t)n, D->stream), err,
                     "clearing the flag words") ||
             kd_fail(D, cudaStreamSynchronize(D->stream), err, "reading the flag words");
    for (int32_t i = 0; !rc && i < n; i++)
        if (h[i]) {
            snprintf(err, IR_ERR_LEN, "launch %d (%s): a row index is not an integer in its range (a rows_gather's "
                     "index, a position, a token or a destination row, read on the device)",
                     (int)(from + i), kernels_launch_kernel(&D->g->ops[from + i]));
            rc = -1;
        }
    free(h);
    return rc;
}

/* Launch `op` walked on the device (kernels_lane_walk: err names the launch). */
static int kd_walk(struct kernels_device *D, int32_t op, char err[IR_ERR_LEN])
{
    D->launch = op;
    return kernels_lane_walk(D->L, D->g, op, D->v, kd_leaf, D, err);
}

/* The tensors op reads (*nr of them) then those it writes or makes (*nw: its placements' buffers, and every result
 * its leaves compute, placed or not: the host compares them all) into a new array; NULL with err when memory is
 * short. */
static ir_tid *kd_touched(const struct ir_graph *g, const struct ir_op *op, int *nr, int *nw, char err[IR_ERR_LEN])
{
    int cap = g->ntensors + 1;
    ir_tid *t = (ir_tid *)calloc((size_t)(3 * cap), sizeof *t);
    if (!t) {
        snprintf(err, IR_ERR_LEN, "out of memory");
        return NULL;
    }
    *nr = ir_op_reads(op, t, cap);
    *nr = *nr < cap ? *nr : cap;
    *nw = ir_op_writes(op, t + *nr, cap);
    *nw = *nw < cap ? *nw : cap;
    int nm = ir_op_makes(op, t + *nr + *nw, cap);
    *nw += nm < cap ? nm : cap;
    return t;
}

int kernels_device_launch(struct kernels_device *D, struct kernels_lane *L, const struct ir_graph *g, int32_t op,
                          struct ir_values *v, char err[IR_ERR_LEN])
{
    if (D->g != g || !D->mem) {
        snprintf(err, IR_ERR_LEN, "launch %d (%s): the device was not prepared for this graph", (int)op,
                 kernels_launch_kernel(&g->ops[op]));
        return -1;
    }
    if (D->owner && kd_evict(D, err)) /* the host's copy of a stepped state is made current before it is read */
        return -1;
    int n = 0, nw = 0;
    ir_tid *t = kd_touched(g, &g->ops[op], &n, &nw, err);
    if (!t)
        return -1;
    D->L = L;
    D->v = v;
    D->stepping = false;
    int rc = kd_upload_weights(D, v, err);
    for (int k = 0; !rc && k < n + nw; k++) /* what it reads, and the rest of what it writes in part, as the host has it */
        rc = kd_upload(D, v, t[k], err);
    float ms = 0.0f;
    if (!rc)
        rc = kd_fail(D, cudaEventRecord(D->t0, D->stream), err, "timing launch %d", (int)op) || kd_walk(D, op, err) ||
             kd_fail(D, cudaEventRecord(D->t1, D->stream), err, "timing launch %d", (int)op);
    if (!rc && kd_fail(D, cudaStreamSynchronize(D->stream), err, "launch %d (%s)", (int)op,
                       kernels_launch_kernel(&g->ops[op])))
        rc = -1;
    if (!rc && cudaEventElapsedTime(&ms, D->t0, D->t1) == cudaSuccess)
        D->seconds += 1e-3 * ms;
    rc = rc || kd_flags(D, op, 1, err);
    for (int k = n; !rc && k < n + nw; k++) /* what it wrote, back into the host's values */
        rc = kd_read(D, v, t[k], err);
    if (!rc)
        rc = kd_fail(D, cudaStreamSynchronize(D->stream), err, "launch %d (%s): reading its results back", (int)op,
                     kernels_launch_kernel(&g->ops[op]));
    free(t);
    D->L = NULL;
    D->v = NULL;
    return rc;
}

/* Upload what a step takes from the host: its inputs and params, and — the first time v is stepped, or every step
 * under the planted STALE_STATE fault — every other plain tensor too (constants, state, and the activations as the
 * host made them, zero: the device's memory starts undefined). 0, or -1 with err. */
static int kd_step_inputs(struct kernels_device *D, const struct ir_values *v, char err[IR_ERR_LEN])
{
    bool all = D->owner != v || D->fault == KERNELS_FAULT_STALE_STATE;
    if (D->owner && D->owner != v && kd_evict(D, err))
        return -1;
    for (ir_tid t = 0; t < D->g->ntensors; t++) {
        enum ir_role r = D->g->tensors[t].role;
        if ((all || r == IR_ROLE_INPUT || r == IR_ROLE_PARAM) && kd_upload(D, v, t, err))
            return -1;
    }
    D->owner = v;
    return kd_upload_weights(D, v, err);
}

/* Capture the step's launches (walked on the host, recorded, not run: no host copy or sync inside; every row index
 * read by its kernel from the device) and instantiate them as the step's graph. 0, or -1 with err. */
static int kd_capture(struct kernels_device *D, char err[IR_ERR_LEN])
{
    cudaGraph_t graph = NULL;
    kernels_device_forget(D);
    if (kd_fail(D, cudaStreamBeginCapture(D->stream, cudaStreamCaptureModeThreadLocal), err, "beginning a capture"))
        return -1;
    int rc = 0;
    for (int32_t i = 0; !rc && i < D->g->nops; i++)
        rc = kd_walk(D, i, err);
    cudaError_t e = cudaStreamEndCapture(D->stream, &graph); /* always: the stream leaves capture mode */
    if (!rc && e == cudaSuccess) {
        D->stats.captures++;
        e = cudaGraphInstantiate(&D->exec, graph, 0);
        D->stats.instantiations += e == cudaSuccess;
    }
    if (graph)
        cudaGraphDestroy(graph);
    if (rc || e != cudaSuccess) {
        D->exec = NULL;
        return rc ? -1 : kd_fail(D, e, err, "capturing the step's %d launches", (int)D->g->nops);
    }
    D->shot = *kernels_lane_point(D->L);
    return 0;
}

/* Whether two operating points are the same. */
static bool kd_same_point(const struct kernels_point *a, const struct kernels_point *b)
{
    return a->chip == b->chip && a->acts == b->acts && a->cache == b->cache && a->state == b->state;
}

/* The step as its CUDA graph, captured the first time (or when the lane's point changed) and replayed: its inputs
 * are already in the buffers its kernels read. 0, or -1 with err. */
static int kd_step_graph(struct kernels_device *D, char err[IR_ERR_LEN])
{
    if (D->exec && !kd_same_point(&D->shot, kernels_lane_point(D->L)))
        kd_drop_graph(D);
    if (!D->exec && kd_capture(D, err))
        return -1;
    D->stats.replays++;
    cudaError_t e = cudaEventRecord(D->t0, D->stream);
    if (e == cudaSuccess)
        e = cudaGraphLaunch(D->exec, D->stream);
    if (e == cudaSuccess)
        e = cudaEventRecord(D->t1, D->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(D->stream);
    return kd_fail(D, e, err, "the step's graph of %d launches (run with FUSECHECK_CUDA_GRAPHS=0 to name the launch)",
                   (int)D->g->nops);
}

/* The step launch by launch, each checked once it is done so that an error names its launch. 0, or -1. */
static int kd_step_launches(struct kernels_device *D, char err[IR_ERR_LEN])
{
    kernels_device_forget(D);
    if (kd_fail(D, cudaEventRecord(D->t0, D->stream), err, "timing the step"))
        return -1;
    for (int32_t i = 0; i < D->g->nops; i++)
        if (kd_walk(D, i, err) || kd_fail(D, cudaStreamSynchronize(D->stream), err, "launch %d (%s)", (int)i,
                                          kernels_launch_kernel(&D->g->ops[i])))
            return -1;
    return kd_fail(D, cudaEventRecord(D->t1, D->stream), err, "timing the step") ||
           kd_fail(D, cudaStreamSynchronize(D->stream), err, "the step");
}

int kernels_device_step(struct kernels_device *D, struct kernels_lane *L, const struct ir_graph *g,
                        struct ir_values *v, char err[IR_ERR_LEN])
{
    if (D->g != g || !D->mem) {
        snprintf(err, IR_ERR_LEN, "%s: the device was not prepared for this graph", D->backend);
        return -1;
    }
    D->L = L;
    D->v = v;
    D->stepping = true;
    int rc = kd_step_inputs(D, v, err);
    if (!rc)
        rc = D->graphs ? kd_step_graph(D, err) : kd_step_launches(D, err);
    float ms = 0.0f;
    if (!rc && cudaEventElapsedTime(&ms, D->t0, D->t1) == cudaSuccess)
        D->seconds += 1e-3 * ms;
    rc = rc || kd_flags(D, 0, g->nops, err);
    for (ir_tid t = 0; !rc && t < g->ntensors; t++) /* what the host reads after the step */
        if (g->tensors[t].observed)
            rc = kd_read(D, v, t, err);
    if (!rc)
        rc = kd_fail(D, cudaStreamSynchronize(D->stream), err, "reading the step's observed tensors back");
    D->stats.steps += !rc;
    D->stepping = false;
    D->L = NULL;
    D->v = NULL;
    return rc;
}
