/* tests/test_eval.c — the evaluator: every op against hand-computed values on tiny shapes, placements, fused ops
 * against their parts, checkpoint rows against their dequantized values, filling and determinism. */
#include "ir/ir.h"
#include "check.h"
#include "rope_reference.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The references computed here in float keep each product and sum separately rounded, as the evaluator does. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* ── Helpers ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* Add a tensor, failing the suite if its name is taken. */
static ir_tid T(struct ir_graph *g, const char *name, enum ir_elem elem, int64_t rows, int64_t cols,
                enum ir_role role)
{
    ir_tid t = ir_tensor_add(g, name, elem, rows, cols, role);
    CHECKF(t != IR_NONE, "tensor %s", name);
    return t;
}

/* An f32 tensor. */
static ir_tid F(struct ir_graph *g, const char *name, int64_t rows, int64_t cols, enum ir_role role)
{
    return T(g, name, IR_ELEM_F32, rows, cols, role);
}

/* A primitive op of kind k writing out, reading the n tensors that follow. */
static struct ir_op P(enum ir_kind k, ir_tid out, int n, ...)
{
    ir_tid ins[12];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        ins[i] = va_arg(ap, ir_tid);
    va_end(ap);
    return ir_op_prim(k, ins, n, out);
}

/* Set tensor t's values. */
static void put(struct ir_values *v, ir_tid t, const float *x, int64_t n)
{
    float *d = ir_values_data(v, t);
    CHECK(d != NULL);
    if (d)
        memcpy(d, x, sizeof(float) * (size_t)n);
}

/* New values for g (seed 1), failing the suite on error. */
static struct ir_values *values(const struct ir_graph *g)
{
    char err[IR_ERR_LEN] = "";
    struct ir_values *v = ir_values_new(g, 1, err);
    CHECKF(v != NULL, "%s", err);
    return v;
}

/* Evaluate g over v; whether it succeeded (the error printed when not). */
static bool run(const struct ir_graph *g, struct ir_values *v)
{
    char err[IR_ERR_LEN] = "";
    int rc = ir_eval(g, v, err);
    CHECKF(rc == 0, "%s", err);
    return rc == 0;
}

/* Evaluate g over v expecting an error whose text contains `want`. */
static void run_fails(const struct ir_graph *g, struct ir_values *v, const char *want)
{
    char err[IR_ERR_LEN] = "";
    int rc = ir_eval(g, v, err);
    CHECKF(rc != 0 && strstr(err, want) != NULL, "rc %d err \"%s\" (want \"%s\")", rc, err, want);
}

/* Whether tensor t holds exactly the n values want, bit for bit. */
static void expect_exact(struct ir_values *v, ir_tid t, const float *want, int64_t n, const char *what)
{
    const float *d = ir_values_cdata(v, t);
    CHECKF(d != NULL, "%s: no values", what);
    if (!d)
        return;
    for (int64_t i = 0; i < n; i++)
        CHECKF(memcmp(&d[i], &want[i], sizeof(float)) == 0, "%s[%lld] = %.9g, want %.9g", what, (long long)i,
               (double)d[i], (double)want[i]);
}

/* Whether tensor t holds the n values want within a relative tolerance (for values computed through libm). */
static void expect_near(struct ir_values *v, ir_tid t, const double *want, int64_t n, const char *what)
{
    const float *d = ir_values_cdata(v, t);
    CHECKF(d != NULL, "%s: no values", what);
    if (!d)
        return;
    for (int64_t i = 0; i < n; i++)
        CHECKF(fabs((double)d[i] - want[i]) <= 2e-6 * (1.0 + fabs(want[i])), "%s[%lld] = %.9g, want %.9g", what,
               (long long)i, (double)d[i], want[i]);
}

/* The reference logistic function, in double. */
static double sig(double x) { return 1.0 / (1.0 + exp(-x)); }

/* The reference GELU (tanh approximation), in double. */
static double gelu(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

/* ── Matrix products and elementwise ops ─────────────────────────────────────────────────────────────────── */

/* matmul of plain values: y = x · W, exact in integers. */
static void test_matmul(void)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", 2, 3, IR_ROLE_INPUT), w = F(g, "w", 3, 2, IR_ROLE_CONSTANT), y = F(g, "y", 2, 2, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_MATMUL, y, 2, x, w);
    op.spec.u.matmul = (struct ir_matmul){2, 3, 2};
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    put(v, x, (const float[]){1, 2, 3, 4, 5, 6}, 6);
    put(v, w, (const float[]){1, -1, 0, 2, 3, 1}, 6);
    if (run(g, v))
        expect_exact(v, y, (const float[]){10, 6, 22, 12}, 4, "matmul");
    ir_values_free(v);
    ir_graph_free(g);
}

/* elementwise add/sub/mul/div, and a row broadcast. */
static void test_elementwise(void)
{
    static const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {2, 2, 4, 8, 1, -2};
    static const float want[IR_EW_COUNT][6] = {{3, 4, 7, 12, 6, 4}, {-1, 0, -1, -4, 4, 8}, {2, 4, 12, 32, 5, -12},
                                               {0.5f, 1, 0.75f, 0.5f, 5, -3}};
    for (int o = 0; o < IR_EW_COUNT; o++) {
        struct ir_graph *g = ir_graph_new();
        ir_tid ta = F(g, "a", 2, 3, IR_ROLE_INPUT), tb = F(g, "b", 2, 3, IR_ROLE_INPUT);
        ir_tid y = F(g, "y", 2, 3, IR_ROLE_ACTIVATION);
        struct ir_op op = P(IR_KIND_ELEMENTWISE, y, 2, ta, tb);
        op.spec.u.elementwise = (struct ir_elementwise){(enum ir_ewop)o, 6, 0};
        ir_graph_push(g, op);
        struct ir_values *v = values(g);
        put(v, ta, a, 6);
        put(v, tb, b, 6);
        if (run(g, v))
            expect_exact(v, y, want[o], 6, ir_ewop_name((enum ir_ewop)o));
        ir_values_free(v);
        ir_graph_free(g);
    }
    /* Row broadcast: b is one row of 3 values over both rows of a. */
    struct ir_graph *g = ir_graph_new();
    ir_tid ta = F(g, "a", 2, 3, IR_ROLE_INPUT), tb = F(g, "bias", 1, 3, IR_ROLE_CONSTANT);
    ir_tid y = F(g, "y", 2, 3, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_ELEMENTWISE, y, 2, ta, tb);
    op.spec.u.elementwise = (struct ir_elementwise){IR_EW_ADD, 6, 3};
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    put(v, ta, a, 6);
    put(v, tb, (const float[]){10, 20, 30}, 3);
    if (run(g, v))
        expect_exact(v, y, (const float[]){11, 22, 33, 14, 25, 36}, 6, "row broadcast");
    ir_values_free(v);
    ir_graph_free(g);
}

/* One rms_norm op over x (2 rows × 4), with or without weight, offset and residual; its output values. */
static void rms_case(bool weight, double offset, bool residual, const float *want, const char *what)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", 2, 4, IR_ROLE_INPUT), w = F(g, "w", 1, 4, IR_ROLE_CONSTANT);
    ir_tid r = F(g, "res", 2, 4, IR_ROLE_INPUT), y = F(g, "y", 2, 4, IR_ROLE_ACTIVATION);
    ir_tid ins[3] = {x, w, r};
    int n = 1;
    if (weight)
        ins[n++] = w;
    if (residual)
        ins[n++] = r;
    struct ir_op op = ir_op_prim(IR_KIND_RMS_NORM, ins, n, y);
    op.spec.u.rms_norm = (struct ir_rms_norm){2, 4, 0.0, weight, offset, residual, IR_NORM_RMS, false};
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    /* Row 0: every v = 2 → mean 4, 1/sqrt 0.5, so v·inv = 1. Row 1: v = ±4 → mean 16, inv 0.25. */
    put(v, x, residual ? (const float[]){1, 1, 1, 1, -2, 2, -2, 2} : (const float[]){2, 2, 2, 2, -4, 4, -4, 4}, 8);
    put(v, r, (const float[]){1, 1, 1, 1, -2, 2, -2, 2}, 8);
    put(v, w, (const float[]){1, 2, 3, 0.5f}, 4);
    if (run(g, v))
        expect_exact(v, y, want, 8, what);
    ir_values_free(v);
    ir_graph_free(g);
}

/* rms_norm: plain, weighted, with an offset, with a residual, and an offset without a weight (factor 1). */
static void test_rms_norm(void)
{
    rms_case(false, 0.0, false, (const float[]){1, 1, 1, 1, -1, 1, -1, 1}, "rms plain");
    rms_case(true, 0.0, false, (const float[]){1, 2, 3, 0.5f, -1, 2, -3, 0.5f}, "rms weight");
    rms_case(true, 1.0, false, (const float[]){2, 3, 4, 1.5f, -2, 3, -4, 1.5f}, "rms offset");
    rms_case(true, 0.0, true, (const float[]){1, 2, 3, 0.5f, -1, 2, -3, 0.5f}, "rms residual");
    rms_case(false, 1.0, false, (const float[]){1, 1, 1, 1, -1, 1, -1, 1}, "rms offset without weight");
    /* eps inside the root: v = 1 everywhere, eps = 3 → 1/sqrt(1 + 3) = 0.5. */
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", 1, 2, IR_ROLE_INPUT), y = F(g, "y", 1, 2, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_RMS_NORM, y, 1, x);
    op.spec.u.rms_norm = (struct ir_rms_norm){1, 2, 3.0, false, 0.0, false, IR_NORM_RMS, false};
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    put(v, x, (const float[]){1, -1}, 2);
    if (run(g, v))
        expect_exact(v, y, (const float[]){0.5f, -0.5f}, 2, "rms eps");
    ir_values_free(v);
    ir_graph_free(g);
}

/* ── Rotation, slices, gathers, row sets ─────────────────────────────────────────────────────────────────── */

/* A rope over 2 heads of width 6 (half 2: dims 4, 5 unchanged), rows rows, at pos; table row p rotates by
 * cos = c[p], sin = s[p] for both pairs. Returns the graph's output for x = 1..12. */
static void rope_case(int64_t rows, struct ir_rowidx pos, float posval, const float *want, const char *what)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", rows, 12 / rows, IR_ROLE_INPUT), c = F(g, "cos", 4, 2, IR_ROLE_INPUT);
    ir_tid s = F(g, "sin", 4, 2, IR_ROLE_INPUT), p = T(g, "pos", IR_ELEM_I32, 1, 1, IR_ROLE_PARAM);
    ir_tid y = F(g, "y", rows, 12 / rows, IR_ROLE_ACTIVATION);
    struct ir_op op = pos.kind == IR_RIDX_NAMED ? P(IR_KIND_ROPE, y, 4, x, c, s, p) : P(IR_KIND_ROPE, y, 3, x, c, s);
    op.spec.u.rope = (struct ir_rope){2, 6, 2, rows, pos, {false, 0.0}, false, {0}};
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    put(v, x, (const float[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 12);
    /* Row 0: identity; row 1: a quarter turn; row 2: a half turn; row 3: cos 0.5, sin 0.25. */
    put(v, c, (const float[]){1, 1, 0, 0, -1, -1, 0.5f, 0.5f}, 8);
    put(v, s, (const float[]){0, 0, 1, 1, 0, 0, 0.25f, 0.25f}, 8);
    put(v, p, &posval, 1);
    if (run(g, v))
        expect_exact(v, y, want, 12, what);
    ir_values_free(v);
    ir_graph_free(g);
}

/* rope: absent, literal (1-based) and named (0-based) positions, one row and two rows. */
static void test_rope(void)
{
    static const float ident[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    /* Quarter turn: (x0, x1) → (−x1, x0) on pairs (0, 2), (1, 3). */
    static const float quarter[] = {-3, -4, 1, 2, 5, 6, -9, -10, 7, 8, 11, 12};
    static const float half[] = {-1, -2, -3, -4, 5, 6, -7, -8, -9, -10, 11, 12};
    struct ir_rowidx none = {IR_RIDX_NONE, 0}, named = {IR_RIDX_NAMED, 0};
    rope_case(1, none, 0, ident, "rope absent");
    rope_case(1, (struct ir_rowidx){IR_RIDX_LITERAL, 2}, 0, quarter, "rope literal 2");
    rope_case(1, named, 1, quarter, "rope named 1");
    rope_case(1, named, 2, half, "rope named 2");
    /* Two rows, one head each: row 0 at p, row 1 at p + 1. */
    static const float mixed[] = {-3, -4, 1, 2, 5, 6, -7, -8, -9, -10, 11, 12};
    rope_case(2, named, 1, mixed, "rope two rows");
    rope_case(2, (struct ir_rowidx){IR_RIDX_LITERAL, 2}, 0, mixed, "rope two rows literal");
    /* cos 0.5, sin 0.25: y0 = 0.5·x0 − 0.25·x1, y1 = 0.25·x0 + 0.5·x1. */
    static const float frac[] = {-0.25f, 0, 1.75f, 2.5f, 5, 6, 1.25f, 1.5f, 6.25f, 7, 11, 12};
    rope_case(1, named, 3, frac, "rope fraction");
}

/* ── The published formulas: rotations, LayerNorm, RMS norm ──────────────────────────────────────────────── */

/* The angle llama.cpp turns pair i of a rotation of n_dims values by at position pos: pos · base^(−2i/n_dims). */
static double published_theta(int64_t pos, int64_t i, int64_t n_dims, double base)
{
    return (double)pos * pow(base, -2.0 * (double)i / (double)n_dims);
}

/* One head x (hd values, the first 2·half rotated, half ≤ 64) turned as the published models do by pair i's angle
 * θ_i = theta[i], cos and sin times mag, into y. NeoX (HF's rotate_half): y = x·cos + rotate_half(x)·sin, with
 * rotate_half(x) = (−x[half..2·half), x[0..half)) and cos, sin of θ_(j mod half). Adjacent (GPT-J, llama.cpp's NORM
 * rope): (y[2i], y[2i+1]) = (x[2i]cos θ_i − x[2i+1]sin θ_i, x[2i]sin θ_i + x[2i+1]cos θ_i). The rest of the head
 * unchanged. */
static void published_turn(const float *x, int64_t hd, int64_t half, const double *theta, double mag, bool adjacent,
                           double *y)
{
    for (int64_t j = 0; j < hd; j++)
        y[j] = x[j];
    if (adjacent) {
        for (int64_t i = 0; i < half; i++) {
            double c = mag * cos(theta[i]), s = mag * sin(theta[i]);
            y[2 * i] = x[2 * i] * c - x[2 * i + 1] * s;
            y[2 * i + 1] = x[2 * i] * s + x[2 * i + 1] * c;
        }
        return;
    }
    for (int64_t j = 0; j < 2 * half; j++) {
        double rot = j < half ? -(double)x[j + half] : (double)x[j - half];
        y[j] = x[j] * mag * cos(theta[j % half]) + rot * mag * sin(theta[j % half]);
    }
}

/* One head x (hd values, the first n_dims ≤ 128 rotated) turned at pos by base's unscaled angles (published_theta) as
 * the published models do (published_turn), into y. */
static void published_rope(const float *x, int64_t hd, int64_t n_dims, int64_t pos, double base, bool adjacent,
                           double *y)
{
    double theta[64];
    for (int64_t i = 0; i < n_dims / 2 && i < 64; i++)
        theta[i] = published_theta(pos, i, n_dims, base);
    published_turn(x, hd, n_dims / 2, theta, 1.0, adjacent, y);
}

/* A rope over h heads of hd at a named position pos, its tables (ctx rows) filled by the evaluator for base (theta
 * absent when base is 0: the default 10000), against the published rotation; the largest difference from the other
 * pairing's rotation in *other (so a caller can see the pairing matters). */
static void published_rope_case(int64_t h, int64_t hd, int64_t half, int64_t pos, double base, bool adjacent,
                                double *other)
{
    char what[96];
    snprintf(what, sizeof what, "rope %s h=%lld hd=%lld half=%lld pos=%lld base=%g", adjacent ? "adjacent" : "neox",
             (long long)h, (long long)hd, (long long)half, (long long)pos, base);
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", 1, h * hd, IR_ROLE_INPUT), c = F(g, "rope.cos", 40, half, IR_ROLE_CONSTANT);
    ir_tid sn = F(g, "rope.sin", 40, half, IR_ROLE_CONSTANT), p = T(g, "pos", IR_ELEM_I32, 1, 1, IR_ROLE_PARAM);
    ir_tid y = F(g, "y", 1, h * hd, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_ROPE, y, 4, x, c, sn, p);
    op.spec.u.rope = (struct ir_rope){h, hd, half, 1, {IR_RIDX_NAMED, 0}, {base > 0, base}, adjacent, {0}};
    ir_graph_push(g, op);
    char err[IR_ERR_LEN] = "";
    CHECKF(ir_validate(g, err) == 0, "%s: %s", what, err);
    struct ir_values *v = values(g);
    float posv = (float)pos;
    put(v, p, &posv, 1);
    const float *xv = ir_values_cdata(v, x);
    double *want = malloc(sizeof(double) * (size_t)(2 * h * hd));
    double *wrong = want ? want + h * hd : NULL;
    if (want && xv && run(g, v)) {
        double b = base > 0 ? base : 10000.0;
        for (int64_t k = 0; k < h; k++) {
            published_rope(xv + k * hd, hd, 2 * half, pos, b, adjacent, want + k * hd);
            published_rope(xv + k * hd, hd, 2 * half, pos, b, !adjacent, wrong + k * hd);
        }
        expect_near(v, y, want, h * hd, what);
        const float *got = ir_values_cdata(v, y);
        *other = 0;
        for (int64_t k = 0; got && k < h * hd; k++)
            *other = fmax(*other, fabs((double)got[k] - wrong[k]));
    }
    free(want);
    ir_values_free(v);
    ir_graph_free(g);
}

/* rope against the published rotations: NeoX and adjacent pairs, whole and partial heads, several positions and
 * bases (the evaluator fills the tables from the op's theta); each pairing far from the other's result. */
static void test_rope_published(void)
{
    static const double bases[] = {0, 10000, 500000, 1e6, 1e7};
    static const int64_t positions[] = {0, 1, 7, 23, 39};
    for (int adjacent = 0; adjacent < 2; adjacent++)
        for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++)
            for (size_t k = 0; k < sizeof positions / sizeof positions[0]; k++) {
                double other = 0;
                published_rope_case(3, 16, 8, positions[k], bases[b], adjacent, &other);
                CHECKF(positions[k] == 0 || other > 1e-3, "rope: the other pairing is as close (%g)", other);
                published_rope_case(2, 12, 2, positions[k], bases[b], adjacent, &other); /* a third rotated */
            }
    /* The base reaches the tables: two bases, two sets of angles. */
    struct ir_graph *g = ir_graph_new();
    ir_tid c1 = F(g, "c1", 8, 4, IR_ROLE_CONSTANT), s1 = F(g, "s1", 8, 4, IR_ROLE_CONSTANT);
    ir_tid c2 = F(g, "c2", 8, 4, IR_ROLE_CONSTANT), s2 = F(g, "s2", 8, 4, IR_ROLE_CONSTANT);
    ir_tid x = F(g, "x", 1, 8, IR_ROLE_INPUT), y1 = F(g, "y1", 1, 8, IR_ROLE_ACTIVATION);
    ir_tid y2 = F(g, "y2", 1, 8, IR_ROLE_ACTIVATION);
    struct ir_op a = P(IR_KIND_ROPE, y1, 3, x, c1, s1), b = P(IR_KIND_ROPE, y2, 3, x, c2, s2);
    a.spec.u.rope = (struct ir_rope){1, 8, 4, 1, {IR_RIDX_LITERAL, 6}, {true, 10000}, false, {0}};
    b.spec.u.rope = (struct ir_rope){1, 8, 4, 1, {IR_RIDX_LITERAL, 6}, {true, 1e6}, false, {0}};
    ir_graph_push(g, a);
    ir_graph_push(g, b);
    struct ir_values *v = values(g);
    const float *t1 = ir_values_cdata(v, c1), *t2 = ir_values_cdata(v, c2);
    CHECK(t1 && t2 && t1[5 * 4 + 3] == (float)cos(5.0 * pow(10000.0, -0.75)) &&
          t2[5 * 4 + 3] == (float)cos(5.0 * pow(1e6, -0.75)) && t1[5 * 4 + 3] != t2[5 * 4 + 3]);
    ir_values_free(v);
    ir_graph_free(g);
}

/* A scaled rope to check: h heads of hd, half pairs, tables of `rows` rows at base, its scaling, and the positions
 * (each past 0, where a scaling turns the pairs by other angles) it is evaluated at, up to five. */
struct scaled_case {
    const char *name;
    int64_t h, hd, half, rows;
    double base;
    struct ir_rope_scaling s;
    int64_t pos[5];
};

/* The largest difference of a case's cos and sin tables c, sn (rows × half) from the published angles p · ω_i at its
 * scaling's frequencies, cos and sin times its attention factor (tests/rope_reference.h). */
static double scaled_table_error(const struct scaled_case *k, const float *c, const float *sn)
{
    double worst = 0, f = ref_attention_factor(&k->s);
    for (int64_t i = 0; c && sn && i < k->half; i++) {
        double w = ref_scaled_freq(&k->s, k->base, (int)k->half, (int)i);
        for (int64_t p = 0; p < k->rows; p++) {
            worst = fmax(worst, fabs((double)c[p * k->half + i] - f * cos((double)p * w)));
            worst = fmax(worst, fabs((double)sn[p * k->half + i] - f * sin((double)p * w)));
        }
    }
    return c && sn ? worst : INFINITY;
}

/* A graph of case k's rope (NeoX or adjacent pairs) at a named position: x, rope.cos, rope.sin, pos into y. */
static struct ir_graph *scaled_graph(const struct scaled_case *k, bool adjacent)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", 1, k->h * k->hd, IR_ROLE_INPUT), c = F(g, "rope.cos", k->rows, k->half, IR_ROLE_CONSTANT);
    ir_tid sn = F(g, "rope.sin", k->rows, k->half, IR_ROLE_CONSTANT);
    ir_tid p = T(g, "pos", IR_ELEM_I32, 1, 1, IR_ROLE_PARAM), y = F(g, "y", 1, k->h * k->hd, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_ROPE, y, 4, x, c, sn, p);
    op.spec.u.rope = (struct ir_rope){k->h, k->hd, k->half, 1, {IR_RIDX_NAMED, 0}, {true, k->base}, adjacent, k->s};
    ir_graph_push(g, op);
    char err[IR_ERR_LEN] = "";
    CHECKF(ir_validate(g, err) == 0, "%s: %s", k->name, err);
    return g;
}

