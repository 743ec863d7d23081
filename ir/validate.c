/* ir/validate.c — the invariants every module may rely on: ids in range, defined before read, one writer for a
 * non-state tensor, only state written in place, shapes agreeing with specs, sizes that fit.
 *
 * One pass over the tensors, then one pass over the ops in program order, each op checked in four steps (structure,
 * shapes, reads, writes), then the unit-part coverage of every activation written in parts. Per-tensor stamps make
 * every step linear in the op's size, so a graph validates in O(ops + tensors) (plus a sort of the unit parts). */
#include "ir.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ── Checked sizes: -1 stands for "does not fit" and propagates ───────────────────────────────────────────── */

/* a·b, or -1 when either is negative or the product passes INT64_MAX. */
static int64_t mul(int64_t a, int64_t b)
{
    if (a < 0 || b < 0 || (a != 0 && b > INT64_MAX / a))
        return -1;
    return a * b;
}

/* a·b·c, checked. */
static int64_t mul3(int64_t a, int64_t b, int64_t c)
{
    return mul(mul(a, b), c);
}

/* a+b, or -1 when either is negative or the sum passes INT64_MAX. */
static int64_t add(int64_t a, int64_t b)
{
    if (a < 0 || b < 0 || a > INT64_MAX - b)
        return -1;
    return a + b;
}

/* ── What a primitive spec needs of its operands ─────────────────────────────────────────────────────────── */

/* How an operand must look: exactly len values; a rows×cols tensor; a table of cols values a row with at least
 * rows rows; an i32 index of len values. */
enum need_how { NEED_LEN, NEED_SHAPE, NEED_TABLE, NEED_INDEX };

/* One operand's requirement, named for messages. */
struct need {
    const char *name;
    enum need_how how;
    int64_t len, rows, cols;
};

/* A spec's operands in order, its result length and whether its result is i32. */
struct shape {
    int n;
    struct need in[12];
    int64_t out;
    bool out_i32;
};

/* Append an operand needing exactly len values. */
static void need_len(struct shape *sh, const char *name, int64_t len)
{
    sh->in[sh->n++] = (struct need){name, NEED_LEN, len, 0, 0};
}

/* Append an operand that must be a rows×cols tensor. */
static void need_shape(struct shape *sh, const char *name, int64_t rows, int64_t cols)
{
    sh->in[sh->n++] = (struct need){name, NEED_SHAPE, mul(rows, cols), rows, cols};
}

/* Append a table operand of cols values a row and at least rows rows. */
static void need_table(struct shape *sh, const char *name, int64_t rows, int64_t cols)
{
    sh->in[sh->n++] = (struct need){name, NEED_TABLE, -2, rows, cols};
}

/* Append an i32 index operand of len values. */
static void need_index(struct shape *sh, const char *name, int64_t len)
{
    sh->in[sh->n++] = (struct need){name, NEED_INDEX, len, 0, 0};
}

/* Write a reason into why and return the offending field's name. */
static const char *inconsistent(char *why, size_t n, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return field;
}

/* A kind's shape function: fills sh from the spec; returns the field that is inconsistent (why says how) or NULL. */
typedef const char *(*shape_fn)(const struct ir_spec *s, struct shape *sh, char *why, size_t n);

/* The first row (0-based) a literal or absent row index starts at; named indices start anywhere, so 0. */
static int64_t first_row(const struct ir_rowidx *r)
{
    return r->kind == IR_RIDX_LITERAL ? r->literal - 1 : 0;
}

/* matmul: x (m×k), W (k rows × n cols); out m·n. */
static const char *shape_matmul(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    const struct ir_matmul *p = &s->u.matmul;
    (void)why, (void)n;
    need_len(sh, "x", mul(p->m, p->k));
    need_shape(sh, "W", p->k, p->n);
    sh->out = mul(p->m, p->n);
    return NULL;
}

/* elementwise: a (n), b (n, or one row of `row` values when row > 0); out n. */
static const char *shape_elementwise(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    const struct ir_elementwise *p = &s->u.elementwise;
    need_len(sh, "a", p->n);
    need_len(sh, "b", p->row > 0 ? p->row : p->n);
    sh->out = p->n;
    if (p->row > 0 && p->n % p->row != 0)
        return inconsistent(why, n, "row", "n = %" PRId64 " is not a multiple of row = %" PRId64, p->n, p->row);
    return NULL;
}

/* rms_norm: x (rows·cols), [w (cols)], [res (rows·cols)], [b (cols)]; out rows·cols. */
static const char *shape_rms_norm(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    const struct ir_rms_norm *p = &s->u.rms_norm;
    (void)why, (void)n;
    need_len(sh, "x", mul(p->rows, p->cols));
    if (p->weight)
        need_len(sh, "w", p->cols);
    if (p->residual)
        need_len(sh, "res", mul(p->rows, p->cols));
    if (p->bias)
        need_len(sh, "b", p->cols);
    sh->out = mul(p->rows, p->cols);
    return NULL;
}

/* rope: x (h·hd), cos and sin (tables of half cols, a row per position), [pos (one i32)]; out h·hd. */
static const char *shape_rope(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    const struct ir_rope *p = &s->u.rope;
    int64_t positions = add(first_row(&p->pos), p->rows);
    need_len(sh, "x", mul(p->h, p->hd));
    need_table(sh, "cos", positions, p->half);
    need_table(sh, "sin", positions, p->half);
    if (p->pos.kind == IR_RIDX_NAMED)
        need_index(sh, "pos", 1);
    sh->out = mul(p->h, p->hd);
    if (mul(2, p->half) > p->hd)
        return inconsistent(why, n, "half", "2*half = %" PRId64 " exceeds hd = %" PRId64, 2 * p->half, p->hd);
    if (p->h % p->rows != 0)
        return inconsistent(why, n, "rows", "h = %" PRId64 " is not a multiple of rows = %" PRId64, p->h, p->rows);
    if (p->theta.has && !(p->theta.v > 0))
        return inconsistent(why, n, "theta", "the rotary base %g must be positive", p->theta.v);
    const char *field = NULL;
    char what[96];
    if (ir_rope_scaling_check(p, &field, what, sizeof what))
        return inconsistent(why, n, field, "%s", what);
    return NULL;
}

/* head_slice: x (n); out n/every·width. */
static const char *shape_head_slice(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    const struct ir_head_slice *p = &s->u.head_slice;
    need_len(sh, "x", p->n);
    sh->out = mul(p->n / p->every, p->width);
    if (p->n % p->every != 0)
        return inconsistent(why, n, "every", "n = %" PRId64 " is not a multiple of every = %" PRId64, p->n,
                            p->every);
    if (add(p->from, p->width) > p->every)
        return inconsistent(why, n, "width", "from + width = %" PRId64 " exceeds every = %" PRId64,
                            p->from + p->width, p->every);
    return NULL;
}

/* Whether a literal row index lies outside 1..rows; writes why. */
static bool literal_outside(const struct ir_rowidx *r, int64_t rows, char *why, size_t n)
{
    if (r->kind != IR_RIDX_LITERAL || r->literal <= rows)
        return false;
    snprintf(why, n, "row %" PRId64 " is outside 1..%" PRId64, r->literal, rows);
    return true;
}

/* row_gather: table (rows×cols), [idx (one i32)]; out cols. */
static const char *shape_row_gather(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    const struct ir_row_gather *p = &s->u.row_gather;
    need_shape(sh, "table", p->rows, p->cols);
    if (p->index.kind == IR_RIDX_NAMED)
        need_index(sh, "idx", 1);
    sh->out = p->cols;
    return literal_outside(&p->index, p->rows, why, n) ? "index" : NULL;
}

/* rows_gather: table (rows×cols), idx (count i32); out count·cols. */
static const char *shape_rows_gather(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    const struct ir_rows_gather *p = &s->u.rows_gather;
    (void)why, (void)n;
    need_shape(sh, "table", p->rows, p->cols);
    need_index(sh, "idx", p->count);
    sh->out = mul(p->count, p->cols);
    return NULL;
}

/* set_row: table (rows×cols, state), src (count·cols), [idx (one i32)]; out the table. */
static const char *shape_set_row(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    const struct ir_set_row *p = &s->u.set_row;
    need_shape(sh, "table", p->rows, p->cols);
    need_len(sh, "src", mul(p->count, p->cols));
    if (p->index.kind == IR_RIDX_NAMED)
        need_index(sh, "idx", 1);
    sh->out = mul(p->rows, p->cols);
    if (p->count > p->rows)
        return inconsistent(why, n, "count", "count = %" PRId64 " exceeds rows = %" PRId64, p->count, p->rows);
    if (p->index.kind == IR_RIDX_LITERAL && add(first_row(&p->index), p->count) > p->rows)
        return inconsistent(why, n, "index", "rows %" PRId64 "..%" PRId64 " are outside 1..%" PRId64,
                            p->index.literal, p->index.literal + p->count - 1, p->rows);
    return NULL;
}

/* attention: q (rows·h·hd), kcache (l·kv·hd), vcache (l·kv·vd), [pos (one i32)], [sinks (h)]; out rows·h·vd. */
static const char *shape_attention(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    const struct ir_attention *p = &s->u.attention;
    need_len(sh, "q", mul3(p->rows, p->h, p->hd));
    need_len(sh, "kcache", mul3(p->l, p->kv, p->hd));
    need_len(sh, "vcache", mul3(p->l, p->kv, p->vd));
    if (p->pos.kind == IR_RIDX_NAMED)
        need_index(sh, "pos", 1);
    if (p->sinks)
        need_len(sh, "sinks", p->h);
    sh->out = mul3(p->rows, p->h, p->vd);
    if (p->h % p->kv != 0)
        return inconsistent(why, n, "kv", "h = %" PRId64 " is not a multiple of kv = %" PRId64, p->h, p->kv);
    if (add(first_row(&p->pos), p->rows) > p->l)
        return inconsistent(why, n, "rows", "%" PRId64 " query rows from row %" PRId64 " pass l = %" PRId64,
                            p->rows, first_row(&p->pos) + 1, p->l);
    if (p->softcap.has && !(p->softcap.v > 0))
        return inconsistent(why, n, "softcap", "must be positive");
    return NULL;
}

