/* ir/eval_ops.c — the meaning of each primitive op but attention and the mixtures: products, elementwise, norms,
 * rotations, gathers and row sets, the gated delta rule, convolutions, activations, joins, arg-max, decay, soft caps;
 * each sum a sequential loop in increasing index order (or a product keeping that order: ir/eval_matmul.c), as
 * docs/semantics.md states. */
#include "eval_values.h"

#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* matmul: y[m×n] = x[m×k] · W[k×n]. */
static int ev_matmul(struct ev *e)
{
    const struct ir_matmul *s = &e->op->spec.u.matmul;
    if (ir_ev_sizes_ok(e, (const int64_t[]){s->m, s->k, s->n}, 3))
        return -1;
    struct wts w;
    const float *x = ir_ev_arg(e, 0, mulc(s->m, s->k));
    if (!x || ir_ev_wts_get(e, 1, s->k, s->n, &w))
        return -1;
    float *y = ir_ev_result(e, mulc(s->m, s->n));
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
    if (ir_ev_sizes_ok(e, (const int64_t[]){s->n, s->row}, 2))
        return -1;
    if ((int)s->op < 0 || s->op >= IR_EW_COUNT)
        return ir_ev_fail(e, "unknown operator");
    const float *a = ir_ev_arg(e, 0, s->n);
    const float *b = a ? ir_ev_arg(e, 1, s->row > 0 ? s->row : s->n) : NULL;
    float *y = b ? ir_ev_result(e, s->n) : NULL;
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
    if (ir_ev_sizes_ok(e, (const int64_t[]){s->rows, s->cols}, 2))
        return -1;
    int64_t n = mulc(s->rows, s->cols);
    int at_b = 1 + (s->weight ? 1 : 0) + (s->residual ? 1 : 0);
    const float *x = ir_ev_arg(e, 0, n);
    const float *w = x && s->weight ? ir_ev_arg(e, 1, s->cols) : NULL;
    const float *res = x && s->residual ? ir_ev_arg(e, s->weight ? 2 : 1, n) : NULL;
    const float *b = x && s->bias ? ir_ev_arg(e, at_b, s->cols) : NULL;
    if (!x || (s->weight && !w) || (s->residual && !res) || (s->bias && !b))
        return -1;
    float *y = ir_ev_result(e, n);
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

/* rope: each head's pairs (i, i + half), or with adjacent (2i, 2i + 1), pair i turned by the tables' row at the head's
 * row's position, col i. */
static int ev_rope(struct ev *e)
{
    const struct ir_rope *s = &e->op->spec.u.rope;
    if (ir_ev_sizes_ok(e, (const int64_t[]){s->h, s->hd, s->half, s->rows}, 4))
        return -1;
    if (s->rows <= 0 || s->h % s->rows != 0 || 2 * s->half > s->hd)
        return ir_ev_fail(e, "h %lld over rows %lld, half %lld of hd %lld do not fit", (long long)s->h,
                    (long long)s->rows, (long long)s->half, (long long)s->hd);
    int64_t n = mulc(s->h, s->hd), clen = 0, slen = 0, p = 0;
    const float *x = ir_ev_arg(e, 0, n);
    const float *ct = x ? ir_ev_arg_all(e, 1, &clen) : NULL;
    const float *st = ct ? ir_ev_arg_all(e, 2, &slen) : NULL;
    if (!st || ir_ev_position(e, &s->pos, 3, &p))
        return -1;
    float *y = ir_ev_result(e, n);
    if (!y || n == 0)
        return y ? 0 : -1;
    int64_t per_row = s->h / s->rows, trows = s->half ? min64(clen, slen) / s->half : INT64_MAX;
    for (int64_t g = 0; g < s->h; g++) {
        int64_t at = p + g / per_row;
        if (s->half && at >= trows)
            return ir_ev_fail(e, "position %lld is past the tables' %lld rows", (long long)at, (long long)trows);
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
    if (ir_ev_sizes_ok(e, (const int64_t[]){s->n, s->every, s->from, s->width}, 4))
        return -1;
    if (s->every <= 0)
        return ir_ev_fail(e, "every must be positive");
    int64_t groups = s->n / s->every;
    if (groups && (groups - 1) * s->every + s->from + s->width > s->n)
        return ir_ev_fail(e, "the slice [%lld, +%lld) of each %lld values reaches past %lld", (long long)s->from,
                    (long long)s->width, (long long)s->every, (long long)s->n);
    const float *x = ir_ev_arg(e, 0, s->n);
    float *y = x ? ir_ev_result(e, mulc(groups, s->width)) : NULL;
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
    if (ir_ev_sizes_ok(e, (const int64_t[]){s->rows, s->cols}, 2))
        return -1;
    struct wts w;
    int64_t r = 0;
    if (ir_ev_wts_take(e, 0, s->rows, s->cols, true, &w) || ir_ev_row_index(e, &s->index, 1, s->rows - 1, "row", &r))
        return -1;
    float *y = ir_ev_result(e, s->cols);
    return y ? ir_ev_gather_row(e, &w, r, y) : -1;
}

/* rows_gather: y[c·cols..] = the table's row idx[c] (0-based), c < count. */
static int ev_rows_gather(struct ev *e)
{
    const struct ir_rows_gather *s = &e->op->spec.u.rows_gather;
    if (ir_ev_sizes_ok(e, (const int64_t[]){s->rows, s->cols, s->count}, 3))
        return -1;
    struct wts w;
    if (ir_ev_wts_take(e, 0, s->rows, s->cols, true, &w))
        return -1;
    const float *idx = ir_ev_arg(e, 1, s->count);
    float *y = idx ? ir_ev_result(e, mulc(s->count, s->cols)) : NULL;
    if (!y)
        return -1;
    for (int64_t c = 0; c < s->count; c++) {
        int64_t r = 0;
        if (ir_ev_index_of(e, idx[c], 0, s->rows - 1, "row", &r) || ir_ev_gather_row(e, &w, r, y + c * s->cols))
            return -1;
    }
    return 0;
}

/* set_row: the table's rows [index, index + count) = src, in place; the result is the table. */
static int ev_set_row(struct ev *e)
{
    const struct ir_set_row *s = &e->op->spec.u.set_row;
    if (ir_ev_sizes_ok(e, (const int64_t[]){s->rows, s->cols, s->count}, 3))
        return -1;
    int64_t n = mulc(s->rows, s->cols), r = 0;
    float *table = ir_ev_state_arg(e, 0, n);
    const float *src = table ? ir_ev_arg(e, 1, mulc(s->count, s->cols)) : NULL;
    if (!src || ir_ev_row_index(e, &s->index, 2, s->rows - s->count, "row", &r))
        return -1;
    float *y = ir_ev_result(e, n);
    if (!y)
        return -1;
    memmove(table + r * s->cols, src, sizeof(float) * (size_t)(s->count * s->cols));
    if (y != table)
        memcpy(y, table, sizeof(float) * (size_t)n);
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
    if (ir_ev_sizes_ok(e, (const int64_t[]){s->h, s->dk, s->dv, s->rows}, 4))
        return -1;
    if (s->kh < 0 || (s->kh > 0 && s->h % s->kh != 0))
        return ir_ev_fail(e, "kh must divide h");
    int64_t kh = s->kh ? s->kh : s->h, group = s->h / kh;
    int64_t nk = mulc(s->rows, mulc(kh, s->dk)), nv = mulc(s->rows, mulc(s->h, s->dv));
    int64_t nh = mulc(s->rows, s->h);
    const float *q = ir_ev_arg(e, 0, nk), *k = q ? ir_ev_arg(e, 1, nk) : NULL;
    const float *v = k ? ir_ev_arg(e, 2, nv) : NULL, *z = v ? ir_ev_arg(e, 3, nv) : NULL;
    const float *b = z ? ir_ev_arg(e, 4, nh) : NULL, *a = b ? ir_ev_arg(e, 5, nh) : NULL;
    float *S = a ? ir_ev_state_arg(e, 6, mulc(s->h, mulc(s->dk, s->dv))) : NULL;
    const float *w = S ? ir_ev_arg(e, 7, s->dv) : NULL;
    float *y = w ? ir_ev_result(e, nv) : NULL;
    float *kv = y ? ir_ev_scratch(e, s->dv) : NULL, *o = kv ? ir_ev_scratch(e, s->dv) : NULL;
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
    if (ir_ev_sizes_ok(e, (const int64_t[]){s->chan, s->taps, s->rows}, 3))
        return -1;
    if (s->taps < 1)
        return ir_ev_fail(e, "taps must be at least 1");
    int64_t keep = mulc(s->taps - 1, s->chan), nx = mulc(s->rows, s->chan);
    const float *x = ir_ev_arg(e, 0, nx);
    const float *w = x ? ir_ev_arg(e, 1, mulc(s->chan, s->taps)) : NULL;
    float *ring = w ? ir_ev_state_arg(e, 2, keep) : NULL;
    float *y = ring ? ir_ev_result(e, nx) : NULL;
    if (y && nx == 0 && keep == 0)
        return 0; /* no channels: nothing to convolve or keep */
    float *xp = y ? ir_ev_scratch(e, addc(keep, nx)) : NULL;
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
    if (ir_ev_sizes_ok(e, &n, 1))
        return -1;
    const float *x = ir_ev_arg(e, 0, n);
    float *y = x ? ir_ev_result(e, n) : NULL;
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
    if (ir_ev_sizes_ok(e, &s->n, 1))
        return -1;
    const float *x = ir_ev_arg(e, 0, s->n);
    float *y = x ? ir_ev_result(e, s->n) : NULL;
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
    if (ir_ev_sizes_ok(e, &n, 1))
        return -1;
    const float *g = ir_ev_arg(e, 0, n), *u = g ? ir_ev_arg(e, 1, n) : NULL;
    float *y = u ? ir_ev_result(e, n) : NULL;
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
    if (ir_ev_sizes_ok(e, (const int64_t[]){s->m, s->heads, s->a, s->b}, 4))
        return -1;
    struct wts w;
    int64_t xa = mulc(s->heads, s->a), yb = mulc(s->heads, s->b);
    const float *x = ir_ev_arg(e, 0, mulc(s->m, xa));
    if (!x || ir_ev_wts_get(e, 1, xa, s->b, &w))
        return -1;
    float *y = ir_ev_result(e, mulc(s->m, yb));
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
    if (ir_ev_sizes_ok(e, (const int64_t[]){s->rows, s->heads, s->wa, s->wb}, 4))
        return -1;
    if (s->heads <= 0 || s->wa % s->heads || s->wb % s->heads)
        return ir_ev_fail(e, "widths %lld and %lld are not whole over %lld heads", (long long)s->wa, (long long)s->wb,
                    (long long)s->heads);
    int64_t units = mulc(s->rows, s->heads), ha = s->wa / s->heads, hb = s->wb / s->heads;
    const float *a = ir_ev_arg(e, 0, mulc(s->rows, s->wa)), *b = a ? ir_ev_arg(e, 1, mulc(s->rows, s->wb)) : NULL;
    float *y = b ? ir_ev_result(e, mulc(s->rows, addc(s->wa, s->wb))) : NULL;
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
    if (ir_ev_sizes_ok(e, (const int64_t[]){s->rows, s->cols}, 2))
        return -1;
    int64_t n = mulc(s->rows, s->cols);
    const float *x = ir_ev_arg(e, 0, n);
    float *y = x ? ir_ev_result(e, n) : NULL;
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
    if (ir_ev_sizes_ok(e, (const int64_t[]){s->rows, s->cols}, 2))
        return -1;
    const float *x = ir_ev_arg(e, 0, mulc(s->rows, s->cols));
    float *y = x ? ir_ev_result(e, s->rows) : NULL;
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
    if (ir_ev_sizes_ok(e, (const int64_t[]){s->n, s->rows}, 2))
        return -1;
    if (s->rows <= 0 || s->n % s->rows)
        return ir_ev_fail(e, "n %lld is not whole over %lld rows", (long long)s->n, (long long)s->rows);
    int64_t heads = s->n / s->rows;
    const float *a = ir_ev_arg(e, 0, s->n), *alog = a ? ir_ev_arg(e, 1, heads) : NULL;
    const float *dtb = alog ? ir_ev_arg(e, 2, heads) : NULL;
    float *y = dtb ? ir_ev_result(e, s->n) : NULL;
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
    if (ir_ev_sizes_ok(e, &s->n, 1))
        return -1;
    const float *x = ir_ev_arg(e, 0, s->n);
    float *y = x ? ir_ev_result(e, s->n) : NULL;
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
    ROW(SET_ROW, ev_set_row) ROW(ATTENTION, ir_ev_attention) ROW(MOE, ir_ev_moe) ROW(GATED_DELTA, ev_gated_delta)
    ROW(CAUSAL_CONV, ev_causal_conv) ROW(SILU, ev_unary) ROW(SIGMOID, ev_unary) ROW(GELU, ev_unary)
    ROW(RELU, ev_unary) ROW(SCALE, ev_scale) ROW(SWIGLU, ev_swiglu) ROW(HEAD_MATMUL, ev_head_matmul)
    ROW(JOIN, ev_join) ROW(L2_NORM, ev_l2_norm) ROW(ARGMAX, ev_argmax) ROW(DECAY, ev_decay)
    ROW(SOFTCAP, ev_softcap)
#undef ROW
};

int ir_ev_prim(struct ev *e)
{
    const struct ir_op *op = e->op;
    if ((int)op->spec.kind < 0 || op->spec.kind >= IR_KIND_COUNT || !prim_fns[op->spec.kind])
        return ir_ev_fail(e, "unknown kind");
    return prim_fns[op->spec.kind](e);
}
