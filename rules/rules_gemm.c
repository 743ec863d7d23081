/* rules/rules_gemm.c — the rules around products and norms: epilogues folded into a product (a bias, a scale, the
 * next add-and-norm, a rotation), a scale folded into the product that reads it, gated pairs and activation gates,
 * scales and norms folded into a norm or a gather, two independent norms as one, a step's projections of one
 * activation side by side, the ReLU squared, and the arg-max that moves the step on.
 *
 * Each matcher finds a shape and binds roles; the dataflow conditions that make its motion legal are the guard atoms
 * declared beside it. Two-op rules bind PRODUCER (the op computing RESULT), CONSUMER (the op reading it) and RESULT;
 * rules that gather several ops bind MEMBERS and FIRST or ANCHOR. */
#include "rules.h"

#include <stdlib.h>
#include <string.h>

#define NGUARDS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The atoms most rules here share: the consumer is the result's one reader, and the moved op passes nothing that
 * sees the difference; each row says its origin. */
#define ATOM_ONLY_READER(origin) \
    {.name = "only_reader", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_CONSUMER, origin}
#define ATOM_NO_CROSS(origin) \
    {.name = "no_cross", .kind = RULES_ATOM_NO_CROSS, .a = RULES_ROLE_PRODUCER, .b = RULES_ROLE_CONSUMER, origin}
#define ATOM_NO_SINK_PAST(origin) \
    {.name = "no_sink_past", .kind = RULES_ATOM_NO_SINK_PAST, .a = RULES_ROLE_PRODUCER, .b = RULES_ROLE_CONSUMER, \
     origin}

/* ── Shared helpers ──────────────────────────────────────────────────────────────────────────────────────── */

/* Whether op reads every operand whole. */
static bool all_whole(const struct ir_op *op)
{
    for (int32_t k = 0; k < op->nins; k++)
        if (op->access[k].strided)
            return false;
    return true;
}

/* Whether t is a constant of plain values holding exactly len values (a bias row or a column of factors). */
static bool constant_row(const struct ir_graph *g, ir_tid t, int64_t len)
{
    return rules_weights_of(g, t).kind == RULES_W_VALUES && ir_tensor_len(g, t) == len;
}

/* The readers of t, malloc'd; *n receives their count. */
static int32_t *readers_of(const struct rules_rewriter *r, ir_tid t, int32_t *n)
{
    int32_t count = rules_reader_count(r, t);
    int32_t *out = rules_xmalloc(sizeof *out * (size_t)(count ? count : 1));
    *n = ir_facts_readers(r->s, t, out, count);
    return out;
}

/* A test of whether the op at a slot is the consumer a rule looks for among a tensor's readers. */
typedef bool (*reader_test)(const struct rules_rewriter *r, int32_t slot, const void *ctx);

/* The first reader of t whose op passes `fits`, or -1; whether it is the only or the first reader is a guard. */
static int32_t reader_where(const struct rules_rewriter *r, ir_tid t, reader_test fits, const void *ctx)
{
    int32_t n;
    int32_t *readers = readers_of(r, t, &n);
    int32_t found = -1;
    for (int32_t k = 0; k < n && found < 0; k++)
        if (fits(r, readers[k], ctx))
            found = readers[k];
    free(readers);
    return found;
}

/* Whether the running rule's guards hold for a producer, its consumer and the result between them. */
static bool pair_holds(const struct rules_rewriter *r, int32_t producer, int32_t consumer, ir_tid result)
{
    struct rules_binding b = rules_binding_empty();
    b.slot[RULES_ROLE_PRODUCER] = producer;
    b.slot[RULES_ROLE_CONSUMER] = consumer;
    b.tensor[RULES_ROLE_RESULT] = result;
    return rules_guards_hold(r, r->rule, &b, NULL);
}

/* A lifted scale of a whole tensor into its own buffer: its input and length. */
static bool scale_of(const struct ir_op *op, ir_tid *x, int64_t *n)
{
    if (!rules_is(op, IR_KIND_SCALE) || op->nins < 1 || op->access[0].strided || !ir_dst_is_own(&op->dst))
        return false;
    *x = op->ins[0];
    *n = op->spec.u.scale.n;
    return true;
}

/* A product of a whole tensor by a constant row, each column its own factor (over every row of the tensor or its
 * one row), read as a scale: the scaled tensor and its length. */
static bool column_scale(const struct rules_rewriter *r, const struct ir_op *op, ir_tid *x, int64_t *n)
{
    struct rules_binary_form b;
    if (!rules_binary(op, &b) || b.op != IR_EW_MUL || b.gated || !all_whole(op))
        return false;
    if (constant_row(r->g, b.b, b.row ? b.row : b.n)) {
        *x = b.a;
        *n = b.n;
        return true;
    }
    if (!b.row && constant_row(r->g, b.a, b.n)) {
        *x = b.b;
        *n = b.n;
        return true;
    }
    return false;
}

/* A lifted RMS norm of a whole input, adding nothing, into its own buffer. */
static bool plain_norm(const struct ir_op *op, struct rules_norm_form *f)
{
    return rules_norm(op, f) && rules_class(op) < 0 && f->own && !f->has_part && f->add == IR_NONE;
}

/* Copies of an op's operands and accesses, malloc'd (the caller frees both); the op may be moved meanwhile. */
static int32_t copy_operands(const struct ir_op *op, ir_tid **ins, struct ir_access **access)
{
    *ins = rules_xmalloc(sizeof **ins * (size_t)(op->nins + 1));
    *access = rules_xmalloc(sizeof **access * (size_t)(op->nins + 1));
    memcpy(*ins, op->ins, sizeof **ins * (size_t)op->nins);
    memcpy(*access, op->access, sizeof **access * (size_t)op->nins);
    return op->nins;
}

/* ── norm_scale ──────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_norm_scale[] = {IR_CLASS_NORM_SCALE};

/* The scale (consumer) moves up to the norm (producer): legal when it passes nothing that writes what it reads or
 * touches what it writes; the scale is the norm's one reader. */
