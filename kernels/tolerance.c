/* kernels/tolerance.c — the tolerance run: every launch of a rewritten graph on the host lane, against the
 * evaluator. Per launch, the launch's inputs are loaded from the reference's values (rounded into an f16 or bf16
 * buffer where the lane keeps one: the rounding is the input's measured error), the launch runs, and each tensor it
 * writes is compared element by element with the reference under the bound kernels/bounds.c carries through the
 * launch. It is done twice: against the reference `diff` uses (the lifted graph with the chip's quantize ops), and
 * against the lifted graph without them, where a quantized activation's value is held to its source's within the
 * activation mode's quantization bound. Then each step runs end to end on the lane's own buffers, and its logits are
 * compared with the reference's (NMSE, top-1, KL). */
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The seconds of a monotonic clock. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ── Values across graphs ────────────────────────────────────────────────────────────────────────────────── */

/* Copy every plain tensor of `from` (graph gf) into `to` (graph gt) that gt has by the same name and length. */
static void copy_by_name(const struct ir_graph *gt, struct ir_values *to, const struct ir_graph *gf,
                         const struct ir_values *from)
{
    for (ir_tid t = 0; t < gt->ntensors; t++) {
        float *d = ir_values_data(to, t);
        const char *name = gt->tensors[t].name;
        ir_tid f = ir_tensor_find(gf, name, strlen(name));
        const float *s = f != IR_NONE ? ir_values_cdata(from, f) : NULL;
        if (d && s && ir_tensor_len(gt, t) == ir_tensor_len(gf, f))
            memcpy(d, s, sizeof(float) * (size_t)ir_tensor_len(gt, t));
    }
}

/* The quantize op of g whose result is the tensor named `name`, or NULL. */
static const struct ir_op *quantize_of(const struct ir_graph *g, const char *name)
{
    return kernels_quantize_of(g, ir_tensor_find(g, name, strlen(name)));
}

/* Whether op (or a leaf within it) writes rows of t: a row set's table, or a result placed at rows of t. */
static bool writes_rows(const struct ir_op *op, ir_tid t)
{
    if (op->dst.buf == t && op->dst.row != IR_ROWSEL_NONE)
        return true;
    if (op->sym == IR_SYM_PRIM && op->spec.kind == IR_KIND_SET_ROW && op->nins > 0 && op->ins[0] == t)
        return true;
    for (int32_t k = 0; op->sym == IR_SYM_FUSED && k < op->nparts; k++)
        if (writes_rows(&op->parts[k], t))
            return true;
    return false;
}

/* Whether op (or a leaf within it) places its result in a part of every unit of t: t is written in parts, the rest
 * by other launches (the halves of a join written in place). */
static bool writes_units(const struct ir_op *op, ir_tid t)
{
    if (op->dst.buf == t && op->dst.has_unit && op->dst.unit.width < op->dst.unit.pitch)
        return true;
    for (int32_t k = 0; op->sym == IR_SYM_FUSED && k < op->nparts; k++)
        if (writes_units(&op->parts[k], t))
            return true;
    return false;
}

/* Whether state tensor t of g is a cache (rows written by a row set or placed at rows); else recurrent state. */
static bool is_cache(const struct ir_graph *g, ir_tid t)
{
    for (int32_t i = 0; i < g->nops; i++)
        if (writes_rows(&g->ops[i], t))
            return true;
    return false;
}

/* The storage the lane keeps tensor t of g in: a cache's type, recurrent state's, or f32. */
static enum shim_keep keep_of(const struct kernels_point *p, const struct ir_graph *g, ir_tid t)
{
    if (g->tensors[t].role != IR_ROLE_STATE || !g->tensors[t].carried)
        return SHIM_KEEP_F32;
    return is_cache(g, t) ? p->cache : p->state;
}

/* x rounded to a storage type (through the IEEE conversions the evaluator's formats use). */
static float keep_round(enum shim_keep k, float x)
{
    return k == SHIM_KEEP_F16 ? ir_f16_to_f32(ir_f32_to_f16(x)) : k == SHIM_KEEP_BF16 ? ir_bf16_to_f32(ir_f32_to_bf16(x)) : x;
}

/* Round every state tensor's values of g in v to the type the lane keeps it in: an f16 cache holds f16 values. */
static void round_states(const struct kernels_point *p, const struct ir_graph *g, struct ir_values *v)
{
    for (ir_tid t = 0; t < g->ntensors; t++) {
        enum shim_keep k = keep_of(p, g, t);
        float *d = k == SHIM_KEEP_F32 ? NULL : ir_values_data(v, t);
        for (int64_t i = 0; d && i < ir_tensor_len(g, t); i++)
            d[i] = keep_round(k, d[i]);
    }
}