/* Case k with NeoX or adjacent pairs: the evaluator's tables, every row, within 2e-7 (a float's rounding of values
 * near 1) of the published scaled ones, and at each of its positions the rope's output against the published
 * rotation by those angles and factor; the smallest, over the positions, of the output's largest difference from the
 * unscaled rotation (the plain angles, factor 1) returned, so a caller can see the scaling matters at every
 * position. */
static double scaled_rope_case(const struct scaled_case *k, bool adjacent)
{
    struct ir_graph *g = scaled_graph(k, adjacent);
    struct ir_values *v = values(g);
    ir_tid x = ir_tensor_find(g, "x", 1), p = ir_tensor_find(g, "pos", 3), y = ir_tensor_find(g, "y", 1);
    double err = scaled_table_error(k, ir_values_cdata(v, ir_tensor_find(g, "rope.cos", 8)),
                                    ir_values_cdata(v, ir_tensor_find(g, "rope.sin", 8)));
    CHECKF(err < 2e-7, "%s: the tables differ from the published scaled angles by %g", k->name, err);
    const float *xv = ir_values_cdata(v, x);
    double *want = malloc(sizeof(double) * (size_t)(2 * k->h * k->hd)), theta[64], nearest = INFINITY;
    double *plain = want ? want + k->h * k->hd : NULL;
    for (int j = 0; j < 5 && k->pos[j] > 0 && want && xv; j++) {
        char what[96];
        snprintf(what, sizeof what, "%s %s pos=%lld", k->name, adjacent ? "adjacent" : "neox", (long long)k->pos[j]);
        float posv = (float)k->pos[j];
        put(v, p, &posv, 1);
        if (!run(g, v))
            break;
        for (int64_t i = 0; i < k->half && i < 64; i++)
            theta[i] = (double)k->pos[j] * ref_scaled_freq(&k->s, k->base, (int)k->half, (int)i);
        for (int64_t h = 0; h < k->h; h++) {
            published_turn(xv + h * k->hd, k->hd, k->half, theta, ref_attention_factor(&k->s), adjacent,
                           want + h * k->hd);
            published_rope(xv + h * k->hd, k->hd, 2 * k->half, k->pos[j], k->base, adjacent, plain + h * k->hd);
        }
        expect_near(v, y, want, k->h * k->hd, what);
        const float *got = ir_values_cdata(v, y);
        double far = 0;
        for (int64_t i = 0; got && i < k->h * k->hd; i++)
            far = fmax(far, fabs((double)got[i] - plain[i]));
        nearest = fmin(nearest, far);
    }
    free(want);
    ir_values_free(v);
    ir_graph_free(g);
    return nearest;
}

/* With the evaluator's rope_base fault planted (tables filled at base 10000 whatever the rope's theta), case k's
 * tables (its base not 10000) are far from the published scaled ones; unplanted again, they match. */
static void scaled_rope_planted(const struct scaled_case *k)
{
    struct ir_graph *g = scaled_graph(k, false);
    CHECK(ir_eval_plant("rope_base") == 0);
    struct ir_values *v = values(g);
    ir_eval_plant(NULL);
    double err = scaled_table_error(k, ir_values_cdata(v, ir_tensor_find(g, "rope.cos", 8)),
                                    ir_values_cdata(v, ir_tensor_find(g, "rope.sin", 8)));
    CHECKF(err > 1e-2, "%s: planted rope_base, the scaled tables are within %g of the published ones", k->name, err);
    ir_values_free(v);
    v = values(g);
    err = scaled_table_error(k, ir_values_cdata(v, ir_tensor_find(g, "rope.cos", 8)),
                             ir_values_cdata(v, ir_tensor_find(g, "rope.sin", 8)));
    CHECKF(err < 2e-7, "%s: unplanted, the tables differ by %g", k->name, err);
    ir_values_free(v);
    ir_graph_free(g);
}

/* Scaled ropes against the published scalings (tests/rope_reference.h, apart from ir_rope_frequency): linear,
 * llama3 and YaRN (truncated and not, with and without an attention factor, default and given betas, a correction
 * range that collapses to one pair, one cut at the last index), NeoX and adjacent, whole and partial heads, at positions up to a published
 * model's context (llama3.2-1b's llama3 band; gpt-oss-20b's YaRN, past its original context); each far from the
 * unscaled rotation at every position, and each with a base other than 10000 wrong under the planted fault. */
static void test_rope_scaled(void)
{
    const double tiny_m = 1 + 0.1 * log(4.0), oss_m = 1.3465735902799727;
    const struct ir_rope_scaling linear2 = {.kind = IR_ROPESCALE_LINEAR, .factor = {true, 2}};
    const struct ir_rope_scaling linear4 = {.kind = IR_ROPESCALE_LINEAR, .factor = {true, 4}};
    const struct ir_rope_scaling l3 = {.kind = IR_ROPESCALE_LLAMA3, .factor = {true, 8}, .orig = 256,
                                       .low_freq = {true, 1}, .high_freq = {true, 4}};
    const struct ir_rope_scaling l3_1b = {.kind = IR_ROPESCALE_LLAMA3, .factor = {true, 32}, .orig = 8192,
                                          .low_freq = {true, 1}, .high_freq = {true, 4}};
    const struct ir_rope_scaling ytrunc = {.kind = IR_ROPESCALE_YARN, .factor = {true, 4}, .orig = 2048,
                                           .truncate = true, .magnitude = {true, tiny_m}};
    const struct ir_rope_scaling yplain = {.kind = IR_ROPESCALE_YARN, .factor = {true, 8}, .orig = 1024,
                                           .beta_fast = {true, 16}, .beta_slow = {true, 2}};
    const struct ir_rope_scaling ycollapse = {.kind = IR_ROPESCALE_YARN, .factor = {true, 2}, .orig = 4,
                                              .truncate = true};
    /* betas 64 and 0.5 at base 100 over 11000: the range from pair 2.87 to 7.09, past the last index 7 */
    const struct ir_rope_scaling ywide = {.kind = IR_ROPESCALE_YARN, .factor = {true, 4}, .orig = 11000,
                                          .beta_fast = {true, 64}, .beta_slow = {true, 0.5}};
    const struct ir_rope_scaling yoss = {.kind = IR_ROPESCALE_YARN, .factor = {true, 32}, .orig = 4096,
                                         .beta_fast = {true, 32}, .beta_slow = {true, 1}, .magnitude = {true, oss_m}};
    const struct scaled_case cases[] = {
        {"linear 2", 3, 16, 8, 40, 10000, linear2, {1, 7, 23, 39}},
        {"linear 4, a third rotated", 2, 12, 2, 40, 1e6, linear4, {1, 7, 23, 39}},
        {"llama3 8 over 256", 2, 16, 8, 300, 500000, l3, {1, 30, 150, 299}},
        {"llama3.2-1b", 2, 64, 32, 8192, 500000, l3_1b, {7, 100, 2048, 5000, 8191}},
        {"yarn 4 over 2048 truncated, factor", 2, 16, 8, 64, 10000, ytrunc, {1, 9, 40, 63}},
        {"yarn 8 over 1024, betas 16 and 2", 3, 20, 8, 64, 50000, yplain, {1, 9, 40, 63}},
        {"yarn 2 over 4, one pair's range", 1, 8, 4, 16, 10000, ycollapse, {1, 5, 15}},
        {"yarn 4 over 11000, its range held to the last index", 2, 8, 4, 64, 100, ywide, {20, 40, 63}},
        {"gpt-oss-20b", 2, 64, 32, 8192, 150000, yoss, {1, 100, 4095, 6000, 8191}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int adjacent = 0; adjacent < 2; adjacent++) {
            double far = scaled_rope_case(&cases[i], adjacent);
            CHECKF(far > 1e-3, "%s: the scaled rotation within %g of the unscaled one", cases[i].name, far);
        }
        if (cases[i].base != 10000)
            scaled_rope_planted(&cases[i]);
    }
}

/* One norm op of kind over x (rows × cols, seeded values; residual, weight and bias as asked) against the published
 * formula in double: v = x (+ res); LayerNorm d = v − mean(v), RMS d = v; y = d / sqrt(mean(d²) + eps) · (w + off)
 * (+ b). */
static void published_norm_case(enum ir_normkind kind, bool weight, double off, bool residual, bool bias)
{
    char what[96];
    snprintf(what, sizeof what, "%s norm weight=%d offset=%g residual=%d bias=%d", ir_normkind_name(kind), weight,
             off, residual, bias);
    enum { R = 3, C = 24 };
    const double eps = 1e-5;
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", R, C, IR_ROLE_INPUT), w = F(g, "w", 1, C, IR_ROLE_CONSTANT);
    ir_tid r = F(g, "res", R, C, IR_ROLE_INPUT), b = F(g, "b", 1, C, IR_ROLE_CONSTANT);
    ir_tid y = F(g, "y", R, C, IR_ROLE_ACTIVATION);
    ir_tid ins[4] = {x};
    int n = 1;
    if (weight)
        ins[n++] = w;
    if (residual)
        ins[n++] = r;
    if (bias)
        ins[n++] = b;
    struct ir_op op = ir_op_prim(IR_KIND_RMS_NORM, ins, n, y);
    op.spec.u.rms_norm = (struct ir_rms_norm){R, C, eps, weight, off, residual, kind, bias};
    ir_graph_push(g, op);
    char err[IR_ERR_LEN] = "";
    CHECKF(ir_validate(g, err) == 0, "%s: %s", what, err);
    struct ir_values *v = values(g);
    float *xv = ir_values_data(v, x);
    for (int i = 0; xv && i < R * C; i++)
        xv[i] = xv[i] * 3.0f + 2.0f; /* off centre: a mean a LayerNorm must take away */
    const float *rv = ir_values_cdata(v, r), *wv = ir_values_cdata(v, w), *bv = ir_values_cdata(v, b);
    double want[R * C];
    for (int row = 0; xv && rv && wv && bv && row < R; row++) {
        double vv[C], mean = 0, ss = 0;
        for (int j = 0; j < C; j++) {
            vv[j] = xv[row * C + j] + (residual ? (double)rv[row * C + j] : 0.0);
            mean += vv[j] / C;
        }
        if (kind == IR_NORM_RMS)
            mean = 0;
        for (int j = 0; j < C; j++)
            ss += (vv[j] - mean) * (vv[j] - mean);
        double inv = 1 / sqrt(ss / C + eps);
        for (int j = 0; j < C; j++)
            want[row * C + j] = (vv[j] - mean) * inv * (weight ? wv[j] + off : 1.0) + (bias ? bv[j] : 0.0);
    }
    if (run(g, v))
        expect_near(v, y, want, R * C, what);
    ir_values_free(v);
    ir_graph_free(g);
}

/* rms_norm of kind layer and rms, with and without weight, offset, residual and bias, against the published formulas;
 * and a layer norm exact on a small row: x = (1, 3, 1, 3): mean 2, d = ±1, var 1, eps 3 → d·0.5·w + b. */