/* A mixture's routing fields: one scoring; renormalisation left out only where there is one; groups and
 * topk_groups together, the groups equal, at least two experts each, the kept ones holding k experts; a positive
 * finite scale. The offending field, or NULL. */
static const char *routing_moe(const struct ir_moe *p, char *why, size_t n)
{
    if (p->sigmoid && p->topk_softmax)
        return inconsistent(why, n, "sigmoid", "sigmoid and topk_softmax are two scorings; a mixture has one");
    if (p->no_renorm && p->topk_softmax)
        return inconsistent(why, n, "no_renorm", "topk_softmax's weights are their own softmax; nothing to leave out");
    if ((p->groups > 0) != (p->topk_groups > 0))
        return inconsistent(why, n, p->groups > 0 ? "topk_groups" : "groups", "groups and topk_groups come together");
    if (p->groups > 0 && (p->experts % p->groups != 0 || p->experts / p->groups < 2))
        return inconsistent(why, n, "groups", "%" PRId64 " groups must split %" PRId64 " experts evenly, two or more "
                            "a group", p->groups, p->experts);
    if (p->topk_groups > p->groups)
        return inconsistent(why, n, "topk_groups", "topk_groups = %" PRId64 " exceeds groups = %" PRId64,
                            p->topk_groups, p->groups);
    if (p->groups > 0 && p->topk_groups * (p->experts / p->groups) < p->k)
        return inconsistent(why, n, "topk_groups", "%" PRId64 " groups of %" PRId64 " experts hold fewer than k = %"
                            PRId64, p->topk_groups, p->experts / p->groups, p->k);
    if (p->scale.has && !(p->scale.v > 0 && isfinite(p->scale.v)))
        return inconsistent(why, n, "scale", "must be a positive finite number");
    return NULL;
}

/* moe: x (d), router (d·experts), gate and up (d·experts·dff), down (dff·experts·d), with bias their bias rows
 * (experts, experts·dff twice, experts·d), with correction its row (experts); out d. alpha and limit come with the
 * clamped SwiGLU and only with it. */
static const char *shape_moe(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    const struct ir_moe *p = &s->u.moe;
    need_len(sh, "x", p->d);
    need_len(sh, "router", mul(p->d, p->experts));
    need_len(sh, "gate", mul3(p->d, p->experts, p->dff));
    need_len(sh, "up", mul3(p->d, p->experts, p->dff));
    need_len(sh, "down", mul3(p->dff, p->experts, p->d));
    if (p->bias) {
        need_len(sh, "router_b", p->experts);
        need_len(sh, "gate_b", mul(p->experts, p->dff));
        need_len(sh, "up_b", mul(p->experts, p->dff));
        need_len(sh, "down_b", mul(p->experts, p->d));
    }
    if (p->correction)
        need_len(sh, "corr", p->experts);
    sh->out = p->d;
    if (p->k > p->experts)
        return inconsistent(why, n, "k", "k = %" PRId64 " exceeds experts = %" PRId64, p->k, p->experts);
    const char *bad = routing_moe(p, why, n);
    if (bad)
        return bad;
    bool clamped = p->act == IR_MOE_CLAMPED_SWIGLU;
    if (p->alpha.has != clamped || p->limit.has != clamped)
        return inconsistent(why, n, p->alpha.has != clamped ? "alpha" : "limit",
                            clamped ? "the clamped SwiGLU needs alpha and limit" : "only the clamped SwiGLU takes it");
    if (clamped && !(p->limit.v > 0))
        return inconsistent(why, n, "limit", "must be positive");
    return NULL;
}

/* gated_delta: q, k (rows·kh·dk, kh = h when absent), v, z (rows·h·dv), b, a (rows·h), state (h·dk·dv), w (dv);
 * out rows·h·dv. */
static const char *shape_gated_delta(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    const struct ir_gated_delta *p = &s->u.gated_delta;
    int64_t kh = p->kh ? p->kh : p->h;
    need_len(sh, "q", mul3(p->rows, kh, p->dk));
    need_len(sh, "k", mul3(p->rows, kh, p->dk));
    need_len(sh, "v", mul3(p->rows, p->h, p->dv));
    need_len(sh, "z", mul3(p->rows, p->h, p->dv));
    need_len(sh, "b", mul(p->rows, p->h));
    need_len(sh, "a", mul(p->rows, p->h));
    need_len(sh, "state", mul3(p->h, p->dk, p->dv));
    need_len(sh, "w", p->dv);
    sh->out = mul3(p->rows, p->h, p->dv);
    if (p->kh < 0 || (p->kh > 0 && p->h % p->kh != 0))
        return inconsistent(why, n, "kh", "h = %" PRId64 " is not a multiple of kh = %" PRId64, p->h, p->kh);
    return NULL;
}

/* causal_conv: x (rows·chan), w (chan·taps), ring ((taps-1)·chan); out rows·chan. */
static const char *shape_causal_conv(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    const struct ir_causal_conv *p = &s->u.causal_conv;
    need_len(sh, "x", mul(p->rows, p->chan));
    need_len(sh, "w", mul(p->chan, p->taps));
    need_len(sh, "ring", mul(p->taps - 1, p->chan));
    sh->out = mul(p->rows, p->chan);
    if (p->taps < 2)
        return inconsistent(why, n, "taps", "must be at least 2 (the ring keeps taps-1 rows)");
    return NULL;
}

/* silu, sigmoid, gelu, relu: x (n); out n. */
static const char *shape_unary(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    (void)why, (void)n;
    need_len(sh, "x", s->u.unary.n);
    sh->out = s->u.unary.n;
    return NULL;
}

/* scale: x (n); out n. */
static const char *shape_scale(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    (void)why, (void)n;
    need_len(sh, "x", s->u.scale.n);
    sh->out = s->u.scale.n;
    return NULL;
}

/* swiglu: g, u (total); out total. */
static const char *shape_swiglu(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    (void)why, (void)n;
    need_len(sh, "g", s->u.swiglu.total);
    need_len(sh, "u", s->u.swiglu.total);
    sh->out = s->u.swiglu.total;
    return NULL;
}

/* head_matmul: x (m·heads·a), W (heads·a rows × b cols); out m·heads·b. */
static const char *shape_head_matmul(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    const struct ir_head_matmul *p = &s->u.head_matmul;
    (void)why, (void)n;
    need_len(sh, "x", mul3(p->m, p->heads, p->a));
    need_shape(sh, "W", mul(p->heads, p->a), p->b);
    sh->out = mul3(p->m, p->heads, p->b);
    return NULL;
}

/* join: a (rows·wa), b (rows·wb); out rows·(wa+wb). */
static const char *shape_join(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    const struct ir_join *p = &s->u.join;
    need_len(sh, "a", mul(p->rows, p->wa));
    need_len(sh, "b", mul(p->rows, p->wb));
    sh->out = mul(p->rows, add(p->wa, p->wb));
    if (p->wa % p->heads != 0)
        return inconsistent(why, n, "wa", "wa = %" PRId64 " is not a multiple of heads = %" PRId64, p->wa,
                            p->heads);
    if (p->wb % p->heads != 0)
        return inconsistent(why, n, "wb", "wb = %" PRId64 " is not a multiple of heads = %" PRId64, p->wb,
                            p->heads);
    return NULL;
}

/* l2_norm: x (rows·cols); out rows·cols. */
static const char *shape_l2_norm(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    (void)why, (void)n;
    need_len(sh, "x", mul(s->u.l2_norm.rows, s->u.l2_norm.cols));
    sh->out = mul(s->u.l2_norm.rows, s->u.l2_norm.cols);
    return NULL;
}

/* argmax: x (rows·cols); out rows, i32. */
static const char *shape_argmax(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    (void)why, (void)n;
    need_len(sh, "x", mul(s->u.argmax.rows, s->u.argmax.cols));
    sh->out = s->u.argmax.rows;
    sh->out_i32 = true;
    return NULL;
}

/* decay: a (n), alog and dt_bias (n/rows); out n. */
static const char *shape_decay(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    const struct ir_decay *p = &s->u.decay;
    need_len(sh, "a", p->n);
    need_len(sh, "alog", p->n / p->rows);
    need_len(sh, "dt_bias", p->n / p->rows);
    sh->out = p->n;
    if (p->n % p->rows != 0)
        return inconsistent(why, n, "rows", "n = %" PRId64 " is not a multiple of rows = %" PRId64, p->n, p->rows);
    return NULL;
}

/* softcap: x (n); out n. */
static const char *shape_softcap(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    need_len(sh, "x", s->u.softcap.n);
    sh->out = s->u.softcap.n;
    if (!(s->u.softcap.cap > 0))
        return inconsistent(why, n, "cap", "must be positive");
    return NULL;
}

/* Each kind's shape function, by the kind table's spec member. */
static const shape_fn shape_fns[IR_KIND_COUNT] = {
#define X(e, s, m) [IR_KIND_##e] = shape_##m,
    IR_KINDS(X)
#undef X
};