/* Whether tensor t of g is recurrent state: carried state that is not a cache (a convolution's ring, a delta
 * rule's memory). */
static bool is_recurrent(const struct ir_graph *g, ir_tid t)
{
    return g->tensors[t].role == IR_ROLE_STATE && g->tensors[t].carried && !is_cache(g, t);
}

/* Swap the values of every recurrent state tensor op writes between a and b (made for g): a step's reference holds
 * the memory after the step, the launch reads it as it was before (twice restores both). */
static void swap_recurrent(const struct ir_graph *g, const struct ir_op *op, struct ir_values *a, struct ir_values *b)
{
    ir_tid w[512];
    int nw = ir_op_writes(op, w, 512);
    for (int k = 0; k < nw && k < 512; k++) {
        float *x = is_recurrent(g, w[k]) ? ir_values_data(a, w[k]) : NULL, *y = x ? ir_values_data(b, w[k]) : NULL;
        for (int64_t i = 0; y && i < ir_tensor_len(g, w[k]); i++) {
            float t = x[i];
            x[i] = y[i];
            y[i] = t;
        }
    }
}

/* ── Rows ────────────────────────────────────────────────────────────────────────────────────────────────── */

/* A new row at the end of the result; NULL when memory is short. */
static struct kernels_tol_row *row_new(struct kernels_tol_result *r)
{
    if (r->nrows == r->cap) {
        int32_t cap = r->cap ? 2 * r->cap : 64;
        struct kernels_tol_row *grown = realloc(r->rows, sizeof *grown * (size_t)cap);
        if (!grown)
            return NULL;
        r->rows = grown;
        r->cap = cap;
    }
    struct kernels_tol_row *row = &r->rows[r->nrows++];
    memset(row, 0, sizeof *row);
    return row;
}

/* Compare n lane values with the reference's under per-element bounds into row. */
static void compare(struct kernels_tol_row *row, const float *lane, const float *ref, const float *bound, int64_t n)
{
    double se = 0.0, sr = 0.0, worst = -1.0;
    row->elements = n;
    row->pass = true;
    for (int64_t i = 0; i < n; i++) {
        double l = lane[i], r = ref[i], b = bound[i];
        bool both_nan = l != l && r != r;
        double d = both_nan ? 0.0 : fabs(l - r);
        if (d != d)
            d = INFINITY;
        if (isinf(b))
            row->ambiguous++;
        se += d * d;
        sr += r == r ? r * r : 0.0;
        if (i == 0 || d > row->max_abs) { /* the largest error, first where it repeats, with its own bound */
            row->max_abs = d;
            row->max_abs_bound = b;
        }
        if (r != 0.0 && r == r && d / fabs(r) > row->max_rel)
            row->max_rel = d / fabs(r);
        double ratio = d == 0.0 ? 0.0 : b > 0.0 ? d / b : INFINITY;
        if (ratio > worst) {
            worst = ratio;
            row->worst = i;
            row->bound = b;
            row->lane = lane[i];
            row->ref = ref[i];
        }
        if (ratio > 1.0)
            row->pass = false;
    }
    row->ratio = worst < 0.0 ? 0.0 : worst;
    row->nmse = se == 0.0 ? 0.0 : sr > 0.0 ? se / sr : INFINITY;
}

/* Fail row unless every value an f16 or bf16 buffer holds is a value of that type. */
static void check_kept(struct kernels_tol_row *row, enum shim_keep k, const float *v, int64_t n)
{
    for (int64_t i = 0; k != SHIM_KEEP_F32 && i < n; i++)
        if (v[i] == v[i] && keep_round(k, v[i]) != v[i]) {
            row->pass = false;
            snprintf(row->why, sizeof row->why, "value %lld (%.9g) is not a %s value: the write did not round it",
                     (long long)i, (double)v[i], k == SHIM_KEEP_F16 ? "f16" : "bf16");
            return;
        }
}

/* ── One launch against one reference ────────────────────────────────────────────────────────────────────── */

/* What a per-launch comparison needs. */
struct run {
    const struct kernels_tol_input *in;
    struct kernels_lane *lane;
    struct ir_values *lanev, *bounds;  /* the launch's buffers and bounds, made for the rewritten graph */
    struct kernels_lane *host;         /* with a device: the host lane the device must equal, and its buffers */
    struct ir_values *hostv;
    struct kernels_tol_result *out;
    int32_t step;
    char *err;
};

/* The words a value is quantized in under the point's activation mode. */
static int mode_words(const struct kernels_point *p) { return kernels_acts_words(p->acts); }

