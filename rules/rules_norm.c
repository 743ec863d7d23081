/* rules/rules_norm.c — the norm rules: a residual add folded into the norm that reads it, and a norm folded into
 * the add or norm its result feeds. */
#include "rules.h"

#include <stdlib.h>

static const enum ir_class builds_add_norm[] = {IR_CLASS_ADD_NORM};
static const enum ir_class builds_norm_then_add[] = {IR_CLASS_NORM_THEN_ADD};

/* ── add_norm ────────────────────────────────────────────────────────────────────────────────────────────── */

/* The add (producer) moves down to the norm (consumer): legal when the norm is the sum's first reader (nothing
 * between reads it) and nothing between writes either summand or the sum (a state sum may be overwritten). */
static const struct rules_atom guards_add_norm[] = {
    {.name = "first_reader", .kind = RULES_ATOM_FIRST_READER, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
    {.name = "untouched_a", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_INPUT, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_CONSUMER, RULES_ADDED_BY("F5")},
    {.name = "untouched_b", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_OTHER, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_CONSUMER, RULES_ADDED_BY("F5")},
    {.name = "untouched_result", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_CONSUMER, RULES_ADDED_BY("F1")},
};

/* The first slot after i reading t whose op is a lifted RMS norm of t whole, without an add, of n values (a state
 * sum read before the add reads the old value: that reader is no consumer; the seed's rules take it, F2). */
static int32_t norm_reader(const struct rules_rewriter *r, int32_t i, ir_tid t, int64_t n, struct rules_norm_form *f)
{
    int32_t count = rules_reader_count(r, t);
    int32_t *readers = malloc(sizeof *readers * (size_t)(count ? count : 1));
    if (!readers)
        abort();
    ir_facts_readers(r->s, t, readers, count);
    int32_t found = -1;
    for (int32_t k = 0; k < count && found < 0; k++) {
        const struct ir_op *op = rules_slot(r, readers[k]);
        if ((readers[k] > i || rules_seed_rules()) && rules_norm(op, f) && f->x == t && !f->has_part &&
            f->add == IR_NONE && f->rows * f->cols == n && rules_class(op) < 0)
            found = readers[k];
    }
    free(readers);
    return found;
}

/* A residual add whose sum an RMS norm reads first runs inside the norm, which writes the sum on for later readers. */
static void apply_add_norm(struct rules_rewriter *r)
{
    for (int32_t i = 0; i < ir_slots_len(r->s); i++) {
        const struct ir_op *op = rules_slot(r, i);
        struct rules_binary_form b;
        if (!op || !rules_binary(op, &b) || b.op != IR_EW_ADD || b.gated || b.row)
            continue;
        struct rules_norm_form n;
        int32_t j = norm_reader(r, i, b.out, b.n, &n);
        if (j < 0)
            continue;
        const struct ir_op *nop = rules_slot(r, j);
        struct rules_binding bind = rules_binding_empty();
        bind.slot[RULES_ROLE_PRODUCER] = i;
        bind.slot[RULES_ROLE_CONSUMER] = j;
        bind.tensor[RULES_ROLE_RESULT] = b.out;
        bind.tensor[RULES_ROLE_INPUT] = b.a;
        bind.tensor[RULES_ROLE_OTHER] = b.b;
        if (!rules_guards_hold(r, r->rule, &bind, NULL))
            continue;
        ir_tid cand_ins[2] = {b.a, b.b};
        const struct ir_op *parts[2] = {op, nop};
        struct ir_op cand = rules_candidate(IR_CLASS_ADD_NORM, parts, 2, cand_ins, 2, n.out, nop->dst);
        bool ok = rules_admits(r, &cand);
        ir_op_free(&cand);
        if (!ok)
            continue;
        ir_tid ins[3] = {b.a, b.b, n.w};
        struct ir_access access[3] = {op->access[0], op->access[1], {0}};
        struct ir_dst dst = nop->dst;
        rules_fuse(r, IR_CLASS_ADD_NORM, j, &i, 1, ins, access, n.w != IR_NONE ? 3 : 2, n.out, dst);
    }
}

const struct rules_rule rules_rule_add_norm = {
    "add_norm", RULES_GROUP, builds_add_norm, 1, apply_add_norm, guards_add_norm, RULES_NGUARDS(guards_add_norm), RULES_MOTION_SINK_TO_CONSUMER,
    "a residual add read first by an RMS norm runs inside the norm, the sum written on: nothing between reads the "
    "sum or writes a summand"};

/* ── sandwich_norm ───────────────────────────────────────────────────────────────────────────────────────── */

/* The inner norm (producer) moves down to the op that reads its result first (consumer): legal when nothing between
 * reads or writes that result or writes the inner norm's input, and the host does not keep the result across steps. */
static const struct rules_atom guards_sandwich_norm[] = {
    {.name = "first_reader", .kind = RULES_ATOM_FIRST_READER, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
    {.name = "not_carried", .kind = RULES_ATOM_NOT_CARRIED, .t = RULES_ROLE_RESULT, RULES_ADDED_BY("F4")},
    {.name = "untouched_input", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_INPUT, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_CONSUMER, RULES_FROM_SEED},
    {.name = "untouched_result", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_CONSUMER, RULES_ADDED_BY("F1")},
};

/* Whether no slot writes t (or there is no t): a weight the norm may carry anywhere. */
static bool unwritten(const struct rules_rewriter *r, ir_tid t)
{
    return t == IR_NONE || ir_facts_untouched(r->s, t, -1, ir_slots_len(r->s), false, NULL, 0);
}

/* The slot before j of a plain RMS norm (no part, no add, its own buffer, lifted) of rows × cols computing t — read
 * by nothing else when not `later`, its weight written by no slot — or -1 (a state result written after j is no
 * producer of what j reads). Whether slot j reads it first is a guard. */
static int32_t plain_norm(const struct rules_rewriter *r, int32_t j, ir_tid t, int64_t rows, int64_t cols, bool later)
{
    int32_t i = ir_facts_producer(r->s, t);
    bool seed = rules_seed_rules(); /* the seed takes any producer, its weight unasked (F2) */
    if (i >= j && !seed)
        return -1;
    const struct ir_op *op = i >= 0 ? rules_slot(r, i) : NULL;
    struct rules_norm_form n;
    if (!op || !rules_norm(op, &n))
        return -1;
    bool fits = n.out == t && !n.has_part && n.add == IR_NONE && !n.pre && !n.sum && n.own && rules_class(op) < 0 &&
                n.rows == rows && n.cols == cols && (seed || unwritten(r, n.w));
    return fits && (later || rules_reader_count(r, t) == 1) ? i : -1;
}

/* Bind the sandwich's roles and ask its guards. */
static bool sandwich_guards(const struct rules_rewriter *r, int32_t i, int32_t j, ir_tid result, ir_tid input)
{
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_PRODUCER] = i;
    bind.slot[RULES_ROLE_CONSUMER] = j;
    bind.tensor[RULES_ROLE_RESULT] = result;
    bind.tensor[RULES_ROLE_INPUT] = input;
    return rules_guards_hold(r, r->rule, &bind, NULL);
}

/* Fold the inner norm at i into the op at j as a norm-then-add: operands the kept side, the inner norm's input and
 * the weights; result and destination the op at j's, when the chip runs it whole. */
static void fold_sandwich(struct rules_rewriter *r, int32_t i, int32_t j, ir_tid kept, struct ir_access kept_access,
                          const struct rules_norm_form *inner, ir_tid outer_w)
{
    const struct ir_op *iop = rules_slot(r, i), *jop = rules_slot(r, j);
    ir_tid cand_ins[2] = {kept, inner->x};
    const struct ir_op *parts[2] = {iop, jop};
    struct ir_op cand = rules_candidate(IR_CLASS_NORM_THEN_ADD, parts, 2, cand_ins, 2, jop->out, jop->dst);
    bool ok = rules_admits(r, &cand);
    ir_op_free(&cand);
    if (!ok)
        return;
    ir_tid ins[4] = {kept, inner->x};
    struct ir_access access[4] = {kept_access, iop->access[0], {0}, {0}};
    int32_t n = 2;
    if (inner->w != IR_NONE)
        ins[n++] = inner->w;
    if (outer_w != IR_NONE)
        ins[n++] = outer_w;
    ir_tid out = jop->out;
    struct ir_dst dst = jop->dst;
    rules_fuse(r, IR_CLASS_NORM_THEN_ADD, j, &i, 1, ins, access, n, out, dst);
}

/* A norm of a sum whose added operand (or input) is a plain norm's whole result read by nothing else: the inner
 * norm runs inside the outer one. */
static void sandwich_norms(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *op = rules_slot(r, j);
        struct rules_norm_form outer;
        if (!op || !rules_norm(op, &outer) || outer.add == IR_NONE || outer.pre)
            continue;
        int32_t i = plain_norm(r, j, outer.add, outer.rows, outer.cols, false);
        ir_tid kept = outer.x;
        struct ir_access kept_access = op->access[0];
        if (i < 0 && !outer.has_part) {
            i = plain_norm(r, j, outer.x, outer.rows, outer.cols, false);
            kept = outer.add;
            kept_access = (struct ir_access){0};
        }
        if (i < 0)
            continue;
        struct rules_norm_form inner;
        rules_norm(rules_slot(r, i), &inner);
        if (sandwich_guards(r, i, j, inner.out, inner.x))
            fold_sandwich(r, i, j, kept, kept_access, &inner, outer.w);
    }
}

