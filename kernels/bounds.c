/* kernels/bounds.c — the bounds a launch's outputs keep against the evaluator, element by element, as
 * docs/numerics.md states them: a second walk over the launch's leaves (the evaluator's walk, with hooks) whose
 * "values" are bounds on |lane − reference|. A leaf's result bound is the propagation of its inputs' bounds through
 * its meaning plus the rounding its kernel adds; the magnitudes come from the reference's own values, computed here
 * in double, never from the lane. External inputs start with the bound the caller measured (zero, or what loading
 * them into an f16 cache rounded away). */
#include "kernels.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The unit roundoff of f32, and of the f16 and bf16 storage types. */
#define U32 (1.0 / 16777216.0)
#define U16 (1.0 / 2048.0)
#define UBF (1.0 / 256.0)

/* Slack for a value through e^x or tanh: the lane computes them itself (kernels/arith.inc, within 3 ulp, the same
 * bits on the device and the host), the evaluator with the C library (within 1 ulp); through the few roundings of
 * SiLU, the logistic function and GELU around them the two stay within 8 f32 ulps of the value's magnitude. */
#define TRANS_ULPS 8.0

double kernels_gamma(double n)
{
    double nu = n * U32;
    return nu < 1.0 ? nu / (1.0 - nu) : INFINITY;
}

/* The number of chunk terms one lane adds (k in 32-value chunks, dealt round the warp's 32 lanes). */
static double lane_terms(int64_t k)
{
    int64_t chunks = (k + 31) / 32;
    return (double)((chunks + 31) / 32);
}

double kernels_product_bound(int64_t k, int words, double mag)
{
    /* The evaluator sums k products in order (γ_k; +1 for its rounded weights under integer codes). The lane forms
     * each 32-value chunk's term (at most 32 roundings in f32; under int8 an exact integer times two rounded
     * scales, a word each), each lane adds its chunks, and the butterfly adds 32 lanes in 5 levels. */
    double chunk = words ? 2.0 * words + (k < 32 ? (double)k : 32.0) : (k < 32 ? (double)k : 32.0);
    return (kernels_gamma((double)k + 1.0) + kernels_gamma(chunk + lane_terms(k) + 5.0)) * mag;
}

double kernels_quant_error(double amax, int words)
{
    return words == 2 ? amax / (254.0 * 254.0) : words == 1 ? amax / 254.0 : 0.0;
}

/* ── The walk's state ────────────────────────────────────────────────────────────────────────────────────── */

struct bctx {
    const struct kernels_point *p;
    const struct ir_values *ref;
    struct ir_values *bounds;
    const struct ir_graph *g;
    int64_t ambiguous;
};

/* Operand i of the leaf as the reference's matrix, read for magnitudes (decoded in double where it is read). */
static int rmat_get(struct bctx *c, struct ir_leaf *l, int i, int64_t rows, int64_t cols,
                    struct kernels_weights *w)
{
    return kernels_weights_get(l, c->ref, i, rows, cols, w);
}

/* W[t][j] of a reference matrix (a checkpoint's block decoded by the format's own dequantizer). */
static double rmat_at(const struct kernels_weights *w, int64_t t, int64_t j)
{
    if (!w->ckpt)
        return w->plain[t * w->cols + j];
    float v[256];
    int64_t srow = w->ck.transposed ? j : t, at = w->ck.transposed ? t : j;
    int64_t blk = ir_format_block_values(w->ck.format), b0 = at / blk;
    ir_ggml_dequantize(w->ck.format, w->ck.bytes + srow * w->ck.row_bytes + b0 * ir_format_block_bytes(w->ck.format),
                       blk, v);
    return v[at - b0 * blk];
}

/* A reference matrix's column j over rows [r0, r0 + k) into out (doubles), a block decoded once. */
static void rmat_col(const struct kernels_weights *w, int64_t r0, int64_t k, int64_t j, double *out)
{
    if (!w->ckpt || !w->ck.transposed) {
        for (int64_t t = 0; t < k; t++)
            out[t] = rmat_at(w, r0 + t, j);
        return;
    }
    int64_t blk = ir_format_block_values(w->ck.format), bb = ir_format_block_bytes(w->ck.format);
    float v[256];
    for (int64_t t = 0; t < k;) {
        int64_t at = r0 + t, b0 = at / blk;
        ir_ggml_dequantize(w->ck.format, w->ck.bytes + j * w->ck.row_bytes + b0 * bb, blk, v);
        for (int64_t i = at - b0 * blk; i < blk && t < k; i++, t++)
            out[t] = v[i];
    }
}

/* The words a product's activation tensor t is read in: those of the quantize that made it (0: f32). */
static int operand_words(const struct ir_graph *g, ir_tid t)
{
    const struct ir_op *q = kernels_quantize_of(g, t);
    return q ? q->quant_words : 0;
}

/* ── Products ────────────────────────────────────────────────────────────────────────────────────────────── */

/* Bounds of y[m×n] = x[m×k]·W[r0.., c0..]: Σ|W|·e_x + the product's rounding over Σ(|x| + e_x)|W|. */
static void product_bounds(const double *x, const double *ex, int64_t xs, const struct kernels_weights *w, int64_t r0,
                           int64_t c0, int64_t m, int64_t k, int64_t n, int words, double *ey, int64_t ys)
{
    double *col = malloc(sizeof(double) * (size_t)(k > 0 ? k : 1));
    if (!col) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                ey[i * ys + j] = INFINITY;
        return;
    }
    for (int64_t j = 0; j < n; j++) {
        rmat_col(w, r0, k, c0 + j, col);
        for (int64_t i = 0; i < m; i++) {
            double prop = 0.0, mag = 0.0;
            for (int64_t t = 0; t < k; t++) {
                double aw = fabs(col[t]), e = ex ? ex[i * xs + t] : 0.0;
                prop += aw * e;
                mag += (fabs(x[i * xs + t]) + e) * aw;
            }
            ey[i * ys + j] = prop + kernels_product_bound(k, words, mag);
        }
    }
    free(col);
}

/* Operand i's reference values and bounds as doubles (need values); NULL with the failure written. */
static int operand_pair(struct bctx *c, struct ir_leaf *l, int i, int64_t need, double **x, double **e)
{
    const float *xf = ir_leaf_arg_of(l, c->ref, i, need);
    const float *ef = xf ? ir_leaf_arg(l, i, need) : NULL;
    if (!ef)
        return -1;
    *x = malloc(sizeof(double) * (size_t)(need > 0 ? need : 1));
    *e = malloc(sizeof(double) * (size_t)(need > 0 ? need : 1));
    if (!*x || !*e) {
        free(*x);
        free(*e);
        return ir_leaf_fail(l, "out of memory for bounds");
    }
    for (int64_t t = 0; t < need; t++) {
        (*x)[t] = xf[t];
        (*e)[t] = ef[t];
    }
    return 0;
}

/* matmul. */
static int b_matmul(struct bctx *c, struct ir_leaf *l)
{
    const struct ir_matmul *s = &ir_leaf_op(l)->spec.u.matmul;
    struct kernels_weights w;
    double *x, *ex;
    if (rmat_get(c, l, 1, s->k, s->n, &w) || operand_pair(c, l, 0, s->m * s->k, &x, &ex))
        return -1;
    float *y = ir_leaf_result(l, s->m * s->n);
    double *ey = y ? malloc(sizeof(double) * (size_t)(s->m * s->n > 0 ? s->m * s->n : 1)) : NULL;
    if (ey) {
        product_bounds(x, ex, s->k, &w, 0, 0, s->m, s->k, s->n, operand_words(c->g, ir_leaf_op(l)->ins[0]), ey,
                       s->n);
        for (int64_t i = 0; i < s->m * s->n; i++)
            y[i] = (float)ey[i];
    }
    free(x);
    free(ex);
    free(ey);
    return y && ey ? 0 : -1;
}

/* head_matmul: each head's product of its part of x by its own rows of W, bounded as a product of `a` terms (the lane
 * reads the activation in f32). */
static int b_head_matmul(struct bctx *c, struct ir_leaf *l)
{
    const struct ir_head_matmul *s = &ir_leaf_op(l)->spec.u.head_matmul;
    int64_t xa = s->heads * s->a, yb = s->heads * s->b;
    struct kernels_weights w;
    double *x, *ex;
    if (rmat_get(c, l, 1, xa, s->b, &w) || operand_pair(c, l, 0, s->m * xa, &x, &ex))
        return -1;
    float *y = ir_leaf_result(l, s->m * yb);
    double *ey = y ? malloc(sizeof(double) * (size_t)(s->m * yb > 0 ? s->m * yb : 1)) : NULL;
    if (ey) {
        for (int64_t h = 0; h < s->heads; h++)
            product_bounds(x + h * s->a, ex + h * s->a, xa, &w, h * s->a, 0, s->m, s->a, s->b, 0, ey + h * s->b, yb);
        for (int64_t i = 0; i < s->m * yb; i++)
            y[i] = (float)ey[i];
    }
    free(x);
    free(ex);
    free(ey);
    return y && ey ? 0 : -1;
}

