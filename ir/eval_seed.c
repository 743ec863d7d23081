/* ir/eval_seed.c — the evaluator's seeded values: every tensor drawn from the seed and its name, as its uses in the
 * graph ask (weights scaled by the width they contract, norm weights near one, rotary tables, indices within their
 * ranges, caches, the gated delta rule's decay parameters), or taken from a GGUF file, or borrowed from a donor's
 * twin constant. The stream is splitmix64, counter-based: a value is its position's draw, so a tensor's rows are
 * drawn on several threads, or (a table only row gathers read) a row at a time when first read, with the same bits.
 * Checkpoint constants are drawn a stored row at a time and quantized into their block format. */
#include "eval_values.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A product and the sum it feeds stay two roundings (the filling's own arithmetic included). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* FNV-1a (64 bits) of a NUL-terminated name. */
static uint64_t fnv1a64(const char *s)
{
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* The splitmix64 stream's increment. The state after p draws is the seed plus p increments, so any draw can be
 * computed from its position alone (the stream is counter-based): a tensor's rows can be drawn in any order, on any
 * thread, with the same bits. */
#define SPLITMIX_GAMMA 0x9E3779B97F4A7C15ull

/* splitmix64's output for state z (taken after its increment). */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The state just before draw p of the stream seeded rng (draw p is mix64 of one increment more). */
static uint64_t state_at(uint64_t rng, int64_t p)
{
    return rng + (uint64_t)p * SPLITMIX_GAMMA;
}

/* A uniform float in [0, 1) with 24 random bits, from one draw. */
static float unit01_of(uint64_t z)
{
    return (float)(z >> 40) * (1.0f / 16777216.0f);
}

/* A uniform float in [-1, 1), from one draw. */
static float unit11_of(uint64_t z)
{
    return unit01_of(z) * 2.0f - 1.0f;
}

/* How a tensor's uses ask it to be filled; a larger kind wins over a smaller one. */
enum use_kind { USE_NONE, USE_SINKS, USE_GDN_STATE, USE_CACHE, USE_WEIGHT, USE_DT_BIAS, USE_ALOG, USE_NORM_W,
                USE_ROPE_SIN, USE_ROPE_COS };

/* What the graph's ops ask of one tensor: its strongest use (ties: the smaller param, then the smaller base), the
 * rotary base of a table, and the index range every use as a row index or position allows. */
struct tuse {
    enum use_kind kind;
    double param;
    const struct ir_rope *rope; /* the rope whose tables a rotary table holds (USE_ROPE_COS, USE_ROPE_SIN) */
    bool index, position;
    int64_t lo, hi;
    bool gathered, read_else; /* read as a row gather's table; read by any other op or operand */
};

/* The uses of every tensor of a graph being scanned. */
struct scan {
    const struct ir_graph *g;
    struct tuse *u;
};

/* The operand at position i of op, or IR_NONE when it has none there or it names no tensor. */
static ir_tid in_at(const struct scan *s, const struct ir_op *op, int i)
{
    if (i < 0 || i >= op->nins)
        return IR_NONE;
    ir_tid t = op->ins[i];
    return t >= 0 && t < s->g->ntensors ? t : IR_NONE;
}

/* A spec size clamped to [0, IR_MAX_DIM], so the scan's range arithmetic cannot overflow on any graph. */
static int64_t dimc(int64_t x)
{
    return x < 0 ? 0 : x > IR_MAX_DIM ? IR_MAX_DIM : x;
}

/* The length of tensor t (0 for none). */
static int64_t scan_len(const struct scan *s, ir_tid t)
{
    return t == IR_NONE ? 0 : max64(shape_len(&s->g->tensors[t]), 0);
}

/* Record a use of kind k (with param, and the rope when a rotary table) of operand i of op: the strongest kind, the
 * least param, the first rope (the validator holds every rope reading a table to the same tables). */
static void note_rope(struct scan *s, const struct ir_op *op, int i, enum use_kind k, double param,
                      const struct ir_rope *rope)
{
    ir_tid t = in_at(s, op, i);
    if (t == IR_NONE)
        return;
    struct tuse *u = &s->u[t];
    if (k > u->kind || (k == u->kind && (param < u->param || (param == u->param && !u->rope)))) {
        u->kind = k;
        u->param = param;
        u->rope = rope;
    }
}

/* Record a use of kind k (with param) of operand i of op. */
static void note(struct scan *s, const struct ir_op *op, int i, enum use_kind k, double param)
{
    note_rope(s, op, i, k, param, NULL);
}

/* Record that tensor t is read as an index in [lo, hi] (a position when pos): the ranges of all uses intersect. */
static void note_index_t(struct scan *s, ir_tid t, int64_t lo, int64_t hi, bool pos)
{
    if (t == IR_NONE || t < 0 || t >= s->g->ntensors)
        return;
    struct tuse *u = &s->u[t];
    if (!u->index) {
        u->index = true;
        u->lo = lo;
        u->hi = hi;
    } else {
        u->lo = max64(u->lo, lo);
        u->hi = min64(u->hi, hi);
    }
    u->position = u->position || pos;
}

/* Record that operand i of op is read as an index in [lo, hi]. */
static void note_index(struct scan *s, const struct ir_op *op, int i, int64_t lo, int64_t hi, bool pos)
{
    note_index_t(s, in_at(s, op, i), lo, hi, pos);
}

/* Uses of a matrix product: its weights contract k values. */
static void use_matmul(struct scan *s, const struct ir_op *op)
{
    note(s, op, 1, USE_WEIGHT, (double)op->spec.u.matmul.k);
}

/* Uses of an RMS norm: its weight sits near one once the offset is added. */
static void use_rms_norm(struct scan *s, const struct ir_op *op)
{
    if (op->spec.u.rms_norm.weight)
        note(s, op, 1, USE_NORM_W, op->spec.u.rms_norm.offset);
}

/* Uses of a rotation: rotary tables of its width and base, and a named position whose chunk fits in the tables. */
static void use_rope(struct scan *s, const struct ir_op *op)
{
    const struct ir_rope *r = &op->spec.u.rope;
    note_rope(s, op, 1, USE_ROPE_COS, (double)dimc(r->half), r);
    note_rope(s, op, 2, USE_ROPE_SIN, (double)dimc(r->half), r);
    if (r->pos.kind == IR_RIDX_NAMED && dimc(r->half) > 0) {
        int64_t rows = min64(scan_len(s, in_at(s, op, 1)), scan_len(s, in_at(s, op, 2))) / dimc(r->half);
        note_index(s, op, 3, 0, rows - dimc(r->rows), true);
    }
}

/* Uses of a row gather: a named index below the table's rows. */
static void use_row_gather(struct scan *s, const struct ir_op *op)
{
    const struct ir_row_gather *r = &op->spec.u.row_gather;
    if (r->index.kind == IR_RIDX_NAMED)
        note_index(s, op, 1, 0, dimc(r->rows) - 1, false);
}

/* Uses of a rows gather: every index below the table's rows. */
static void use_rows_gather(struct scan *s, const struct ir_op *op)
{
    note_index(s, op, 1, 0, dimc(op->spec.u.rows_gather.rows) - 1, false);
}

/* Uses of a row set: the table is a cache; a named index leaves room for the rows it writes. */
static void use_set_row(struct scan *s, const struct ir_op *op)
{
    const struct ir_set_row *r = &op->spec.u.set_row;
    note(s, op, 0, USE_CACHE, 0.0);
    if (r->index.kind == IR_RIDX_NAMED)
        note_index(s, op, 2, 0, dimc(r->rows) - dimc(r->count), false);
}

/* Uses of an attention: caches, sinks, and a named position whose chunk fits in the cache. */
static void use_attention(struct scan *s, const struct ir_op *op)
{
    const struct ir_attention *a = &op->spec.u.attention;
    note(s, op, 1, USE_CACHE, 0.0);
    note(s, op, 2, USE_CACHE, 0.0);
    int at = 3;
    if (a->pos.kind == IR_RIDX_NAMED)
        note_index(s, op, at++, 0, dimc(a->l) - dimc(a->rows), true);
    if (a->sinks)
        note(s, op, at, USE_SINKS, 0.0);
}

/* Uses of a mixture: router and expert weights by the width each contracts. */
static void use_moe(struct scan *s, const struct ir_op *op)
{
    const struct ir_moe *m = &op->spec.u.moe;
    for (int i = 1; i <= 3; i++)
        note(s, op, i, USE_WEIGHT, (double)m->d);
    note(s, op, 4, USE_WEIGHT, (double)m->dff);
}

/* Uses of a gated delta rule: a small recurrent state and an output norm weight near one. */
static void use_gated_delta(struct scan *s, const struct ir_op *op)
{
    note(s, op, 6, USE_GDN_STATE, 0.0);
    note(s, op, 7, USE_NORM_W, 0.0);
}

/* Uses of a causal convolution: weights over its taps. */
static void use_causal_conv(struct scan *s, const struct ir_op *op)
{
    note(s, op, 1, USE_WEIGHT, (double)op->spec.u.causal_conv.taps);
}

/* Uses of a per-head product: weights contracting a head's width. */
static void use_head_matmul(struct scan *s, const struct ir_op *op)
{
    note(s, op, 1, USE_WEIGHT, (double)op->spec.u.head_matmul.a);
}

/* Uses of a decay: A_log and dt_bias. */
static void use_decay(struct scan *s, const struct ir_op *op)
{
    note(s, op, 1, USE_ALOG, 0.0);
    note(s, op, 2, USE_DT_BIAS, 0.0);
}

/* The kinds whose operands ask for particular values, and how. */
static void (*const use_scans[IR_KIND_COUNT])(struct scan *, const struct ir_op *) = {
    [IR_KIND_MATMUL] = use_matmul,           [IR_KIND_RMS_NORM] = use_rms_norm,
    [IR_KIND_ROPE] = use_rope,               [IR_KIND_ROW_GATHER] = use_row_gather,
    [IR_KIND_ROWS_GATHER] = use_rows_gather, [IR_KIND_SET_ROW] = use_set_row,
    [IR_KIND_ATTENTION] = use_attention,     [IR_KIND_MOE] = use_moe,
    [IR_KIND_GATED_DELTA] = use_gated_delta, [IR_KIND_CAUSAL_CONV] = use_causal_conv,
    [IR_KIND_HEAD_MATMUL] = use_head_matmul, [IR_KIND_DECAY] = use_decay,
};

/* Uses of a destination: a buffer written by rows or units is a table (a cache), as a row set's table is; a row
 * named by a param keeps the region it writes inside its buffer. */
static void use_dst(struct scan *s, const struct ir_op *op)
{
    const struct ir_dst *d = &op->dst;
    bool placed = d->row != IR_ROWSEL_NONE || d->has_unit;
    if (placed && d->buf >= 0 && d->buf < s->g->ntensors) {
        struct tuse *u = &s->u[d->buf];
        if (USE_CACHE > u->kind || (USE_CACHE == u->kind && 0.0 < u->param)) {
            u->kind = USE_CACHE;
            u->param = 0.0;
        }
    }
    if (d->row != IR_ROWSEL_PARAM || d->row_cols <= 0 || d->buf < 0 || d->buf >= s->g->ntensors || op->out < 0 ||
        op->out >= s->g->ntensors)
        return;
    int64_t len = scan_len(s, op->out), extent = len;
    if (d->has_unit) {
        if (d->unit.width <= 0 || len % d->unit.width != 0)
            return;
        int64_t units = len / d->unit.width;
        extent = units ? addc(mulc(units - 1, d->unit.pitch), addc(d->unit.offset, d->unit.width)) : 0;
    }
    if (extent < 0)
        return;
    int64_t room = scan_len(s, d->buf) - extent;
    note_index_t(s, d->row_param, 0, room < 0 ? -1 : room / d->row_cols, false);
}

/* Record how a leaf op reads each operand: as a row gather's table, or otherwise. */
static void note_reads(struct scan *s, const struct ir_op *op)
{
    bool gather = op->sym == IR_SYM_PRIM &&
                  (op->spec.kind == IR_KIND_ROW_GATHER || op->spec.kind == IR_KIND_ROWS_GATHER);
    for (int i = 0; i < op->nins; i++) {
        ir_tid t = in_at(s, op, i);
        if (t != IR_NONE && gather && i == 0)
            s->u[t].gathered = true;
        else if (t != IR_NONE)
            s->u[t].read_else = true;
    }
}

/* Record the uses of op, of every part within it, and of every destination on the way. */
static void scan_op(struct scan *s, const struct ir_op *op, int depth)
{
    if (depth > IR_MAX_DEPTH)
        return;
    use_dst(s, op);
    if (op->sym != IR_SYM_FUSED)
        note_reads(s, op);
    if (op->sym == IR_SYM_FUSED) {
        for (int32_t i = 0; i < op->nparts; i++)
            scan_op(s, &op->parts[i], depth + 1);
    } else if (op->sym == IR_SYM_PRIM && (int)op->spec.kind >= 0 && op->spec.kind < IR_KIND_COUNT &&
               use_scans[op->spec.kind]) {
        use_scans[op->spec.kind](s, op);
    }
}

/* How a tensor's values are drawn. */
enum fill_kind { FILL_ZERO, FILL_UNIFORM, FILL_NEAR, FILL_COS, FILL_SIN, FILL_ALOG, FILL_DT_BIAS, FILL_INT };

/* A tensor's filling: its kind, a scale or centre, the rotary half and base, an integer range. */
struct filler {
    enum fill_kind kind;
    float a;
    int64_t half, lo, hi;
    const struct ir_rope *rope; /* a rotary table's rope (FILL_COS, FILL_SIN; NULL: the default base, unscaled) */
    double *freq;               /* FILL_COS, FILL_SIN: each pair's frequency (rotary_frequencies; the caller frees) */
    double magnitude;           /* FILL_COS, FILL_SIN: the rope's magnitude */
};

/* Integers held in f32 are exact only up to 2^24: index ranges stop there. */
#define INDEX_MAX ((int64_t)1 << 24)

/* The filling tensor t asks for by its role, element type and uses. */
static struct filler filler_of(const struct ir_tensor *t, const struct tuse *u)
{
    struct filler f = {FILL_UNIFORM, 1.0f, 0, 0, 0, NULL, NULL, 1.0};
    if (t->role == IR_ROLE_ACTIVATION) {
        f.kind = FILL_ZERO;
        return f;
    }
    if (u->index) {
        int64_t lo = max64(u->lo, 0), hi = min64(u->hi, INDEX_MAX);
        if (u->position && hi >= lo)
            lo += (hi - lo + 1) / 2; /* leave cache rows before the position, so attention attends several */
        f.kind = FILL_INT;
        f.lo = lo;
        f.hi = hi < lo ? lo : hi; /* an empty range fills its low end: evaluation reports it */
        return f;
    }
    switch (u->kind) {
    case USE_ROPE_COS:
    case USE_ROPE_SIN:
        f.kind = u->kind == USE_ROPE_COS ? FILL_COS : FILL_SIN;
        f.half = (int64_t)u->param;
        f.rope = u->rope;
        return f;
    case USE_NORM_W:
        f.kind = FILL_NEAR;
        f.a = (float)(1.0 - u->param);
        return f;
    case USE_ALOG: f.kind = FILL_ALOG; return f;
    case USE_DT_BIAS: f.kind = FILL_DT_BIAS; return f;
    case USE_WEIGHT: f.a = 1.0f / sqrtf((float)(u->param > 1.0 ? u->param : 1.0)); return f;
    case USE_CACHE: return f;
    case USE_GDN_STATE: f.a = 0.1f; return f;
    case USE_SINKS: return f;
    case USE_NONE: break;
    }
    if (t->elem == IR_ELEM_I32) {
        f.kind = FILL_INT;
        f.lo = 0;
        f.hi = 15;
    } else if (t->role == IR_ROLE_CONSTANT) {
        f.a = 1.0f / sqrtf((float)(t->cols > 1 ? t->cols : 1));
    } else if (t->role == IR_ROLE_STATE) {
        f.a = 0.5f;
    }
    return f;
}

/* The planted evaluator fault (ir_eval_plant): the rotary base taken as 10000 whatever the graph says. */
static bool plant_rope_base;

int ir_eval_plant(const char *name)
{
    plant_rope_base = name && strcmp(name, "rope_base") == 0;
    return name && name[0] && !plant_rope_base ? -1 : 0;
}

/* The frequency of each pair of a rotary table's row into f->freq, computed once a table: ω_col of the rope with its
 * scaling (a rope absent: the default base over `half` pairs, unscaled; the planted fault: base 10000 whatever the
 * graph says), and its magnitude. llama.cpp turns pair col by pos · θ^(−2·col/n_dims), n_dims = 2·half the rotated
 * width, then scales it as Transformers does. 0, or -1 when memory is short. */
static int rotary_frequencies(struct filler *f)
{
    if (f->kind != FILL_COS && f->kind != FILL_SIN)
        return 0;
    int64_t h = f->half > 0 ? f->half : 1;
    struct ir_rope rope = f->rope ? *f->rope : (struct ir_rope){.half = h};
    if (plant_rope_base && f->rope)
        rope.theta = (struct ir_optf){true, 10000.0};
    f->freq = malloc(sizeof *f->freq * (size_t)h);
    if (!f->freq)
        return -1;
    for (int64_t c = 0; c < h; c++)
        f->freq[c] = ir_rope_frequency(&rope, c);
    f->magnitude = ir_rope_magnitude(&rope);
    return 0;
}

/* One value of a rotary table, logical index e of rows `half` values wide: cos or sin of row · ω_col, times the
 * rope's magnitude. */
static float rotary_value(const struct filler *f, int64_t e, bool cosine)
{
    int64_t h = f->half > 0 ? f->half : 1;
    double angle = (double)(e / h) * f->freq[e % h];
    return (float)(f->magnitude * (cosine ? cos(angle) : sin(angle)));
}

/* A run of n values of a tensor filled as f: value j is draw p0 + j of the stream seeded rng (a kind that draws takes
 * one draw a value), at logical index e0 + j·estep (which only the rotary tables read). One loop a kind. */
struct span {
    const struct filler *f;
    uint64_t rng;
    int64_t p0, n, e0, estep;
    float *out;
};

/* FILL_ZERO: zeros. */
static void span_zero(const struct span *s)
{
    memset(s->out, 0, sizeof(float) * (size_t)s->n);
}

/* What seeding and evaluating ask before each unit of work (ir_eval_set_stop), or NULL. */
static bool (*stop_asked)(void);

void ir_eval_set_stop(bool (*stop)(void)) { stop_asked = stop; }

bool ir_eval_stop_now(void) { return stop_asked && stop_asked(); }

/* Values seeded between two questions whether to stop: a few milliseconds' work. */
#define FILL_POLL ((int64_t)1 << 16)

/* FILL_UNIFORM: uniform in [-a, a). */
static void span_uniform(const struct span *s)
{
    uint64_t z = state_at(s->rng, s->p0);
    for (int64_t j = 0; j < s->n; j++)
        s->out[j] = unit11_of(mix64(z += SPLITMIX_GAMMA)) * s->f->a;
}

/* FILL_NEAR: within 0.1 of a. */
static void span_near(const struct span *s)
{
    uint64_t z = state_at(s->rng, s->p0);
    for (int64_t j = 0; j < s->n; j++)
        s->out[j] = s->f->a + 0.1f * unit11_of(mix64(z += SPLITMIX_GAMMA));
}

/* FILL_COS: a rotary table's cosines. */
static void span_cos(const struct span *s)
{
    for (int64_t j = 0; j < s->n; j++)
        s->out[j] = rotary_value(s->f, s->e0 + j * s->estep, true);
}

/* FILL_SIN: a rotary table's sines. */
static void span_sin(const struct span *s)
{
    for (int64_t j = 0; j < s->n; j++)
        s->out[j] = rotary_value(s->f, s->e0 + j * s->estep, false);
}

/* FILL_ALOG: log(1 + 15u), u uniform in [0, 1). */
static void span_alog(const struct span *s)
{
    uint64_t z = state_at(s->rng, s->p0);
    for (int64_t j = 0; j < s->n; j++)
        s->out[j] = logf(1.0f + 15.0f * unit01_of(mix64(z += SPLITMIX_GAMMA)));
}

/* FILL_DT_BIAS: softplus⁻¹(dt), dt log-uniform in [0.001, 0.1). */
static void span_dt_bias(const struct span *s)
{
    uint64_t z = state_at(s->rng, s->p0);
    for (int64_t j = 0; j < s->n; j++) {
        double dt = exp(log(0.001) + (double)unit01_of(mix64(z += SPLITMIX_GAMMA)) * (log(0.1) - log(0.001)));
        s->out[j] = (float)(dt + log(-expm1(-dt)));
    }
}

/* FILL_INT: integers uniform in [lo, hi]. */
static void span_int(const struct span *s)
{
    uint64_t z = state_at(s->rng, s->p0), range = (uint64_t)(s->f->hi - s->f->lo + 1);
    for (int64_t j = 0; j < s->n; j++)
        s->out[j] = (float)(s->f->lo + (int64_t)(mix64(z += SPLITMIX_GAMMA) % range));
}

/* Each fill kind's loop. */
static void (*const span_fns[])(const struct span *) = {
    [FILL_ZERO] = span_zero, [FILL_UNIFORM] = span_uniform, [FILL_NEAR] = span_near,
    [FILL_COS] = span_cos,   [FILL_SIN] = span_sin,         [FILL_ALOG] = span_alog,
    [FILL_DT_BIAS] = span_dt_bias, [FILL_INT] = span_int,
};

/* Fill values [from, from + n) of a plain tensor. */
static void fill_plain_run(const struct tval *tv, const struct filler *f, uint64_t rng, int64_t from, int64_t n)
{
    if (f->kind != FILL_ZERO) /* the storage is zeroed already: its pages stay untouched */
        span_fns[f->kind](&(struct span){f, rng, from, n, from, 1, tv->f + from});
}

/* Fill stored rows [s0, s1) of a checkpoint tensor, each drawn then quantized into its bytes, using row (slen floats
 * of room). 0, or -1 when a row does not quantize. */
static int fill_ckpt_rows(const struct ckpt *q, int64_t cols, const struct filler *f, uint64_t rng, int64_t s0,
                          int64_t s1, float *row)
{
    for (int64_t s = s0; s < s1; s++) {
        int64_t e0 = q->transposed ? s : s * cols, estep = q->transposed ? cols : 1;
        span_fns[f->kind](&(struct span){f, rng, s * q->slen, q->slen, e0, estep, row});
        if (ir_ggml_quantize(q->format, row, q->slen, q->bytes + s * q->row_bytes) != 0)
            return -1;
    }
    return 0;
}

/* One thread's share of a tensor's filling: units [u0, u1) (stored rows of a checkpoint, values of a plain one). */
struct fill_share {
    const struct tval *tv;
    const struct filler *f;
    uint64_t rng;
    int64_t u0, u1;
    int rc;
};

/* Fill one share, asking whether to stop every FILL_POLL values or so; its rc 0, -1 on failure, or 1 when asked to
 * stop first. */
static void *fill_share_run(void *arg)
{
    struct fill_share *sh = arg;
    const struct tval *tv = sh->tv;
    int64_t step = tv->f ? FILL_POLL : max64(FILL_POLL / max64(tv->q.slen, 1), 1); /* units between questions */
    float *row = tv->f ? NULL : malloc(sizeof(float) * (size_t)max64(tv->q.slen, 1));
    sh->rc = tv->f || row ? 0 : -1;
    for (int64_t u = sh->u0; sh->rc == 0 && u < sh->u1; u += step) {
        int64_t end = min64(u + step, sh->u1);
        if (ir_eval_stop_now())
            sh->rc = 1;
        else if (tv->f)
            fill_plain_run(tv, sh->f, sh->rng, u, end - u);
        else
            sh->rc = fill_ckpt_rows(&tv->q, tv->cols, sh->f, sh->rng, u, end, row);
    }
    free(row);
    return NULL;
}

#define FILL_MAX_THREADS 64
#define FILL_THREAD_VALUES ((int64_t)1 << 18) /* a tensor under this many values is filled by one thread */

/* Fill a tensor's values (stored rows drawn and quantized for a checkpoint), split by units among up to
 * ir_eval_threads() threads: every value depends on its position alone, so the bits do not depend on the count.
 * 0, -1 on failure, or 1 when asked to stop first. */
static int fill_tensor(const struct tval *tv, const struct filler *f, uint64_t rng)
{
    int64_t units = tv->f ? tv->len : tv->q.srows;
    int n = tv->len < FILL_THREAD_VALUES ? 1 : ir_eval_threads();
    n = n > FILL_MAX_THREADS ? FILL_MAX_THREADS : (int64_t)n > units ? (int)max64(units, 1) : n;
    struct fill_share sh[FILL_MAX_THREADS];
    pthread_t tids[FILL_MAX_THREADS];
    bool started[FILL_MAX_THREADS] = {false};
    for (int k = 0; k < n; k++)
        sh[k] = (struct fill_share){tv, f, rng, units * k / n, units * (k + 1) / n, 0};
    for (int k = 1; k < n; k++)
        started[k] = pthread_create(&tids[k], NULL, fill_share_run, &sh[k]) == 0;
    fill_share_run(&sh[0]);
    int rc = sh[0].rc;
    for (int k = 1; k < n; k++) {
        if (started[k])
            pthread_join(tids[k], NULL);
        else
            fill_share_run(&sh[k]); /* no thread: the calling one fills its share */
        rc = rc < 0 || sh[k].rc < 0 ? -1 : rc > 0 ? rc : sh[k].rc;
    }
    return rc;
}

/* A checkpoint table seeded lazily: its filling and stream, its logical width, which stored rows are drawn, how
 * many are not, and a row's room. Its values owner frees it; a borrowing instance draws into the same rows. */
struct ir_eval_lazy {
    struct filler f;
    uint64_t rng;
    int64_t cols, left;
    unsigned char *drawn;
    float *row;
};

int ir_eval_lazy_rows(const struct ckpt *q, int64_t s0, int64_t n)
{
    struct ir_eval_lazy *z = q->lazy;
    for (int64_t s = max64(s0, 0); z && z->left > 0 && s < s0 + n && s < q->srows; s++) {
        if (z->drawn[s])
            continue;
        if (fill_ckpt_rows(q, z->cols, &z->f, z->rng, s, s + 1, z->row))
            return -1;
        z->drawn[s] = 1;
        z->left--;
    }
    return 0;
}

int ir_eval_lazy_all(const struct ckpt *q)
{
    return ir_eval_lazy_rows(q, 0, q->srows);
}

void ir_eval_lazy_free(struct ir_eval_lazy *z)
{
    if (z) {
        free(z->drawn);
        free(z->row);
        free(z);
    }
}

/* Whether a tensor filled as f with uses u is seeded lazily: a checkpoint of untransposed rows (a logical row is a
 * stored row), read only as a row gather's table, its values drawn from the stream alone. */
static bool seeds_lazily(const struct ir_tensor *t, const struct tuse *u, const struct filler *f)
{
    return is_ckpt(t) && !t->transposed && u->gathered && !u->read_else &&
           (f->kind == FILL_UNIFORM || f->kind == FILL_NEAR || f->kind == FILL_INT);
}

/* Make tv (allocated, zeroed) a lazily seeded table filled as f from stream rng; 0, or -1 when memory is short. */
static int lazy_start(struct tval *tv, const struct filler *f, uint64_t rng)
{
    struct ir_eval_lazy *z = calloc(1, sizeof *z);
    if (z) {
        *z = (struct ir_eval_lazy){*f, rng, tv->cols, tv->q.srows, NULL, NULL};
        z->drawn = calloc((size_t)max64(tv->q.srows, 1), 1);
        z->row = malloc(sizeof(float) * (size_t)max64(tv->q.slen, 1));
    }
    if (!z || !z->drawn || !z->row) {
        ir_eval_lazy_free(z);
        return -1;
    }
    tv->q.lazy = z;
    return 0;
}

/* Allocate tensor t's storage (zeroed); 0, or -1 when memory is short. */
static int alloc_tensor(struct tval *tv, const struct ir_tensor *t)
{
    tv->rows = t->rows;
    tv->cols = t->cols;
    tv->len = shape_len(t);
    if (!is_ckpt(t)) {
        tv->f = calloc((size_t)max64(tv->len, 1), sizeof(float));
        return tv->f ? 0 : -1;
    }
    tv->q.format = t->format;
    tv->q.transposed = t->transposed;
    tv->q.row_bytes = ckpt_shape(t, &tv->q.srows, &tv->q.slen);
    tv->q.bytes = calloc((size_t)max64(mulc(tv->q.srows, tv->q.row_bytes), 1), 1);
    return tv->q.bytes ? 0 : -1;
}

/* Check every tensor's shape and the total against the limit; 0, or -1 with err. */
static int plan_check(const struct ir_graph *g, char err[IR_ERR_LEN])
{
    for (int32_t i = 0; i < g->ntensors; i++) {
        if (tensor_bytes(&g->tensors[i]) < 0) {
            snprintf(err, IR_ERR_LEN, "tensor %s: its shape %lld x %lld %s", g->tensors[i].name,
                     (long long)g->tensors[i].rows, (long long)g->tensors[i].cols,
                     is_ckpt(&g->tensors[i]) ? "is not whole blocks of its format" : "is out of range");
            return -1;
        }
    }
    int64_t total = ir_values_plan_bytes(g);
    if (total < 0 || total > IR_EVAL_MAX_BYTES) {
        snprintf(err, IR_ERR_LEN, "the graph's values need %lld bytes, more than the evaluator's limit of %lld",
                 (long long)total, (long long)IR_EVAL_MAX_BYTES);
        return -1;
    }
    return 0;
}

struct ir_values *ir_values_new(const struct ir_graph *g, uint64_t seed, char err[IR_ERR_LEN])
{
    return ir_values_new_like(g, seed, g, err);
}

/* Whether constant t of g has a twin in donor_g (same name, element, shape, role and storage); its id there. */
static ir_tid constant_twin(const struct ir_tensor *t, const struct ir_graph *donor_g)
{
    if (t->role != IR_ROLE_CONSTANT)
        return IR_NONE;
    ir_tid d = ir_tensor_find(donor_g, t->name, strlen(t->name));
    if (d == IR_NONE)
        return IR_NONE;
    const struct ir_tensor *u = &donor_g->tensors[d];
    bool alike = u->role == t->role && u->elem == t->elem && u->rows == t->rows && u->cols == t->cols &&
                 u->checkpoint == t->checkpoint && (!t->checkpoint || (u->format == t->format &&
                                                                       u->transposed == t->transposed));
    return alike ? d : IR_NONE;
}

/* Borrow a twin constant's storage (the same shape and format) from `from`: read where it lies, never freed here. */
static void borrow_values(struct tval *tv, const struct tval *from)
{
    *tv = *from;
    tv->f_borrowed = from->f != NULL;
    tv->q.borrowed = from->f == NULL;
}

/* The GGUF file whose tensors give constants their values (ir_values_use_gguf), or NULL. */
static const struct ir_gguf *weights_file;

void ir_values_use_gguf(const struct ir_gguf *f) { weights_file = f; }

/* Take constant t's values from the weights file: a checkpoint's rows borrowed where they lie, a plain tensor's
 * decoded. 1 when the file has no such tensor (or t is no constant), 0 when taken, -1 with err when the file's
 * tensor does not hold t's values (another count, or a checkpoint in another format). */
static int from_file(struct tval *tv, const struct ir_tensor *t, char err[IR_ERR_LEN])
{
    const struct ir_gguf_tensor *ft = t->role == IR_ROLE_CONSTANT ? ir_gguf_find_tensor(weights_file, t->name) : NULL;
    if (!ft && t->role == IR_ROLE_CONSTANT && t->tied)
        ft = ir_gguf_find_tensor(weights_file, IR_TIED_TO); /* a tied LM head is its embedding */
    if (!ft)
        return 1;
    tv->rows = t->rows;
    tv->cols = t->cols;
    tv->len = shape_len(t);
    uint64_t values = ft->dims[0] * ft->dims[1] * ft->dims[2] * ft->dims[3];
    bool same = ft->format >= 0 && values == (uint64_t)tv->len;
    if (same && is_ckpt(t)) {
        tv->q.format = t->format;
        tv->q.transposed = t->transposed;
        tv->q.row_bytes = ckpt_shape(t, &tv->q.srows, &tv->q.slen);
        same = (int)t->format == ft->format && ft->dims[0] == (uint64_t)tv->q.slen;
        tv->q.bytes = (unsigned char *)ft->data; /* read only: the evaluator never writes a constant */
        tv->q.borrowed = true;
    } else if (same) {
        tv->f = malloc(sizeof(float) * (size_t)max64(tv->len, 1));
        if (!tv->f)
            abort();
        ir_ggml_dequantize((enum ir_format)ft->format, ft->data, tv->len, tv->f);
    }
    if (!same)
        snprintf(err, IR_ERR_LEN, "tensor %s: the file's tensor (%llu values, type %u) does not hold its %lld values%s%s",
                 t->name, (unsigned long long)values, ft->type, (long long)tv->len, is_ckpt(t) ? " in " : "",
                 is_ckpt(t) ? ir_format_name(t->format) : "");
    return same ? 0 : -1;
}

/* Give every tied tensor its embedding's stored rows (the validator holds them to one format and shape); a tensor
 * whose bytes a weights file lends already has them. */
static void share_tied(const struct ir_graph *g, struct ir_values *v)
{
    ir_tid e = ir_tensor_find(g, IR_TIED_TO, strlen(IR_TIED_TO));
    for (int32_t i = 0; e != IR_NONE && i < g->ntensors; i++) {
        struct tval *tv = &v->t[i];
        const struct tval *from = &v->t[e];
        if (!g->tensors[i].tied || tv->q.borrowed || !tv->q.bytes || !from->q.bytes ||
            mulc(tv->q.srows, tv->q.row_bytes) != mulc(from->q.srows, from->q.row_bytes) ||
            ir_eval_lazy_all(&from->q))
            continue;
        memcpy(tv->q.bytes, from->q.bytes, (size_t)mulc(tv->q.srows, tv->q.row_bytes));
    }
}

struct ir_values *ir_values_new_like(const struct ir_graph *g, uint64_t seed, const struct ir_graph *like,
                                     char err[IR_ERR_LEN])
{
    return ir_values_new_shared(g, seed, like, NULL, NULL, err);
}

struct ir_values *ir_values_new_shared(const struct ir_graph *g, uint64_t seed, const struct ir_graph *like,
                                       const struct ir_graph *donor_g, const struct ir_values *donor,
                                       char err[IR_ERR_LEN])
{
    if (plan_check(g, err) != 0)
        return NULL;
    struct ir_values *v = calloc(1, sizeof *v);
    struct tuse *uses = calloc((size_t)max64(like->ntensors, 1), sizeof *uses);
    if (v)
        v->t = calloc((size_t)max64(g->ntensors, 1), sizeof *v->t);
    if (!v || !uses || !v->t) {
        free(uses);
        ir_values_free(v);
        snprintf(err, IR_ERR_LEN, "out of memory for the graph's values");
        return NULL;
    }
    v->n = g->ntensors;
    /* How each tensor is used is read from `like` (the lifted graph), so a rewritten graph is filled alike. */
    struct scan s = {like, uses};
    for (int32_t i = 0; i < like->nops; i++)
        scan_op(&s, &like->ops[i], 0);
    static const struct tuse unused;
    for (int32_t i = 0; i < g->ntensors; i++) {
        const struct ir_tensor *t = &g->tensors[i];
        struct tval *tv = &v->t[i];
        ir_tid at = like == g ? i : ir_tensor_find(like, t->name, strlen(t->name));
        struct filler f = filler_of(t, at == IR_NONE ? &unused : &uses[at]);
        uint64_t rng = seed ^ fnv1a64(t->name);
        int rc = weights_file ? from_file(tv, t, err) : 1;
        if (rc < 0) {
            free(uses);
            ir_values_free(v);
            return NULL;
        }
        if (rc == 0) {
            v->bytes += (size_t)tensor_bytes(t);
            continue;
        }
        ir_tid twin = donor ? constant_twin(t, donor_g) : IR_NONE;
        rc = twin != IR_NONE ? (borrow_values(tv, &donor->t[twin]), 0) : alloc_tensor(tv, t);
        if (rc == 0 && twin == IR_NONE && (rc = rotary_frequencies(&f)) == 0)
            rc = seeds_lazily(t, at == IR_NONE ? &unused : &uses[at], &f) ? lazy_start(tv, &f, rng)
                                                                          : fill_tensor(tv, &f, rng);
        free(f.freq);
        if (rc != 0) {
            if (rc > 0)
                snprintf(err, IR_ERR_LEN, IR_EVAL_STOPPED " while seeding tensor %s", t->name);
            else
                snprintf(err, IR_ERR_LEN, "tensor %s: out of memory for its values", t->name);
            free(uses);
            ir_values_free(v);
            return NULL;
        }
        v->bytes += (size_t)tensor_bytes(t);
    }
    free(uses);
    share_tied(g, v);
    return v;
}

