/* models/lift.c — the family table, parameter counts, and the builders that lift one step of a model into an ir
 * graph.
 *
 * The common decoder block, per layer (n rows: 1 for decode, the chunk's rows, or the batch's sequences):
 *
 *   attn_norm = rms_norm(x)                     the residual stream's first reader is its norm
 *   q, k, v   = attn_norm · W                   three products of one activation
 *   [head hook: per-head or whole q/k norms]  rope(q), rope(k) at the named position
 *   set_row(k_cache, rope(k)), set_row(v_cache, v)   at the named position, count = rows
 *   attn      = attention(q, k_cache, v_cache)  causal, at the named position
 *   attn_out  = attn · W_o   [post hook]   attn_res = x + attn_out
 *   ffn_norm  = rms_norm(attn_res)   [ffn hook]   [post hook]   out = attn_res + ffn
 *
 * A batch splits the attention per sequence (literal row gathers of q, k and v, its own caches and position, its
 * result set into its row of a table the output projection reads whole). After the last layer: the final norm (of the
 * chunk's last row only, for a prefill), the LM head [logits hook], and the arg-max of the next token.
 *
 * Residual adds take the stream first and the branch second, so the branch's post-norm (when a family has one) is
 * the add's second operand. A family without pre-norms (olmo2) drops attn_norm and ffn_norm: q, k, v are products of
 * the stream x itself and the FFN reads attn_res; its two norms a layer are the post hook's. */
#include "models/models.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct models_lift; /* the graph being built (below) */

/* A family: a name and the hooks that build what it adds to the common decoder block (each hook may be NULL,
 * meaning the family adds nothing there). */
struct models_family {
    const char *name;
    /* The rotation turns adjacent pairs (2i, 2i+1), llama.cpp's NORM rope type; else pairs (i, i+half), its NEOX type
     * (llama_model_rope_type). */
    bool adjacent;
    /* The FFN is a mixture of experts: experts, top_k and expert_ffn size it (ffn does not). */
    bool mixture;
    /* The gathered embedding rows x (rows × hidden) as the first layer reads them. */
    ir_tid (*embed)(struct models_lift *l, ir_tid x);
    /* A query or key t (`which` is "q" or "k"; `heads` heads a row; seq the batch's sequence, or -1) before its
     * rotation. */
    ir_tid (*head)(struct models_lift *l, int layer, ir_tid t, int64_t heads, const char *which, int64_t seq);
    /* A branch's output t (the attention's or the FFN's projection, `tag` names it) before its residual add. */
    ir_tid (*post)(struct models_lift *l, int layer, ir_tid t, const char *tag);
    /* The FFN of the normed rows x: its output (rows × hidden). Required. */
    ir_tid (*ffn)(struct models_lift *l, int layer, ir_tid x);
    /* The attention half of a layer over the stream x, its residual add included (NULL: the common block). */
    ir_tid (*attention)(struct models_lift *l, int layer, ir_tid x);
    /* The LM head's logits before the arg-max. */
    ir_tid (*logits)(struct models_lift *l, ir_tid t);
    /* The sliding window of a layer (0: attends the whole context). */
    int64_t (*window)(const struct models_config *c, int layer);
    /* Parameters layer `layer` holds beyond its two norms and, unless the family has its own attention half, the
     * common block's attention projections; -1 on overflow. Required. */
    int64_t (*layer_params)(const struct models_config *c, int layer);
    /* The branches read the stream itself, with no norm before them (their two norms are the post hook's, after). */
    bool no_pre_norm;
    /* Every norm is a LayerNorm (mean-centred) with a bias row beside its weight (`<name>.bias`): nemotron's. */
    bool layer_norm;
};

/* a · b for sizes: -1 when either is negative (an earlier overflow) or the product overflows. */
static int64_t size_mul(int64_t a, int64_t b)
{
    if (a < 0 || b < 0 || (b && a > INT64_MAX / b))
        return -1;
    return a * b;
}

/* a + b for sizes: -1 when either is negative or the sum overflows. */
static int64_t size_add(int64_t a, int64_t b)
{
    if (a < 0 || b < 0 || a > INT64_MAX - b)
        return -1;
    return a + b;
}

struct models_lift {
    struct ir_graph *g;
    const struct models_config *c;
    const struct models_family *f;
    enum models_mode_kind kind;
    bool every_row_logits; /* a prefill's every row through the head (models_options) */
    int64_t n;        /* rows of the residual stream */
    int64_t ctx;      /* rows of every cache and rotary table */
    enum ir_format fmt;
    ir_tid cos, sin;  /* the rotary tables */
    ir_tid *pos;      /* the named positions: one, or one a batch's sequence */
    int64_t npos;
    bool failed;
    char *err;
    char names[8][IR_MAX_NAME]; /* a ring of name buffers: one expression may build several names */
    int next_name;
};

/* Record the first error of a lift. */
static void fail(struct models_lift *l, const char *fmt, ...)
{
    if (l->failed)
        return;
    l->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->err, IR_ERR_LEN, fmt, ap);
    va_end(ap);
}

/* "blk.<layer>.<what>", with ".<seq>" when seq ≥ 0: a layer's tensor name (in the lift's ring of buffers, valid for
 * the next seven calls). */
static const char *blk(struct models_lift *l, int layer, const char *what, int64_t seq)
{
    char *name = l->names[l->next_name];
    l->next_name = (l->next_name + 1) % 8;
    int w = seq >= 0 ? snprintf(name, IR_MAX_NAME, "blk.%d.%s.%lld", layer, what, (long long)seq)
                     : snprintf(name, IR_MAX_NAME, "blk.%d.%s", layer, what);
    if (w < 0 || w >= IR_MAX_NAME)
        fail(l, "tensor name 'blk.%d.%.32s' too long", layer, what);
    return name;
}

/* A new tensor of the graph; IR_NONE (and the lift failed) when its size is out of range or its name taken. */
static ir_tid tensor(struct models_lift *l, const char *name, enum ir_elem e, int64_t rows, int64_t cols,
                     enum ir_role role)
{
    if (l->failed)
        return IR_NONE;
    if (rows < 1 || cols < 1 || rows > IR_MAX_DIM || cols > IR_MAX_DIM || rows > IR_MAX_ELEMS / cols) {
        fail(l, "tensor '%s': %lld x %lld is out of range", name, (long long)rows, (long long)cols);
        return IR_NONE;
    }
    ir_tid t = ir_tensor_add(l->g, name, e, rows, cols, role);
    if (t == IR_NONE)
        fail(l, "tensor '%s' declared twice", name);
    return t;
}

/* An f32 activation. */
static ir_tid act(struct models_lift *l, const char *name, int64_t rows, int64_t cols)
{
    return tensor(l, name, IR_ELEM_F32, rows, cols, IR_ROLE_ACTIVATION);
}

/* A checkpoint constant of `rows` × `cols` in format fmt, stored transposed (a stored row per output col) or not. */
static ir_tid checkpoint(struct models_lift *l, const char *name, int64_t rows, int64_t cols, enum ir_format fmt,
                         bool transposed)
{
    ir_tid t = tensor(l, name, IR_ELEM_F32, rows, cols, IR_ROLE_CONSTANT);
    if (t != IR_NONE) {
        l->g->tensors[t].checkpoint = true;
        l->g->tensors[t].format = fmt;
        l->g->tensors[t].transposed = transposed;
    }
    return t;
}

/* A matrix W[k×n] of the lift's block format, in GGML's layout. */
static ir_tid matrix(struct models_lift *l, const char *name, int64_t k, int64_t n)
{
    return checkpoint(l, name, k, n, l->fmt, true);
}

/* A norm's weight (1 × cols plain values), shared by every op that names it. */
static ir_tid norm_weight(struct models_lift *l, const char *name, int64_t cols)
{
    ir_tid t = ir_tensor_find(l->g, name, strlen(name));
    return t != IR_NONE ? t : tensor(l, name, IR_ELEM_F32, 1, cols, IR_ROLE_CONSTANT);
}

/* A carried cache of the context's rows, `cols` wide. */
static ir_tid cache(struct models_lift *l, const char *name, int64_t cols)
{
    ir_tid t = tensor(l, name, IR_ELEM_F32, l->ctx, cols, IR_ROLE_STATE);
    if (t != IR_NONE)
        l->g->tensors[t].carried = true;
    return t;
}

/* Append a primitive op of spec over ins, its result out; out (IR_NONE once the lift failed). */
static ir_tid push(struct models_lift *l, struct ir_spec spec, const ir_tid *ins, int32_t nins, ir_tid out)
{
    if (l->failed)
        return IR_NONE;
    for (int32_t i = 0; i < nins; i++)
        if (ins[i] == IR_NONE) {
            fail(l, "internal: %s reads no tensor", ir_kind_name(spec.kind));
            return IR_NONE;
        }
    struct ir_op op = ir_op_prim(spec.kind, ins, nins, out);
    op.spec = spec;
    ir_graph_push(l->g, op);
    return out;
}

/* A zeroed spec of kind k. */
static struct ir_spec spec_of(enum ir_kind k)
{
    struct ir_spec s;
    memset(&s, 0, sizeof s);
    s.kind = k;
    return s;
}

/* Rows and cols of tensor t (0 when absent). */
static int64_t rows_of(const struct models_lift *l, ir_tid t) { return t == IR_NONE ? 0 : l->g->tensors[t].rows; }
static int64_t cols_of(const struct models_lift *l, ir_tid t) { return t == IR_NONE ? 0 : l->g->tensors[t].cols; }

/* The rows of x (m × k) times W (k × n) into a new activation `name`. */
static ir_tid matmul(struct models_lift *l, ir_tid x, ir_tid w, const char *name)
{
    int64_t m = rows_of(l, x), k = cols_of(l, x), n = cols_of(l, w);
    ir_tid out = act(l, name, m, n);
    struct ir_spec s = spec_of(IR_KIND_MATMUL);
    s.u.matmul.m = m;
    s.u.matmul.k = k;
    s.u.matmul.n = n;
    ir_tid ins[2] = {x, w};
    return push(l, s, ins, 2, out);
}

/* The bias row beside norm weight w (its name's ".weight" as ".bias"), shared by every op that names it. */
static ir_tid norm_bias(struct models_lift *l, ir_tid w)
{
    if (w == IR_NONE)
        return IR_NONE;
    const char *wn = l->g->tensors[w].name;
    size_t n = strlen(wn), cut = n >= 7 && strcmp(wn + n - 7, ".weight") == 0 ? n - 7 : n;
    char name[IR_MAX_NAME];
    if (snprintf(name, sizeof name, "%.*s.bias", (int)cut, wn) >= (int)sizeof name) {
        fail(l, "tensor name '%.32s.bias' too long", wn);
        return IR_NONE;
    }
    return norm_weight(l, name, cols_of(l, w));
}

/* The family's norm of x in rows of `cols` values, weighted by w as stored (offset 0: a (1+w) checkpoint stores
 * w + 1), shaped like x: an RMS norm, or for a LayerNorm family the mean-centred norm plus its bias row. */