static const struct rules_atom guards_norm_scale[] = {
    ATOM_ONLY_READER(RULES_FROM_SEED),
    ATOM_NO_CROSS(RULES_FROM_SEED),
};

/* A scalar scale of a plain norm's whole result in the norm's epilogue: the scale moves up past nothing it sees. */
static void apply_norm_scale(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *op = rules_slot(r, j);
        ir_tid x;
        int64_t n;
        if (!op || !scale_of(op, &x, &n))
            continue;
        int32_t i = ir_facts_producer(r->s, x);
        struct rules_norm_form nf;
        if (i < 0 || !plain_norm(rules_slot(r, i), &nf) || nf.rows * nf.cols != n)
            continue;
        if (pair_holds(r, i, j, x))
            rules_pair(r, IR_CLASS_NORM_SCALE, i, j, i);
    }
}

const struct rules_rule rules_rule_norm_scale = {
    "norm_scale", RULES_GROUP, builds_norm_scale, 1, apply_norm_scale, guards_norm_scale, NGUARDS(guards_norm_scale),
    RULES_MOTION_HOIST_TO_PRODUCER,
    "a scalar scale of a plain norm's whole result runs in the norm's epilogue: the scale is the result's one reader "
    "and moves up past nothing that writes what it reads or touches what it writes"};

/* ── head_norm_rope ──────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_head_norm_rope[] = {IR_CLASS_QK_NORM_ROPE};

/* The per-head norm (producer) moves down to the rotation (consumer): legal when the rotation is the normed heads'
 * one reader and the norm sinks past nothing that writes what it reads (its input, its weight) or touches what it
 * writes. */
static const struct rules_atom guards_head_norm_rope[] = {
    ATOM_ONLY_READER(RULES_FROM_SEED),
    ATOM_NO_SINK_PAST(RULES_ADDED_BY("F7")),
};

/* A per-head RMS norm read only by a rotation runs inside the rotation: the norm sinks past nothing it sees. */
static void apply_head_norm_rope(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *op = rules_slot(r, j);
        struct rules_rope_form ro;
        if (!op || !rules_rope(op, &ro) || ro.normed || rules_class(op) >= 0)
            continue;
        int32_t i = ir_facts_producer(r->s, ro.x);
        const struct ir_op *nop = i >= 0 ? rules_slot(r, i) : NULL;
        struct rules_norm_form nf;
        if (!nop || !plain_norm(nop, &nf) || nf.w == IR_NONE || nf.rows != ro.heads || nf.cols != ro.hd)
            continue;
        if (!pair_holds(r, i, j, ro.x))
            continue;
        const struct ir_op *parts[2] = {nop, op};
        struct ir_op cand = rules_candidate(IR_CLASS_QK_NORM_ROPE, parts, 2, &nf.x, 1, ro.dst.buf, ro.dst);
        bool ok = rules_admits(r, &cand);
        ir_op_free(&cand);
        if (!ok)
            continue;
        /* The norm's input and weight, then the rotation's tables (and position). */
        int32_t nins = op->nins + 1;
        ir_tid *ins = rules_xmalloc(sizeof *ins * (size_t)nins);
        struct ir_access *access = rules_xmalloc(sizeof *access * (size_t)nins);
        memset(access, 0, sizeof *access * (size_t)nins);
        ins[0] = nf.x;
        access[0] = nop->access[0];
        ins[1] = nf.w;
        for (int32_t k = 1; k < op->nins; k++)
            ins[k + 1] = op->ins[k];
        ir_tid out = op->out;
        struct ir_dst dst = op->dst;
        rules_fuse(r, IR_CLASS_QK_NORM_ROPE, j, &i, 1, ins, access, nins, out, dst);
        free(ins);
        free(access);
    }
}

const struct rules_rule rules_rule_head_norm_rope = {
    "head_norm_rope", RULES_GROUP, builds_head_norm_rope, 1, apply_head_norm_rope, guards_head_norm_rope,
    NGUARDS(guards_head_norm_rope), RULES_MOTION_SINK_TO_CONSUMER,
    "a per-head RMS norm read only by a rotation runs inside the rotation: the norm sinks past nothing that writes "
    "what it reads or touches what it writes"};

/* ── dual_norm ───────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_dual_norm[] = {IR_CLASS_DUAL_NORM};

/* The later norm moves up to the earlier one's slot: legal when it crosses nothing that writes what it reads or
 * touches what it writes. */
static const struct rules_atom guards_dual_norm[] = {
    {.name = "no_cross", .kind = RULES_ATOM_NO_CROSS, .a = RULES_ROLE_FIRST, .b = RULES_ROLE_EACH,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_FROM_SEED},
};

/* Whether the running rule's guards hold with FIRST the first of `members` (ascending) and MEMBERS all of them. */
static bool members_hold(const struct rules_rewriter *r, const int32_t *members, int32_t n)
{
    struct rules_binding b = rules_group_binding(members[0], members, n);
    return rules_guards_hold(r, r->rule, &b, NULL);
}

/* Whether op reads t. */
static bool op_reads(const struct ir_op *op, ir_tid t)
{
    int cap = ir_op_reads(op, NULL, 0);
    ir_tid *reads = rules_xmalloc(sizeof *reads * (size_t)(cap + 1));
    int n = ir_op_reads(op, reads, cap);
    bool found = false;
    for (int k = 0; k < n && !found; k++)
        found = reads[k] == t;
    free(reads);
    return found;
}

/* Whether op writes t. */
static bool op_writes(const struct ir_op *op, ir_tid t)
{
    int cap = ir_op_writes(op, NULL, 0);
    ir_tid *writes = rules_xmalloc(sizeof *writes * (size_t)(cap + 1));
    int n = ir_op_writes(op, writes, cap);
    bool found = false;
    for (int k = 0; k < n && !found; k++)
        found = writes[k] == t;
    free(writes);
    return found;
}