/* Spec int fields that may be zero (every other IR_F_INT is a size of at least 1). */
static const struct {
    enum ir_kind kind;
    const char *field;
} zero_ok[] = {{IR_KIND_HEAD_SLICE, "from"}};

/* Whether field `name` of kind k may be zero. */
static bool may_be_zero(enum ir_kind k, const char *name)
{
    for (size_t i = 0; i < sizeof zero_ok / sizeof zero_ok[0]; i++)
        if (zero_ok[i].kind == k && strcmp(zero_ok[i].field, name) == 0)
            return true;
    return false;
}

/* The spec's shape, or a zeroed one when the kind is out of range. Returns the inconsistent field or NULL. */
static const char *spec_shape(const struct ir_spec *s, struct shape *sh, char *why, size_t n)
{
    memset(sh, 0, sizeof *sh);
    if ((int)s->kind < 0 || s->kind >= IR_KIND_COUNT)
        return inconsistent(why, n, "kind", "unknown kind %d", (int)s->kind);
    return shape_fns[s->kind](s, sh, why, n);
}

/* ── The validator's state ───────────────────────────────────────────────────────────────────────────────── */

/* How an activation has been written so far. */
enum wmode { W_NONE, W_WHOLE, W_UNIT };

/* One unit part of an activation written by a top-level op. */
struct unitw {
    ir_tid t;
    int32_t op;
    int64_t pitch, offset, width, units;
};

/* One tensor the current top-level op writes, and how. */
struct wentry {
    ir_tid t;
    bool whole;
    struct ir_strided unit;
    int64_t units; /* how many units the part writes */
    const char *field;
};

/* The first rope that reads a tensor as a rotary table: its top-level op (-1: none yet) and its spec. */
struct table_use {
    int32_t op;
    const struct ir_rope *rope;
};

/* A part on the path from the top-level op down to the node being checked. */
struct frame {
    int32_t index;
    const struct ir_op *op;
};

struct vstate {
    const struct ir_graph *g;
    char *err;
    int32_t bad_op;
    ir_tid bad_tensor;
    int32_t cur;              /* the top-level op being checked, -1 for tensor checks */
    int32_t stamp;            /* cur + 1: marks what belongs to the current op */
    int depth;                /* frames on the path */
    struct frame path[IR_MAX_DEPTH + 2];
    uint8_t *defined;         /* input/param/constant/state, or written by an earlier top-level op */
    int32_t *local;           /* == stamp: written by an earlier part of the current op */
    int32_t *external;        /* == stamp: the current op reads it from before it runs */
    int32_t *opw;             /* == stamp: the current op writes it; == -stamp: already counted */
    uint8_t *opwhole;         /* the current op writes it whole */
    int32_t *writer;          /* the first top-level op writing an activation, or -1 */
    int32_t *first_read;      /* the first top-level op reading an activation from before it runs, or -1 */
    uint8_t *mode;            /* enum wmode of that writing */
    int64_t *inside;          /* == mark: computed by a leaf of the fused node being checked */
    int64_t mark;
    struct unitw *units;
    size_t nunits, capunits;
    struct wentry *w;
    size_t nw, capw;
    struct table_use *tables; /* per tensor: the first rope reading it as a rotary table (NULL until a rope is seen) */
    int64_t *leaf_readers;    /* per tensor: how many leaves of the whole graph read it (NULL until first asked) */
    int64_t *leaf_seen;       /* == leaf_stamp: the leaf being counted reads it */
    int64_t leaf_stamp;
};

/* ── Messages ────────────────────────────────────────────────────────────────────────────────────────────── */

/* Append printf output to buf (cap bytes) at *at, never past its end. */
static void append(char *buf, size_t cap, size_t *at, const char *fmt, ...)
{
    if (*at >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *at, cap - *at, fmt, ap);
    va_end(ap);
    if (n > 0)
        *at = *at + (size_t)n < cap ? *at + (size_t)n : cap;
}

/* What an op is called in messages: its kind, class, "view" or "quantize". */
static const char *op_label(const struct ir_op *op)
{
    switch (op->sym) {
    case IR_SYM_PRIM: return ir_kind_name(op->spec.kind);
    case IR_SYM_FUSED: return ir_class_name(op->cls);
    case IR_SYM_VIEW: return "view";
    case IR_SYM_QUANT: return "quantize";
    }
    return "?";
}

/* A tensor's name for messages (its id when the id or name is unusable). */
static const char *tname(const struct vstate *v, ir_tid t, char *buf, size_t n)
{
    if (t >= 0 && t < v->g->ntensors && v->g->tensors[t].name)
        return v->g->tensors[t].name;
    snprintf(buf, n, "#%d", (int)t);
    return buf;
}

/* Record a failure of the current op (or, with no current op, of tensor t) at `field`; returns 1. */
static int vfail(struct vstate *v, ir_tid t, const char *field, const char *fmt, va_list ap)
{
    char what[IR_ERR_LEN];
    vsnprintf(what, sizeof what, fmt, ap);
    size_t at = 0;
    if (v->cur >= 0) {
        append(v->err, IR_ERR_LEN, &at, "op %d (%s): ", (int)v->cur, op_label(&v->g->ops[v->cur]));
        for (int d = 0; d < v->depth; d++) {
            if (d == 1 && v->depth > 4) { /* a deep path: its first part, how many are left out, its last two */
                append(v->err, IR_ERR_LEN, &at, "(%d more parts): ", v->depth - 3);
                d = v->depth - 2;
            }
            append(v->err, IR_ERR_LEN, &at, "part %d (%s): ", (int)v->path[d].index, op_label(v->path[d].op));
        }
        v->bad_op = v->cur;
        v->bad_tensor = IR_NONE;
    } else {
        char buf[32];
        append(v->err, IR_ERR_LEN, &at, "tensor '%s': ", tname(v, t, buf, sizeof buf));
        v->bad_op = -1;
        v->bad_tensor = t;
    }
    append(v->err, IR_ERR_LEN, &at, "%s: %s", field, what);
    return 1;
}

/* vfail with the arguments inline. */
static int fail(struct vstate *v, ir_tid t, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vfail(v, t, field, fmt, ap);
    va_end(ap);
    return r;
}

/* Fail at top-level op `op` itself (for the checks that run after every op); returns 1. */
static int fail_at(struct vstate *v, int32_t op, const char *field, const char *fmt, ...)
{
    v->cur = op;
    v->depth = 0;
    va_list ap;
    va_start(ap, fmt);
    int r = vfail(v, IR_NONE, field, fmt, ap);
    va_end(ap);
    return r;
}

/* ── Tensors ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* Check a tied tensor: a transposed checkpoint constant whose stored rows are those of IR_TIED_TO, a checkpoint
 * constant of the same format, rows and row width (the LM head [hidden × vocab] of an embedding [vocab × hidden]). */
static int check_tied(struct vstate *v, ir_tid t)
{
    const struct ir_tensor *x = &v->g->tensors[t];
    if (x->role != IR_ROLE_CONSTANT || !x->checkpoint || !x->transposed)
        return fail(v, t, "tied", "only a transposed checkpoint constant is tied to " IR_TIED_TO);
    ir_tid e = ir_tensor_find(v->g, IR_TIED_TO, strlen(IR_TIED_TO));
    const struct ir_tensor *y = e != IR_NONE ? &v->g->tensors[e] : NULL;
    if (!y || y->role != IR_ROLE_CONSTANT || !y->checkpoint || y->transposed || y->format != x->format ||
        y->rows != x->cols || y->cols != x->rows)
        return fail(v, t, "tied", "expected a constant " IR_TIED_TO " of %" PRId64 "x%" PRId64 " %s rows to share",
                    x->cols, x->rows, ir_format_name(x->format));
    return 0;
}

/* Check tensor t's own declaration: name, tables, dims, size, checkpoint storage. */
static int check_tensor(struct vstate *v, ir_tid t)
{
    const struct ir_tensor *x = &v->g->tensors[t];
    if (!x->name || !x->name[0] || strlen(x->name) > IR_MAX_NAME)
        return fail(v, t, "name", "must be 1..%d bytes", IR_MAX_NAME);
    if ((int)x->elem < 0 || x->elem >= IR_ELEM_COUNT)
        return fail(v, t, "elem", "unknown element type %d", (int)x->elem);
    if ((int)x->role < 0 || x->role >= IR_ROLE_COUNT)
        return fail(v, t, "role", "unknown role %d", (int)x->role);
    if (x->rows < 1 || x->rows > IR_MAX_DIM)
        return fail(v, t, "rows", "%" PRId64 " is outside 1..%" PRId64, x->rows, IR_MAX_DIM);
    if (x->cols < 1 || x->cols > IR_MAX_DIM)
        return fail(v, t, "cols", "%" PRId64 " is outside 1..%" PRId64, x->cols, IR_MAX_DIM);
    int64_t len = mul(x->rows, x->cols);
    if (len < 0 || len > IR_MAX_ELEMS)
        return fail(v, t, "size", "%" PRId64 "x%" PRId64 " exceeds %" PRId64 " values", x->rows, x->cols,
                    IR_MAX_ELEMS);
    if (x->tied && check_tied(v, t))
        return 1;
    if (!x->checkpoint)
        return 0;
    if (x->role != IR_ROLE_CONSTANT)
        return fail(v, t, "format", "only a constant is stored as checkpoint rows");
    if ((int)x->format < 0 || x->format >= IR_FMT_COUNT)
        return fail(v, t, "format", "unknown format %d", (int)x->format);
    int64_t row = x->transposed ? x->rows : x->cols, block = ir_format_block_values(x->format);
    if (row % block != 0)
        return fail(v, t, "format", "%s rows of %" PRId64 " values are not a multiple of its %" PRId64 "-value block",
                    ir_format_name(x->format), row, block);
    return 0;
}