static ir_tid rms_norm(struct models_lift *l, ir_tid x, ir_tid w, int64_t cols, const char *name)
{
    ir_tid out = act(l, name, rows_of(l, x), cols_of(l, x));
    struct ir_spec s = spec_of(IR_KIND_RMS_NORM);
    s.u.rms_norm.rows = cols ? rows_of(l, x) * cols_of(l, x) / cols : 0;
    s.u.rms_norm.cols = cols;
    s.u.rms_norm.eps = l->c->eps;
    s.u.rms_norm.weight = true;
    s.u.rms_norm.offset = 0.0;
    s.u.rms_norm.kind = l->f->layer_norm ? IR_NORM_LAYER : IR_NORM_RMS;
    s.u.rms_norm.bias = l->f->layer_norm;
    ir_tid ins[3] = {x, w, l->f->layer_norm ? norm_bias(l, w) : IR_NONE};
    return push(l, s, ins, l->f->layer_norm ? 3 : 2, out);
}

/* An elementwise op of a and b (same length), shaped like a. */
static ir_tid elementwise(struct models_lift *l, enum ir_ewop op, ir_tid a, ir_tid b, const char *name)
{
    ir_tid out = act(l, name, rows_of(l, a), cols_of(l, a));
    struct ir_spec s = spec_of(IR_KIND_ELEMENTWISE);
    s.u.elementwise.op = op;
    s.u.elementwise.n = rows_of(l, a) * cols_of(l, a);
    ir_tid ins[2] = {a, b};
    return push(l, s, ins, 2, out);
}

/* A one-operand op over every value of x (silu, gelu, scale, softcap: the caller's spec fields), shaped like x. */
static ir_tid pointwise(struct models_lift *l, struct ir_spec s, ir_tid x, const char *name)
{
    ir_tid out = act(l, name, rows_of(l, x), cols_of(l, x));
    ir_tid ins[1] = {x};
    return push(l, s, ins, 1, out);
}

/* Row `index` (1-based literal) of the computed table t. */
static ir_tid row_of(struct models_lift *l, ir_tid t, int64_t index, const char *name)
{
    ir_tid out = act(l, name, 1, cols_of(l, t));
    struct ir_spec s = spec_of(IR_KIND_ROW_GATHER);
    s.u.row_gather.rows = rows_of(l, t);
    s.u.row_gather.cols = cols_of(l, t);
    s.u.row_gather.index.kind = IR_RIDX_LITERAL;
    s.u.row_gather.index.literal = index;
    ir_tid ins[1] = {t};
    return push(l, s, ins, 1, out);
}

/* Write src's rows into table, from row `literal` (1-based) or, when literal is 0, from the row param `at` names. */
static void set_rows(struct models_lift *l, ir_tid table, ir_tid src, int64_t literal, ir_tid at)
{
    struct ir_spec s = spec_of(IR_KIND_SET_ROW);
    s.u.set_row.rows = rows_of(l, table);
    s.u.set_row.cols = cols_of(l, table);
    s.u.set_row.count = rows_of(l, src);
    s.u.set_row.index.kind = literal ? IR_RIDX_LITERAL : IR_RIDX_NAMED;
    s.u.set_row.index.literal = literal;
    ir_tid ins[3] = {table, src, at};
    push(l, s, ins, literal ? 2 : 3, table);
}

/* Half the rotated part of a head: the rotary tables' width. */
static int64_t rotary_half(const struct models_config *c)
{
    return (c->deepseek.rope_dim ? c->deepseek.rope_dim : c->rotary_dim ? c->rotary_dim : c->head_dim) / 2;
}

/* A rope spec of the model's rotary base and scaling and the family's pairing (h, hd, half and rows the caller's). */
static struct ir_spec rope_spec(const struct models_lift *l)
{
    struct ir_spec s = spec_of(IR_KIND_ROPE);
    s.u.rope.pos.kind = IR_RIDX_NAMED;
    s.u.rope.theta = (struct ir_optf){true, l->c->rope_base > 0 ? l->c->rope_base : IR_ROPE_THETA_DEFAULT};
    s.u.rope.adjacent = l->f->adjacent;
    s.u.rope.scaling = l->c->rope_scaling;
    return s;
}

/* The rotation of x's heads (`heads` a row, every row of x) at the named position at. */
static ir_tid rope(struct models_lift *l, ir_tid x, int64_t heads, ir_tid at, const char *name)
{
    int64_t hd = l->c->head_dim;
    ir_tid out = act(l, name, rows_of(l, x), cols_of(l, x));
    struct ir_spec s = rope_spec(l);
    s.u.rope.h = rows_of(l, x) * heads;
    s.u.rope.hd = hd;
    s.u.rope.half = rotary_half(l->c);
    s.u.rope.rows = rows_of(l, x);
    ir_tid ins[4] = {x, l->cos, l->sin, at};
    return push(l, s, ins, 4, out);
}

/* The causal attention of q's rows over a layer's caches at the named position at, with the layer's sinks (one
 * logit a head) unless sinks is IR_NONE. */
static ir_tid attention(struct models_lift *l, int layer, ir_tid q, ir_tid kc, ir_tid vc, ir_tid at, ir_tid sinks,
                        const char *name)
{
    const struct models_config *c = l->c;
    ir_tid out = act(l, name, rows_of(l, q), cols_of(l, q));
    struct ir_spec s = spec_of(IR_KIND_ATTENTION);
    struct ir_attention *a = &s.u.attention;
    a->h = c->heads;
    a->kv = c->kv_heads;
    a->hd = c->head_dim;
    a->vd = c->head_dim;
    a->l = l->ctx;
    a->rows = rows_of(l, q);
    a->pos.kind = IR_RIDX_NAMED;
    a->scale.has = c->query_scale != 0;
    a->scale.v = c->query_scale;
    a->softcap.has = c->attn_softcap != 0;
    a->softcap.v = c->attn_softcap;
    a->window = l->f->window ? l->f->window(c, layer) : 0;
    a->sinks = sinks != IR_NONE;
    ir_tid ins[5] = {q, kc, vc, at, sinks};
    return push(l, s, ins, a->sinks ? 5 : 4, out);
}

/* ── The decoder block ───────────────────────────────────────────────────────────────────────────────────── */

/* One sequence's rotations, cache writes and attention: q, k, v its rows; at its position; sinks the layer's (or
 * IR_NONE); seq its index in a batch (-1 otherwise). The attended rows. */
static ir_tid attend(struct models_lift *l, int layer, ir_tid q, ir_tid k, ir_tid v, ir_tid at, ir_tid sinks,
                     int64_t seq)
{
    const struct models_config *c = l->c;
    if (l->f->head)
        q = l->f->head(l, layer, q, c->heads, "q", seq);
    ir_tid qr = rope(l, q, c->heads, at, blk(l, layer, "q_rope", seq));
    if (l->f->head)
        k = l->f->head(l, layer, k, c->kv_heads, "k", seq);
    ir_tid kr = rope(l, k, c->kv_heads, at, blk(l, layer, "k_rope", seq));
    ir_tid kc = cache(l, blk(l, layer, "k_cache", seq), c->kv_heads * c->head_dim);
    ir_tid vc = cache(l, blk(l, layer, "v_cache", seq), c->kv_heads * c->head_dim);
    set_rows(l, kc, kr, 0, at);
    set_rows(l, vc, v, 0, at);
    return attention(l, layer, qr, kc, vc, at, sinks, blk(l, layer, "attn", seq));
}

/* A batch's attention: each sequence's row of q, k and v through its own caches at its own position, each result set
 * into its row of the layer's attention table (state the step fills and reads). The table. */
static ir_tid attend_batch(struct models_lift *l, int layer, ir_tid q, ir_tid k, ir_tid v, ir_tid sinks)
{
    ir_tid rows = tensor(l, blk(l, layer, "attn_rows", -1), IR_ELEM_F32, l->n, cols_of(l, q), IR_ROLE_STATE);
    for (int64_t b = 0; b < l->n && !l->failed; b++) {
        ir_tid qb = row_of(l, q, b + 1, blk(l, layer, "q", b));
        ir_tid kb = row_of(l, k, b + 1, blk(l, layer, "k", b));
        ir_tid vb = row_of(l, v, b + 1, blk(l, layer, "v", b));
        ir_tid ab = attend(l, layer, qb, kb, vb, l->pos[b], sinks, b);
        set_rows(l, rows, ab, b + 1, IR_NONE);
    }
    return rows;
}

/* p plus the layer's bias row `bname` (n = p's cols), into a new activation `name`. */
static ir_tid bias_row(struct models_lift *l, int layer, ir_tid p, const char *bname, const char *name)
{
    int64_t n = cols_of(l, p);
    ir_tid bias = tensor(l, blk(l, layer, bname, -1), IR_ELEM_F32, 1, n, IR_ROLE_CONSTANT);
    ir_tid out = act(l, blk(l, layer, name, -1), rows_of(l, p), n);
    struct ir_spec s = spec_of(IR_KIND_ELEMENTWISE);
    s.u.elementwise.op = IR_EW_ADD;
    s.u.elementwise.n = rows_of(l, p) * n;
    s.u.elementwise.row = n;
    ir_tid ins[2] = {p, bias};
    return push(l, s, ins, 2, out);
}

/* The product of the normed rows xn by a layer's projection `what` (n wide), plus the layer's bias row when biased. */
static ir_tid project(struct models_lift *l, int layer, ir_tid xn, const char *what, int64_t n, bool biased)
{
    char w[32], b[32];
    snprintf(w, sizeof w, "attn_%s.weight", what);
    snprintf(b, sizeof b, "%s.raw", what);
    ir_tid p = matmul(l, xn, matrix(l, blk(l, layer, w, -1), cols_of(l, xn), n), blk(l, layer, biased ? b : what, -1));
    if (!biased)
        return p;
    snprintf(b, sizeof b, "attn_%s.bias", what);
    return bias_row(l, layer, p, b, what);
}

/* What a family's attention half adds to the common one: bias rows on the q, k and v products, one on the output
 * product, and sinks (a learned logit a head in every softmax's denominator). */
struct attn_form {
    bool qkv_bias, out_bias, sinks;
};

/* The attention half of a layer over the stream x, in the form af: the stream after its residual add. */
static ir_tid attention_half(struct models_lift *l, int layer, ir_tid x, const struct attn_form *af)
{
    const struct models_config *c = l->c;
    int64_t d = c->hidden, hq = c->heads * c->head_dim, hk = c->kv_heads * c->head_dim;
    ir_tid xn = l->f->no_pre_norm ? x
                                  : rms_norm(l, x, norm_weight(l, blk(l, layer, "attn_norm.weight", -1), d), d,
                                             blk(l, layer, "attn_norm", -1));
    ir_tid q = project(l, layer, xn, "q", hq, af->qkv_bias);
    ir_tid k = project(l, layer, xn, "k", hk, af->qkv_bias);
    ir_tid v = project(l, layer, xn, "v", hk, af->qkv_bias);
    ir_tid sinks = af->sinks ? tensor(l, blk(l, layer, "attn_sinks.weight", -1), IR_ELEM_F32, 1, c->heads,
                                      IR_ROLE_CONSTANT)
                             : IR_NONE;
    ir_tid a = l->kind == MODELS_BATCH ? attend_batch(l, layer, q, k, v, sinks)
                                       : attend(l, layer, q, k, v, l->pos[0], sinks, -1);
    ir_tid w = matrix(l, blk(l, layer, "attn_output.weight", -1), hq, d);
    ir_tid o = matmul(l, a, w, blk(l, layer, af->out_bias ? "attn_out.raw" : "attn_out", -1));
    if (af->out_bias)
        o = bias_row(l, layer, o, "attn_output.bias", "attn_out");
    if (l->f->post)
        o = l->f->post(l, layer, o, "post_attention_norm");
    return elementwise(l, IR_EW_ADD, x, o, blk(l, layer, "attn_res", -1));
}

