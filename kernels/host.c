/* kernels/host.c — the host lane: the CUDA lane's kernels run on the CPU. Each launch (a top-level op of a rewritten
 * graph) runs its stages (the op's leaves, in order) and each stage walks its grid, blocks, warps and lanes as the
 * kernel does, calling the arithmetic of kernels/arith.inc that the device kernels call too and combining partials
 * in the kernel's order (a warp's butterfly, a block's warps, a split attention's chunks in order).
 *
 * The walk over ops, parts, strided reads and placements is the evaluator's (ir_eval_ops_hooked): data moves the
 * same way in both executors, and only the arithmetic is the lane's. */
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

#include "arith.inc"
#include "operands.inc"

/* ── The lane and its operating point ────────────────────────────────────────────────────────────────────── */

/* The int8 words of one quantized activation tensor: a block of 32 values a struct, blocks in order. */
struct side {
    ir_tid t;
    int words;
    int64_t n, nblocks;
    struct ka_qblock *blocks;
};

struct kernels_lane {
    struct kernels_point point;
    struct ir_values *v;        /* the buffers of the launch running */
    const struct ir_graph *g;
    struct side *sides;         /* quantized activations by tensor */
    int nsides, sides_cap;
    enum kernels_fault fault;
    struct kernels_device *device; /* where the launches run, or NULL: here */
};

/* Parse the chip out of a lane shim's canonical name "cuda-lane:<chip>:...". */
static const struct kernels_chip *chip_of(const char *name)
{
    const char *p = strchr(name, ':');
    if (!p)
        return NULL;
    char chip[32];
    size_t n = strcspn(p + 1, ":");
    if (n >= sizeof chip)
        return NULL;
    memcpy(chip, p + 1, n);
    chip[n] = 0;
    return kernels_chip_find(chip);
}

int kernels_point_of(const struct shim *s, struct kernels_point *out, char err[IR_ERR_LEN])
{
    struct shim_contract c;
    memset(out, 0, sizeof *out);
    if (!s || strncmp(s->name, "cuda-lane:", 10) != 0 || !s->numerics || !s->numerics(s, &c)) {
        snprintf(err, IR_ERR_LEN, "shim '%s' is not the CUDA lane: only cuda-lane:<chip>:<activations> has kernels",
                 s ? s->name : "?");
        return -1;
    }
    out->chip = chip_of(s->name);
    if (!out->chip) {
        snprintf(err, IR_ERR_LEN, "shim '%s' names no chip the lane knows", s->name);
        return -1;
    }
    out->acts = c.activation_words == 2 ? KERNELS_ACTS_INT8X2 : c.activation_words == 1 ? KERNELS_ACTS_INT8
                                                                                        : KERNELS_ACTS_DEQUANT;
    out->cache = c.cache;
    out->state = c.state;
    return 0;
}

struct kernels_lane *kernels_lane_new(const struct kernels_point *p)
{
    struct kernels_lane *L = calloc(1, sizeof *L);
    if (L)
        L->point = *p;
    return L;
}

/* Drop every quantized activation the lane holds. */
static void sides_clear(struct kernels_lane *L)
{
    for (int i = 0; i < L->nsides; i++)
        free(L->sides[i].blocks);
    L->nsides = 0;
}

void kernels_lane_free(struct kernels_lane *L)
{
    if (!L)
        return;
    sides_clear(L);
    free(L->sides);
    free(L);
}

void kernels_lane_plant_fault(struct kernels_lane *L, enum kernels_fault f)
{
    L->fault = f;
    if (L->device)
        kernels_device_plant_fault(L->device, f);
}

void kernels_lane_use_device(struct kernels_lane *L, struct kernels_device *D)
{
    L->device = D;
    if (D)
        kernels_device_plant_fault(D, L->fault);
}

/* The quantized words the lane holds for tensor t, or NULL. */
static struct side *side_find(const struct kernels_lane *L, ir_tid t)
{
    for (int i = 0; i < L->nsides; i++)
        if (L->sides[i].t == t)
            return &L->sides[i];
    return NULL;
}

/* A slot for tensor t's words (n values, `words` a value), emptied; NULL when memory is short. */
static struct side *side_put(struct kernels_lane *L, ir_tid t, int64_t n, int words)
{
    struct side *s = side_find(L, t);
    if (!s) {
        if (L->nsides == L->sides_cap) {
            int cap = L->sides_cap ? 2 * L->sides_cap : 16;
            struct side *grown = realloc(L->sides, sizeof *grown * (size_t)cap);
            if (!grown)
                return NULL;
            L->sides = grown;
            L->sides_cap = cap;
        }
        s = &L->sides[L->nsides++];
        memset(s, 0, sizeof *s);
        s->t = t;
    }
    int64_t nb = (n + KA_QBLOCK - 1) / KA_QBLOCK;
    free(s->blocks);
    s->blocks = calloc((size_t)(nb ? nb : 1), sizeof *s->blocks);
    s->n = n;
    s->nblocks = nb;
    s->words = words;
    return s->blocks ? s : NULL;
}

/* Quantize n values x into the lane's words for t and their value into y: the quantize stage, a warp a block. */
static int quantize_into(struct kernels_lane *L, ir_tid t, const float *x, int64_t n, int words, float *y)
{
    struct side *s = side_put(L, t, n, words);
    if (!s)
        return -1;
    for (int64_t b = 0; b < s->nblocks; b++) {
        int m = (int)(n - b * KA_QBLOCK < KA_QBLOCK ? n - b * KA_QBLOCK : KA_QBLOCK);
        ka_quant_block(x + b * KA_QBLOCK, m, words, &s->blocks[b], y + b * KA_QBLOCK);
        if (L->fault == KERNELS_FAULT_SCALE_STEP && b == 0 && s->blocks[b].s[0] > 0.0f) {
            /* planted: the first block's scale one step of its max too large (max/126), its codes kept */
            s->blocks[b].s[0] = ka_amax(x, m) / 126.0f;
            for (int i = 0; i < m; i++) {
                float p = s->blocks[b].q[0][i] * s->blocks[b].s[0];
                y[i] = words == 2 ? p + s->blocks[b].q[1][i] * s->blocks[b].s[1] : p;
            }
        }
    }
    return 0;
}

const void *kernels_lane_quantized(const struct kernels_lane *L, ir_tid t, int64_t *nblocks, int *words)
{
    const struct side *s = side_find(L, t);
    if (!s)
        return NULL;
    *nblocks = s->nblocks;
    *words = s->words;
    return s->blocks;
}

int kernels_lane_load_quantized(struct kernels_lane *L, ir_tid t, const float *source, int64_t n, int words,
                                float *values)
{
    return quantize_into(L, t, source, n, words, values);
}