/* Two independent plain norms of one row shape as one op: the later moves up to the earlier past nothing it sees. */
static void apply_dual_norm(struct rules_rewriter *r)
{
    for (int32_t i = 0; i < ir_slots_len(r->s); i++) {
        const struct ir_op *op = rules_slot(r, i);
        struct rules_norm_form a;
        if (!op || !plain_norm(op, &a))
            continue;
        for (int32_t j = i + 1; j < ir_slots_len(r->s); j++) {
            const struct ir_op *later = rules_slot(r, j);
            struct rules_norm_form b;
            if (!later || !plain_norm(later, &b) || b.rows != a.rows || b.cols != a.cols || op_reads(later, a.out))
                continue;
            int32_t members[2] = {i, j};
            if (!members_hold(r, members, 2))
                continue;
            rules_fold(r, IR_CLASS_DUAL_NORM, members, 2, i, a.out, op->dst);
            break;
        }
    }
}

const struct rules_rule rules_rule_dual_norm = {
    "dual_norm", RULES_GROUP, builds_dual_norm, 1, apply_dual_norm, guards_dual_norm, NGUARDS(guards_dual_norm),
    RULES_MOTION_HOIST_TO_FIRST,
    "two independent plain norms of one row shape run as one op: the later moves up to the earlier past nothing that "
    "writes what it reads or touches what it writes"};

/* ── embed_norm ──────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_embed_norm[] = {IR_CLASS_EMBED_NORM};

/* The norm (consumer) moves up to the gather (producer): the norm is the gathered rows' first reader and crosses
 * nothing that writes what it reads or touches what it writes; the rows stay written for later readers. */
static const struct rules_atom guards_embed_norm[] = {
    {.name = "first_reader", .kind = RULES_ATOM_FIRST_READER, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
    ATOM_NO_CROSS(RULES_FROM_SEED),
};

/* Whether op gathers rows of a model weight into its own buffer: rows by index, one row by a named index, or a
 * gather with its scale folded in. */
static bool embedding_gather(const struct rules_rewriter *r, const struct ir_op *op)
{
    bool gather = rules_is(op, IR_KIND_ROWS_GATHER) ||
                  (rules_is(op, IR_KIND_ROW_GATHER) && op->spec.u.row_gather.index.kind == IR_RIDX_NAMED) ||
                  rules_class(op) == IR_CLASS_EMBED_SCALE;
    return gather && op->nins >= 1 && ir_dst_is_own(&op->dst) &&
           rules_weights_of(r->g, op->ins[0]).kind != RULES_W_NONE;
}

/* Whether the op at slot j is a lifted plain norm of the tensor ctx points at. */
static bool norms_whole(const struct rules_rewriter *r, int32_t j, const void *ctx)
{
    struct rules_norm_form n;
    return plain_norm(rules_slot(r, j), &n) && n.x == *(const ir_tid *)ctx;
}

/* The embedding's gathered rows and the first norm of them as one op: the norm moves up past nothing it sees. */
static void apply_embed_norm(struct rules_rewriter *r)
{
    for (int32_t i = 0; i < ir_slots_len(r->s); i++) {
        const struct ir_op *op = rules_slot(r, i);
        if (!op || !embedding_gather(r, op))
            continue;
        ir_tid x = op->out;
        int32_t j = reader_where(r, x, norms_whole, &x);
        if (j < 0 || !pair_holds(r, i, j, x))
            continue;
        int32_t members[2] = {i, j};
        const struct ir_op *nop = rules_slot(r, j);
        rules_fold(r, IR_CLASS_EMBED_NORM, members, 2, i, nop->out, nop->dst);
    }
}

const struct rules_rule rules_rule_embed_norm = {
    "embed_norm", RULES_GROUP, builds_embed_norm, 1, apply_embed_norm, guards_embed_norm, NGUARDS(guards_embed_norm),
    RULES_MOTION_HOIST_TO_PRODUCER,
    "an embedding gather and the first norm of its rows run as one op: the norm is the rows' first reader and moves "
    "up past nothing that writes what it reads or touches what it writes"};

/* ── gemv_norm_epilogue, prefill_norm_epilogues ──────────────────────────────────────────────────────────── */

static const enum ir_class builds_gemv_norm_epilogue[] = {IR_CLASS_GEMV_NORM_EPILOGUE};
static const enum ir_class builds_prefill_norm_epilogues[] = {IR_CLASS_PREFILL_NORM_EPILOGUES};

/* The product (producer) moves down to the add-and-norm (consumer): legal when the add-and-norm is the product's
 * one reader and the product sinks past nothing that writes what it reads or touches what it writes. */
static const struct rules_atom guards_gemv_norm_epilogue[] = {
    ATOM_ONLY_READER(RULES_FROM_SEED),
    ATOM_NO_SINK_PAST(RULES_FROM_SEED),
};
static const struct rules_atom guards_prefill_norm_epilogues[] = {
    ATOM_ONLY_READER(RULES_FROM_SEED),
    ATOM_NO_SINK_PAST(RULES_FROM_SEED),
};

/* A product of `one_row` (m = 1) or of several rows (m > 1) whose whole result is a summand of an add-and-norm (or
 * a norm-then-add), folded into it as cls: the product sinks past nothing it sees. */
static void norm_epilogues(struct rules_rewriter *r, enum ir_class cls, bool one_row)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *op = rules_slot(r, j);
        int c = op ? rules_class(op) : -1;
        if ((c != IR_CLASS_ADD_NORM && c != IR_CLASS_NORM_THEN_ADD) || op->nins < 2)
            continue;
        ir_tid summands[2] = {op->ins[0], op->ins[1]};
        for (int s = 0; s < 2; s++) {
            int32_t i = ir_facts_producer(r->s, summands[s]);
            struct rules_gemv_form p;
            if (i < 0 || !rules_gemv(rules_slot(r, i), r->g, &p) || !(one_row ? p.m == 1 : p.m > 1) ||
                !ir_dst_is_own(&p.dst))
                continue;
            if (pair_holds(r, i, j, summands[s]) && rules_pair(r, cls, i, j, j))
                break;
        }
    }
}

/* A one-row product whose whole result is a summand of the next add-and-norm runs with the norm in its epilogue:
 * the product sinks past nothing it sees. */
static void apply_gemv_norm_epilogue(struct rules_rewriter *r)
{
    norm_epilogues(r, IR_CLASS_GEMV_NORM_EPILOGUE, true);
}