/* ── Elementwise, activations ────────────────────────────────────────────────────────────────────────────── */

/* Bound of a op b with input bounds: propagated, plus a rounding on each side of the result. */
static double ew_bound(int op, double a, double b, double ea, double eb)
{
    double y;
    double prop;
    switch (op) {
    case IR_EW_ADD: y = a + b; prop = ea + eb; break;
    case IR_EW_SUB: y = a - b; prop = ea + eb; break;
    case IR_EW_MUL: y = a * b; prop = fabs(b) * ea + fabs(a) * eb + ea * eb; break;
    default:
        if (eb >= fabs(b))
            return INFINITY;
        y = a / b;
        prop = (ea + fabs(y) * eb) / (fabs(b) - eb);
        break;
    }
    return prop == 0.0 ? 0.0 : prop + 2.0 * U32 * (fabs(y) + prop);
}

/* elementwise. */
static int b_elementwise(struct bctx *c, struct ir_leaf *l)
{
    const struct ir_elementwise *s = &ir_leaf_op(l)->spec.u.elementwise;
    int64_t nb = s->row > 0 ? s->row : s->n;
    const float *a = ir_leaf_arg_of(l, c->ref, 0, s->n), *b = a ? ir_leaf_arg_of(l, c->ref, 1, nb) : NULL;
    const float *ea = b ? ir_leaf_arg(l, 0, s->n) : NULL, *eb = ea ? ir_leaf_arg(l, 1, nb) : NULL;
    float *y = eb ? ir_leaf_result(l, s->n) : NULL;
    if (!y)
        return -1;
    for (int64_t i = 0; i < s->n; i++) {
        int64_t j = s->row > 0 ? i % s->row : i;
        y[i] = (float)ew_bound((int)s->op, a[i], b[j], ea[i], eb[j]);
    }
    return 0;
}

/* A function's bound through its steepest slope `lip`: lip·e plus, for a transcendental one (computed differently
 * by the lane and the evaluator even on the same input), TRANS_ULPS of the magnitude `mag`; an exact one (ReLU, a
 * scale) adds a rounding each side only when its input moved. */
static double through(double lip, double e, double mag, bool transcendental)
{
    if (transcendental)
        return lip * e + TRANS_ULPS * U32 * (mag + lip * e);
    return e == 0.0 ? 0.0 : lip * e + 2.0 * U32 * (mag + lip * e);
}

/* The steepest slope of each unary kind: silu 1.1, sigmoid 1/4, gelu 1.13, relu 1. */
static double unary_lip(enum ir_kind k)
{
    return k == IR_KIND_SILU ? 1.1 : k == IR_KIND_SIGMOID ? 0.25 : k == IR_KIND_GELU ? 1.13 : 1.0;
}

/* silu, sigmoid, gelu, relu, softcap, scale: one input through a function. */
static int b_unary(struct bctx *c, struct ir_leaf *l)
{
    const struct ir_op *op = ir_leaf_op(l);
    int64_t n = op->spec.kind == IR_KIND_SOFTCAP ? op->spec.u.softcap.n
              : op->spec.kind == IR_KIND_SCALE   ? op->spec.u.scale.n
                                                 : op->spec.u.unary.n;
    double lip = op->spec.kind == IR_KIND_SOFTCAP ? 1.0
               : op->spec.kind == IR_KIND_SCALE   ? fabs(op->spec.u.scale.factor)
                                                  : unary_lip(op->spec.kind);
    bool transcendental = op->spec.kind != IR_KIND_RELU && op->spec.kind != IR_KIND_SCALE;
    const float *e = ir_leaf_arg(l, 0, n);
    float *y = e ? ir_leaf_result(l, n) : NULL;
    const float *ry = y ? ir_leaf_arg_of(l, c->ref, 0, n) : NULL; /* |x| bounds |y| for every one of these */
    if (!ry)
        return -1;
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)through(lip, e[i], fabs(ry[i]) * (lip > 1.0 ? lip : 1.0) + 1.0, transcendental);
    return 0;
}

/* swiglu: silu(g)·u. */
static int b_swiglu(struct bctx *c, struct ir_leaf *l)
{
    int64_t n = ir_leaf_op(l)->spec.u.swiglu.total;
    const float *g = ir_leaf_arg_of(l, c->ref, 0, n), *u = g ? ir_leaf_arg_of(l, c->ref, 1, n) : NULL;
    const float *eg = u ? ir_leaf_arg(l, 0, n) : NULL, *eu = eg ? ir_leaf_arg(l, 1, n) : NULL;
    float *y = eu ? ir_leaf_result(l, n) : NULL;
    if (!y)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        double sg = fabs((double)g[i]) + eg[i] + 1.0; /* |silu(g')| ≤ |g'| + 1 */
        double prop = 1.1 * eg[i] * (fabs((double)u[i]) + eu[i]) + sg * eu[i];
        y[i] = (float)(prop + TRANS_ULPS * U32 * (sg * (fabs((double)u[i]) + eu[i])));
    }
    return 0;
}

/* ── Norms and rotation ──────────────────────────────────────────────────────────────────────────────────── */

/* One row of a norm's input as both sides see it: the values v = x + res (the residual add's rounding in the bound)
 * into v and ev; for a layer norm then centred on the row's mean, d = v − mean, its bound grown by the mean's (its
 * inputs' bounds, both sides' orders of the sum and the division) and the subtraction's rounding. */
static void norm_row(const double *x, const double *ex, const double *r, const double *er, int64_t cols, bool layer,
                     double *v, double *ev)
{
    double sum = 0.0, esum = 0.0, asum = 0.0;
    for (int64_t j = 0; j < cols; j++) {
        v[j] = x[j] + (r ? r[j] : 0.0);
        ev[j] = ex[j] + (er ? er[j] : 0.0);
        if (r && ev[j] > 0.0)
            ev[j] += U32 * (fabs(v[j]) + ev[j]); /* the residual add's rounding */
        sum += v[j];
        esum += ev[j];
        asum += fabs(v[j]) + ev[j];
    }
    if (!layer || cols == 0)
        return;
    int64_t threads = kernels_norm_threads(cols);
    double mean = sum / (double)cols;
    double order = kernels_gamma((double)cols) + kernels_gamma((double)((cols + threads - 1) / threads) + 10.0);
    double emean = (esum + order * asum) / (double)cols + 2.0 * U32 * (fabs(mean) + esum / (double)cols);
    for (int64_t j = 0; j < cols; j++) {
        double d = v[j] - mean, ed = ev[j] + emean;
        v[j] = d;
        ev[j] = ed + 2.0 * U32 * (fabs(d) + ed);
    }
}

/* rms_norm: the inputs' bounds (centred on the row's mean for a layer norm) through d·r·(w + offset) (+ b),
 * r = 1/√(Σd²/n + eps), the sum of squares' order, and the bias add's rounding. */