/* ── Weights ─────────────────────────────────────────────────────────────────────────────────────────────── */

int kernels_weights_get(struct ir_leaf *l, const struct ir_values *values, int i, int64_t rows, int64_t cols,
                        struct kernels_weights *w)
{
    memset(w, 0, sizeof *w);
    w->rows = rows;
    w->cols = cols;
    ir_tid t = ir_leaf_operand(l, i);
    if (t == IR_NONE)
        return -1;
    if (!ir_leaf_op(l)->access[i].strided && ir_values_checkpoint(values, t, &w->ck)) {
        const struct ir_tensor *T = &ir_leaf_graph(l)->tensors[t];
        if (T->rows != rows || T->cols != cols)
            return ir_leaf_fail(l, "weights %s are %lld x %lld, the kernel reads %lld x %lld", T->name,
                                (long long)T->rows, (long long)T->cols, (long long)rows, (long long)cols);
        w->ckpt = true;
        return 0;
    }
    w->plain = ir_leaf_arg_of(l, values, i, rows * cols);
    return w->plain ? 0 : -1;
}

/* Operand i of the stage, from the lane's buffers, as a rows × cols matrix. */
static int wmat_get(struct kernels_lane *L, struct ir_leaf *l, int i, int64_t rows, int64_t cols,
                    struct kernels_weights *w)
{
    return kernels_weights_get(l, L->v, i, rows, cols, w);
}

/* A stage's operands as the host lane holds them, by operand index (kernels/operands.inc's reads): values, a table's
 * count, a matrix, a state buffer written in place; its row index and its result. */
struct fetched {
    const float *x[KO_MAX];
    int64_t len[KO_MAX];
    struct kernels_weights w[KO_MAX];
    float *io[KO_MAX];
    int64_t row;
    float *y;
};

/* Make the stage's reads (operands.inc's plan for its op) from the lane's buffers, in the plan's order, then its
 * result; 0, or -1 with the failure written. */
static int fetch(struct kernels_lane *L, struct ir_leaf *l, struct fetched *f)
{
    struct ko_plan p;
    char why[160];
    memset(f, 0, sizeof *f);
    int rc = ko_plan_of(ir_leaf_op(l), &p, why, sizeof why);
    if (rc)
        return rc < 0 ? ir_leaf_fail(l, "%s", why) : ir_leaf_fail(l, "the host lane has no stage for it");
    for (int k = 0; k < p.n; k++) {
        const struct ko_read *r = &p.at[k];
        bool ok = true;
        switch (r->use) {
        case KO_ARG: ok = (f->x[r->i] = ir_leaf_arg(l, r->i, r->n)) != NULL; break;
        case KO_ALL: ok = (f->x[r->i] = ir_leaf_arg_all(l, r->i, &f->len[r->i])) != NULL; break;
        case KO_STATE: ok = (f->x[r->i] = f->io[r->i] = ir_leaf_state(l, r->i, r->n)) != NULL; break;
        case KO_MAT: ok = wmat_get(L, l, r->i, r->rows, r->cols, &f->w[r->i]) == 0; break;
        case KO_ROW: ok = ir_leaf_row(l, p.row, r->i, p.row_hi, p.row_what, &f->row) == 0; break;
        }
        if (!ok)
            return -1;
    }
    f->y = ir_leaf_result(l, p.result);
    return f->y ? 0 : -1;
}

/* W[t][j]: decoded from its block where the checkpoint keeps it. */
static float wmat_at(const struct kernels_weights *w, int64_t t, int64_t j)
{
    if (!w->ckpt)
        return w->plain[t * w->cols + j];
    if (w->ck.transposed)
        return ka_decode((int)w->ck.format, w->ck.bytes + j * w->ck.row_bytes, t);
    return ka_decode((int)w->ck.format, w->ck.bytes + t * w->ck.row_bytes, j);
}

/* W[t0 .. t0 + n)[j] into w: a chunk of a stored row decoded at once where the checkpoint keeps the column as a row
 * (t0 a multiple of 32), else value by value. */
static void wmat_chunk(const struct kernels_weights *w, int64_t t0, int64_t n, int64_t j, float *out)
{
    if (w->ckpt && w->ck.transposed && t0 % KA_QBLOCK == 0) {
        ka_decode_chunk((int)w->ck.format, w->ck.bytes + j * w->ck.row_bytes, t0, (int)n, out);
        return;
    }
    for (int64_t t = 0; t < n; t++)
        out[t] = wmat_at(w, t0 + t, j);
}

/* Whether output j's weights over k are whole integer-coded blocks of one row (the int8 dot product's case). */
static bool wmat_codes(const struct kernels_weights *w) { return w->ckpt && w->ck.transposed && ka_integer_codes((int)w->ck.format); }

/* ── Products: the GEMV's lanes and warps ────────────────────────────────────────────────────────────────── */

/* One product's operands as a kernel sees them: activations (f32 values and, quantized, their words), weights and
 * the slice of k and of the outputs the product covers. */
struct product {
    const float *x;            /* m rows of xs values */
    int64_t xs;
    const struct side *q;      /* the activation's words, or NULL */
    const struct kernels_weights *w;
    int64_t k, r0, c0;         /* contract W rows [r0, r0 + k); output j reads W column c0 + j */
    enum kernels_fault fault;
};

/* The term of 32-value chunk c of output (i, j): an exact integer dot under two scales, a quantized activation by
 * decoded weights, or an f32 dot. */
static float chunk_term(const struct product *p, int64_t i, int64_t j, int64_t c)
{
    int64_t t0 = c * KA_QBLOCK, n = p->k - t0 < KA_QBLOCK ? p->k - t0 : KA_QBLOCK;
    int64_t col = p->c0 + j;
    float w[KA_QBLOCK];
    if (p->q) {
        int64_t blocks_a_row = (p->k + KA_QBLOCK - 1) / KA_QBLOCK;
        int64_t b = i * blocks_a_row + c;
        if (p->fault == KERNELS_FAULT_SCALE_STEP && c + 1 < blocks_a_row)
            b++; /* planted: the next block's words */
        const struct ka_qblock *xb = &p->q->blocks[b];
        if (wmat_codes(p->w) && n == KA_QBLOCK && p->r0 % KA_QBLOCK == 0) {
            int codes[KA_QBLOCK];
            const unsigned char *row = p->w->ck.bytes + col * p->w->ck.row_bytes;
            float d = ka_codes32((int)p->w->ck.format, row, (p->r0 + t0) / KA_QBLOCK, codes);
            return ka_chunk_i8(xb, p->q->words, codes, d, KA_QBLOCK);
        }
        wmat_chunk(p->w, p->r0 + t0, n, col, w);
        return ka_chunk_i8_float(xb, p->q->words, w, (int)n);
    }
    wmat_chunk(p->w, p->r0 + t0, n, col, w);
    return ka_dot_f32(p->x + i * p->xs + t0, w, (int)n);
}