/* Length of a tensor already checked to fit. */
static int64_t tlen(const struct vstate *v, ir_tid t)
{
    return v->g->tensors[t].rows * v->g->tensors[t].cols;
}

/* ── Step 1: structure (ids, counts, tables, nesting) ────────────────────────────────────────────────────── */

/* Whether t names a tensor of the graph. */
static bool valid_tid(const struct vstate *v, ir_tid t)
{
    return t >= 0 && t < v->g->ntensors;
}

/* Check one id field. */
static int check_tid(struct vstate *v, ir_tid t, const char *field)
{
    return valid_tid(v, t) ? 0 : fail(v, IR_NONE, field, "tensor id %d is not in the graph", (int)t);
}

/* Check every id of a list (named field[k] in messages). */
static int check_tids(struct vstate *v, const ir_tid *ts, int32_t n, const char *field)
{
    for (int32_t k = 0; k < n; k++)
        if (!valid_tid(v, ts[k])) {
            char name[32];
            snprintf(name, sizeof name, "%s[%d]", field, (int)k);
            return check_tid(v, ts[k], name);
        }
    return 0;
}

/* Check a count lies in lo..hi. */
static int check_count_in(struct vstate *v, int32_t n, int32_t lo, int32_t hi, const char *field)
{
    if (n < lo || n > hi)
        return fail(v, IR_NONE, field, "%d entries, expected %d..%d", (int)n, (int)lo, (int)hi);
    return 0;
}

/* Check a count lies in lo..IR_MAX_OPERANDS. */
static int check_count(struct vstate *v, int32_t n, int32_t lo, const char *field)
{
    return check_count_in(v, n, lo, IR_MAX_OPERANDS, field);
}

/* Check the ids and counts of a node at `level` fused blocks deep, and of its parts. */
static int check_structure(struct vstate *v, const struct ir_op *op, int level)
{
    if ((int)op->sym < IR_SYM_PRIM || op->sym > IR_SYM_QUANT)
        return fail(v, IR_NONE, "sym", "unknown symbol %d", (int)op->sym);
    if (op->sym == IR_SYM_PRIM && ((int)op->spec.kind < 0 || op->spec.kind >= IR_KIND_COUNT))
        return fail(v, IR_NONE, "kind", "unknown kind %d", (int)op->spec.kind);
    if (op->sym == IR_SYM_FUSED && ((int)op->cls < 0 || op->cls >= IR_CLASS_COUNT))
        return fail(v, IR_NONE, "class", "unknown class %d", (int)op->cls);
    if (check_count(v, op->nins, 0, "ins") || check_count(v, op->nkeeps, 0, "keeps"))
        return 1;
    if (check_tids(v, op->ins, op->nins, "ins") || check_tid(v, op->out, "out") || check_tid(v, op->dst.buf, "dst"))
        return 1;
    if ((int)op->dst.row < IR_ROWSEL_NONE || op->dst.row > IR_ROWSEL_PARAM)
        return fail(v, IR_NONE, "dst", "unknown row selection %d", (int)op->dst.row);
    if (op->dst.row == IR_ROWSEL_PARAM && check_tid(v, op->dst.row_param, "dst.row"))
        return 1;
    if (check_tids(v, op->keeps, op->nkeeps, "keeps"))
        return 1;
    if (op->sym != IR_SYM_FUSED) {
        if (op->nkeeps)
            return fail(v, IR_NONE, "keeps", "only a fused op keeps internal results");
        return op->nparts ? fail(v, IR_NONE, "parts", "only a fused op has parts") : 0;
    }
    if (level > IR_MAX_DEPTH)
        return fail(v, IR_NONE, "parts", "fused blocks nest deeper than %d", IR_MAX_DEPTH);
    if (op->nparts < 1)
        return fail(v, IR_NONE, "parts", "a fused op needs at least one part");
    for (int32_t p = 0; p < op->nparts; p++) {
        v->path[v->depth++] = (struct frame){p, &op->parts[p]};
        int bad = check_structure(v, &op->parts[p], level + (op->parts[p].sym == IR_SYM_FUSED));
        if (bad)
            return bad;
        v->depth--;
    }
    return 0;
}

/* Check a top-level op's covers: at least one, non-negative, ascending (a lifted op repeats once for each copy of it
 * the op computes, as a fold of two ops that each recompute it). */
static int check_covers(struct vstate *v, const struct ir_op *op)
{
    if (op->ncovers < 1)
        return fail(v, IR_NONE, "covers", "a top-level op must cover at least one lifted op");
    if (check_count_in(v, op->ncovers, 1, IR_MAX_COVERS, "covers"))
        return 1;
    for (int32_t k = 0; k < op->ncovers; k++)
        if (op->covers[k] < 0 || (k > 0 && op->covers[k] < op->covers[k - 1]))
            return fail(v, IR_NONE, "covers", "must be non-negative and ascending (entry %d is %d)", (int)k,
                        (int)op->covers[k]);
    return 0;
}

/* ── Step 2: shapes ──────────────────────────────────────────────────────────────────────────────────────── */

/* Check every field of a spec is in range: sizes 1..IR_MAX_DIM (some may be 0), optional sizes 0..IR_MAX_DIM,
 * floats finite, enums known, row indices of a known form with literals 1..IR_MAX_DIM. */
static int check_fields(struct vstate *v, const struct ir_spec *s)
{
    int n;
    const struct ir_field *f = ir_spec_fields(s->kind, &n);
    for (int i = 0; i < n; i++) {
        const char *p = (const char *)s + f[i].offset;
        switch (f[i].type) {
        case IR_F_INT:
        case IR_F_INT_OPT: {
            int64_t x = *(const int64_t *)(const void *)p;
            int64_t lo = f[i].type == IR_F_INT_OPT || may_be_zero(s->kind, f[i].name) ? 0 : 1;
            if (x < lo || x > IR_MAX_DIM)
                return fail(v, IR_NONE, f[i].name, "%" PRId64 " is outside %" PRId64 "..%" PRId64, x, lo,
                            IR_MAX_DIM);
            break;
        }
        case IR_F_FLOAT:
            if (!isfinite(*(const double *)(const void *)p))
                return fail(v, IR_NONE, f[i].name, "must be finite");
            break;
        case IR_F_FLOAT_OPT: {
            const struct ir_optf *o = (const void *)p;
            if (o->has && !isfinite(o->v))
                return fail(v, IR_NONE, f[i].name, "must be finite");
            break;
        }
        case IR_F_FLAG:
            break;
        case IR_F_EWOP:
        case IR_F_MOEACT:
        case IR_F_GATEACT:
        case IR_F_NORMKIND:
        case IR_F_ROPESCALE: {
            int x = *(const int *)(const void *)p;
            int count = f[i].type == IR_F_EWOP       ? IR_EW_COUNT
                        : f[i].type == IR_F_MOEACT   ? IR_MOE_COUNT
                        : f[i].type == IR_F_GATEACT  ? IR_GATE_COUNT
                        : f[i].type == IR_F_NORMKIND ? IR_NORM_COUNT
                                                     : IR_ROPESCALE_COUNT;
            if (x < 0 || x >= count)
                return fail(v, IR_NONE, f[i].name, "unknown value %d", x);
            break;
        }
        case IR_F_ROWIDX:
        case IR_F_ROWIDX_OPT: {
            const struct ir_rowidx *r = (const void *)p;
            int lo = f[i].type == IR_F_ROWIDX ? IR_RIDX_LITERAL : IR_RIDX_NONE;
            if ((int)r->kind < lo || r->kind > IR_RIDX_NAMED)
                return fail(v, IR_NONE, f[i].name, f[i].type == IR_F_ROWIDX ? "a literal or named row is required"
                                                                             : "unknown row index form");
            if (r->kind == IR_RIDX_LITERAL && (r->literal < 1 || r->literal > IR_MAX_DIM))
                return fail(v, IR_NONE, f[i].name, "row %" PRId64 " is outside 1..%" PRId64, r->literal,
                            IR_MAX_DIM);
            break;
        }
        }
    }
    return 0;
}

/* Check a strided access's own geometry: 0 <= offset, 1 <= width, offset + width <= pitch <= IR_MAX_ELEMS. */
static int check_strided(struct vstate *v, const struct ir_strided *s, const char *field)
{
    if (s->offset < 0 || s->width < 1 || s->pitch > IR_MAX_ELEMS || s->offset > s->pitch ||
        s->width > s->pitch - s->offset)
        return fail(v, IR_NONE, field,
                    "strided (%" PRId64 ":%" PRId64 ":%" PRId64 ") needs 0 <= offset, 1 <= width, "
                    "offset + width <= pitch",
                    s->pitch, s->offset, s->width);
    return 0;
}

/* Values spanned by the units of `len` values placed `s` apart (-1 when width does not divide len or it overflows),
 * writing the unit count. */
static int64_t strided_span(const struct ir_strided *s, int64_t len, int64_t *units)
{
    if (len % s->width != 0)
        return -1;
    *units = len / s->width;
    return add(mul(*units - 1, s->pitch), s->offset + s->width);
}