static int b_rms_norm(struct bctx *c, struct ir_leaf *l)
{
    const struct ir_rms_norm *s = &ir_leaf_op(l)->spec.u.rms_norm;
    int64_t n = s->rows * s->cols;
    double *x, *ex, *r = NULL, *er = NULL;
    if (operand_pair(c, l, 0, n, &x, &ex))
        return -1;
    const float *w = s->weight ? ir_leaf_arg_of(l, c->ref, 1, s->cols) : NULL;
    int at_b = 1 + (s->weight ? 1 : 0) + (s->residual ? 1 : 0);
    const float *b = s->bias ? ir_leaf_arg_of(l, c->ref, at_b, s->cols) : NULL;
    const float *eb = b ? ir_leaf_arg(l, at_b, s->cols) : NULL;
    double *v = malloc(sizeof(double) * (size_t)(2 * s->cols + 1)), *ev = v ? v + s->cols : NULL;
    if (!v || (s->weight && !w) || (s->bias && !eb) ||
        (s->residual && operand_pair(c, l, s->weight ? 2 : 1, n, &r, &er))) {
        free(v);
        free(x);
        free(ex);
        return -1;
    }
    float *y = ir_leaf_result(l, n);
    for (int64_t row = 0; y && row < s->rows; row++) {
        int64_t o = row * s->cols;
        norm_row(x + o, ex + o, r ? r + o : NULL, er ? er + o : NULL, s->cols, s->kind == IR_NORM_LAYER, v, ev);
        double ss = 0.0, dss = 0.0;
        for (int64_t j = 0; j < s->cols; j++) {
            ss += v[j] * v[j];
            dss += 2.0 * fabs(v[j]) * ev[j] + ev[j] * ev[j];
        }
        int64_t threads = kernels_norm_threads(s->cols);
        double order = (kernels_gamma((double)s->cols) +
                        kernels_gamma((double)((s->cols + threads - 1) / threads) + 10.0)) * ss;
        double den = ss + (double)s->cols * s->eps;
        double rho = 0.5 * (dss + order) / (den - dss - order > 0 ? den - dss - order : 0.0);
        double inv = 1.0 / sqrt(den / (double)s->cols);
        for (int64_t j = 0; j < s->cols; j++) {
            double f = w ? fabs((double)w[j] + s->offset) : 1.0;
            double prop = f * inv * (ev[j] + (fabs(v[j]) + ev[j]) * rho);
            double out = prop + 4.0 * U32 * f * inv * (fabs(v[j]) + ev[j]);
            if (b) /* the bias's own bound, and its add's rounding each side */
                out += eb[j] + 2.0 * U32 * (f * inv * (fabs(v[j]) + ev[j]) + fabs((double)b[j]) + eb[j] + out);
            y[o + j] = (float)out;
        }
    }
    free(v);
    free(x);
    free(ex);
    free(r);
    free(er);
    return y ? 0 : -1;
}

/* l2_norm: the inputs' bounds through v·r, r = 1/√(Σv² + eps), and the sum of squares' order (as rms_norm's). */
static int b_l2_norm(struct bctx *c, struct ir_leaf *l)
{
    const struct ir_l2_norm *s = &ir_leaf_op(l)->spec.u.l2_norm;
    int64_t n = s->rows * s->cols, threads = kernels_norm_threads(s->cols);
    double *x, *ex;
    if (operand_pair(c, l, 0, n, &x, &ex))
        return -1;
    float *y = ir_leaf_result(l, n);
    for (int64_t row = 0; y && row < s->rows; row++) {
        double ss = 0.0, dss = 0.0;
        for (int64_t j = 0; j < s->cols; j++) {
            double v = x[row * s->cols + j], ev = ex[row * s->cols + j];
            ss += v * v;
            dss += 2.0 * fabs(v) * ev + ev * ev;
        }
        double order = (kernels_gamma((double)s->cols) +
                        kernels_gamma((double)((s->cols + threads - 1) / threads) + 10.0)) * ss;
        double den = ss + s->eps, inv = 1.0 / sqrt(den);
        double rho = 0.5 * (dss + order) / (den - dss - order > 0 ? den - dss - order : 0.0);
        for (int64_t j = 0; j < s->cols; j++) {
            double v = fabs(x[row * s->cols + j]), ev = ex[row * s->cols + j];
            y[row * s->cols + j] = (float)(inv * (ev + (v + ev) * rho) + 4.0 * U32 * inv * (v + ev));
        }
    }
    free(x);
    free(ex);
    return y ? 0 : -1;
}

/* ── Gated DeltaNet ──────────────────────────────────────────────────────────────────────────────────────── */

/* The most storing a value of magnitude x into recurrent state moves it: the state knob's type (bf16: 2⁻⁸
 * relative, as a cache's; f32: nothing). */
static double state_error(const struct bctx *c, double x)
{
    return c->p->state == SHIM_KEEP_BF16 ? UBF * x : c->p->state == SHIM_KEEP_F16 ? U16 * x + 0x1p-25 : 0.0;
}

/* causal_conv: each output a sum of `taps` products read in the same order by both (Σ|w|e_x′ propagated, plus
 * each side's γ_taps of Σ|w·x′|); the ring's new rows carry their source's bound and the state's rounding. */
static int b_causal_conv(struct bctx *c, struct ir_leaf *l)
{
    const struct ir_causal_conv *s = &ir_leaf_op(l)->spec.u.causal_conv;
    int64_t keep = (s->taps - 1) * s->chan, nx = s->rows * s->chan;
    double *x, *ex, *w, *ew;
    if (s->taps < 1)
        return ir_leaf_fail(l, "taps must be at least 1");
    if (operand_pair(c, l, 0, nx, &x, &ex))
        return -1;
    if (operand_pair(c, l, 1, s->chan * s->taps, &w, &ew)) {
        free(x);
        free(ex);
        return -1;
    }
    const float *ring = ir_leaf_arg_of(l, c->ref, 2, keep);
    float *ering = ring ? ir_leaf_state(l, 2, keep) : NULL;
    float *y = ering ? ir_leaf_result(l, nx) : NULL;
    double gam = kernels_gamma((double)s->taps);
    for (int64_t ch = 0; y && ch < s->chan; ch++) {
        for (int64_t t = 0; t < s->rows; t++) {
            double prop = 0.0, mag = 0.0;
            for (int64_t j = 0; j < s->taps; j++) {
                int64_t r = t + j, at = (r < s->taps - 1 ? r : r - (s->taps - 1)) * s->chan + ch;
                double xv = fabs(r < s->taps - 1 ? (double)ring[at] : x[at]);
                double e = r < s->taps - 1 ? (double)ering[at] : ex[at];
                double wv = fabs(w[ch * s->taps + j]), we = ew[ch * s->taps + j];
                prop += wv * e + we * (xv + e);
                mag += (wv + we) * (xv + e);
            }
            y[t * s->chan + ch] = (float)(prop + 2.0 * gam * mag);
        }
        for (int64_t r = 0; r < s->taps - 1; r++) { /* ring row r ← x′ row rows + r, ascending: read before written */
            int64_t src = s->rows + r, at = (src < s->taps - 1 ? src : src - (s->taps - 1)) * s->chan + ch;
            double xv = fabs(src < s->taps - 1 ? (double)ring[at] : x[at]);
            double e = src < s->taps - 1 ? (double)ering[at] : ex[at];
            ering[r * s->chan + ch] = (float)(e + state_error(c, xv + e));
        }
    }
    free(x);
    free(ex);
    free(w);
    free(ew);
    return y ? 0 : -1;
}

/* decay: −e^alog · softplus(t), t = a + dt_bias. A move of t moves softplus by at most σ(t) times it (slope ≤ 1),
 * a move of alog moves the value relatively by e^{e_alog} − 1. Its own rounding: e^alog, e^t and ln(1 + ·) each
 * within TRANS_ULPS units of the evaluator's (the exp's error passes into ln(1 + y) at most relatively, as
 * y/(1 + y) ≤ ln(1 + y)), and one product: (3·TRANS_ULPS + 2)·u of |value|. */
static int b_decay(struct bctx *c, struct ir_leaf *l)
{
    const struct ir_decay *s = &ir_leaf_op(l)->spec.u.decay;
    if (s->rows <= 0 || s->n % s->rows)
        return ir_leaf_fail(l, "n %lld is not whole over %lld rows", (long long)s->n, (long long)s->rows);
    int64_t heads = s->n / s->rows;
    double *a, *ea, *al, *eal, *dt, *edt;
    if (operand_pair(c, l, 0, s->n, &a, &ea))
        return -1;
    if (operand_pair(c, l, 1, heads, &al, &eal)) {
        free(a);
        free(ea);
        return -1;
    }
    if (operand_pair(c, l, 2, heads, &dt, &edt)) {
        free(a);
        free(ea);
        free(al);
        free(eal);
        return -1;
    }
    float *y = ir_leaf_result(l, s->n);
    for (int64_t i = 0; y && i < s->n; i++) {
        int64_t h = i % heads;
        double t = a[i] + dt[h], sp = t > 20.0 ? t : log1p(exp(t)), ex = exp(al[h]), v = ex * sp;
        double et = ea[i] + edt[h], sig = 1.0 / (1.0 + exp(-t));
        et = et > 0.0 ? et + 2.0 * U32 * (fabs(t) + et) : 0.0; /* the sum's rounding when its inputs moved */
        double prop = ex * exp(eal[h]) * sig * et + v * expm1(eal[h]);
        y[i] = (float)(prop + (3.0 * TRANS_ULPS + 2.0) * U32 * (v + prop));
    }
    free(a);
    free(ea);
    free(al);
    free(eal);
    free(dt);
    free(edt);
    return y ? 0 : -1;
}

/* A gated delta rule's operands as doubles (the reference's values and their bounds), and one head's memory. */
struct gdn_ops {
    double *x[7], *e[7];     /* q, k, v, z, b, a, w */
    double *S, *o, *eo, *eps, *qs, *eqs;
    int64_t kh, group, threads;
};