/* Output (i, j) of a product: lane l sums the chunks c ≡ l (mod 32) in order; the warp's butterfly adds the lanes. */
static float product_out(const struct product *p, int64_t i, int64_t j)
{
    float part[KA_WARP];
    int64_t chunks = (p->k + KA_QBLOCK - 1) / KA_QBLOCK;
    for (int l = 0; l < KA_WARP; l++) {
        float acc = 0.0f;
        for (int64_t c = l; c < chunks; c += KA_WARP)
            acc = ka_acc(acc, chunk_term(p, i, j, c));
        part[l] = acc;
    }
    return ka_warp_sum_host(part);
}

/* A product's m × n outputs over its grid: each block's warps take rows_a_warp outputs apiece, every activation
 * row at once (a GEMV) or the tile's rows (a GEMM: one tile of KERNELS_GEMM_TILE_N outputs a block). */
static void product_run(const struct product *p, int64_t m, int64_t n, int per_warp, float *y, int64_t ys)
{
    int64_t threads = m <= KERNELS_GEMV_ROWS ? kernels_gemv_blk_norm_threads(per_warp) : 128;
    int64_t warps = threads / KA_WARP, per_block = m <= KERNELS_GEMV_ROWS ? warps * per_warp : KERNELS_GEMM_TILE_N;
    int64_t grid = (n + per_block - 1) / per_block;
    for (int64_t b = 0; b < grid; b++)
        for (int64_t w = 0; w < per_block; w++) {
            int64_t j = b * per_block + w;
            if (j >= n)
                break;
            struct product q = *p;
            if (p->fault == KERNELS_FAULT_GEMV_ROW && w == per_block - 1 && j > 0)
                q.c0 -= 1; /* planted: the block's last output reads the row before its own */
            for (int64_t i = 0; i < m; i++)
                y[i * ys + j] = product_out(&q, i, j);
        }
}

/* The words of the stage's operand i when it is read whole and the lane holds them. */
static const struct side *quantized_operand(struct kernels_lane *L, struct ir_leaf *l, int i)
{
    const struct ir_op *op = ir_leaf_op(l);
    if (i >= op->nins || op->access[i].strided)
        return NULL;
    return side_find(L, op->ins[i]);
}

/* matmul: y[m×n] = x[m×k] · W[k×n]. */
static int st_matmul(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    const struct ir_matmul *s = &ir_leaf_op(l)->spec.u.matmul;
    const struct kernels_weights *w = &f->w[1];
    float *y = f->y;
    struct product p = {f->x[0], s->k, quantized_operand(L, l, 0), w, s->k, 0, 0, L->fault};
    int64_t row_blocks = (s->k + KA_QBLOCK - 1) / KA_QBLOCK;
    if (p.q && (p.q->n < s->m * s->k || p.q->nblocks < s->m * row_blocks))
        return ir_leaf_fail(l, "its quantized activation holds %lld values in %lld blocks of %d; %lld rows of %lld "
                            "read %lld blocks (a row must start on a block)", (long long)p.q->n,
                            (long long)p.q->nblocks, KA_QBLOCK, (long long)s->m, (long long)s->k,
                            (long long)(s->m * row_blocks));
    int per_warp = kernels_rows_a_warp(w->ckpt ? w->ck.format : IR_FMT_F32, s->n, s->k, s->m);
    product_run(&p, s->m, s->n, per_warp, y, s->n);
    return 0;
}

/* head_matmul: each head's slice of x by its rows of W. */
static int st_head_matmul(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    const struct ir_head_matmul *s = &ir_leaf_op(l)->spec.u.head_matmul;
    int64_t xa = s->heads * s->a, yb = s->heads * s->b;
    const float *x = f->x[0];
    float *y = f->y;
    for (int64_t h = 0; h < s->heads; h++) {
        struct product p = {x + h * s->a, xa, NULL, &f->w[1], s->a, h * s->a, 0, L->fault};
        product_run(&p, s->m, s->b, 1, y + h * s->b, yb);
    }
    return 0;
}

/* ── Norms: a block a row, a thread's strided values, warps then the block ───────────────────────────────── */

/* The block reduction of `threads` partials: each warp's butterfly, then the first warp's over the warps' sums. */
static float block_sum(const float *part, int64_t threads)
{
    float wsum[KA_WARP] = {0};
    int64_t warps = (threads + KA_WARP - 1) / KA_WARP;
    for (int64_t w = 0; w < warps; w++) {
        float lanes[KA_WARP] = {0};
        for (int l = 0; l < KA_WARP && w * KA_WARP + l < threads; l++)
            lanes[l] = part[w * KA_WARP + l];
        wsum[w] = ka_warp_sum_host(lanes);
    }
    return ka_warp_sum_host(wsum);
}

/* rms_norm: a block a row; for a layer norm first each thread's sum and the block's mean; then each thread's sum of
 * (centred) squares, the block's sum, every value normed, weighted and biased. */
static int st_rms_norm(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    (void)L;
    const struct ir_rms_norm *s = &ir_leaf_op(l)->spec.u.rms_norm;
    int at_b = 1 + (s->weight ? 1 : 0) + (s->residual ? 1 : 0);
    const float *x = f->x[0], *w = s->weight ? f->x[1] : NULL, *res = s->residual ? f->x[s->weight ? 2 : 1] : NULL;
    const float *b = s->bias ? f->x[at_b] : NULL;
    bool layer = s->kind == IR_NORM_LAYER;
    float *y = f->y;
    int64_t threads = kernels_norm_threads(s->cols);
    float part[1024];
    for (int64_t r = 0; r < s->rows; r++) {
        const float *xr = x + r * s->cols, *rr = res ? res + r * s->cols : NULL;
        float mean = 0.0f;
        if (layer) {
            for (int64_t t = 0; t < threads; t++)
                part[t] = ka_norm_sum_partial(xr, rr, s->cols, t, threads);
            mean = ka_norm_mean(block_sum(part, threads), s->cols);
        }
        for (int64_t t = 0; t < threads; t++)
            part[t] = ka_norm_centred_partial(xr, rr, s->cols, t, threads, layer, mean);
        float inv = ka_norm_factor(block_sum(part, threads), s->cols, (float)s->eps);
        for (int64_t j = 0; j < s->cols; j++) {
            float d = ka_norm_centred(ka_norm_in(xr[j], rr, j), layer, mean);
            y[r * s->cols + j] = ka_norm_biased(ka_norm_value(d, inv, w, j, (float)s->offset), b, j);
        }
    }
    return 0;
}

