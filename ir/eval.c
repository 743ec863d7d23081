/* ir/eval.c — the evaluator: the exact meaning of every op, in f32, with one fixed order of accumulation.
 *
 * Every tensor is stored as f32 values (i32 tensors hold integral values), except a constant kept as checkpoint rows,
 * which stays quantized in its block format and is dequantized a row (or a run of blocks) at a time where it is read.
 * Ops run in program order; a fused op runs its parts in order, each part's result materialised into its own tensor
 * and then placed where its destination says. Every sum is a plain sequential loop in increasing index order, and no
 * product is fused into an addition, so the same graph gives the same bytes on every run, compiler and level.
 * docs/semantics.md states each op's meaning; this file follows it. */
#include "eval_values.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* A product and the sum it feeds stay two roundings: never contract them into one fused multiply-add. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* ── The evaluation context ──────────────────────────────────────────────────────────────────────────────── */

#define EV_SCRATCH 16
#define EV_SCRATCH_SLACK ((int64_t)64 << 20) /* bytes of working buffers any graph may use beyond its values' */

/* One op being evaluated: the graph, the values, the op (a leaf, or a fused op while its result is placed), its
 * top-level index, the error buffer, and the scratch buffers it holds until it is done. */
struct ev {
    const struct ir_graph *g;
    struct ir_values *v;
    const struct ir_op *op;
    int32_t top;
    char *err;
    const struct ir_eval_hooks *hooks; /* another executor's leaves and placements, or NULL */
    const struct ir_op *scope;         /* the innermost fused op being run: its parts read only what it gives them */
    float *scratch[EV_SCRATCH];
    int nscratch;
    int64_t scratch_bytes, scratch_cap;
    bool *done; /* top-level ops already computed with an earlier one (mixtures batched per expert), or NULL */
};

/* The handle a leaf hook gets: the evaluation context of the leaf being computed. */
struct ir_leaf {
    struct ev *e;
};

/* The name an op prints under: its kind, its class, or its symbol. */
static const char *sym_name(const struct ir_op *op)
{
    switch (op->sym) {
    case IR_SYM_PRIM: return ir_kind_name(op->spec.kind);
    case IR_SYM_FUSED: return ir_class_name(op->cls);
    case IR_SYM_VIEW: return "view";
    case IR_SYM_QUANT: return "quantize";
    }
    return "?";
}

/* Write "op N (name): message" to the error buffer; returns -1. */
static int fail(struct ev *e, const char *fmt, ...)
{
    int n = snprintf(e->err, IR_ERR_LEN, "op %d (%s): ", (int)e->top, sym_name(e->op));
    if (n < 0 || n >= IR_ERR_LEN)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->err + n, (size_t)(IR_ERR_LEN - n), fmt, ap);
    va_end(ap);
    return -1;
}

/* A zeroed scratch buffer of n floats held until the op is done, or NULL with err. */
static float *scratch(struct ev *e, int64_t n)
{
    int64_t bytes = mulc(max64(n, 1), (int64_t)sizeof(float));
    if (n < 0 || bytes < 0 || addc(e->scratch_bytes, bytes) < 0 || e->scratch_bytes + bytes > e->scratch_cap) {
        fail(e, "a working buffer of %lld values is beyond the evaluator's limit", (long long)n);
        return NULL;
    }
    if (e->nscratch == EV_SCRATCH) {
        fail(e, "too many working buffers");
        return NULL;
    }
    float *p = calloc((size_t)max64(n, 1), sizeof(float));
    if (!p) {
        fail(e, "out of memory for a working buffer of %lld values", (long long)n);
        return NULL;
    }
    e->scratch[e->nscratch++] = p;
    e->scratch_bytes += bytes;
    return p;
}

/* Release every scratch buffer the op held. */
static void scratch_free(struct ev *e)
{
    for (int i = 0; i < e->nscratch; i++)
        free(e->scratch[i]);
    e->nscratch = 0;
    e->scratch_bytes = 0;
}

/* The name of tensor t (which must be valid). */
static const char *tname(const struct ev *e, ir_tid t)
{
    return e->g->tensors[t].name;
}

/* The tensor at operand i of the op, or IR_NONE with err. */
static ir_tid operand(struct ev *e, int i)
{
    if (i >= e->op->nins || !e->op->ins || !e->op->access) {
        fail(e, "operand %d is missing (the op has %d)", i, (int)e->op->nins);
        return IR_NONE;
    }
    ir_tid t = e->op->ins[i];
    if (t < 0 || t >= e->g->ntensors) {
        fail(e, "operand %d names no tensor", i);
        return IR_NONE;
    }
    return t;
}

/* A checkpoint tensor's values in logical row-major order, dequantized into scratch; NULL with err. */
static const float *dequant_all(struct ev *e, ir_tid t)
{
    struct tval *tv = &e->v->t[t];
    const struct ckpt *q = &tv->q;
    if (ir_eval_lazy_all(q)) {
        fail(e, "tensor %s: its rows do not quantize", tname(e, t));
        return NULL;
    }
    float *all = scratch(e, tv->len);
    float *row = all ? scratch(e, q->slen) : NULL;
    if (!row)
        return NULL;
    for (int64_t s = 0; s < q->srows; s++) {
        const float *r = ir_eval_ck_slice(q, s, 0, q->slen, row);
        for (int64_t j = 0; j < q->slen; j++)
            all[q->transposed ? j * tv->cols + s : s * tv->cols + j] = r[j];
    }
    return all;
}

/* The first `need` values operand i reads: the tensor's own values when read whole, else the gather of units
 * u = 0.. of `width` values at u·pitch + offset; NULL with err when the tensor does not hold them. */
static const float *arg(struct ev *e, int i, int64_t need)
{
    ir_tid t = operand(e, i);
    if (t == IR_NONE)
        return NULL;
    if (need < 0) {
        fail(e, "operand %d (%s): the size the spec asks overflows", i, tname(e, t));
        return NULL;
    }
    struct tval *tv = &e->v->t[t];
    const float *src = tv->f ? tv->f : dequant_all(e, t);
    if (!src)
        return NULL;
    const struct ir_access *a = &e->op->access[i];
    if (!a->strided) {
        if (tv->len < need) {
            fail(e, "operand %d (%s) holds %lld values, the op reads %lld", i, tname(e, t), (long long)tv->len,
                 (long long)need);
            return NULL;
        }
        return src;
    }
    const struct ir_strided *st = &a->s;
    if (st->width <= 0 || st->pitch < 0 || st->offset < 0 || need % st->width != 0) {
        fail(e, "operand %d (%s): a strided read of width %lld does not give %lld values", i, tname(e, t),
             (long long)st->width, (long long)need);
        return NULL;
    }
    int64_t units = need / st->width;
    int64_t end = units ? addc(mulc(units - 1, st->pitch), addc(st->offset, st->width)) : 0;
    if (end < 0 || end > tv->len) {
        fail(e, "operand %d (%s): %lld units of pitch %lld reach past its %lld values", i, tname(e, t),
             (long long)units, (long long)st->pitch, (long long)tv->len);
        return NULL;
    }
    float *dst = scratch(e, need);
    if (!dst)
        return NULL;
    for (int64_t u = 0; u < units; u++)
        memcpy(dst + u * st->width, src + u * st->pitch + st->offset, sizeof(float) * (size_t)st->width);
    return dst;
}

/* Every value operand i can read (a table): the whole tensor, or as many whole units as it holds; *len receives
 * their count. */
static const float *arg_all(struct ev *e, int i, int64_t *len)
{
    ir_tid t = operand(e, i);
    if (t == IR_NONE)
        return NULL;
    int64_t n = e->v->t[t].len;
    const struct ir_access *a = &e->op->access[i];
    if (a->strided && a->s.width > 0 && a->s.offset >= 0 && a->s.pitch >= 0) {
        int64_t first = addc(a->s.offset, a->s.width);
        int64_t units = first < 0 || first > n ? 0 : a->s.pitch == 0 ? 1 : (n - first) / a->s.pitch + 1;
        n = mulc(units, a->s.width);
    }
    *len = n;
    return arg(e, i, n);
}

/* Operand i as a state tensor written in place: read whole, plain, holding at least need values. */
static float *state_arg(struct ev *e, int i, int64_t need)
{
    ir_tid t = operand(e, i);
    if (t == IR_NONE)
        return NULL;
    struct tval *tv = &e->v->t[t];
    if (e->op->access[i].strided || !tv->f || need < 0 || tv->len < need) {
        fail(e, "operand %d (%s), written in place, must be a plain tensor read whole of at least %lld values", i,
             tname(e, t), (long long)need);
        return NULL;
    }
    return tv->f;
}

/* The op's result tensor's values, which must hold exactly len values; NULL with err. */
static float *result(struct ev *e, int64_t len)
{
    ir_tid t = e->op->out;
    if (t < 0 || t >= e->g->ntensors) {
        fail(e, "its result names no tensor");
        return NULL;
    }
    struct tval *tv = &e->v->t[t];
    if (!tv->f || len < 0 || tv->len != len) {
        fail(e, "its result %s holds %lld values, the op computes %lld", tname(e, t), (long long)tv->len,
             (long long)len);
        return NULL;
    }
    return tv->f;
}

/* Read x as an integral index in [lo, hi] into *out; -1 with err (naming `what`) when it is not one. */
static int index_of(struct ev *e, float x, int64_t lo, int64_t hi, const char *what, int64_t *out)
{
    double d = (double)x;
    if (!(d >= (double)lo && d <= (double)hi) || d != floor(d))
        return fail(e, "%s %g is not an integer in [%lld, %lld]", what, d, (long long)lo, (long long)hi);
    *out = (int64_t)d;
    return 0;
}

/* The 0-based row a row index names (absent: 0; literal: 1-based; named: operand `at`'s value), in [0, hi]. */
static int row_index(struct ev *e, const struct ir_rowidx *ri, int at, int64_t hi, const char *what, int64_t *r)
{
    switch (ri->kind) {
    case IR_RIDX_NONE:
        *r = 0;
        return hi < 0 ? fail(e, "%s 0 is outside an empty range", what) : 0;
    case IR_RIDX_LITERAL:
        if (ri->literal < 1 || ri->literal - 1 > hi)
            return fail(e, "%s %lld (1-based) is outside [1, %lld]", what, (long long)ri->literal,
                        (long long)(hi + 1));
        *r = ri->literal - 1;
        return 0;
    case IR_RIDX_NAMED: {
        const float *x = arg(e, at, 1);
        return x ? index_of(e, x[0], 0, hi, what, r) : -1;
    }
    }
    return fail(e, "%s has an unknown kind", what);
}

/* ── Scalar functions ────────────────────────────────────────────────────────────────────────────────────── */

/* The logistic function 1 / (1 + e^-x). */
static float sigmoidf(float x)
{
    float d = 1.0f + expf(-x);
    return 1.0f / d;
}

/* SiLU: x · σ(x). */
static float siluf(float x)
{
    return x * sigmoidf(x);
}