static void test_norm_published(void)
{
    for (int kind = 0; kind < IR_NORM_COUNT; kind++)
        for (int mask = 0; mask < 16; mask++)
            published_norm_case((enum ir_normkind)kind, mask & 1, mask & 2 ? 1.0 : 0.0, mask & 4, mask & 8);
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", 1, 4, IR_ROLE_INPUT), w = F(g, "w", 1, 4, IR_ROLE_CONSTANT);
    ir_tid b = F(g, "b", 1, 4, IR_ROLE_CONSTANT), y = F(g, "y", 1, 4, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_RMS_NORM, y, 3, x, w, b);
    op.spec.u.rms_norm = (struct ir_rms_norm){1, 4, 3.0, true, 0.0, false, IR_NORM_LAYER, true};
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    put(v, x, (const float[]){1, 3, 1, 3}, 4);
    put(v, w, (const float[]){2, 2, 4, 1}, 4);
    put(v, b, (const float[]){1, 1, 0.5f, -1}, 4);
    if (run(g, v))
        expect_exact(v, y, (const float[]){0, 2, -1.5f, -0.5f}, 4, "layer norm exact");
    ir_values_free(v);
    ir_graph_free(g);
}

/* head_slice: the middle two of every four values. */
static void test_head_slice(void)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", 1, 8, IR_ROLE_INPUT), y = F(g, "y", 1, 4, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_HEAD_SLICE, y, 1, x);
    op.spec.u.head_slice = (struct ir_head_slice){8, 4, 1, 2};
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    put(v, x, (const float[]){0, 1, 2, 3, 4, 5, 6, 7}, 8);
    if (run(g, v))
        expect_exact(v, y, (const float[]){1, 2, 5, 6}, 4, "head_slice");
    ir_values_free(v);
    ir_graph_free(g);
}

/* row_gather with a literal (1-based) and a named (0-based) index; rows_gather of 0-based indices. */
static void test_gathers(void)
{
    static const float table[] = {0, 1, 10, 11, 20, 21};
    for (int named = 0; named < 2; named++) {
        struct ir_graph *g = ir_graph_new();
        ir_tid t = F(g, "table", 3, 2, IR_ROLE_CONSTANT), i = T(g, "tok", IR_ELEM_I32, 1, 1, IR_ROLE_INPUT);
        ir_tid y = F(g, "y", 1, 2, IR_ROLE_ACTIVATION);
        struct ir_op op = named ? P(IR_KIND_ROW_GATHER, y, 2, t, i) : P(IR_KIND_ROW_GATHER, y, 1, t);
        op.spec.u.row_gather = (struct ir_row_gather){3, 2, {named ? IR_RIDX_NAMED : IR_RIDX_LITERAL, 2}};
        ir_graph_push(g, op);
        struct ir_values *v = values(g);
        put(v, t, table, 6);
        put(v, i, (const float[]){2}, 1);
        if (run(g, v))
            expect_exact(v, y, named ? table + 4 : table + 2, 2, named ? "row_gather named" : "row_gather literal");
        ir_values_free(v);
        ir_graph_free(g);
    }
    struct ir_graph *g = ir_graph_new();
    ir_tid t = F(g, "table", 3, 2, IR_ROLE_CONSTANT), i = T(g, "toks", IR_ELEM_I32, 1, 3, IR_ROLE_INPUT);
    ir_tid y = F(g, "y", 3, 2, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_ROWS_GATHER, y, 2, t, i);
    op.spec.u.rows_gather = (struct ir_rows_gather){3, 2, 3};
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    put(v, t, table, 6);
    put(v, i, (const float[]){2, 0, 2}, 3);
    if (run(g, v))
        expect_exact(v, y, (const float[]){20, 21, 0, 1, 20, 21}, 6, "rows_gather");
    /* An index past the table is an error, not a crash. */
    put(v, i, (const float[]){3, 0, 0}, 3);
    run_fails(g, v, "row 3 is not an integer in [0, 2]");
    put(v, i, (const float[]){0.5f, 0, 0}, 3);
    run_fails(g, v, "not an integer");
    ir_values_free(v);
    ir_graph_free(g);
}

/* set_row: two rows written in place at a literal (1-based) or named (0-based) row. */
static void test_set_row(void)
{
    for (int named = 0; named < 2; named++) {
        struct ir_graph *g = ir_graph_new();
        ir_tid t = F(g, "cache", 4, 2, IR_ROLE_STATE), s = F(g, "src", 2, 2, IR_ROLE_INPUT);
        ir_tid i = T(g, "at", IR_ELEM_I32, 1, 1, IR_ROLE_PARAM);
        struct ir_op op = named ? P(IR_KIND_SET_ROW, t, 3, t, s, i) : P(IR_KIND_SET_ROW, t, 2, t, s);
        op.spec.u.set_row = (struct ir_set_row){4, 2, 2, {named ? IR_RIDX_NAMED : IR_RIDX_LITERAL, 2}};
        ir_graph_push(g, op);
        struct ir_values *v = values(g);
        put(v, t, (const float[]){0, 0, 1, 1, 2, 2, 3, 3}, 8);
        put(v, s, (const float[]){7, 8, 9, 10}, 4);
        put(v, i, (const float[]){2}, 1);
        const float lit[] = {0, 0, 7, 8, 9, 10, 3, 3}, nam[] = {0, 0, 1, 1, 7, 8, 9, 10};
        if (run(g, v))
            expect_exact(v, t, named ? nam : lit, 8, named ? "set_row named" : "set_row literal");
        if (named) {
            put(v, i, (const float[]){3}, 1); /* 3 + 2 rows > 4 */
            run_fails(g, v, "row 3 is not an integer in [0, 2]");
        }
        ir_values_free(v);
        ir_graph_free(g);
    }
}

/* ── Attention ───────────────────────────────────────────────────────────────────────────────────────────── */

/* An attention case: h heads over kv kv-heads, hd = 2, vd = 1, l = 4 cache rows, `rows` query rows. */
struct att_case {
    int64_t h, kv, rows, window;
    struct ir_rowidx pos;
    float posval;
    struct ir_optf scale, softcap;
    bool sinks;
    const float *q, *k, *v, *sink;
};

/* Evaluate one attention case; its output (rows·h values) into out. Returns whether it ran. */
static bool att_run(const struct att_case *c, float *out)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid q = F(g, "q", c->rows, c->h * 2, IR_ROLE_INPUT), k = F(g, "k", 4, c->kv * 2, IR_ROLE_STATE);
    ir_tid vv = F(g, "v", 4, c->kv, IR_ROLE_STATE), p = T(g, "pos", IR_ELEM_I32, 1, 1, IR_ROLE_PARAM);
    ir_tid sk = F(g, "sinks", 1, c->h, IR_ROLE_CONSTANT), y = F(g, "y", c->rows, c->h, IR_ROLE_ACTIVATION);
    ir_tid ins[5] = {q, k, vv};
    int n = 3;
    if (c->pos.kind == IR_RIDX_NAMED)
        ins[n++] = p;
    if (c->sinks)
        ins[n++] = sk;
    struct ir_op op = ir_op_prim(IR_KIND_ATTENTION, ins, n, y);
    op.spec.u.attention = (struct ir_attention){c->h, c->kv, 2, 1, 4, c->rows, c->pos, c->scale, c->softcap, c->sinks,
                                                c->window};
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    put(v, q, c->q, c->rows * c->h * 2);
    put(v, k, c->k, 4 * c->kv * 2);
    put(v, vv, c->v, 4 * c->kv);
    put(v, p, &c->posval, 1);
    if (c->sinks)
        put(v, sk, c->sink, c->h);
    bool ok = run(g, v);
    if (ok)
        memcpy(out, ir_values_cdata(v, y), sizeof(float) * (size_t)(c->rows * c->h));
    ir_values_free(v);
    ir_graph_free(g);
    return ok;
}

/* attention: uniform weights, masks, windows, sinks, soft cap, scale, grouped heads, several rows. */
static void test_attention(void)
{
    static const float zq[8] = {0}, zk[8] = {0}, vals[4] = {1, 2, 4, 8};
    struct ir_rowidx lit2 = {IR_RIDX_LITERAL, 2}, named = {IR_RIDX_NAMED, 0};
    struct ir_optf none = {false, 0};
    float out[8];
    /* Equal logits: the mean of the attended values. Position 1 (literal 2) attends rows 0, 1. */
    struct att_case c = {1, 1, 1, 0, lit2, 0, none, none, false, zq, zk, vals, NULL};
    if (att_run(&c, out))
        CHECKF(out[0] == 1.5f, "uniform over two rows: %g", (double)out[0]);
    /* Named position 3: all four rows. */
    c.pos = named;
    c.posval = 3;
    if (att_run(&c, out))
        CHECKF(out[0] == 3.75f, "uniform over four rows: %g", (double)out[0]);
    /* Window 1: only the row at the position. */
    c.window = 1;
    if (att_run(&c, out))
        CHECKF(out[0] == 8.0f, "window 1: %g", (double)out[0]);
    /* Window 2 at position 3: rows 2, 3. */
    c.window = 2;
    if (att_run(&c, out))
        CHECKF(out[0] == 6.0f, "window 2: %g", (double)out[0]);
    /* Position 0 masks every row but the first. */
    c.window = 0;
    c.posval = 0;
    if (att_run(&c, out))
        CHECKF(out[0] == 1.0f, "all masked but one: %g", (double)out[0]);
    /* A sink of logit 0 adds e^0 to the denominator only: (1 + 2) / 3. */
    static const float sink0[2] = {0, 0};
    c.posval = 1;
    c.sinks = true;
    c.sink = sink0;
    if (att_run(&c, out))
        CHECKF(out[0] == 1.0f, "sink: %g", (double)out[0]);
    c.sinks = false;
    /* No row attendable (position 9 with window 2 of 4 rows): zeros. */
    c.posval = 9;
    c.window = 2;
    if (att_run(&c, out))
        CHECKF(out[0] == 0.0f, "nothing attendable: %g", (double)out[0]);
    c.window = 0;
    /* Real logits: q = (1, 2), keys row j = (j, 1): logit_j = scale·(j + 2); soft cap and scale by formula. */
    static const float q1[2] = {1, 2}, ks[8] = {0, 1, 1, 1, 2, 1, 3, 1};
    static const float sinkv[1] = {0.5f};
    for (int variant = 0; variant < 4; variant++) {
        struct att_case d = {1, 1, 1, 0, named, 3, none, none, false, q1, ks, vals, sinkv};
        double scale = 1.0 / sqrt(2.0), cap = 0;
        if (variant == 1) {
            d.scale = (struct ir_optf){true, 0.25};
            scale = 0.25;
        }
        if (variant == 2) {
            d.softcap = (struct ir_optf){true, 2.0};
            cap = 2.0;
        }
        if (variant == 3)
            d.sinks = true;
        double lg[4], m = -1e30, den = 0, num = 0;
        for (int j = 0; j < 4; j++) {
            lg[j] = scale * (j + 2);
            if (cap)
                lg[j] = cap * tanh(lg[j] / cap);
            m = lg[j] > m ? lg[j] : m;
        }
        if (d.sinks && 0.5 > m)
            m = 0.5;
        for (int j = 0; j < 4; j++) {
            den += exp(lg[j] - m);
            num += exp(lg[j] - m) * vals[j];
        }
        if (d.sinks)
            den += exp(0.5 - m);
        double want = num / den;
        if (att_run(&d, out))
            CHECKF(fabs(out[0] - want) < 1e-5, "attention variant %d: %.9g want %.9g", variant, (double)out[0],
                   want);
    }
    /* Grouped heads (h 2 over kv 1) and two query rows at named position 2: rows r attend j ≤ 2 + r. Head 0 of each
     * row has q 0 (uniform); head 1 has q (0, 0) too but reads the same kv head. */
    static const float q2[8] = {0};
    struct att_case e = {2, 1, 2, 0, named, 2, none, none, false, q2, zk, vals, NULL};
    if (att_run(&e, out)) {
        CHECKF(out[0] == 7.0f / 3.0f && out[1] == 7.0f / 3.0f, "row 0: %g %g", (double)out[0], (double)out[1]);
        CHECKF(out[2] == 3.75f && out[3] == 3.75f, "row 1: %g %g", (double)out[2], (double)out[3]);
    }
    /* Two kv heads: head g reads kv head g. kv head 1's values are the negatives. */
    static const float v2[8] = {1, -1, 2, -2, 4, -4, 8, -8}, k2[16] = {0};
    struct att_case f = {2, 2, 1, 0, lit2, 0, none, none, false, q2, k2, v2, NULL};
    if (att_run(&f, out))
        CHECKF(out[0] == 1.5f && out[1] == -1.5f, "two kv heads: %g %g", (double)out[0], (double)out[1]);
}

/* attention reading its values strided from a wider latent cache (pitch 3, offset 2, width 1). */
static void test_attention_strided_values(void)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid q = F(g, "q", 1, 2, IR_ROLE_INPUT), k = F(g, "k", 4, 2, IR_ROLE_STATE);
    ir_tid lat = F(g, "latent", 4, 3, IR_ROLE_STATE), y = F(g, "y", 1, 1, IR_ROLE_ACTIVATION);
    struct ir_access acc[3] = {{false, {0, 0, 0}}, {false, {0, 0, 0}}, {true, {3, 2, 1}}};
    struct ir_op op = P(IR_KIND_ATTENTION, y, 3, q, k, lat);
    ir_op_set_ins(&op, (const ir_tid[]){q, k, lat}, acc, 3);
    op.spec.u.attention = (struct ir_attention){1, 1, 2, 1, 4, 1, {IR_RIDX_LITERAL, 4}, {false, 0}, {false, 0},
                                                false, 0};
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    put(v, q, (const float[]){0, 0}, 2);
    put(v, lat, (const float[]){9, 9, 1, 9, 9, 2, 9, 9, 4, 9, 9, 8}, 12);
    if (run(g, v))
        expect_exact(v, y, (const float[]){3.75f}, 1, "strided values");
    ir_values_free(v);
    ir_graph_free(g);
}

/* ── Mixture of experts ──────────────────────────────────────────────────────────────────────────────────── */

/* One mixture over d = 2, 3 experts of dff 1, top-2: its output for router weights R. */
static bool moe_run(const float *router, enum ir_moeact act, float *out)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", 1, 2, IR_ROLE_INPUT), r = F(g, "router", 2, 3, IR_ROLE_CONSTANT);
    ir_tid gt = F(g, "gate", 2, 3, IR_ROLE_CONSTANT), up = F(g, "up", 2, 3, IR_ROLE_CONSTANT);
    ir_tid dn = F(g, "down", 1, 6, IR_ROLE_CONSTANT), y = F(g, "y", 1, 2, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_MOE, y, 5, x, r, gt, up, dn);
    op.spec.u.moe = (struct ir_moe){.d = 2, .k = 2, .dff = 1, .experts = 3, .act = act};
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    put(v, x, (const float[]){1, 0}, 2);
    put(v, r, router, 6);
    /* Expert e's gate = 1 + e, up = 2 (x = (1, 0) reads row 0); its down row: (e+1, -(e+1)), expert 2's huge. */
    put(v, gt, (const float[]){1, 2, 3, 0, 0, 0}, 6);
    put(v, up, (const float[]){2, 2, 2, 0, 0, 0}, 6);
    put(v, dn, (const float[]){1, -1, 2, -2, 1000, -1000}, 6);
    bool ok = run(g, v);
    if (ok)
        memcpy(out, ir_values_cdata(v, y), sizeof out[0] * 2);
    ir_values_free(v);
    ir_graph_free(g);
    return ok;
}

/* moe: ties pick the lower experts, renormalised weights, swiglu and geglu; a clear winner pair. */
static void test_moe(void)
{
    float out[2];
    /* Equal logits: experts 0 and 1 (not 2), weights 1/2 each. */
    static const float tie[6] = {0, 0, 0, 0, 0, 0};
    double h0 = 2.0 * 1.0 * sig(1.0), h1 = 2.0 * 2.0 * sig(2.0);
    if (moe_run(tie, IR_MOE_SWIGLU, out)) {
        double want = 0.5 * h0 * 1 + 0.5 * h1 * 2;
        CHECKF(fabs(out[0] - want) < 1e-5 && fabs(out[1] + want) < 1e-5, "moe tie: %g %g want %g", (double)out[0],
               (double)out[1], want);
    }
    /* Logits (ln 1, ln 3, ln 2)... pick experts 1 then 2: weights 3/5 and 2/5. */
    static const float pick[6] = {0.0f, 1.0986123f, 0.6931472f, 0, 0, 0};
    if (moe_run(pick, IR_MOE_SWIGLU, out)) {
        double h2 = 2.0 * 3.0 * sig(3.0);
        double want = 0.6 * h1 * 2 + 0.4 * h2 * 1000;
        CHECKF(fabs(out[0] - want) < 1e-5 * want && fabs(out[1] + want) < 1e-5 * want, "moe pick: %g want %g", (double)out[0], want);
    }
    if (moe_run(tie, IR_MOE_GEGLU, out)) {
        double want = 0.5 * gelu(1.0) * 2 * 1 + 0.5 * gelu(2.0) * 2 * 2;
        CHECKF(fabs(out[0] - want) < 1e-5, "moe geglu: %g want %g", (double)out[0], want);
    }
}