/* l2_norm: as the RMS norm's block, without the mean. */
static int st_l2_norm(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    (void)L;
    const struct ir_l2_norm *s = &ir_leaf_op(l)->spec.u.l2_norm;
    const float *x = f->x[0];
    float *y = f->y;
    int64_t threads = kernels_norm_threads(s->cols);
    float part[1024];
    for (int64_t r = 0; r < s->rows; r++) {
        const float *xr = x + r * s->cols;
        for (int64_t t = 0; t < threads; t++)
            part[t] = ka_norm_partial(xr, NULL, s->cols, t, threads);
        float inv = ka_l2_factor(block_sum(part, threads), (float)s->eps);
        for (int64_t j = 0; j < s->cols; j++)
            y[r * s->cols + j] = ka_norm_value(xr[j], inv, NULL, j, 0.0f);
    }
    return 0;
}

/* ── Rotation ────────────────────────────────────────────────────────────────────────────────────────────── */

/* rope: a warp a head, each lane its pairs (i, i + half), or adjacent (2i, 2i + 1). */
static int st_rope(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    const struct ir_rope *s = &ir_leaf_op(l)->spec.u.rope;
    int64_t clen = f->len[1], slen = f->len[2], p = f->row;
    const float *x = f->x[0], *ct = f->x[1], *st = f->x[2];
    float *y = f->y;
    int64_t per_row = s->h / s->rows, trows = s->half ? (clen < slen ? clen : slen) / s->half : INT64_MAX;
    for (int64_t g = 0; g < s->h; g++) {
        int64_t at = p + g / per_row;
        if (s->half && at >= trows)
            return ir_leaf_fail(l, "position %lld is past the tables' %lld rows", (long long)at, (long long)trows);
        const float *xh = x + g * s->hd, *c = ct + at * s->half, *sn = st + at * s->half;
        float *yh = y + g * s->hd;
        bool adjacent = s->adjacent != (L->fault == KERNELS_FAULT_ROPE_PAIR); /* planted: the other pairing */
        for (int64_t i = 0; i < s->half; i++) {
            int64_t a, b;
            ka_rope_index(i, s->half, adjacent, &a, &b);
            ka_rope_pair(xh[a], xh[b], c[i], sn[i], &yh[a], &yh[b]);
        }
        for (int64_t i = 2 * s->half; i < s->hd; i++)
            yh[i] = xh[i];
    }
    return 0;
}

/* ── Attention: heads in blocks, the span cut into chunks, each chunk in tiles, chunks merged ────────────── */

int64_t kernels_attention_chunks(const struct kernels_point *p, const struct ir_attention *s)
{
    int64_t span = kernels_attended_span(s->l, s->window);
    struct kernels_accumulator acc = kernels_accumulator(kernels_mode(p->acts));
    int64_t group = s->kv > 0 ? s->h / s->kv : 1, smem = (int64_t)p->chip->smem_kib * 1024;
    int64_t hpb = kernels_attn_heads_per_block(group, s->hd, s->vd, span > 0 ? span : 1, smem, acc.stage_bytes);
    if (hpb < 1)
        hpb = 1;
    int64_t head_blocks = s->rows * ((s->kv + hpb - 1) / hpb);
    return kernels_attn_splits(head_blocks, span > 0 ? span : 1, p->chip->sms);
}

int64_t kernels_attention_tile_rows(const struct kernels_point *p, const struct ir_attention *s)
{
    return kernels_attn_tile_rows((int64_t)p->chip->smem_kib * 1024, s->hd, s->vd);
}

int kernels_attention_tile(const struct kernels_point *p, const struct ir_attention *s)
{
    enum kernels_mode mode = kernels_mode(p->acts);
    return !kernels_attention_in_tiles(mode, s->rows, s->hd, s->vd) ? KA_TILE_F32
         : mode == KERNELS_MODE_I8X2                                 ? KA_TILE_I8X2
                                                                     : KA_TILE_F16;
}

/* One query head's output over cache rows [lo, hi]: the span cut into `splits` chunks, each folded a tile at a time
 * (its query, key and value rows as the tile holds them; logits by the lanes' butterfly), the chunks merged in
 * order. */
struct head_job {
    const float *q, *k, *v;
    int64_t kstride, vstride, hd, vd, lo, hi, splits, tile_rows;
    float scale, cap, sink;
    bool capped, sinked;
    int tile;
    enum kernels_fault fault;
};

/* Room head_run needs: chunk accumulators, a tile's logits, weights, held weights, query, keys and values. */
static int64_t head_room(int64_t splits, int64_t hd, int64_t vd)
{
    return splits * vd + 3 * KERNELS_ATTN_TILE_ROWS + hd + KERNELS_ATTN_TILE_ROWS * (hd + vd);
}

static void head_run(const struct head_job *a, float *work, struct ka_softmax *st, float *out)
{
    int64_t span = a->hi - a->lo + 1;
    if (span <= 0) {
        for (int64_t t = 0; t < a->vd; t++)
            out[t] = 0.0f;
        return;
    }
    int64_t per = (span + a->splits - 1) / a->splits;
    float *acc = work, *lg = acc + a->splits * a->vd, *p = lg + KERNELS_ATTN_TILE_ROWS, *pt = p + KERNELS_ATTN_TILE_ROWS;
    float *qt = pt + KERNELS_ATTN_TILE_ROWS, *kt = qt + a->hd, *vt = kt + KERNELS_ATTN_TILE_ROWS * a->hd;
    ka_tile_row(a->q, a->hd, a->tile, 2, qt);
    for (int64_t c = 0; c < a->splits; c++) {
        st[c] = (struct ka_softmax){0.0f, 0.0f, 0};
        float *ac = acc + c * a->vd;
        for (int64_t t = 0; t < a->vd; t++)
            ac[t] = 0.0f;
        int64_t c0 = a->lo + c * per, c1 = c0 + per - 1 < a->hi ? c0 + per - 1 : a->hi;
        for (int64_t t0 = c0; t0 <= c1; t0 += a->tile_rows) {
            int n = (int)(c1 - t0 + 1 < a->tile_rows ? c1 - t0 + 1 : a->tile_rows);
            for (int j = 0; j < n; j++) { /* the tile's rows staged as it holds them */
                ka_tile_row(a->k + (t0 + j) * a->kstride, a->hd, a->tile, 2, kt + j * a->hd);
                ka_tile_row(a->v + (t0 + j) * a->vstride, a->vd, a->tile, 2, vt + j * a->vd);
            }
            for (int j = 0; j < n; j++) {
                float part[KA_WARP];
                for (int lane = 0; lane < KA_WARP; lane++)
                    part[lane] = ka_dot_lane(qt, kt + j * a->hd, a->hd, lane);
                lg[j] = ka_logit(ka_warp_sum_host(part), a->scale, a->capped, a->cap);
            }
            ka_softmax_tile(&st[c], lg, n, ka_max(lg, n), vt, a->vd, ac, p, pt, a->tile);
        }
    }
    if (a->fault == KERNELS_FAULT_SPLIT_MAX && a->splits > 1)
        st[a->splits - 1].m = st[0].m; /* planted: the merge takes the last chunk's max to be the first's */
    ka_softmax_merge(st, acc, (int)a->splits, a->vd, a->sinked, a->sink, out);
}

