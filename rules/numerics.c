/* rules/numerics.c — the numerics fold (fused_quant) and the quantized lifted graph.
 *
 * Under a shim whose products read their activation quantized (the CUDA lane's int8 and int8x2 numerics), the
 * quantization is part of the meaning: a product reads the values a quantize op makes of its activation, one or two
 * int8 words a value in blocks of 32, not the activation itself. The fold makes that explicit:
 *
 *   1. Insert. Every read the shim's `activation` says is quantized gets a quantize op of its own (a new activation
 *      tensor named after its source, `<x>.q8` or `<x>.q8x2`), and the reader reads that tensor. The shim is asked
 *      about each primitive product as the lifted graph has it — every leaf of every op — so the same reads are
 *      quantized whatever the rules fused around them. A read from outside its op gets a quantize before the op (one
 *      quantize serves every later reader of the same source, access and words, until something writes the source);
 *      a read of what an earlier part of the same fused op computes gets a quantize part right before the reader.
 *   2. Fold. A quantize before an op whose source a producer the chip can quantize in its epilogue computes (a norm,
 *      an add and norm, a gated pair, an elementwise op, a delta rule, a product, an attention, a row set) moves up
 *      into that producer as one fused op of the matching *_quant class, when its guard atoms hold and the chip runs
 *      the result whole; the chip's refusal is reported otherwise. With fold off (fused_quant held) the quantize ops
 *      are inserted all the same — the meaning does not change — and nothing folds.
 *
 * rules_quantized_lifted applies step 1 alone to a lifted graph: the reference side of `diff` under a quantizing shim,
 * which the rewritten graph must match bit for bit. */
#include "rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* realloc that aborts on exhaustion. */
static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        abort();
    return q;
}

/* ── The fold's rule: its classes and its guard atoms, as data ───────────────────────────────────────────── */

static const enum ir_class builds_fused_quant[] = {
    IR_CLASS_NORM_QUANT,      IR_CLASS_ADD_NORM_QUANT,   IR_CLASS_GLU_ACT_MUL_QUANT, IR_CLASS_ELEMENTWISE_QUANT,
    IR_CLASS_GDN_OUTPUT_QUANT, IR_CLASS_GEMV_QUANT,       IR_CLASS_ATTN_OUTPUT_QUANT, IR_CLASS_ROW_WRITE_QUANT,
};

/* The quantize (CONSUMER) moves up to the op computing its source (PRODUCER): legal when it crosses nothing that
 * writes the source or touches the quantized tensor. */