/* The attention half of a layer over the stream x: the stream after its residual add. */
static ir_tid attention_block(struct models_lift *l, int layer, ir_tid x)
{
    static const struct attn_form plain = {false, false, false};
    return attention_half(l, layer, x, &plain);
}

/* The FFN half of a layer over the stream h: the layer's output stream. */
static ir_tid ffn_block(struct models_lift *l, int layer, ir_tid h)
{
    int64_t d = l->c->hidden;
    ir_tid hn = l->f->no_pre_norm ? h
                                  : rms_norm(l, h, norm_weight(l, blk(l, layer, "ffn_norm.weight", -1), d), d,
                                             blk(l, layer, "ffn_norm", -1));
    ir_tid f = l->f->ffn(l, layer, hn);
    if (l->f->post)
        f = l->f->post(l, layer, f, "post_ffw_norm");
    return elementwise(l, IR_EW_ADD, h, f, blk(l, layer, "out", -1));
}

/* The embedding rows of the step's tokens: a named row for decode, the token tensor's rows otherwise. */
static ir_tid embed(struct models_lift *l)
{
    const struct models_config *c = l->c;
    ir_tid table = checkpoint(l, "token_embd.weight", c->vocab, c->hidden, l->fmt, false);
    ir_tid out = act(l, "embd", l->n, c->hidden);
    if (l->kind == MODELS_DECODE) {
        ir_tid tok = tensor(l, "token", IR_ELEM_I32, 1, 1, IR_ROLE_INPUT);
        struct ir_spec s = spec_of(IR_KIND_ROW_GATHER);
        s.u.row_gather.rows = c->vocab;
        s.u.row_gather.cols = c->hidden;
        s.u.row_gather.index.kind = IR_RIDX_NAMED;
        ir_tid ins[2] = {table, tok};
        out = push(l, s, ins, 2, out);
    } else {
        ir_tid toks = tensor(l, "tokens", IR_ELEM_I32, l->n, 1, IR_ROLE_INPUT);
        struct ir_spec s = spec_of(IR_KIND_ROWS_GATHER);
        s.u.rows_gather.rows = c->vocab;
        s.u.rows_gather.cols = c->hidden;
        s.u.rows_gather.count = l->n;
        ir_tid ins[2] = {table, toks};
        out = push(l, s, ins, 2, out);
    }
    return l->f->embed ? l->f->embed(l, out) : out;
}

/* The step's positions: `pos`, or `pos.<b>` for each of a batch's sequences. */
static void positions(struct models_lift *l)
{
    l->npos = l->kind == MODELS_BATCH ? l->n : 1;
    l->pos = calloc((size_t)l->npos, sizeof *l->pos);
    if (!l->pos) {
        fail(l, "out of memory");
        return;
    }
    for (int64_t b = 0; b < l->npos; b++) {
        char name[32];
        if (l->kind == MODELS_BATCH)
            snprintf(name, sizeof name, "pos.%lld", (long long)b);
        else
            snprintf(name, sizeof name, "pos");
        l->pos[b] = tensor(l, name, IR_ELEM_I32, 1, 1, IR_ROLE_PARAM);
    }
}

/* minicpm: the final norm's output divided by head_divisor before the LM head. */
static ir_tid head_input_scaled(struct models_lift *l, ir_tid xn)
{
    struct ir_spec s = spec_of(IR_KIND_SCALE);
    s.u.scale.n = rows_of(l, xn) * cols_of(l, xn);
    s.u.scale.factor = 1.0 / l->c->head_divisor;
    return pointwise(l, s, xn, "output_norm.scaled");
}

/* The head of the step over the last layer's stream x: the final norm (of a chunk's last row), the LM head and the
 * arg-max of the next token. */
static void head(struct models_lift *l, ir_tid x)
{
    const struct models_config *c = l->c;
    if (l->kind == MODELS_PREFILL && !l->every_row_logits)
        x = row_of(l, x, l->n, "out.last");
    ir_tid xn = rms_norm(l, x, norm_weight(l, "output_norm.weight", c->hidden), c->hidden, "output_norm");
    if (c->head_divisor > 0)
        xn = head_input_scaled(l, xn);
    ir_tid w = matrix(l, "output.weight", c->hidden, c->vocab);
    if (c->tied && w != IR_NONE)
        l->g->tensors[w].tied = true; /* its rows are the embedding's */
    ir_tid logits = matmul(l, xn, w, l->f->logits ? "logits.raw" : "logits");
    if (l->f->logits)
        logits = l->f->logits(l, logits);
    ir_tid next = tensor(l, "next", IR_ELEM_I32, rows_of(l, logits), 1, IR_ROLE_ACTIVATION);
    struct ir_spec s = spec_of(IR_KIND_ARGMAX);
    s.u.argmax.rows = rows_of(l, logits);
    s.u.argmax.cols = c->vocab;
    ir_tid ins[1] = {logits};
    next = push(l, s, ins, 1, next);
    if (l->failed)
        return;
    l->g->tensors[logits].observed = true;
    l->g->tensors[next].observed = true;
    l->g->tensors[next].next = true;
}

/* ── Family hooks ────────────────────────────────────────────────────────────────────────────────────────── */

/* gemma2: the embedding scaled by √hidden. */
static ir_tid embed_scaled(struct models_lift *l, ir_tid x)
{
    struct ir_spec s = spec_of(IR_KIND_SCALE);
    s.u.scale.n = rows_of(l, x) * cols_of(l, x);
    s.u.scale.factor = sqrt((double)l->c->hidden);
    return pointwise(l, s, x, "embd.scaled");
}

/* qwen3: each head of q or k normed on its own (rows = heads, cols = head_dim) by the layer's per-head weight. */
static ir_tid head_norm(struct models_lift *l, int layer, ir_tid t, int64_t heads, const char *which, int64_t seq)
{
    (void)heads;
    char w[32], o[32];
    snprintf(w, sizeof w, "attn_%s_norm.weight", which);
    snprintf(o, sizeof o, "%s_norm", which);
    ir_tid wt = norm_weight(l, blk(l, layer, w, -1), l->c->head_dim);
    return rms_norm(l, t, wt, l->c->head_dim, blk(l, layer, o, seq));
}

/* olmo2: q or k normed whole (rows = the step's rows, cols = heads × head_dim) by the layer's weight of that width. */
static ir_tid whole_norm(struct models_lift *l, int layer, ir_tid t, int64_t heads, const char *which, int64_t seq)
{
    char w[32], o[32];
    snprintf(w, sizeof w, "attn_%s_norm.weight", which);
    snprintf(o, sizeof o, "%s_norm", which);
    int64_t width = heads * l->c->head_dim;
    ir_tid wt = norm_weight(l, blk(l, layer, w, -1), width);
    return rms_norm(l, t, wt, width, blk(l, layer, o, seq));
}

/* gemma2, olmo2: a norm of the branch's output before its residual add. */
static ir_tid post_norm(struct models_lift *l, int layer, ir_tid t, const char *tag)
{
    char w[48];
    snprintf(w, sizeof w, "%s.weight", tag);
    ir_tid wt = norm_weight(l, blk(l, layer, w, -1), l->c->hidden);
    return rms_norm(l, t, wt, l->c->hidden, blk(l, layer, tag, -1));
}

/* The gate and up products of a dense FFN over x. */
static void gate_up(struct models_lift *l, int layer, ir_tid x, ir_tid *gate, ir_tid *up)
{
    int64_t d = l->c->hidden, ff = l->c->ffn;
    *gate = matmul(l, x, matrix(l, blk(l, layer, "ffn_gate.weight", -1), d, ff), blk(l, layer, "ffn_gate", -1));
    *up = matmul(l, x, matrix(l, blk(l, layer, "ffn_up.weight", -1), d, ff), blk(l, layer, "ffn_up", -1));
}

/* The down product of a dense FFN's activation a. */
static ir_tid down(struct models_lift *l, int layer, ir_tid a)
{
    int64_t d = l->c->hidden, ff = l->c->ffn;
    return matmul(l, a, matrix(l, blk(l, layer, "ffn_down.weight", -1), ff, d), blk(l, layer, "ffn_down", -1));
}

/* llama, qwen3: swiglu(gate, up) of two products of x, then down. */
static ir_tid ffn_swiglu(struct models_lift *l, int layer, ir_tid x)
{
    ir_tid g, u;
    gate_up(l, layer, x, &g, &u);
    ir_tid a = act(l, blk(l, layer, "ffn_act", -1), rows_of(l, g), cols_of(l, g));
    struct ir_spec s = spec_of(IR_KIND_SWIGLU);
    s.u.swiglu.total = rows_of(l, g) * cols_of(l, g);
    ir_tid ins[2] = {g, u};
    return down(l, layer, push(l, s, ins, 2, a));
}

/* gemma2: gelu(gate) times up, then down. */
static ir_tid ffn_geglu(struct models_lift *l, int layer, ir_tid x)
{
    ir_tid g, u;
    gate_up(l, layer, x, &g, &u);
    struct ir_spec s = spec_of(IR_KIND_GELU);
    s.u.unary.n = rows_of(l, g) * cols_of(l, g);
    ir_tid ga = pointwise(l, s, g, blk(l, layer, "ffn_gelu", -1));
    return down(l, layer, elementwise(l, IR_EW_MUL, ga, u, blk(l, layer, "ffn_act", -1)));
}

/* A mixture's form: its experts' activation (and the clamped SwiGLU's alpha and limit), bias rows on the router and
 * the experts' products, and the top k of the logits before their softmax. */
struct moe_form {
    enum ir_moeact act;
    bool bias, topk_softmax;
    double alpha, limit;
};

/* The mixtures of SwiGLU experts without biases (qwen3-moe, qwen3-next, deepseek). */
static const struct moe_form swiglu_experts = {IR_MOE_SWIGLU, false, false, 0, 0};

/* The routing fields of a mixture's spec from the model's routing (groups only where there are two or more: one
 * group always competes; a scale only where it is not 1). */
static void moe_routing(const struct models_routing *rt, struct ir_moe *m)
{
    m->sigmoid = rt->sigmoid;
    m->no_renorm = rt->no_renorm;
    m->correction = rt->correction;
    m->groups = rt->groups > 1 ? rt->groups : 0;
    m->topk_groups = rt->groups > 1 ? rt->topk_groups : 0;
    m->scale = (struct ir_optf){rt->scale > 0 && rt->scale != 1.0, rt->scale};
}

/* A mixture op of form mf over the row x with the layer's expert weights (and bias rows: w[4..8); the correction
 * row: w[8]), into a new activation `name`. */
static ir_tid moe_op(struct models_lift *l, ir_tid x, const ir_tid w[9], const struct moe_form *mf, const char *name)
{
    const struct models_config *c = l->c;
    ir_tid out = act(l, name, 1, c->hidden);
    struct ir_spec s = spec_of(IR_KIND_MOE);
    s.u.moe.d = c->hidden;
    s.u.moe.k = c->top_k;
    s.u.moe.dff = c->expert_ffn;
    s.u.moe.experts = c->experts;
    s.u.moe.act = mf->act;
    s.u.moe.bias = mf->bias;
    s.u.moe.topk_softmax = mf->topk_softmax;
    s.u.moe.alpha = (struct ir_optf){mf->act == IR_MOE_CLAMPED_SWIGLU, mf->alpha};
    s.u.moe.limit = (struct ir_optf){mf->act == IR_MOE_CLAMPED_SWIGLU, mf->limit};
    moe_routing(&c->routing, &s.u.moe);
    ir_tid ins[10] = {x, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], IR_NONE};
    int n = mf->bias ? 9 : 5;
    if (s.u.moe.correction)
        ins[n++] = w[8];
    return push(l, s, ins, n, out);
}