/* attention: each query row's heads, each head's span in chunks and tiles. */
static int st_attention(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    const struct ir_attention *s = &ir_leaf_op(l)->spec.u.attention;
    int tile = kernels_attention_tile(&L->point, s);
    int64_t p = f->row;
    const float *q = f->x[0], *k = f->x[1], *v = f->x[2];
    const float *sinks = s->sinks ? f->x[s->pos.kind == IR_RIDX_NAMED ? 4 : 3] : NULL;
    float *y = f->y;
    int64_t splits = kernels_attention_chunks(&L->point, s);
    float *work = ir_leaf_scratch(l, head_room(splits, s->hd, s->vd));
    struct ka_softmax *st = work ? calloc((size_t)splits, sizeof *st) : NULL;
    if (!st)
        return work ? ir_leaf_fail(l, "out of memory") : -1;
    struct head_job a = {0};
    a.kstride = s->kv * s->hd;
    a.vstride = s->kv * s->vd;
    a.hd = s->hd;
    a.vd = s->vd;
    a.splits = splits;
    a.tile_rows = kernels_attention_tile_rows(&L->point, s);
    a.scale = s->scale.has ? (float)s->scale.v : 1.0f / sqrtf((float)s->hd);
    a.capped = s->softcap.has;
    a.cap = (float)s->softcap.v;
    a.sinked = s->sinks;
    a.tile = tile;
    a.fault = L->fault;
    int64_t group = s->h / s->kv;
    for (int64_t r = 0; r < s->rows; r++) {
        int64_t pos = p + r;
        a.hi = pos < s->l - 1 ? pos : s->l - 1;
        a.lo = s->window > 0 && pos - s->window + 1 > 0 ? pos - s->window + 1 : 0;
        for (int64_t g = 0; g < s->h; g++) {
            a.q = q + (r * s->h + g) * s->hd;
            a.k = k + (g / group) * s->hd;
            a.v = v + (g / group) * s->vd;
            a.sink = sinks ? sinks[g] : 0.0f;
            head_run(&a, work, st, y + (r * s->h + g) * s->vd);
        }
    }
    free(st);
    return 0;
}

/* ── Mixture of experts: router, top-k, each kept expert's gate, up and down products ────────────────────── */

/* v[i] = v[i] + b[i] for i < n: a bias row into a product's outputs (nothing without one). */
static void bias_add(float *v, const float *b, int64_t n)
{
    for (int64_t i = 0; b && i < n; i++)
        v[i] = ka_ew(0, v[i], b[i]);
}

/* moe: the router's product (and bias) and its routing (ka_route: scores, correction, groups, weights), each kept
 * expert's products (and biases) in rank order. */
static int st_moe(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    const struct ir_moe *s = &ir_leaf_op(l)->spec.u.moe;
    const struct kernels_weights *R = &f->w[1], *G = &f->w[2], *U = &f->w[3], *D = &f->w[4];
    const float *const *fb = s->bias ? &f->x[5] : NULL; /* without bias x[5] may be the correction row */
    const float *b[4] = {fb ? fb[0] : NULL, fb ? fb[1] : NULL, fb ? fb[2] : NULL, fb ? fb[3] : NULL};
    const float *x = f->x[0];
    float *y = f->y;
    struct ka_routing rt = ko_routing(s, f->x[s->bias ? 9 : 5]);
    if (!s->correction)
        rt.corr = NULL;
    float *prob = ir_leaf_scratch(l, s->experts), *room = prob ? ir_leaf_scratch(l, ka_route_room(&rt)) : NULL;
    float *gate = room ? ir_leaf_scratch(l, s->dff) : NULL, *up = gate ? ir_leaf_scratch(l, s->dff) : NULL;
    float *down = up ? ir_leaf_scratch(l, s->d) : NULL;
    float *wts = down ? ir_leaf_scratch(l, s->k) : NULL;
    int64_t *sel = wts ? calloc((size_t)(s->k > 0 ? s->k : 1), sizeof *sel) : NULL;
    if (!sel)
        return wts ? ir_leaf_fail(l, "out of memory") : -1;
    const struct side *xq = quantized_operand(L, l, 0);
    struct product router = {x, s->d, NULL, R, s->d, 0, 0, KERNELS_FAULT_NONE};
    product_run(&router, 1, s->experts, 1, prob, s->experts);
    bias_add(prob, b[0], s->experts);
    ka_route(&rt, prob, room, sel, wts);
    for (int64_t i = 0; i < s->d; i++)
        y[i] = 0.0f;
    float alpha = (float)s->alpha.v, limit = (float)s->limit.v;
    for (int64_t r = 0; r < s->k; r++) {
        int64_t ex = sel[r];
        float wr = wts[r];
        struct product pg = {x, s->d, xq, G, s->d, 0, ex * s->dff, L->fault};
        struct product pu = {x, s->d, xq, U, s->d, 0, ex * s->dff, L->fault};
        product_run(&pg, 1, s->dff, 1, gate, s->dff);
        product_run(&pu, 1, s->dff, 1, up, s->dff);
        bias_add(gate, b[1] ? b[1] + ex * s->dff : NULL, s->dff);
        bias_add(up, b[2] ? b[2] + ex * s->dff : NULL, s->dff);
        for (int64_t j = 0; j < s->dff; j++)
            gate[j] = ka_moe_act(gate[j], up[j], (int)s->act, alpha, limit);
        struct product pd = {gate, s->dff, NULL, D, s->dff, 0, ex * s->d, L->fault};
        product_run(&pd, 1, s->d, 1, down, s->d);
        bias_add(down, b[3] ? b[3] + ex * s->d : NULL, s->d);
        for (int64_t i = 0; i < s->d; i++)
            y[i] = ka_axpy(y[i], wr, down[i]);
    }
    free(sel);
    return 0;
}

/* ── Elementwise stages: a thread a value ────────────────────────────────────────────────────────────────── */

