/* ir/eval.c — the evaluator's run: the evaluation context (operands, results, working buffers, errors), weights read
 * a row or a run of blocks at a time, views and activation quantization, placement, fused ops, the run over a graph's
 * ops (liveness, the stop question, mixtures batched) and another executor's leaves. Each op's meaning is in
 * ir/eval_ops.c, ir/eval_attention.c and ir/eval_moe.c; the values in ir/eval_values.c and ir/eval_seed.c.
 *
 * Every tensor is stored as f32 values (i32 tensors hold integral values), except a constant kept as checkpoint rows,
 * which stays quantized in its block format and is dequantized a row (or a run of blocks) at a time where it is read.
 * Ops run in program order; a fused op runs its parts in order, each part's result materialised into its own tensor
 * and then placed where its destination says. Every sum is a plain sequential loop in increasing index order, and no
 * product is fused into an addition, so the same graph gives the same bytes on every run, compiler and level.
 * docs/semantics.md states each op's meaning; this file follows it. */
#include "eval_values.h"

#include <math.h>
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

int ir_ev_fail(struct ev *e, const char *fmt, ...)
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

float *ir_ev_scratch(struct ev *e, int64_t n)
{
    int64_t bytes = mulc(max64(n, 1), (int64_t)sizeof(float));
    if (n < 0 || bytes < 0 || addc(e->scratch_bytes, bytes) < 0 || e->scratch_bytes + bytes > e->scratch_cap) {
        ir_ev_fail(e, "a working buffer of %lld values is beyond the evaluator's limit", (long long)n);
        return NULL;
    }
    if (e->nscratch == EV_SCRATCH) {
        ir_ev_fail(e, "too many working buffers");
        return NULL;
    }
    float *p = calloc((size_t)max64(n, 1), sizeof(float));
    if (!p) {
        ir_ev_fail(e, "out of memory for a working buffer of %lld values", (long long)n);
        return NULL;
    }
    e->scratch[e->nscratch++] = p;
    e->scratch_bytes += bytes;
    return p;
}

void ir_ev_scratch_free(struct ev *e)
{
    for (int i = 0; i < e->nscratch; i++)
        free(e->scratch[i]);
    e->nscratch = 0;
    e->scratch_bytes = 0;
}

const char *ir_ev_tname(const struct ev *e, ir_tid t)
{
    return e->g->tensors[t].name;
}

ir_tid ir_ev_operand(struct ev *e, int i)
{
    if (i >= e->op->nins || !e->op->ins || !e->op->access) {
        ir_ev_fail(e, "operand %d is missing (the op has %d)", i, (int)e->op->nins);
        return IR_NONE;
    }
    ir_tid t = e->op->ins[i];
    if (t < 0 || t >= e->g->ntensors) {
        ir_ev_fail(e, "operand %d names no tensor", i);
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
        ir_ev_fail(e, "tensor %s: its rows do not quantize", ir_ev_tname(e, t));
        return NULL;
    }
    float *all = ir_ev_scratch(e, tv->len);
    float *row = all ? ir_ev_scratch(e, q->slen) : NULL;
    if (!row)
        return NULL;
    for (int64_t s = 0; s < q->srows; s++) {
        const float *r = ir_eval_ck_slice(q, s, 0, q->slen, row);
        for (int64_t j = 0; j < q->slen; j++)
            all[q->transposed ? j * tv->cols + s : s * tv->cols + j] = r[j];
    }
    return all;
}

const float *ir_ev_arg(struct ev *e, int i, int64_t need)
{
    ir_tid t = ir_ev_operand(e, i);
    if (t == IR_NONE)
        return NULL;
    if (need < 0) {
        ir_ev_fail(e, "operand %d (%s): the size the spec asks overflows", i, ir_ev_tname(e, t));
        return NULL;
    }
    struct tval *tv = &e->v->t[t];
    const float *src = tv->f ? tv->f : dequant_all(e, t);
    if (!src)
        return NULL;
    const struct ir_access *a = &e->op->access[i];
    if (!a->strided) {
        if (tv->len < need) {
            ir_ev_fail(e, "operand %d (%s) holds %lld values, the op reads %lld", i, ir_ev_tname(e, t), (long long)tv->len,
                 (long long)need);
            return NULL;
        }
        return src;
    }
    const struct ir_strided *st = &a->s;
    if (st->width <= 0 || st->pitch < 0 || st->offset < 0 || need % st->width != 0) {
        ir_ev_fail(e, "operand %d (%s): a strided read of width %lld does not give %lld values", i, ir_ev_tname(e, t),
             (long long)st->width, (long long)need);
        return NULL;
    }
    int64_t units = need / st->width;
    int64_t end = units ? addc(mulc(units - 1, st->pitch), addc(st->offset, st->width)) : 0;
    if (end < 0 || end > tv->len) {
        ir_ev_fail(e, "operand %d (%s): %lld units of pitch %lld reach past its %lld values", i, ir_ev_tname(e, t),
             (long long)units, (long long)st->pitch, (long long)tv->len);
        return NULL;
    }
    float *dst = ir_ev_scratch(e, need);
    if (!dst)
        return NULL;
    for (int64_t u = 0; u < units; u++)
        memcpy(dst + u * st->width, src + u * st->pitch + st->offset, sizeof(float) * (size_t)st->width);
    return dst;
}