/* A new row for launch i's kernel at the run's step; NULL with the run's error written when memory is short. */
static struct kernels_tol_row *launch_row(struct run *r, int32_t i, const char *kernel)
{
    struct kernels_tol_row *row = row_new(r->out);
    if (!row) {
        snprintf(r->err, IR_ERR_LEN, "out of memory");
        return NULL;
    }
    row->launch = i;
    row->kernel = kernel;
    row->step = r->step;
    return row;
}

/* A failing row for launch i (kernel) at the first of the n values of tensor t where `got` differs from `want` — bit
 * for bit when `bits`, else as numbers; a NaN equals a NaN — saying "<who> gives x at value e, <whom> y"; no row when
 * none differs. -1 only when memory is short. */
static int first_difference(struct run *r, int32_t i, const char *kernel, ir_tid t, const float *got,
                            const float *want, int64_t n, bool bits, bool unquantized, const char *who,
                            const char *whom)
{
    for (int64_t e = 0; e < n; e++) {
        bool same = bits ? memcmp(&got[e], &want[e], sizeof(float)) == 0 : got[e] == want[e];
        if (same || (got[e] != got[e] && want[e] != want[e]))
            continue;
        struct kernels_tol_row *row = launch_row(r, i, kernel);
        if (!row)
            return -1;
        row->unquantized = unquantized;
        snprintf(row->tensor, sizeof row->tensor, "%s", r->in->rewritten->tensors[t].name);
        row->elements = n;
        row->worst = e;
        row->lane = got[e];
        row->ref = want[e];
        row->max_abs = fabs((double)got[e] - want[e]);
        row->ratio = INFINITY;
        snprintf(row->why, sizeof row->why, "%s gives %.9g at value %lld, %s %.9g", who, (double)got[e],
                 (long long)e, whom, (double)want[e]);
        r->out->failed++;
        return 0;
    }
    return 0;
}

/* Against the quantized reference, the lane's quantize of a source must give the evaluator's values bit for bit
 * (the same arithmetic): a failing row when it does not. -1 only when memory is short. */
static int quantize_differs(struct run *r, int32_t i, ir_tid t, const float *lane, const float *ref, int64_t n)
{
    return first_difference(r, i, "quantize", t, lane, ref, n, false, false, "the lane's quantize", "the evaluator's");
}

/* Load the tensors launch i reads into the lane's buffers from `ref` (made for the rewritten graph), each bound set to
 * what loading it moved it. A quantized activation is loaded as the lane's quantize makes it from its source's
 * reference value (`src`, made for graph `sg`): against the quantized reference it must equal the evaluator's
 * bit for bit; against the unquantized one it carries its quantization error. */
static int load_inputs(struct run *r, int32_t i, const struct ir_values *ref, const struct ir_graph *sg,
                       const struct ir_values *src, bool unquantized)
{
    const struct ir_graph *g = r->in->rewritten;
    ir_tid reads[1024];
    int n = ir_op_reads(&g->ops[i], reads, 512);
    int nw = n <= 512 ? ir_op_writes(&g->ops[i], reads + n, 512) : 0;
    if (n > 512 || nw > 512) {
        snprintf(r->err, IR_ERR_LEN, "launch %d reads or writes more tensors than the tolerance run takes", (int)i);
        return -1;
    }
    int end = n + nw;
    /* The state it writes in place starts as the reference's too, and so does a tensor it writes only parts of every
     * unit of: the other parts are another launch's, as the reference has them. */
    for (int k = n; k < end; k++)
        if (g->tensors[reads[k]].role == IR_ROLE_STATE || writes_units(&g->ops[i], reads[k]))
            reads[n++] = reads[k];
    for (int k = 0; k < n; k++) {
        ir_tid t = reads[k];
        float *d = ir_values_data(r->lanev, t), *b = ir_values_data(r->bounds, t);
        const float *s = ir_values_cdata(ref, t);
        if (!d || !s)
            continue; /* a checkpoint constant: the same weights on both sides */
        int64_t len = ir_tensor_len(g, t);
        const struct ir_op *q = quantize_of(r->in->reference, g->tensors[t].name);
        if (q) {
            const char *xn = r->in->reference->tensors[q->ins[0]].name;
            ir_tid x = ir_tensor_find(sg, xn, strlen(xn));
            const float *xs = x != IR_NONE ? ir_values_cdata(src, x) : NULL;
            if (!xs || ir_tensor_len(sg, x) != len || q->access[0].strided) {
                snprintf(r->err, IR_ERR_LEN, "launch %d: the source %s of quantized %s is not at hand whole", (int)i,
                         xn, g->tensors[t].name);
                return -1;
            }
            int words = unquantized ? mode_words(r->in->point) : q->quant_words;
            if (kernels_lane_load_quantized(r->lane, t, xs, len, words, d)) {
                snprintf(r->err, IR_ERR_LEN, "out of memory");
                return -1;
            }
            if (!unquantized && quantize_differs(r, i, t, d, s, len))
                return -1;
        } else {
            enum shim_keep keep = keep_of(r->in->point, g, t);
            for (int64_t e = 0; e < len; e++)
                d[e] = keep_round(keep, s[e]);
        }
        if (g->tensors[t].elem == IR_ELEM_I32) { /* an index: exact, and the bound walk reads rows by it */
            memcpy(b, s, sizeof(float) * (size_t)len);
            continue;
        }
        for (int64_t e = 0; e < len; e++)
            b[e] = d[e] == s[e] || (d[e] != d[e] && s[e] != s[e]) ? 0.0f : (float)fabs((double)d[e] - s[e]);
    }
    return 0;
}