/* elementwise: y = a (op) b, b broadcast by rows when it is one row. */
static int st_elementwise(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    (void)L;
    const struct ir_elementwise *s = &ir_leaf_op(l)->spec.u.elementwise;
    const float *a = f->x[0], *b = f->x[1];
    float *y = f->y;
    for (int64_t i = 0; i < s->n; i++)
        y[i] = ka_ew((int)s->op, a[i], b[s->row > 0 ? i % s->row : i]);
    return 0;
}

/* silu, sigmoid, gelu, relu. */
static int st_unary(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    (void)L;
    const struct ir_op *op = ir_leaf_op(l);
    int64_t n = op->spec.u.unary.n;
    const float *x = f->x[0];
    float *y = f->y;
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        switch (op->spec.kind) {
        case IR_KIND_SILU: y[i] = ka_silu(v); break;
        case IR_KIND_SIGMOID: y[i] = ka_sigmoid(v); break;
        case IR_KIND_GELU: y[i] = ka_gelu(v); break;
        default: y[i] = ka_relu(v); break;
        }
    }
    return 0;
}

/* scale: y = factor · x. */
static int st_scale(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    (void)L;
    const struct ir_scale *s = &ir_leaf_op(l)->spec.u.scale;
    const float *x = f->x[0];
    float *y = f->y;
    float factor = (float)s->factor;
    for (int64_t i = 0; i < s->n; i++)
        y[i] = ka_scale(factor, x[i]);
    return 0;
}

/* swiglu: y = silu(g) · u. */
static int st_swiglu(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    (void)L;
    int64_t n = ir_leaf_op(l)->spec.u.swiglu.total;
    const float *g = f->x[0], *u = f->x[1];
    float *y = f->y;
    for (int64_t i = 0; i < n; i++)
        y[i] = ka_glu(g[i], u[i], 0);
    return 0;
}

/* head_slice: a copy of the values [from, from + width) of every `every`-wide unit of x, a thread a value. */
static int st_head_slice(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    (void)L;
    const struct ir_head_slice *s = &ir_leaf_op(l)->spec.u.head_slice;
    int64_t units = s->every > 0 ? s->n / s->every : 0, n = units * s->width;
    const float *x = f->x[0];
    float *y = f->y;
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i / s->width * s->every + s->from + i % s->width];
    return 0;
}

/* join: a copy of each unit's part of a then its part of b, a thread a value. */
static int st_join(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    (void)L;
    const struct ir_join *s = &ir_leaf_op(l)->spec.u.join;
    int64_t ha = s->heads > 0 ? s->wa / s->heads : 0, hb = s->heads > 0 ? s->wb / s->heads : 0, w = ha + hb;
    int64_t n = s->rows * (s->wa + s->wb);
    const float *a = f->x[0], *b = f->x[1];
    float *y = f->y;
    if (w < 1)
        return ir_leaf_fail(l, "a join of empty units");
    for (int64_t i = 0; i < n; i++) {
        int64_t u = i / w, at = i % w;
        y[i] = at < ha ? a[u * ha + at] : b[u * hb + at - ha];
    }
    return 0;
}

/* softcap: y = cap · tanh(x / cap). */
static int st_softcap(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    (void)L;
    const struct ir_softcap *s = &ir_leaf_op(l)->spec.u.softcap;
    const float *x = f->x[0];
    float *y = f->y;
    for (int64_t i = 0; i < s->n; i++)
        y[i] = ka_softcap(x[i], (float)s->cap);
    return 0;
}

/* argmax: a block a row; each thread's best of its strided values, the block's best of the threads'. */
static int st_argmax(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    (void)L;
    const struct ir_argmax *s = &ir_leaf_op(l)->spec.u.argmax;
    const float *x = f->x[0];
    float *y = f->y;
    int64_t threads = kernels_norm_threads(s->cols);
    for (int64_t r = 0; r < s->rows; r++) {
        const float *xr = x + r * s->cols;
        float bv = 0.0f;
        int64_t bi = -1;
        for (int64_t t = 0; t < threads; t++) {
            float tv = 0.0f;
            int64_t ti = -1;
            for (int64_t j = t; j < s->cols; j += threads)
                if (ka_argmax_beats(xr[j], j, tv, ti)) {
                    tv = xr[j];
                    ti = j;
                }
            if (ti >= 0 && ka_argmax_beats(tv, ti, bv, bi)) {
                bv = tv;
                bi = ti;
            }
        }
        y[r] = (float)(bi < 0 ? 0 : bi);
    }
    return 0;
}

/* ── Tables, rows and caches ─────────────────────────────────────────────────────────────────────────────── */

/* row_gather: one row of a table, decoded from its blocks. */
static int st_row_gather(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    (void)L;
    const struct ir_row_gather *s = &ir_leaf_op(l)->spec.u.row_gather;
    for (int64_t j = 0; j < s->cols; j++)
        f->y[j] = wmat_at(&f->w[0], f->row, j);
    return 0;
}

/* rows_gather: the rows an index vector names. */
static int st_rows_gather(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    (void)L;
    const struct ir_rows_gather *s = &ir_leaf_op(l)->spec.u.rows_gather;
    const struct kernels_weights *w = &f->w[0];
    const float *idx = f->x[1];
    float *y = f->y;
    for (int64_t c = 0; c < s->count; c++) {
        double d = (double)idx[c];
        if (!(d >= 0 && d <= (double)(s->rows - 1)) || d != floor(d))
            return ir_leaf_fail(l, "row %g is not an integer in [0, %lld]", d, (long long)(s->rows - 1));
        for (int64_t j = 0; j < s->cols; j++)
            y[c * s->cols + j] = wmat_at(w, (int64_t)d, j);
    }
    return 0;
}

/* The rounding a cache or state buffer applies to a stored value under the lane's point. */
static float keep_round(enum shim_keep k, float x)
{
    return k == SHIM_KEEP_F16 ? ka_round_half(x) : k == SHIM_KEEP_BF16 ? ka_round_bf16(x) : x;
}

/* How the lane keeps rows written into tensor t: a carried state tensor is a KV cache, kept in the cache's type; a
 * step's own tables stay f32. */
static enum shim_keep row_keep(const struct kernels_lane *L, ir_tid t)
{
    return kernels_lane_row_keep(L, t);
}

enum shim_keep kernels_lane_row_keep(const struct kernels_lane *L, ir_tid t)
{
    const struct ir_tensor *T = &L->g->tensors[t];
    if (L->fault == KERNELS_FAULT_DROP_F16 || T->role != IR_ROLE_STATE || !T->carried)
        return SHIM_KEEP_F32;
    return L->point.cache;
}