/* A layer's router and expert weights into w[0..4), with bias their bias rows into w[4..8), with the routing's
 * correction its row (GGUF's exp_probs_b) into w[8]. */
static void expert_weights(struct models_lift *l, int layer, bool bias, ir_tid w[9])
{
    const struct models_config *c = l->c;
    int64_t d = c->hidden, e = c->experts, ff = c->expert_ffn;
    w[0] = checkpoint(l, blk(l, layer, "ffn_gate_inp.weight", -1), d, e, IR_FMT_F32, true);
    w[1] = matrix(l, blk(l, layer, "ffn_gate_exps.weight", -1), d, e * ff);
    w[2] = matrix(l, blk(l, layer, "ffn_up_exps.weight", -1), d, e * ff);
    w[3] = matrix(l, blk(l, layer, "ffn_down_exps.weight", -1), ff, e * d);
    w[4] = w[5] = w[6] = w[7] = w[8] = IR_NONE;
    if (c->routing.correction)
        w[8] = tensor(l, blk(l, layer, "exp_probs_b.bias", -1), IR_ELEM_F32, 1, e, IR_ROLE_CONSTANT);
    if (!bias)
        return;
    static const char *const names[4] = {"ffn_gate_inp.bias", "ffn_gate_exps.bias", "ffn_up_exps.bias",
                                         "ffn_down_exps.bias"};
    const int64_t widths[4] = {e, e * ff, e * ff, e * d};
    for (int i = 0; i < 4; i++)
        w[4 + i] = tensor(l, blk(l, layer, names[i], -1), IR_ELEM_F32, 1, widths[i], IR_ROLE_CONSTANT);
}

/* A mixture of form mf. One row: one op. Several: each row gathered (a literal row of the normed rows), mixed, and
 * set into its row of the layer's mixture table (state the step fills and reads). */
static ir_tid ffn_mixture(struct models_lift *l, int layer, ir_tid x, const struct moe_form *mf)
{
    int64_t d = l->c->hidden;
    ir_tid w[9];
    expert_weights(l, layer, mf->bias, w);
    if (l->kind == MODELS_DECODE)
        return moe_op(l, x, w, mf, blk(l, layer, "ffn_moe", -1));
    ir_tid table = tensor(l, blk(l, layer, "ffn_moe_rows", -1), IR_ELEM_F32, l->n, d, IR_ROLE_STATE);
    for (int64_t r = 0; r < l->n && !l->failed; r++) {
        ir_tid xr = row_of(l, x, r + 1, blk(l, layer, "ffn_in", r));
        ir_tid m = moe_op(l, xr, w, mf, blk(l, layer, "ffn_moe", r));
        set_rows(l, table, m, r + 1, IR_NONE);
    }
    return table;
}

/* qwen3-moe: a mixture of SwiGLU experts. */
static ir_tid ffn_moe(struct models_lift *l, int layer, ir_tid x) { return ffn_mixture(l, layer, x, &swiglu_experts); }

/* gemma2: the logits through the final soft cap. */
static ir_tid logits_capped(struct models_lift *l, ir_tid t)
{
    struct ir_spec s = spec_of(IR_KIND_SOFTCAP);
    s.u.softcap.n = rows_of(l, t) * cols_of(l, t);
    s.u.softcap.cap = l->c->final_softcap;
    return pointwise(l, s, t, "logits");
}

/* gemma2: the sliding window on every other layer, from the first. */
static int64_t window_alternate(const struct models_config *c, int layer) { return layer % 2 == 0 ? c->window : 0; }

/* Parameters of a dense SwiGLU or GeLU FFN. */
static int64_t params_dense(const struct models_config *c, int layer)
{
    (void)layer;
    return size_mul(3, size_mul(c->hidden, c->ffn));
}

/* Parameters of a qwen3 layer beyond the common block: the per-head norms and the dense FFN. */
static int64_t params_qwen3(const struct models_config *c, int layer)
{
    return size_add(size_mul(2, c->head_dim), params_dense(c, layer));
}

/* Parameters of a qwen3-moe layer beyond the common block: the per-head norms, the router and the experts. */
static int64_t params_qwen3_moe(const struct models_config *c, int layer)
{
    (void)layer;
    int64_t router = size_mul(c->hidden, c->experts);
    int64_t experts = size_mul(size_mul(3, c->experts), size_mul(c->hidden, c->expert_ffn));
    return size_add(size_add(size_mul(2, c->head_dim), router), experts);
}

/* Parameters of a gemma2 layer beyond the common block: the two post-norms and the dense FFN. */
static int64_t params_gemma2(const struct models_config *c, int layer)
{
    return size_add(size_mul(2, c->hidden), params_dense(c, layer));
}

/* Parameters of an olmo2 layer beyond its two (post-)norms and the common block's projections: the q and k norms
 * (each as wide as its product) and the dense FFN. */
static int64_t params_olmo2(const struct models_config *c, int layer)
{
    int64_t qk = size_mul(size_add(c->heads, c->kv_heads), c->head_dim);
    return size_add(qk, params_dense(c, layer));
}

/* ── qwen3-next: Gated DeltaNet layers, gated attention layers, a mixture with a gated shared expert ──────── */

/* A one-operand op of kind k (silu, sigmoid, relu) over every value of x. */
static ir_tid unary(struct models_lift *l, enum ir_kind k, ir_tid x, const char *name)
{
    struct ir_spec s = spec_of(k);
    s.u.unary.n = rows_of(l, x) * cols_of(l, x);
    return pointwise(l, s, x, name);
}

/* a ⊙ b with b one row of `row` values broadcast over every row of a. */
static ir_tid elementwise_row(struct models_lift *l, enum ir_ewop op, ir_tid a, ir_tid b, int64_t row,
                              const char *name)
{
    ir_tid out = act(l, name, rows_of(l, a), cols_of(l, a));
    struct ir_spec s = spec_of(IR_KIND_ELEMENTWISE);
    s.u.elementwise.op = op;
    s.u.elementwise.n = rows_of(l, a) * cols_of(l, a);
    s.u.elementwise.row = row;
    ir_tid ins[2] = {a, b};
    return push(l, s, ins, 2, out);
}

/* A state tensor of rows × cols the host keeps across steps (a convolution's ring, a recurrent memory). */
static ir_tid carried_state(struct models_lift *l, const char *name, int64_t rows, int64_t cols)
{
    ir_tid t = tensor(l, name, IR_ELEM_F32, rows, cols, IR_ROLE_STATE);
    if (t != IR_NONE)
        l->g->tensors[t].carried = true;
    return t;
}

/* Plain f32 values (rows × cols), a constant shared by every op that names it. */
static ir_tid values(struct models_lift *l, const char *name, int64_t rows, int64_t cols)
{
    ir_tid t = ir_tensor_find(l->g, name, strlen(name));
    return t != IR_NONE ? t : tensor(l, name, IR_ELEM_F32, rows, cols, IR_ROLE_CONSTANT);
}

/* Whether a layer of a qwen3-next model is a gated attention layer (else a Gated DeltaNet one). */
static bool full_attention_layer(const struct models_config *c, int layer)
{
    return c->full_every > 0 && (layer + 1) % c->full_every == 0;
}

/* The short causal convolution of x's rows (one channel a column) over its ring, then its SiLU; `which` names the
 * branch (q, k or v), seq the batch's sequence (-1 otherwise: one ring the step's rows run through in order). */
static ir_tid conv_silu_branch(struct models_lift *l, int layer, ir_tid x, const char *which, int64_t seq)
{
    int64_t chan = cols_of(l, x), taps = l->c->conv_taps;
    char w[48], r[48], y[48], a[48];
    snprintf(w, sizeof w, "ssm_conv1d_%s.weight", which);
    snprintf(r, sizeof r, "ssm_conv_%s.ring", which);
    snprintf(y, sizeof y, "ssm_conv_%s", which);
    snprintf(a, sizeof a, "ssm_conv_%s_silu", which);
    ir_tid wt = values(l, blk(l, layer, w, -1), chan, taps);
    ir_tid ring = carried_state(l, blk(l, layer, r, seq), taps - 1, chan);
    ir_tid out = act(l, blk(l, layer, y, seq), rows_of(l, x), chan);
    struct ir_spec s = spec_of(IR_KIND_CAUSAL_CONV);
    s.u.causal_conv.chan = chan;
    s.u.causal_conv.taps = taps;
    s.u.causal_conv.rows = rows_of(l, x);
    ir_tid ins[3] = {x, wt, ring};
    return unary(l, IR_KIND_SILU, push(l, s, ins, 3, out), blk(l, layer, a, seq));
}

/* The L2 norm of each head (`width` values) of x. */
static ir_tid l2_heads(struct models_lift *l, ir_tid x, int64_t width, const char *name)
{
    ir_tid out = act(l, name, rows_of(l, x), cols_of(l, x));
    struct ir_spec s = spec_of(IR_KIND_L2_NORM);
    s.u.l2_norm.rows = rows_of(l, x) * cols_of(l, x) / width;
    s.u.l2_norm.cols = width;
    s.u.l2_norm.eps = l->c->eps;
    ir_tid ins[1] = {x};
    return push(l, s, ins, 1, out);
}

/* One sequence's Gated DeltaNet over its rows of the six projections p (q, k, v, z, b, a): the convolutions with
 * their SiLU (and the L2 norms of q and k), the write strength σ(b), the log-decay of a, the delta rule over the
 * sequence's memory, its output normed and gated by silu(z). seq: the batch's sequence, or -1. */
static ir_tid delta_rule(struct models_lift *l, int layer, const ir_tid p[6], int64_t seq)
{
    const struct models_config *c = l->c;
    int64_t vh = c->lin_v_heads, dk = c->lin_dk, dv = c->lin_dv, rows = rows_of(l, p[0]);
    ir_tid q = l2_heads(l, conv_silu_branch(l, layer, p[0], "q", seq), dk, blk(l, layer, "ssm_q_l2", seq));
    ir_tid k = l2_heads(l, conv_silu_branch(l, layer, p[1], "k", seq), dk, blk(l, layer, "ssm_k_l2", seq));
    ir_tid v = conv_silu_branch(l, layer, p[2], "v", seq);
    ir_tid beta = unary(l, IR_KIND_SIGMOID, p[4], blk(l, layer, "ssm_beta", seq));
    ir_tid g = act(l, blk(l, layer, "ssm_decay", seq), rows, vh);
    struct ir_spec ds = spec_of(IR_KIND_DECAY);
    ds.u.decay.n = rows * vh;
    ds.u.decay.rows = rows;
    ir_tid alog = values(l, blk(l, layer, "ssm_a", -1), 1, vh);
    ir_tid dins[3] = {p[5], alog, values(l, blk(l, layer, "ssm_dt.bias", -1), 1, vh)};
    g = push(l, ds, dins, 3, g);
    ir_tid state = carried_state(l, blk(l, layer, "ssm_state", seq), vh * dk, dv);
    ir_tid y = act(l, blk(l, layer, "ssm_y", seq), rows, vh * dv);
    struct ir_spec s = spec_of(IR_KIND_GATED_DELTA);
    s.u.gated_delta.h = vh;
    s.u.gated_delta.kh = c->lin_k_heads == vh ? 0 : c->lin_k_heads;
    s.u.gated_delta.dk = dk;
    s.u.gated_delta.dv = dv;
    s.u.gated_delta.rows = rows;
    s.u.gated_delta.gate = IR_GATE_SILU;
    s.u.gated_delta.eps = c->eps;
    ir_tid ins[8] = {q, k, v, p[3], beta, g, state, norm_weight(l, blk(l, layer, "ssm_norm.weight", -1), dv)};
    return push(l, s, ins, 8, y);
}