/* The quantize results of g inside launch i (its parts), each set in `ref` to its source's value: the unquantized
 * meaning of a quantized activation. */
static void unquantize_results(const struct ir_graph *g, const struct ir_op *op, struct ir_values *ref)
{
    if (op->sym == IR_SYM_QUANT && !op->access[0].strided) {
        float *d = ir_values_data(ref, op->out);
        const float *s = ir_values_cdata(ref, op->ins[0]);
        if (d && s && ir_tensor_len(g, op->out) == ir_tensor_len(g, op->ins[0]))
            memcpy(d, s, sizeof(float) * (size_t)ir_tensor_len(g, op->out));
    }
    for (int32_t k = 0; op->sym == IR_SYM_FUSED && k < op->nparts; k++)
        unquantize_results(g, &op->parts[k], ref);
}

/* Under the unquantized reference, a quantized result's bound also takes the mode's quantization error of its
 * block (the largest magnitude taken from the reference). */
static void widen_quantized(const struct kernels_point *p, const struct ir_graph *g, const struct ir_op *op,
                            const struct ir_values *ref, struct ir_values *bounds)
{
    if (op->sym == IR_SYM_QUANT) {
        float *b = ir_values_data(bounds, op->out);
        const float *x = ir_values_cdata(ref, op->out);
        int64_t n = ir_tensor_len(g, op->out);
        for (int64_t s = 0; b && x && s < n; s += 32) {
            double amax = 0.0;
            for (int64_t i = s; i < s + 32 && i < n; i++)
                amax = fabs((double)x[i]) + b[i] > amax ? fabs((double)x[i]) + b[i] : amax;
            for (int64_t i = s; i < s + 32 && i < n; i++)
                b[i] = (float)(b[i] + kernels_quant_error(amax, mode_words(p)) +
                               4.0 * (fabs((double)x[i]) + b[i]) / 16777216.0); /* + the f32 roundings of q·s (+ q2·s2) */
        }
    }
    for (int32_t k = 0; op->sym == IR_SYM_FUSED && k < op->nparts; k++)
        widen_quantized(p, g, &op->parts[k], ref, bounds);
}

/* Run launch i with its inputs from `ref` on the run's host lane into its own buffers (the device's twin). */
static int host_twin(struct run *r, int32_t i, struct ir_values *ref, struct ir_values *pre,
                     const struct ir_graph *sg, const struct ir_values *src, bool unquantized)
{
    struct run h = *r;
    h.lane = r->host;
    h.lanev = r->hostv;
    swap_recurrent(r->in->rewritten, &r->in->rewritten->ops[i], ref, pre);
    kernels_lane_forget(r->host);
    int rc = load_inputs(&h, i, ref, sg, src, unquantized) || kernels_lane_launch(r->host, r->in->rewritten, i,
                                                                                  r->hostv, r->err);
    swap_recurrent(r->in->rewritten, &r->in->rewritten->ops[i], ref, pre);
    return rc;
}

/* The device's values of tensor t against the host lane's: the same arithmetic in the same order
 * (docs/numerics.md), so equal bit for bit; a failing row at the first that is not. */
static int device_equals_host(struct run *r, int32_t i, ir_tid t, bool unquantized)
{
    const float *dv = ir_values_cdata(r->lanev, t), *hv = ir_values_cdata(r->hostv, t);
    if (!dv || !hv)
        return 0;
    return first_difference(r, i, kernels_launch_kernel(&r->in->rewritten->ops[i]), t, dv, hv,
                            ir_tensor_len(r->in->rewritten, t), true, unquantized, "the device",
                            "the host lane");
}

/* Run launch i on the lane with its inputs from `ref` (its recurrent state from `pre`, the step's reference before
 * the step) and compare what it writes; rows into the result. On a device, also run it on the host lane and hold
 * the device to its values bit for bit. */