/* Check an operand read with `acc` holds `len` values (gathered from its units when strided). */
static int check_len(struct vstate *v, ir_tid t, const struct ir_access *acc, int64_t len, const char *field)
{
    char buf[32];
    if (len < 0)
        return fail(v, IR_NONE, field, "its size overflows");
    if (!acc->strided) {
        if (tlen(v, t) != len)
            return fail(v, IR_NONE, field, "tensor '%s' has %" PRId64 " values, expected %" PRId64,
                        tname(v, t, buf, sizeof buf), tlen(v, t), len);
        return 0;
    }
    if (check_strided(v, &acc->s, field))
        return 1;
    int64_t units = 0, span = strided_span(&acc->s, len, &units);
    if (len % acc->s.width != 0)
        return fail(v, IR_NONE, field, "strided width %" PRId64 " does not divide the %" PRId64 " values read",
                    acc->s.width, len);
    if (span < 0 || span > tlen(v, t))
        return fail(v, IR_NONE, field, "%" PRId64 " strided units span past tensor '%s' of %" PRId64 " values",
                    units, tname(v, t, buf, sizeof buf), tlen(v, t));
    return 0;
}

/* Check operand k of a primitive op against what its spec needs. */
static int check_operand(struct vstate *v, const struct ir_op *op, int k, const struct need *nd)
{
    ir_tid t = op->ins[k];
    const struct ir_tensor *x = &v->g->tensors[t];
    const struct ir_access *acc = &op->access[k];
    char buf[32];
    switch (nd->how) {
    case NEED_INDEX:
        if (x->elem != IR_ELEM_I32)
            return fail(v, IR_NONE, nd->name, "index tensor '%s' must be i32, not %s", x->name,
                        ir_elem_name(x->elem));
        return check_len(v, t, acc, nd->len, nd->name);
    case NEED_LEN:
        return check_len(v, t, acc, nd->len, nd->name);
    case NEED_SHAPE:
        if (nd->len < 0)
            return fail(v, IR_NONE, nd->name, "its size overflows");
        if (!acc->strided && (x->rows != nd->rows || x->cols != nd->cols))
            return fail(v, IR_NONE, nd->name, "tensor '%s' is %" PRId64 "x%" PRId64 ", expected %" PRId64 "x%" PRId64,
                        tname(v, t, buf, sizeof buf), x->rows, x->cols, nd->rows, nd->cols);
        return check_len(v, t, acc, nd->len, nd->name);
    case NEED_TABLE:
        if (acc->strided) {
            if (check_strided(v, &acc->s, nd->name))
                return 1;
            if (acc->s.offset + acc->s.width > tlen(v, t))
                return fail(v, IR_NONE, nd->name, "strided read passes tensor '%s'", tname(v, t, buf, sizeof buf));
            return 0;
        }
        if (x->cols != nd->cols)
            return fail(v, IR_NONE, nd->name, "tensor '%s' has %" PRId64 " cols, expected %" PRId64,
                        tname(v, t, buf, sizeof buf), x->cols, nd->cols);
        if (nd->rows < 0 || x->rows < nd->rows)
            return fail(v, IR_NONE, nd->name, "tensor '%s' has %" PRId64 " rows, needs at least %" PRId64,
                        tname(v, t, buf, sizeof buf), x->rows, nd->rows);
        return 0;
    }
    return 0;
}

/* Check the result length `len` against the out tensor. */
static int check_out(struct vstate *v, const struct ir_op *op, int64_t len)
{
    char buf[32];
    if (len < 0)
        return fail(v, IR_NONE, "out", "the result's size overflows");
    if (tlen(v, op->out) != len)
        return fail(v, IR_NONE, "out", "tensor '%s' has %" PRId64 " values, the result has %" PRId64,
                    tname(v, op->out, buf, sizeof buf), tlen(v, op->out), len);
    return 0;
}

/* Check that every rope reading rotary table t (operand `field`) reads it as one width and one base: the table holds
 * one set of angles, so two ropes that disagree cannot both read it right. */
static int check_table_use(struct vstate *v, ir_tid t, const struct ir_rope *r, const char *field)
{
    if (!v->tables) {
        v->tables = malloc((size_t)(v->g->ntensors ? v->g->ntensors : 1) * sizeof *v->tables);
        if (!v->tables)
            return fail(v, IR_NONE, field, "out of memory");
        for (ir_tid k = 0; k < v->g->ntensors; k++)
            v->tables[k].op = -1;
    }
    struct table_use *u = &v->tables[t];
    char buf[32];
    if (u->op < 0) {
        *u = (struct table_use){v->cur, r};
        return 0;
    }
    double theta = ir_rope_theta(r), was = ir_rope_theta(u->rope);
    if (u->rope->half != r->half)
        return fail(v, IR_NONE, "half", "rotary table '%s' is read %" PRId64 " wide here, %" PRId64 " wide by op %d",
                    tname(v, t, buf, sizeof buf), r->half, u->rope->half, (int)u->op);
    if (memcmp(&was, &theta, sizeof theta) != 0)
        return fail(v, IR_NONE, "theta", "rotary table '%s' is read with base %.17g here, %.17g by op %d",
                    tname(v, t, buf, sizeof buf), theta, was, (int)u->op);
    if (!ir_rope_same_tables(u->rope, r))
        return fail(v, IR_NONE, "scaling", "rotary table '%s' is read with another rotary scaling here than by op %d",
                    tname(v, t, buf, sizeof buf), (int)u->op);
    return 0;
}

/* Check a primitive op: its fields, its spec's consistency, its operands and its result. */
static int check_prim(struct vstate *v, const struct ir_op *op)
{
    if (check_fields(v, &op->spec))
        return 1;
    struct shape sh;
    char why[256];
    const char *field = spec_shape(&op->spec, &sh, why, sizeof why);
    if (field)
        return fail(v, IR_NONE, field, "%s", why);
    if (op->nins != sh.n) {
        char names[128];
        size_t at = 0;
        for (int k = 0; k < sh.n; k++)
            append(names, sizeof names, &at, "%s%s", k ? ", " : "", sh.in[k].name);
        return fail(v, IR_NONE, "ins", "%d operands, expected %d (%s)", (int)op->nins, sh.n, at ? names : "");
    }
    for (int k = 0; k < sh.n; k++)
        if (check_operand(v, op, k, &sh.in[k]))
            return 1;
    if (check_out(v, op, sh.out < 0 ? -1 : ir_spec_out_len(&op->spec)))
        return 1;
    char buf[32];
    if (sh.out_i32 && v->g->tensors[op->out].elem != IR_ELEM_I32)
        return fail(v, IR_NONE, "out", "tensor '%s' must be i32", tname(v, op->out, buf, sizeof buf));
    if (op->spec.kind == IR_KIND_SET_ROW && op->out != op->ins[0])
        return fail(v, IR_NONE, "out", "must be the table '%s' it writes in place",
                    tname(v, op->ins[0], buf, sizeof buf));
    if (op->spec.kind == IR_KIND_ROPE)
        return check_table_use(v, op->ins[1], &op->spec.u.rope, "cos") ||
               check_table_use(v, op->ins[2], &op->spec.u.rope, "sin");
    return 0;
}

/* Check a view: one operand holding offset + len(out) values. */
static int check_view(struct vstate *v, const struct ir_op *op)
{
    if (op->nins != 1)
        return fail(v, IR_NONE, "ins", "%d operands, expected 1", (int)op->nins);
    if (op->view_offset < 0 || op->view_offset > IR_MAX_ELEMS)
        return fail(v, IR_NONE, "offset", "%" PRId64 " is outside 0..%" PRId64, op->view_offset, IR_MAX_ELEMS);
    int64_t need = op->view_offset + tlen(v, op->out);
    char buf[32];
    if (!op->access[0].strided) {
        if (need > tlen(v, op->ins[0]))
            return fail(v, IR_NONE, "offset", "offset + len(out) = %" PRId64 " passes tensor '%s' of %" PRId64
                                              " values",
                        need, tname(v, op->ins[0], buf, sizeof buf), tlen(v, op->ins[0]));
        return 0;
    }
    return check_len(v, op->ins[0], &op->access[0], need, "ins[0]");
}

/* Check a quantize: one operand of len(out) values, a multiple of 32, with 1 or 2 words a value. */
static int check_quant(struct vstate *v, const struct ir_op *op)
{
    if (op->nins != 1)
        return fail(v, IR_NONE, "ins", "%d operands, expected 1", (int)op->nins);
    if (op->quant_words != 1 && op->quant_words != 2)
        return fail(v, IR_NONE, "words", "%d, expected 1 or 2", (int)op->quant_words);
    int64_t len = tlen(v, op->out);
    if (len % 32 != 0)
        return fail(v, IR_NONE, "out", "%" PRId64 " values are not a multiple of 32", len);
    return check_len(v, op->ins[0], &op->access[0], len, "ins[0]");
}

/* How an access reads, as message text: "whole" or "strided pitch P offset O width W". */
static const char *access_text(const struct ir_access *a, char *buf, size_t n)
{
    if (!a->strided)
        return "whole";
    snprintf(buf, n, "strided pitch %" PRId64 " offset %" PRId64 " width %" PRId64, a->s.pitch, a->s.offset,
             a->s.width);
    return buf;
}

/* Whether some part of op reads t with access a (a nested fused part by its own operands). */
static bool part_reads(const struct ir_op *op, ir_tid t, const struct ir_access *a)
{
    for (int32_t p = 0; p < op->nparts; p++)
        for (int32_t k = 0; k < op->parts[p].nins; k++)
            if (op->parts[p].ins[k] == t && ir_access_same(&op->parts[p].access[k], a))
                return true;
    return false;
}

/* Check a fused op's operands are exactly what its parts read from outside it (a tensor no part computes): each
 * operand read so by a part with the operand's access, and every such read an operand. The order is the class's
 * own (later rules match a fused op by it), so it is not checked. Needs v->inside marked with the op's leaves. */