const float *ir_ev_arg_all(struct ev *e, int i, int64_t *len)
{
    ir_tid t = ir_ev_operand(e, i);
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
    return ir_ev_arg(e, i, n);
}

float *ir_ev_state_arg(struct ev *e, int i, int64_t need)
{
    ir_tid t = ir_ev_operand(e, i);
    if (t == IR_NONE)
        return NULL;
    struct tval *tv = &e->v->t[t];
    if (e->op->access[i].strided || !tv->f || need < 0 || tv->len < need) {
        ir_ev_fail(e, "operand %d (%s), written in place, must be a plain tensor read whole of at least %lld values", i,
             ir_ev_tname(e, t), (long long)need);
        return NULL;
    }
    return tv->f;
}

float *ir_ev_result(struct ev *e, int64_t len)
{
    ir_tid t = e->op->out;
    if (t < 0 || t >= e->g->ntensors) {
        ir_ev_fail(e, "its result names no tensor");
        return NULL;
    }
    struct tval *tv = &e->v->t[t];
    if (!tv->f || len < 0 || tv->len != len) {
        ir_ev_fail(e, "its result %s holds %lld values, the op computes %lld", ir_ev_tname(e, t), (long long)tv->len,
             (long long)len);
        return NULL;
    }
    return tv->f;
}

int ir_ev_index_of(struct ev *e, float x, int64_t lo, int64_t hi, const char *what, int64_t *out)
{
    double d = (double)x;
    if (!(d >= (double)lo && d <= (double)hi) || d != floor(d))
        return ir_ev_fail(e, "%s %g is not an integer in [%lld, %lld]", what, d, (long long)lo, (long long)hi);
    *out = (int64_t)d;
    return 0;
}

int ir_ev_row_index(struct ev *e, const struct ir_rowidx *ri, int at, int64_t hi, const char *what, int64_t *r)
{
    switch (ri->kind) {
    case IR_RIDX_NONE:
        *r = 0;
        return hi < 0 ? ir_ev_fail(e, "%s 0 is outside an empty range", what) : 0;
    case IR_RIDX_LITERAL:
        if (ri->literal < 1 || ri->literal - 1 > hi)
            return ir_ev_fail(e, "%s %lld (1-based) is outside [1, %lld]", what, (long long)ri->literal,
                        (long long)(hi + 1));
        *r = ri->literal - 1;
        return 0;
    case IR_RIDX_NAMED: {
        const float *x = ir_ev_arg(e, at, 1);
        return x ? ir_ev_index_of(e, x[0], 0, hi, what, r) : -1;
    }
    }
    return ir_ev_fail(e, "%s has an unknown kind", what);
}

/* ── Weights: a matrix read a row, or a run of blocks, at a time ─────────────────────────────────────────── */

/* Whether products by checkpoint q take q8_0 activations in values v: q8_0 or q4_0 rows, a stored row an output. */
static bool takes_q8_activations(const struct ir_values *v, const struct ckpt *q)
{
    return v->q8_activations && q->transposed && (q->format == IR_FMT_Q8_0 || q->format == IR_FMT_Q4_0);
}