static int check_launch(struct run *r, int32_t i, struct ir_values *ref, struct ir_values *pre,
                        const struct ir_graph *sg, const struct ir_values *src, bool unquantized)
{
    const struct ir_graph *g = r->in->rewritten;
    const struct ir_op *op = &g->ops[i];
    char err[IR_ERR_LEN];
    int64_t ambiguous = 0;
    /* the host twin first: its loads clear the bounds of what it reads, which the lane's bounds then set */
    int rc = r->host ? host_twin(r, i, ref, pre, sg, src, unquantized) : 0;
    swap_recurrent(g, op, ref, pre);
    rc = rc || load_inputs(r, i, ref, sg, src, unquantized) || kernels_lane_launch(r->lane, g, i, r->lanev, r->err);
    if (!rc && kernels_bounds_launch(r->in->point, g, i, ref, r->bounds, &ambiguous, err)) {
        snprintf(r->err, IR_ERR_LEN, "launch %d (%s): bounds: %.400s", (int)i, kernels_launch_kernel(op), err);
        rc = -1;
    }
    swap_recurrent(g, op, ref, pre);
    if (rc)
        return -1;
    if (unquantized)
        widen_quantized(r->in->point, g, op, ref, r->bounds);
    ir_tid w[512];
    int nw = ir_op_writes(op, w, 511);
    if (nw > 511) {
        snprintf(r->err, IR_ERR_LEN, "launch %d writes more tensors than the tolerance run takes", (int)i);
        return -1;
    }
    bool has_out = false;
    for (int k = 0; k < nw; k++)
        has_out = has_out || w[k] == op->out;
    if (!has_out)
        w[nw++] = op->out;
    for (int k = 0; k < nw; k++) {
        ir_tid t = w[k];
        const float *lv = ir_values_cdata(r->lanev, t), *rv = ir_values_cdata(ref, t);
        const float *bv = ir_values_cdata(r->bounds, t);
        if (!lv || !rv || !bv)
            continue;
        if (unquantized) { /* only what the lifted graph has, or a quantized value of what it has */
            const char *name = g->tensors[t].name;
            if (ir_tensor_find(r->in->lifted, name, strlen(name)) == IR_NONE && !quantize_of(g, name))
                continue;
        }
        if (r->host && device_equals_host(r, i, t, unquantized))
            return -1;
        struct kernels_tol_row *row = launch_row(r, i, kernels_launch_kernel(op));
        if (!row)
            return -1;
        row->unquantized = unquantized;
        snprintf(row->tensor, sizeof row->tensor, "%s", g->tensors[t].name);
        compare(row, lv, rv, bv, ir_tensor_len(g, t));
        check_kept(row, keep_of(r->in->point, g, t), lv, ir_tensor_len(g, t));
        if (!row->pass)
            r->out->failed++;
    }
    return 0;
}

/* The device's step (run on its own buffers, caches and state kept there) against the host lane's step over the same
 * values: every observed tensor bit for bit; a failing row "step" at the first value that differs. */
static int chain_equals_host(struct run *r, const struct ir_values *dev, const struct ir_values *host)
{
    const struct ir_graph *g = r->in->rewritten;
    for (ir_tid t = 0; t < g->ntensors; t++) {
        const float *dv = ir_values_cdata(dev, t), *hv = ir_values_cdata(host, t);
        int32_t failed = r->out->failed;
        if (!g->tensors[t].observed || !dv || !hv)
            continue;
        if (first_difference(r, -1, "step", t, dv, hv, ir_tensor_len(g, t), true, false, "the device's step",
                             "the host lane's step"))
            return -1;
        if (r->out->failed > failed)
            return 0; /* one row a step says it */
    }
    return 0;
}

/* ── Steps ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* The observed f32 tensor a step's logits are: the observed f32 tensor with the most values. */
static ir_tid logits_of(const struct ir_graph *g)
{
    ir_tid best = IR_NONE;
    for (ir_tid t = 0; t < g->ntensors; t++)
        if (g->tensors[t].observed && g->tensors[t].elem == IR_ELEM_F32 &&
            (best == IR_NONE || ir_tensor_len(g, t) > ir_tensor_len(g, best)))
            best = t;
    return best;
}

/* End to end: the logits of the lane's own chain against the reference's: NMSE, top-1 agreement by row, KL of the
 * reference's softmax from the lane's, the largest difference. */