/* GELU, tanh approximation: x/2 · (1 + tanh(√(2/π) · (x + 0.044715·x³))). */
static float geluf(float x)
{
    float x3 = x * x;
    x3 = x3 * x;
    float inner = 0.044715f * x3;
    inner = x + inner;
    inner = 0.7978845608f * inner;
    float t = 1.0f + tanhf(inner);
    float h = 0.5f * x;
    return h * t;
}

/* ReLU: x when x > 0, else 0 (NaN gives 0). */
static float reluf(float x)
{
    return x > 0.0f ? x : 0.0f;
}

/* softplus: log(1 + e^x), x itself past 20. */
static float softplusf(float x)
{
    return x > 20.0f ? x : log1pf(expf(x));
}

/* A value rounded half away from zero and clamped to ±127, kept as a float (NaN stays NaN). */
static float q127(float x)
{
    float q = roundf(x);
    if (q > 127.0f)
        q = 127.0f;
    else if (q < -127.0f)
        q = -127.0f;
    return q;
}

/* ── Weights: a matrix read a row, or a run of blocks, at a time ─────────────────────────────────────────── */

/* Whether products by checkpoint q take q8_0 activations in values v: q8_0 or q4_0 rows, a stored row an output. */
static bool takes_q8_activations(const struct ir_values *v, const struct ckpt *q)
{
    return v->q8_activations && q->transposed && (q->format == IR_FMT_Q8_0 || q->format == IR_FMT_Q4_0);
}

/* Operand i as a rows × cols matrix, a lazily seeded table drawn whole unless the op reads it by rows (and draws
 * the rows it reads: ir_eval_lazy_rows); 0, or -1 with err. */
static int wts_take(struct ev *e, int i, int64_t rows, int64_t cols, bool by_rows, struct wts *w)
{
    memset(w, 0, sizeof *w);
    w->rows = rows;
    w->cols = cols;
    ir_tid t = operand(e, i);
    if (t == IR_NONE)
        return -1;
    struct tval *tv = &e->v->t[t];
    if (tv->f || e->op->access[i].strided) {
        w->plain = arg(e, i, mulc(rows, cols));
        return w->plain ? 0 : -1;
    }
    if (tv->rows != rows || tv->cols != cols)
        return fail(e, "operand %d (%s) is %lld x %lld, the op reads it as %lld x %lld", i, tname(e, t),
                    (long long)tv->rows, (long long)tv->cols, (long long)rows, (long long)cols);
    w->q = &tv->q;
    if (!by_rows && ir_eval_lazy_all(w->q))
        return fail(e, "operand %d (%s): its rows do not quantize", i, tname(e, t));
    w->buf = scratch(e, tv->q.slen);
    if (w->buf && takes_q8_activations(e->v, w->q))
        w->acts = scratch(e, mulc(rows / 32 + 1, IR_GGML_Q8_ACT_FLOATS));
    return w->buf && (w->acts || !takes_q8_activations(e->v, w->q)) ? 0 : -1;
}

/* Operand i as a rows × cols matrix read whole; 0, or -1 with err. */
static int wts_get(struct ev *e, int i, int64_t rows, int64_t cols, struct wts *w)
{
    return wts_take(e, i, rows, cols, false, w);
}

/* Logical row r of a matrix taken by rows (wts_take) into dst, its row drawn first when lazily seeded; 0, or -1. */
static int gather_row(struct ev *e, const struct wts *w, int64_t r, float *dst)
{
    if (w->q && ir_eval_lazy_rows(w->q, r, 1))
        return fail(e, "the table's row %lld does not quantize", (long long)r);
    ir_eval_wts_row(w, r, dst);
    return 0;
}

/* ── Primitive ops ───────────────────────────────────────────────────────────────────────────────────────── */

/* Whether every size is non-negative; else -1 with err. */
static int sizes_ok(struct ev *e, const int64_t *s, int n)
{
    for (int i = 0; i < n; i++)
        if (s[i] < 0 || s[i] > IR_MAX_DIM)
            return fail(e, "a size of its spec (%lld) is out of range", (long long)s[i]);
    return 0;
}

/* matmul: y[m×n] = x[m×k] · W[k×n]. */
static int ev_matmul(struct ev *e)
{
    const struct ir_matmul *s = &e->op->spec.u.matmul;
    if (sizes_ok(e, (const int64_t[]){s->m, s->k, s->n}, 3))
        return -1;
    struct wts w;
    const float *x = arg(e, 0, mulc(s->m, s->k));
    if (!x || wts_get(e, 1, s->k, s->n, &w))
        return -1;
    float *y = result(e, mulc(s->m, s->n));
    if (!y)
        return -1;
    ir_eval_wts_matmul(&w, 0, s->k, 0, s->n, x, s->m, s->k, y, s->n);
    return 0;
}

/* The elementwise operators' meanings. */
static float ew_add(float a, float b) { return a + b; }
static float ew_sub(float a, float b) { return a - b; }
static float ew_mul(float a, float b) { return a * b; }
static float ew_div(float a, float b) { return a / b; }
static float (*const ew_fns[IR_EW_COUNT])(float, float) = {
    [IR_EW_ADD] = ew_add, [IR_EW_SUB] = ew_sub, [IR_EW_MUL] = ew_mul, [IR_EW_DIV] = ew_div};

/* elementwise: y[i] = a[i] (op) b[i], or b[i mod row] with a row broadcast. */
static int ev_elementwise(struct ev *e)
{
    const struct ir_elementwise *s = &e->op->spec.u.elementwise;
    if (sizes_ok(e, (const int64_t[]){s->n, s->row}, 2))
        return -1;
    if ((int)s->op < 0 || s->op >= IR_EW_COUNT)
        return fail(e, "unknown operator");
    const float *a = arg(e, 0, s->n);
    const float *b = a ? arg(e, 1, s->row > 0 ? s->row : s->n) : NULL;
    float *y = b ? result(e, s->n) : NULL;
    if (!y)
        return -1;
    float (*fn)(float, float) = ew_fns[s->op];
    for (int64_t i = 0; i < s->n; i++)
        y[i] = fn(a[i], b[s->row > 0 ? i % s->row : i]);
    return 0;
}

/* The mean a layer norm subtracts from row v (cols values, x + res): Σv / cols; 0 for an RMS norm. */
static float row_centre(const float *xr, const float *rr, int64_t cols, enum ir_normkind kind)
{
    if (kind != IR_NORM_LAYER || cols == 0)
        return 0.0f;
    float sum = 0.0f;
    for (int64_t j = 0; j < cols; j++) {
        float v = rr ? xr[j] + rr[j] : xr[j];
        sum += v;
    }
    return sum / (float)cols;
}

/* rms_norm: v = x (+ res), less the row's mean for a layer norm (d = v − mean; for rms d = v);
 * y = d · 1/sqrt(Σd²/cols + eps) · (w + offset) (without a weight the factor 1) (+ b with a bias). */
static int ev_rms_norm(struct ev *e)
{
    const struct ir_rms_norm *s = &e->op->spec.u.rms_norm;
    if (sizes_ok(e, (const int64_t[]){s->rows, s->cols}, 2))
        return -1;
    int64_t n = mulc(s->rows, s->cols);
    int at_b = 1 + (s->weight ? 1 : 0) + (s->residual ? 1 : 0);
    const float *x = arg(e, 0, n);
    const float *w = x && s->weight ? arg(e, 1, s->cols) : NULL;
    const float *res = x && s->residual ? arg(e, s->weight ? 2 : 1, n) : NULL;
    const float *b = x && s->bias ? arg(e, at_b, s->cols) : NULL;
    if (!x || (s->weight && !w) || (s->residual && !res) || (s->bias && !b))
        return -1;
    float *y = result(e, n);
    if (!y || n == 0)
        return y ? 0 : -1; /* empty rows: nothing to loop over */
    float eps = (float)s->eps, off = (float)s->offset;
    bool layer = s->kind == IR_NORM_LAYER;
    for (int64_t r = 0; r < s->rows; r++) {
        const float *xr = x + r * s->cols, *rr = res ? res + r * s->cols : NULL;
        float centre = row_centre(xr, rr, s->cols, s->kind);
        float ss = 0.0f;
        for (int64_t j = 0; j < s->cols; j++) {
            float v = rr ? xr[j] + rr[j] : xr[j];
            float d = layer ? v - centre : v;
            float sq = d * d;
            ss += sq;
        }
        float mean = s->cols ? ss / (float)s->cols : 0.0f;
        float inv = 1.0f / sqrtf(mean + eps);
        for (int64_t j = 0; j < s->cols; j++) {
            float v = rr ? xr[j] + rr[j] : xr[j];
            float d = layer ? v - centre : v;
            float t = d * inv;
            if (w) {
                float f = w[j] + off;
                t = t * f;
            }
            if (b)
                t = t + b[j];
            y[r * s->cols + j] = t;
        }
    }
    return 0;
}

/* The 0-based position a rope or attention's row 0 sits at (pos absent: 0; literal: 1-based; named: operand at). */
static int position(struct ev *e, const struct ir_rowidx *pos, int at, int64_t *p)
{
    return row_index(e, pos, at, IR_MAX_DIM, "position", p);
}

/* rope: each head's pairs (i, i + half), or with adjacent (2i, 2i + 1), pair i turned by the tables' row at the head's
 * row's position, col i. */
static int ev_rope(struct ev *e)
{
    const struct ir_rope *s = &e->op->spec.u.rope;
    if (sizes_ok(e, (const int64_t[]){s->h, s->hd, s->half, s->rows}, 4))
        return -1;
    if (s->rows <= 0 || s->h % s->rows != 0 || 2 * s->half > s->hd)
        return fail(e, "h %lld over rows %lld, half %lld of hd %lld do not fit", (long long)s->h,
                    (long long)s->rows, (long long)s->half, (long long)s->hd);
    int64_t n = mulc(s->h, s->hd), clen = 0, slen = 0, p = 0;
    const float *x = arg(e, 0, n);
    const float *ct = x ? arg_all(e, 1, &clen) : NULL;
    const float *st = ct ? arg_all(e, 2, &slen) : NULL;
    if (!st || position(e, &s->pos, 3, &p))
        return -1;
    float *y = result(e, n);
    if (!y || n == 0)
        return y ? 0 : -1;
    int64_t per_row = s->h / s->rows, trows = s->half ? min64(clen, slen) / s->half : INT64_MAX;
    for (int64_t g = 0; g < s->h; g++) {
        int64_t at = p + g / per_row;
        if (s->half && at >= trows)
            return fail(e, "position %lld is past the tables' %lld rows", (long long)at, (long long)trows);
        const float *xh = x + g * s->hd, *c = ct + at * s->half, *sn = st + at * s->half;
        float *yh = y + g * s->hd;
        for (int64_t i = 0; i < s->half; i++) {
            int64_t i0 = s->adjacent ? 2 * i : i, i1 = s->adjacent ? 2 * i + 1 : i + s->half;
            float x0 = xh[i0], x1 = xh[i1];
            float a0 = x0 * c[i], a1 = x1 * sn[i];
            float b0 = x0 * sn[i], b1 = x1 * c[i];
            yh[i0] = a0 - a1;
            yh[i1] = b0 + b1;
        }
        for (int64_t i = 2 * s->half; i < s->hd; i++)
            yh[i] = xh[i];
    }
    return 0;
}