/* moe with bias rows, the clamped SwiGLU and the top k of the logits then their softmax (gpt-oss's), against the
 * formula in double: x = (1, 0) reads row 0 of every matrix; the router's bias picks experts 1 then 2; expert 1's
 * gate passes the limit above, its up below, expert 2's up above. */
static void test_moe_clamped(void)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", 1, 2, IR_ROLE_INPUT), r = F(g, "router", 2, 3, IR_ROLE_CONSTANT);
    ir_tid gt = F(g, "gate", 2, 6, IR_ROLE_CONSTANT), up = F(g, "up", 2, 6, IR_ROLE_CONSTANT);
    ir_tid dn = F(g, "down", 2, 6, IR_ROLE_CONSTANT), rb = F(g, "rb", 1, 3, IR_ROLE_CONSTANT);
    ir_tid gb = F(g, "gb", 1, 6, IR_ROLE_CONSTANT), ub = F(g, "ub", 1, 6, IR_ROLE_CONSTANT);
    ir_tid db = F(g, "db", 1, 6, IR_ROLE_CONSTANT), y = F(g, "y", 1, 2, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_MOE, y, 9, x, r, gt, up, dn, rb, gb, ub, db);
    op.spec.u.moe = (struct ir_moe){.d = 2, .k = 2, .dff = 2, .experts = 3, .act = IR_MOE_CLAMPED_SWIGLU,
                                    .bias = true, .topk_softmax = true, .alpha = {true, 1.702}, .limit = {true, 7}};
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    static const float gate0[6] = {0, 0, 8, -2, 1, -0.7f}, up0[6] = {0, 0, -9, 0, 7.5f, -0.7f};
    static const float down[12] = {1, 1, 1, -1, 0.5f, 2, 1, 1, 1, 1, -3, 0.25f};
    put(v, x, (const float[]){1, 0}, 2);
    put(v, r, (const float[]){0.25f, 0.5f, 0.5f, 9, 9, 9}, 6);
    put(v, gt, (const float[]){0, 0, 8, -2, 1, -0.7f, 5, 5, 5, 5, 5, 5}, 12);
    put(v, up, (const float[]){0, 0, -9, 0, 7.5f, -0.7f, 5, 5, 5, 5, 5, 5}, 12);
    put(v, dn, down, 12);
    put(v, rb, (const float[]){0, 1.5f, 0.5f}, 3);
    put(v, gb, (const float[]){0, 0, 1, 1, 1, 1}, 6);
    put(v, ub, (const float[]){0, 0, 0.5f, 0.5f, 0.5f, 0.5f}, 6);
    put(v, db, (const float[]){0, 0, 0.1f, -0.1f, 0.2f, -0.2f}, 6);
    if (run(g, v)) {
        double l1 = 0.5 + 1.5, l2 = 0.5 + 0.5, w1 = 1 / (1 + exp(l2 - l1)), w2 = 1 - w1, want[2] = {0, 0};
        for (int k = 0; k < 2; k++) {
            int e = k == 0 ? 1 : 2;
            double w = k == 0 ? w1 : w2;
            for (int i = 0; i < 2; i++) {
                double o = e == 1 ? (i == 0 ? 0.1 : -0.1) : (i == 0 ? 0.2 : -0.2);
                for (int j = 0; j < 2; j++) {
                    double gg = fmin(gate0[e * 2 + j] + 1.0, 7.0), uu = fmax(-7.0, fmin(up0[e * 2 + j] + 0.5, 7.0));
                    o += gg * sig(1.702 * gg) * (uu + 1) * down[j * 6 + e * 2 + i];
                }
                want[i] += w * o;
            }
        }
        const float *got = ir_values_cdata(v, y);
        for (int i = 0; i < 2; i++)
            CHECKF(fabs(got[i] - want[i]) < 1e-5 * fmax(1, fabs(want[i])), "moe clamped [%d]: %g want %g", i,
                   (double)got[i], want[i]);
    }
    ir_values_free(v);
    ir_graph_free(g);
}

/* The routings the published models use, each against its formula written out in double as the models' code reads:
 * one row x = 1 over 8 experts of dff 1 (so logit_e = R[e], expert e's output silu(1) · (e + 1)); the logits and the
 * correction row are chosen so that leaving out the correction, the groups, the renormalisation or the scale, or
 * weighing by the corrected scores, each changes the result. */
static const float route_logits[8] = {3.0f, -3.0f, 1.0f, 1.0f, 0.5f, 0.4f, 2.0f, 0.0f};
static const float route_corr[8] = {0, 0, -0.5f, -0.5f, 0.3f, 0.3f, 0, 0};

/* The published formula: scores (softmax over every expert, sigmoid, or the logits for gpt-oss), the choice by the
 * scores plus the correction among the topk_groups best groups (by their two best), the weights from the unbiased
 * scores (a softmax over the chosen logits for gpt-oss), renormalised or not, times the scale; then Σ w·output. */
static double route_reference(const struct ir_moe *m)
{
    double s[8], c[8], smax = -INFINITY, den = 0;
    for (int e = 0; e < 8; e++)
        smax = fmax(smax, route_logits[e]);
    for (int e = 0; e < 8; e++)
        den += exp(route_logits[e] - smax);
    for (int e = 0; e < 8; e++) {
        s[e] = m->topk_softmax ? route_logits[e] : m->sigmoid ? sig(route_logits[e]) : exp(route_logits[e] - smax) / den;
        c[e] = s[e] + (m->correction ? route_corr[e] : 0.0);
    }
    bool open[8];
    for (int e = 0; e < 8; e++)
        open[e] = m->groups == 0;
    if (m->groups > 0) { /* DeepseekV3: each group's two best summed, the topk_group best groups kept */
        int size = 8 / (int)m->groups;
        double gs[8];
        bool kept[8] = {false};
        for (int j = 0; j < m->groups; j++) {
            double a = -INFINITY, b = -INFINITY;
            for (int e = j * size; e < (j + 1) * size; e++)
                if (c[e] > a)
                    b = a, a = c[e];
                else if (c[e] > b)
                    b = c[e];
            gs[j] = a + b;
        }
        for (int r = 0; r < m->topk_groups; r++) {
            int best = -1;
            for (int j = 0; j < m->groups; j++)
                if (!kept[j] && (best < 0 || gs[j] > gs[best]))
                    best = j;
            kept[best] = true;
        }
        for (int e = 0; e < 8; e++)
            open[e] = kept[e / size];
    }
    int sel[8];
    for (int r = 0; r < m->k; r++) {
        int best = -1;
        for (int e = 0; e < 8; e++)
            if (open[e] && (best < 0 || c[e] > c[best]))
                best = e;
        sel[r] = best;
        open[best] = false;
    }
    double w[8], sum = 0, top = -INFINITY;
    for (int r = 0; r < m->k; r++)
        top = fmax(top, s[sel[r]]);
    for (int r = 0; r < m->k; r++)
        sum += w[r] = m->topk_softmax ? exp(s[sel[r]] - top) : s[sel[r]];
    double y = 0;
    for (int r = 0; r < m->k; r++) {
        double wr = m->topk_softmax || !m->no_renorm ? w[r] / sum : w[r];
        y += wr * (m->scale.has ? m->scale.v : 1.0) * (1.0 * sig(1.0)) * (sel[r] + 1);
    }
    return y;
}

/* The evaluator's mixture of routing m over the routing data. */
static bool route_run(const struct ir_moe *m, float *out)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", 1, 1, IR_ROLE_INPUT), r = F(g, "router", 1, 8, IR_ROLE_CONSTANT);
    ir_tid gt = F(g, "gate", 1, 8, IR_ROLE_CONSTANT), up = F(g, "up", 1, 8, IR_ROLE_CONSTANT);
    ir_tid dn = F(g, "down", 1, 8, IR_ROLE_CONSTANT), cb = F(g, "corr", 1, 8, IR_ROLE_CONSTANT);
    ir_tid y = F(g, "y", 1, 1, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_MOE, y, m->correction ? 6 : 5, x, r, gt, up, dn, cb);
    op.spec.u.moe = *m;
    ir_graph_push(g, op);
    char err[IR_ERR_LEN] = "";
    CHECKF(ir_validate(g, err) == 0, "routing graph: %s", err);
    struct ir_values *v = values(g);
    put(v, x, (const float[]){1}, 1);
    put(v, r, route_logits, 8);
    put(v, gt, (const float[]){1, 1, 1, 1, 1, 1, 1, 1}, 8);
    put(v, up, (const float[]){1, 1, 1, 1, 1, 1, 1, 1}, 8);
    put(v, dn, (const float[]){1, 2, 3, 4, 5, 6, 7, 8}, 8);
    put(v, cb, route_corr, 8);
    bool ok = run(g, v);
    if (ok)
        *out = ir_values_cdata(v, y)[0];
    ir_values_free(v);
    ir_graph_free(g);
    return ok;
}

/* Each published routing against its formula; and each field, left out, changes the result (the test can fail;
 * gpt-oss's top k then softmax equals the softmax renormalised in real arithmetic, so only its roundings differ). */
static void test_moe_routings(void)
{
    const struct {
        const char *what;
        struct ir_moe m;
    } cases[] = {
        {"qwen3-moe (softmax, renormalised)", {.k = 2}},
        {"deepseek-v2-lite (softmax, not renormalised)", {.k = 3, .no_renorm = true}},
        {"not renormalised, scaled", {.k = 3, .no_renorm = true, .scale = {true, 1.5}}},
        {"gpt-oss (top k then softmax)", {.k = 2, .topk_softmax = true}},
        {"sigmoid, renormalised", {.k = 2, .sigmoid = true}},
        {"sigmoid, corrected", {.k = 2, .sigmoid = true, .correction = true, .no_renorm = true}},
        {"deepseek-v3 (sigmoid, corrected, grouped, scaled)",
         {.k = 2, .sigmoid = true, .correction = true, .groups = 4, .topk_groups = 2, .scale = {true, 2.5}}},
        {"grouped softmax", {.k = 2, .groups = 2, .topk_groups = 1}},
    };
    double first = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ir_moe m = cases[i].m;
        m.d = 1, m.dff = 1, m.experts = 8, m.act = IR_MOE_SWIGLU;
        float got;
        if (!route_run(&m, &got))
            continue;
        double want = route_reference(&m);
        CHECKF(fabs(got - want) <= 2e-6 * (1 + fabs(want)), "moe %s: %.9g, want %.9g", cases[i].what, (double)got,
               want);
        /* Leaving each routing field out moves the reference: the data tells them apart. */
        struct ir_moe less = m;
        less.correction = false;
        if (m.correction)
            CHECKF(fabs(route_reference(&less) - want) > 1e-3, "moe %s: the correction changes nothing", cases[i].what);
        less = m;
        less.groups = less.topk_groups = 0;
        if (m.groups)
            CHECKF(fabs(route_reference(&less) - want) > 1e-3, "moe %s: the groups change nothing", cases[i].what);
        CHECKF(i == 0 || m.topk_softmax || fabs(want - first) > 1e-3, "moe %s: alike the softmax's", cases[i].what);
        if (i == 0)
            first = want;
    }
}

/* ── Gated delta rule and convolution ────────────────────────────────────────────────────────────────────── */

/* gated_delta over h = 1, dk = dv = 2, two rows, against the rule computed in double. */
static void test_gated_delta(void)
{
    for (int gate = 0; gate < IR_GATE_COUNT; gate++) {
        struct ir_graph *g = ir_graph_new();
        ir_tid q = F(g, "q", 2, 2, IR_ROLE_INPUT), k = F(g, "k", 2, 2, IR_ROLE_INPUT), vv = F(g, "v", 2, 2, IR_ROLE_INPUT);
        ir_tid z = F(g, "z", 2, 2, IR_ROLE_INPUT), b = F(g, "b", 2, 1, IR_ROLE_INPUT), a = F(g, "a", 2, 1, IR_ROLE_INPUT);
        ir_tid s = F(g, "state", 2, 2, IR_ROLE_STATE), w = F(g, "w", 1, 2, IR_ROLE_CONSTANT);
        ir_tid y = F(g, "y", 2, 2, IR_ROLE_ACTIVATION);
        struct ir_op op = P(IR_KIND_GATED_DELTA, y, 8, q, k, vv, z, b, a, s, w);
        op.spec.u.gated_delta = (struct ir_gated_delta){1, 2, 2, 2, (enum ir_gateact)gate, 1e-6, 0};
        ir_graph_push(g, op);
        struct ir_values *v = values(g);
        const float Q[4] = {0.6f, 0.8f, 1, 0}, K[4] = {0.8f, -0.6f, 0, 1}, V[4] = {1, 2, -1, 0.5f};
        const float Z[4] = {0.5f, -1, 2, 0}, B[2] = {0.5f, 0.25f}, A[2] = {-0.1f, -0.5f}, W[2] = {1, 2};
        const float S0[4] = {0.1f, -0.2f, 0.3f, 0.05f};
        put(v, q, Q, 4);
        put(v, k, K, 4);
        put(v, vv, V, 4);
        put(v, z, Z, 4);
        put(v, b, B, 2);
        put(v, a, A, 2);
        put(v, w, W, 2);
        put(v, s, S0, 4);
        double S[4], yw[4];
        for (int i = 0; i < 4; i++)
            S[i] = S0[i];
        for (int t = 0; t < 2; t++) {
            double kv[2] = {0, 0}, o[2] = {0, 0}, ss = 0;
            for (int i = 0; i < 4; i++)
                S[i] *= exp(A[t]);
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++)
                    kv[j] += S[i * 2 + j] * K[t * 2 + i];
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++)
                    S[i * 2 + j] += K[t * 2 + i] * B[t] * (V[t * 2 + j] - kv[j]);
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++)
                    o[j] += S[i * 2 + j] * Q[t * 2 + i] / sqrt(2.0);
            ss = (o[0] * o[0] + o[1] * o[1]) / 2;
            for (int j = 0; j < 2; j++) {
                double zz = Z[t * 2 + j], act = gate == IR_GATE_SIGMOID ? sig(zz) : zz * sig(zz);
                yw[t * 2 + j] = o[j] / sqrt(ss + 1e-6) * W[j] * act;
            }
        }
        if (run(g, v)) {
            expect_near(v, y, yw, 4, "gated_delta out");
            expect_near(v, s, S, 4, "gated_delta state");
        }
        ir_values_free(v);
        ir_graph_free(g);
    }
}

/* causal_conv: chan 2, taps 3, rows 2; the ring keeps the last two rows of ring + x. */
static void test_causal_conv(void)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", 2, 2, IR_ROLE_INPUT), w = F(g, "w", 2, 3, IR_ROLE_CONSTANT);
    ir_tid ring = F(g, "ring", 2, 2, IR_ROLE_STATE), y = F(g, "y", 2, 2, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_CAUSAL_CONV, y, 3, x, w, ring);
    op.spec.u.causal_conv = (struct ir_causal_conv){2, 3, 2};
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    put(v, ring, (const float[]){1, 10, 2, 20}, 4); /* x' rows: (1,10) (2,20) (3,30) (4,40) */
    put(v, x, (const float[]){3, 30, 4, 40}, 4);
    put(v, w, (const float[]){1, 2, 3, 0, 1, -1}, 6);
    /* c 0: y0 = 1·1 + 2·2 + 3·3 = 14, y1 = 1·2 + 2·3 + 3·4 = 20; c 1: y0 = 20 − 30 = −10, y1 = 30 − 40 = −10. */
    if (run(g, v)) {
        expect_exact(v, y, (const float[]){14, -10, 20, -10}, 4, "causal_conv");
        expect_exact(v, ring, (const float[]){3, 30, 4, 40}, 4, "causal_conv ring");
    }
    ir_values_free(v);
    ir_graph_free(g);
}

/* ── Small ops ───────────────────────────────────────────────────────────────────────────────────────────── */