/* qwen3-next: a Gated DeltaNet layer's half over the stream x: the six products of the normed rows, the delta rule
 * (a batch: each sequence through its own rings and memory, its result set into its row of the layer's table), the
 * output product and the residual add. */
static ir_tid gdn_block(struct models_lift *l, int layer, ir_tid x)
{
    const struct models_config *c = l->c;
    int64_t d = c->hidden, qk = c->lin_k_heads * c->lin_dk, vw = c->lin_v_heads * c->lin_dv, vh = c->lin_v_heads;
    static const char *const names[6] = {"ssm_q", "ssm_k", "ssm_v", "ssm_z", "ssm_b", "ssm_a_in"};
    const int64_t widths[6] = {qk, qk, vw, vw, vh, vh};
    ir_tid xn = rms_norm(l, x, norm_weight(l, blk(l, layer, "attn_norm.weight", -1), d), d,
                         blk(l, layer, "attn_norm", -1));
    ir_tid p[6];
    for (int i = 0; i < 6; i++) {
        char w[32];
        snprintf(w, sizeof w, "%s.weight", names[i]);
        p[i] = matmul(l, xn, matrix(l, blk(l, layer, w, -1), d, widths[i]), blk(l, layer, names[i], -1));
    }
    ir_tid y;
    if (l->kind != MODELS_BATCH) {
        y = delta_rule(l, layer, p, -1);
    } else {
        y = tensor(l, blk(l, layer, "ssm_rows", -1), IR_ELEM_F32, l->n, vw, IR_ROLE_STATE);
        for (int64_t b = 0; b < l->n && !l->failed; b++) {
            ir_tid pb[6];
            for (int i = 0; i < 6; i++)
                pb[i] = row_of(l, p[i], b + 1, blk(l, layer, names[i], b));
            set_rows(l, y, delta_rule(l, layer, pb, b), b + 1, IR_NONE);
        }
    }
    ir_tid o = matmul(l, y, matrix(l, blk(l, layer, "ssm_out.weight", -1), vw, d), blk(l, layer, "ssm_out", -1));
    return elementwise(l, IR_EW_ADD, x, o, blk(l, layer, "attn_res", -1));
}

/* qwen3-next: a gated attention layer's half over the stream x: the common attention (its q/k norms through the
 * head hook), its result times sigmoid(x·W_gate) before the output product, and the residual add. */
static ir_tid gated_attention_block(struct models_lift *l, int layer, ir_tid x)
{
    const struct models_config *c = l->c;
    int64_t d = c->hidden, hq = c->heads * c->head_dim, hk = c->kv_heads * c->head_dim;
    ir_tid xn = rms_norm(l, x, norm_weight(l, blk(l, layer, "attn_norm.weight", -1), d), d,
                         blk(l, layer, "attn_norm", -1));
    ir_tid q = matmul(l, xn, matrix(l, blk(l, layer, "attn_q.weight", -1), d, hq), blk(l, layer, "q", -1));
    ir_tid gate =
        matmul(l, xn, matrix(l, blk(l, layer, "attn_gate.weight", -1), d, hq), blk(l, layer, "attn_gate", -1));
    ir_tid k = matmul(l, xn, matrix(l, blk(l, layer, "attn_k.weight", -1), d, hk), blk(l, layer, "k", -1));
    ir_tid v = matmul(l, xn, matrix(l, blk(l, layer, "attn_v.weight", -1), d, hk), blk(l, layer, "v", -1));
    ir_tid a = l->kind == MODELS_BATCH ? attend_batch(l, layer, q, k, v, IR_NONE)
                                       : attend(l, layer, q, k, v, l->pos[0], IR_NONE, -1);
    ir_tid sg = unary(l, IR_KIND_SIGMOID, gate, blk(l, layer, "attn_gate_sigmoid", -1));
    ir_tid ag = elementwise(l, IR_EW_MUL, a, sg, blk(l, layer, "attn_gated", -1));
    ir_tid o = matmul(l, ag, matrix(l, blk(l, layer, "attn_output.weight", -1), hq, d), blk(l, layer, "attn_out", -1));
    return elementwise(l, IR_EW_ADD, x, o, blk(l, layer, "attn_res", -1));
}

/* qwen3-next: the attention half of a layer, by the layer's kind. */
static ir_tid attention_qwen3_next(struct models_lift *l, int layer, ir_tid x)
{
    return full_attention_layer(l->c, layer) ? gated_attention_block(l, layer, x) : gdn_block(l, layer, x);
}

/* qwen3-next: the shared SwiGLU expert of the normed rows x, each row's result times its own sigmoid gate
 * σ(x·W_shexp_gate): one row gated by a one-value row broadcast; several each gated on their own and set into their
 * row of the layer's shared-expert table (state the step fills and reads). */
static ir_tid shared_expert_gated(struct models_lift *l, int layer, ir_tid x)
{
    int64_t d = l->c->hidden, sf = l->c->shared_ffn;
    ir_tid g =
        matmul(l, x, matrix(l, blk(l, layer, "ffn_gate_shexp.weight", -1), d, sf), blk(l, layer, "ffn_gate_shexp", -1));
    ir_tid u =
        matmul(l, x, matrix(l, blk(l, layer, "ffn_up_shexp.weight", -1), d, sf), blk(l, layer, "ffn_up_shexp", -1));
    ir_tid h = act(l, blk(l, layer, "ffn_act_shexp", -1), rows_of(l, g), sf);
    struct ir_spec s = spec_of(IR_KIND_SWIGLU);
    s.u.swiglu.total = rows_of(l, g) * sf;
    ir_tid ins[2] = {g, u};
    h = push(l, s, ins, 2, h);
    ir_tid y =
        matmul(l, h, matrix(l, blk(l, layer, "ffn_down_shexp.weight", -1), sf, d), blk(l, layer, "ffn_down_shexp", -1));
    ir_tid logit = matmul(l, x, matrix(l, blk(l, layer, "ffn_gate_inp_shexp.weight", -1), d, 1),
                          blk(l, layer, "ffn_gate_inp_shexp", -1));
    ir_tid sg = unary(l, IR_KIND_SIGMOID, logit, blk(l, layer, "ffn_shexp_gate", -1));
    if (l->n == 1)
        return elementwise_row(l, IR_EW_MUL, y, sg, 1, blk(l, layer, "ffn_shexp", -1));
    ir_tid table = tensor(l, blk(l, layer, "ffn_shexp_rows", -1), IR_ELEM_F32, l->n, d, IR_ROLE_STATE);
    for (int64_t r = 0; r < l->n && !l->failed; r++) {
        ir_tid yr = row_of(l, y, r + 1, blk(l, layer, "ffn_down_shexp", r));
        ir_tid sr = row_of(l, sg, r + 1, blk(l, layer, "ffn_shexp_gate", r));
        set_rows(l, table, elementwise_row(l, IR_EW_MUL, yr, sr, 1, blk(l, layer, "ffn_shexp", r)), r + 1, IR_NONE);
    }
    return table;
}

/* qwen3-next: the mixture of the normed rows x plus its gated shared expert. */
static ir_tid ffn_moe_shared(struct models_lift *l, int layer, ir_tid x)
{
    ir_tid m = ffn_moe(l, layer, x);
    ir_tid sh = shared_expert_gated(l, layer, x);
    return elementwise(l, IR_EW_ADD, m, sh, blk(l, layer, "ffn_moe_sum", -1));
}

/* Parameters of a qwen3-next gated attention layer: q, gate, k, v and output products, the q/k norms, two norms. */
static int64_t params_gated_attention(const struct models_config *c)
{
    int64_t d = c->hidden, hq = size_mul(c->heads, c->head_dim), hk = size_mul(c->kv_heads, c->head_dim);
    int64_t proj = size_add(size_mul(3, size_mul(d, hq)), size_mul(2, size_mul(d, hk)));
    return size_add(proj, size_mul(2, c->head_dim));
}

/* Parameters of a Gated DeltaNet layer's half: the six products, the convolutions, A_log and dt_bias, the gated norm
 * and the output product. */
static int64_t params_gdn(const struct models_config *c)
{
    int64_t d = c->hidden, qk = size_mul(c->lin_k_heads, c->lin_dk), vw = size_mul(c->lin_v_heads, c->lin_dv);
    int64_t in = size_mul(d, size_add(size_add(size_mul(2, qk), size_mul(2, vw)), size_mul(2, c->lin_v_heads)));
    int64_t conv = size_mul(c->conv_taps, size_add(size_mul(2, qk), vw));
    int64_t small = size_add(size_mul(2, c->lin_v_heads), c->lin_dv);
    return size_add(size_add(in, conv), size_add(small, size_mul(vw, d)));
}

/* Parameters of a qwen3-next mixture: the router, the experts, the shared expert and its gate. */
static int64_t params_moe_shared(const struct models_config *c)
{
    int64_t router = size_mul(c->hidden, c->experts);
    int64_t experts = size_mul(size_mul(3, c->experts), size_mul(c->hidden, c->expert_ffn));
    int64_t shared = size_add(size_mul(3, size_mul(c->hidden, c->shared_ffn)), c->hidden);
    return size_add(size_add(router, experts), shared);
}

/* Parameters of a qwen3-next layer beyond its two norms: its mixture, and its gated attention or DeltaNet half. */
static int64_t params_qwen3_next(const struct models_config *c, int layer)
{
    bool full = c->full_every > 0 && (layer + 1) % c->full_every == 0;
    return size_add(params_moe_shared(c), full ? params_gated_attention(c) : params_gdn(c));
}

/* ── nemotron: a squared-ReLU FFN ────────────────────────────────────────────────────────────────────────── */

/* nemotron: down(relu(x·W_up)²), the square the ReLU's product with itself. */
static ir_tid ffn_relu2(struct models_lift *l, int layer, ir_tid x)
{
    int64_t d = l->c->hidden, ff = l->c->ffn;
    ir_tid u = matmul(l, x, matrix(l, blk(l, layer, "ffn_up.weight", -1), d, ff), blk(l, layer, "ffn_up", -1));
    ir_tid r = unary(l, IR_KIND_RELU, u, blk(l, layer, "ffn_relu", -1));
    return down(l, layer, elementwise(l, IR_EW_MUL, r, r, blk(l, layer, "ffn_act", -1)));
}

/* Parameters of a nemotron layer beyond the common block: the up and down products. */
static int64_t params_relu2(const struct models_config *c, int layer)
{
    (void)layer;
    return size_mul(2, size_mul(c->hidden, c->ffn));
}

/* ── qwen2.5: biases on the q, k and v products ──────────────────────────────────────────────────────────── */

/* qwen2.5: the common attention half, each of q, k and v its product plus a bias row. */
static ir_tid attention_qkv_bias(struct models_lift *l, int layer, ir_tid x)
{
    static const struct attn_form qkv_biased = {true, false, false};
    return attention_half(l, layer, x, &qkv_biased);
}

/* Parameters of a qwen2.5 layer beyond its two norms (its attention half is its own): the q, k, v and output
 * products, the q, k and v biases and the dense FFN. */