int ir_ev_wts_take(struct ev *e, int i, int64_t rows, int64_t cols, bool by_rows, struct wts *w)
{
    memset(w, 0, sizeof *w);
    w->rows = rows;
    w->cols = cols;
    ir_tid t = ir_ev_operand(e, i);
    if (t == IR_NONE)
        return -1;
    struct tval *tv = &e->v->t[t];
    if (tv->f || e->op->access[i].strided) {
        w->plain = ir_ev_arg(e, i, mulc(rows, cols));
        return w->plain ? 0 : -1;
    }
    if (tv->rows != rows || tv->cols != cols)
        return ir_ev_fail(e, "operand %d (%s) is %lld x %lld, the op reads it as %lld x %lld", i, ir_ev_tname(e, t),
                    (long long)tv->rows, (long long)tv->cols, (long long)rows, (long long)cols);
    w->q = &tv->q;
    if (!by_rows && ir_eval_lazy_all(w->q))
        return ir_ev_fail(e, "operand %d (%s): its rows do not quantize", i, ir_ev_tname(e, t));
    w->buf = ir_ev_scratch(e, tv->q.slen);
    if (w->buf && takes_q8_activations(e->v, w->q))
        w->acts = ir_ev_scratch(e, mulc(rows / 32 + 1, IR_GGML_Q8_ACT_FLOATS));
    return w->buf && (w->acts || !takes_q8_activations(e->v, w->q)) ? 0 : -1;
}

int ir_ev_wts_get(struct ev *e, int i, int64_t rows, int64_t cols, struct wts *w)
{
    return ir_ev_wts_take(e, i, rows, cols, false, w);
}

int ir_ev_gather_row(struct ev *e, const struct wts *w, int64_t r, float *dst)
{
    if (w->q && ir_eval_lazy_rows(w->q, r, 1))
        return ir_ev_fail(e, "the table's row %lld does not quantize", (long long)r);
    ir_eval_wts_row(w, r, dst);
    return 0;
}

/* ── Sizes and positions ─────────────────────────────────────────────────────────────────────────────────── */

int ir_ev_sizes_ok(struct ev *e, const int64_t *s, int n)
{
    for (int i = 0; i < n; i++)
        if (s[i] < 0 || s[i] > IR_MAX_DIM)
            return ir_ev_fail(e, "a size of its spec (%lld) is out of range", (long long)s[i]);
    return 0;
}

int ir_ev_position(struct ev *e, const struct ir_rowidx *pos, int at, int64_t *p)
{
    return ir_ev_row_index(e, pos, at, IR_MAX_DIM, "position", p);
}

/* ── Views, quantization, placement, fused ops ───────────────────────────────────────────────────────────── */

/* view: y = x[offset, offset + len(y)). */
static int ev_view(struct ev *e)
{
    int64_t len = 0;
    const float *x = ir_ev_arg_all(e, 0, &len);
    if (!x)
        return -1;
    ir_tid out = e->op->out;
    int64_t n = out >= 0 && out < e->g->ntensors ? e->v->t[out].len : 0;
    if (e->op->view_offset < 0 || addc(e->op->view_offset, n) < 0 || e->op->view_offset + n > len)
        return ir_ev_fail(e, "values [%lld, +%lld) are past the %lld it reads", (long long)e->op->view_offset,
                    (long long)n, (long long)len);
    float *y = ir_ev_result(e, n);
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
        return ir_ev_fail(e, "%d words a value (1 or 2)", (int)e->op->quant_words);
    const float *x = ir_ev_arg(e, 0, n);
    float *y = x ? ir_ev_result(e, n) : NULL;
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
        return ir_ev_fail(e, "its destination's rows are %lld values wide", (long long)d->row_cols);
    if (d->row == IR_ROWSEL_FIXED) {
        if (d->row_fixed < 1 || d->row_fixed > IR_MAX_DIM)
            return ir_ev_fail(e, "its destination row %lld (1-based) is out of range", (long long)d->row_fixed);
        r = d->row_fixed - 1;
    } else {
        if (d->row_param < 0 || d->row_param >= e->g->ntensors || !e->v->t[d->row_param].f ||
            e->v->t[d->row_param].len < 1)
            return ir_ev_fail(e, "its destination's row param names no value");
        if (ir_ev_index_of(e, e->v->t[d->row_param].f[0], 0, IR_MAX_DIM, "destination row", &r))
            return -1;
    }
    *base = mulc(r, d->row_cols);
    return *base < 0 ? ir_ev_fail(e, "its destination's first row overflows") : 0;
}

int ir_ev_place(struct ev *e)
{
    const struct ir_op *op = e->op;
    const struct ir_dst *d = &op->dst;
    if (d->buf == op->out && d->row == IR_ROWSEL_NONE && !d->has_unit)
        return 0;
    if (op->out < 0 || op->out >= e->g->ntensors || d->buf < 0 || d->buf >= e->g->ntensors ||
        !e->v->t[d->buf].f || !e->v->t[op->out].f)
        return ir_ev_fail(e, "its destination names no plain tensor");
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
            return ir_ev_fail(e, "its %lld values are not whole units of %lld", (long long)n, (long long)w);
    }
    int64_t units = w ? n / w : 0;
    int64_t end = units ? addc(base, addc(mulc(units - 1, pitch), addc(off, w))) : base;
    if (end < 0 || end > buf->len)
        return ir_ev_fail(e, "its destination reaches value %lld of %s's %lld", (long long)end, ir_ev_tname(e, d->buf),
                    (long long)buf->len);
    if (d->buf == op->out) {
        float *copy = ir_ev_scratch(e, n);
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
        return ir_ev_prim(e);
    case IR_SYM_VIEW: return ev_view(e);
    case IR_SYM_QUANT: return ev_quant(e);
    case IR_SYM_FUSED: break;
    }
    return ir_ev_fail(e, "unknown symbol");
}