/* silu, sigmoid, gelu, relu, scale, softcap: exact points and the formulas. */
static void test_unary(void)
{
    static const float x[5] = {0, 1, -2, 3.5f, -0.0f};
    static const enum ir_kind kinds[] = {IR_KIND_SILU, IR_KIND_SIGMOID, IR_KIND_GELU, IR_KIND_RELU, IR_KIND_SCALE,
                                         IR_KIND_SOFTCAP};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        struct ir_graph *g = ir_graph_new();
        ir_tid tx = F(g, "x", 1, 5, IR_ROLE_INPUT), y = F(g, "y", 1, 5, IR_ROLE_ACTIVATION);
        struct ir_op op = P(kinds[i], y, 1, tx);
        if (kinds[i] == IR_KIND_SCALE)
            op.spec.u.scale = (struct ir_scale){5, 0.5};
        else if (kinds[i] == IR_KIND_SOFTCAP)
            op.spec.u.softcap = (struct ir_softcap){5, 2.0};
        else
            op.spec.u.unary = (struct ir_unary){5};
        ir_graph_push(g, op);
        struct ir_values *v = values(g);
        put(v, tx, x, 5);
        double want[5];
        for (int j = 0; j < 5; j++) {
            double a = x[j];
            switch (kinds[i]) {
            case IR_KIND_SILU: want[j] = a * sig(a); break;
            case IR_KIND_SIGMOID: want[j] = sig(a); break;
            case IR_KIND_GELU: want[j] = gelu(a); break;
            case IR_KIND_RELU: want[j] = a > 0 ? a : 0; break;
            case IR_KIND_SCALE: want[j] = 0.5 * a; break;
            default: want[j] = 2.0 * tanh(a / 2.0); break;
            }
        }
        if (run(g, v)) {
            expect_near(v, y, want, 5, ir_kind_name(kinds[i]));
            const float *d = ir_values_cdata(v, y);
            if (kinds[i] == IR_KIND_SIGMOID)
                CHECK(d[0] == 0.5f);
            if (kinds[i] == IR_KIND_RELU)
                CHECK(d[2] == 0.0f && d[3] == 3.5f && !signbit(d[4]));
            if (kinds[i] == IR_KIND_SILU || kinds[i] == IR_KIND_GELU)
                CHECK(d[0] == 0.0f);
        }
        ir_values_free(v);
        ir_graph_free(g);
    }
}

/* swiglu, join, l2_norm, decay: values by hand or by formula. */
static void test_small_binary(void)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid ga = F(g, "g", 1, 4, IR_ROLE_INPUT), ua = F(g, "u", 1, 4, IR_ROLE_INPUT), sw = F(g, "sw", 1, 4, IR_ROLE_ACTIVATION);
    ir_tid ja = F(g, "ja", 2, 4, IR_ROLE_INPUT), jb = F(g, "jb", 2, 2, IR_ROLE_INPUT), jy = F(g, "jy", 2, 6, IR_ROLE_ACTIVATION);
    ir_tid lx = F(g, "lx", 2, 2, IR_ROLE_INPUT), ly = F(g, "ly", 2, 2, IR_ROLE_ACTIVATION);
    ir_tid da = F(g, "da", 2, 2, IR_ROLE_INPUT), al = F(g, "alog", 1, 2, IR_ROLE_CONSTANT);
    ir_tid dt = F(g, "dtb", 1, 2, IR_ROLE_CONSTANT), dy = F(g, "dy", 2, 2, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_SWIGLU, sw, 2, ga, ua);
    op.spec.u.swiglu = (struct ir_swiglu){4};
    ir_graph_push(g, op);
    op = P(IR_KIND_JOIN, jy, 2, ja, jb);
    op.spec.u.join = (struct ir_join){2, 2, 4, 2};
    ir_graph_push(g, op);
    op = P(IR_KIND_L2_NORM, ly, 1, lx);
    op.spec.u.l2_norm = (struct ir_l2_norm){2, 2, 0.0};
    ir_graph_push(g, op);
    op = P(IR_KIND_DECAY, dy, 3, da, al, dt);
    op.spec.u.decay = (struct ir_decay){4, 2};
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    const float G[4] = {0, 1, -1, 2}, U[4] = {5, 2, 3, 0.5f}, DA[4] = {0.5f, -1, 30, 0}, AL[2] = {0, 1}, DT[2] = {0, 0.5f};
    put(v, ga, G, 4);
    put(v, ua, U, 4);
    put(v, ja, (const float[]){1, 2, 3, 4, 5, 6, 7, 8}, 8);
    put(v, jb, (const float[]){-1, -2, -3, -4}, 4);
    put(v, lx, (const float[]){3, 4, 0, -2}, 4);
    put(v, da, DA, 4);
    put(v, al, AL, 2);
    put(v, dt, DT, 2);
    if (run(g, v)) {
        double sw_want[4], d_want[4];
        for (int i = 0; i < 4; i++) {
            sw_want[i] = G[i] * sig(G[i]) * U[i];
            double t = DA[i] + DT[i % 2];
            d_want[i] = -exp(AL[i % 2]) * (t > 20 ? t : log1p(exp(t)));
        }
        expect_near(v, sw, sw_want, 4, "swiglu");
        /* Units (rows·heads = 4): a's 2 values then b's 1 value. */
        expect_exact(v, jy, (const float[]){1, 2, -1, 3, 4, -2, 5, 6, -3, 7, 8, -4}, 12, "join");
        expect_near(v, ly, (const double[]){0.6, 0.8, 0, -1}, 4, "l2_norm");
        expect_near(v, dy, d_want, 4, "decay");
    }
    ir_values_free(v);
    ir_graph_free(g);
}

/* head_matmul: two heads, each its own 2 × 1 block of W. */
static void test_head_matmul(void)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", 2, 4, IR_ROLE_INPUT), w = F(g, "w", 4, 1, IR_ROLE_CONSTANT), y = F(g, "y", 2, 2, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_HEAD_MATMUL, y, 2, x, w);
    op.spec.u.head_matmul = (struct ir_head_matmul){2, 2, 2, 1};
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    put(v, x, (const float[]){1, 2, 3, 4, 5, 6, 7, 8}, 8);
    put(v, w, (const float[]){1, 10, 100, 1000}, 4);
    /* Row 0: head 0 = 1 + 20, head 1 = 300 + 4000; row 1: 5 + 60, 700 + 8000. */
    if (run(g, v))
        expect_exact(v, y, (const float[]){21, 4300, 65, 8700}, 4, "head_matmul");
    ir_values_free(v);
    ir_graph_free(g);
}

/* argmax: the first of tied maxima; NaN never wins; an all-NaN row gives 0. */
static void test_argmax(void)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", 3, 4, IR_ROLE_INPUT), y = T(g, "next", IR_ELEM_I32, 3, 1, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_ARGMAX, y, 1, x);
    op.spec.u.argmax = (struct ir_argmax){3, 4};
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    float nan = (float)NAN;
    put(v, x, (const float[]){1, 5, 5, 2, nan, -1, -3, nan, nan, nan, nan, nan}, 12);
    if (run(g, v))
        expect_exact(v, y, (const float[]){1, 1, 0}, 3, "argmax");
    ir_values_free(v);
    ir_graph_free(g);
}

/* ── Views and quantization ──────────────────────────────────────────────────────────────────────────────── */

/* view: a row of a computed table read in place. */
static void test_view(void)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid t = F(g, "table", 3, 2, IR_ROLE_INPUT), y = F(g, "row", 1, 2, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_ROW_GATHER, y, 1, t);
    op.sym = IR_SYM_VIEW;
    op.view_offset = 4;
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    put(v, t, (const float[]){0, 1, 2, 3, 4, 5}, 6);
    if (run(g, v))
        expect_exact(v, y, (const float[]){4, 5}, 2, "view");
    ir_values_free(v);
    ir_graph_free(g);
}

/* Evaluate a quantize op of `words` words over n values x; its output into out. */
static bool quant_run(const float *x, int n, int words, float *out)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid tx = F(g, "x", 1, n, IR_ROLE_INPUT), y = F(g, "y", 1, n, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_SILU, y, 1, tx);
    op.sym = IR_SYM_QUANT;
    op.quant_words = words;
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    put(v, tx, x, n);
    bool ok = run(g, v);
    if (ok)
        memcpy(out, ir_values_cdata(v, y), sizeof(float) * (size_t)n);
    ir_values_free(v);
    ir_graph_free(g);
    return ok;
}

/* quantize: one word (scale 1: rounding half away from zero), two words (the residual on its own scale), an
 * all-zero block, a short last block. */
static void test_quantize(void)
{
    float x[40], out[40], y2[40];
    memset(x, 0, sizeof x);
    /* Block 0: max |x| = 127 → s = 1, q = round-half-away(x). */
    static const float b0[6] = {127, 63.5f, -0.5f, 2.1f, -3.3f, 5.45f};
    memcpy(x, b0, sizeof b0);
    /* Block 1 (8 values): max 0.5 → s = 0.5/127; ±0.5 → ±127·s. */
    x[32] = 0.5f;
    x[33] = -0.5f;
    if (quant_run(x, 40, 1, out)) {
        CHECK(out[0] == 127 && out[1] == 64 && out[2] == -1 && out[3] == 2 && out[4] == -3 && out[5] == 5 &&
              out[6] == 0);
        float s = 0.5f / 127.0f, top = 127.0f * s;
        CHECKF(out[32] == top && out[33] == -top && out[34] == 0, "short block: %.9g", (double)out[32]);
    }
    /* Two words: block 0's residuals are (0, −0.5, 0.5, ≈0.1, ≈−0.3, ≈0.45): max 0.5 → s2 = 0.5/127, and
     * q2 = round(r/s2) = (0, −127, 127, 25 (25.4), −76 (−76.2), 114 (114.3)); y = q1·1 + q2·s2. */
    if (quant_run(x, 40, 2, y2)) {
        float s2 = 0.5f / 127.0f;
        static const float q1[6] = {127, 64, -1, 2, -3, 5}, q2[6] = {0, -127, 127, 25, -76, 114};
        for (int i = 0; i < 6; i++) {
            float t = q2[i] * s2, want = q1[i] + t;
            CHECKF(y2[i] == want, "two words [%d] = %.9g want %.9g", i, (double)y2[i], (double)want);
        }
        /* Block 1's residual (0.5 − 127·s, at most an ulp) on its own scale: y within an ulp of x. */
        CHECKF(fabsf(y2[32] - 0.5f) <= 1e-7f && y2[34] == 0.0f, "two-word short block %.9g", (double)y2[32]);
    }
    /* An all-zero block stays zero. */
    float z[32] = {0}, zo[32];
    if (quant_run(z, 32, 2, zo)) {
        bool all = true;
        for (int i = 0; i < 32; i++)
            all = all && zo[i] == 0.0f && !signbit(zo[i]);
        CHECK(all);
    }
}

/* ── Placements ──────────────────────────────────────────────────────────────────────────────────────────── */

/* A strided read: relu over units of width 2 at pitch 4, offset 1. */
static void test_strided_read(void)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", 2, 4, IR_ROLE_INPUT), y = F(g, "y", 1, 4, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_RELU, y, 1, x);
    struct ir_access acc = {true, {4, 1, 2}};
    ir_op_set_ins(&op, &x, &acc, 1);
    op.spec.u.unary = (struct ir_unary){4};
    ir_graph_push(g, op);
    struct ir_values *v = values(g);
    put(v, x, (const float[]){0, 1, -2, 3, 4, 5, 6, -7}, 8);
    if (run(g, v))
        expect_exact(v, y, (const float[]){1, 0, 5, 6}, 4, "strided read");
    /* A read past the tensor is an error. */
    ir_graph_free(g);
    ir_values_free(v);
    g = ir_graph_new();
    x = F(g, "x", 2, 4, IR_ROLE_INPUT);
    y = F(g, "y", 1, 4, IR_ROLE_ACTIVATION);
    op = P(IR_KIND_RELU, y, 1, x);
    acc.s = (struct ir_strided){4, 3, 2};
    ir_op_set_ins(&op, &x, &acc, 1);
    op.spec.u.unary = (struct ir_unary){4};
    ir_graph_push(g, op);
    v = values(g);
    run_fails(g, v, "reach past");
    ir_values_free(v);
    ir_graph_free(g);
}

/* Destinations: rows at a fixed (1-based) and a param (0-based) row, units, units within rows. */
static void test_destinations(void)
{
    for (int mode = 0; mode < 4; mode++) {
        struct ir_graph *g = ir_graph_new();
        ir_tid x = F(g, "x", 1, 2, IR_ROLE_INPUT), y = F(g, "y", 1, 2, IR_ROLE_ACTIVATION);
        ir_tid tb = F(g, "table", 3, 4, IR_ROLE_STATE), p = T(g, "row", IR_ELEM_I32, 1, 1, IR_ROLE_PARAM);
        struct ir_op op = P(IR_KIND_SCALE, y, 1, x);
        op.spec.u.scale = (struct ir_scale){2, 2.0};
        op.dst.buf = tb;
        if (mode == 0) { /* fixed row 2 (1-based), 4 values a row: values [4, 6) */
            op.dst.row = IR_ROWSEL_FIXED;
            op.dst.row_fixed = 2;
            op.dst.row_cols = 4;
        } else if (mode == 1) { /* param row 2 (0-based): values [8, 10) */
            op.dst.row = IR_ROWSEL_PARAM;
            op.dst.row_param = p;
            op.dst.row_cols = 4;
        } else { /* units of width 1 at pitch 3, offset 1: values 1 and 4 (mode 3: within param row 1 → 5, 8) */
            op.dst.has_unit = true;
            op.dst.unit = (struct ir_strided){3, 1, 1};
            if (mode == 3) {
                op.dst.row = IR_ROWSEL_PARAM;
                op.dst.row_param = p;
                op.dst.row_cols = 4;
            }
        }
        ir_graph_push(g, op);
        struct ir_values *v = values(g);
        float zero[12] = {0};
        put(v, tb, zero, 12);
        put(v, x, (const float[]){1.5f, -3}, 2);
        put(v, p, (const float[]){mode == 3 ? 1.0f : 2.0f}, 1);
        float want[12] = {0};
        int at[4][2] = {{4, 5}, {8, 9}, {1, 4}, {5, 8}};
        want[at[mode][0]] = 3;
        want[at[mode][1]] = -6;
        if (run(g, v)) {
            expect_exact(v, tb, want, 12, "destination");
            expect_exact(v, y, (const float[]){3, -6}, 2, "materialised result");
        }
        /* A row past the table is an error. */
        put(v, p, (const float[]){3}, 1);
        if (mode == 1 || mode == 3)
            run_fails(g, v, "destination reaches");
        ir_values_free(v);
        ir_graph_free(g);
    }
}

/* ── Fused ops and rewritten graphs against lifted ones ──────────────────────────────────────────────────── */

/* The tensors both forms of a small decode block share: an add then a norm, a rope whose result a set_row puts in
 * a cache at a named row, a join of two halves, an attention over the cache. */
struct blk {
    ir_tid x, r, sum, w, h, cos, sin, pos, k, kc, vsrc, vc, q, att, ja, jb, jy, table;
};

/* Add the block's tensors to g, in the given order (so two graphs can number them differently). */
static struct blk blk_tensors(struct ir_graph *g, bool reversed)
{
    struct blk b;
    ir_tid *slot[] = {&b.x, &b.r, &b.sum, &b.w, &b.h, &b.cos, &b.sin, &b.pos, &b.k, &b.kc, &b.vsrc, &b.vc, &b.q,
                      &b.att, &b.ja, &b.jb, &b.jy, &b.table};
    struct { const char *name; enum ir_elem e; int64_t r, c; enum ir_role role; } spec[] = {
        {"x", IR_ELEM_F32, 1, 8, IR_ROLE_INPUT},         {"resid", IR_ELEM_F32, 1, 8, IR_ROLE_INPUT},
        {"sum", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},  {"norm.w", IR_ELEM_F32, 1, 8, IR_ROLE_CONSTANT},
        {"h", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},    {"rope.cos", IR_ELEM_F32, 16, 2, IR_ROLE_CONSTANT},
        {"rope.sin", IR_ELEM_F32, 16, 2, IR_ROLE_CONSTANT}, {"pos", IR_ELEM_I32, 1, 1, IR_ROLE_PARAM},
        {"k", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},    {"kcache", IR_ELEM_F32, 8, 8, IR_ROLE_STATE},
        {"vsrc", IR_ELEM_F32, 1, 8, IR_ROLE_INPUT},      {"vcache", IR_ELEM_F32, 8, 8, IR_ROLE_STATE},
        {"q", IR_ELEM_F32, 1, 8, IR_ROLE_INPUT},         {"att", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},
        {"ja", IR_ELEM_F32, 1, 4, IR_ROLE_ACTIVATION},   {"jb", IR_ELEM_F32, 1, 2, IR_ROLE_ACTIVATION},
        {"jy", IR_ELEM_F32, 1, 6, IR_ROLE_ACTIVATION},   {"jtable", IR_ELEM_F32, 8, 6, IR_ROLE_STATE},
    };
    int n = (int)(sizeof spec / sizeof spec[0]);
    if (reversed)
        T(g, "extra.first", IR_ELEM_F32, 2, 2, IR_ROLE_INPUT);
    for (int k = 0; k < n; k++) {
        int i = reversed ? n - 1 - k : k;
        *slot[i] = T(g, spec[i].name, spec[i].e, spec[i].r, spec[i].c, spec[i].role);
    }
    g->tensors[b.kc].carried = g->tensors[b.vc].carried = g->tensors[b.table].carried = true;
    g->tensors[b.sum].observed = g->tensors[b.att].observed = true;
    return b;
}

/* The block's ops: lifted (each op alone) or rewritten (add_norm fused, the rope writing the cache row itself,
 * the join's halves written in place into the table's row). */