static int check_operands(struct vstate *v, const struct ir_op *op)
{
    char a[32], field[32], ra[64];
    for (int32_t k = 0; k < op->nins; k++) {
        snprintf(field, sizeof field, "ins[%d]", (int)k);
        if (v->inside[op->ins[k]] == v->mark)
            return fail(v, IR_NONE, field, "'%s' is computed inside the op, so it is no operand",
                        tname(v, op->ins[k], a, sizeof a));
        if (!part_reads(op, op->ins[k], &op->access[k]))
            return fail(v, IR_NONE, field, "no part reads '%s' %s", tname(v, op->ins[k], a, sizeof a),
                        access_text(&op->access[k], ra, sizeof ra));
    }
    for (int32_t p = 0; p < op->nparts; p++)
        for (int32_t k = 0; k < op->parts[p].nins; k++) {
            ir_tid t = op->parts[p].ins[k];
            if (v->inside[t] != v->mark && !ir_op_has_operand(op, t))
                return fail(v, IR_NONE, "ins", "part %d reads '%s' from outside the op, which is no operand", (int)p,
                            tname(v, t, a, sizeof a));
        }
    return 0;
}

/* Mark with the current mark the result of every part below op, at any depth: each leaf's, and each nested fused
 * op's (a table its parts fill by rows is no leaf's). */
static void mark_results(struct vstate *v, const struct ir_op *op)
{
    for (int32_t p = 0; p < op->nparts; p++) {
        v->inside[op->parts[p].out] = v->mark;
        mark_results(v, &op->parts[p]);
    }
}

/* The rows of a table that a fused op's leaves write by fixed-row destinations (table_rows' tally). */
struct table_rows {
    ir_tid table;
    int64_t rows, cols, written;
    unsigned char *seen; /* rows entries: 1 once a leaf writes that row */
    bool bad;            /* a leaf writes the table otherwise, or one row twice */
};

/* Count one leaf. */
static void count_leaf(const struct ir_op *leaf, void *ctx)
{
    (void)leaf;
    ++*(int64_t *)ctx;
}

/* Tally leaf's fixed-row write into the table in ctx. */
static void tally_table_row(const struct ir_op *leaf, void *ctx)
{
    struct table_rows *t = ctx;
    const struct ir_dst *d = &leaf->dst;
    if (d->buf != t->table || leaf->out == t->table)
        return;
    int64_t r = d->row_fixed - 1;
    if (d->row != IR_ROWSEL_FIXED || d->has_unit || d->row_cols != t->cols || r < 0 || r >= t->rows || t->seen[r]) {
        t->bad = true;
        return;
    }
    t->seen[r] = 1;
    t->written++;
}

/* Whether op's result is a table its leaves fill whole, one fixed row each (a block's mixtures run as one), and
 * the op keeps it as its own buffer. */
static bool fills_table(const struct vstate *v, const struct ir_op *op)
{
    const struct ir_tensor *t = &v->g->tensors[op->out];
    int64_t leaves = 0;
    ir_op_leaves(op, count_leaf, &leaves);
    if (!ir_dst_is_own(&op->dst) || t->role != IR_ROLE_STATE || t->rows < 1 || t->rows > leaves)
        return false; /* a leaf writes one row at most: more rows than leaves cannot be filled */
    unsigned char *seen = calloc((size_t)t->rows, 1);
    if (!seen)
        abort();
    struct table_rows tally = {op->out, t->rows, t->cols, 0, seen, false};
    ir_op_leaves(op, tally_table_row, &tally);
    free(seen);
    return !tally.bad && tally.written == t->rows;
}

/* Check a fused op's own fields: its out is a part's out (or the table its parts fill by rows), its keeps are
 * leaves' outs, its strided reads fit. */
static int check_fused(struct vstate *v, const struct ir_op *op)
{
    char buf[32];
    bool found = false;
    for (int32_t p = 0; p < op->nparts && !found; p++)
        found = op->parts[p].out == op->out;
    if (!found && !fills_table(v, op))
        return fail(v, IR_NONE, "out",
                    "'%s' is no part's result, nor a state table its parts fill whole, one fixed row each",
                    tname(v, op->out, buf, sizeof buf));
    v->mark++;
    mark_results(v, op);
    for (int32_t k = 0; k < op->nkeeps; k++)
        if (v->inside[op->keeps[k]] != v->mark)
            return fail(v, IR_NONE, "keeps", "'%s' is no part's result", tname(v, op->keeps[k], buf, sizeof buf));
    for (int32_t k = 0; k < op->nins; k++) {
        if (!op->access[k].strided)
            continue;
        snprintf(buf, sizeof buf, "ins[%d]", (int)k);
        if (check_strided(v, &op->access[k].s, buf))
            return 1;
        if (op->access[k].s.offset + op->access[k].s.width > tlen(v, op->ins[k]))
            return fail(v, IR_NONE, buf, "strided read passes its tensor");
    }
    return 0;
}

/* Check the operands of every fused node of op, outermost first (after its reads: a read before a write names the
 * cause better than the operand it leaves unnamed). */
static int check_fused_operands(struct vstate *v, const struct ir_op *op)
{
    if (op->sym != IR_SYM_FUSED)
        return 0;
    v->mark++;
    mark_results(v, op);
    if (check_operands(v, op))
        return 1;
    for (int32_t p = 0; p < op->nparts; p++) {
        v->path[v->depth++] = (struct frame){p, &op->parts[p]};
        if (check_fused_operands(v, &op->parts[p]))
            return 1;
        v->depth--;
    }
    return 0;
}

/* A tensor and how many leaves read it (check_kernel_writes' counter). */
struct leaf_reads {
    ir_tid t;
    int64_t n;
};

/* Count leaf if it reads the tensor in ctx. */
static void count_leaf_read(const struct ir_op *leaf, void *ctx)
{
    struct leaf_reads *c = ctx;
    for (int32_t k = 0; k < leaf->nins; k++)
        if (leaf->ins[k] == c->t) {
            c->n++;
            return;
        }
}

/* Count one leaf among the readers of every tensor it reads (each once; ids outside the graph skipped: later ops
 * are not validated yet). */
static void count_leaf_readers(const struct ir_op *leaf, void *ctx)
{
    struct vstate *v = ctx;
    v->leaf_stamp++;
    for (int32_t k = 0; k < leaf->nins; k++) {
        ir_tid t = leaf->ins[k];
        if (t < 0 || t >= v->g->ntensors || v->leaf_seen[t] == v->leaf_stamp)
            continue;
        v->leaf_seen[t] = v->leaf_stamp;
        v->leaf_readers[t]++;
    }
}

/* How many leaves of the whole graph read t, the counts made once a validation (asked per kept result, they made
 * the validator quadratic in a batch's ops). -1 when the counts cannot be had. */
static int64_t leaves_reading(struct vstate *v, ir_tid t)
{
    if (!v->leaf_readers) {
        size_t n = v->g->ntensors > 0 ? (size_t)v->g->ntensors : 1;
        v->leaf_readers = calloc(n, sizeof *v->leaf_readers);
        v->leaf_seen = calloc(n, sizeof *v->leaf_seen);
        if (!v->leaf_readers || !v->leaf_seen) {
            free(v->leaf_readers);
            free(v->leaf_seen);
            v->leaf_readers = v->leaf_seen = NULL;
            return -1;
        }
        for (int32_t i = 0; i < v->g->nops; i++)
            ir_op_leaves(&v->g->ops[i], count_leaf_readers, v);
    }
    return t >= 0 && t < v->g->ntensors ? v->leaf_readers[t] : 0;
}

/* Whether a leaf outside fused op `op` reads t (another op, or another part of the op op is a part of). */
static bool read_outside(struct vstate *v, const struct ir_op *op, ir_tid t)
{
    struct leaf_reads all = {t, leaves_reading(v, t)}, own = {t, 0};
    if (all.n < 0) { /* no room for the counts: count by scanning */
        all.n = 0;
        for (int32_t i = 0; i < v->g->nops; i++)
            ir_op_leaves(&v->g->ops[i], count_leaf_read, &all);
    }
    ir_op_leaves(op, count_leaf_read, &own);
    return all.n > own.n;
}

/* Whether some fused part of op keeps t (that part's class answers for it). */
static bool kept_by_part(const struct ir_op *op, ir_tid t)
{
    for (int32_t p = 0; p < op->nparts; p++)
        for (int32_t k = 0; op->parts[p].sym == IR_SYM_FUSED && k < op->parts[p].nkeeps; k++)
            if (op->parts[p].keeps[k] == t)
                return true;
    return false;
}

/* The kernel contract: every inner result a fused op keeps of its own fold is one its class's kernel writes for
 * each need it serves (a later op's read, the host's read after the step, the host's keeping it across steps). */
static int check_kernel_writes(struct vstate *v, const struct ir_op *op)
{
    unsigned writes = ir_class_writes(op->cls);
    for (int32_t k = 0; k < op->nkeeps && writes != IR_WRITES_ALL; k++) {
        ir_tid t = op->keeps[k];
        if (kept_by_part(op, t))
            continue;
        const struct ir_tensor *x = &v->g->tensors[t];
        unsigned need = (read_outside(v, op, t) ? IR_WRITES_READ : 0u) | (x->observed ? IR_WRITES_OBSERVED : 0u) |
                        (x->carried ? IR_WRITES_CARRIED : 0u);
        unsigned serves = writes | ((writes & (IR_WRITES_READ_AFTER | IR_WRITES_READ_NAMED)) ? IR_WRITES_READ : 0u);
        if (need ? (need & ~serves) != 0 : writes == 0)
            return fail(v, IR_NONE, "keeps", "'%s' is an inner result the %s kernel does not write%s", x->name,
                        ir_class_name(op->cls),
                        (need & IR_WRITES_READ) ? " for another op" : need ? " for the host" : "");
    }
    return 0;
}