/* The same over a chunk's rows: a product of several rows with the add-and-norm in its epilogue. */
static void apply_prefill_norm_epilogues(struct rules_rewriter *r)
{
    norm_epilogues(r, IR_CLASS_PREFILL_NORM_EPILOGUES, false);
}

const struct rules_rule rules_rule_gemv_norm_epilogue = {
    "gemv_norm_epilogue", RULES_GROUP, builds_gemv_norm_epilogue, 1, apply_gemv_norm_epilogue,
    guards_gemv_norm_epilogue, NGUARDS(guards_gemv_norm_epilogue), RULES_MOTION_SINK_TO_CONSUMER,
    "a one-row product whose whole result is a summand of an add-and-norm runs in its place, the residual and norm "
    "in its epilogue: it is the result's one reader and the product sinks past nothing that sees the move"};

const struct rules_rule rules_rule_prefill_norm_epilogues = {
    "prefill_norm_epilogues", RULES_GROUP, builds_prefill_norm_epilogues, 1, apply_prefill_norm_epilogues,
    guards_prefill_norm_epilogues, NGUARDS(guards_prefill_norm_epilogues), RULES_MOTION_SINK_TO_CONSUMER,
    "a product of a chunk's rows whose whole result is a summand of an add-and-norm runs in its place, the norms in "
    "its epilogue: it is the result's one reader and the product sinks past nothing that sees the move"};

/* ── gather_scale ────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_gather_scale[] = {IR_CLASS_EMBED_SCALE};

/* The scale (consumer) moves up to the gather (producer): legal when it is the gathered rows' one reader and
 * crosses nothing that writes what it reads or touches what it writes. */
static const struct rules_atom guards_gather_scale[] = {
    ATOM_ONLY_READER(RULES_FROM_SEED),
    ATOM_NO_CROSS(RULES_ADDED_BY("F13")),
};

/* Whether op gathers rows of a model weight by index (all of them, or one by a named index). */
static bool weight_gather(const struct rules_rewriter *r, const struct ir_op *op)
{
    bool gather = rules_is(op, IR_KIND_ROWS_GATHER) ||
                  (rules_is(op, IR_KIND_ROW_GATHER) && op->spec.u.row_gather.index.kind == IR_RIDX_NAMED);
    return gather && op->nins >= 1 && rules_weights_of(r->g, op->ins[0]).kind != RULES_W_NONE;
}

/* A scale of gathered rows (an embedding's √d) inside the gather: the scale moves up past nothing it sees. */
static void apply_gather_scale(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *op = rules_slot(r, j);
        if (!op || !rules_is(op, IR_KIND_SCALE) || op->nins < 1)
            continue;
        ir_tid x = op->ins[0];
        int32_t i = ir_facts_producer(r->s, x);
        if (i < 0 || !weight_gather(r, rules_slot(r, i)) || !pair_holds(r, i, j, x))
            continue;
        const struct ir_op *gop = rules_slot(r, i);
        const struct ir_op *parts[2] = {gop, op};
        ir_tid out = op->out;
        ir_tid *ins;
        struct ir_access *access;
        int32_t nins = copy_operands(gop, &ins, &access);
        struct ir_op cand = rules_candidate(IR_CLASS_EMBED_SCALE, parts, 2, ins, nins, out, ir_dst_own(out));
        bool ok = rules_admits(r, &cand);
        ir_op_free(&cand);
        if (ok)
            rules_fuse(r, IR_CLASS_EMBED_SCALE, i, &j, 1, ins, access, nins, out, ir_dst_own(out));
        free(ins);
        free(access);
    }
}

const struct rules_rule rules_rule_gather_scale = {
    "gather_scale", RULES_GROUP, builds_gather_scale, 1, apply_gather_scale, guards_gather_scale,
    NGUARDS(guards_gather_scale), RULES_MOTION_HOIST_TO_PRODUCER,
    "a scale of gathered weight rows runs inside the gather: the scale is the rows' one reader and moves up past "
    "nothing that writes what it reads or touches what it writes"};

/* ── gemv_bias ───────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_gemv_bias[] = {IR_CLASS_GEMM_BIAS};

/* The add (consumer) moves up to the product (producer): legal when it is the product's one reader and crosses
 * nothing that writes what it reads or touches what it writes (the bias is a constant, never written). */
static const struct rules_atom guards_gemv_bias[] = {
    ATOM_ONLY_READER(RULES_FROM_SEED),
    ATOM_NO_CROSS(RULES_ADDED_BY("F6")),
};

/* A constant bias added to a product's every row, the add's first operand, inside the product: the add moves up
 * past nothing it sees. */
static void apply_gemv_bias(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *op = rules_slot(r, j);
        struct rules_binary_form b;
        if (!op || !rules_binary(op, &b) || b.op != IR_EW_ADD || b.gated)
            continue;
        int32_t i = ir_facts_producer(r->s, b.a);
        struct rules_gemv_form p;
        if (i < 0 || !rules_gemv(rules_slot(r, i), r->g, &p))
            continue;
        int64_t len = b.row ? b.row : b.n;
        bool fits = constant_row(r->g, b.b, len) && p.bias == IR_NONE && p.dst.row == IR_ROWSEL_NONE && len == p.n;
        if (!fits || !pair_holds(r, i, j, b.a))
            continue;
        const struct ir_op *pop = rules_slot(r, i);
        ir_tid ins[3] = {p.x, p.w, b.b};
        struct ir_access access[3] = {pop->access[0], {0}, {0}};
        const struct ir_op *parts[2] = {pop, op};
        struct ir_op cand = rules_candidate(IR_CLASS_GEMM_BIAS, parts, 2, ins, 3, b.out, ir_dst_own(b.out));
        bool ok = rules_admits(r, &cand);
        ir_op_free(&cand);
        if (ok)
            rules_fuse(r, IR_CLASS_GEMM_BIAS, i, &j, 1, ins, access, 3, b.out, ir_dst_own(b.out));
    }
}