static const struct rules_atom guards_fused_quant[] = {
    {.name = "no_cross", .kind = RULES_ATOM_NO_CROSS, .a = RULES_ROLE_PRODUCER, .b = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
};

/* The fold run as a step of its own (the optimizer calls rules_numerics_fold directly). */
static void apply_fused_quant(struct rules_rewriter *r) { rules_numerics_fold(r, true); }

const struct rules_rule rules_rule_fused_quant = {
    "fused_quant", RULES_GROUP, builds_fused_quant, (int)(sizeof builds_fused_quant / sizeof builds_fused_quant[0]),
    apply_fused_quant, guards_fused_quant, 1, RULES_MOTION_HOIST_TO_PRODUCER,
    "a quantize of a product's activation runs in the epilogue of the op computing that activation: the quantize "
    "moves up past nothing that writes its source or touches its result"};

/* ── Which reads are quantized ───────────────────────────────────────────────────────────────────────────── */

/* The state of one insertion pass over an op list. */
struct pass {
    struct ir_graph *g;        /* the graph whose tensors the new quantized tensors join */
    const struct shim *shim;
    bool *quantized;           /* per tensor: the result of a quantize (never quantized again) */
    int32_t *written;          /* per tensor: == stamp when an earlier part of the current op writes it */
    int32_t *latest;           /* per tensor: its newest entry in live still valid, or -1 */
    int32_t ntensors, stamp;
    struct live *live;         /* every top-level quantized tensor made; those valid are reached from latest */
    int32_t nlive, caplive;
    struct ir_op *out;         /* the new op list */
    int32_t nout, capout;
    int32_t *made;             /* positions in out of the top-level quantizes made */
    struct covers *made_for;   /* per made quantize: the lifted ops of its first reader */
    int32_t nmade, capmade;
    bool cover_now;            /* give a made quantize its reader's covers at once (else after the fold) */
};

/* Lifted op indices (a copy). */
struct covers {
    int32_t *v;
    int32_t n;
};

/* A top-level quantize: its source, access, words and result, and the entry made before it for the same source. */
struct live {
    ir_tid x;
    struct ir_access access;
    int words;
    ir_tid q;
    int32_t older;
};

/* Grow the per-tensor arrays to the graph's tensor count. */
static void grow_tensors(struct pass *p)
{
    int32_t n = p->g->ntensors;
    if (n <= p->ntensors)
        return;
    p->quantized = xrealloc(p->quantized, sizeof *p->quantized * (size_t)n);
    p->written = xrealloc(p->written, sizeof *p->written * (size_t)n);
    p->latest = xrealloc(p->latest, sizeof *p->latest * (size_t)n);
    for (int32_t t = p->ntensors; t < n; t++) {
        p->quantized[t] = false;
        p->written[t] = 0;
        p->latest[t] = -1;
    }
    p->ntensors = n;
}

/* The activation rows and row width a primitive reads at operand k when it is a product (a matmul's m rows of k) or a
 * mixture (one row of d); false for anything else. */
static bool read_shape(const struct ir_op *leaf, int k, int64_t *rows, int64_t *cols)
{
    if (k != 0 || leaf->sym != IR_SYM_PRIM)
        return false;
    if (leaf->spec.kind == IR_KIND_MATMUL) {
        *rows = leaf->spec.u.matmul.m;
        *cols = leaf->spec.u.matmul.k;
        return true;
    }
    if (leaf->spec.kind == IR_KIND_MOE) {
        *rows = 1;
        *cols = leaf->spec.u.moe.d;
        return true;
    }
    return false;
}

/* The words (1 or 2) in which the shim says leaf reads operand k quantized, when a quantize can make that read: a
 * source not already quantized (of any element type: its values are f32 as every tensor's are), whole 32-value
 * blocks, read whole at its exact length or as a part. 0 otherwise. */
static int quant_words(const struct pass *p, const struct ir_op *leaf, int k, int64_t *rows, int64_t *cols)
{
    if (leaf->sym != IR_SYM_PRIM || k >= leaf->nins)
        return 0;
    int words = p->shim->activation(p->shim, leaf, k, p->g);
    if ((words != 1 && words != 2) || !read_shape(leaf, k, rows, cols))
        return 0;
    if (rules_planted() == RULES_PLANT_quant_words)
        words = 3 - words;
    ir_tid x = leaf->ins[k];
    int64_t len = *rows * *cols;
    if (x < 0 || x >= p->g->ntensors || p->quantized[x] || len <= 0 || len % 32 != 0)
        return 0;
    return leaf->access[k].strided || ir_tensor_len(p->g, x) == len ? words : 0;
}

/* A new activation tensor for source x quantized in `words` words: `<x>.q8` or `<x>.q8x2`, numbered when taken. */
static ir_tid new_quantized(struct pass *p, ir_tid x, int words, int64_t rows, int64_t cols)
{
    char name[IR_MAX_NAME + 1];
    const char *base = p->g->tensors[x].name;
    const char *suffix = words == 2 ? ".q8x2" : ".q8";
    int keep = (int)strlen(base);
    if (keep > IR_MAX_NAME - 16)
        keep = IR_MAX_NAME - 16;
    snprintf(name, sizeof name, "%.*s%s", keep, base, suffix);
    for (int k = 2; ir_tensor_find(p->g, name, strlen(name)) != IR_NONE; k++)
        snprintf(name, sizeof name, "%.*s%s.%d", keep, base, suffix, k);
    ir_tid q = ir_tensor_add(p->g, name, IR_ELEM_F32, rows, cols, IR_ROLE_ACTIVATION);
    grow_tensors(p);
    p->quantized[q] = true;
    return q;
}

/* A quantize op: q = x (read with access a) in `words` int8 words a value, covering nothing. */
static struct ir_op quantize_op(ir_tid x, struct ir_access a, ir_tid q, int words)
{
    struct ir_op op = ir_op_prim(IR_KIND_MATMUL, &x, 1, q);
    memset(&op.spec, 0, sizeof op.spec);
    op.sym = IR_SYM_QUANT;
    op.quant_words = words;
    op.access[0] = a;
    return op;
}

/* Append op to the new op list (taking ownership). */
static void emit(struct pass *p, struct ir_op op)
{
    if (p->nout == p->capout) {
        p->capout = p->capout ? p->capout * 2 : 64;
        p->out = xrealloc(p->out, sizeof *p->out * (size_t)p->capout);
    }
    p->out[p->nout++] = op;
}

/* The top-level quantized tensor for source x (access a, words): a live one, or a new one whose quantize goes into the
 * op list now, before the op being read. A top-level op covers at least one lifted op: a quantize covers those of
 * the first product it is made for (`reader`, else the op being read, `top`), the reads it computes. */
static ir_tid outer_quantized(struct pass *p, ir_tid x, struct ir_access a, int words, int64_t rows, int64_t cols,
                              const struct ir_op *reader, const struct ir_op *top)
{
    for (int32_t i = p->latest[x]; i >= 0; i = p->live[i].older)
        if (p->live[i].words == words && ir_access_same(&p->live[i].access, &a) &&
            ir_tensor_len(p->g, p->live[i].q) == rows * cols)
            return p->live[i].q;
    ir_tid q = new_quantized(p, x, words, rows, cols);
    if (p->nmade == p->capmade) {
        p->capmade = p->capmade ? p->capmade * 2 : 16;
        p->made = xrealloc(p->made, sizeof *p->made * (size_t)p->capmade);
        p->made_for = xrealloc(p->made_for, sizeof *p->made_for * (size_t)p->capmade);
    }
    const struct ir_op *by = reader->ncovers > 0 ? reader : top;
    struct covers c = {xrealloc(NULL, sizeof *c.v * (size_t)(by->ncovers ? by->ncovers : 1)), by->ncovers};
    if (by->ncovers)
        memcpy(c.v, by->covers, sizeof *c.v * (size_t)by->ncovers);
    p->made_for[p->nmade] = c;
    p->made[p->nmade++] = p->nout;
    struct ir_op op = quantize_op(x, a, q, words);
    if (p->cover_now)
        ir_op_set_covers(&op, c.v, c.n);
    emit(p, op);
    if (p->nlive == p->caplive) {
        p->caplive = p->caplive ? p->caplive * 2 : 16;
        p->live = xrealloc(p->live, sizeof *p->live * (size_t)p->caplive);
    }
    p->live[p->nlive] = (struct live){x, a, words, q, p->latest[x]};
    p->latest[x] = p->nlive++;
    return q;
}

/* Forget the quantized tensors whose source op writes: later readers need a quantize of their own. */
static void invalidate(struct pass *p, const struct ir_op *op)
{
    int32_t n = ir_op_writes(op, NULL, 0);
    ir_tid *w = xrealloc(NULL, sizeof *w * (size_t)(n ? n : 1));
    ir_op_writes(op, w, n);
    for (int32_t k = 0; k < n; k++)
        if (w[k] >= 0 && w[k] < p->ntensors)
            p->latest[w[k]] = -1;
    free(w);
}

/* Mark what a leaf writes (its result, its destination, state in place) as written by the current op. */
static void mark_written(struct pass *p, const struct ir_op *leaf)
{
    int idx[4], n = ir_op_state_inputs(leaf, idx);
    ir_tid w[6] = {leaf->out, leaf->dst.buf};
    for (int i = 0; i < n; i++)
        w[2 + i] = leaf->ins[idx[i]];
    for (int i = 0; i < 2 + n; i++)
        if (w[i] >= 0 && w[i] < p->ntensors)
            p->written[w[i]] = p->stamp;
}

/* A substitution made in the current op: its leaves read source x (access a) as q. */
struct subst {
    ir_tid x;
    struct ir_access access;
    ir_tid q;
};

/* The substitutions made from outside the current op (for its operand lists). */
struct substs {
    struct subst *v;
    int32_t n, cap;
};

/* Quantize the reads of one leaf: from outside the op through a top-level quantize (recorded in outer), from an
 * earlier part through a quantize part inserted before the leaf at parts[*at] (its parent's array; *at moves past
 * it). With parent NULL the leaf is the op itself. */
static void quantize_leaf(struct pass *p, struct ir_op *parent, int32_t *at, struct ir_op *self, struct substs *outer,
                          const struct ir_op *top)
{
    struct ir_op *leaf = parent ? &parent->parts[*at] : self;
    for (int32_t k = 0; k < leaf->nins; k++) {
        int64_t rows, cols;
        int words = quant_words(p, leaf, (int)k, &rows, &cols);
        if (!words)
            continue;
        ir_tid x = leaf->ins[k];
        struct ir_access a = leaf->access[k];
        ir_tid q;
        if (parent && p->written[x] == p->stamp) {
            q = new_quantized(p, x, words, rows, cols);
            parent->parts = xrealloc(parent->parts, sizeof *parent->parts * (size_t)(parent->nparts + 1));
            memmove(&parent->parts[*at + 1], &parent->parts[*at],
                    sizeof *parent->parts * (size_t)(parent->nparts - *at));
            parent->parts[*at] = quantize_op(x, a, q, words);
            parent->nparts++;
            (*at)++;
            leaf = &parent->parts[*at];
        } else {
            q = outer_quantized(p, x, a, words, rows, cols, leaf, top);
            if (outer->n == outer->cap) {
                outer->cap = outer->cap ? outer->cap * 2 : 8;
                outer->v = xrealloc(outer->v, sizeof *outer->v * (size_t)outer->cap);
            }
            outer->v[outer->n++] = (struct subst){x, a, q};
        }
        leaf->ins[k] = q;
        memset(&leaf->access[k], 0, sizeof leaf->access[k]);
    }
    mark_written(p, leaf);
}

/* Quantize the reads of every leaf under a fused op (of top-level op top), in the order its parts run. */
static void quantize_parts(struct pass *p, struct ir_op *op, struct substs *outer, const struct ir_op *top)
{
    for (int32_t i = 0; i < op->nparts; i++) {
        if (op->parts[i].sym == IR_SYM_FUSED)
            quantize_parts(p, &op->parts[i], outer, top);
        else
            quantize_leaf(p, op, &i, NULL, outer, top);
    }
}

/* Whether some leaf under op reads t. */
static bool leaves_read(const struct ir_op *op, ir_tid t)
{
    if (op->sym != IR_SYM_FUSED) {
        for (int32_t k = 0; k < op->nins; k++)
            if (op->ins[k] == t)
                return true;
        return op->dst.row == IR_ROWSEL_PARAM && op->dst.row_param == t;
    }
    for (int32_t i = 0; i < op->nparts; i++)
        if (leaves_read(&op->parts[i], t))
            return true;
    return false;
}

/* Whether some leaf under op reads t with access a. */
static bool leaves_read_as(const struct ir_op *op, ir_tid t, const struct ir_access *a)
{
    if (op->sym != IR_SYM_FUSED) {
        for (int32_t k = 0; k < op->nins; k++)
            if (op->ins[k] == t && ir_access_same(&op->access[k], a))
                return true;
        return false;
    }
    for (int32_t i = 0; i < op->nparts; i++)
        if (leaves_read_as(&op->parts[i], t, a))
            return true;
    return false;
}

/* Bring a fused op's operand lists (its own and every nested part's) up to date with one substitution: where a
 * subtree's leaves read q, q takes the place of its source x (access a) in the subtree's operands, so a fused op's
 * leading operands stay its first part's (a projection's activation first, as the rules that merge projections read
 * them); x, when a leaf still reads it so in another role, moves to the end. Without x listed, q joins at the end. */
static void update_operands(struct ir_op *op, const struct subst *s)
{
    if (op->sym != IR_SYM_FUSED || !leaves_read(op, s->q))
        return;
    for (int32_t i = 0; i < op->nparts; i++)
        update_operands(&op->parts[i], s);
    int32_t at = -1;
    for (int32_t k = 0; k < op->nins; k++) {
        if (op->ins[k] == s->q)
            return;
        if (at < 0 && op->ins[k] == s->x && ir_access_same(&op->access[k], &s->access))
            at = k;
    }
    if (at < 0 || (rules_planted() == RULES_PLANT_source_first && leaves_read_as(op, s->x, &op->access[at]))) {
        ir_op_append_in(op, s->q);
        return;
    }
    struct ir_access was = op->access[at];
    op->ins[at] = s->q;
    memset(&op->access[at], 0, sizeof op->access[at]);
    if (leaves_read_as(op, s->x, &was)) {
        ir_op_append_in(op, s->x);
        op->access[op->nins - 1] = was;
    }
}

/* Quantize every read of one top-level op (taking ownership of it) and append it after the quantizes it needs. */
static void quantize_op_reads(struct pass *p, struct ir_op op)
{
    struct substs outer = {NULL, 0, 0};
    p->stamp++;
    if (op.sym == IR_SYM_FUSED)
        quantize_parts(p, &op, &outer, &op);
    else if (op.sym == IR_SYM_PRIM)
        quantize_leaf(p, NULL, NULL, &op, &outer, &op);
    for (int32_t i = 0; op.sym == IR_SYM_FUSED && i < outer.n; i++)
        update_operands(&op, &outer.v[i]);
    free(outer.v);
    invalidate(p, &op);
    emit(p, op);
}

/* Mark every tensor a quantize (anywhere under op) computes. */
static void mark_quantized(struct pass *p, const struct ir_op *op)
{
    if (op->sym == IR_SYM_QUANT && op->out >= 0 && op->out < p->ntensors)
        p->quantized[op->out] = true;
    for (int32_t i = 0; i < op->nparts; i++)
        mark_quantized(p, &op->parts[i]);
}

/* Whether any leaf under op reads an operand the pass would quantize. */
static bool quantizes_any(const struct pass *p, const struct ir_op *op)
{
    int64_t rows, cols;
    if (op->sym == IR_SYM_FUSED) {
        for (int32_t i = 0; i < op->nparts; i++)
            if (quantizes_any(p, &op->parts[i]))
                return true;
        return false;
    }
    for (int32_t k = 0; k < op->nins; k++)
        if (quant_words(p, op, (int)k, &rows, &cols))
            return true;
    return false;
}

/* A pass over g's tensors under shim, the quantize results among ops[0..n) marked. */
static struct pass pass_new(struct ir_graph *g, const struct shim *shim, const struct ir_op *ops, int32_t n)
{
    struct pass p;
    memset(&p, 0, sizeof p);
    p.g = g;
    p.shim = shim;
    grow_tensors(&p);
    for (int32_t i = 0; i < n; i++)
        mark_quantized(&p, &ops[i]);
    return p;
}

/* Free what a pass holds (not its op list, which its caller takes). */
static void pass_free(struct pass *p)
{
    free(p->quantized);
    free(p->written);
    free(p->latest);
    free(p->live);
    free(p->made);
    for (int32_t i = 0; i < p->nmade; i++)
        free(p->made_for[i].v);
    free(p->made_for);
}

/* Run the pass over ops[0..n) (taking ownership of the array and its ops); the new list lands in p->out. */
static void pass_run(struct pass *p, struct ir_op *ops, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        quantize_op_reads(p, ops[i]);
    free(ops);
}

/* ── The fold ────────────────────────────────────────────────────────────────────────────────────────────── */

/* An add then a norm (alone, after a product or a mixture, or a norm of a sum with its residual). */
static bool adds_and_norms(const struct ir_op *op, const struct ir_graph *g)
{
    (void)g;
    int c = rules_class(op);
    return c == IR_CLASS_ADD_NORM || c == IR_CLASS_NORM_THEN_ADD || c == IR_CLASS_GEMV_NORM_EPILOGUE ||
           c == IR_CLASS_MOE_DEFERRED_FINALIZE || (rules_plain_rms(op) && op->spec.u.rms_norm.residual);
}

/* An RMS norm without a bias (alone, or closing an embedding's gather): a layer norm or a biased one takes no
 * quantize into its epilogue, as no norm class computes it. */
static bool norms(const struct ir_op *op, const struct ir_graph *g)
{
    (void)g;
    return rules_plain_rms(op) || rules_class(op) == IR_CLASS_EMBED_NORM;
}

/* A gated pair: a SwiGLU, an activation times its gate, two products and their gate, a gated attention. */
static bool gates(const struct ir_op *op, const struct ir_graph *g)
{
    (void)g;
    int c = rules_class(op);
    return rules_is(op, IR_KIND_SWIGLU) || c == IR_CLASS_GLU_ACT_MUL || c == IR_CLASS_GEMV_GATE_UP_GLU ||
           c == IR_CLASS_ATTN_OUTPUT_GATE;
}

/* An elementwise op. */
static bool elementwise(const struct ir_op *op, const struct ir_graph *g)
{
    (void)g;
    return rules_is(op, IR_KIND_ELEMENTWISE);
}

/* A gated delta rule (alone or as a step). */
static bool deltas(const struct ir_op *op, const struct ir_graph *g)
{
    (void)g;
    return rules_is(op, IR_KIND_GATED_DELTA) || rules_class(op) == IR_CLASS_GDN_STEP;
}

/* A product by a constant. */
static bool projects(const struct ir_op *op, const struct ir_graph *g)
{
    struct rules_gemv_form f;
    return rules_gemv(op, g, &f);
}

/* An attention. */
static bool attends(const struct ir_op *op, const struct ir_graph *g)
{
    (void)g;
    return rules_is(op, IR_KIND_ATTENTION);
}

/* A row set. */
static bool sets_rows(const struct ir_op *op, const struct ir_graph *g)
{
    (void)g;
    return rules_is(op, IR_KIND_SET_ROW);
}

/* A producer that can quantize its result in its epilogue, and the class it then builds (first match wins). */
struct fold_row {
    bool (*is)(const struct ir_op *op, const struct ir_graph *g);
    enum ir_class cls;
};

static const struct fold_row fold_rows[] = {
    {adds_and_norms, IR_CLASS_ADD_NORM_QUANT}, {norms, IR_CLASS_NORM_QUANT},
    {gates, IR_CLASS_GLU_ACT_MUL_QUANT},       {elementwise, IR_CLASS_ELEMENTWISE_QUANT},
    {deltas, IR_CLASS_GDN_OUTPUT_QUANT},       {projects, IR_CLASS_GEMV_QUANT},
    {attends, IR_CLASS_ATTN_OUTPUT_QUANT},     {sets_rows, IR_CLASS_ROW_WRITE_QUANT},
};

/* The class a producer builds with the quantize of its result, or -1 when it cannot take one. */
static int fold_class(const struct ir_op *op, const struct ir_graph *g)
{
    for (size_t i = 0; i < sizeof fold_rows / sizeof fold_rows[0]; i++)
        if (fold_rows[i].is(op, g))
            return (int)fold_rows[i].cls;
    return -1;
}

/* Fold the quantize at slot q into its source's producer, when the guards hold and the chip runs the result whole
 * (a refusal is reported). */
static void fold_one(struct rules_rewriter *r, int32_t q)
{
    const struct ir_op *quant = ir_slots_get(r->s, q);
    if (!quant || quant->sym != IR_SYM_QUANT || quant->access[0].strided)
        return;
    ir_tid x = quant->ins[0], out = quant->out;
    int32_t at = ir_facts_producer(r->s, x);
    const struct ir_op *producer = at >= 0 && at < q ? ir_slots_get(r->s, at) : NULL;
    int cls = producer ? fold_class(producer, r->g) : -1;
    if (cls < 0)
        return;
    struct rules_binding b = rules_binding_empty();
    b.slot[RULES_ROLE_PRODUCER] = at;
    b.slot[RULES_ROLE_CONSUMER] = q;
    b.tensor[RULES_ROLE_RESULT] = x;
    if (!rules_guards_hold(r, &rules_rule_fused_quant, &b, NULL))
        return;
    int32_t slots[2] = {at, q};
    int32_t room = producer->nins + 2;
    ir_tid *ins = xrealloc(NULL, sizeof *ins * (size_t)room);
    struct ir_access *access = xrealloc(NULL, sizeof *access * (size_t)room);
    int32_t nins = rules_external(r, slots, 2, ins, access, room);
    struct ir_op cand = rules_candidate_slots(r, (enum ir_class)cls, slots, 2, ins, nins, out, ir_dst_own(out));
    bool ok = rules_admits(r, &cand);
    ir_op_free(&cand);
    if (ok)
        rules_fuse(r, (enum ir_class)cls, at, &q, 1, ins, access, nins, out, ir_dst_own(out));
    free(ins);
    free(access);
}

void rules_numerics_fold(struct rules_rewriter *r, bool fold)
{
    int32_t n = ir_slots_len(r->s);
    bool any = false;
    struct ir_op *ops = NULL;
    {
        struct pass probe = pass_new(r->g, r->shim, NULL, 0);
        for (int32_t i = 0; i < n && !any; i++) {
            const struct ir_op *op = ir_slots_get(r->s, i);
            any = op && quantizes_any(&probe, op);
        }
        pass_free(&probe);
    }
    if (!any)
        return;
    ops = ir_slots_into_ops(rules_slots(r), &n);
    ir_slots_free(r->s);
    struct pass p = pass_new(r->g, r->shim, ops, n);
    pass_run(&p, ops, n);
    r->s = ir_slots_new(r->g, p.out, p.nout);
    for (int32_t i = 0; fold && i < p.nmade; i++)
        fold_one(r, p.made[i]);
    /* A quantize left standing covers the lifted ops of the product it was made for (folded ones cover their
     * producer's). */
    for (int32_t i = 0; i < p.nmade; i++) {
        const struct ir_op *quant = ir_slots_get(r->s, p.made[i]);
        if (quant && quant->sym == IR_SYM_QUANT) {
            struct ir_op op = ir_op_clone(quant);
            ir_op_set_covers(&op, p.made_for[i].v, p.made_for[i].n);
            ir_slots_replace(rules_slots(r), p.made[i], op);
        }
    }
    pass_free(&p);
}

struct ir_graph *rules_quantized_lifted(const struct ir_graph *g, const struct shim *shim)
{
    struct ir_graph *c = ir_graph_clone(g);
    if (!c)
        return NULL;
    struct ir_op *ops = c->ops;
    int32_t n = c->nops;
    c->ops = NULL;
    c->nops = c->ops_cap = 0;
    struct pass p = pass_new(c, shim, ops, n);
    p.cover_now = true;
    pass_run(&p, ops, n);
    c->ops = p.out;
    c->nops = c->ops_cap = p.nout;
    pass_free(&p);
    return c;
}