static int64_t params_qwen2(const struct models_config *c, int layer)
{
    int64_t d = c->hidden, hq = size_mul(c->heads, c->head_dim), hk = size_mul(c->kv_heads, c->head_dim);
    int64_t proj = size_add(size_mul(2, size_mul(d, hq)), size_mul(2, size_mul(d, hk)));
    return size_add(size_add(proj, size_add(hq, size_mul(2, hk))), params_dense(c, layer));
}

/* ── granite: embedding, residual and logit multipliers ──────────────────────────────────────────────────── */

/* A scale of every value of x by factor. */
static ir_tid scaled(struct models_lift *l, ir_tid x, double factor, const char *name)
{
    struct ir_spec s = spec_of(IR_KIND_SCALE);
    s.u.scale.n = rows_of(l, x) * cols_of(l, x);
    s.u.scale.factor = factor;
    return pointwise(l, s, x, name);
}

/* granite, minicpm: the embedding times its multiplier. */
static ir_tid embed_mult(struct models_lift *l, ir_tid x) { return scaled(l, x, l->c->embed_mult, "embd.scaled"); }

/* granite, minicpm: a branch's output times the residual multiplier before its residual add. */
static ir_tid residual_scaled(struct models_lift *l, int layer, ir_tid t, const char *tag)
{
    bool attn = strcmp(tag, "post_attention_norm") == 0;
    return scaled(l, t, l->c->residual_mult, blk(l, layer, attn ? "attn_out.scaled" : "ffn_down.scaled", -1));
}

/* granite: the logits divided by the logit scale (0: by 1). */
static ir_tid logits_scaled(struct models_lift *l, ir_tid t)
{
    return scaled(l, t, l->c->logit_scale > 0 ? 1.0 / l->c->logit_scale : 1.0, "logits");
}

/* ── deepseek: multi-head latent attention and DeepSeekMoE ───────────────────────────────────────────────────
 *
 * A layer's attention half in the absorbed form, over the normed rows xn (n rows; H heads):
 *
 *   q         = xn · W_q, or rms_norm(xn · W_q_a) · W_q_b with a query low rank     rows × H·(nope + rope)
 *   kv_a      = xn · W_kv_a                                                       rows × (kv_lora + rope)
 *   per sequence (the whole chunk, or a batch's row):
 *   q_nope    = head_slice(q: every nope+rope, from 0, width nope)
 *   q_pe      = head_slice(q: every nope+rope, from nope, width rope)
 *   q_absorbed= head_matmul(q_nope, W_k_b)      each head's key half of the latent's expansion, into the latent
 *   q_mla     = join(q_absorbed, rope(q_pe))    a head: its kv_lora absorbed values, then its rope rotated ones
 *   kv_row    = join(rms_norm(head_slice(kv_a: latent)), rope(head_slice(kv_a: key part)))   one head
 *   set_row(kv_cache, kv_row) at pos
 *   attn_latent = attention(q_mla, kv_cache, head_slice(kv_cache: the latents)): kv 1, head width kv_lora + rope,
 *                 values kv_lora wide
 *   attn      = head_matmul(attn_latent, W_v_b)  each head's value half expands its attended latent
 *   attn_out  = attn · W_o;   attn_res = x + attn_out
 *
 * The weights follow llama.cpp's deepseek2 names (the key and value halves of kv_b as attn_k_b, attn_v_b). */

/* deepseek: a cache row's width, the latent then the shared rotary key. */
static int64_t mla_row(const struct models_config *c) { return c->deepseek.kv_lora + c->deepseek.rope_dim; }

/* deepseek: a query head's width, its unrotated part then its rotary part. */
static int64_t mla_qk(const struct models_config *c) { return c->head_dim + c->deepseek.rope_dim; }

/* A matrix W[k×n] in the lift's format, made on its first use and shared by every later one (a batch's sequences). */
static ir_tid shared_matrix(struct models_lift *l, const char *name, int64_t k, int64_t n)
{
    ir_tid t = ir_tensor_find(l->g, name, strlen(name));
    return t != IR_NONE ? t : matrix(l, name, k, n);
}

/* The values [from, from + width) of every `every`-wide unit of t, into a new activation of t's rows. */
static ir_tid slice_units(struct models_lift *l, ir_tid t, int64_t every, int64_t from, int64_t width,
                          const char *name)
{
    ir_tid out = act(l, name, rows_of(l, t), cols_of(l, t) / every * width);
    struct ir_spec s = spec_of(IR_KIND_HEAD_SLICE);
    s.u.head_slice.n = rows_of(l, t) * cols_of(l, t);
    s.u.head_slice.every = every;
    s.u.head_slice.from = from;
    s.u.head_slice.width = width;
    ir_tid ins[1] = {t};
    return push(l, s, ins, 1, out);
}

/* Each of x's heads (`heads` a row, a units wide) by its own rows of W (heads·a × b): rows × heads·b. */
static ir_tid per_head(struct models_lift *l, ir_tid x, ir_tid w, int64_t heads, int64_t a, int64_t b,
                       const char *name)
{
    ir_tid out = act(l, name, rows_of(l, x), heads * b);
    struct ir_spec s = spec_of(IR_KIND_HEAD_MATMUL);
    s.u.head_matmul.m = rows_of(l, x);
    s.u.head_matmul.heads = heads;
    s.u.head_matmul.a = a;
    s.u.head_matmul.b = b;
    ir_tid ins[2] = {x, w};
    return push(l, s, ins, 2, out);
}

/* Each of the rows·heads units: its part of a, then its part of b. */
static ir_tid join_heads(struct models_lift *l, ir_tid a, ir_tid b, int64_t heads, const char *name)
{
    ir_tid out = act(l, name, rows_of(l, a), cols_of(l, a) + cols_of(l, b));
    struct ir_spec s = spec_of(IR_KIND_JOIN);
    s.u.join.rows = rows_of(l, a);
    s.u.join.heads = heads;
    s.u.join.wa = cols_of(l, a);
    s.u.join.wb = cols_of(l, b);
    ir_tid ins[2] = {a, b};
    return push(l, s, ins, 2, out);
}

/* The rotation of x's heads (`heads` a row, each rope_dim wide, all rotated) at the named position at. */
static ir_tid rope_part(struct models_lift *l, ir_tid x, int64_t heads, ir_tid at, const char *name)
{
    int64_t hd = l->c->deepseek.rope_dim;
    ir_tid out = act(l, name, rows_of(l, x), cols_of(l, x));
    struct ir_spec s = rope_spec(l);
    s.u.rope.h = rows_of(l, x) * heads;
    s.u.rope.hd = hd;
    s.u.rope.half = hd / 2;
    s.u.rope.rows = rows_of(l, x);
    s.u.rope.pos.kind = IR_RIDX_NAMED;
    ir_tid ins[4] = {x, l->cos, l->sin, at};
    return push(l, s, ins, 4, out);
}

/* deepseek: the query rows of the normed rows xn, through the low rank and its norm where the model has one. */
static ir_tid mla_query(struct models_lift *l, int layer, ir_tid xn)
{
    const struct models_config *c = l->c;
    int64_t d = c->hidden, hq = c->heads * mla_qk(c), r = c->deepseek.q_lora;
    if (!r)
        return matmul(l, xn, matrix(l, blk(l, layer, "attn_q.weight", -1), d, hq), blk(l, layer, "q", -1));
    ir_tid qa = matmul(l, xn, matrix(l, blk(l, layer, "attn_q_a.weight", -1), d, r), blk(l, layer, "q_a", -1));
    ir_tid qn = rms_norm(l, qa, norm_weight(l, blk(l, layer, "attn_q_a_norm.weight", -1), r), r,
                         blk(l, layer, "q_a_norm", -1));
    return matmul(l, qn, matrix(l, blk(l, layer, "attn_q_b.weight", -1), r, hq), blk(l, layer, "q", -1));
}

/* deepseek: the absorbed query of q's rows: each head's unrotated part into the latent, joined with its rotated
 * part. */
static ir_tid mla_absorbed_query(struct models_lift *l, int layer, ir_tid q, ir_tid at, int64_t seq)
{
    const struct models_config *c = l->c;
    int64_t h = c->heads, qk = mla_qk(c);
    ir_tid wkb = shared_matrix(l, blk(l, layer, "attn_k_b.weight", -1), h * c->head_dim, c->deepseek.kv_lora);
    ir_tid qn = slice_units(l, q, qk, 0, c->head_dim, blk(l, layer, "q_nope", seq));
    ir_tid qp = slice_units(l, q, qk, c->head_dim, c->deepseek.rope_dim, blk(l, layer, "q_pe", seq));
    ir_tid ql = per_head(l, qn, wkb, h, c->head_dim, c->deepseek.kv_lora, blk(l, layer, "q_absorbed", seq));
    ir_tid qr = rope_part(l, qp, h, at, blk(l, layer, "q_rope", seq));
    return join_heads(l, ql, qr, h, blk(l, layer, "q_mla", seq));
}

/* deepseek: the cache rows of kv_a's rows, appended at the named position at: the normed latent, then the rotated
 * key part. The layer's (the sequence's) cache. */
static ir_tid mla_cache_rows(struct models_lift *l, int layer, ir_tid kva, ir_tid at, int64_t seq)
{
    const struct models_config *c = l->c;
    int64_t row = mla_row(c), lora = c->deepseek.kv_lora;
    ir_tid lat = slice_units(l, kva, row, 0, lora, blk(l, layer, "kv_latent", seq));
    ir_tid kp = slice_units(l, kva, row, lora, c->deepseek.rope_dim, blk(l, layer, "k_pe", seq));
    ir_tid ln = rms_norm(l, lat, norm_weight(l, blk(l, layer, "attn_kv_a_norm.weight", -1), lora), lora,
                         blk(l, layer, "kv_norm", seq));
    ir_tid kr = rope_part(l, kp, 1, at, blk(l, layer, "k_rope", seq));
    ir_tid kv = join_heads(l, ln, kr, 1, blk(l, layer, "kv_row", seq));
    ir_tid kc = cache(l, blk(l, layer, "kv_cache", seq), row);
    set_rows(l, kc, kv, 0, at);
    return kc;
}

/* deepseek: one sequence's latent attention (q, kv_a its rows, at its position, seq its index in a batch or -1):
 * each head's values, rows × heads·v_head_dim. */
static ir_tid mla_attend(struct models_lift *l, int layer, ir_tid q, ir_tid kva, ir_tid at, int64_t seq)
{
    const struct models_config *c = l->c;
    int64_t h = c->heads, row = mla_row(c);
    ir_tid qj = mla_absorbed_query(l, layer, q, at, seq);
    ir_tid kc = mla_cache_rows(l, layer, kva, at, seq);
    ir_tid vc = slice_units(l, kc, row, 0, c->deepseek.kv_lora, blk(l, layer, "kv_values", seq));
    ir_tid lat = act(l, blk(l, layer, "attn_latent", seq), rows_of(l, qj), h * c->deepseek.kv_lora);
    struct ir_spec s = spec_of(IR_KIND_ATTENTION);
    struct ir_attention *a = &s.u.attention;
    a->h = h;
    a->kv = 1;
    a->hd = row;
    a->vd = c->deepseek.kv_lora;
    a->l = l->ctx;
    a->rows = rows_of(l, qj);
    a->pos.kind = IR_RIDX_NAMED;
    a->scale.has = true;
    a->scale.v = c->query_scale != 0 ? c->query_scale : 1 / sqrt((double)mla_qk(c));
    ir_tid ins[4] = {qj, kc, vc, at};
    lat = push(l, s, ins, 4, lat);
    int64_t lora = c->deepseek.kv_lora, vd = c->deepseek.v_head_dim;
    ir_tid wvb = shared_matrix(l, blk(l, layer, "attn_v_b.weight", -1), h * lora, vd);
    return per_head(l, lat, wvb, h, lora, vd, blk(l, layer, "attn", seq));
}