/* Whether the fused op f gives its parts t to read: one of its operands, or a result computed inside it. (A row a
 * destination names travels with that destination, as the op's own does.) */
static bool scope_gives(const struct ir_op *f, ir_tid t)
{
    return ir_op_has_operand(f, t) || ir_op_computes(f, t);
}

int ir_ev_check_scope(struct ev *e, const struct ir_op *op)
{
    const struct ir_op *f = e->scope;
    if (!f)
        return 0;
    for (int32_t k = 0; k < op->nins; k++)
        if (!scope_gives(f, op->ins[k]))
            return ir_ev_fail(e, "reads '%s', which its fused op %s (result '%s') does not take as an operand",
                        ir_ev_tname(e, op->ins[k]), ir_class_name(f->cls), ir_ev_tname(e, f->out));
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
        rc = ir_ev_moe_batched(e, op->parts, op->nparts, i);
        if (rc == 1)
            rc = ir_ev_eval_op(e, &op->parts[i], depth + 1);
    }
    free(e->done);
    e->done = top_done;
    return rc;
}

int ir_ev_eval_op(struct ev *e, const struct ir_op *op, int depth)
{
    e->op = op;
    if (depth > IR_MAX_DEPTH)
        return ir_ev_fail(e, "fused more than %d deep", IR_MAX_DEPTH);
    if (ir_ev_check_scope(e, op))
        return -1;
    if (op->sym == IR_SYM_FUSED) {
        if (op->nparts < 1 || !op->parts)
            return ir_ev_fail(e, "a fused op without parts");
        const struct ir_op *outer = e->scope;
        e->scope = op;
        if (run_parts(e, op, depth)) {
            e->scope = outer;
            return -1;
        }
        e->scope = outer;
        e->op = op;
        int rc = placed_by_part(op) ? 0 : ir_ev_place(e);
        ir_ev_scratch_free(e);
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
        rc = ir_ev_place(e);
    ir_ev_scratch_free(e);
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
            rc = ir_ev_moe_batched(&e, ops, n, i);
            if (rc == 1)
                rc = ir_ev_eval_op(&e, &ops[i], 0);
        }
        if (live && rc == 0)
            ir_eval_free_after(g, v, &u, i);
    }
    ir_ev_scratch_free(&e);
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

const float *ir_leaf_arg(struct ir_leaf *l, int i, int64_t need) { return ir_ev_arg(l->e, i, need); }

const float *ir_leaf_arg_all(struct ir_leaf *l, int i, int64_t *len) { return ir_ev_arg_all(l->e, i, len); }

const float *ir_leaf_arg_of(struct ir_leaf *l, const struct ir_values *other, int i, int64_t need)
{
    struct ir_values *own = l->e->v;
    if (!other || other->n != own->n) {
        ir_ev_fail(l->e, "the other values were not made for this graph");
        return NULL;
    }
    l->e->v = (struct ir_values *)other; /* read only: arg never writes the tensor it gathers from */
    const float *x = ir_ev_arg(l->e, i, need);
    l->e->v = own;
    return x;
}

float *ir_leaf_state(struct ir_leaf *l, int i, int64_t need) { return ir_ev_state_arg(l->e, i, need); }

float *ir_leaf_result(struct ir_leaf *l, int64_t len) { return ir_ev_result(l->e, len); }

float *ir_leaf_scratch(struct ir_leaf *l, int64_t n) { return ir_ev_scratch(l->e, n); }

ir_tid ir_leaf_operand(struct ir_leaf *l, int i) { return ir_ev_operand(l->e, i); }

int ir_leaf_row(struct ir_leaf *l, const struct ir_rowidx *ri, int at, int64_t hi, const char *what, int64_t *r)
{
    return ir_ev_row_index(l->e, ri, at, hi, what, r);
}

int ir_leaf_fail(struct ir_leaf *l, const char *fmt, ...)
{
    char msg[IR_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ir_ev_fail(l->e, "%s", msg);
}