/* set_row: rows of a cache written in place, each value rounded to the cache's type at the write. */
static int st_set_row(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    const struct ir_set_row *s = &ir_leaf_op(l)->spec.u.set_row;
    int64_t n = s->rows * s->cols, r = f->row;
    float *table = f->io[0], *y = f->y;
    const float *src = f->x[1];
    enum shim_keep keep = row_keep(L, ir_leaf_op(l)->ins[0]);
    for (int64_t i = 0; i < s->count * s->cols; i++)
        table[r * s->cols + i] = keep_round(keep, src[i]);
    if (y != table)
        memcpy(y, table, sizeof(float) * (size_t)n);
    return 0;
}

/* ── Gated DeltaNet: convolution, log-decay, delta rule ──────────────────────────────────────────────────── */

/* causal_conv: a thread a channel; its rows in order from the ring and the new rows, then the ring's rows moved on,
 * each rounded to the recurrent state's type as it is stored. */
static int st_causal_conv(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    const struct ir_causal_conv *s = &ir_leaf_op(l)->spec.u.causal_conv;
    int64_t keep = (s->taps - 1) * s->chan, nx = s->rows * s->chan;
    const float *x = f->x[0], *w = f->x[1];
    float *ring = f->io[2], *y = f->y;
    if (nx == 0 && keep == 0)
        return 0;
    float *wc = ir_leaf_scratch(l, s->taps);
    if (!wc)
        return -1;
    for (int64_t c = 0; c < s->chan; c++) {
        for (int64_t j = 0; j < s->taps; j++) /* planted: the taps reversed */
            wc[j] = w[c * s->taps + (L->fault == KERNELS_FAULT_CONV_TAP ? s->taps - 1 - j : j)];
        for (int64_t t = 0; t < s->rows; t++)
            y[t * s->chan + c] = ka_conv_out(wc, ring, x, s->taps, s->chan, t, c);
        for (int64_t r = 0; r < s->taps - 1; r++) /* row r takes row rows + r, not yet overwritten */
            ring[r * s->chan + c] =
                keep_round(L->point.state, ka_conv_at(ring, x, s->taps - 1, s->chan, s->rows + r, c));
    }
    return 0;
}

/* decay: a thread a value; −e^alog · softplus(a + dt_bias) by its head. */
static int st_decay(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    const struct ir_decay *s = &ir_leaf_op(l)->spec.u.decay;
    int64_t heads = s->n / s->rows;
    const float *a = f->x[0], *alog = f->x[1], *dtb = f->x[2];
    float *y = f->y;
    for (int64_t i = 0; i < s->n; i++) /* planted: the dt bias dropped */
        y[i] = ka_decay(a[i], alog[i % heads], L->fault == KERNELS_FAULT_DECAY_BIAS ? 0.0f : dtb[i % heads]);
    return 0;
}

/* One value head of a gated delta rule as its block runs it: the head's memory copied in, the rows in order (each
 * thread its columns through ka_gdn_column, the block's sum of the outputs' squares, each column's output), the
 * memory stored back once, rounded to the recurrent state's type. */
struct gdn_job {
    const struct ir_gated_delta *s;
    const float *q, *k, *v, *z, *b, *a, *w;
    float *S, *y, *work, *o, *part;
    int64_t kh, group, threads;
    enum shim_keep keep;
    bool faulty;
};

/* Value head eta's block: its memory staged in j->work, its rows in order, the memory stored back. */
static void gdn_head(const struct gdn_job *j, int64_t eta)
{
    const struct ir_gated_delta *s = j->s;
    int64_t n = s->dk * s->dv;
    float *S = j->S + eta * n, rdk = sqrtf((float)s->dk);
    memcpy(j->work, S, sizeof(float) * (size_t)n);
    for (int64_t t = 0; t < s->rows; t++) {
        int64_t u = t * s->h + eta, uk = t * j->kh + eta / j->group;
        float decay = j->faulty ? 1.0f : ka_expf(j->a[u]); /* planted: the memory not decayed */
        for (int64_t c = 0; c < s->dv; c++)
            j->o[c] = ka_gdn_column(j->work + c, s->dv, s->dk, decay, j->k + uk * s->dk, j->q + uk * s->dk, rdk,
                                    j->v[u * s->dv + c], j->b[u]);
        for (int64_t th = 0; th < j->threads; th++)
            j->part[th] = ka_norm_partial(j->o, NULL, s->dv, th, j->threads);
        float inv = ka_norm_factor(block_sum(j->part, j->threads), s->dv, (float)s->eps);
        for (int64_t c = 0; c < s->dv; c++)
            j->y[u * s->dv + c] = ka_gdn_out(j->o[c], inv, j->w[c], j->z[u * s->dv + c], s->gate == IR_GATE_SIGMOID);
    }
    for (int64_t i = 0; i < n; i++)
        S[i] = keep_round(j->keep, j->work[i]);
}

/* gated_delta: a block a value head (heads are independent: each has its own memory, the rows' inputs are read
 * only), value head η reading key head η / (h / kh). */
static int st_gated_delta(struct kernels_lane *L, struct ir_leaf *l, const struct fetched *f)
{
    const struct ir_gated_delta *s = &ir_leaf_op(l)->spec.u.gated_delta;
    struct gdn_job j = {0};
    j.s = s;
    j.kh = s->kh ? s->kh : s->h;
    j.group = s->h / j.kh;
    j.threads = kernels_gdn_threads(s->dv);
    j.keep = L->point.state;
    j.faulty = L->fault == KERNELS_FAULT_GDN_STATE;
    j.q = f->x[0];
    j.k = f->x[1];
    j.v = f->x[2];
    j.z = f->x[3];
    j.b = f->x[4];
    j.a = f->x[5];
    j.S = f->io[6];
    j.w = f->x[7];
    j.y = f->y;
    j.work = ir_leaf_scratch(l, s->dk * s->dv);
    j.o = j.work ? ir_leaf_scratch(l, s->dv) : NULL;
    j.part = j.o ? ir_leaf_scratch(l, j.threads) : NULL;
    if (!j.part)
        return -1;
    for (int64_t eta = 0; eta < s->h; eta++)
        gdn_head(&j, eta);
    return 0;
}

/* ── Quantize ────────────────────────────────────────────────────────────────────────────────────────────── */

/* quantize: a warp a block of 32; the words kept for the products that read them, the value they stand for. */
static int st_quantize(struct kernels_lane *L, struct ir_leaf *l)
{
    const struct ir_op *op = ir_leaf_op(l);
    const struct ir_graph *g = ir_leaf_graph(l);
    int64_t n = op->out >= 0 && op->out < g->ntensors ? ir_tensor_len(g, op->out) : 0;
    if (op->quant_words != 1 && op->quant_words != 2)
        return ir_leaf_fail(l, "%d words a value (1 or 2)", (int)op->quant_words);
    const float *x = ir_leaf_arg(l, 0, n);
    float *y = x ? ir_leaf_result(l, n) : NULL;
    if (!y)
        return -1;
    if (quantize_into(L, op->out, x, n, op->quant_words, y))
        return ir_leaf_fail(l, "out of memory for its words");
    return 0;
}