static void compare_logits(struct kernels_tol_step *st, const float *lane, const float *ref, int64_t rows,
                           int64_t cols)
{
    double se = 0.0, sr = 0.0;
    for (int64_t r = 0; r < rows; r++) {
        const float *a = lane + r * cols, *b = ref + r * cols;
        int64_t ia = 0, ib = 0;
        double ma = a[0], mb = b[0];
        for (int64_t j = 0; j < cols; j++) {
            double d = (double)a[j] - b[j];
            se += d * d;
            sr += (double)b[j] * b[j];
            st->max_abs = fabs(d) > st->max_abs ? fabs(d) : st->max_abs;
            if (a[j] > ma) { ma = a[j]; ia = j; }
            if (b[j] > mb) { mb = b[j]; ib = j; }
        }
        double za = 0.0, zb = 0.0;
        for (int64_t j = 0; j < cols; j++) {
            za += exp((double)a[j] - ma);
            zb += exp((double)b[j] - mb);
        }
        double kl = 0.0;
        for (int64_t j = 0; j < cols; j++) {
            double pb = exp((double)b[j] - mb) / zb, la = (double)a[j] - ma - log(za), lb = (double)b[j] - mb - log(zb);
            kl += pb * (lb - la);
        }
        st->kl = kl > st->kl ? kl : st->kl;
        st->top1_agree += ia == ib;
    }
    st->rows = (int32_t)rows;
    st->nmse = se == 0.0 ? 0.0 : sr > 0.0 ? se / sr : INFINITY;
}

/* The rows one step moves every position by: a prefill chunk's rows, else one. */
static int64_t step_rows(const struct ir_graph *g)
{
    const char *m = g->mode ? g->mode : "";
    return strncmp(m, "prefill:", 8) == 0 ? atoll(m + 8) : 1;
}

/* Whether tensor t is a position: an i32 1×1 param named pos or pos.<something>. */
static bool is_position(const struct ir_graph *g, ir_tid t)
{
    const struct ir_tensor *T = &g->tensors[t];
    return T->role == IR_ROLE_PARAM && T->elem == IR_ELEM_I32 && ir_tensor_len(g, t) == 1 &&
           (strcmp(T->name, "pos") == 0 || strncmp(T->name, "pos.", 4) == 0);
}

/* The fewest cache rows any attention of g attends (the room the steps have). */
static int64_t cache_rows(const struct ir_graph *g)
{
    int64_t l = INT64_MAX;
    for (int32_t i = 0; i < g->nops; i++)
        if (g->ops[i].sym == IR_SYM_PRIM && g->ops[i].spec.kind == IR_KIND_ATTENTION && g->ops[i].spec.u.attention.l < l)
            l = g->ops[i].spec.u.attention.l;
    return l;
}

/* Set (or move by `by`) every position of g in v: the first call places the steps where they fit in the cache. */
static int positions(const struct ir_graph *g, struct ir_values *v, int64_t by, int64_t fit, char *err)
{
    for (ir_tid t = 0; t < g->ntensors; t++) {
        float *d = is_position(g, t) ? ir_values_data(v, t) : NULL;
        if (!d)
            continue;
        if (fit > 0 && d[0] > (float)fit)
            d[0] = (float)fit;
        if (fit < 0) {
            snprintf(err, IR_ERR_LEN, "the steps do not fit in the cache: %lld rows short", (long long)-fit);
            return -1;
        }
        d[0] += (float)by;
    }
    return 0;
}

/* ── The run ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* Free a run's values. */
static void values_free(struct ir_values **v, int n)
{
    for (int i = 0; i < n; i++)
        ir_values_free(v[i]);
}