/* head_slice: y[g·width + i] = x[g·every + from + i] for g < n/every, i < width. */
static int ev_head_slice(struct ev *e)
{
    const struct ir_head_slice *s = &e->op->spec.u.head_slice;
    if (sizes_ok(e, (const int64_t[]){s->n, s->every, s->from, s->width}, 4))
        return -1;
    if (s->every <= 0)
        return fail(e, "every must be positive");
    int64_t groups = s->n / s->every;
    if (groups && (groups - 1) * s->every + s->from + s->width > s->n)
        return fail(e, "the slice [%lld, +%lld) of each %lld values reaches past %lld", (long long)s->from,
                    (long long)s->width, (long long)s->every, (long long)s->n);
    const float *x = arg(e, 0, s->n);
    float *y = x ? result(e, mulc(groups, s->width)) : NULL;
    if (!y)
        return -1;
    for (int64_t g = 0; g < groups; g++)
        memcpy(y + g * s->width, x + g * s->every + s->from, sizeof(float) * (size_t)s->width);
    return 0;
}

/* row_gather: y[cols] = the table's row at the index (literal 1-based, named 0-based). */
static int ev_row_gather(struct ev *e)
{
    const struct ir_row_gather *s = &e->op->spec.u.row_gather;
    if (sizes_ok(e, (const int64_t[]){s->rows, s->cols}, 2))
        return -1;
    struct wts w;
    int64_t r = 0;
    if (wts_take(e, 0, s->rows, s->cols, true, &w) || row_index(e, &s->index, 1, s->rows - 1, "row", &r))
        return -1;
    float *y = result(e, s->cols);
    return y ? gather_row(e, &w, r, y) : -1;
}

/* rows_gather: y[c·cols..] = the table's row idx[c] (0-based), c < count. */
static int ev_rows_gather(struct ev *e)
{
    const struct ir_rows_gather *s = &e->op->spec.u.rows_gather;
    if (sizes_ok(e, (const int64_t[]){s->rows, s->cols, s->count}, 3))
        return -1;
    struct wts w;
    if (wts_take(e, 0, s->rows, s->cols, true, &w))
        return -1;
    const float *idx = arg(e, 1, s->count);
    float *y = idx ? result(e, mulc(s->count, s->cols)) : NULL;
    if (!y)
        return -1;
    for (int64_t c = 0; c < s->count; c++) {
        int64_t r = 0;
        if (index_of(e, idx[c], 0, s->rows - 1, "row", &r) || gather_row(e, &w, r, y + c * s->cols))
            return -1;
    }
    return 0;
}

/* set_row: the table's rows [index, index + count) = src, in place; the result is the table. */
static int ev_set_row(struct ev *e)
{
    const struct ir_set_row *s = &e->op->spec.u.set_row;
    if (sizes_ok(e, (const int64_t[]){s->rows, s->cols, s->count}, 3))
        return -1;
    int64_t n = mulc(s->rows, s->cols), r = 0;
    float *table = state_arg(e, 0, n);
    const float *src = table ? arg(e, 1, mulc(s->count, s->cols)) : NULL;
    if (!src || row_index(e, &s->index, 2, s->rows - s->count, "row", &r))
        return -1;
    float *y = result(e, n);
    if (!y)
        return -1;
    memmove(table + r * s->cols, src, sizeof(float) * (size_t)(s->count * s->cols));
    if (y != table)
        memcpy(y, table, sizeof(float) * (size_t)n);
    return 0;
}

/* One attention op's operands and the room its kv heads share: the key cache of the kv head being run transposed
 * (Kt[i][j - lo0] = K[j][kvh·hd + i], for the cache rows [lo0, lo0 + span) any query attends), and a query group's
 * logits (group × span). */
struct att_run {
    const struct ir_attention *s;
    const float *q, *k, *v, *sinks;
    float *y, *kt, *lg, *denom;
    int64_t p, group, lo0, span;
    float scale;
};

/* The cache rows query row r attends: [*lo, *hi] (empty when *lo > *hi). */
static void att_rows(const struct att_run *a, int64_t r, int64_t *lo, int64_t *hi)
{
    int64_t at_pos = a->p + r;
    *hi = min64(at_pos, a->s->l - 1);
    *lo = a->s->window > 0 ? max64(0, at_pos - a->s->window + 1) : 0;
}

/* Kv head kvh's keys over the attended rows, transposed into a->kt (a plain hd × span matrix). */
static void att_keys(const struct att_run *a, int64_t kvh)
{
    const struct ir_attention *s = a->s;
    for (int64_t j = 0; j < a->span; j++) {
        const float *kr = a->k + (a->lo0 + j) * s->kv * s->hd + kvh * s->hd;
        for (int64_t i = 0; i < s->hd; i++)
            a->kt[i * a->span + j] = kr[i];
    }
}

/* Head g's n logits lg (its dots already there): scaled, capped, then each turned into exp(l − max) (the sink
 * counted in the max); their sum (with the sink's term last), in order. */
static float att_weights(const struct att_run *a, int64_t g, float *lg, int64_t n)
{
    const struct ir_attention *s = a->s;
    for (int64_t j = 0; j < n; j++) {
        float l = lg[j] * a->scale;
        if (s->softcap.has) {
            float cap = (float)s->softcap.v, t = l / cap;
            l = cap * tanhf(t);
        }
        lg[j] = l;
    }
    float m = lg[0], sink = a->sinks ? a->sinks[g] : 0.0f;
    for (int64_t j = 1; j < n; j++)
        if (lg[j] > m)
            m = lg[j];
    if (s->sinks && sink > m)
        m = sink;
    float denom = 0.0f;
    for (int64_t j = 0; j < n; j++) {
        lg[j] = expf(lg[j] - m);
        denom += lg[j];
    }
    if (s->sinks)
        denom += expf(sink - m);
    return denom;
}

/* Query row r's heads of kv head kvh: each head's dots with the attended keys (Σ_i q[i]·k[i], in increasing i), its
 * weights, and its output Σ_j w_j·v_j (in increasing j, from 0) over the sum of the weights. The dots and the
 * weighted sums are products (ir_eval_wts_matmul): every output's sum in the scalar loop's order, its bits. */
static void att_row(const struct att_run *a, int64_t r, int64_t kvh)
{
    const struct ir_attention *s = a->s;
    int64_t lo, hi, g0 = kvh * a->group;
    float *y = a->y + (r * s->h + g0) * s->vd;
    att_rows(a, r, &lo, &hi);
    if (lo > hi) {
        memset(y, 0, sizeof(float) * (size_t)(a->group * s->vd)); /* no cache row is attendable: zeros */
        return;
    }
    int64_t n = hi - lo + 1;
    struct wts kt = {a->kt, NULL, s->hd, a->span, NULL, NULL};
    ir_eval_wts_matmul(&kt, 0, s->hd, lo - a->lo0, n, a->q + (r * s->h + g0) * s->hd, a->group, s->hd, a->lg, n);
    for (int64_t g = 0; g < a->group; g++)
        a->denom[g] = att_weights(a, g0 + g, a->lg + g * n, n);
    struct wts v = {a->v, NULL, s->l, s->kv * s->vd, NULL, NULL};
    ir_eval_wts_matmul(&v, lo, n, kvh * s->vd, s->vd, a->lg, a->group, n, y, s->vd);
    for (int64_t g = 0; g < a->group; g++)
        for (int64_t t = 0; t < s->vd; t++)
            y[g * s->vd + t] = y[g * s->vd + t] / a->denom[g];
}

/* attention: each query row r at position p + r attends cache rows j ≤ p + r (and > p + r − window). */
static int ev_attention(struct ev *e)
{
    const struct ir_attention *s = &e->op->spec.u.attention;
    if (sizes_ok(e, (const int64_t[]){s->h, s->kv, s->hd, s->vd, s->l, s->rows, s->window}, 7))
        return -1;
    if (s->kv <= 0 || s->h % s->kv != 0)
        return fail(e, "h %lld is not a multiple of kv %lld", (long long)s->h, (long long)s->kv);
    struct att_run a = {.s = s, .group = s->h / s->kv};
    a.scale = s->scale.has ? (float)s->scale.v : 1.0f / sqrtf((float)s->hd);
    int at = s->pos.kind == IR_RIDX_NAMED ? 4 : 3;
    a.q = arg(e, 0, mulc(s->rows, mulc(s->h, s->hd)));
    a.k = a.q ? arg(e, 1, mulc(s->l, mulc(s->kv, s->hd))) : NULL;
    a.v = a.k ? arg(e, 2, mulc(s->l, mulc(s->kv, s->vd))) : NULL;
    if (!a.v || position(e, &s->pos, 3, &a.p))
        return -1;
    a.sinks = s->sinks ? arg(e, at, s->h) : NULL;
    int64_t ny = mulc(s->rows, mulc(s->h, s->vd));
    a.y = (!s->sinks || a.sinks) ? result(e, ny) : NULL;
    if (!a.y)
        return -1;
    if (ny == 0)
        return 0; /* no output values: the heads and cache rows are not walked */
    int64_t lo, hi, last = -1;
    a.lo0 = s->l;
    for (int64_t r = 0; r < s->rows; r++) {
        att_rows(&a, r, &lo, &hi);
        a.lo0 = lo <= hi ? min64(a.lo0, lo) : a.lo0;
        last = lo <= hi ? max64(last, hi) : last;
    }
    a.span = last >= a.lo0 ? last - a.lo0 + 1 : 0;
    a.kt = scratch(e, mulc(s->hd, a.span));
    a.lg = a.kt ? scratch(e, mulc(a.group, a.span)) : NULL;
    a.denom = a.lg ? scratch(e, a.group) : NULL;
    if (!a.denom)
        return -1;
    for (int64_t kvh = 0; kvh < s->kv; kvh++) {
        att_keys(&a, kvh);
        for (int64_t r = 0; r < s->rows; r++)
            att_row(&a, r, kvh);
    }
    return 0;
}

/* An expert's probability and index, for ranking. */
struct ranked {
    float p;
    int64_t i;
};

/* Rank order: the larger probability first, NaN after every number, ties to the lower index (a total order, so
 * the sort's own stability does not matter). */