/* Check where a node's result (len(out) values) lands: its own buffer, rows of a table, units of a wider tensor. */
static int check_dst(struct vstate *v, const struct ir_op *op)
{
    const struct ir_dst *d = &op->dst;
    char buf[32];
    if (ir_dst_is_own(d)) {
        if (d->buf != op->out)
            return fail(v, IR_NONE, "dst", "without a row or unit, the result lands in its own buffer");
        return 0;
    }
    int64_t len = tlen(v, op->out), span = len, units = 0;
    if (d->has_unit) {
        if (check_strided(v, &d->unit, "dst"))
            return 1;
        span = strided_span(&d->unit, len, &units);
        if (len % d->unit.width != 0)
            return fail(v, IR_NONE, "dst", "unit width %" PRId64 " does not divide the %" PRId64 "-value result",
                        d->unit.width, len);
    }
    const struct ir_tensor *b = &v->g->tensors[d->buf];
    if (d->row == IR_ROWSEL_NONE) {
        if (span < 0 || span > tlen(v, d->buf))
            return fail(v, IR_NONE, "dst", "%" PRId64 " units pass tensor '%s' of %" PRId64 " values", units,
                        tname(v, d->buf, buf, sizeof buf), tlen(v, d->buf));
        return 0;
    }
    if (d->row_cols < 1 || d->row_cols > b->cols)
        return fail(v, IR_NONE, "dst", "row width %" PRId64 " is outside 1..%" PRId64 " (the cols of '%s')",
                    d->row_cols, b->cols, b->name);
    if (d->row == IR_ROWSEL_FIXED && (d->row_fixed < 1 || d->row_fixed > b->rows))
        return fail(v, IR_NONE, "dst", "row %" PRId64 " is outside 1..%" PRId64, d->row_fixed, b->rows);
    if (d->row == IR_ROWSEL_PARAM) {
        const struct ir_tensor *p = &v->g->tensors[d->row_param];
        if (p->elem != IR_ELEM_I32 || p->rows * p->cols != 1)
            return fail(v, IR_NONE, "dst.row", "'%s' must be one i32 value", p->name);
    }
    int64_t start = d->row == IR_ROWSEL_FIXED ? d->row_fixed - 1 : 0;
    int64_t rows = span < 0 ? -1 : span / d->row_cols + (span % d->row_cols != 0);
    if (rows < 0 || rows > b->rows - start)
        return fail(v, IR_NONE, "dst", "the result's rows of %" PRId64 " values pass the %" PRId64 " rows of '%s'",
                    d->row_cols, b->rows, b->name);
    return 0;
}

/* Check a node's result is an activation or state: the host sets inputs, params and constants. */
static int check_result_role(struct vstate *v, const struct ir_op *op)
{
    const struct ir_tensor *x = &v->g->tensors[op->out];
    if (x->role != IR_ROLE_ACTIVATION && x->role != IR_ROLE_STATE)
        return fail(v, IR_NONE, "out", "the result '%s' is %s, which only the host sets", x->name,
                    ir_role_name(x->role));
    return 0;
}

/* Check the shapes of a node and of its parts. */
static int check_shapes(struct vstate *v, const struct ir_op *op)
{
    int bad = 0;
    switch (op->sym) {
    case IR_SYM_PRIM: bad = check_prim(v, op); break;
    case IR_SYM_VIEW: bad = check_view(v, op); break;
    case IR_SYM_QUANT: bad = check_quant(v, op); break;
    case IR_SYM_FUSED: bad = check_fused(v, op) || check_kernel_writes(v, op); break;
    }
    if (bad || check_result_role(v, op) || check_dst(v, op))
        return 1;
    for (int32_t p = 0; p < op->nparts; p++) {
        v->path[v->depth++] = (struct frame){p, &op->parts[p]};
        if (check_shapes(v, &op->parts[p]))
            return 1;
        v->depth--;
    }
    return 0;
}

/* ── Step 3: defined before read ─────────────────────────────────────────────────────────────────────────── */

/* What operand k of a node is called in messages: its spec's name for it, else ins[k]. */
static const char *operand_name(const struct ir_op *op, int k, char *buf, size_t n)
{
    if (op->sym == IR_SYM_PRIM) {
        struct shape sh;
        char why[8];
        spec_shape(&op->spec, &sh, why, sizeof why);
        if (k < sh.n)
            return sh.in[k].name;
    }
    snprintf(buf, n, "ins[%d]", k);
    return buf;
}

/* What operand k of a primitive node is called, as a string that outlives the call ("ins" when unnamed). */
static const char *operand_label(const struct ir_op *op, int k)
{
    struct shape sh;
    char why[8];
    spec_shape(&op->spec, &sh, why, sizeof why);
    return k < sh.n ? sh.in[k].name : "ins";
}

/* Check the current op may read t here (operand k of node, or its row param when k < 0): defined before the op,
 * or by an earlier part of it. */
static int check_read(struct vstate *v, ir_tid t, const struct ir_op *node, int k)
{
    if (v->local[t] == v->stamp)
        return 0;
    v->external[t] = v->stamp;
    if (v->first_read[t] < 0)
        v->first_read[t] = v->cur;
    if (v->defined[t])
        return 0;
    char buf[32], name[32];
    const char *field = k < 0 ? "dst.row" : operand_name(node, k, name, sizeof name);
    return fail(v, IR_NONE, field, "reads '%s' before it is written", tname(v, t, buf, sizeof buf));
}

/* Check what a node and its parts read, in the order they run; mark what each part writes for later parts. */
static int check_reads(struct vstate *v, const struct ir_op *op)
{
    for (int32_t k = 0; k < op->nins; k++)
        if (check_read(v, op->ins[k], op, (int)k))
            return 1;
    for (int32_t p = 0; p < op->nparts; p++) {
        v->path[v->depth++] = (struct frame){p, &op->parts[p]};
        if (check_reads(v, &op->parts[p]))
            return 1;
        v->depth--;
    }
    if (op->dst.row == IR_ROWSEL_PARAM && check_read(v, op->dst.row_param, op, -1))
        return 1;
    v->local[op->out] = v->stamp;
    v->local[op->dst.buf] = v->stamp;
    return 0;
}

/* ── Step 4: writes ──────────────────────────────────────────────────────────────────────────────────────── */

/* Record that the current op writes t (whole, or the unit part `unit`), after checking its role may be written so:
 * never an input, param or constant; only state in place or in rows. */
static int add_write(struct vstate *v, ir_tid t, const struct ir_strided *unit, int64_t units, bool inplace,
                     bool rows, const char *field)
{
    const struct ir_tensor *x = &v->g->tensors[t];
    if (x->role == IR_ROLE_INPUT || x->role == IR_ROLE_PARAM || x->role == IR_ROLE_CONSTANT)
        return fail(v, IR_NONE, field, "writes %s '%s', which only the host sets", ir_role_name(x->role), x->name);
    if (inplace && x->role != IR_ROLE_STATE)
        return fail(v, IR_NONE, field, "writes '%s' in place, but it is %s, not state", x->name,
                    ir_role_name(x->role));
    if (rows && x->role != IR_ROLE_STATE)
        return fail(v, IR_NONE, field, "writes rows of '%s', but it is %s, not state", x->name,
                    ir_role_name(x->role));
    if (v->nw == v->capw) {
        size_t cap = v->capw ? v->capw * 2 : 64;
        struct wentry *w = realloc(v->w, cap * sizeof *w);
        if (!w)
            return fail(v, IR_NONE, field, "out of memory");
        v->w = w;
        v->capw = cap;
    }
    struct wentry *e = &v->w[v->nw++];
    e->t = t;
    e->whole = unit == NULL;
    e->unit = unit ? *unit : (struct ir_strided){0, 0, 0};
    e->units = units;
    e->field = field;
    return 0;
}

/* Record where a node's result lands: its buffer whole, or a unit part of it; rows only of state. */
static int add_dst_write(struct vstate *v, const struct ir_op *op)
{
    const struct ir_dst *d = &op->dst;
    int64_t units = d->has_unit ? tlen(v, op->out) / d->unit.width : 0;
    return add_write(v, d->buf, d->has_unit ? &d->unit : NULL, units, false, d->row != IR_ROWSEL_NONE, "dst");
}

/* Collect what a node writes (ir_op_writes' meaning): for the top-level op its destination and keeps; for every
 * leaf a placed destination and the state inputs it writes in place. */
static int collect_writes(struct vstate *v, const struct ir_op *op, bool top)
{
    if (top && add_dst_write(v, op))
        return 1;
    for (int32_t p = 0; p < op->nparts; p++) {
        v->path[v->depth++] = (struct frame){p, &op->parts[p]};
        if (collect_writes(v, &op->parts[p], false))
            return 1;
        v->depth--;
    }
    if (op->sym != IR_SYM_FUSED) {
        if (!top && !ir_dst_is_own(&op->dst) && add_dst_write(v, op))
            return 1;
        int idx[4], n = ir_op_state_inputs(op, idx);
        for (int i = 0; i < n; i++)
            if (add_write(v, op->ins[idx[i]], NULL, 0, true, false, operand_label(op, idx[i])))
                return 1;
    }
    for (int32_t k = 0; top && k < op->nkeeps; k++)
        if (add_write(v, op->keeps[k], NULL, 0, false, false, "keeps"))
            return 1;
    return 0;
}