const struct rules_rule rules_rule_gemv_bias = {
    "gemv_bias", RULES_GROUP, builds_gemv_bias, 1, apply_gemv_bias, guards_gemv_bias, NGUARDS(guards_gemv_bias),
    RULES_MOTION_HOIST_TO_PRODUCER,
    "a constant bias added to a product's every row runs inside the product: the add is the product's one reader and "
    "moves up past nothing that writes what it reads or touches what it writes"};

/* ── gemm_scale ──────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_gemm_scale[] = {IR_CLASS_GEMM_SCALE};

/* The scale (consumer) moves up to the product (producer), then a bias add after it likewise: each is its
 * producer's one reader and crosses nothing that writes what it reads or touches what it writes. */
static const struct rules_atom guards_gemm_scale[] = {
    ATOM_ONLY_READER(RULES_FROM_SEED),
    ATOM_NO_CROSS(RULES_FROM_SEED),
};

/* What a bias after a product's scale must be: the scaled result y, its length n, the product's width. */
struct bias_want {
    ir_tid y;
    int64_t n, width;
};

/* Whether the op at slot k adds a constant row of the product's width to y's every row (or to its one row). */
static bool adds_bias(const struct rules_rewriter *r, int32_t k, const void *ctx)
{
    const struct bias_want *w = ctx;
    struct rules_binary_form b;
    if (!rules_binary(rules_slot(r, k), &b) || b.op != IR_EW_ADD || b.gated)
        return false;
    ir_tid bias = b.a == w->y ? b.b : b.a;
    return (b.row || b.n == w->n) && (b.row ? b.row : w->width) == w->width &&
           constant_row(r->g, bias, b.row ? b.row : b.n);
}

/* A scalar (or per-column) scale of a product's whole result in the product's epilogue, then a constant bias after
 * the scale: each moves up past nothing it sees. */
static void apply_gemm_scale(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *op = rules_slot(r, j);
        ir_tid x;
        int64_t n;
        if (!op || !(scale_of(op, &x, &n) || column_scale(r, op, &x, &n)))
            continue;
        int32_t i = ir_facts_producer(r->s, x);
        struct rules_gemv_form p;
        if (i < 0 || !rules_gemv(rules_slot(r, i), r->g, &p) || !ir_dst_is_own(&p.dst) || p.n * p.m != n)
            continue;
        if (!pair_holds(r, i, j, x) || !rules_pair(r, IR_CLASS_GEMM_SCALE, i, j, i))
            continue;
        struct bias_want want = {rules_slot(r, i)->out, n, p.n};
        int32_t k = reader_where(r, want.y, adds_bias, &want);
        if (k >= 0 && pair_holds(r, i, k, want.y))
            rules_pair(r, IR_CLASS_GEMM_SCALE, i, k, i);
    }
}

const struct rules_rule rules_rule_gemm_scale = {
    "gemm_scale", RULES_GROUP, builds_gemm_scale, 1, apply_gemm_scale, guards_gemm_scale, NGUARDS(guards_gemm_scale),
    RULES_MOTION_HOIST_TO_PRODUCER,
    "a scale of a product's whole result, and a constant bias after it, run in the product's epilogue: each is its "
    "producer's one reader and moves up past nothing that writes what it reads or touches what it writes"};

/* ── affine_input_fold ───────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_affine_input_fold[] = {IR_CLASS_AFFINE_INPUT_FOLD};

/* The scale (producer) moves down to the product (consumer): legal when the product is the scaled tensor's one
 * reader and the scale sinks past nothing that writes what it reads or touches what it writes. */
static const struct rules_atom guards_affine_input_fold[] = {
    ATOM_ONLY_READER(RULES_FROM_SEED),
    ATOM_NO_SINK_PAST(RULES_FROM_SEED),
};

/* A scaled tensor and its length, as a product must read it. */
struct scaled_input {
    ir_tid s;
    int64_t n;
};

/* Whether the op at slot j is a product reading the scaled tensor ctx describes whole as its activation. */
static bool projects_scaled(const struct rules_rewriter *r, int32_t j, const void *ctx)
{
    const struct scaled_input *w = ctx;
    const struct ir_op *op = rules_slot(r, j);
    struct rules_gemv_form p;
    return rules_gemv(op, r->g, &p) && p.x == w->s && !op->access[0].strided && p.k * p.m == w->n;
}

/* A scalar scale of a product's activation folded into the product's input: the scale sinks past nothing it sees. */
static void apply_affine_input_fold(struct rules_rewriter *r)
{
    for (int32_t i = 0; i < ir_slots_len(r->s); i++) {
        const struct ir_op *op = rules_slot(r, i);
        struct scaled_input want;
        ir_tid x;
        if (!op || !scale_of(op, &x, &want.n))
            continue;
        want.s = op->out;
        int32_t j = reader_where(r, want.s, projects_scaled, &want);
        if (j >= 0 && pair_holds(r, i, j, want.s))
            rules_pair(r, IR_CLASS_AFFINE_INPUT_FOLD, i, j, j);
    }
}

const struct rules_rule rules_rule_affine_input_fold = {
    "affine_input_fold", RULES_GROUP, builds_affine_input_fold, 1, apply_affine_input_fold, guards_affine_input_fold,
    NGUARDS(guards_affine_input_fold), RULES_MOTION_SINK_TO_CONSUMER,
    "a scalar scale of a product's activation folds into the product's input: the product is the scaled tensor's one "
    "reader and the scale sinks past nothing that writes what it reads or touches what it writes"};

/* ── glu_pair ────────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_glu_pair[] = {IR_CLASS_GEMV_GATE_UP_GLU};

/* Both products (members) move down to the gate (anchor): the gate is each product's one reader, and every member
 * sinks past nothing outside the group that writes what it reads (the shared activation above all) or touches what
 * it writes. */
static const struct rules_atom guards_glu_pair[] = {
    {.name = "only_reader_gate", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_ANCHOR,
     RULES_FROM_SEED},
    {.name = "only_reader_up", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_OTHER, .a = RULES_ROLE_ANCHOR,
     RULES_FROM_SEED},
    {.name = "no_sink_past", .kind = RULES_ATOM_NO_SINK_PAST, .a = RULES_ROLE_EACH, .b = RULES_ROLE_ANCHOR,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_WIDENED_BY("F16")},
};