static int rank_cmp(const void *pa, const void *pb)
{
    const struct ranked *a = pa, *b = pb;
    bool na = a->p != a->p, nb = b->p != b->p;
    if (na != nb)
        return na ? 1 : -1;
    if (!na && a->p != b->p)
        return a->p > b->p ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* The k experts a router picks among those keep allows (all without keep), in rank order, into sel (room for k); rk
 * has room for every expert. */
static void top_k(const float *prob, const bool *keep, int64_t experts, int64_t k, struct ranked *rk, int64_t *sel)
{
    int64_t n = 0;
    for (int64_t x = 0; x < experts; x++)
        if (!keep || keep[x])
            rk[n++] = (struct ranked){prob[x], x};
    qsort(rk, (size_t)n, sizeof *rk, rank_cmp);
    for (int64_t r = 0; r < k; r++)
        sel[r] = rk[r].i;
}

/* x clamped to [lo, hi] (NaN stays NaN). */
static float clampf(float x, float lo, float hi)
{
    return x > hi ? hi : x < lo ? lo : x;
}

/* The clamped SwiGLU of a gate g and an up u: g' = g clamped above at limit, u' = u clamped to ±limit,
 * (g' · σ(alpha · g')) · (u' + 1). */
static float clamped_swiglu(float g, float u, float alpha, float limit)
{
    float gc = g > limit ? limit : g;
    float t = alpha * gc;
    float glu = gc * sigmoidf(t);
    float u1 = clampf(u, -limit, limit) + 1.0f;
    return glu * u1;
}

/* A mixture's expert activation of gate g and up u. */
static float moe_act(const struct ir_moe *s, float g, float u)
{
    if (s->act == IR_MOE_CLAMPED_SWIGLU)
        return clamped_swiglu(g, u, (float)s->alpha.v, (float)s->limit.v);
    float a = s->act == IR_MOE_GEGLU ? geluf(g) : siluf(g);
    return a * u;
}

/* v[i] += b[i] for i < n (a bias row added to a product; no-op without one). */
static void add_bias(float *v, const float *b, int64_t n)
{
    for (int64_t i = 0; b && i < n; i++)
        v[i] = v[i] + b[i];
}

/* The softmax of v[0..n) in place: the largest subtracted (scanning upward), then each exp over their sum. */
static void softmax_inplace(float *v, int64_t n)
{
    float m = v[0];
    for (int64_t i = 1; i < n; i++)
        if (v[i] > m)
            m = v[i];
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        v[i] = expf(v[i] - m);
        sum += v[i];
    }
    for (int64_t i = 0; i < n; i++)
        v[i] = v[i] / sum;
}

/* A mixture's routing room: the choosing scores and which experts compete (experts each), the groups' scores and
 * the kept groups (groups each), the ranking room (experts). */
struct moe_route_room {
    float *choose, *gs;
    bool *keep;
    int64_t *kept;
    struct ranked *rk;
};

/* The experts that compete under group-limited choice, from the choosing scores ch: each group scored by the sum of
 * its two best (in rank order), the topk_groups best groups (in rank order) kept whole. */
static void moe_keep_groups(const struct ir_moe *s, const float *ch, struct moe_route_room *m)
{
    int64_t size = s->experts / s->groups;
    for (int64_t j = 0; j < s->groups; j++) {
        int64_t two[2];
        top_k(ch + j * size, NULL, size, 2, m->rk, two);
        m->gs[j] = ch[j * size + two[0]] + ch[j * size + two[1]];
    }
    top_k(m->gs, NULL, s->groups, s->topk_groups, m->rk, m->kept);
    for (int64_t e = 0; e < s->experts; e++)
        m->keep[e] = false;
    for (int64_t r = 0; r < s->topk_groups; r++)
        for (int64_t i = 0; i < size; i++)
            m->keep[m->kept[r] * size + i] = true;
}

/* Whether a mixture's routing fields can be evaluated (the validator's rules; an unchecked graph may break them). */
static bool moe_routing_ok(const struct ir_moe *s)
{
    if (s->groups < 0 || s->topk_groups < 0 || (s->groups > 0) != (s->topk_groups > 0))
        return false;
    return s->groups == 0 || (s->experts % s->groups == 0 && s->experts / s->groups >= 2 &&
                              s->topk_groups <= s->groups && s->topk_groups * (s->experts / s->groups) >= s->k);
}

/* Allocate a mixture's routing room (free it with moe_room_free); whether it was. */
static bool moe_room_alloc(const struct ir_moe *s, struct moe_route_room *m)
{
    size_t e = (size_t)s->experts, g = (size_t)max64(s->groups, 1);
    m->choose = calloc(e, sizeof *m->choose);
    m->gs = calloc(g, sizeof *m->gs);
    m->keep = calloc(e, sizeof *m->keep);
    m->kept = calloc(g, sizeof *m->kept);
    m->rk = calloc(e, sizeof *m->rk);
    return m->choose && m->gs && m->keep && m->kept && m->rk;
}

/* Free a mixture's routing room. */
static void moe_room_free(struct moe_route_room *m)
{
    free(m->choose);
    free(m->gs);
    free(m->keep);
    free(m->kept);
    free(m->rk);
}

/* The scores of a router's logits lg in place: a softmax over every expert, σ of each (sigmoid), or the logits
 * themselves (topk_softmax). */
static void moe_score(const struct ir_moe *s, float *lg)
{
    if (s->topk_softmax)
        return;
    if (!s->sigmoid)
        softmax_inplace(lg, s->experts);
    for (int64_t e = 0; s->sigmoid && e < s->experts; e++)
        lg[e] = sigmoidf(lg[e]);
}

/* A router's choice from its logits lg[experts] (overwritten by the scores): the k experts in rank order into ix and
 * their weights into w. The scores (plus the correction row corr, when there is one) choose, among the kept groups'
 * experts with groups; the chosen scores weigh: a softmax over the k (topk_softmax), renormalised over their sum (in
 * rank order; not with no_renorm), then each times scale when present. */
static void moe_route(const struct ir_moe *s, float *lg, const float *corr, struct moe_route_room *m, int64_t *ix,
                      float *w)
{
    moe_score(s, lg);
    const float *ch = lg;
    if (corr) {
        for (int64_t e = 0; e < s->experts; e++)
            m->choose[e] = lg[e] + corr[e];
        ch = m->choose;
    }
    if (s->groups > 0)
        moe_keep_groups(s, ch, m);
    top_k(ch, s->groups > 0 ? m->keep : NULL, s->experts, s->k, m->rk, ix);
    for (int64_t r = 0; r < s->k; r++)
        w[r] = lg[ix[r]];
    if (s->topk_softmax && s->k > 0)
        softmax_inplace(w, s->k);
    if (!s->topk_softmax && !s->no_renorm) {
        float wsum = 0.0f;
        for (int64_t r = 0; r < s->k; r++)
            wsum += w[r];
        for (int64_t r = 0; r < s->k; r++)
            w[r] = w[r] / wsum;
    }
    for (int64_t r = 0; s->scale.has && r < s->k; r++)
        w[r] = (float)s->scale.v * w[r];
}

/* A mixture's operands: x and the four matrices, with bias the four bias rows, with correction its row (each NULL
 * without). */
struct moe_args {
    const float *x, *rb, *gb, *ub, *db, *corr;
    struct wts R, G, U, D;
};

/* Read a mixture's operands into a; 0, or -1 with err. */
static int moe_args_get(struct ev *e, const struct ir_moe *s, struct moe_args *a)
{
    int64_t wide = mulc(s->experts, s->dff);
    memset(a, 0, sizeof *a);
    a->x = arg(e, 0, s->d);
    if (!a->x || wts_get(e, 1, s->d, s->experts, &a->R) || wts_get(e, 2, s->d, wide, &a->G) ||
        wts_get(e, 3, s->d, wide, &a->U) || wts_get(e, 4, s->dff, mulc(s->experts, s->d), &a->D))
        return -1;
    if (s->correction && !(a->corr = arg(e, s->bias ? 9 : 5, s->experts)))
        return -1;
    if (!s->bias)
        return 0;
    a->rb = arg(e, 5, s->experts);
    a->gb = a->rb ? arg(e, 6, wide) : NULL;
    a->ub = a->gb ? arg(e, 7, wide) : NULL;
    a->db = a->ub ? arg(e, 8, mulc(s->experts, s->d)) : NULL;
    return a->db ? 0 : -1;
}

/* moe: the router's choice, then Σ_rank w · (act(x·G_e [+ b]) ⊙ (x·U_e [+ b])) · D_e [+ b]. */
static int ev_moe(struct ev *e)
{
    const struct ir_moe *s = &e->op->spec.u.moe;
    if (sizes_ok(e, (const int64_t[]){s->d, s->k, s->dff, s->experts}, 4))
        return -1;
    if (s->experts < 1 || s->k > s->experts || (int)s->act < 0 || s->act >= IR_MOE_COUNT)
        return fail(e, "top-%lld of %lld experts", (long long)s->k, (long long)s->experts);
    if (!moe_routing_ok(s))
        return fail(e, "top-%lld of %lld experts in %lld groups, %lld kept", (long long)s->k,
                    (long long)s->experts, (long long)s->groups, (long long)s->topk_groups);
    struct moe_args a;
    if (moe_args_get(e, s, &a))
        return -1;
    float *y = result(e, s->d);
    float *prob = y ? scratch(e, s->experts) : NULL;
    float *gate = prob ? scratch(e, s->dff) : NULL, *up = gate ? scratch(e, s->dff) : NULL;
    float *down = up ? scratch(e, s->d) : NULL;
    float *w = down ? scratch(e, max64(s->k, 1)) : NULL;
    if (!w)
        return -1;
    struct moe_route_room room;
    int64_t *ix = calloc((size_t)max64(s->k, 1), sizeof *ix);
    if (!moe_room_alloc(s, &room) || !ix) {
        moe_room_free(&room);
        free(ix);
        return fail(e, "out of memory");
    }
    ir_eval_wts_matmul(&a.R, 0, s->d, 0, s->experts, a.x, 1, s->d, prob, s->experts);
    add_bias(prob, a.rb, s->experts);
    moe_route(s, prob, a.corr, &room, ix, w);
    for (int64_t i = 0; i < s->d; i++)
        y[i] = 0.0f;
    for (int64_t r = 0; r < s->k; r++) {
        int64_t ex = ix[r];
        ir_eval_wts_matmul(&a.G, 0, s->d, ex * s->dff, s->dff, a.x, 1, s->d, gate, s->dff);
        ir_eval_wts_matmul(&a.U, 0, s->d, ex * s->dff, s->dff, a.x, 1, s->d, up, s->dff);
        add_bias(gate, a.gb ? a.gb + ex * s->dff : NULL, s->dff);
        add_bias(up, a.ub ? a.ub + ex * s->dff : NULL, s->dff);
        for (int64_t j = 0; j < s->dff; j++)
            gate[j] = moe_act(s, gate[j], up[j]);
        ir_eval_wts_matmul(&a.D, 0, s->dff, ex * s->d, s->d, gate, 1, s->dff, down, s->d);
        add_bias(down, a.db ? a.db + ex * s->d : NULL, s->d);
        for (int64_t i = 0; i < s->d; i++) {
            float t = w[r] * down[i];
            y[i] += t;
        }
    }
    moe_room_free(&room);
    free(ix);
    return 0;
}