/* deepseek: the attention half of a layer over the stream x (the stream after its residual add). A batch splits it
 * per sequence after the projections, each result set into its row of the layer's attention table. */
static ir_tid attention_mla(struct models_lift *l, int layer, ir_tid x)
{
    const struct models_config *c = l->c;
    const struct models_deepseek *k = &c->deepseek;
    if (k->kv_lora < 1 || k->rope_dim < 2 || k->v_head_dim < 1 || k->q_lora < 0) {
        fail(l, "model '%s': latent attention needs kv_lora, rope_dim and v_head_dim positive and q_lora not "
             "negative", c->name);
        return IR_NONE;
    }
    int64_t d = c->hidden, hv = c->heads * c->deepseek.v_head_dim;
    ir_tid xn = rms_norm(l, x, norm_weight(l, blk(l, layer, "attn_norm.weight", -1), d), d,
                         blk(l, layer, "attn_norm", -1));
    ir_tid q = mla_query(l, layer, xn);
    ir_tid kva = matmul(l, xn, matrix(l, blk(l, layer, "attn_kv_a_mqa.weight", -1), d, mla_row(c)),
                        blk(l, layer, "kv_a", -1));
    ir_tid a;
    if (l->kind != MODELS_BATCH) {
        a = mla_attend(l, layer, q, kva, l->pos[0], -1);
    } else {
        a = tensor(l, blk(l, layer, "attn_rows", -1), IR_ELEM_F32, l->n, hv, IR_ROLE_STATE);
        for (int64_t b = 0; b < l->n && !l->failed; b++) {
            ir_tid qb = row_of(l, q, b + 1, blk(l, layer, "q", b));
            ir_tid kb = row_of(l, kva, b + 1, blk(l, layer, "kv_a", b));
            set_rows(l, a, mla_attend(l, layer, qb, kb, l->pos[b], b), b + 1, IR_NONE);
        }
    }
    ir_tid o = matmul(l, a, matrix(l, blk(l, layer, "attn_output.weight", -1), hv, d), blk(l, layer, "attn_out", -1));
    return elementwise(l, IR_EW_ADD, x, o, blk(l, layer, "attn_res", -1));
}

/* deepseek: the shared experts of the normed rows x, one SwiGLU of width shared_ffn. */
static ir_tid shared_experts(struct models_lift *l, int layer, ir_tid x)
{
    int64_t d = l->c->hidden, ff = l->c->deepseek.shared_ffn;
    ir_tid g = matmul(l, x, matrix(l, blk(l, layer, "ffn_gate_shexp.weight", -1), d, ff),
                      blk(l, layer, "ffn_gate_shexp", -1));
    ir_tid u = matmul(l, x, matrix(l, blk(l, layer, "ffn_up_shexp.weight", -1), d, ff),
                      blk(l, layer, "ffn_up_shexp", -1));
    ir_tid a = act(l, blk(l, layer, "ffn_act_shexp", -1), rows_of(l, g), cols_of(l, g));
    struct ir_spec s = spec_of(IR_KIND_SWIGLU);
    s.u.swiglu.total = rows_of(l, g) * cols_of(l, g);
    ir_tid ins[2] = {g, u};
    a = push(l, s, ins, 2, a);
    return matmul(l, a, matrix(l, blk(l, layer, "ffn_down_shexp.weight", -1), ff, d),
                  blk(l, layer, "ffn_down_shexp", -1));
}

/* deepseek: a dense SwiGLU on the first dense_layers layers; after them the routed experts (qwen3-moe's mixture)
 * plus the shared experts, summed. */
static ir_tid ffn_deepseek(struct models_lift *l, int layer, ir_tid x)
{
    if (layer < l->c->deepseek.dense_layers)
        return ffn_swiglu(l, layer, x);
    ir_tid routed = ffn_moe(l, layer, x);
    ir_tid shared = shared_experts(l, layer, x);
    return elementwise(l, IR_EW_ADD, routed, shared, blk(l, layer, "ffn_experts", -1));
}

/* deepseek: parameters of layer `layer` beyond its two norms: the latent attention's projections and norms, and its
 * dense FFN, or its router, routed experts and shared experts. */
static int64_t params_deepseek(const struct models_config *c, int layer)
{
    int64_t d = c->hidden, h = c->heads, qk = size_add(c->head_dim, c->deepseek.rope_dim);
    int64_t query = c->deepseek.q_lora ? size_add(size_add(size_mul(d, c->deepseek.q_lora), c->deepseek.q_lora),
                                         size_mul(c->deepseek.q_lora, size_mul(h, qk)))
                              : size_mul(d, size_mul(h, qk));
    int64_t kv = size_add(size_mul(d, size_add(c->deepseek.kv_lora, c->deepseek.rope_dim)), c->deepseek.kv_lora);
    int64_t halves = size_mul(size_mul(h, c->deepseek.kv_lora), size_add(c->head_dim, c->deepseek.v_head_dim));
    int64_t out = size_mul(size_mul(h, c->deepseek.v_head_dim), d);
    int64_t attn = size_add(size_add(query, kv), size_add(halves, out));
    if (layer < c->deepseek.dense_layers)
        return size_add(attn, params_dense(c, layer));
    int64_t router = size_add(size_mul(d, c->experts), c->routing.correction ? c->experts : 0); /* and its row */
    int64_t experts = size_mul(size_mul(3, c->experts), size_mul(d, c->expert_ffn));
    int64_t shared = size_mul(3, size_mul(d, c->deepseek.shared_ffn));
    return size_add(attn, size_add(router, size_add(experts, shared)));
}

/* ── gpt-oss: attention sinks, biases, alternating sliding windows, a mixture of clamped SwiGLU experts ───────
 *
 * A layer: the attention half with bias rows on its q, k, v and output products and a learned sink a head (a
 * `sinks` operand of the attention), a sliding window of `window` rows on even layers; the FFN a `moe` of clamped
 * SwiGLU experts (act clamped_swiglu, alpha and limit the config's), bias rows on the router and each expert's gate,
 * up and down products, the top k of the router's logits then a softmax over them (topk_softmax). The model's one
 * interleaved gate_up projection is lifted split by column into its gate and up halves. Its YaRN frequency scaling and
 * attention factor are not lifted: the rotary tables hold the unscaled angles of its theta (rope_spec is where a
 * scaling would be set). */

/* gpt-oss: the attention half, its q, k, v and output products biased, its attention with sinks. */
static ir_tid attention_gpt_oss(struct models_lift *l, int layer, ir_tid x)
{
    static const struct attn_form sinked = {true, true, true};
    return attention_half(l, layer, x, &sinked);
}

/* gpt-oss: a mixture of clamped SwiGLU experts, biased, routed by the top k of the logits then their softmax. */
static ir_tid ffn_gpt_oss(struct models_lift *l, int layer, ir_tid x)
{
    const struct moe_form mf = {IR_MOE_CLAMPED_SWIGLU, true, true, l->c->swiglu_alpha, l->c->swiglu_limit};
    return ffn_mixture(l, layer, x, &mf);
}

/* Parameters of a gpt-oss layer beyond its two norms: the q, k, v and output products and their biases, the sinks,
 * the router and its bias, the experts' products and their biases. */
static int64_t params_gpt_oss(const struct models_config *c, int layer)
{
    (void)layer;
    int64_t d = c->hidden, hq = size_mul(c->heads, c->head_dim), hk = size_mul(c->kv_heads, c->head_dim);
    int64_t e = c->experts, ff = c->expert_ffn;
    int64_t proj = size_add(size_mul(2, size_mul(d, hq)), size_mul(2, size_mul(d, hk)));
    int64_t attn = size_add(proj, size_add(size_add(hq, size_mul(2, hk)), size_add(d, c->heads)));
    int64_t router = size_mul(size_add(d, 1), e);
    int64_t experts = size_mul(size_mul(3, e), size_mul(d, ff));
    int64_t biases = size_mul(e, size_add(size_mul(2, ff), d));
    return size_add(attn, size_add(router, size_add(experts, biases)));
}

/* The families: name, adjacent rope pairs, mixture, embed, head, post, ffn, attention, logits, window, layer params,
 * whether the branches go without a pre-norm, and whether the norms are biased LayerNorms. The pairing is llama.cpp's
 * rope type of the architecture (NORM: adjacent; NEOX: halves). Norm weights are read as stored: a (1+w) family's
 * checkpoint (gemma2, nemotron, qwen3-next but its DeltaNet's gated norm) already holds w + 1. */
static const struct models_family families[] = {
    {"llama", true, false, NULL, NULL, NULL, ffn_swiglu, NULL, NULL, NULL, params_dense, false, false},
    {"qwen3", false, false, NULL, head_norm, NULL, ffn_swiglu, NULL, NULL, NULL, params_qwen3, false, false},
    {"qwen3-moe", false, true, NULL, head_norm, NULL, ffn_moe, NULL, NULL, NULL, params_qwen3_moe, false, false},
    {"gemma2", false, false, embed_scaled, NULL, post_norm, ffn_geglu, NULL, logits_capped, window_alternate,
     params_gemma2, false, false},
    /* qwen3-next, nemotron, qwen2.5, granite, minicpm */
    {"qwen3-next", false, true, NULL, head_norm, NULL, ffn_moe_shared, attention_qwen3_next, NULL, NULL,
     params_qwen3_next, false, false},
    {"nemotron", false, false, NULL, NULL, NULL, ffn_relu2, NULL, NULL, NULL, params_relu2, false, true},
    {"qwen2.5", false, false, NULL, NULL, NULL, ffn_swiglu, attention_qkv_bias, NULL, NULL, params_qwen2, false,
     false},
    {"granite", true, false, embed_mult, NULL, residual_scaled, ffn_swiglu, NULL, logits_scaled, NULL, params_dense,
     false, false},
    {"minicpm", true, false, embed_mult, NULL, residual_scaled, ffn_swiglu, NULL, NULL, NULL, params_dense, false,
     false},
    {"deepseek", true, true, NULL, NULL, NULL, ffn_deepseek, attention_mla, NULL, NULL, params_deepseek, false,
     false},
    {"gpt-oss", false, true, NULL, NULL, NULL, ffn_gpt_oss, attention_gpt_oss, NULL, window_alternate,
     params_gpt_oss, false, false},
    {"olmo2", false, false, NULL, whole_norm, post_norm, ffn_swiglu, NULL, NULL, NULL, params_olmo2, true, false},
};


#define FAMILY_COUNT ((int)(sizeof families / sizeof families[0]))

/* The most ops a lifted step may hold (with MODELS_MAX_LAYERS, a bound on what a lift allocates). */
#define MAX_OPS ((int64_t)1 << 23)

/* The family named `name`, or NULL. */
static const struct models_family *family_find(const char *name)
{
    for (int i = 0; name && i < FAMILY_COUNT; i++)
        if (strcmp(families[i].name, name) == 0)
            return &families[i];
    return NULL;
}