static struct ir_graph *blk_graph(bool rewritten, bool reversed)
{
    struct ir_graph *g = ir_graph_new();
    struct blk b = blk_tensors(g, reversed);
    struct ir_op add = P(IR_KIND_ELEMENTWISE, b.sum, 2, b.x, b.r);
    add.spec.u.elementwise = (struct ir_elementwise){IR_EW_ADD, 8, 0};
    struct ir_op norm = P(IR_KIND_RMS_NORM, b.h, 2, b.sum, b.w);
    norm.spec.u.rms_norm = (struct ir_rms_norm){1, 8, 1e-5, true, 0.0, false, IR_NORM_RMS, false};
    struct ir_op rope = P(IR_KIND_ROPE, b.k, 4, b.h, b.cos, b.sin, b.pos);
    rope.spec.u.rope = (struct ir_rope){2, 4, 2, 1, {IR_RIDX_NAMED, 0}, {false, 0.0}, false, {0}};
    struct ir_op set = P(IR_KIND_SET_ROW, b.kc, 3, b.kc, b.k, b.pos);
    set.spec.u.set_row = (struct ir_set_row){8, 8, 1, {IR_RIDX_NAMED, 0}};
    struct ir_op setv = P(IR_KIND_SET_ROW, b.vc, 2, b.vc, b.vsrc);
    setv.spec.u.set_row = (struct ir_set_row){8, 8, 1, {IR_RIDX_LITERAL, 5}};
    struct ir_op att = P(IR_KIND_ATTENTION, b.att, 4, b.q, b.kc, b.vc, b.pos);
    att.spec.u.attention = (struct ir_attention){2, 2, 4, 4, 8, 1, {IR_RIDX_NAMED, 0}, {false, 0}, {true, 30.0},
                                                 false, 0};
    struct ir_op sa = P(IR_KIND_SCALE, b.ja, 1, b.att);
    struct ir_access half = {true, {4, 0, 2}};
    ir_op_set_ins(&sa, &b.att, &half, 1);
    sa.spec.u.scale = (struct ir_scale){4, 2.0};
    struct ir_op sb = P(IR_KIND_HEAD_SLICE, b.jb, 1, b.att);
    sb.spec.u.head_slice = (struct ir_head_slice){8, 4, 3, 1};
    struct ir_op join = P(IR_KIND_JOIN, b.jy, 2, b.ja, b.jb);
    join.spec.u.join = (struct ir_join){1, 2, 4, 2};
    struct ir_op jset = P(IR_KIND_SET_ROW, b.table, 3, b.table, b.jy, b.pos);
    jset.spec.u.set_row = (struct ir_set_row){8, 6, 1, {IR_RIDX_NAMED, 0}};
    if (!rewritten) {
        struct ir_op ops[] = {add, norm, rope, set, setv, att, sa, sb, join, jset};
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
            ir_graph_push(g, ops[i]);
        return g;
    }
    struct ir_op *parts = malloc(sizeof *parts * 2);
    parts[0] = add;
    parts[1] = norm;
    struct ir_access whole[3];
    memset(whole, 0, sizeof whole);
    struct ir_op fused = ir_op_fused(IR_CLASS_ADD_NORM, parts, 2, (const ir_tid[]){b.x, b.r, b.w}, whole, 3, b.h,
                                     ir_dst_own(b.h));
    ir_op_set_keeps(&fused, &b.sum, 1);
    ir_graph_push(g, fused);
    /* row_write: the rope lands in the cache's row `pos` (0-based), the set_row gone. */
    rope.dst.buf = b.kc;
    rope.dst.row = IR_ROWSEL_PARAM;
    rope.dst.row_param = b.pos;
    rope.dst.row_cols = 8;
    ir_graph_push(g, rope);
    ir_op_free(&set);
    ir_graph_push(g, setv);
    ir_graph_push(g, att);
    /* join_in_place into the table's row: each half a part of every unit (unit = 3 values: 2 of a, 1 of b). */
    struct ir_dst d = {b.table, IR_ROWSEL_PARAM, 0, b.pos, 6, true, {3, 0, 2}};
    sa.dst = d;
    d.unit = (struct ir_strided){3, 2, 1};
    sb.dst = d;
    ir_graph_push(g, sa);
    ir_graph_push(g, sb);
    ir_op_free(&join);
    ir_op_free(&jset);
    return g;
}

/* The rewritten block gives bit-identical observed and carried tensors to the lifted one. */
static void test_rewritten_equals_lifted(void)
{
    struct ir_graph *lifted = blk_graph(false, false), *rewritten = blk_graph(true, true);
    for (uint64_t seed = 1; seed <= 20; seed++) {
        char err[IR_ERR_LEN] = "";
        struct ir_values *a = ir_values_new(lifted, seed, err), *b = ir_values_new(rewritten, seed, err);
        CHECKF(a && b, "%s", err);
        if (!a || !b) {
            ir_values_free(a);
            ir_values_free(b);
            break;
        }
        /* Same names, same values, whatever their ids. */
        struct ir_compare before = ir_values_compare(lifted, a, rewritten, b);
        CHECKF(before.identical && before.compared == 5, "filled differently: tensor %d", (int)before.tensor);
        bool ran = ir_eval(lifted, a, err) == 0;
        CHECKF(ran, "%s", err);
        ran = ran && ir_eval(rewritten, b, err) == 0;
        CHECKF(ran, "%s", err);
        struct ir_compare c = ir_values_compare(lifted, a, rewritten, b);
        CHECKF(ran && c.identical && c.compared == 5, "seed %llu: tensor %d index %lld: %.9g vs %.9g",
               (unsigned long long)seed, (int)c.tensor, (long long)c.index, (double)c.a, (double)c.b);
        /* The position leaves several cache rows before it: in [4, 7] of an 8-row cache. */
        const float *pos = ir_values_cdata(a, ir_tensor_find(lifted, "pos", 3));
        CHECKF(pos && pos[0] >= 4 && pos[0] <= 7 && pos[0] == floorf(pos[0]), "pos %g", pos ? (double)pos[0] : -1.0);
        ir_values_free(a);
        ir_values_free(b);
    }
    /* And the comparison notices a difference: flip one bit of a carried tensor. */
    struct ir_values *a = values(lifted), *b = values(rewritten);
    run(lifted, a);
    run(rewritten, b);
    ir_tid kc = ir_tensor_find(rewritten, "kcache", 6);
    float *d = ir_values_data(b, kc);
    d[13] = -d[13];
    struct ir_compare c = ir_values_compare(lifted, a, rewritten, b);
    CHECK(!c.identical && c.tensor == ir_tensor_find(lifted, "kcache", 6) && c.index == 13 && c.a == -c.b);
    /* -0.0 and 0.0 differ bit for bit. */
    d[13] = -d[13];
    ir_tid sum = ir_tensor_find(rewritten, "sum", 3);
    float *s = ir_values_data(b, sum);
    const float *sa = ir_values_cdata(a, ir_tensor_find(lifted, "sum", 3));
    CHECK(sa != NULL);
    ir_values_data(a, ir_tensor_find(lifted, "sum", 3))[0] = 0.0f;
    s[0] = -0.0f;
    c = ir_values_compare(lifted, a, rewritten, b);
    CHECK(!c.identical && c.index == 0);
    ir_values_free(a);
    ir_values_free(b);
    ir_graph_free(lifted);
    ir_graph_free(rewritten);
}

/* How many times the evaluator asked whether to stop, and after how many answers it is told to. */
static int stop_asks, stop_after;

/* The stop question: yes from the (stop_after+1)-th ask on. */
static bool stop_when_counted(void) { return ++stop_asks > stop_after; }

/* Seeding and evaluating ask ir_eval_set_stop's question before each unit of work, inside a large tensor too, and
 * give up cleanly (NULL or -1, err IR_EVAL_STOPPED, nothing leaked) once it answers yes; asked never, they finish. */
static void test_stop(void)
{
    /* A plain tensor of 2^18 values and a q8_0 checkpoint of 64 stored rows of 8192: several asks each. */
    struct ir_graph *g = ir_graph_new();
    ir_tid big = F(g, "big", 4, 65536, IR_ROLE_CONSTANT), w = F(g, "w", 8192, 64, IR_ROLE_CONSTANT);
    g->tensors[w].checkpoint = true;
    g->tensors[w].format = IR_FMT_Q8_0;
    g->tensors[w].transposed = true;
    ir_tid x = F(g, "x", 1, 8192, IR_ROLE_INPUT), y = F(g, "y", 1, 64, IR_ROLE_ACTIVATION);
    ir_tid z = F(g, "z", 1, 64, IR_ROLE_ACTIVATION);
    g->tensors[z].observed = true;
    (void)big;
    struct ir_op op = P(IR_KIND_MATMUL, y, 2, x, w);
    op.spec.u.matmul = (struct ir_matmul){1, 8192, 64};
    ir_graph_push(g, op);
    op = P(IR_KIND_ELEMENTWISE, z, 2, y, y);
    op.spec.u.elementwise = (struct ir_elementwise){(enum ir_ewop)0, 64, 0};
    ir_graph_push(g, op);
    char err[IR_ERR_LEN] = "";
    /* Count the asks of a whole run, then stop at each of them in turn (a sample): every one is honoured. */
    ir_eval_set_stop(stop_when_counted);
    stop_asks = 0;
    stop_after = 1 << 30;
    struct ir_values *v = ir_values_new(g, 1, err);
    int seeding = stop_asks;
    CHECKF(v != NULL && ir_eval(g, v, err) == 0, "%s", err);
    int total = stop_asks;
    /* 2^18 plain values and 2^19 stored ones, asked every 2^16: at least 4 + 7 asks while seeding; one an op. */
    CHECKF(seeding >= 11 && total - seeding == 2, "asked %d times seeding, %d evaluating", seeding, total - seeding);
    ir_values_free(v);
    for (int k = 0; k < seeding; k += 3) {
        stop_asks = 0;
        stop_after = k;
        err[0] = '\0';
        v = ir_values_new(g, 1, err);
        CHECKF(v == NULL && strncmp(err, IR_EVAL_STOPPED " while seeding tensor ", 37) == 0,
               "stop at ask %d of seeding: %s", k, v ? "seeded anyway" : err);
        ir_values_free(v);
    }
    for (int k = 0; k < 2; k++) {
        stop_asks = 0;
        stop_after = 1 << 30;
        v = ir_values_new(g, 1, err);
        stop_asks = 0;
        stop_after = k;
        char want[64];
        snprintf(want, sizeof want, IR_EVAL_STOPPED " before op %d of 2", k);
        CHECKF(v && ir_eval(g, v, err) == -1 && strcmp(err, want) == 0, "stop before op %d: %s", k, err);
        ir_values_free(v);
    }
    /* Asked never (NULL), the same graph seeds and evaluates. */
    ir_eval_set_stop(NULL);
    v = ir_values_new(g, 1, err);
    CHECKF(v && ir_eval(g, v, err) == 0, "%s", err);
    ir_values_free(v);
    ir_graph_free(g);
}

/* A fused op equals its parts evaluated separately, through ir_eval_ops on the parts themselves. */
static void test_fused_equals_parts(void)
{
    struct ir_graph *g = blk_graph(true, false);
    struct ir_values *a = values(g), *b = values(g);
    char err[IR_ERR_LEN] = "";
    /* a: the whole graph; b: the fused op's parts as two ops, then the rest. */
    int rc = ir_eval(g, a, err);
    CHECKF(rc == 0, "%s", err);
    const struct ir_op *fused = &g->ops[0];
    CHECK(fused->sym == IR_SYM_FUSED && fused->nparts == 2);
    rc = ir_eval_ops(g, fused->parts, fused->nparts, b, err);
    CHECKF(rc == 0, "%s", err);
    rc = ir_eval_ops(g, g->ops + 1, g->nops - 1, b, err);
    CHECKF(rc == 0, "%s", err);
    for (ir_tid t = 0; t < g->ntensors; t++) {
        const float *x = ir_values_cdata(a, t), *y = ir_values_cdata(b, t);
        CHECKF(x && y && memcmp(x, y, sizeof(float) * (size_t)ir_tensor_len(g, t)) == 0, "tensor %s",
               g->tensors[t].name);
    }
    ir_values_free(a);
    ir_values_free(b);
    ir_graph_free(g);
}

/* A fused op (nested two deep) landing in a table's row: placed at the fused level when its producing part lands in
 * its own buffer, and once by the part when the part carries the same destination. */
static void test_fused_placement(void)
{
    for (int on_part = 0; on_part < 2; on_part++) {
        struct ir_graph *g = ir_graph_new();
        ir_tid x = F(g, "x", 1, 2, IR_ROLE_INPUT), a = F(g, "a", 1, 2, IR_ROLE_ACTIVATION);
        ir_tid y = F(g, "y", 1, 2, IR_ROLE_ACTIVATION), tb = F(g, "table", 3, 2, IR_ROLE_STATE);
        struct ir_dst row = ir_dst_own(y);
        row.buf = tb;
        row.row = IR_ROWSEL_FIXED;
        row.row_fixed = 3;
        row.row_cols = 2;
        struct ir_op sc = P(IR_KIND_SCALE, a, 1, x);
        sc.spec.u.scale = (struct ir_scale){2, 4.0};
        struct ir_op ng = P(IR_KIND_SCALE, y, 1, a);
        ng.spec.u.scale = (struct ir_scale){2, -1.0};
        if (on_part)
            ng.dst = row;
        struct ir_op *inner = malloc(sizeof *inner * 2), *outer = malloc(sizeof *outer);
        inner[0] = sc;
        inner[1] = ng;
        outer[0] = ir_op_fused(IR_CLASS_ELEMENTWISE_CHAINS, inner, 2, &x, NULL, 1, y, on_part ? row : ir_dst_own(y));
        struct ir_op op = ir_op_fused(IR_CLASS_ELEMENTWISE_CHAINS, outer, 1, &x, NULL, 1, y, row);
        ir_graph_push(g, op);
        struct ir_values *v = values(g);
        put(v, tb, (const float[]){0, 0, 0, 0, 0, 0}, 6);
        put(v, x, (const float[]){1, -2}, 2);
        if (run(g, v)) {
            expect_exact(v, a, (const float[]){4, -8}, 2, "inner result kept");
            expect_exact(v, y, (const float[]){-4, 8}, 2, "fused result");
            expect_exact(v, tb, (const float[]){0, 0, 0, 0, -4, 8}, 6, "fused placement");
        }
        ir_values_free(v);
        ir_graph_free(g);
    }
}

/* Evaluation is deterministic: the same graph twice gives the same bytes in every tensor. */
static void test_determinism(void)
{
    struct ir_graph *g = blk_graph(false, false);
    struct ir_values *a = values(g), *b = values(g);
    run(g, a);
    run(g, b);
    for (ir_tid t = 0; t < g->ntensors; t++)
        CHECKF(memcmp(ir_values_cdata(a, t), ir_values_cdata(b, t), sizeof(float) * (size_t)ir_tensor_len(g, t)) == 0,
               "tensor %s", g->tensors[t].name);
    /* A different seed gives different inputs. */
    char err[IR_ERR_LEN];
    struct ir_values *c = ir_values_new(g, 2, err);
    ir_tid x = ir_tensor_find(g, "x", 1);
    CHECK(c && memcmp(ir_values_cdata(a, x), ir_values_cdata(c, x), sizeof(float) * 8) != 0);
    ir_values_free(a);
    ir_values_free(b);
    ir_values_free(c);
    ir_graph_free(g);
}

/* ── Filling ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* Filling follows role and use: activations zero, rope tables rotary, norm weights near 1, weights scaled by their
 * contracted width, indices in range, A_log and dt_bias sensible. */