/* One row's step of one value column's bound ε (a bound on the 2-norm of the column's error), the column S[·][j]
 * of the reference's memory (in double) stepped alongside. Over a row, with u the f32 unit:
 *   decay    ε₁ = |d|ε + Δd(‖S‖ + ε) + 2u(|d| + Δd)(‖S‖ + ε), Δd the decay factor's move (input and TRANS_ULPS);
 *   read     k̃ᵀS̃ − kᵀS = kᵀe₁ + rest, rest ≤ ‖e_k‖(‖S₁‖ + ε₁) + 2γ_dk Σ(|S₁| + ε₁)(|k| + e_k);
 *   delta    δ̃ − δ = −β·kᵀe₁ + rest_δ (v's, β's, the read's rest and two roundings);
 *   write    e₂ = (I − βkkᵀ)e₁ + k·rest_δ + e_k·δ̃ + roundings: ‖I − βkkᵀ‖₂ = max(1, |1 − β‖k‖²|), so the memory's
 *            error does not grow through the delta rule when β‖k‖² ≤ 2 (l2-normed keys, β a sigmoid);
 *   output   o's move ≤ ‖q/√dk‖ε₂ + ‖e_q/√dk‖(‖S₂‖ + ε₂) + 2γ_dk Σ(|S₂| + ε₂)(|q/√dk| + e).
 * Returns the output's bound; writes o (the reference's output) and steps S and ε. */
static double gdn_column(const struct ir_gated_delta *s, const struct gdn_ops *g, int64_t t, int64_t eta, int64_t j,
                         double *S, double *eps, double *o)
{
    int64_t dk = s->dk, dv = s->dv, u = t * s->h + eta, uk = (t * g->kh + eta / g->group) * dk;
    const double *k = g->x[1] + uk, *ek = g->e[1] + uk;
    double d = exp(g->x[5][u]), dd = d * expm1(g->e[5][u]) + TRANS_ULPS * U32 * d * exp(g->e[5][u]);
    double beta = g->x[4][u], eb = g->e[4][u], v = g->x[2][u * dv + j], evv = g->e[2][u * dv + j];
    double nS = 0.0, kn = 0.0, ekn = 0.0, kv = 0.0;
    for (int64_t i = 0; i < dk; i++) {
        nS += S[i * dv + j] * S[i * dv + j];
        kn += k[i] * k[i];
        ekn += ek[i] * ek[i];
    }
    nS = sqrt(nS);
    kn = sqrt(kn);
    ekn = sqrt(ekn);
    double e1 = fabs(d) * *eps + dd * (nS + *eps) + 2.0 * U32 * (fabs(d) + dd) * (nS + *eps), nS1 = fabs(d) * nS;
    double mkv = 0.0;
    for (int64_t i = 0; i < dk; i++) {
        S[i * dv + j] *= d;
        kv += S[i * dv + j] * k[i];
        mkv += (fabs(S[i * dv + j]) + e1) * (fabs(k[i]) + ek[i]);
    }
    double rest_kv = ekn * (nS1 + e1) + 2.0 * kernels_gamma((double)dk) * mkv;
    double dlt = v - kv, delta = beta * dlt;
    double dl_rest = evv + rest_kv + 2.0 * U32 * (fabs(dlt) + evv + rest_kv + kn * e1), dl_full = dl_rest + kn * e1;
    double rest_d = fabs(beta) * dl_rest + eb * (fabs(dlt) + dl_full) +
                    2.0 * U32 * (fabs(beta) + eb) * (fabs(dlt) + dl_full);
    double d_full = fabs(beta) * kn * e1 + rest_d;
    double cf = fabs(1.0 - beta * kn * kn) > 1.0 ? fabs(1.0 - beta * kn * kn) : 1.0;
    double e2 = cf * e1 + kn * rest_d + ekn * (fabs(delta) + d_full) +
                4.0 * U32 * (nS1 + e1 + (kn + ekn) * (fabs(delta) + d_full));
    double nS2 = 0.0, qn = 0.0, eqn = 0.0, mo = 0.0, oo = 0.0;
    for (int64_t i = 0; i < dk; i++) {
        S[i * dv + j] += k[i] * delta;
        nS2 += S[i * dv + j] * S[i * dv + j];
        qn += g->qs[i] * g->qs[i];
        eqn += g->eqs[i] * g->eqs[i];
        oo += S[i * dv + j] * g->qs[i];
        mo += (fabs(S[i * dv + j]) + e2) * (fabs(g->qs[i]) + g->eqs[i]);
    }
    nS2 = sqrt(nS2);
    *eps = e2;
    *o = oo;
    return sqrt(qn) * e2 + sqrt(eqn) * (nS2 + e2) + 2.0 * kernels_gamma((double)dk) * mo;
}

/* One row's outputs of one head from its columns' outputs o and their bounds eo: the head's norm (as rms_norm's:
 * the factor's relative move ρ from the sum of squares' moves and order, the block's tree over kernels_gdn_threads
 * threads), the weight, the gate through its slope and TRANS_ULPS; y's bounds written. */
static void gdn_outputs(const struct ir_gated_delta *s, const struct gdn_ops *g, int64_t u, float *y)
{
    int64_t dv = s->dv;
    double ss = 0.0, dss = 0.0;
    for (int64_t j = 0; j < dv; j++) {
        ss += g->o[j] * g->o[j];
        dss += 2.0 * fabs(g->o[j]) * g->eo[j] + g->eo[j] * g->eo[j];
    }
    double order = (kernels_gamma((double)dv) + kernels_gamma((double)((dv + g->threads - 1) / g->threads) + 10.0)) *
                   ss;
    double den = ss + (double)dv * s->eps, inv = 1.0 / sqrt(den / (double)dv);
    double rho = 0.5 * (dss + order) / (den - dss - order > 0 ? den - dss - order : 0.0);
    bool sig = s->gate == IR_GATE_SIGMOID;
    for (int64_t j = 0; j < dv; j++) {
        double ov = fabs(g->o[j]), eo = g->eo[j], w = fabs(g->x[6][j]), ew = g->e[6][j];
        double z = g->x[3][u * dv + j], ez = g->e[3][u * dv + j], sz = 1.0 / (1.0 + exp(-z));
        double gz = fabs(sig ? sz : z * sz), lip = sig ? 0.25 : 1.1;
        double egz = lip * ez + TRANS_ULPS * U32 * (gz + lip * ez);
        double nv = ov * inv, en = inv * (eo + (ov + eo) * rho) + 4.0 * U32 * inv * (ov + eo);
        double a = nv * w, ea = w * en + ew * (nv + en) + 2.0 * U32 * (w + ew) * (nv + en);
        y[u * dv + j] = (float)(gz * ea + (a + ea) * egz + 2.0 * U32 * (gz + egz) * (a + ea));
    }
}

/* Free a gated delta rule's double operands. */
static void gdn_ops_free(struct gdn_ops *g)
{
    for (int i = 0; i < 7; i++) {
        free(g->x[i]);
        free(g->e[i]);
    }
    free(g->S);
}

/* gated_delta: per value head, the rows in order, each column's memory bound carried (gdn_column), each row's
 * outputs through the norm and gate (gdn_outputs); the memory stored with the column's bound and the state's
 * rounding. */