/* One gated delta step of one head on its state S (dk × dv): decay, delta write, read, normed gated output. */
struct gdn_head {
    float *S;
    const float *q, *k, *v, *z, *w;
    float g, beta, eps, rdk;
    int64_t dk, dv;
    bool sigmoid_gate;
};

/* Run one head's step, writing dv values into y; kv and o have room for dv values. */
static void gdn_head_run(const struct gdn_head *h, float *kv, float *o, float *y)
{
    float decay = expf(h->g);
    int64_t n = h->dk * h->dv;
    for (int64_t i = 0; i < n; i++)
        h->S[i] = h->S[i] * decay;
    for (int64_t j = 0; j < h->dv; j++)
        kv[j] = 0.0f;
    for (int64_t i = 0; i < h->dk; i++)
        for (int64_t j = 0; j < h->dv; j++) {
            float p = h->S[i * h->dv + j] * h->k[i];
            kv[j] += p;
        }
    for (int64_t j = 0; j < h->dv; j++) {
        float dlt = h->v[j] - kv[j];
        kv[j] = h->beta * dlt;
    }
    for (int64_t i = 0; i < h->dk; i++)
        for (int64_t j = 0; j < h->dv; j++) {
            float p = h->k[i] * kv[j];
            h->S[i * h->dv + j] += p;
        }
    for (int64_t j = 0; j < h->dv; j++)
        o[j] = 0.0f;
    for (int64_t i = 0; i < h->dk; i++) {
        float qi = h->q[i] / h->rdk;
        for (int64_t j = 0; j < h->dv; j++) {
            float p = h->S[i * h->dv + j] * qi;
            o[j] += p;
        }
    }
    float ss = 0.0f;
    for (int64_t j = 0; j < h->dv; j++) {
        float sq = o[j] * o[j];
        ss += sq;
    }
    float mean = h->dv ? ss / (float)h->dv : 0.0f;
    float inv = 1.0f / sqrtf(mean + h->eps);
    for (int64_t j = 0; j < h->dv; j++) {
        float t = o[j] * inv;
        t = t * h->w[j];
        float gz = h->sigmoid_gate ? sigmoidf(h->z[j]) : siluf(h->z[j]);
        y[j] = t * gz;
    }
}

/* gated_delta: rows in order, heads in order, each head's state updated in place. */
static int ev_gated_delta(struct ev *e)
{
    const struct ir_gated_delta *s = &e->op->spec.u.gated_delta;
    if (sizes_ok(e, (const int64_t[]){s->h, s->dk, s->dv, s->rows}, 4))
        return -1;
    if (s->kh < 0 || (s->kh > 0 && s->h % s->kh != 0))
        return fail(e, "kh must divide h");
    int64_t kh = s->kh ? s->kh : s->h, group = s->h / kh;
    int64_t nk = mulc(s->rows, mulc(kh, s->dk)), nv = mulc(s->rows, mulc(s->h, s->dv));
    int64_t nh = mulc(s->rows, s->h);
    const float *q = arg(e, 0, nk), *k = q ? arg(e, 1, nk) : NULL;
    const float *v = k ? arg(e, 2, nv) : NULL, *z = v ? arg(e, 3, nv) : NULL;
    const float *b = z ? arg(e, 4, nh) : NULL, *a = b ? arg(e, 5, nh) : NULL;
    float *S = a ? state_arg(e, 6, mulc(s->h, mulc(s->dk, s->dv))) : NULL;
    const float *w = S ? arg(e, 7, s->dv) : NULL;
    float *y = w ? result(e, nv) : NULL;
    float *kv = y ? scratch(e, s->dv) : NULL, *o = kv ? scratch(e, s->dv) : NULL;
    if (!o)
        return -1;
    struct gdn_head h;
    memset(&h, 0, sizeof h);
    h.w = w;
    h.eps = (float)s->eps;
    h.rdk = sqrtf((float)s->dk);
    h.dk = s->dk;
    h.dv = s->dv;
    h.sigmoid_gate = s->gate == IR_GATE_SIGMOID;
    for (int64_t t = 0; t < s->rows; t++)
        for (int64_t hh = 0; hh < s->h; hh++) {
            int64_t u = t * s->h + hh, uk = t * kh + hh / group;
            h.S = S + hh * s->dk * s->dv;
            h.q = q + uk * s->dk;
            h.k = k + uk * s->dk;
            h.v = v + u * s->dv;
            h.z = z + u * s->dv;
            h.g = a[u];
            h.beta = b[u];
            gdn_head_run(&h, kv, o, y + u * s->dv);
        }
    return 0;
}

/* causal_conv: y[t][c] = Σ_{j<taps} w[c][j] · x'[t+j][c], x' the ring's rows then x's; the ring keeps x''s last
 * taps − 1 rows. */
static int ev_causal_conv(struct ev *e)
{
    const struct ir_causal_conv *s = &e->op->spec.u.causal_conv;
    if (sizes_ok(e, (const int64_t[]){s->chan, s->taps, s->rows}, 3))
        return -1;
    if (s->taps < 1)
        return fail(e, "taps must be at least 1");
    int64_t keep = mulc(s->taps - 1, s->chan), nx = mulc(s->rows, s->chan);
    const float *x = arg(e, 0, nx);
    const float *w = x ? arg(e, 1, mulc(s->chan, s->taps)) : NULL;
    float *ring = w ? state_arg(e, 2, keep) : NULL;
    float *y = ring ? result(e, nx) : NULL;
    if (y && nx == 0 && keep == 0)
        return 0; /* no channels: nothing to convolve or keep */
    float *xp = y ? scratch(e, addc(keep, nx)) : NULL;
    if (!xp)
        return -1;
    memcpy(xp, ring, sizeof(float) * (size_t)keep);
    memcpy(xp + keep, x, sizeof(float) * (size_t)nx);
    for (int64_t t = 0; t < s->rows; t++)
        for (int64_t c = 0; c < s->chan; c++) {
            float acc = 0.0f;
            for (int64_t j = 0; j < s->taps; j++) {
                float p = w[c * s->taps + j] * xp[(t + j) * s->chan + c];
                acc += p;
            }
            y[t * s->chan + c] = acc;
        }
    memcpy(ring, xp + nx, sizeof(float) * (size_t)keep);
    return 0;
}

/* The unary activations' meanings, by kind. */
static float (*const unary_fns[IR_KIND_COUNT])(float) = {
    [IR_KIND_SILU] = siluf, [IR_KIND_SIGMOID] = sigmoidf, [IR_KIND_GELU] = geluf, [IR_KIND_RELU] = reluf};

/* silu, sigmoid, gelu, relu: y[i] = f(x[i]). */
static int ev_unary(struct ev *e)
{
    int64_t n = e->op->spec.u.unary.n;
    if (sizes_ok(e, &n, 1))
        return -1;
    const float *x = arg(e, 0, n);
    float *y = x ? result(e, n) : NULL;
    if (!y)
        return -1;
    float (*fn)(float) = unary_fns[e->op->spec.kind];
    for (int64_t i = 0; i < n; i++)
        y[i] = fn(x[i]);
    return 0;
}

/* scale: y[i] = factor · x[i]. */
static int ev_scale(struct ev *e)
{
    const struct ir_scale *s = &e->op->spec.u.scale;
    if (sizes_ok(e, &s->n, 1))
        return -1;
    const float *x = arg(e, 0, s->n);
    float *y = x ? result(e, s->n) : NULL;
    if (!y)
        return -1;
    float f = (float)s->factor;
    for (int64_t i = 0; i < s->n; i++)
        y[i] = f * x[i];
    return 0;
}

/* swiglu: y[i] = silu(g[i]) · u[i]. */
static int ev_swiglu(struct ev *e)
{
    int64_t n = e->op->spec.u.swiglu.total;
    if (sizes_ok(e, &n, 1))
        return -1;
    const float *g = arg(e, 0, n), *u = g ? arg(e, 1, n) : NULL;
    float *y = u ? result(e, n) : NULL;
    if (!y)
        return -1;
    for (int64_t i = 0; i < n; i++)
        y[i] = siluf(g[i]) * u[i];
    return 0;
}

/* head_matmul: y[:, h·b..(h+1)·b] = x[:, h·a..(h+1)·a] · W[h·a..(h+1)·a, :] for each head h. */
static int ev_head_matmul(struct ev *e)
{
    const struct ir_head_matmul *s = &e->op->spec.u.head_matmul;
    if (sizes_ok(e, (const int64_t[]){s->m, s->heads, s->a, s->b}, 4))
        return -1;
    struct wts w;
    int64_t xa = mulc(s->heads, s->a), yb = mulc(s->heads, s->b);
    const float *x = arg(e, 0, mulc(s->m, xa));
    if (!x || wts_get(e, 1, xa, s->b, &w))
        return -1;
    float *y = result(e, mulc(s->m, yb));
    if (!y || mulc(s->m, yb) == 0)
        return y ? 0 : -1;
    for (int64_t h = 0; h < s->heads; h++)
        ir_eval_wts_matmul(&w, h * s->a, s->a, 0, s->b, x + h * s->a, s->m, xa, y + h * s->b, yb);
    return 0;
}

/* join: unit u of rows·heads = a's u-th wa/heads values then b's u-th wb/heads values. */
static int ev_join(struct ev *e)
{
    const struct ir_join *s = &e->op->spec.u.join;
    if (sizes_ok(e, (const int64_t[]){s->rows, s->heads, s->wa, s->wb}, 4))
        return -1;
    if (s->heads <= 0 || s->wa % s->heads || s->wb % s->heads)
        return fail(e, "widths %lld and %lld are not whole over %lld heads", (long long)s->wa, (long long)s->wb,
                    (long long)s->heads);
    int64_t units = mulc(s->rows, s->heads), ha = s->wa / s->heads, hb = s->wb / s->heads;
    const float *a = arg(e, 0, mulc(s->rows, s->wa)), *b = a ? arg(e, 1, mulc(s->rows, s->wb)) : NULL;
    float *y = b ? result(e, mulc(s->rows, addc(s->wa, s->wb))) : NULL;
    if (!y || ha + hb == 0)
        return y ? 0 : -1;
    for (int64_t u = 0; u < units; u++) {
        memcpy(y + u * (ha + hb), a + u * ha, sizeof(float) * (size_t)ha);
        memcpy(y + u * (ha + hb) + ha, b + u * hb, sizeof(float) * (size_t)hb);
    }
    return 0;
}