static void test_filling(void)
{
    struct ir_graph *g = blk_graph(false, false);
    struct ir_values *v = values(g);
    const float *cs = ir_values_cdata(v, ir_tensor_find(g, "rope.cos", 8));
    const float *sn = ir_values_cdata(v, ir_tensor_find(g, "rope.sin", 8));
    /* Row p, col i: cos(p · 10000^(−i/2)). */
    CHECK(cs[0] == 1.0f && cs[1] == 1.0f && sn[0] == 0.0f && sn[1] == 0.0f);
    CHECK(cs[2] == (float)cos(1.0) && sn[3] == (float)sin(pow(10000.0, -0.5)) && cs[10] == (float)cos(5.0));
    const float *w = ir_values_cdata(v, ir_tensor_find(g, "norm.w", 6));
    bool near1 = true, zero = true;
    for (int i = 0; i < 8; i++)
        near1 = near1 && w[i] >= 0.9f && w[i] <= 1.1f;
    const float *h = ir_values_cdata(v, ir_tensor_find(g, "h", 1));
    for (int i = 0; i < 8; i++)
        zero = zero && h[i] == 0.0f;
    CHECK(near1 && zero);
    ir_values_free(v);
    ir_graph_free(g);

    g = ir_graph_new();
    ir_tid x = F(g, "x", 1, 64, IR_ROLE_INPUT), wt = F(g, "w", 64, 4, IR_ROLE_CONSTANT);
    ir_tid y = F(g, "y", 1, 4, IR_ROLE_ACTIVATION), tb = F(g, "emb", 5, 4, IR_ROLE_CONSTANT);
    ir_tid ix = T(g, "ids", IR_ELEM_I32, 1, 50, IR_ROLE_INPUT), gy = F(g, "gy", 50, 4, IR_ROLE_ACTIVATION);
    ir_tid a = F(g, "a", 1, 2, IR_ROLE_INPUT), al = F(g, "A_log", 1, 2, IR_ROLE_CONSTANT);
    ir_tid dt = F(g, "dt_bias", 1, 2, IR_ROLE_CONSTANT), dy = F(g, "dy", 1, 2, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_MATMUL, y, 2, x, wt);
    op.spec.u.matmul = (struct ir_matmul){1, 64, 4};
    ir_graph_push(g, op);
    op = P(IR_KIND_ROWS_GATHER, gy, 2, tb, ix);
    op.spec.u.rows_gather = (struct ir_rows_gather){5, 4, 50};
    ir_graph_push(g, op);
    op = P(IR_KIND_DECAY, dy, 3, a, al, dt);
    op.spec.u.decay = (struct ir_decay){2, 1};
    ir_graph_push(g, op);
    v = values(g);
    const float *wv = ir_values_cdata(v, wt), *iv = ir_values_cdata(v, ix);
    bool scaled = true, inrange = true, seen4 = false;
    for (int i = 0; i < 256; i++)
        scaled = scaled && fabsf(wv[i]) <= 0.125f;
    for (int i = 0; i < 50; i++) {
        inrange = inrange && iv[i] >= 0 && iv[i] <= 4 && iv[i] == floorf(iv[i]);
        seen4 = seen4 || iv[i] == 4;
    }
    CHECK(scaled && inrange && seen4);
    const float *av = ir_values_cdata(v, al), *dv = ir_values_cdata(v, dt);
    CHECK(av[0] >= 0.0f && av[0] <= logf(16.0f) && dv[0] > -7.0f && dv[0] < -2.0f);
    run(g, v);
    ir_values_free(v);
    ir_graph_free(g);
}

/* ── Checkpoint constants ────────────────────────────────────────────────────────────────────────────────── */

/* A q8_0 matmul equals the f32 matmul by its dequantized values, bit for bit; its memory is the quantized size. */
static void test_checkpoint_matmul(void)
{
    /* Not transposed: the checkpoint's stored values are its plain twin's values (same name, same use), so the
     * twin, quantized and dequantized row by row here, is what the evaluator must multiply by. */
    struct ir_graph *gq = ir_graph_new(), *gp = ir_graph_new();
    ir_tid xq = F(gq, "x", 2, 64, IR_ROLE_INPUT), wq = F(gq, "w", 64, 3, IR_ROLE_CONSTANT);
    ir_tid yq = F(gq, "y", 2, 3, IR_ROLE_ACTIVATION);
    ir_tid xp = F(gp, "x", 2, 64, IR_ROLE_INPUT), wp = F(gp, "w", 64, 3, IR_ROLE_CONSTANT);
    ir_tid yp = F(gp, "y", 2, 3, IR_ROLE_ACTIVATION);
    (void)xp;
    (void)xq;
    gq->tensors[wq].checkpoint = true;
    gq->tensors[wq].format = IR_FMT_Q8_0;
    gq->tensors[wq].transposed = true; /* stored 3 rows of 64 values */
    gq->tensors[yq].observed = gp->tensors[yp].observed = true;
    struct ir_op op = P(IR_KIND_MATMUL, yq, 2, xq, wq);
    op.spec.u.matmul = (struct ir_matmul){2, 64, 3};
    ir_graph_push(gq, op);
    op = P(IR_KIND_MATMUL, yp, 2, xp, wp);
    op.spec.u.matmul = (struct ir_matmul){2, 64, 3};
    ir_graph_push(gp, op);
    /* gq also gathers every logical row of w (the dequantized matrix, through a different path). */
    ir_tid ids = T(gq, "ids", IR_ELEM_I32, 1, 64, IR_ROLE_INPUT), all = F(gq, "wrows", 64, 3, IR_ROLE_ACTIVATION);
    op = P(IR_KIND_ROWS_GATHER, all, 2, wq, ids);
    op.spec.u.rows_gather = (struct ir_rows_gather){64, 3, 64};
    ir_graph_push(gq, op);
    struct ir_values *vq = values(gq), *vp = values(gp);
    CHECK(ir_values_data(vq, wq) == NULL && ir_values_cdata(vp, wp) != NULL);
    /* Memory: x, y, ids, wrows as f32; w as 3 rows of two q8_0 blocks (34 bytes each). */
    size_t want = (size_t)(128 + 6 + 64 + 192) * 4 + 3 * 2 * 34;
    CHECKF(ir_values_bytes(vq) == want && ir_values_plan_bytes(gq) == (int64_t)want, "bytes %zu want %zu",
           ir_values_bytes(vq), want);
    float id[64];
    for (int i = 0; i < 64; i++)
        id[i] = (float)i;
    put(vq, ids, id, 64);
    if (run(gq, vq)) {
        /* The dequantized matrix, gathered row by row: x times it here, in the documented order, bit for bit. */
        const float *W = ir_values_cdata(vq, all), *X = ir_values_cdata(vq, xq), *Y = ir_values_cdata(vq, yq);
        float ref[6];
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) {
                float acc = 0.0f;
                for (int t = 0; t < 64; t++) {
                    float p = X[i * 64 + t] * W[t * 3 + j];
                    acc += p;
                }
                ref[i * 3 + j] = acc;
            }
        CHECK(memcmp(ref, Y, sizeof ref) == 0);
        /* And the gathered values are real (not a zero matrix that would match anything). */
        bool nonzero = false;
        for (int i = 0; i < 192; i++)
            nonzero = nonzero || W[i] != 0.0f;
        CHECK(nonzero);
    }
    ir_values_free(vq);
    ir_values_free(vp);
    ir_graph_free(gq);
    ir_graph_free(gp);

    /* Not transposed (stored as k rows of n = 32 values): the twin's values quantized here match. */
    gq = ir_graph_new();
    gp = ir_graph_new();
    xq = F(gq, "x", 3, 4, IR_ROLE_INPUT);
    wq = F(gq, "w", 4, 32, IR_ROLE_CONSTANT);
    yq = F(gq, "y", 3, 32, IR_ROLE_ACTIVATION);
    xp = F(gp, "x", 3, 4, IR_ROLE_INPUT);
    wp = F(gp, "w", 4, 32, IR_ROLE_CONSTANT);
    yp = F(gp, "y", 3, 32, IR_ROLE_ACTIVATION);
    gq->tensors[wq].checkpoint = true;
    gq->tensors[wq].format = IR_FMT_Q8_0;
    gq->tensors[yq].observed = gp->tensors[yp].observed = true;
    op = P(IR_KIND_MATMUL, yq, 2, xq, wq);
    op.spec.u.matmul = (struct ir_matmul){3, 4, 32};
    ir_graph_push(gq, op);
    op = P(IR_KIND_MATMUL, yp, 2, xp, wp);
    op.spec.u.matmul = (struct ir_matmul){3, 4, 32};
    ir_graph_push(gp, op);
    vq = values(gq);
    vp = values(gp);
    float *W = ir_values_data(vp, wp);
    unsigned char blk[34];
    for (int r = 0; r < 4; r++) {
        CHECK(ir_ggml_quantize(IR_FMT_Q8_0, W + r * 32, 32, blk) == 0);
        ir_ggml_dequantize(IR_FMT_Q8_0, blk, 32, W + r * 32);
    }
    CHECK(ir_values_bytes(vq) == (size_t)(12 + 96) * 4 + 4 * 34);
    if (run(gq, vq) && run(gp, vp)) {
        struct ir_compare c = ir_values_compare(gq, vq, gp, vp);
        CHECKF(c.identical && c.compared == 1, "q8_0 vs dequantized f32: index %lld %.9g vs %.9g", (long long)c.index,
               (double)c.a, (double)c.b);
    }
    ir_values_free(vq);
    ir_values_free(vp);
    ir_graph_free(gq);
    ir_graph_free(gp);
}

/* A checkpoint embedding table gathered by a named row, and a checkpoint whose rows are not whole blocks. */
static void test_checkpoint_misc(void)
{
    struct ir_graph *gq = ir_graph_new(), *gp = ir_graph_new();
    struct ir_graph *gs[2] = {gq, gp};
    ir_tid e[2], y[2];
    for (int i = 0; i < 2; i++) {
        e[i] = F(gs[i], "tok_embd", 6, 64, IR_ROLE_CONSTANT);
        ir_tid id = T(gs[i], "tok", IR_ELEM_I32, 1, 1, IR_ROLE_INPUT);
        y[i] = F(gs[i], "emb", 1, 64, IR_ROLE_ACTIVATION);
        gs[i]->tensors[y[i]].observed = true;
        struct ir_op op = P(IR_KIND_ROW_GATHER, y[i], 2, e[i], id);
        op.spec.u.row_gather = (struct ir_row_gather){6, 64, {IR_RIDX_NAMED, 0}};
        ir_graph_push(gs[i], op);
    }
    gq->tensors[e[0]].checkpoint = true;
    gq->tensors[e[0]].format = IR_FMT_Q8_0;
    struct ir_values *vq = values(gq), *vp = values(gp);
    float *W = ir_values_data(vp, e[1]);
    unsigned char blk[68];
    for (int r = 0; r < 6; r++) {
        ir_ggml_quantize(IR_FMT_Q8_0, W + r * 64, 64, blk);
        ir_ggml_dequantize(IR_FMT_Q8_0, blk, 64, W + r * 64);
    }
    if (run(gq, vq) && run(gp, vp))
        CHECK(ir_values_compare(gq, vq, gp, vp).identical);
    ir_values_free(vq);
    ir_values_free(vp);
    ir_graph_free(gq);
    ir_graph_free(gp);

    struct ir_graph *g = ir_graph_new();
    ir_tid w = F(g, "w", 3, 40, IR_ROLE_CONSTANT);
    g->tensors[w].checkpoint = true;
    g->tensors[w].format = IR_FMT_Q4_K;
    char err[IR_ERR_LEN] = "";
    struct ir_values *v = ir_values_new(g, 1, err);
    CHECKF(!v && strstr(err, "not whole blocks"), "%s", err);
    CHECK(ir_values_plan_bytes(g) == -1);
    ir_values_free(v);
    ir_graph_free(g);
}

/* ── Errors ──────────────────────────────────────────────────────────────────────────────────────────────── */

/* Bad graphs give errors, not crashes: too large, values of another graph, a short operand, a bad symbol. */
/* A fused op's parts read only its operands and its own results: an operand list naming another tensor where a part
 * reads one (the router of another row, say) fails evaluation naming the part, the tensor and the fused op. */
static void test_fused_scope(void)
{
    const char *text = "tensor a f32 1x8 input\ntensor b f32 1x8 input\ntensor other f32 1x8 input\n"
                       "tensor s f32 1x8 activation\ntensor y f32 1x8 activation observed\n"
                       "fused glu_act_mul y = (b, a) {\n    op s = sigmoid(b) n=8\n"
                       "    op y = elementwise(a, s) op=mul n=8\n}\n";
    char err[IR_ERR_LEN];
    struct ir_graph *g = ir_parse(text, strlen(text), "scope", err);
    CHECKF(g != NULL, "%s", err);
    if (!g)
        return;
    struct ir_values *v = values(g);
    CHECKF(ir_eval(g, v, err) == 0, "the faithful operands evaluate: %s", err);
    ir_values_free(v);
    g->ops[0].ins[1] = ir_tensor_find(g, "other", 5);
    v = values(g);
    run_fails(g, v, "op 0 (elementwise): reads 'a', which its fused op glu_act_mul (result 'y') does not take");
    ir_values_free(v);
    ir_graph_free(g);
}

static void test_errors(void)
{
    struct ir_graph *g = ir_graph_new();
    F(g, "huge", (int64_t)1 << 30, (int64_t)1 << 10, IR_ROLE_INPUT);
    char err[IR_ERR_LEN] = "";
    struct ir_values *v = ir_values_new(g, 1, err);
    CHECKF(!v && strstr(err, "limit"), "%s", err);
    ir_graph_free(g);

    g = ir_graph_new();
    ir_tid x = F(g, "x", 1, 4, IR_ROLE_INPUT), y = F(g, "y", 1, 8, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_SILU, y, 1, x);
    op.spec.u.unary = (struct ir_unary){8};
    ir_graph_push(g, op);
    v = values(g);
    run_fails(g, v, "op 0 (silu): operand 0 (x) holds 4 values, the op reads 8");
    struct ir_graph *other = ir_graph_new();
    F(other, "x", 1, 4, IR_ROLE_INPUT);
    CHECK(ir_eval(other, v, err) != 0 && strstr(err, "not made for this graph"));
    ir_graph_free(other);
    ir_values_free(v);
    ir_graph_free(g);

    g = ir_graph_new();
    x = F(g, "x", 1, 4, IR_ROLE_INPUT);
    y = F(g, "y", 1, 4, IR_ROLE_ACTIVATION);
    op = P(IR_KIND_SCALE, y, 1, x);
    op.spec.u.scale = (struct ir_scale){(int64_t)1 << 62, 1.0};
    ir_graph_push(g, op);
    op = P(IR_KIND_SILU, y, 1, x);
    op.sym = IR_SYM_QUANT;
    op.quant_words = 3;
    ir_graph_push(g, op);
    v = values(g);
    run_fails(g, v, "out of range");
    char err2[IR_ERR_LEN];
    CHECK(ir_eval_ops(g, g->ops + 1, 1, v, err2) != 0 && strstr(err2, "3 words"));
    ir_values_free(v);
    ir_graph_free(g);
}

/* ── Compile independence ────────────────────────────────────────────────────────────────────────────────── */

/* FNV-1a (64 bits) over every tensor's values in order: the evaluation's bytes in one number. */
static uint64_t digest(const struct ir_graph *g, const struct ir_values *v)
{
    uint64_t h = 14695981039346656037ull;
    for (ir_tid t = 0; t < g->ntensors; t++) {
        const unsigned char *p = (const unsigned char *)ir_values_cdata(v, t);
        size_t n = p ? sizeof(float) * (size_t)ir_tensor_len(g, t) : 0;
        for (size_t i = 0; i < n; i++)
            h = (h ^ p[i]) * 1099511628211ull;
    }
    return h;
}

/* A chain of the ops whose meaning needs only IEEE's correctly rounded + − × ÷ √ (and whose filling needs no
 * libm): products, norms, elementwise, per-head products, join, L2 norm, quantize, convolution, row set, scale. */
static struct ir_graph *ieee_graph(void)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", 4, 32, IR_ROLE_INPUT), w1 = F(g, "w1", 32, 64, IR_ROLE_CONSTANT);
    ir_tid h = F(g, "h", 4, 64, IR_ROLE_ACTIVATION), nw = F(g, "nw", 1, 64, IR_ROLE_CONSTANT);
    ir_tid res = F(g, "res", 4, 64, IR_ROLE_INPUT), n = F(g, "n", 4, 64, IR_ROLE_ACTIVATION);
    ir_tid m = F(g, "m", 4, 64, IR_ROLE_ACTIVATION), hw = F(g, "hw", 64, 4, IR_ROLE_CONSTANT);
    ir_tid hm = F(g, "hm", 4, 8, IR_ROLE_ACTIVATION), jb = F(g, "jb", 4, 4, IR_ROLE_INPUT);
    ir_tid jy = F(g, "jy", 4, 12, IR_ROLE_ACTIVATION), l2 = F(g, "l2", 4, 12, IR_ROLE_ACTIVATION);
    ir_tid q = F(g, "q", 4, 12, IR_ROLE_ACTIVATION), cw = F(g, "cw", 12, 4, IR_ROLE_CONSTANT);
    ir_tid ring = F(g, "ring", 3, 12, IR_ROLE_STATE), cy = F(g, "cy", 4, 12, IR_ROLE_ACTIVATION);
    ir_tid cache = F(g, "cache", 8, 12, IR_ROLE_STATE), at = T(g, "at", IR_ELEM_I32, 1, 1, IR_ROLE_PARAM);
    ir_tid sc = F(g, "sc", 4, 12, IR_ROLE_ACTIVATION), qm = F(g, "qm", 4, 64, IR_ROLE_ACTIVATION);
    struct ir_op op = P(IR_KIND_MATMUL, h, 2, x, w1);
    op.spec.u.matmul = (struct ir_matmul){4, 32, 64};
    ir_graph_push(g, op);
    op = P(IR_KIND_RMS_NORM, n, 3, h, nw, res);
    op.spec.u.rms_norm = (struct ir_rms_norm){4, 64, 1e-6, true, 0.0, true, IR_NORM_RMS, false};
    ir_graph_push(g, op);
    op = P(IR_KIND_ELEMENTWISE, m, 2, n, h);
    op.spec.u.elementwise = (struct ir_elementwise){IR_EW_MUL, 256, 0};
    ir_graph_push(g, op);
    op = P(IR_KIND_HEAD_MATMUL, hm, 2, m, hw);
    op.spec.u.head_matmul = (struct ir_head_matmul){4, 2, 32, 4};
    ir_graph_push(g, op);
    op = P(IR_KIND_JOIN, jy, 2, hm, jb);
    op.spec.u.join = (struct ir_join){4, 2, 8, 4};
    ir_graph_push(g, op);
    op = P(IR_KIND_L2_NORM, l2, 1, jy);
    op.spec.u.l2_norm = (struct ir_l2_norm){4, 12, 1e-6};
    ir_graph_push(g, op);
    op = P(IR_KIND_SILU, q, 1, l2);
    op.sym = IR_SYM_QUANT;
    op.quant_words = 2;
    ir_graph_push(g, op);
    op = P(IR_KIND_CAUSAL_CONV, cy, 3, q, cw, ring);
    op.spec.u.causal_conv = (struct ir_causal_conv){12, 4, 4};
    ir_graph_push(g, op);
    op = P(IR_KIND_SET_ROW, cache, 3, cache, cy, at);
    op.spec.u.set_row = (struct ir_set_row){8, 12, 4, {IR_RIDX_NAMED, 0}};
    ir_graph_push(g, op);
    op = P(IR_KIND_SCALE, sc, 1, cy);
    op.spec.u.scale = (struct ir_scale){48, 0.5};
    ir_graph_push(g, op);
    op = P(IR_KIND_SILU, qm, 1, m);
    op.sym = IR_SYM_QUANT;
    op.quant_words = 1;
    ir_graph_push(g, op);
    return g;
}