static int b_gated_delta(struct bctx *c, struct ir_leaf *l)
{
    const struct ir_gated_delta *s = &ir_leaf_op(l)->spec.u.gated_delta;
    struct gdn_ops g = {0};
    if (s->kh < 0 || (s->kh > 0 && s->h % s->kh != 0) || s->h < 1)
        return ir_leaf_fail(l, "kh must divide h");
    g.kh = s->kh ? s->kh : s->h;
    g.group = s->h / g.kh;
    g.threads = kernels_gdn_threads(s->dv);
    int64_t nk = s->rows * g.kh * s->dk, nv = s->rows * s->h * s->dv, nh = s->rows * s->h, n = s->dk * s->dv;
    const int ops[7] = {0, 1, 2, 3, 4, 5, 7};
    const int64_t need[7] = {nk, nk, nv, nv, nh, nh, s->dv};
    for (int i = 0; i < 7; i++)
        if (operand_pair(c, l, ops[i], need[i], &g.x[i], &g.e[i])) {
            gdn_ops_free(&g);
            return -1;
        }
    const float *S0 = ir_leaf_arg_of(l, c->ref, 6, s->h * n);
    float *eS = S0 ? ir_leaf_state(l, 6, s->h * n) : NULL;
    float *y = eS ? ir_leaf_result(l, nv) : NULL;
    g.S = y ? calloc((size_t)(n + 3 * s->dv + 2 * s->dk), sizeof(double)) : NULL;
    if (!g.S) {
        gdn_ops_free(&g);
        return y ? ir_leaf_fail(l, "out of memory for bounds") : -1;
    }
    g.o = g.S + n;
    g.eo = g.o + s->dv;
    g.eps = g.eo + s->dv;
    g.qs = g.eps + s->dv;
    g.eqs = g.qs + s->dk;
    double rdk = sqrt((double)s->dk);
    for (int64_t eta = 0; eta < s->h; eta++) {
        for (int64_t i = 0; i < n; i++)
            g.S[i] = S0[eta * n + i];
        for (int64_t j = 0; j < s->dv; j++) { /* the loaded memory's error, column by column */
            double e2 = 0.0;
            for (int64_t i = 0; i < s->dk; i++)
                e2 += (double)eS[eta * n + i * s->dv + j] * eS[eta * n + i * s->dv + j];
            g.eps[j] = sqrt(e2);
        }
        for (int64_t t = 0; t < s->rows; t++) {
            int64_t uk = (t * g.kh + eta / g.group) * s->dk;
            for (int64_t i = 0; i < s->dk; i++) {
                g.qs[i] = g.x[0][uk + i] / rdk;
                g.eqs[i] = g.e[0][uk + i] / rdk + 2.0 * U32 * (fabs(g.qs[i]) + g.e[0][uk + i] / rdk);
            }
            for (int64_t j = 0; j < s->dv; j++)
                g.eo[j] = gdn_column(s, &g, t, eta, j, g.S, &g.eps[j], &g.o[j]);
            gdn_outputs(s, &g, t * s->h + eta, y);
        }
        for (int64_t i = 0; i < n; i++) /* an element's error is within its column's 2-norm */
            eS[eta * n + i] = (float)(g.eps[i % s->dv] + state_error(c, fabs(g.S[i]) + g.eps[i % s->dv]));
    }
    gdn_ops_free(&g);
    return 0;
}

/* rope: each output of a pair is x0·c ∓ x1·s, the pair (i, i + half) or adjacent (2i, 2i + 1); the tables are exact,
 * their values at most the rope's magnitude (YaRN's attention factor) in size. */
static int b_rope(struct bctx *c, struct ir_leaf *l)
{
    const struct ir_rope *s = &ir_leaf_op(l)->spec.u.rope;
    int64_t n = s->h * s->hd;
    const float *x = ir_leaf_arg_of(l, c->ref, 0, n);
    const float *e = x ? ir_leaf_arg(l, 0, n) : NULL;
    float *y = e ? ir_leaf_result(l, n) : NULL; /* the tables are exact, the position only picks their row */
    if (!y)
        return -1;
    double m = fmax(1.0, ir_rope_magnitude(s));
    for (int64_t g = 0; g < s->h; g++)
        for (int64_t i = 0; i < s->hd; i++) {
            int64_t at = g * s->hd + i;
            if (i >= 2 * s->half) {
                y[at] = e[at];
                continue;
            }
            int64_t partner = s->adjacent ? i ^ 1 : i < s->half ? i + s->half : i - s->half;
            int64_t a = g * s->hd + i, b = g * s->hd + partner;
            double prop = (e[a] + e[b]) * m, mag = (fabs((double)x[a]) + fabs((double)x[b])) * m + prop;
            y[at] = (float)(prop == 0.0 ? 0.0 : prop + 3.0 * U32 * mag);
        }
    return 0;
}

/* ── Attention ───────────────────────────────────────────────────────────────────────────────────────────── */

/* attention: per head, the logits' bound E from the inputs' and the dot's rounding; the weights move by at most
 * e^{2E} − 1 relatively; the output by that over Σp|v|, plus Σp·e_v and the softmax's own rounding (exp, the
 * online rescaling over tiles and chunks, the merge). Under f16 tiles, queries, keys, values and weights are rounded
 * to f16 too. */
static int b_attention(struct bctx *c, struct ir_leaf *l)
{
    const struct ir_attention *s = &ir_leaf_op(l)->spec.u.attention;
    int64_t p = 0, nq = s->rows * s->h * s->hd, nk = s->l * s->kv * s->hd, nv = s->l * s->kv * s->vd;
    const float *q = ir_leaf_arg_of(l, c->ref, 0, nq), *k = q ? ir_leaf_arg_of(l, c->ref, 1, nk) : NULL;
    const float *v = k ? ir_leaf_arg_of(l, c->ref, 2, nv) : NULL;
    const float *eq = v ? ir_leaf_arg(l, 0, nq) : NULL, *ek = eq ? ir_leaf_arg(l, 1, nk) : NULL;
    const float *ev = ek ? ir_leaf_arg(l, 2, nv) : NULL;
    if (!ev || ir_leaf_row(l, &s->pos, 3, IR_MAX_DIM, "position", &p))
        return -1;
    const float *sinks = s->sinks ? ir_leaf_arg_of(l, c->ref, s->pos.kind == IR_RIDX_NAMED ? 4 : 3, s->h) : NULL;
    float *y = (!s->sinks || sinks) ? ir_leaf_result(l, s->rows * s->h * s->vd) : NULL;
    double *lg = y ? malloc(sizeof(double) * (size_t)(2 * (s->l > 0 ? s->l : 1))) : NULL;
    if (!lg)
        return y ? ir_leaf_fail(l, "out of memory for bounds") : -1;
    double *dl = lg + (s->l > 0 ? s->l : 1);
    enum kernels_mode mode = kernels_mode(c->p->acts);
    bool tiles = kernels_attention_in_tiles(mode, s->rows, s->hd, s->vd);
    bool f16 = tiles && mode != KERNELS_MODE_I8X2, i8 = tiles && mode == KERNELS_MODE_I8X2;
    double scale = s->scale.has ? s->scale.v : 1.0 / sqrt((double)s->hd);
    int64_t group = s->h / s->kv, kst = s->kv * s->hd, vst = s->kv * s->vd;
    for (int64_t r = 0; r < s->rows; r++) {
        int64_t pos = p + r, hi = pos < s->l - 1 ? pos : s->l - 1;
        int64_t lo = s->window > 0 && pos - s->window + 1 > 0 ? pos - s->window + 1 : 0;
        for (int64_t g = 0; g < s->h; g++) {
            const float *qh = q + (r * s->h + g) * s->hd, *eqh = eq + (r * s->h + g) * s->hd;
            int64_t kvh = g / group;
            double E = 0.0, m = -INFINITY, qmax = 0.0;
            for (int64_t i = 0; i < s->hd; i++)
                qmax = fabs((double)qh[i]) + eqh[i] > qmax ? fabs((double)qh[i]) + eqh[i] : qmax;
            for (int64_t j = lo; j <= hi; j++) {
                const float *kj = k + j * kst + kvh * s->hd, *ekj = ek + j * kst + kvh * s->hd;
                double dot = 0.0, mag = 0.0, prop = 0.0, kmax = 0.0, q1 = 0.0, k1 = 0.0;
                for (int64_t i = 0; i < s->hd; i++) {
                    dot += (double)qh[i] * kj[i];
                    mag += fabs((double)qh[i] * kj[i]);
                    prop += fabs((double)qh[i]) * ekj[i] + fabs((double)kj[i]) * eqh[i] + (double)eqh[i] * ekj[i];
                    kmax = fabs((double)kj[i]) + ekj[i] > kmax ? fabs((double)kj[i]) + ekj[i] : kmax;
                    q1 += fabs((double)qh[i]) + eqh[i];
                    k1 += fabs((double)kj[i]) + ekj[i];
                }
                /* f16 tiles: both operands rounded (2⁻¹¹ each); int8 tiles: each value within its row's max / 64516 */
                double tile = f16 ? 3.0 * U16 * (mag + prop)
                            : i8  ? (q1 * kmax + k1 * qmax + (double)s->hd * qmax * kmax / 64516.0) / 64516.0 * 1.01
                                  : 0.0;
                double round = kernels_product_bound(s->hd, 0, mag + prop) + tile;
                double lgt = dot * scale, e = fabs(scale) * (prop + round) + 2.0 * U32 * fabs(lgt);
                if (s->softcap.has) {
                    lgt = s->softcap.v * tanh(lgt / s->softcap.v);
                    e += TRANS_ULPS * U32 * fabs(lgt);
                }
                lg[j] = lgt;
                dl[j] = e;
                if (e > E)
                    E = e;
                if (lgt > m)
                    m = lgt;
            }
            double sink = sinks ? sinks[g] : -INFINITY;
            if (sink > m)
                m = sink;
            double den = sinks ? exp(sink - m) : 0.0;
            for (int64_t j = lo; j <= hi; j++)
                den += exp(lg[j] - m);
            double move = expm1(2.0 * E);
            double span = (double)(hi - lo + 1);
            /* the lane's softmax: exp per row (TRANS_ULPS), the running sums over tiles and chunks, the rescales */
            double own = kernels_gamma(2.0 * span + 16.0 + TRANS_ULPS * 3.0) + (f16 ? 2.0 * U16 : 0.0);
            for (int64_t j = lo; j <= hi; j++)
                lg[j] = exp(lg[j] - m) / den; /* the reference's weights */
            double vq = 0.0; /* int8 tiles: Σ_j p_j · (row j's largest value / 64516) */
            for (int64_t j = lo; i8 && j <= hi; j++) {
                double vmax = 0.0;
                for (int64_t t = 0; t < s->vd; t++) {
                    double a = fabs((double)v[j * vst + kvh * s->vd + t]) + ev[j * vst + kvh * s->vd + t];
                    vmax = a > vmax ? a : vmax;
                }
                vq += lg[j] * vmax / 64516.0 * 1.01;
            }
            for (int64_t t = 0; t < s->vd; t++) {
                double pv = 0.0, pe = 0.0, av = 0.0;
                for (int64_t j = lo; j <= hi; j++) {
                    double pj = lg[j], vv = fabs((double)v[j * vst + kvh * s->vd + t]);
                    double e = ev[j * vst + kvh * s->vd + t];
                    pv += pj * (vv + e);
                    pe += pj * e;
                    av += vv + e;
                }
                /* int8 tiles: the weights in three words, each within 1/4·10⁶ of its tile's largest (at most 1) */
                double b = move * pv + pe + own * pv + (i8 ? vq + av / (4e6 * den) : 0.0);
                y[(r * s->h + g) * s->vd + t] = (float)(hi < lo ? 0.0 : b);
            }
        }
    }
    free(lg);
    return 0;
}