/* The gate and up operands of a gated product, and its length: a SwiGLU, or a product with the activation of its
 * second operand folded in. */
static bool gated_operands(const struct ir_op *op, ir_tid *gate, ir_tid *up, int64_t *len)
{
    struct rules_binary_form b;
    if (rules_is(op, IR_KIND_SWIGLU) && ir_dst_is_own(&op->dst) && op->nins >= 2) {
        *gate = op->ins[0];
        *up = op->ins[1];
        *len = op->spec.u.swiglu.total;
        return true;
    }
    if (!rules_binary(op, &b) || b.op != IR_EW_MUL || !b.gated || b.row)
        return false;
    *gate = b.b;
    *up = b.a;
    *len = b.n;
    return true;
}

/* Whether two products are of one activation, one shape and `len` values, each into its own buffer. */
static bool twin_products(const struct rules_gemv_form *g, const struct rules_gemv_form *u, int64_t len)
{
    return g->x == u->x && g->k == u->k && g->n == u->n && g->m == u->m && g->m * g->n == len &&
           ir_dst_is_own(&g->dst) && ir_dst_is_own(&u->dst);
}

/* Bind the gated pair's roles and ask its guards. */
static bool glu_holds(const struct rules_rewriter *r, const int32_t members[3], ir_tid gate, ir_tid up)
{
    int32_t sorted[3] = {members[0], members[1], members[2]};
    for (int a = 0; a < 3; a++)
        for (int b = a + 1; b < 3; b++)
            if (sorted[b] < sorted[a]) {
                int32_t t = sorted[a];
                sorted[a] = sorted[b];
                sorted[b] = t;
            }
    struct rules_binding b = rules_binding_empty();
    b.slot[RULES_ROLE_ANCHOR] = members[2];
    b.tensor[RULES_ROLE_RESULT] = gate;
    b.tensor[RULES_ROLE_OTHER] = up;
    b.set[RULES_ROLE_MEMBERS] = sorted;
    b.nset[RULES_ROLE_MEMBERS] = 3;
    return rules_guards_hold(r, r->rule, &b, NULL);
}

/* Fold the gate and up products at pg, pu into the gate at j as one gated pair, when the chip runs it whole. */
static void fold_glu(struct rules_rewriter *r, int32_t pg, int32_t pu, int32_t j, const struct rules_gemv_form *fg,
                     const struct rules_gemv_form *fu)
{
    const struct ir_op *op = rules_slot(r, j);
    ir_tid ins[5] = {fg->x, fg->w, fu->w};
    struct ir_access access[5] = {rules_slot(r, pg)->access[0], {0}, {0}, {0}, {0}};
    int32_t nins = 3;
    if (fg->bias != IR_NONE)
        ins[nins++] = fg->bias;
    if (fu->bias != IR_NONE)
        ins[nins++] = fu->bias;
    ir_tid out = op->out;
    const struct ir_op *parts[3] = {rules_slot(r, pg), rules_slot(r, pu), op};
    struct ir_op cand = rules_candidate(IR_CLASS_GEMV_GATE_UP_GLU, parts, 3, ins, nins, out, ir_dst_own(out));
    bool ok = rules_admits(r, &cand);
    ir_op_free(&cand);
    if (!ok)
        return;
    int32_t gone[2] = {pg, pu};
    rules_fuse(r, IR_CLASS_GEMV_GATE_UP_GLU, j, gone, 2, ins, access, nins, out, ir_dst_own(out));
}

/* A gated pair, two products of one activation and the gate between them, as one op at the gate's place: both
 * products sink past nothing they see (the activation still holds there). */
static void apply_glu_pair(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *op = rules_slot(r, j);
        ir_tid g, u;
        int64_t len;
        if (!op || !gated_operands(op, &g, &u, &len))
            continue;
        int32_t pg = ir_facts_producer(r->s, g), pu = ir_facts_producer(r->s, u);
        struct rules_gemv_form fg, fu;
        if (pg < 0 || pu < 0 || pg == pu || !rules_gemv(rules_slot(r, pg), r->g, &fg) ||
            !rules_gemv(rules_slot(r, pu), r->g, &fu) || !twin_products(&fg, &fu, len))
            continue;
        int32_t members[3] = {pg, pu, j};
        if (glu_holds(r, members, g, u))
            fold_glu(r, pg, pu, j, &fg, &fu);
    }
}

const struct rules_rule rules_rule_glu_pair = {
    "glu_pair", RULES_GROUP, builds_glu_pair, 1, apply_glu_pair, guards_glu_pair, NGUARDS(guards_glu_pair),
    RULES_MOTION_GROUP_AT_LAST,
    "a gate and an up product of one activation run with their gate as one op at the gate's place: the gate is each "
    "product's one reader and each product sinks past nothing that writes what it reads or touches what it writes"};

/* ── act_gate ────────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_act_gate[] = {IR_CLASS_GLU_ACT_MUL};

/* The activation (producer) moves down to the product it gates (consumer): legal when the product is the
 * activation's one reader and the activation sinks past nothing that writes what it reads or touches what it
 * writes. */
static const struct rules_atom guards_act_gate[] = {
    ATOM_ONLY_READER(RULES_FROM_SEED),
    ATOM_NO_SINK_PAST(RULES_ADDED_BY("F12")),
};

/* The slot of a lifted activation (SiLU, sigmoid, GeLU) before the product at j computing t whose guards with the
 * product hold, or -1. (An activation after the product writes a state gate the product read the old value of: it is
 * no producer of what the product reads.) */
static int32_t gating_activation(const struct rules_rewriter *r, ir_tid t, int32_t j)
{
    int32_t i = ir_facts_producer(r->s, t);
    if (i < 0 || (i >= j && !rules_seed_rules()) || rules_activation(rules_slot(r, i)) < 0 ||
        rules_class(rules_slot(r, i)) >= 0)
        return -1;
    return pair_holds(r, i, j, t) ? i : -1;
}

/* An activation inside the product it gates (either factor may be the activation's; both may be, a square, as the
 * seed takes it: the fold then computes the other factor itself): the activation sinks past nothing it sees. */