/* Push a unary-family op (silu, sigmoid, gelu, relu) of n values. */
static void push_unary(struct ir_graph *g, enum ir_kind k, ir_tid x, ir_tid y, int64_t n)
{
    struct ir_op op = P(k, y, 1, x);
    op.spec.u.unary = (struct ir_unary){n};
    ir_graph_push(g, op);
}

/* The IEEE chain extended by every other kind: activations, soft cap, a mixture, gated delta with its gates, rope,
 * attention with sinks, a window and a cap, arg-max, gathers, a view, a head slice. */
static struct ir_graph *every_kind_graph(void)
{
    struct ir_graph *g = ieee_graph();
    ir_tid l2 = ir_tensor_find(g, "l2", 2), q = ir_tensor_find(g, "q", 1), cy = ir_tensor_find(g, "cy", 2);
    ir_tid sc = ir_tensor_find(g, "sc", 2), cache = ir_tensor_find(g, "cache", 5), at = ir_tensor_find(g, "at", 2);
    ir_tid s1 = F(g, "s1", 4, 12, IR_ROLE_ACTIVATION), s2 = F(g, "s2", 4, 12, IR_ROLE_ACTIVATION);
    ir_tid s3 = F(g, "s3", 4, 12, IR_ROLE_ACTIVATION), s4 = F(g, "s4", 4, 12, IR_ROLE_ACTIVATION);
    ir_tid s5 = F(g, "s5", 4, 12, IR_ROLE_ACTIVATION), sw = F(g, "sw", 4, 12, IR_ROLE_ACTIVATION);
    push_unary(g, IR_KIND_SILU, sc, s1, 48);
    push_unary(g, IR_KIND_SIGMOID, s1, s2, 48);
    push_unary(g, IR_KIND_GELU, s2, s3, 48);
    push_unary(g, IR_KIND_RELU, s3, s4, 48);
    struct ir_op op = P(IR_KIND_SOFTCAP, s5, 1, s4);
    op.spec.u.softcap = (struct ir_softcap){48, 0.75};
    ir_graph_push(g, op);
    op = P(IR_KIND_SWIGLU, sw, 2, s5, sc);
    op.spec.u.swiglu = (struct ir_swiglu){48};
    ir_graph_push(g, op);
    /* A mixture over row 2 of cy, read through a view. */
    ir_tid xm = F(g, "xm", 1, 12, IR_ROLE_ACTIVATION), rt = F(g, "router", 12, 4, IR_ROLE_CONSTANT);
    ir_tid eg = F(g, "exp.gate", 12, 32, IR_ROLE_CONSTANT), eu = F(g, "exp.up", 12, 32, IR_ROLE_CONSTANT);
    ir_tid ed = F(g, "exp.down", 8, 48, IR_ROLE_CONSTANT), mo = F(g, "mo", 1, 12, IR_ROLE_ACTIVATION);
    op = P(IR_KIND_ROW_GATHER, xm, 1, cy);
    op.sym = IR_SYM_VIEW;
    op.view_offset = 24;
    ir_graph_push(g, op);
    op = P(IR_KIND_MOE, mo, 5, xm, rt, eg, eu, ed);
    op.spec.u.moe = (struct ir_moe){.d = 12, .k = 2, .dff = 8, .experts = 4, .act = IR_MOE_GEGLU};
    ir_graph_push(g, op);
    /* Gated delta over 4 rows of 3 heads (dk = dv = 4), its gates from a sigmoid and a decay. */
    ir_tid gb = F(g, "gb", 4, 3, IR_ROLE_INPUT), gbs = F(g, "beta", 4, 3, IR_ROLE_ACTIVATION);
    ir_tid ga = F(g, "ga", 4, 3, IR_ROLE_INPUT), alog = F(g, "A_log", 1, 3, IR_ROLE_CONSTANT);
    ir_tid dtb = F(g, "dt_bias", 1, 3, IR_ROLE_CONSTANT), gg = F(g, "gdecay", 4, 3, IR_ROLE_ACTIVATION);
    ir_tid st = F(g, "ssm", 12, 4, IR_ROLE_STATE), gw = F(g, "ssm.norm", 1, 4, IR_ROLE_CONSTANT);
    ir_tid go = F(g, "gdn.out", 4, 12, IR_ROLE_ACTIVATION);
    push_unary(g, IR_KIND_SIGMOID, gb, gbs, 12);
    op = P(IR_KIND_DECAY, gg, 3, ga, alog, dtb);
    op.spec.u.decay = (struct ir_decay){12, 4};
    ir_graph_push(g, op);
    op = P(IR_KIND_GATED_DELTA, go, 8, l2, q, cy, sc, gbs, gg, st, gw);
    op.spec.u.gated_delta = (struct ir_gated_delta){3, 4, 4, 4, IR_GATE_SIGMOID, 1e-6, 0};
    ir_graph_push(g, op);
    /* Rope (3 heads a row) at the named position, attention over the cache and a second one. */
    ir_tid cs = F(g, "cos", 16, 2, IR_ROLE_CONSTANT), sn = F(g, "sin", 16, 2, IR_ROLE_CONSTANT);
    ir_tid qr = F(g, "qr", 4, 12, IR_ROLE_ACTIVATION), vc = F(g, "vcache", 8, 12, IR_ROLE_STATE);
    ir_tid sk = F(g, "sinks", 1, 3, IR_ROLE_CONSTANT), ao = F(g, "attn", 4, 12, IR_ROLE_ACTIVATION);
    op = P(IR_KIND_ROPE, qr, 4, go, cs, sn, at);
    op.spec.u.rope = (struct ir_rope){12, 4, 2, 4, {IR_RIDX_NAMED, 0}, {false, 0.0}, false, {0}};
    ir_graph_push(g, op);
    op = P(IR_KIND_ATTENTION, ao, 5, qr, cache, vc, at, sk);
    op.spec.u.attention = (struct ir_attention){3, 3, 4, 4, 8, 4, {IR_RIDX_NAMED, 0}, {false, 0}, {true, 20.0},
                                                true, 3};
    ir_graph_push(g, op);
    /* Arg-max per row, its tokens' embeddings, one named token's, and a head slice of the attention. */
    ir_tid am = T(g, "next", IR_ELEM_I32, 4, 1, IR_ROLE_ACTIVATION), emb = F(g, "emb", 16, 12, IR_ROLE_CONSTANT);
    ir_tid ge = F(g, "gathered", 4, 12, IR_ROLE_ACTIVATION), tok = T(g, "tok", IR_ELEM_I32, 1, 1, IR_ROLE_INPUT);
    ir_tid e1 = F(g, "e1", 1, 12, IR_ROLE_ACTIVATION), hs = F(g, "hs", 4, 6, IR_ROLE_ACTIVATION);
    op = P(IR_KIND_ARGMAX, am, 1, ao);
    op.spec.u.argmax = (struct ir_argmax){4, 12};
    ir_graph_push(g, op);
    op = P(IR_KIND_ROWS_GATHER, ge, 2, emb, am);
    op.spec.u.rows_gather = (struct ir_rows_gather){16, 12, 4};
    ir_graph_push(g, op);
    op = P(IR_KIND_ROW_GATHER, e1, 2, emb, tok);
    op.spec.u.row_gather = (struct ir_row_gather){16, 12, {IR_RIDX_NAMED, 0}};
    ir_graph_push(g, op);
    op = P(IR_KIND_HEAD_SLICE, hs, 1, ao);
    op.spec.u.head_slice = (struct ir_head_slice){48, 4, 1, 2};
    ir_graph_push(g, op);
    return g;
}

/* The IEEE chain's bytes are one fixed digest under every compiler and optimisation level (no contraction into
 * fused multiply-adds, no reordered sums). The digest changes only if the meaning or the filling does: then
 * docs/semantics.md changes too and this number with it. */
#define IEEE_DIGEST 0xf205dbe1dfaaed54ull

static void test_compile_independence(void)
{
    struct ir_graph *g = ieee_graph();
    struct ir_values *v = values(g);
    if (run(g, v)) {
        uint64_t d = digest(g, v);
        CHECKF(d == IEEE_DIGEST, "digest 0x%016llx", (unsigned long long)d);
    }
    ir_values_free(v);
    ir_graph_free(g);
    /* Every kind (libm's exp, tanh, sin... included): printed, for comparing builds by hand. */
    struct ir_graph *b = every_kind_graph();
    v = values(b);
    bool seen[IR_KIND_COUNT] = {false};
    for (int32_t i = 0; i < b->nops; i++)
        if (b->ops[i].sym == IR_SYM_PRIM)
            seen[b->ops[i].spec.kind] = true;
    for (int k = 0; k < IR_KIND_COUNT; k++)
        CHECKF(seen[k], "kind %s missing from the every-kind graph", ir_kind_name((enum ir_kind)k));
    if (run(b, v))
        printf("test_eval: every-kind digest 0x%016llx\n", (unsigned long long)digest(b, v));
    ir_values_free(v);
    ir_graph_free(b);
}

/* A rewritten graph filled like its lifted graph gets the lifted graph's values, even where the rewrite changed how
 * a tensor is used (here: a weight read by a product in one graph and by an add in the other). */
static void test_filled_like(void)
{
    char err[IR_ERR_LEN];
    struct ir_graph *a = ir_graph_new(), *b = ir_graph_new();
    ir_tid ax = ir_tensor_add(a, "x", IR_ELEM_F32, 1, 32, IR_ROLE_INPUT);
    ir_tid aw = ir_tensor_add(a, "w", IR_ELEM_F32, 32, 64, IR_ROLE_CONSTANT);
    ir_tid ay = ir_tensor_add(a, "y", IR_ELEM_F32, 1, 64, IR_ROLE_ACTIVATION);
    ir_tid ins[2] = {ax, aw};
    struct ir_op op = ir_op_prim(IR_KIND_MATMUL, ins, 2, ay);
    op.spec.u.matmul = (struct ir_matmul){1, 32, 64};
    ir_graph_push(a, op);
    ir_tid bw = ir_tensor_add(b, "w", IR_ELEM_F32, 32, 64, IR_ROLE_CONSTANT);
    ir_tid bz = ir_tensor_add(b, "z", IR_ELEM_F32, 32, 64, IR_ROLE_ACTIVATION);
    ir_tid bins[2] = {bw, bw};
    op = ir_op_prim(IR_KIND_ELEMENTWISE, bins, 2, bz);
    op.spec.u.elementwise = (struct ir_elementwise){IR_EW_ADD, 2048, 0};
    ir_graph_push(b, op);
    struct ir_values *va = ir_values_new(a, 5, err), *vb = ir_values_new(b, 5, err),
                     *like = ir_values_new_like(b, 5, a, err);
    CHECK(va && vb && like);
    if (va && vb && like) {
        size_t bytes = sizeof(float) * 2048;
        CHECK(memcmp(ir_values_cdata(va, aw), ir_values_cdata(vb, bw), bytes) != 0);
        CHECK(memcmp(ir_values_cdata(va, aw), ir_values_cdata(like, bw), bytes) == 0);
    }
    ir_values_free(va);
    ir_values_free(vb);
    ir_values_free(like);
    ir_graph_free(a);
    ir_graph_free(b);
}

/* One graph of the shared-values test: y = x times a checkpoint weight w, z = x plus a plain constant c, and a
 * constant p of the shape given (the donor and the graph filled from it disagree on p's shape). */
static struct ir_graph *shared_graph(int64_t p_cols, ir_tid *y, ir_tid *z, ir_tid *c, ir_tid *p)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid x = F(g, "x", 2, 64, IR_ROLE_INPUT), w = F(g, "w", 64, 3, IR_ROLE_CONSTANT);
    *c = F(g, "c", 2, 64, IR_ROLE_CONSTANT);
    *p = F(g, "p", 1, p_cols, IR_ROLE_CONSTANT);
    *y = F(g, "y", 2, 3, IR_ROLE_ACTIVATION);
    *z = F(g, "z", 2, 64, IR_ROLE_ACTIVATION);
    g->tensors[w].checkpoint = true;
    g->tensors[w].format = IR_FMT_Q8_0;
    g->tensors[w].transposed = true;
    struct ir_op op = P(IR_KIND_MATMUL, *y, 2, x, w);
    op.spec.u.matmul = (struct ir_matmul){2, 64, 3};
    ir_graph_push(g, op);
    op = P(IR_KIND_ELEMENTWISE, *z, 2, x, *c);
    op.spec.u.elementwise = (struct ir_elementwise){IR_EW_ADD, 128, 0};
    ir_graph_push(g, op);
    return g;
}

/* Values shared from an evaluated donor are the values filling would give: the twin constants (a checkpoint weight
 * and a plain one) copied, a constant whose shape differs generated, and evaluation bit-identical either way. */
static void test_shared_constants(void)
{
    char err[IR_ERR_LEN] = "";
    ir_tid ay, az, ac, ap, by, bz, bc, bp;
    struct ir_graph *a = shared_graph(64, &ay, &az, &ac, &ap), *b = shared_graph(32, &by, &bz, &bc, &bp);
    struct ir_values *donor = ir_values_new_like(a, 7, a, err);
    CHECK(donor && run(a, donor));
    struct ir_values *shared = donor ? ir_values_new_shared(b, 7, a, a, donor, err) : NULL;
    struct ir_values *like = ir_values_new_like(b, 7, a, err);
    CHECK(shared && like);
    if (donor && shared && like) {
        CHECK(memcmp(ir_values_cdata(shared, bc), ir_values_cdata(donor, ac), sizeof(float) * 128) == 0);
        CHECK(memcmp(ir_values_cdata(shared, bp), ir_values_cdata(like, bp), sizeof(float) * 32) == 0);
        CHECK(ir_values_bytes(shared) == ir_values_bytes(like));
        CHECK(run(b, shared) && run(b, like));
        CHECK(memcmp(ir_values_cdata(shared, by), ir_values_cdata(like, by), sizeof(float) * 6) == 0);
        CHECK(memcmp(ir_values_cdata(shared, bz), ir_values_cdata(like, bz), sizeof(float) * 128) == 0);
        CHECK(memcmp(ir_values_cdata(shared, by), ir_values_cdata(donor, ay), sizeof(float) * 6) == 0);
    }
    ir_values_free(donor);
    ir_values_free(shared);
    ir_values_free(like);
    ir_graph_free(a);
    ir_graph_free(b);
}

int main(void)
{
    test_filled_like();
    test_shared_constants();
    test_matmul();
    test_elementwise();
    test_rms_norm();
    test_rope();
    test_rope_published();
    test_rope_scaled();
    test_norm_published();
    test_head_slice();
    test_gathers();
    test_set_row();
    test_attention();
    test_attention_strided_values();
    test_moe();
    test_moe_clamped();
    test_moe_routings();
    test_gated_delta();
    test_causal_conv();
    test_unary();
    test_small_binary();
    test_head_matmul();
    test_argmax();
    test_view();
    test_quantize();
    test_strided_read();
    test_destinations();
    test_rewritten_equals_lifted();
    test_fused_equals_parts();
    test_fused_placement();
    test_determinism();
    test_filling();
    test_checkpoint_matmul();
    test_checkpoint_misc();
    test_errors();
    test_stop();
    test_fused_scope();
    test_compile_independence();
    return check_done("test_eval");
}