int64_t models_param_count(const struct models_config *c)
{
    const struct models_family *f = c ? family_find(c->family) : NULL;
    if (!f || c->layers < 0 || c->layers > MODELS_MAX_LAYERS) /* more layers than a lift takes: no count, and no long loop */
        return -1;
    int64_t d = c->hidden, hq = size_mul(c->heads, c->head_dim), hk = size_mul(c->kv_heads, c->head_dim);
    /* Every layer: the q, k, v and output projections (unless the family has its own attention half), the attention
     * norm and the FFN norm (olmo2's: its two post-norms; a LayerNorm family's with their biases), and what the
     * family adds. */
    int64_t proj =
        f->attention ? 0 : size_add(size_mul(2, size_mul(d, hq)), size_mul(2, size_mul(d, hk)));
    int64_t norm = size_mul(f->layer_norm ? 2 : 1, d); /* one norm's weight, and its bias when it has one */
    int64_t layers = 0;
    for (int layer = 0; layer < c->layers && layers >= 0; layer++)
        layers = size_add(layers, size_add(size_add(proj, size_mul(2, norm)), f->layer_params(c, layer)));
    /* The embedding, the LM head unless tied to it, and the output norm. */
    int64_t outer = size_add(size_mul(size_mul(c->vocab, d), c->tied ? 1 : 2), norm);
    return size_add(outer, layers);
}

int models_family_count(void)
{
    return FAMILY_COUNT;
}

const char *models_family_name(int i)
{
    return i >= 0 && i < FAMILY_COUNT ? families[i].name : NULL;
}

/* ── Checks and the lift ─────────────────────────────────────────────────────────────────────────────────── */

/* Whether a family's layers include Gated DeltaNet ones (its DeltaNet dimensions needed). */
static bool deltanet(const struct models_family *f) { return f->attention == attention_qwen3_next; }

/* Whether a configuration's dimensions make a well-formed block (else err). */
static bool config_ok(const struct models_config *c, const struct models_family *f, char *err)
{
    const int64_t big = (int64_t)1 << 24;
    const struct {
        const char *what;
        int64_t v;
        bool needed;
    } dims[] = {
        {"layers", c->layers, true},     {"hidden", c->hidden, true},         {"heads", c->heads, true},
        {"kv_heads", c->kv_heads, true}, {"head_dim", c->head_dim, true},     {"vocab", c->vocab, true},
        {"ctx", c->ctx, true},           {"ffn", c->ffn, !f->mixture},  {"experts", c->experts, f->mixture},
        {"top_k", c->top_k, f->mixture}, {"expert_ffn", c->expert_ffn, f->mixture},
        {"full_every", c->full_every, deltanet(f)}, {"lin_k_heads", c->lin_k_heads, deltanet(f)},
        {"lin_v_heads", c->lin_v_heads, deltanet(f)}, {"lin_dk", c->lin_dk, deltanet(f)},
        {"lin_dv", c->lin_dv, deltanet(f)}, {"shared_ffn", c->shared_ffn, deltanet(f)},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (dims[i].needed && (dims[i].v < 1 || dims[i].v > (i == 0 ? MODELS_MAX_LAYERS : big))) {
            snprintf(err, IR_ERR_LEN, "model '%s': %s %lld is out of range 1..%lld", c->name, dims[i].what,
                     (long long)dims[i].v, (long long)(i == 0 ? MODELS_MAX_LAYERS : big));
            return false;
        }
    bool taps_ok = !deltanet(f) || (c->conv_taps >= 2 && c->conv_taps <= big);
    bool lin_ok = !deltanet(f) || c->lin_v_heads % c->lin_k_heads == 0;
    bool rot_ok = c->rotary_dim >= 0 && c->rotary_dim <= c->head_dim && c->rotary_dim % 2 == 0;
    if (!taps_ok || !lin_ok || !rot_ok) {
        snprintf(err, IR_ERR_LEN, "model '%s': conv_taps must be 2..%lld, lin_v_heads a multiple of lin_k_heads, "
                 "rotary_dim even and at most head_dim", c->name, (long long)big);
        return false;
    }
    if (f->ffn == ffn_gpt_oss && !(c->swiglu_alpha > 0 && c->swiglu_limit > 0 && isfinite(c->swiglu_alpha) &&
                                   isfinite(c->swiglu_limit))) {
        snprintf(err, IR_ERR_LEN, "model '%s': the clamped SwiGLU's swiglu_alpha and swiglu_limit must be positive",
                 c->name);
        return false;
    }
    const struct models_routing *rt = &c->routing;
    if (f->mixture && rt->groups > 1 &&
        (c->experts % rt->groups || c->experts / rt->groups < 2 || rt->topk_groups < 1 ||
         rt->topk_groups > rt->groups || rt->topk_groups * (c->experts / rt->groups) < c->top_k)) {
        snprintf(err, IR_ERR_LEN, "model '%s': routing groups must split the experts evenly, two or more a group, "
                 "and topk_groups of them (1..groups) hold top_k experts", c->name);
        return false;
    }
    if (!(rt->scale >= 0 && isfinite(rt->scale))) {
        snprintf(err, IR_ERR_LEN, "model '%s': the routing's scale must be a finite number not negative", c->name);
        return false;
    }
    if (c->heads % c->kv_heads || c->head_dim % 2 || (f->mixture && c->top_k > c->experts) ||
        c->window < 0 || !(c->eps > 0) || c->deepseek.rope_dim % 2 || c->deepseek.rope_dim < 0) {
        snprintf(err, IR_ERR_LEN, "model '%s': heads must be a multiple of kv_heads, head_dim and rope_dim even, "
                 "top_k at most experts, window, rope_dim and eps not negative", c->name);
        return false;
    }
    return true;
}

/* Whether the block format's values a block divide every matrix's contracted width (else err). */
static bool format_ok(const struct models_config *c, const struct models_family *f, enum ir_format fmt, char *err)
{
    int64_t block = ir_format_block_values(fmt);
    if (block < 1) {
        snprintf(err, IR_ERR_LEN, "unknown weights format %d", (int)fmt);
        return false;
    }
    const struct {
        const char *what;
        int64_t k;
    } widths[] = {
        {"hidden (embedding rows, q/k/v, FFN and LM head inputs)", c->hidden},
        {"heads x head_dim (output projection input)", c->heads * c->head_dim},
        {f->mixture ? "expert_ffn (expert down input)" : "ffn (down input)",
         f->mixture ? c->expert_ffn : c->ffn},
        {"lin_v_heads x lin_dv (DeltaNet output projection input)", c->lin_v_heads * c->lin_dv},
        {"shared_ffn (shared expert down input)", c->shared_ffn},
        /* deepseek's (0 elsewhere, which every block divides). */
        {"q_lora (query up input)", c->deepseek.q_lora},
        {"heads x kv_lora (value expansion input)", c->heads * c->deepseek.kv_lora},
        {"heads x v_head_dim (output projection input)", c->heads * c->deepseek.v_head_dim},
        {"shared_ffn (shared experts' down input)", c->deepseek.shared_ffn},
        {"ffn (dense layers' down input)", c->deepseek.dense_layers > 0 ? c->ffn : 0},
    };
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++)
        if (widths[i].k % block) {
            snprintf(err, IR_ERR_LEN, "weights format %s: its block of %lld values does not divide %s = %lld",
                     ir_format_name(fmt), (long long)block, widths[i].what, (long long)widths[i].k);
            return false;
        }
    return true;
}

/* Whether the options fit the model (else err); fills the lift's rows and context. */
static bool options_ok(struct models_lift *l, const struct models_options *o, char *err)
{
    const struct models_config *c = l->c;
    char mode[32];
    models_mode_name(o->mode, mode);
    bool kind_ok = o->mode.kind == MODELS_DECODE || o->mode.kind == MODELS_PREFILL || o->mode.kind == MODELS_BATCH;
    bool n_ok = o->mode.kind == MODELS_DECODE || (o->mode.n >= 1 && o->mode.n <= MODELS_MAX_ROWS);
    if (!kind_ok || !n_ok) {
        snprintf(err, IR_ERR_LEN, "bad mode '%s': expected decode, prefill:N or batch:N with 1 <= N <= %d", mode,
                 MODELS_MAX_ROWS);
        return false;
    }
    l->ctx = o->ctx ? o->ctx : c->ctx;
    if (l->ctx < 1 || l->ctx > ((int64_t)1 << 24)) {
        snprintf(err, IR_ERR_LEN, "context %lld is out of range 1..%lld", (long long)l->ctx,
                 (long long)((int64_t)1 << 24));
        return false;
    }
    int64_t n = o->mode.kind == MODELS_DECODE ? 1 : o->mode.n;
    if (n > l->ctx) {
        snprintf(err, IR_ERR_LEN, "mode %s: %d %s exceed the context of %lld rows", mode, (int)o->mode.n,
                 o->mode.kind == MODELS_BATCH ? "sequences" : "rows", (long long)l->ctx);
        return false;
    }
    if (o->layers < 0 || o->layers > c->layers) {
        snprintf(err, IR_ERR_LEN, "layers %d is out of range: model '%s' has %d layers (a count of 1..%d, or all)", (int)o->layers,
                 c->name, (int)c->layers, (int)c->layers);
        return false;
    }
    if ((int)o->weights < 0 || (int)o->weights >= IR_FMT_COUNT) {
        snprintf(err, IR_ERR_LEN, "unknown weights format %d", (int)o->weights);
        return false;
    }
    /* A generous bound on the ops: a layer's common ops, and per row its batch attention (a latent one's included),
     * DeltaNet and mixture ops. */
    int64_t layers = o->layers ? o->layers : c->layers;
    if (layers * (32 + 32 * n) > MAX_OPS) {
        snprintf(err, IR_ERR_LEN, "mode %s over %lld layers: the step would pass %lld ops", mode, (long long)layers,
                 (long long)MAX_OPS);
        return false;
    }
    l->kind = o->mode.kind;
    l->every_row_logits = o->every_row_logits;
    l->n = n;
    l->fmt = o->weights;
    return true;
}

struct ir_graph *models_lift(const struct models_config *c, const struct models_options *o, char err[IR_ERR_LEN])
{
    struct models_options dflt = models_default_options();
    if (!o)
        o = &dflt;
    if (!c || !c->name || !c->family) {
        snprintf(err, IR_ERR_LEN, "no model, or a model without a name or family");
        return NULL;
    }
    struct models_lift l;
    memset(&l, 0, sizeof l);
    l.c = c;
    l.err = err;
    l.f = family_find(c->family);
    if (!l.f) {
        snprintf(err, IR_ERR_LEN, "model '%s': unknown family '%s'", c->name, c->family);
        return NULL;
    }
    if (!config_ok(c, l.f, err) || !options_ok(&l, o, err) || !format_ok(c, l.f, l.fmt, err))
        return NULL;
    l.g = ir_graph_new();
    if (!l.g) {
        snprintf(err, IR_ERR_LEN, "out of memory");
        return NULL;
    }
    char mode[32];
    struct models_mode m = {l.kind, (int32_t)l.n};
    models_mode_name(m, mode);
    ir_graph_set_meta(l.g, c->name, c->family, mode);
    positions(&l);
    l.cos = tensor(&l, "rope.cos", IR_ELEM_F32, l.ctx, rotary_half(c), IR_ROLE_CONSTANT);
    l.sin = tensor(&l, "rope.sin", IR_ELEM_F32, l.ctx, rotary_half(c), IR_ROLE_CONSTANT);
    ir_tid x = embed(&l);
    int layers = o->layers ? o->layers : c->layers;
    for (int layer = 0; layer < layers && !l.failed; layer++)
        x = ffn_block(&l, layer, l.f->attention ? l.f->attention(&l, layer, x) : attention_block(&l, layer, x));
    head(&l, x);
    free(l.pos);
    if (l.failed) {
        ir_graph_free(l.g);
        return NULL;
    }
    return l.g;
}