int kernels_tolerance(const struct kernels_tol_input *in, struct kernels_tol_result *out, char err[IR_ERR_LEN])
{
    memset(out, 0, sizeof *out);
    const struct ir_graph *g = in->rewritten, *R = in->reference, *F = in->lifted;
    if (in->device && kernels_device_prepare(in->device, in->point, g, err)) /* refused before any launch */
        return -1;
    int32_t steps = in->steps > 0 ? in->steps : 1;
    enum { REFV, LIFTV, REFRW, LIFTRW, REFPRE, LIFTPRE, LANEV, BOUNDS, CHAINV, HOSTV, HOSTCHAINV, NV };
    struct ir_values *v[NV] = {0};
    v[REFV] = ir_values_new_like(R, in->seed, F, err);
    v[LIFTV] = v[REFV] ? ir_values_new(F, in->seed, err) : NULL;
    for (int k = REFRW; k < NV && v[k - 1] && (k < HOSTV || in->device); k++) /* the host twins': with a device */
        v[k] = ir_values_new_like(g, in->seed, F, err);
    struct kernels_lane *lane = v[CHAINV] && (v[HOSTCHAINV] || !in->device) ? kernels_lane_new(in->point) : NULL;
    struct kernels_lane *chain = lane ? kernels_lane_new(in->point) : NULL;
    struct kernels_lane *host = chain && in->device ? kernels_lane_new(in->point) : NULL;
    struct kernels_lane *hostchain = host ? kernels_lane_new(in->point) : NULL;
    if (!chain || (in->device && !hostchain)) {
        kernels_lane_free(lane);
        kernels_lane_free(chain);
        kernels_lane_free(host);
        values_free(v, NV);
        if (!err[0])
            snprintf(err, IR_ERR_LEN, "out of memory");
        return -1;
    }
    kernels_lane_use_device(lane, in->device);
    kernels_lane_use_device(chain, in->device);
    kernels_lane_plant_fault(lane, in->fault);
    kernels_lane_plant_fault(chain, in->fault);
    snprintf(out->backend, sizeof out->backend, "%s", in->device ? kernels_device_backend(in->device) : "host");
    int64_t rows = step_rows(g), room = cache_rows(R);
    int64_t fit = room == INT64_MAX ? 0 : room - rows * steps;
    round_states(in->point, R, v[REFV]);
    round_states(in->point, F, v[LIFTV]);
    round_states(in->point, g, v[CHAINV]);
    if (in->device)
        round_states(in->point, g, v[HOSTCHAINV]);
    for (ir_tid t = 0; t < g->ntensors; t++) { /* bounds start at zero: a tensor not loaded is not compared */
        float *b = ir_values_data(v[BOUNDS], t);
        if (b)
            memset(b, 0, sizeof(float) * (size_t)ir_tensor_len(g, t));
    }
    int rc = positions(R, v[REFV], 0, fit, err) || positions(F, v[LIFTV], 0, fit, err) ||
             positions(g, v[CHAINV], 0, fit, err) || (in->device && positions(g, v[HOSTCHAINV], 0, fit, err));
    struct run r = {in, lane, v[LANEV], v[BOUNDS], host, v[HOSTV], out, 0, err};
    ir_tid lg = logits_of(g), lr = lg != IR_NONE ? ir_tensor_find(R, g->tensors[lg].name, strlen(g->tensors[lg].name))
                                                 : IR_NONE;
    out->steps = calloc((size_t)steps, sizeof *out->steps);
    if (!rc && !out->steps) {
        snprintf(err, IR_ERR_LEN, "out of memory");
        rc = -1;
    }
    for (int32_t s = 0; !rc && s < steps; s++) {
        if (in->stop && in->stop()) {
            snprintf(err, IR_ERR_LEN, "interrupted before step %d of %d", (int)s, (int)steps);
            rc = -1;
            break;
        }
        r.step = s;
        copy_by_name(g, v[REFPRE], R, v[REFV]); /* the recurrent state as the step finds it */
        copy_by_name(g, v[LIFTPRE], F, v[LIFTV]);
        double t0 = now_s();
        rc = ir_eval(R, v[REFV], err) || ir_eval(F, v[LIFTV], err);
        out->seconds_eval += now_s() - t0;
        if (rc)
            break;
        copy_by_name(g, v[REFRW], R, v[REFV]);
        copy_by_name(g, v[LIFTRW], F, v[LIFTV]);
        for (int32_t i = 0; i < g->nops; i++)
            unquantize_results(g, &g->ops[i], v[LIFTRW]);
        for (int32_t i = 0; !rc && !in->chain_only && i < g->nops; i++) {
            kernels_lane_forget(lane);
            rc = check_launch(&r, i, v[REFRW], v[REFPRE], R, v[REFV], false);
            if (!rc && in->point->acts != KERNELS_ACTS_DEQUANT) {
                kernels_lane_forget(lane);
                rc = check_launch(&r, i, v[LIFTRW], v[LIFTPRE], F, v[LIFTV], true);
            }
        }
        out->launches += g->nops;
        kernels_lane_forget(chain);
        t0 = now_s();
        if (!rc)
            rc = kernels_lane_step(chain, g, v[CHAINV], err);
        out->seconds_lane += now_s() - t0;
        kernels_lane_forget(chain);
        if (!rc && in->device) { /* the device's step on its own buffers against the host lane's, bit for bit */
            kernels_lane_forget(hostchain);
            rc = kernels_lane_step(hostchain, g, v[HOSTCHAINV], err) || chain_equals_host(&r, v[CHAINV], v[HOSTCHAINV]);
        }
        if (!rc && lg != IR_NONE && lr != IR_NONE) {
            struct kernels_tol_step *st = &out->steps[out->nsteps++];
            st->step = s;
            snprintf(st->tensor, sizeof st->tensor, "%s", g->tensors[lg].name);
            compare_logits(st, ir_values_cdata(v[CHAINV], lg), ir_values_cdata(v[REFV], lr), g->tensors[lg].rows,
                           g->tensors[lg].cols);
        }
        if (!rc)
            rc = positions(R, v[REFV], rows, 0, err) || positions(F, v[LIFTV], rows, 0, err) ||
                 positions(g, v[CHAINV], rows, 0, err) || (in->device && positions(g, v[HOSTCHAINV], rows, 0, err));
    }
    if (in->device)
        kernels_device_release(in->device, v[CHAINV]);
    kernels_lane_free(lane);
    kernels_lane_free(chain);
    kernels_lane_free(host);
    kernels_lane_free(hostchain);
    values_free(v, NV);
    return rc ? -1 : 0;
}