static void apply_act_gate(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *op = rules_slot(r, j);
        struct rules_binary_form b;
        if (!op || !rules_binary(op, &b) || b.op != IR_EW_MUL || b.gated || b.row || rules_class(op) >= 0)
            continue;
        int other_k = 0;
        ir_tid other = b.a;
        int32_t i = gating_activation(r, b.b, j);
        if (i < 0) {
            other_k = 1;
            other = b.b;
            i = gating_activation(r, b.a, j);
        }
        if (i < 0)
            continue;
        const struct ir_op *aop = rules_slot(r, i);
        ir_tid ins[2] = {other, aop->ins[0]};
        struct ir_access access[2] = {op->access[other_k], aop->access[0]};
        const struct ir_op *parts[2] = {aop, op};
        struct ir_op cand = rules_candidate(IR_CLASS_GLU_ACT_MUL, parts, 2, ins, 2, b.out, ir_dst_own(b.out));
        bool ok = rules_admits(r, &cand);
        ir_op_free(&cand);
        if (ok)
            rules_fuse(r, IR_CLASS_GLU_ACT_MUL, j, &i, 1, ins, access, 2, b.out, ir_dst_own(b.out));
    }
}

const struct rules_rule rules_rule_act_gate = {
    "act_gate", RULES_GROUP, builds_act_gate, 1, apply_act_gate, guards_act_gate, NGUARDS(guards_act_gate),
    RULES_MOTION_SINK_TO_CONSUMER,
    "an activation runs inside the product it gates: the product is the activation's one reader and the activation "
    "sinks past nothing that writes what it reads or touches what it writes"};

/* ── qkv_head_epilogue ───────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_qkv_head_epilogue[] = {IR_CLASS_QKV_HEAD_EPILOGUE};

/* The product (producer) moves down to the rotation (consumer): legal when the rotation is the product's one reader
 * and the product sinks past nothing that writes what it reads or touches what it writes. */
static const struct rules_atom guards_qkv_head_epilogue[] = {
    ATOM_ONLY_READER(RULES_FROM_SEED),
    ATOM_NO_SINK_PAST(RULES_FROM_SEED),
};

/* A product whose whole result is a rotation's input (its per-head norm folded in or none) runs in the rotation's
 * place, the norm, rotation and cache append in its epilogue: the product sinks past nothing it sees. */
static void apply_qkv_head_epilogue(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *op = rules_slot(r, j);
        struct rules_rope_form ro;
        if (!op || !rules_rope(op, &ro) || ro.has_part)
            continue;
        int32_t i = ir_facts_producer(r->s, ro.x);
        struct rules_gemv_form p;
        if (i < 0 || !rules_gemv(rules_slot(r, i), r->g, &p) || !ir_dst_is_own(&p.dst))
            continue;
        if (pair_holds(r, i, j, ro.x))
            rules_pair(r, IR_CLASS_QKV_HEAD_EPILOGUE, i, j, j);
    }
}

const struct rules_rule rules_rule_qkv_head_epilogue = {
    "qkv_head_epilogue", RULES_GROUP, builds_qkv_head_epilogue, 1, apply_qkv_head_epilogue, guards_qkv_head_epilogue,
    NGUARDS(guards_qkv_head_epilogue), RULES_MOTION_SINK_TO_CONSUMER,
    "a product whose whole result a rotation reads runs in the rotation's place, the rotation in its epilogue: the "
    "rotation is its one reader and the product sinks past nothing that writes what it reads or touches what it "
    "writes"};

/* ── merged_projections (late) ───────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_merged_projections[] = {IR_CLASS_MERGED_QKV};

/* Each later product (each member) moves up to the first one's slot: legal when it crosses no slot outside the
 * group that writes what it reads (the activation above all) or touches what it writes. */
static const struct rules_atom guards_merged_projections[] = {
    {.name = "no_cross", .kind = RULES_ATOM_NO_CROSS, .a = RULES_ROLE_FIRST, .b = RULES_ROLE_EACH,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_FROM_SEED},
};

/* What an op projects: its activation, depth and rows. */
struct projection {
    ir_tid x;
    int64_t k, m;
};

/* The activation, depth and rows an op projects: a product's, or a fused op's whose every product reads that one
 * activation at that one depth, first among its operands. */
static bool projects(const struct ir_op *op, const struct ir_graph *g, struct projection *pr)
{
    struct rules_gemv_form p;
    if (rules_gemv(op, g, &p)) {
        *pr = (struct projection){p.x, p.k, p.m};
        return true;
    }
    if (op->sym != IR_SYM_FUSED || op->nins < 1)
        return false;
    int32_t n = rules_leaves(op, NULL, 0), found = 0;
    const struct ir_op **leaves = rules_xmalloc(sizeof *leaves * (size_t)(n ? n : 1));
    rules_leaves(op, leaves, n);
    bool one = true;
    for (int32_t k = 0; k < n && one; k++) {
        if (!rules_gemv(leaves[k], g, &p))
            continue;
        if (found++ == 0)
            *pr = (struct projection){p.x, p.k, p.m};
        else
            one = p.x == pr->x && p.k == pr->k && p.m == pr->m;
    }
    free(leaves);
    return found > 0 && one && op->ins[0] == pr->x;
}

/* Whether the chip runs the ops at `slots` whole as one merged projection of x, result and place the first one's. */
static bool merge_admitted(struct rules_rewriter *r, const int32_t *slots, int32_t n, ir_tid x)
{
    const struct ir_op *first = rules_slot(r, slots[0]);
    return rules_admits_slots(r, IR_CLASS_MERGED_QKV, slots, n, &x, 1, first->out, first->dst);
}

/* Whether the op at slot j projects what `want` says, reading it as it stands (it does not write the activation). */
static bool same_projection(const struct rules_rewriter *r, int32_t j, const struct projection *want)
{
    const struct ir_op *op = rules_slot(r, j);
    struct projection pr;
    if (!op || op->nins < 1 || op->ins[0] != want->x || !projects(op, r->g, &pr))
        return false;
    return pr.x == want->x && pr.k == want->k && pr.m == want->m && !op_writes(op, want->x);
}