/* ── Mixture of experts ──────────────────────────────────────────────────────────────────────────────────── */

/* The bias row of a mixture's operand i (len values, from the reference values), or NULL without bias; *bad set
 * when the operand cannot be read. */
static const float *moe_bias(struct bctx *c, struct ir_leaf *l, int i, int64_t len, bool *bad)
{
    if (!ir_leaf_op(l)->spec.u.moe.bias || *bad)
        return NULL;
    const float *b = ir_leaf_arg_of(l, c->ref, i, len);
    *bad = !b;
    return b;
}

/* A mixture expert's activation of gate g and up u in double into *h, and the bound on its output from the gate's
 * and the up's (eg, eu): its slope is at most 1.13 in the gate (the clamps only shrink moves), its factor |u| (or
 * |u′ + 1|) in the up; its own roundings TRANS_ULPS of the magnitude, more for the clamped SwiGLU's σ(alpha·g). */
static double moe_act_bound(const struct ir_moe *s, double g, double u, double eg, double eu, double *h)
{
    double a, uu, ulps = TRANS_ULPS;
    if (s->act == IR_MOE_CLAMPED_SWIGLU) {
        double al = (double)(float)s->alpha.v, lim = (double)(float)s->limit.v;
        g = g > lim ? lim : g;
        a = g / (1.0 + exp(-al * g));
        uu = (u > lim ? lim : u < -lim ? -lim : u) + 1.0;
        ulps += 4.0 + fabs(al * g); /* the σ's argument rounds too, its slope up to |g|/4 */
    } else {
        a = s->act == IR_MOE_GEGLU ? 0.5 * g * (1.0 + tanh(0.7978845608 * (g + 0.044715 * g * g * g)))
                                   : g / (1.0 + exp(-g));
        uu = u;
    }
    *h = a * uu;
    double prop = 1.13 * eg * (fabs(uu) + eu) + (fabs(a) + 1.13 * eg) * eu;
    return prop + ulps * U32 * (fabs(a) + 1.13 * eg + 1.0) * (fabs(uu) + eu);
}

/* A mixture's scores in double from its logits lg (the scoring its spec names) into p, and each one's bound from the
 * logits' largest bound E into ep: a softmax's move by e^{2E} − 1 of itself, a sigmoid's by E/4, a logit's by its own
 * bound; each plus its roundings. */
static void moe_scores_bound(const struct ir_moe *s, const double *lg, const double *elg, double E, double *p,
                             double *ep)
{
    double m = -INFINITY, den = 0.0;
    for (int64_t e = 0; e < s->experts; e++)
        m = lg[e] > m ? lg[e] : m;
    for (int64_t e = 0; e < s->experts; e++)
        den += exp(lg[e] - m);
    double ulps = kernels_gamma(2.0 * (double)s->experts + 8.0 + TRANS_ULPS);
    for (int64_t e = 0; e < s->experts; e++) {
        if (s->topk_softmax) {
            p[e] = lg[e];
            ep[e] = elg[e];
        } else if (s->sigmoid) {
            p[e] = 1.0 / (1.0 + exp(-lg[e])); /* σ's slope is at most 1/4 */
            ep[e] = 0.25 * E + (TRANS_ULPS + 4.0) * U32 * p[e];
        } else {
            p[e] = exp(lg[e] - m) / den;
            ep[e] = p[e] * (expm1(2.0 * E) + ulps);
        }
    }
}

/* The reference's choice (in double) where a correction row or groups decide it: the choosing scores c (scores plus
 * the row) and their bounds ec; with groups, the topk_groups best groups by their two best scores, the rest out; the
 * k best of those left into sel. Whether a bound could flip it: a group left out within reach of a kept one, or an
 * expert left out within reach of the k-th. ok: room for 2·experts + 2·groups doubles. */
static bool moe_choice_bound(const struct ir_moe *s, const double *c, const double *ec, int64_t *sel, double *room)
{
    int64_t size = s->groups > 0 ? s->experts / s->groups : s->experts, groups = s->groups > 0 ? s->groups : 1;
    double *gs = room, *eg = gs + groups, *open = eg + groups;
    bool ambiguous = false;
    for (int64_t j = 0; j < groups; j++) {
        int64_t a = -1, b = -1;
        double far = 0.0;
        for (int64_t e = j * size; e < (j + 1) * size; e++) {
            far = ec[e] > far ? ec[e] : far;
            if (a < 0 || c[e] > c[a])
                b = a, a = e;
            else if (b < 0 || c[e] > c[b])
                b = e;
        }
        gs[j] = c[a] + (b >= 0 ? c[b] : 0.0);
        eg[j] = 2.0 * far + 4.0 * U32 * (fabs(gs[j]) + 1.0);
        open[j] = s->groups > 0 ? 0.0 : 1.0;
    }
    for (int64_t r = 0; s->groups > 0 && r < s->topk_groups; r++) {
        int64_t best = -1;
        for (int64_t j = 0; j < groups; j++)
            if (open[j] == 0.0 && (best < 0 || gs[j] > gs[best]))
                best = j;
        open[best] = 1.0;
    }
    for (int64_t j = 0; s->groups > 0 && j < groups; j++)
        for (int64_t i = 0; open[j] == 0.0 && i < groups; i++)
            ambiguous = ambiguous || (open[i] == 1.0 && gs[j] + eg[j] >= gs[i] - eg[i]);
    double *taken = open + groups;
    for (int64_t e = 0; e < s->experts; e++)
        taken[e] = open[e / size] == 1.0 ? 0.0 : 1.0;
    for (int64_t r = 0; r < s->k; r++) {
        int64_t best = -1;
        for (int64_t e = 0; e < s->experts; e++)
            if (taken[e] == 0.0 && (best < 0 || c[e] > c[best]))
                best = e;
        sel[r] = best;
        taken[best] = 2.0;
    }
    for (int64_t e = 0; s->k > 0 && e < s->experts; e++) /* a competing expert left out within reach of the k-th */
        ambiguous = ambiguous || (taken[e] == 0.0 && c[e] + ec[e] >= c[sel[s->k - 1]] - ec[sel[s->k - 1]] -
                                                                        8.0 * U32 * (fabs(c[e]) + 1.0));
    return ambiguous;
}

/* moe: the router's logits (plus their bias) move by E; an expert choice that E could flip leaves the output
 * unbounded (the logits' order decides it, or with a correction row or groups the choosing scores'); else each kept
 * expert's gate, up and down products (and their biases, a rounding each) carry their bounds, the weights move by
 * e^{4E} − 1 (softmax then top k, top k then softmax, sigmoid; renormalised or not), one rounding more scaled. */