/* Record one unit part of activation t written by the current op. */
static int add_unit(struct vstate *v, const struct wentry *e)
{
    if (v->nunits == v->capunits) {
        size_t cap = v->capunits ? v->capunits * 2 : 64;
        struct unitw *w = realloc(v->units, cap * sizeof *w);
        if (!w)
            return fail(v, IR_NONE, "dst", "out of memory");
        v->units = w;
        v->capunits = cap;
    }
    v->units[v->nunits++] = (struct unitw){e->t, v->cur, e->unit.pitch, e->unit.offset, e->unit.width, e->units};
    return 0;
}

/* Check the current op's writes: nothing it reads from before it unless state; an activation written by no
 * earlier op, or only in unit parts by earlier ops when this op writes unit parts too. Then mark them defined. */
static int check_writes(struct vstate *v, const struct ir_op *op)
{
    char buf[32];
    v->nw = 0;
    if (collect_writes(v, op, true))
        return 1;
    for (size_t i = 0; i < v->nw; i++) {
        ir_tid t = v->w[i].t;
        if (v->external[t] == v->stamp && v->g->tensors[t].role != IR_ROLE_STATE)
            return fail(v, IR_NONE, v->w[i].field, "writes '%s', which it also reads, but it is not state",
                        tname(v, t, buf, sizeof buf));
        if (v->opw[t] != v->stamp)
            v->opw[t] = v->stamp, v->opwhole[t] = 0;
        v->opwhole[t] |= v->w[i].whole;
    }
    for (size_t i = 0; i < v->nw; i++) {
        ir_tid t = v->w[i].t;
        v->defined[t] = 1;
        if (v->g->tensors[t].role != IR_ROLE_ACTIVATION)
            continue;
        if (!v->opwhole[t] && v->first_read[t] >= 0)
            return fail(v, IR_NONE, v->w[i].field,
                        "writes a unit part of '%s', which op %d read before: every part is written before a read",
                        tname(v, t, buf, sizeof buf), (int)v->first_read[t]);
        if (!v->opwhole[t] && add_unit(v, &v->w[i]))
            return 1;
        if (v->opw[t] != v->stamp)
            continue; /* counted already */
        v->opw[t] = -v->stamp;
        bool whole = v->opwhole[t];
        if (v->writer[t] >= 0 && (whole || v->mode[t] == W_WHOLE))
            return fail(v, IR_NONE, v->w[i].field, "'%s' is already written by op %d", tname(v, t, buf, sizeof buf),
                        (int)v->writer[t]);
        if (v->writer[t] < 0) {
            v->writer[t] = v->cur;
            v->mode[t] = whole ? W_WHOLE : W_UNIT;
        }
    }
    return 0;
}

/* ── Unit parts: disjoint, one pitch, covering every unit ────────────────────────────────────────────────── */

/* Order unit parts by tensor, offset, width, then op. */
static int unit_cmp(const void *pa, const void *pb)
{
    const struct unitw *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->offset != b->offset)
        return a->offset < b->offset ? -1 : 1;
    if (a->width != b->width)
        return a->width < b->width ? -1 : 1;
    return a->op < b->op ? -1 : a->op > b->op;
}

/* Check the unit parts of one activation (parts [lo, hi) of the sorted list). */
static int check_unit_group(struct vstate *v, size_t lo, size_t hi)
{
    const struct unitw *u = v->units;
    ir_tid t = u[lo].t;
    const char *name = v->g->tensors[t].name;
    int64_t pitch = u[lo].pitch, end = 0, len = tlen(v, t);
    for (size_t i = lo; i < hi; i++) {
        if (i > lo && u[i].op == u[i - 1].op && u[i].offset == u[i - 1].offset && u[i].width == u[i - 1].width &&
            u[i].pitch == u[i - 1].pitch)
            continue; /* the same placement named twice by one op (the op's and its part's destination) */
        if (u[i].pitch != pitch)
            return fail_at(v, u[i].op, "dst", "'%s' is written in units of pitch %" PRId64 " and %" PRId64, name,
                           u[i].pitch, pitch);
        if (mul(u[i].units, pitch) != len)
            return fail_at(v, u[i].op, "dst", "'%s' has %" PRId64 " values, not %" PRId64 " units of pitch %" PRId64,
                           name, len, u[i].units, pitch);
        if (u[i].offset < end)
            return fail_at(v, u[i].op, "dst", "unit part of '%s' at offset %" PRId64 " overlaps another below %" PRId64,
                           name, u[i].offset, end);
        if (u[i].offset > end)
            break;
        end = u[i].offset + u[i].width;
    }
    if (end < pitch) {
        v->cur = -1;
        v->depth = 0;
        return fail(v, t, "units", "no op writes values from %" PRId64 " of each unit of pitch %" PRId64, end, pitch);
    }
    return 0;
}

/* Check every activation written in unit parts: one pitch, disjoint parts covering every unit. */
static int check_units(struct vstate *v)
{
    if (v->nunits)
        qsort(v->units, v->nunits, sizeof *v->units, unit_cmp);
    for (size_t lo = 0, hi; lo < v->nunits; lo = hi) {
        for (hi = lo + 1; hi < v->nunits && v->units[hi].t == v->units[lo].t;)
            hi++;
        if (check_unit_group(v, lo, hi))
            return 1;
    }
    return 0;
}

/* ── The whole graph ─────────────────────────────────────────────────────────────────────────────────────── */

/* Check top-level op i in its four steps. */
static int check_op(struct vstate *v, int32_t i)
{
    const struct ir_op *op = &v->g->ops[i];
    v->cur = i;
    v->stamp = i + 1;
    v->depth = 0;
    if (check_structure(v, op, op->sym == IR_SYM_FUSED) || check_covers(v, op))
        return 1;
    if (check_shapes(v, op) || check_reads(v, op))
        return 1;
    v->depth = 0;
    if (check_fused_operands(v, op))
        return 1;
    return check_writes(v, op);
}

/* Allocate the per-tensor arrays; false when memory runs out. */
static bool vstate_alloc(struct vstate *v, size_t n)
{
    n = n ? n : 1;
    v->defined = calloc(n, 1);
    v->local = calloc(n, sizeof *v->local);
    v->external = calloc(n, sizeof *v->external);
    v->opw = calloc(n, sizeof *v->opw);
    v->opwhole = calloc(n, 1);
    v->writer = malloc(n * sizeof *v->writer);
    v->first_read = malloc(n * sizeof *v->first_read);
    v->mode = calloc(n, 1);
    v->inside = calloc(n, sizeof *v->inside);
    if (!v->defined || !v->local || !v->external || !v->opw || !v->opwhole || !v->writer || !v->first_read ||
        !v->mode || !v->inside)
        return false;
    for (size_t t = 0; t < n; t++)
        v->writer[t] = v->first_read[t] = -1;
    return true;
}

/* Free what the validator allocated. */
static void vstate_free(struct vstate *v)
{
    free(v->defined);
    free(v->local);
    free(v->external);
    free(v->opw);
    free(v->opwhole);
    free(v->writer);
    free(v->first_read);
    free(v->mode);
    free(v->inside);
    free(v->units);
    free(v->w);
    free(v->tables);
    free(v->leaf_readers);
    free(v->leaf_seen);
}

/* Check every activation the host reads after the step, or keeps across steps, is written by some op: a fused op
 * that computes one inside must keep it. */
static int check_seen_written(struct vstate *v)
{
    char buf[32];
    v->cur = -1;
    for (ir_tid t = 0; t < v->g->ntensors; t++) {
        const struct ir_tensor *x = &v->g->tensors[t];
        if (x->role != IR_ROLE_ACTIVATION || v->defined[t] || !(x->observed || x->carried))
            continue;
        return fail(v, t, x->observed ? "observed" : "carried", "the host %s '%s'%s, but no op writes it",
                    x->observed ? "reads" : "keeps", tname(v, t, buf, sizeof buf),
                    x->observed ? " after the step" : " across steps");
    }
    return 0;
}

/* Check the tensors, then every op in order, then the unit parts. */
static int validate(struct vstate *v)
{
    const struct ir_graph *g = v->g;
    v->cur = -1;
    for (ir_tid t = 0; t < g->ntensors; t++) {
        if (check_tensor(v, t))
            return 1;
        enum ir_role r = g->tensors[t].role;
        v->defined[t] = r != IR_ROLE_ACTIVATION;
    }
    for (int32_t i = 0; i < g->nops; i++)
        if (check_op(v, i))
            return 1;
    return check_seen_written(v) || check_units(v);
}

int ir_validate_where(const struct ir_graph *g, int32_t *op, ir_tid *tensor, char err[IR_ERR_LEN])
{
    struct vstate v;
    memset(&v, 0, sizeof v);
    v.g = g;
    v.err = err;
    v.bad_op = -1;
    v.bad_tensor = IR_NONE;
    err[0] = '\0';
    int bad;
    if (g->ntensors < 0 || g->nops < 0) {
        snprintf(err, IR_ERR_LEN, "graph: negative tensor or op count");
        bad = 1;
    } else if (!vstate_alloc(&v, (size_t)g->ntensors)) {
        snprintf(err, IR_ERR_LEN, "graph: out of memory validating %d tensors", (int)g->ntensors);
        bad = 1;
    } else {
        bad = validate(&v);
    }
    vstate_free(&v);
    if (op)
        *op = bad ? v.bad_op : -1;
    if (tensor)
        *tensor = bad ? v.bad_tensor : IR_NONE;
    return bad;
}

int ir_validate(const struct ir_graph *g, char err[IR_ERR_LEN])
{
    return ir_validate_where(g, NULL, NULL, err);
}