/* ── The stage table ─────────────────────────────────────────────────────────────────────────────────────── */

/* The lane's stage for each primitive kind: its kernel function, or NULL where the lane has none. */
static int (*const stages[IR_KIND_COUNT])(struct kernels_lane *, struct ir_leaf *, const struct fetched *) = {
    [IR_KIND_MATMUL] = st_matmul,       [IR_KIND_ELEMENTWISE] = st_elementwise, [IR_KIND_RMS_NORM] = st_rms_norm,
    [IR_KIND_ROPE] = st_rope,           [IR_KIND_ROW_GATHER] = st_row_gather,   [IR_KIND_ROWS_GATHER] = st_rows_gather,
    [IR_KIND_SET_ROW] = st_set_row,     [IR_KIND_ATTENTION] = st_attention,     [IR_KIND_MOE] = st_moe,
    [IR_KIND_SILU] = st_unary,          [IR_KIND_SIGMOID] = st_unary,           [IR_KIND_GELU] = st_unary,
    [IR_KIND_RELU] = st_unary,          [IR_KIND_SCALE] = st_scale,             [IR_KIND_SWIGLU] = st_swiglu,
    [IR_KIND_HEAD_MATMUL] = st_head_matmul, [IR_KIND_L2_NORM] = st_l2_norm,     [IR_KIND_ARGMAX] = st_argmax,
    [IR_KIND_SOFTCAP] = st_softcap,     [IR_KIND_HEAD_SLICE] = st_head_slice,   [IR_KIND_JOIN] = st_join,
    [IR_KIND_CAUSAL_CONV] = st_causal_conv, [IR_KIND_DECAY] = st_decay, [IR_KIND_GATED_DELTA] = st_gated_delta,
};

bool kernels_lane_has_stage(enum ir_kind k) { return (unsigned)k < IR_KIND_COUNT && stages[k]; }

/* The leaf hook: the lane's stage for a primitive or a quantize; a view (a copy) moves as the evaluator moves it. */
static int leaf_hook(void *ctx, struct ir_leaf *l)
{
    struct kernels_lane *L = ctx;
    const struct ir_op *op = ir_leaf_op(l);
    switch (op->sym) {
    case IR_SYM_QUANT: return st_quantize(L, l);
    case IR_SYM_VIEW: return 1;
    case IR_SYM_PRIM:
        if ((unsigned)op->spec.kind < IR_KIND_COUNT && stages[op->spec.kind]) {
            struct fetched f;
            return fetch(L, l, &f) ? -1 : stages[op->spec.kind](L, l, &f);
        }
        return ir_leaf_fail(l, "the CUDA lane has no kernel for %s (the host lane cannot run it)",
                            ir_kind_name(op->spec.kind));
    case IR_SYM_FUSED: break;
    }
    return ir_leaf_fail(l, "not a leaf");
}

/* The placement hook: a result placed into rows of a KV cache is rounded to the cache's type. */
static void placed_hook(void *ctx, ir_tid buf, float *values, int64_t n)
{
    struct kernels_lane *L = ctx;
    enum shim_keep keep = row_keep(L, buf);
    for (int64_t i = 0; keep != SHIM_KEEP_F32 && i < n; i++)
        values[i] = keep_round(keep, values[i]);
}

int kernels_lane_launch(struct kernels_lane *L, const struct ir_graph *g, int32_t op, struct ir_values *v,
                        char err[IR_ERR_LEN])
{
    if (op < 0 || op >= g->nops) {
        snprintf(err, IR_ERR_LEN, "launch %d: the graph has %d ops", (int)op, (int)g->nops);
        return -1;
    }
    if (L->device)
        return kernels_device_launch(L->device, L, g, op, v, err);
    return kernels_lane_walk(L, g, op, v, leaf_hook, L, err);
}

const struct kernels_point *kernels_lane_point(const struct kernels_lane *L) { return &L->point; }

int kernels_lane_step(struct kernels_lane *L, const struct ir_graph *g, struct ir_values *v, char err[IR_ERR_LEN])
{
    if (L->device)
        return kernels_device_step(L->device, L, g, v, err);
    for (int32_t i = 0; i < g->nops; i++)
        if (kernels_lane_walk(L, g, i, v, leaf_hook, L, err))
            return -1;
    return 0;
}

/* A walk's hooks: the lane (for the placements' rounding) and the stages' own hook and context. */
struct walk {
    struct kernels_lane *L;
    int (*leaf)(void *ctx, struct ir_leaf *l);
    void *ctx;
};

/* The walk's leaf hook: the stages' own. */
static int walk_leaf(void *ctx, struct ir_leaf *l)
{
    const struct walk *w = ctx;
    return w->leaf(w->ctx, l);
}

/* The walk's placement hook: the lane's rounding of cache rows. */
static void walk_placed(void *ctx, ir_tid buf, float *values, int64_t n)
{
    placed_hook(((const struct walk *)ctx)->L, buf, values, n);
}

int kernels_lane_walk(struct kernels_lane *L, const struct ir_graph *g, int32_t op, struct ir_values *v,
                      int (*leaf)(void *ctx, struct ir_leaf *l), void *ctx, char err[IR_ERR_LEN])
{
    L->g = g;
    L->v = v;
    struct walk w = {L, leaf, ctx};
    struct ir_eval_hooks hooks = {walk_leaf, walk_placed, &w};
    int rc = ir_eval_ops_hooked(g, &g->ops[op], 1, v, &hooks, err);
    if (rc) { /* name the launch by its index in the graph, not the one-op run's */
        char msg[IR_ERR_LEN];
        const char *tail = strstr(err, "): ");
        snprintf(msg, sizeof msg, "launch %d (%s%s", (int)op, kernels_launch_kernel(&g->ops[op]),
                 tail ? tail : "): failed");
        memcpy(err, msg, IR_ERR_LEN);
    }
    L->v = NULL;
    return rc;
}

void kernels_lane_forget(struct kernels_lane *L)
{
    sides_clear(L);
    if (L->device)
        kernels_device_forget(L->device);
}

const char *kernels_launch_kernel(const struct ir_op *op)
{
    switch (op->sym) {
    case IR_SYM_FUSED: return ir_class_name(op->cls);
    case IR_SYM_PRIM: return ir_kind_name(op->spec.kind);
    case IR_SYM_VIEW: return "view";
    case IR_SYM_QUANT: return "quantize";
    }
    return "?";
}