static int b_moe(struct bctx *c, struct ir_leaf *l)
{
    const struct ir_moe *s = &ir_leaf_op(l)->spec.u.moe;
    struct kernels_weights R, G, U, D;
    int64_t wide = s->experts * s->dff;
    double *x, *ex;
    if (rmat_get(c, l, 1, s->d, s->experts, &R) || rmat_get(c, l, 2, s->d, wide, &G) ||
        rmat_get(c, l, 3, s->d, wide, &U) || rmat_get(c, l, 4, s->dff, s->experts * s->d, &D) ||
        operand_pair(c, l, 0, s->d, &x, &ex))
        return -1;
    bool bad = false;
    const float *rb = moe_bias(c, l, 5, s->experts, &bad), *gball = moe_bias(c, l, 6, wide, &bad);
    const float *uball = moe_bias(c, l, 7, wide, &bad), *dball = moe_bias(c, l, 8, s->experts * s->d, &bad);
    const float *corr = NULL;
    if (s->correction && !bad) {
        corr = ir_leaf_arg_of(l, c->ref, s->bias ? 9 : 5, s->experts);
        bad = !corr;
    }
    float *y = bad ? NULL : ir_leaf_result(l, s->d);
    int words = operand_words(c->g, ir_leaf_op(l)->ins[0]);
    size_t room = (size_t)(7 * s->experts + 3 * s->groups + 6 * s->dff + 3 * s->d + (s->d > s->dff ? s->d : s->dff) +
                           8);
    double *buf = y ? calloc(room, sizeof(double)) : NULL;
    if (!buf) {
        free(x);
        free(ex);
        return y ? ir_leaf_fail(l, "out of memory for bounds") : -1;
    }
    double *lg = buf, *elg = lg + s->experts, *gv = elg + s->experts, *eg = gv + s->dff, *uv = eg + s->dff;
    double *eu = uv + s->dff, *h = eu + s->dff, *eh = h + s->dff, *dv = eh + s->dff, *ed = dv + s->d;
    double *acc = ed + s->d, *col = acc + (s->d > s->dff ? s->d : s->dff), *p = col + (s->d > s->dff ? s->d : s->dff);
    double *ep = p + s->experts, *ch = ep + s->experts, *ec = ch + s->experts, *choice = ec + s->experts;
    for (int64_t e = 0; e < s->experts; e++) {
        double dot = 0.0;
        rmat_col(&R, 0, s->d, e, col);
        for (int64_t t = 0; t < s->d; t++)
            dot += x[t] * col[t];
        lg[e] = dot + (rb ? rb[e] : 0.0);
    }
    product_bounds(x, ex, s->d, &R, 0, 0, 1, s->d, s->experts, 0, elg, s->experts);
    for (int64_t e = 0; rb && e < s->experts; e++)
        elg[e] += U32 * (fabs(lg[e]) + elg[e]);
    double E = 0.0;
    for (int64_t e = 0; e < s->experts; e++)
        E = elg[e] > E ? elg[e] : E;
    /* the reference's choice, in double: the k largest logits */
    int64_t *sel = calloc((size_t)(s->k > 0 ? s->k : 1), sizeof *sel);
    bool ambiguous = !sel;
    for (int64_t r = 0; sel && r < s->k; r++) {
        int64_t best = -1;
        for (int64_t e = 0; e < s->experts; e++) {
            bool taken = false;
            for (int64_t u = 0; u < r; u++)
                taken = taken || sel[u] == e;
            if (!taken && (best < 0 || lg[e] > lg[best]))
                best = e;
        }
        sel[r] = best;
    }
    for (int64_t e = 0; sel && e < s->experts && s->k < s->experts; e++) { /* a rejected expert within 2E + slack */
        bool kept = false;
        for (int64_t r = 0; r < s->k; r++)
            kept = kept || sel[r] == e;
        if (!kept && lg[e] >= lg[sel[s->k - 1]] - 2.0 * E - 8.0 * U32 * (fabs(lg[e]) + 1.0))
            ambiguous = true;
    }
    moe_scores_bound(s, lg, elg, E, p, ep);
    if (sel && (s->correction || s->groups > 0)) { /* the choosing scores decide, not the logits' order */
        for (int64_t e = 0; e < s->experts; e++) {
            ch[e] = p[e] + (corr ? (double)corr[e] : 0.0);
            ec[e] = ep[e] + (corr ? U32 * (fabs(ch[e]) + ep[e]) : 0.0);
        }
        ambiguous = moe_choice_bound(s, ch, ec, sel, choice);
    }
    double m = -INFINITY, den = 0.0, wsum = 0.0;
    bool sig = s->sigmoid && !s->topk_softmax, renorm = s->topk_softmax || !s->no_renorm;
    for (int64_t e = 0; e < s->experts; e++)
        m = lg[e] > m ? lg[e] : m;
    for (int64_t e = 0; e < s->experts; e++)
        den += exp(lg[e] - m);
    for (int64_t r = 0; sel && r < s->k; r++)
        wsum += sig ? p[sel[r]] : exp(lg[sel[r]] - m) / den;
    double move = expm1(4.0 * E) + kernels_gamma(2.0 * (double)s->experts + 8.0 + TRANS_ULPS) +
                  (s->scale.has ? 2.0 * U32 : 0.0);
    for (int64_t r = 0; !ambiguous && r < s->k; r++) {
        int64_t ex_ = sel[r];
        double wr = (sig ? p[ex_] : exp(lg[ex_] - m) / den) / (renorm ? wsum : 1.0) *
                    (s->scale.has ? (double)(float)s->scale.v : 1.0);
        for (int64_t j = 0; j < s->dff; j++) {
            double gd = 0.0, ud = 0.0;
            rmat_col(&G, 0, s->d, ex_ * s->dff + j, col);
            for (int64_t t = 0; t < s->d; t++)
                gd += x[t] * col[t];
            rmat_col(&U, 0, s->d, ex_ * s->dff + j, col);
            for (int64_t t = 0; t < s->d; t++)
                ud += x[t] * col[t];
            gv[j] = gd;
            uv[j] = ud;
        }
        product_bounds(x, ex, s->d, &G, 0, ex_ * s->dff, 1, s->d, s->dff, words, eg, s->dff);
        product_bounds(x, ex, s->d, &U, 0, ex_ * s->dff, 1, s->d, s->dff, words, eu, s->dff);
        const float *gb = gball ? gball + ex_ * s->dff : NULL, *ub = uball ? uball + ex_ * s->dff : NULL;
        const float *db = dball ? dball + ex_ * s->d : NULL;
        for (int64_t j = 0; j < s->dff; j++) {
            if (gb) { /* the bias added: one rounding of the sum */
                gv[j] += gb[j];
                uv[j] += ub[j];
                eg[j] += U32 * (fabs(gv[j]) + eg[j]);
                eu[j] += U32 * (fabs(uv[j]) + eu[j]);
            }
            eh[j] = moe_act_bound(s, gv[j], uv[j], eg[j], eu[j], &h[j]);
        }
        product_bounds(h, eh, s->dff, &D, 0, ex_ * s->d, 1, s->dff, s->d, 0, ed, s->d);
        for (int64_t i = 0; i < s->d; i++) {
            double dd = db ? (double)db[i] : 0.0;
            rmat_col(&D, 0, s->dff, ex_ * s->d + i, col);
            for (int64_t j = 0; j < s->dff; j++)
                dd += h[j] * col[j];
            ed[i] += db ? U32 * (fabs(dd) + ed[i]) : 0.0;
            dv[i] = dd;
            acc[i] += wr * move * (fabs(dd) + ed[i]) + wr * ed[i] + 3.0 * U32 * wr * (fabs(dd) + ed[i]);
        }
    }
    for (int64_t i = 0; i < s->d; i++)
        y[i] = ambiguous ? INFINITY : (float)(acc[i] + kernels_gamma((double)s->k + 2.0) * acc[i]);
    if (ambiguous)
        c->ambiguous += s->d;
    free(sel);
    free(buf);
    free(x);
    free(ex);
    return 0;
}

/* ── Selection, tables, caches, quantize ─────────────────────────────────────────────────────────────────── */

/* argmax: exact when the reference's best beats every other value by more than both their bounds; else unbounded. */
static int b_argmax(struct bctx *c, struct ir_leaf *l)
{
    const struct ir_argmax *s = &ir_leaf_op(l)->spec.u.argmax;
    const float *x = ir_leaf_arg_of(l, c->ref, 0, s->rows * s->cols);
    const float *e = x ? ir_leaf_arg(l, 0, s->rows * s->cols) : NULL;
    float *y = e ? ir_leaf_result(l, s->rows) : NULL;
    if (!y)
        return -1;
    for (int64_t r = 0; r < s->rows; r++) {
        const float *xr = x + r * s->cols, *er = e + r * s->cols;
        int64_t best = -1;
        for (int64_t j = 0; j < s->cols; j++)
            if (xr[j] == xr[j] && (best < 0 || xr[j] > xr[best]))
                best = j;
        bool close = false;
        for (int64_t j = 0; best >= 0 && j < s->cols; j++)
            close = close || (j != best && (double)xr[j] + er[j] >= (double)xr[best] - er[best]);
        y[r] = close ? INFINITY : 0.0f;
        c->ambiguous += close;
    }
    return 0;
}