/* l2_norm: y[r] = x[r] · 1/sqrt(Σ x[r]² + eps). */
static int ev_l2_norm(struct ev *e)
{
    const struct ir_l2_norm *s = &e->op->spec.u.l2_norm;
    if (sizes_ok(e, (const int64_t[]){s->rows, s->cols}, 2))
        return -1;
    int64_t n = mulc(s->rows, s->cols);
    const float *x = arg(e, 0, n);
    float *y = x ? result(e, n) : NULL;
    if (!y || n == 0)
        return y ? 0 : -1;
    float eps = (float)s->eps;
    for (int64_t r = 0; r < s->rows; r++) {
        const float *xr = x + r * s->cols;
        float ss = 0.0f;
        for (int64_t j = 0; j < s->cols; j++) {
            float sq = xr[j] * xr[j];
            ss += sq;
        }
        float inv = 1.0f / sqrtf(ss + eps);
        for (int64_t j = 0; j < s->cols; j++)
            y[r * s->cols + j] = xr[j] * inv;
    }
    return 0;
}

/* argmax: y[r] = the first index of row r's largest value (NaN never wins; an all-NaN row gives 0). */
static int ev_argmax(struct ev *e)
{
    const struct ir_argmax *s = &e->op->spec.u.argmax;
    if (sizes_ok(e, (const int64_t[]){s->rows, s->cols}, 2))
        return -1;
    const float *x = arg(e, 0, mulc(s->rows, s->cols));
    float *y = x ? result(e, s->rows) : NULL;
    if (!y)
        return -1;
    for (int64_t r = 0; r < s->rows; r++) {
        const float *xr = x + r * s->cols;
        int64_t best = -1;
        for (int64_t j = 0; j < s->cols; j++)
            if (xr[j] == xr[j] && (best < 0 || xr[j] > xr[best]))
                best = j;
        y[r] = (float)(best < 0 ? 0 : best);
    }
    return 0;
}

/* decay: g[i] = −exp(alog[i mod H]) · softplus(a[i] + dt_bias[i mod H]), H = n/rows heads a row. */
static int ev_decay(struct ev *e)
{
    const struct ir_decay *s = &e->op->spec.u.decay;
    if (sizes_ok(e, (const int64_t[]){s->n, s->rows}, 2))
        return -1;
    if (s->rows <= 0 || s->n % s->rows)
        return fail(e, "n %lld is not whole over %lld rows", (long long)s->n, (long long)s->rows);
    int64_t heads = s->n / s->rows;
    const float *a = arg(e, 0, s->n), *alog = a ? arg(e, 1, heads) : NULL;
    const float *dtb = alog ? arg(e, 2, heads) : NULL;
    float *y = dtb ? result(e, s->n) : NULL;
    if (!y)
        return -1;
    for (int64_t i = 0; i < s->n; i++) {
        float t = a[i] + dtb[i % heads];
        float sp = softplusf(t);
        float ea = expf(alog[i % heads]);
        y[i] = -(ea * sp);
    }
    return 0;
}

/* softcap: y[i] = cap · tanh(x[i] / cap). */
static int ev_softcap(struct ev *e)
{
    const struct ir_softcap *s = &e->op->spec.u.softcap;
    if (sizes_ok(e, &s->n, 1))
        return -1;
    const float *x = arg(e, 0, s->n);
    float *y = x ? result(e, s->n) : NULL;
    if (!y)
        return -1;
    float c = (float)s->cap;
    for (int64_t i = 0; i < s->n; i++) {
        float t = x[i] / c;
        y[i] = c * tanhf(t);
    }
    return 0;
}

/* Each primitive kind's meaning. */
static int (*const prim_fns[IR_KIND_COUNT])(struct ev *) = {
#define ROW(k, f) [IR_KIND_##k] = f,
    ROW(MATMUL, ev_matmul) ROW(ELEMENTWISE, ev_elementwise) ROW(RMS_NORM, ev_rms_norm) ROW(ROPE, ev_rope)
    ROW(HEAD_SLICE, ev_head_slice) ROW(ROW_GATHER, ev_row_gather) ROW(ROWS_GATHER, ev_rows_gather)
    ROW(SET_ROW, ev_set_row) ROW(ATTENTION, ev_attention) ROW(MOE, ev_moe) ROW(GATED_DELTA, ev_gated_delta)
    ROW(CAUSAL_CONV, ev_causal_conv) ROW(SILU, ev_unary) ROW(SIGMOID, ev_unary) ROW(GELU, ev_unary)
    ROW(RELU, ev_unary) ROW(SCALE, ev_scale) ROW(SWIGLU, ev_swiglu) ROW(HEAD_MATMUL, ev_head_matmul)
    ROW(JOIN, ev_join) ROW(L2_NORM, ev_l2_norm) ROW(ARGMAX, ev_argmax) ROW(DECAY, ev_decay)
    ROW(SOFTCAP, ev_softcap)
#undef ROW
};

/* ── Mixtures batched per expert ──────────────────────────────────────────────────────────────────────────── */

/* A prefill's mixture is one moe op a row, each row gathered from the normed rows before it and set into the
 * layer's table after. Those ops are evaluated together when they reach the first: every row routed, then each
 * expert's rows multiplied at once (a product of several rows keeps each output's sum, so each row's values are the
 * ones its own op computes), each row's result summed in its own rank order. A run is batched only where doing so
 * early changes nothing another op of the run reads or writes; elsewhere each op runs alone. */

#define MOE_BATCH_MAX 4096

static int place(struct ev *e);
static int eval_op(struct ev *e, const struct ir_op *op, int depth);
static int check_scope(struct ev *e, const struct ir_op *op);

/* Whether op is primitive op of kind k. */
static bool is_kind(const struct ir_op *op, enum ir_kind k)
{
    return op->sym == IR_SYM_PRIM && op->spec.kind == k;
}

/* Whether op writes tensor t: its result, its destination, or (set_row) the table it updates. */
static bool op_writes(const struct ir_op *op, ir_tid t)
{
    return op->out == t || op->dst.buf == t || (is_kind(op, IR_KIND_SET_ROW) && op->nins > 0 && op->ins[0] == t);
}

/* Whether op reads tensor t. */
static bool op_reads(const struct ir_op *op, ir_tid t)
{
    for (int32_t k = 0; k < op->nins; k++)
        if (op->ins[k] == t)
            return true;
    return false;
}

/* Whether two optional reals are alike. */
static bool optf_same(struct ir_optf a, struct ir_optf b) { return a.has == b.has && (!a.has || a.v == b.v); }

/* Whether two mixtures' specs are alike. */
static bool moe_spec_same(const struct ir_moe *a, const struct ir_moe *b)
{
    return a->d == b->d && a->k == b->k && a->dff == b->dff && a->experts == b->experts && a->act == b->act &&
           a->bias == b->bias && a->topk_softmax == b->topk_softmax && a->sigmoid == b->sigmoid &&
           a->no_renorm == b->no_renorm && a->correction == b->correction && a->groups == b->groups &&
           a->topk_groups == b->topk_groups && optf_same(a->scale, b->scale) && optf_same(a->alpha, b->alpha) &&
           optf_same(a->limit, b->limit);
}

/* Whether op b is the mixture a on another row: a moe of a's spec reading a's weights, every operand read whole. */
static bool same_mixture(const struct ir_op *a, const struct ir_op *b)
{
    if (!is_kind(b, IR_KIND_MOE) || b->nins != a->nins || !b->access || !moe_spec_same(&a->spec.u.moe, &b->spec.u.moe))
        return false;
    for (int32_t k = 0; k < b->nins; k++)
        if (b->access[k].strided || (k > 0 && b->ins[k] != a->ins[k]))
            return false;
    return true;
}

/* Whether no op of ops[from, to) writes t. */
static bool unwritten(const struct ir_op *ops, int32_t from, int32_t to, ir_tid t)
{
    for (int32_t p = from; p < to; p++)
        if (op_writes(&ops[p], t))
            return false;
    return true;
}

/* The gather (a row gather or a view) in ops(i, j) that computes mixture j's row, when j can be computed at i: its
 * row gathered from values no op of ops[i, j) writes, that row written by nothing else there nor read by ops[i], its
 * weights written by nothing there, its result neither read nor written there, and its destination written there
 * only by the batch's earlier mixtures (whose results are placed before j's). -1 when it cannot. */
static int32_t moe_early_gather(const struct ir_op *ops, int32_t i, int32_t j)
{
    ir_tid x = ops[j].ins[0];
    int32_t g = -1;
    if (op_reads(&ops[i], x))
        return -1;
    for (int32_t p = i + 1; p < j; p++) {
        const struct ir_op *op = &ops[p];
        bool member = same_mixture(&ops[i], op); /* an earlier op of the batch: its result placed before j's */
        if (op_reads(op, ops[j].out) || op_reads(op, ops[j].dst.buf) || op_writes(op, ops[j].out) ||
            (!member && op_writes(op, ops[j].dst.buf)))
            return -1;
        if (op_writes(op, x)) {
            bool gather = is_kind(op, IR_KIND_ROW_GATHER) || op->sym == IR_SYM_VIEW;
            if (g != -1 || !gather || op->out != x || op->dst.buf != x)
                return -1;
            g = p;
        }
        for (int32_t k = 1; k < ops[j].nins; k++)
            if (op_writes(op, ops[j].ins[k]))
                return -1;
    }
    if (g < 0)
        return -1;
    for (int32_t k = 0; k < ops[g].nins; k++)
        if (!unwritten(ops, i, g, ops[g].ins[k]))
            return -1;
    return g;
}

/* The mixtures computed with ops[i] (into at[], their gathers into gat[]): the moe ops after it of the same mixture,
 * up to the first op that is no row gather, set_row or such a mixture, each while it can be computed at i. Their
 * count (ops[i] first). */
static int32_t moe_batch_of(const struct ir_op *ops, int32_t n, int32_t i, int32_t *at, int32_t *gat)
{
    int32_t nb = 1;
    at[0] = i;
    gat[0] = -1;
    for (int32_t j = i + 1; j < n && nb < MOE_BATCH_MAX; j++) {
        if (is_kind(&ops[j], IR_KIND_ROW_GATHER) || is_kind(&ops[j], IR_KIND_SET_ROW) || ops[j].sym == IR_SYM_VIEW)
            continue;
        if (!same_mixture(&ops[i], &ops[j]) || (gat[nb] = moe_early_gather(ops, i, j)) < 0)
            break;
        at[nb++] = j;
    }
    return nb;
}

/* A batch's room: rows × d inputs, the router's rows × experts, each row's k choices and weights, each row's k
 * expert outputs (d each), and an expert's rows' inputs, gates, ups and downs. */
struct moe_batch_room {
    float *x, *prob, *w, *outs, *xe, *gate, *up, *down;
    int64_t *ix, *rows_of;
};

/* Free a batch's room. */
static void moe_batch_free(struct moe_batch_room *b)
{
    free(b->x);
    free(b->prob);
    free(b->w);
    free(b->outs);
    free(b->xe);
    free(b->gate);
    free(b->up);
    free(b->down);
    free(b->ix);
    free(b->rows_of);
}