/* Fold the group's products into one merged projection at the first one's slot: the activation, then every
 * member's other operands, each once. */
static void fold_merged(struct rules_rewriter *r, const int32_t *group, int32_t n, ir_tid x)
{
    int32_t room = 1;
    for (int32_t k = 0; k < n; k++)
        room += rules_slot(r, group[k])->nins;
    ir_tid *ins = rules_xmalloc(sizeof *ins * (size_t)room);
    struct ir_access *access = rules_xmalloc(sizeof *access * (size_t)room);
    const struct ir_op *first = rules_slot(r, group[0]);
    int32_t nins = rules_projection_operands(r, group, n, x, ins, access, room);
    ir_tid out = first->out;
    struct ir_dst dst = first->dst;
    rules_fuse(r, IR_CLASS_MERGED_QKV, group[0], group + 1, n - 1, ins, access, nins, out, dst);
    free(ins);
    free(access);
}

/* A step's products of one activation's rows as one op over their outputs side by side, at the first one's place:
 * each later product moves up past nothing it sees; the chip says which it takes together. */
static void apply_merged_projections(struct rules_rewriter *r)
{
    int32_t len = ir_slots_len(r->s);
    int32_t *group = rules_xmalloc(sizeof *group * (size_t)(len + 1));
    int32_t *readers = rules_xmalloc(sizeof *readers * (size_t)(len + 1));
    for (int32_t i = 0; i < len; i++) {
        const struct ir_op *op = rules_slot(r, i);
        struct projection first;
        if (!op || !projects(op, r->g, &first) || !merge_admitted(r, &i, 1, first.x))
            continue;
        int32_t n = 1;
        group[0] = i;
        /* Only a reader of the activation can project it: visit those after i, in slot order. */
        int32_t nreaders = ir_facts_readers(r->s, first.x, readers, len + 1);
        for (int32_t q = 0; q < nreaders; q++) {
            int32_t j = readers[q];
            if (j <= i || !same_projection(r, j, &first))
                continue;
            group[n] = j;
            if (members_hold(r, group, n + 1) && merge_admitted(r, group, n + 1, first.x))
                n++;
        }
        /* The guards once more on the group that fires: a later candidate the chip refused after its guards held
         * must not stand as the binding the firing is checked against (validate-run pairs them). */
        if (n >= 2 && members_hold(r, group, n))
            fold_merged(r, group, n, first.x);
    }
    free(group);
    free(readers);
}

const struct rules_rule rules_rule_merged_projections = {
    "merged_projections", RULES_GROUP, builds_merged_projections, 1, apply_merged_projections,
    guards_merged_projections, NGUARDS(guards_merged_projections), RULES_MOTION_HOIST_TO_FIRST,
    "a step's products of one activation run as one op over their outputs side by side at the first one's place: "
    "each later product moves up past nothing that writes what it reads or touches what it writes"};

/* ── argmax_advance ──────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_argmax_advance[] = {IR_CLASS_FUSED_SAMPLING};

/* The arg-max whose result is the next token becomes the sampling op where it stands: nothing moves. */
static void apply_argmax_advance(struct rules_rewriter *r)
{
    for (int32_t i = 0; i < ir_slots_len(r->s); i++) {
        const struct ir_op *op = rules_slot(r, i);
        if (!op || !rules_is(op, IR_KIND_ARGMAX) || !r->g->tensors[op->out].next)
            continue;
        ir_tid *ins;
        struct ir_access *access;
        int32_t nins = copy_operands(op, &ins, &access);
        ir_tid out = op->out;
        struct ir_dst dst = op->dst;
        /* Nothing goes: the list is empty (a valid pointer, never read). */
        rules_fuse(r, IR_CLASS_FUSED_SAMPLING, i, &i, 0, ins, access, nins, out, dst);
        free(ins);
        free(access);
    }
}

const struct rules_rule rules_rule_argmax_advance = {
    "argmax_advance", RULES_GROUP, builds_argmax_advance, 1, apply_argmax_advance, NULL, 0, RULES_MOTION_IN_PLACE,
    "the arg-max that picks the next token becomes the sampling op that moves the step on, where it stands: nothing "
    "moves"};

/* ── relu_sqr ────────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_relu_sqr[] = {IR_CLASS_RELU_SQR};

/* The square (consumer) moves up to the ReLU (producer): legal when it is the ReLU's one reader and crosses nothing
 * that writes what it reads or touches what it writes. */
static const struct rules_atom guards_relu_sqr[] = {ATOM_ONLY_READER(RULES_FROM_SEED), ATOM_NO_CROSS(RULES_FROM_SEED)};

/* Whether op is a lifted ReLU of n whole values into its own buffer. */
static bool relu_of(const struct ir_op *op, int64_t n)
{
    return rules_is(op, IR_KIND_RELU) && op->spec.u.unary.n == n && ir_dst_is_own(&op->dst) && all_whole(op);
}

/* A ReLU squared, the ReLU's result multiplied by itself, inside the ReLU: the product moves up past nothing it
 * sees. */
static void apply_relu_sqr(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *op = rules_slot(r, j);
        struct rules_binary_form b;
        if (!op || !rules_binary(op, &b) || b.op != IR_EW_MUL || b.gated || b.row || b.a != b.b ||
            rules_class(op) >= 0)
            continue;
        int32_t i = ir_facts_producer(r->s, b.a);
        if (i >= 0 && relu_of(rules_slot(r, i), b.n) && pair_holds(r, i, j, b.a))
            rules_pair(r, IR_CLASS_RELU_SQR, i, j, i);
    }
}

const struct rules_rule rules_rule_relu_sqr = {
    "relu_sqr", RULES_GROUP, builds_relu_sqr, 1, apply_relu_sqr, guards_relu_sqr, NGUARDS(guards_relu_sqr),
    RULES_MOTION_HOIST_TO_PRODUCER,
    "a ReLU squared runs inside the ReLU: the product of its result with itself is the result's one reader and "
    "moves up past nothing that writes what it reads or touches what it writes"};