/* row_gather, rows_gather: weights decoded exactly, indices exact: the result's bound is zero. */
static int b_gather(struct bctx *c, struct ir_leaf *l)
{
    (void)c;
    const struct ir_op *op = ir_leaf_op(l);
    int64_t n = op->spec.kind == IR_KIND_ROW_GATHER ? op->spec.u.row_gather.cols
                                                    : op->spec.u.rows_gather.count * op->spec.u.rows_gather.cols;
    float *y = ir_leaf_result(l, n);
    if (!y)
        return -1;
    memset(y, 0, sizeof(float) * (size_t)n);
    return 0;
}

/* The relative rounding a write into tensor t adds: a KV cache's (a carried state tensor) type, else none. */
static double keep_unit(const struct bctx *c, ir_tid t)
{
    const struct ir_tensor *T = &c->g->tensors[t];
    if (T->role != IR_ROLE_STATE || !T->carried)
        return 0.0;
    return c->p->cache == SHIM_KEEP_F16 ? U16 : c->p->cache == SHIM_KEEP_BF16 ? UBF : 0.0;
}

/* The most rounding into tensor t moves a value x: relative, and f16's subnormal spacing below 2⁻¹⁴. */
static double keep_error(const struct bctx *c, ir_tid t, double x)
{
    double unit = keep_unit(c, t);
    return unit == U16 ? unit * fabs(x) + 0x1p-25 : unit * fabs(x);
}

/* set_row: the written rows carry their source's bound and the cache's rounding at the write. */
static int b_set_row(struct bctx *c, struct ir_leaf *l)
{
    const struct ir_set_row *s = &ir_leaf_op(l)->spec.u.set_row;
    int64_t n = s->rows * s->cols, r = 0, w = s->count * s->cols;
    float *table = ir_leaf_state(l, 0, n);
    const float *src = table ? ir_leaf_arg_of(l, c->ref, 1, w) : NULL;
    const float *es = src ? ir_leaf_arg(l, 1, w) : NULL;
    if (!es || ir_leaf_row(l, &s->index, 2, s->rows - s->count, "row", &r))
        return -1;
    float *y = ir_leaf_result(l, n);
    if (!y)
        return -1;
    ir_tid tt = ir_leaf_op(l)->ins[0];
    for (int64_t i = 0; i < w; i++)
        table[r * s->cols + i] = (float)(es[i] + keep_error(c, tt, fabs((double)src[i]) + es[i]));
    if (y != table)
        memcpy(y, table, sizeof(float) * (size_t)n);
    return 0;
}

/* quantize: exact inputs quantize exactly (the same arithmetic on the same values). Else the scale moves by at
 * most max e/127, each code keeps its step unless its value lies within its bound of a rounding boundary, where it
 * may move one step; two words land within a second-word step of the value either way. */
static int b_quantize(struct bctx *c, struct ir_leaf *l)
{
    const struct ir_op *op = ir_leaf_op(l);
    int64_t n = ir_tensor_len(c->g, op->out);
    const float *x = ir_leaf_arg_of(l, c->ref, 0, n), *e = x ? ir_leaf_arg(l, 0, n) : NULL;
    float *y = e ? ir_leaf_result(l, n) : NULL;
    if (!y)
        return -1;
    for (int64_t b = 0; b < n; b += 32) {
        int64_t m = n - b < 32 ? n - b : 32;
        double amax = 0.0, emax = 0.0;
        for (int64_t i = b; i < b + m; i++) {
            amax = fabs((double)x[i]) > amax ? fabs((double)x[i]) : amax;
            emax = e[i] > emax ? e[i] : emax;
        }
        double sc = amax / 127.0, ds = emax / 127.0 + 2.0 * U32 * sc;
        for (int64_t i = b; i < b + m; i++) {
            if (emax == 0.0) {
                y[i] = 0.0f;
                continue;
            }
            if (op->quant_words == 2) {
                y[i] = (float)(e[i] + 2.0 * (amax + emax) / (254.0 * 127.0) + 4.0 * U32 * (fabs((double)x[i]) + e[i]));
                continue;
            }
            double t = sc > 0.0 ? fabs((double)x[i]) / sc : 0.0, frac = t - floor(t);
            double slack = sc > 0.0 ? (e[i] + 127.0 * ds) / sc : INFINITY;
            bool near = fabs(frac - 0.5) <= slack + 1e-6;
            y[i] = (float)(127.0 * ds + (near ? sc + ds : 0.0) + 2.0 * U32 * fabs((double)x[i]));
        }
    }
    return 0;
}

/* ── The walk ────────────────────────────────────────────────────────────────────────────────────────────── */

/* Each kind's bound rule. */
static int (*const rules[IR_KIND_COUNT])(struct bctx *, struct ir_leaf *) = {
    [IR_KIND_MATMUL] = b_matmul,   [IR_KIND_ELEMENTWISE] = b_elementwise, [IR_KIND_RMS_NORM] = b_rms_norm,
    [IR_KIND_ROPE] = b_rope,       [IR_KIND_ROW_GATHER] = b_gather,       [IR_KIND_ROWS_GATHER] = b_gather,
    [IR_KIND_SET_ROW] = b_set_row, [IR_KIND_ATTENTION] = b_attention,     [IR_KIND_MOE] = b_moe,
    [IR_KIND_SILU] = b_unary,      [IR_KIND_SIGMOID] = b_unary,           [IR_KIND_GELU] = b_unary,
    [IR_KIND_RELU] = b_unary,      [IR_KIND_SCALE] = b_unary,             [IR_KIND_SWIGLU] = b_swiglu,
    [IR_KIND_ARGMAX] = b_argmax,   [IR_KIND_SOFTCAP] = b_unary,           [IR_KIND_HEAD_MATMUL] = b_head_matmul,
    [IR_KIND_L2_NORM] = b_l2_norm, [IR_KIND_CAUSAL_CONV] = b_causal_conv, [IR_KIND_DECAY] = b_decay,
    [IR_KIND_GATED_DELTA] = b_gated_delta,
};

/* The leaf hook of the bound walk. */
static int bound_leaf(void *ctx, struct ir_leaf *l)
{
    struct bctx *c = ctx;
    const struct ir_op *op = ir_leaf_op(l);
    if (op->sym == IR_SYM_VIEW || (op->sym == IR_SYM_PRIM && (op->spec.kind == IR_KIND_HEAD_SLICE ||
                                                                op->spec.kind == IR_KIND_JOIN)))
        return 1; /* a copy: bounds move as values do */
    if (op->sym == IR_SYM_QUANT)
        return b_quantize(c, l);
    if (op->sym == IR_SYM_PRIM && (unsigned)op->spec.kind < IR_KIND_COUNT && rules[op->spec.kind])
        return rules[op->spec.kind](c, l);
    return ir_leaf_fail(l, "no tolerance bound for %s", op->sym == IR_SYM_PRIM ? ir_kind_name(op->spec.kind) : "?");
}

/* The placement hook: rows placed into a cache take the cache's rounding at the write, relative to the value. */
static void bound_placed(void *ctx, ir_tid buf, float *values, int64_t n)
{
    struct bctx *c = ctx;
    if (keep_unit(c, buf) == 0.0)
        return;
    float *base = ir_values_data(c->bounds, buf);
    const float *rv = ir_values_cdata(c->ref, buf);
    if (!base || !rv)
        return;
    int64_t at = values - base;
    for (int64_t i = 0; i < n; i++)
        values[i] = (float)(values[i] + keep_error(c, buf, fabs((double)rv[at + i]) + values[i]));
}

int kernels_bounds_launch(const struct kernels_point *p, const struct ir_graph *g, int32_t op,
                          const struct ir_values *ref, struct ir_values *bounds, int64_t *ambiguous,
                          char err[IR_ERR_LEN])
{
    struct bctx c = {p, ref, bounds, g, 0};
    struct ir_eval_hooks hooks = {bound_leaf, bound_placed, &c};
    int rc = ir_eval_ops_hooked(g, &g->ops[op], 1, bounds, &hooks, err);
    *ambiguous = c.ambiguous;
    return rc;
}