/* Allocate a batch's room for nb rows; whether it was. */
static bool moe_batch_alloc(const struct ir_moe *s, int64_t nb, struct moe_batch_room *b)
{
    size_t r = (size_t)nb, k = (size_t)max64(s->k, 1), d = (size_t)s->d, f = (size_t)s->dff;
    memset(b, 0, sizeof *b);
    b->x = malloc(sizeof(float) * r * d + 1);
    b->prob = malloc(sizeof(float) * r * (size_t)s->experts + 1);
    b->w = malloc(sizeof(float) * r * k);
    b->outs = malloc(sizeof(float) * r * k * d + 1);
    b->xe = malloc(sizeof(float) * r * d + 1);
    b->gate = malloc(sizeof(float) * r * f + 1);
    b->up = malloc(sizeof(float) * r * f + 1);
    b->down = malloc(sizeof(float) * r * d + 1);
    b->ix = malloc(sizeof(int64_t) * r * k);
    b->rows_of = malloc(sizeof(int64_t) * r * k);
    return b->x && b->prob && b->w && b->outs && b->xe && b->gate && b->up && b->down && b->ix && b->rows_of;
}

/* Expert ex's rows of the batch (the (row, rank) pairs b->rows_of lists, cnt of them) through its gate, up and down,
 * each row's output into its slot of b->outs. */
static void moe_expert_rows(const struct ir_moe *s, const struct moe_args *a, struct moe_batch_room *b, int64_t ex,
                            int64_t cnt)
{
    for (int64_t c = 0; c < cnt; c++)
        memcpy(b->xe + c * s->d, b->x + b->rows_of[c] / max64(s->k, 1) * s->d, sizeof(float) * (size_t)s->d);
    ir_eval_wts_matmul(&a->G, 0, s->d, ex * s->dff, s->dff, b->xe, cnt, s->d, b->gate, s->dff);
    ir_eval_wts_matmul(&a->U, 0, s->d, ex * s->dff, s->dff, b->xe, cnt, s->d, b->up, s->dff);
    for (int64_t c = 0; c < cnt; c++) {
        float *gate = b->gate + c * s->dff, *up = b->up + c * s->dff;
        add_bias(gate, a->gb ? a->gb + ex * s->dff : NULL, s->dff);
        add_bias(up, a->ub ? a->ub + ex * s->dff : NULL, s->dff);
        for (int64_t j = 0; j < s->dff; j++)
            gate[j] = moe_act(s, gate[j], up[j]);
    }
    ir_eval_wts_matmul(&a->D, 0, s->dff, ex * s->d, s->d, b->gate, cnt, s->dff, b->down, s->d);
    for (int64_t c = 0; c < cnt; c++) {
        add_bias(b->down + c * s->d, a->db ? a->db + ex * s->d : NULL, s->d);
        memcpy(b->outs + b->rows_of[c] * s->d, b->down + c * s->d, sizeof(float) * (size_t)s->d);
    }
}

/* Route every row of the batch, then run each expert over its rows. 0, or -1 with err. */
static int moe_batch_experts(struct ev *e, const struct ir_moe *s, const struct moe_args *a, int64_t nb,
                             struct moe_batch_room *b)
{
    struct moe_route_room room;
    int64_t k = s->k;
    if (!moe_room_alloc(s, &room)) {
        moe_room_free(&room);
        return fail(e, "out of memory");
    }
    ir_eval_wts_matmul(&a->R, 0, s->d, 0, s->experts, b->x, nb, s->d, b->prob, s->experts);
    for (int64_t r = 0; r < nb; r++) {
        add_bias(b->prob + r * s->experts, a->rb, s->experts);
        moe_route(s, b->prob + r * s->experts, a->corr, &room, b->ix + r * k, b->w + r * k);
    }
    moe_room_free(&room);
    for (int64_t ex = 0; ex < s->experts; ex++) {
        int64_t cnt = 0;
        for (int64_t slot = 0; slot < nb * k; slot++)
            if (b->ix[slot] == ex)
                b->rows_of[cnt++] = slot; /* row slot / k, its rank slot % k */
        if (cnt)
            moe_expert_rows(s, a, b, ex, cnt);
    }
    return 0;
}

/* Each batched op's result: Σ over its row's ranks in order of weight × output, then placed. 0, or -1 with err. */
static int moe_batch_results(struct ev *e, const struct ir_op *ops, const int32_t *at, int64_t nb,
                             const struct moe_batch_room *b)
{
    const struct ir_moe *s = &ops[at[0]].spec.u.moe;
    for (int64_t r = 0; r < nb; r++) {
        e->op = &ops[at[r]];
        e->top = e->scope ? e->top : at[r];
        float *y = result(e, s->d);
        if (!y)
            return -1;
        for (int64_t i = 0; i < s->d; i++)
            y[i] = 0.0f;
        for (int64_t q = 0; q < s->k; q++) {
            const float *o = b->outs + (r * s->k + q) * s->d;
            for (int64_t i = 0; i < s->d; i++) {
                float t = b->w[r * s->k + q] * o[i];
                y[i] += t;
            }
        }
        if (place(e))
            return -1;
    }
    return 0;
}

/* Evaluate the batch: ops[at[0]] and the mixtures after it whose gathers (gat) run first. 0, or -1 with err. */
static int moe_batch_run(struct ev *e, const struct ir_op *ops, const int32_t *at, const int32_t *gat, int64_t nb)
{
    int32_t top = e->top;
    for (int64_t r = 0; r < nb; r++)
        if (check_scope(e, &ops[at[r]]))
            return -1;
    for (int64_t r = 1; r < nb; r++) {
        e->top = e->scope ? top : gat[r]; /* a fused op's parts keep its index */
        int rc = eval_op(e, &ops[gat[r]], 0);
        if (rc)
            return rc;
    }
    e->top = top;
    e->op = &ops[at[0]];
    const struct ir_moe *s = &e->op->spec.u.moe;
    struct moe_args a;
    struct moe_batch_room b;
    if (moe_args_get(e, s, &a))
        return -1;
    int rc = moe_batch_alloc(s, nb, &b) ? 0 : fail(e, "out of memory for a batch of %lld rows", (long long)nb);
    for (int64_t r = 0; rc == 0 && r < nb; r++) {
        e->op = &ops[at[r]];
        const float *x = arg(e, 0, s->d);
        if (!x)
            rc = -1;
        else
            memcpy(b.x + r * s->d, x, sizeof(float) * (size_t)s->d);
    }
    e->op = &ops[at[0]];
    if (rc == 0)
        rc = moe_batch_experts(e, s, &a, nb, &b);
    if (rc == 0)
        rc = moe_batch_results(e, ops, at, nb, &b);
    moe_batch_free(&b);
    scratch_free(e);
    for (int64_t r = 1; rc == 0 && r < nb; r++)
        e->done[at[r]] = true;
    return rc;
}

/* Evaluate top-level op i with the mixtures after it that can be batched with it; 1 when it is no such op (or
 * batching it would change nothing), else 0 or -1 with err. */
static int moe_batched(struct ev *e, const struct ir_op *ops, int32_t n, int32_t i)
{
    const struct ir_op *op = &ops[i];
    if (e->hooks || !is_kind(op, IR_KIND_MOE) || !same_mixture(op, op) || !moe_routing_ok(&op->spec.u.moe))
        return 1;
    const struct ir_moe *s = &op->spec.u.moe;
    if (s->experts < 1 || s->k > s->experts || s->k < 0 || (int)s->act < 0 || s->act >= IR_MOE_COUNT ||
        sizes_ok(e, (const int64_t[]){s->d, s->k, s->dff, s->experts}, 4))
        return 1; /* its own evaluation says why */
    int32_t *at = malloc(sizeof(int32_t) * 2 * MOE_BATCH_MAX);
    if (!at)
        return 1;
    int32_t nb = moe_batch_of(ops, n, i, at, at + MOE_BATCH_MAX);
    if (nb < 2 || (!e->done && !(e->done = calloc((size_t)n, sizeof *e->done)))) {
        free(at);
        return 1;
    }
    e->op = op;
    int rc = moe_batch_run(e, ops, at, at + MOE_BATCH_MAX, nb);
    free(at);
    return rc;
}

/* ── Views, quantization, placement, fused ops ───────────────────────────────────────────────────────────── */

/* view: y = x[offset, offset + len(y)). */
static int ev_view(struct ev *e)
{
    int64_t len = 0;
    const float *x = arg_all(e, 0, &len);
    if (!x)
        return -1;
    ir_tid out = e->op->out;
    int64_t n = out >= 0 && out < e->g->ntensors ? e->v->t[out].len : 0;
    if (e->op->view_offset < 0 || addc(e->op->view_offset, n) < 0 || e->op->view_offset + n > len)
        return fail(e, "values [%lld, +%lld) are past the %lld it reads", (long long)e->op->view_offset,
                    (long long)n, (long long)len);
    float *y = result(e, n);
    if (!y)
        return -1;
    memmove(y, x + e->op->view_offset, sizeof(float) * (size_t)n);
    return 0;
}

/* One block's quantization: y = q·s, s = max|x|/127, q = round-half-away(x/s) clamped to ±127; r = x − y. */
static void quant_block(const float *x, int64_t n, float *y, float *r)
{
    float amax = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        if (a > amax)
            amax = a;
    }
    float s = amax / 127.0f;
    for (int64_t i = 0; i < n; i++) {
        float q = s > 0.0f ? q127(x[i] / s) : 0.0f;
        y[i] = q * s;
        r[i] = x[i] - y[i];
    }
}

/* quantize: each block of 32 values (a last block may be shorter) in one int8 word, or two (the residual's). */
static int ev_quant(struct ev *e)
{
    ir_tid out = e->op->out;
    int64_t n = out >= 0 && out < e->g->ntensors ? e->v->t[out].len : 0;
    if (e->op->quant_words != 1 && e->op->quant_words != 2)
        return fail(e, "%d words a value (1 or 2)", (int)e->op->quant_words);
    const float *x = arg(e, 0, n);
    float *y = x ? result(e, n) : NULL;
    if (!y)
        return -1;
    float y1[32], r1[32], y2[32], r2[32];
    for (int64_t b = 0; b < n; b += 32) {
        int64_t m = min64(32, n - b);
        quant_block(x + b, m, y1, r1);
        if (e->op->quant_words == 2)
            quant_block(r1, m, y2, r2);
        for (int64_t i = 0; i < m; i++)
            y[b + i] = e->op->quant_words == 2 ? y1[i] + y2[i] : y1[i];
    }
    return 0;
}

/* Whether two destinations are the same. */
static bool dst_same(const struct ir_dst *a, const struct ir_dst *b)
{
    if (a->buf != b->buf || a->row != b->row || a->has_unit != b->has_unit)
        return false;
    if ((a->row == IR_ROWSEL_FIXED && a->row_fixed != b->row_fixed) ||
        (a->row == IR_ROWSEL_PARAM && a->row_param != b->row_param) ||
        (a->row != IR_ROWSEL_NONE && a->row_cols != b->row_cols))
        return false;
    return !a->has_unit ||
           (a->unit.pitch == b->unit.pitch && a->unit.offset == b->unit.offset && a->unit.width == b->unit.width);
}