void kernels_tol_result_free(struct kernels_tol_result *r)
{
    free(r->rows);
    free(r->steps);
    memset(r, 0, sizeof *r);
}

/* ── Launch shapes ───────────────────────────────────────────────────────────────────────────────────────── */

/* The shape a leaf gives its launch, when it is the kind that sets one (a product, an attention, a norm). */
static bool leaf_shape(const struct kernels_point *p, const struct ir_op *leaf, struct kernels_launch *l)
{
    if (leaf->sym != IR_SYM_PRIM)
        return false;
    const struct ir_spec *s = &leaf->spec;
    switch (s->kind) {
    case IR_KIND_MATMUL: {
        int per = kernels_rows_a_warp(IR_FMT_Q8_0, s->u.matmul.n, s->u.matmul.k, s->u.matmul.m);
        bool gemv = s->u.matmul.m <= KERNELS_GEMV_ROWS;
        l->block = gemv ? kernels_gemv_blk_norm_threads(per) : 128;
        int64_t outs = gemv ? (l->block / 32) * per : KERNELS_GEMM_TILE_N;
        l->grid = (s->u.matmul.n + outs - 1) / outs;
        return true;
    }
    case IR_KIND_ATTENTION: {
        const struct ir_attention *a = &s->u.attention;
        struct kernels_accumulator acc = kernels_accumulator(kernels_mode(p->acts));
        int64_t span = kernels_attended_span(a->l, a->window), group = a->kv > 0 ? a->h / a->kv : 1;
        int64_t hpb = kernels_attn_heads_per_block(group, a->hd, a->vd, span, (int64_t)p->chip->smem_kib * 1024,
                                                   acc.stage_bytes);
        hpb = hpb < 1 ? 1 : hpb > a->kv ? a->kv : hpb;
        int64_t blocks = a->rows * ((a->kv + hpb - 1) / hpb);
        l->grid = blocks * kernels_attn_splits(blocks, span, p->chip->sms);
        l->block = 32 * hpb * group;
        /* the device's block: a query head's tiles, within the chip's shared memory a block (finding F36) */
        l->smem_bytes = kernels_attn_smem(kernels_attention_tile_rows(p, a), a->hd, a->vd);
        return true;
    }
    case IR_KIND_RMS_NORM:
        l->grid = s->u.rms_norm.rows;
        l->block = kernels_norm_threads(s->u.rms_norm.cols);
        return true;
    case IR_KIND_GATED_DELTA: /* a block a value head, its memory and the columns' outputs staged */
        l->grid = s->u.gated_delta.h;
        l->block = kernels_gdn_threads(s->u.gated_delta.dv);
        l->smem_bytes = 4 * (s->u.gated_delta.dk + 1) * s->u.gated_delta.dv;
        return true;
    case IR_KIND_CAUSAL_CONV: /* a thread a channel */
        l->grid = (s->u.causal_conv.chan + 255) / 256;
        return true;
    default: return false;
    }
}

/* Count an op's leaves and take the first shape one sets. */
static void plan_walk(const struct kernels_point *p, const struct ir_op *op, struct kernels_launch *l, bool *set)
{
    if (op->sym == IR_SYM_FUSED) {
        for (int32_t k = 0; k < op->nparts; k++)
            plan_walk(p, &op->parts[k], l, set);
        return;
    }
    l->stages++;
    if (!*set)
        *set = leaf_shape(p, op, l);
}

struct kernels_launch kernels_launch_plan(const struct kernels_point *p, const struct ir_graph *g, int32_t op)
{
    struct kernels_launch l = {kernels_launch_kernel(&g->ops[op]), 0, 1, 256, 0};
    bool set = false;
    plan_walk(p, &g->ops[op], &l, &set);
    if (!set) { /* an elementwise launch: a thread a value */
        int64_t n = ir_tensor_len(g, g->ops[op].out);
        l.grid = (n + 255) / 256;
    }
    return l;
}