/* Whether the add at j takes t's norm as its normed summand, as the seed picks one: j reads t first (while the
 * first_reader atom is active, which says the same), and t has no other reader or is not carried. */
static bool summand_picked(const struct rules_rewriter *r, ir_tid t, int32_t j)
{
    int32_t count = rules_reader_count(r, t);
    int32_t *readers = malloc(sizeof *readers * (size_t)(count ? count : 1));
    if (!readers)
        abort();
    ir_facts_readers(r->s, t, readers, count);
    bool first = count >= 1 && (readers[0] == j || !rules_atom_active(r->rule, "first_reader"));
    bool picked = first && (count == 1 || !ir_facts_carried(r->s, t));
    free(readers);
    return picked;
}

/* A plain norm whose whole result is one summand of an add (no norm follows it), read first by the add: the add
 * in the norm's row op, the sum its result, the norm's result written on for later readers. The first summand
 * picked is the only one tried, as in the seed. */
static void norm_then_adds(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *op = rules_slot(r, j);
        struct rules_binary_form b;
        if (!op || !rules_binary(op, &b) || b.op != IR_EW_ADD || b.gated || b.row || !ir_dst_is_own(&op->dst))
            continue;
        /* Either summand may be the normed one: the first picked; when its guards fail the add stays. */
        ir_tid sides[2][2] = {{b.b, b.a}, {b.a, b.b}};
        for (int s = 0; s < 2; s++) {
            int32_t p = ir_facts_producer(r->s, sides[s][0]);
            struct rules_norm_form inner;
            if (p < 0 || !rules_norm(rules_slot(r, p), &inner) || inner.rows * inner.cols != b.n)
                continue;
            int32_t i = plain_norm(r, j, sides[s][0], inner.rows, inner.cols, true);
            ir_tid kept = sides[s][1];
            if (i < 0 || !summand_picked(r, sides[s][0], j))
                continue;
            if (kept == inner.out || !sandwich_guards(r, i, j, inner.out, inner.x))
                break;
            struct ir_access kept_access = kept == b.a ? op->access[0] : op->access[1];
            fold_sandwich(r, i, j, kept, kept_access, &inner, IR_NONE);
            break;
        }
    }
}

/* Both sandwich forms, the norm-of-a-sum first. */
static void apply_sandwich_norm(struct rules_rewriter *r)
{
    sandwich_norms(r);
    norm_then_adds(r);
}

const struct rules_rule rules_rule_sandwich_norm = {
    "sandwich_norm", RULES_GROUP, builds_norm_then_add, 1, apply_sandwich_norm, guards_sandwich_norm, RULES_NGUARDS(guards_sandwich_norm),
    RULES_MOTION_SINK_TO_CONSUMER,
    "a plain norm whose result an add or a norm of a sum reads first runs inside it: nothing between reads that "
    "result or writes the norm's input"};