/* The first value of the region a destination's rows select (0 without a row). */
static int dst_base(struct ev *e, const struct ir_dst *d, int64_t *base)
{
    int64_t r = 0;
    *base = 0;
    if (d->row == IR_ROWSEL_NONE)
        return 0;
    if (d->row_cols <= 0)
        return fail(e, "its destination's rows are %lld values wide", (long long)d->row_cols);
    if (d->row == IR_ROWSEL_FIXED) {
        if (d->row_fixed < 1 || d->row_fixed > IR_MAX_DIM)
            return fail(e, "its destination row %lld (1-based) is out of range", (long long)d->row_fixed);
        r = d->row_fixed - 1;
    } else {
        if (d->row_param < 0 || d->row_param >= e->g->ntensors || !e->v->t[d->row_param].f ||
            e->v->t[d->row_param].len < 1)
            return fail(e, "its destination's row param names no value");
        if (index_of(e, e->v->t[d->row_param].f[0], 0, IR_MAX_DIM, "destination row", &r))
            return -1;
    }
    *base = mulc(r, d->row_cols);
    return *base < 0 ? fail(e, "its destination's first row overflows") : 0;
}

/* Place the op's materialised result where its destination says: rows of a buffer and/or a part of every unit. */
static int place(struct ev *e)
{
    const struct ir_op *op = e->op;
    const struct ir_dst *d = &op->dst;
    if (d->buf == op->out && d->row == IR_ROWSEL_NONE && !d->has_unit)
        return 0;
    if (op->out < 0 || op->out >= e->g->ntensors || d->buf < 0 || d->buf >= e->g->ntensors ||
        !e->v->t[d->buf].f || !e->v->t[op->out].f)
        return fail(e, "its destination names no plain tensor");
    struct tval *buf = &e->v->t[d->buf];
    const float *src = e->v->t[op->out].f;
    int64_t n = e->v->t[op->out].len, base, w = n, pitch = 0, off = 0;
    if (dst_base(e, d, &base))
        return -1;
    if (d->has_unit) {
        w = d->unit.width;
        pitch = d->unit.pitch;
        off = d->unit.offset;
        if (w <= 0 || pitch < 0 || off < 0 || n % w != 0)
            return fail(e, "its %lld values are not whole units of %lld", (long long)n, (long long)w);
    }
    int64_t units = w ? n / w : 0;
    int64_t end = units ? addc(base, addc(mulc(units - 1, pitch), addc(off, w))) : base;
    if (end < 0 || end > buf->len)
        return fail(e, "its destination reaches value %lld of %s's %lld", (long long)end, tname(e, d->buf),
                    (long long)buf->len);
    if (d->buf == op->out) {
        float *copy = scratch(e, n);
        if (!copy)
            return -1;
        memcpy(copy, src, sizeof(float) * (size_t)n);
        src = copy;
    }
    for (int64_t u = 0; u < units; u++) {
        float *to = buf->f + base + u * pitch + off;
        memcpy(to, src + u * w, sizeof(float) * (size_t)w);
        if (e->hooks && e->hooks->placed)
            e->hooks->placed(e->hooks->ctx, d->buf, to, w);
    }
    return 0;
}

/* Whether a fused op's own placement is already done: the part computing its result has the same destination. */
static bool placed_by_part(const struct ir_op *op)
{
    for (int32_t i = op->nparts - 1; i >= 0; i--)
        if (op->parts[i].out == op->out)
            return dst_same(&op->parts[i].dst, &op->dst);
    return false;
}

/* Compute a primitive, view or quantize op's result into its tensor. */
static int compute_leaf(struct ev *e)
{
    const struct ir_op *op = e->op;
    switch (op->sym) {
    case IR_SYM_PRIM:
        if ((int)op->spec.kind < 0 || op->spec.kind >= IR_KIND_COUNT || !prim_fns[op->spec.kind])
            return fail(e, "unknown kind");
        return prim_fns[op->spec.kind](e);
    case IR_SYM_VIEW: return ev_view(e);
    case IR_SYM_QUANT: return ev_quant(e);
    case IR_SYM_FUSED: break;
    }
    return fail(e, "unknown symbol");
}

/* Whether the fused op f gives its parts t to read: one of its operands, or a result computed inside it. (A row a
 * destination names travels with that destination, as the op's own does.) */
static bool scope_gives(const struct ir_op *f, ir_tid t)
{
    return ir_op_has_operand(f, t) || ir_op_computes(f, t);
}

/* Check a part of the innermost fused op reads only what that op gives it: a kernel reads its operands, so an operand
 * list that misses or misnames a tensor the parts read fails here, naming both. */
static int check_scope(struct ev *e, const struct ir_op *op)
{
    const struct ir_op *f = e->scope;
    if (!f)
        return 0;
    for (int32_t k = 0; k < op->nins; k++)
        if (!scope_gives(f, op->ins[k]))
            return fail(e, "reads '%s', which its fused op %s (result '%s') does not take as an operand",
                        tname(e, op->ins[k]), ir_class_name(f->cls), tname(e, f->out));
    return 0;
}

/* Run fused op's parts in order, a part's mixture batched with the mixtures after it as at the top level. 0, or -1
 * with err. */
static int run_parts(struct ev *e, const struct ir_op *op, int depth)
{
    bool *top_done = e->done; /* the top level's; the parts get their own */
    e->done = NULL;
    int rc = 0;
    for (int32_t i = 0; i < op->nparts && rc == 0; i++) {
        if (e->done && e->done[i])
            continue; /* computed with an earlier part */
        rc = moe_batched(e, op->parts, op->nparts, i);
        if (rc == 1)
            rc = eval_op(e, &op->parts[i], depth + 1);
    }
    free(e->done);
    e->done = top_done;
    return rc;
}

/* Evaluate op (its parts in order when fused) and place its result. */
static int eval_op(struct ev *e, const struct ir_op *op, int depth)
{
    e->op = op;
    if (depth > IR_MAX_DEPTH)
        return fail(e, "fused more than %d deep", IR_MAX_DEPTH);
    if (check_scope(e, op))
        return -1;
    if (op->sym == IR_SYM_FUSED) {
        if (op->nparts < 1 || !op->parts)
            return fail(e, "a fused op without parts");
        const struct ir_op *outer = e->scope;
        e->scope = op;
        if (run_parts(e, op, depth)) {
            e->scope = outer;
            return -1;
        }
        e->scope = outer;
        e->op = op;
        int rc = placed_by_part(op) ? 0 : place(e);
        scratch_free(e);
        return rc;
    }
    int rc = 1;
    if (e->hooks && e->hooks->leaf) {
        struct ir_leaf l = {e};
        rc = e->hooks->leaf(e->hooks->ctx, &l);
    }
    if (rc == 1)
        rc = compute_leaf(e);
    if (rc == 0)
        rc = place(e);
    scratch_free(e);
    return rc;
}

int ir_eval_ops(const struct ir_graph *g, const struct ir_op *ops, int32_t n, struct ir_values *v,
                char err[IR_ERR_LEN])
{
    return ir_eval_ops_hooked(g, ops, n, v, NULL, err);
}

int ir_eval_ops_hooked(const struct ir_graph *g, const struct ir_op *ops, int32_t n, struct ir_values *v,
                       const struct ir_eval_hooks *hooks, char err[IR_ERR_LEN])
{
    if (!v || v->n != g->ntensors) {
        snprintf(err, IR_ERR_LEN, "the values were not made for this graph");
        return -1;
    }
    struct ev e;
    memset(&e, 0, sizeof e);
    e.g = g;
    e.v = v;
    e.err = err;
    e.hooks = hooks;
    /* Working buffers stay within a few times the graph's own values (a quantized table dequantized whole). */
    e.scratch_cap = min64(IR_EVAL_MAX_BYTES, addc(mulc((int64_t)v->bytes, 8), EV_SCRATCH_SLACK));
    if (ir_eval_revive(g, v, err))
        return -1;
    struct ir_eval_last_uses u = {NULL, NULL};
    bool live = v->free_dead && ir_eval_last_uses_of(g, ops, n, &u); /* without memory for it, nothing is freed */
    int rc = 0;
    for (int32_t i = 0; i < n && rc == 0; i++) {
        e.top = i;
        if (ir_eval_stop_now()) {
            snprintf(err, IR_ERR_LEN, IR_EVAL_STOPPED " before op %d of %d", (int)i, (int)n);
            rc = -1;
            break;
        }
        if (!e.done || !e.done[i]) { /* else computed with an earlier op */
            rc = moe_batched(&e, ops, n, i);
            if (rc == 1)
                rc = eval_op(&e, &ops[i], 0);
        }
        if (live && rc == 0)
            ir_eval_free_after(g, v, &u, i);
    }
    scratch_free(&e);
    free(e.done);
    free(u.first);
    free(u.next);
    return rc ? -1 : 0;
}

int ir_eval(const struct ir_graph *g, struct ir_values *v, char err[IR_ERR_LEN])
{
    return ir_eval_ops(g, g->ops, g->nops, v, err);
}

/* ── Another executor's leaves ───────────────────────────────────────────────────────────────────────────── */

const struct ir_op *ir_leaf_op(const struct ir_leaf *l) { return l->e->op; }

const struct ir_graph *ir_leaf_graph(const struct ir_leaf *l) { return l->e->g; }

int32_t ir_leaf_top(const struct ir_leaf *l) { return l->e->top; }

const float *ir_leaf_arg(struct ir_leaf *l, int i, int64_t need) { return arg(l->e, i, need); }

const float *ir_leaf_arg_all(struct ir_leaf *l, int i, int64_t *len) { return arg_all(l->e, i, len); }

const float *ir_leaf_arg_of(struct ir_leaf *l, const struct ir_values *other, int i, int64_t need)
{
    struct ir_values *own = l->e->v;
    if (!other || other->n != own->n) {
        fail(l->e, "the other values were not made for this graph");
        return NULL;
    }
    l->e->v = (struct ir_values *)other; /* read only: arg never writes the tensor it gathers from */
    const float *x = arg(l->e, i, need);
    l->e->v = own;
    return x;
}

float *ir_leaf_state(struct ir_leaf *l, int i, int64_t need) { return state_arg(l->e, i, need); }

float *ir_leaf_result(struct ir_leaf *l, int64_t len) { return result(l->e, len); }

float *ir_leaf_scratch(struct ir_leaf *l, int64_t n) { return scratch(l->e, n); }

ir_tid ir_leaf_operand(struct ir_leaf *l, int i) { return operand(l->e, i); }

int ir_leaf_row(struct ir_leaf *l, const struct ir_rowidx *ri, int at, int64_t hi, const char *what, int64_t *r)
{
    return row_index(l->e, ri, at, hi, what, r);
}

int ir_leaf_fail(struct ir_leaf *l, const char *fmt, ...)
{
    char msg[IR_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fail(l->e, "%s", msg);
}

