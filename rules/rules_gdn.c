/* rules/rules_gdn.c — the rules over Gated DeltaNet shapes: a convolution's epilogues and its step's convolutions as
 * one op; the delta rule's gates, their projections, its inputs' preparation and its whole step.
 *
 * Every matcher finds a shape and binds roles; whether moving the members is legal is decided by the rule's guard
 * atoms alone. Where a group grows by "what is made only for it", the growth asks the rule's own `made_for` atom, so
 * the atom (and a build that drops it) decides the growth as it decides the final group. */
#include "rules.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ── Helpers ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* Every operand of the ops at `slots`, in order, repeats kept (an op over its members' operands as they stand);
 * returns the count, the arrays malloc'd into *ins and *access. */
static int32_t flat_operands(const struct rules_rewriter *r, const int32_t *slots, int32_t n, ir_tid **ins,
                             struct ir_access **access)
{
    int32_t count = 0;
    for (int32_t i = 0; i < n; i++)
        count += rules_slot(r, slots[i])->nins;
    *ins = rules_xmalloc(sizeof **ins * (size_t)(count ? count : 1));
    *access = rules_xmalloc(sizeof **access * (size_t)(count ? count : 1));
    count = 0;
    for (int32_t i = 0; i < n; i++) {
        const struct ir_op *op = rules_slot(r, slots[i]);
        for (int32_t k = 0; k < op->nins; k++) {
            (*ins)[count] = op->ins[k];
            (*access)[count] = op->access[k];
            count++;
        }
    }
    return count;
}

/* ── conv_silu, conv_silu_l2 ─────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_conv_silu[] = {IR_CLASS_CONV_BIAS_SILU};
static const enum ir_class builds_conv_silu_l2[] = {IR_CLASS_CONV_SILU_L2NORM};

/* The convolution's reader (consumer) moves up to the convolution (producer): legal when it crosses no slot that
 * writes what it reads or touches what it writes; the convolution's result has no other reader. */
static const struct rules_atom guards_conv_epilogue[] = {
    {.name = "only_reader", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
    {.name = "no_cross", .kind = RULES_ATOM_NO_CROSS, .a = RULES_ROLE_PRODUCER, .b = RULES_ROLE_CONSUMER,
     RULES_ADDED_BY("F10")},
};

/* Whether op is a lifted SiLU of t. */
static bool silu_of(const struct ir_op *op, ir_tid t, const void *ctx)
{
    (void)ctx;
    return rules_activation(op) == (int)IR_KIND_SILU && op->nins >= 1 && op->ins[0] == t;
}

/* Whether op is a lifted L2 norm of t over as many values as the convolution (ctx: its form) computes. */
static bool l2_of(const struct ir_op *op, ir_tid t, const void *ctx)
{
    const struct rules_conv_form *c = ctx;
    if (!rules_is(op, IR_KIND_L2_NORM) || op->nins < 1 || op->ins[0] != t)
        return false;
    int64_t n = rules_size_mul(op->spec.u.l2_norm.rows, op->spec.u.l2_norm.cols);
    return n >= 0 && n == rules_size_mul(c->chan, c->rows);
}

/* Fold the reader at j of the convolution at i into the convolution's epilogue as one op of cls at i, over the
 * convolution's operands, when the guards hold and the chip runs it whole. */
static void conv_epilogue(struct rules_rewriter *r, enum ir_class cls, int32_t i, int32_t j,
                          const struct rules_conv_form *c)
{
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_PRODUCER] = i;
    bind.slot[RULES_ROLE_CONSUMER] = j;
    bind.tensor[RULES_ROLE_RESULT] = c->y;
    if (!rules_guards_hold(r, r->rule, &bind, NULL))
        return;
    ir_tid out = rules_slot(r, j)->out;
    ir_tid ins[3] = {c->x, c->w, c->ring};
    int32_t parts[2] = {i, j};
    if (!rules_admits_slots(r, cls, parts, 2, ins, 3, out, ir_dst_own(out)))
        return;
    struct ir_access access[3] = {rules_slot(r, i)->access[0], {0}, {0}};
    rules_fuse(r, cls, i, &j, 1, ins, access, 3, out, ir_dst_own(out));
}

/* A causal convolution's SiLU, read only by it, in the convolution's epilogue: the SiLU moves up to the convolution
 * past nothing that writes what it reads or touches what it writes. */
static void apply_conv_silu(struct rules_rewriter *r)
{
    for (int32_t i = 0; i < ir_slots_len(r->s); i++) {
        const struct ir_op *op = rules_slot(r, i);
        struct rules_conv_form c;
        if (!op || !rules_conv(op, &c) || c.silu)
            continue;
        int32_t j = rules_reader_such(r, c.y, silu_of, NULL);
        if (j >= 0)
            conv_epilogue(r, IR_CLASS_CONV_BIAS_SILU, i, j, &c);
    }
}

const struct rules_rule rules_rule_conv_silu = {
    "conv_silu", RULES_GROUP, builds_conv_silu, 1, apply_conv_silu, guards_conv_epilogue, 2,
    RULES_MOTION_HOIST_TO_PRODUCER,
    "a causal convolution's SiLU, the result's only reader, runs in the convolution's epilogue: it moves up past "
    "nothing that writes what it reads or touches what it writes"};

/* The per-head L2 norm after a convolution's SiLU, read only by it, in the convolution's epilogue: the norm moves up
 * to the convolution past nothing that writes what it reads or touches what it writes. */
static void apply_conv_silu_l2(struct rules_rewriter *r)
{
    for (int32_t i = 0; i < ir_slots_len(r->s); i++) {
        const struct ir_op *op = rules_slot(r, i);
        struct rules_conv_form c;
        if (!op || !rules_conv(op, &c) || !c.silu || c.l2)
            continue;
        int32_t k = rules_reader_such(r, c.y, l2_of, &c);
        if (k >= 0)
            conv_epilogue(r, IR_CLASS_CONV_SILU_L2NORM, i, k, &c);
    }
}

const struct rules_rule rules_rule_conv_silu_l2 = {
    "conv_silu_l2", RULES_GROUP, builds_conv_silu_l2, 1, apply_conv_silu_l2, guards_conv_epilogue, 2,
    RULES_MOTION_HOIST_TO_PRODUCER,
    "the L2 norm after a convolution's SiLU, the result's only reader, runs in the convolution's epilogue: it moves "
    "up past nothing that writes what it reads or touches what it writes"};

/* ── conv_parts ──────────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_conv_parts[] = {IR_CLASS_CONV_PARTS};

/* Each later convolution moves up to the first one's slot: legal when it crosses no slot outside the group that
 * writes what it reads or touches what it writes. */
static const struct rules_atom guards_conv_parts[] = {
    {.name = "no_cross", .kind = RULES_ATOM_NO_CROSS, .a = RULES_ROLE_FIRST, .b = RULES_ROLE_EACH,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_FROM_SEED},
};

/* Whether the slot holds a convolution (lifted, or with its epilogues folded in). */
static bool conv_at(const struct rules_rewriter *r, int32_t i)
{
    const struct ir_op *op = rules_slot(r, i);
    struct rules_conv_form c;
    return op && rules_conv(op, &c);
}

/* Whether the convolution at j joins the group led by slot `first`: the guards hold with it a member and the chip
 * runs the members whole. */
static bool conv_joins(struct rules_rewriter *r, int32_t first, const struct rules_list *group, int32_t j)
{
    struct rules_list trial = rules_list_with(group, j);
    struct rules_binding bind = rules_group_binding(first, trial.v, trial.n);
    bool ok = rules_guards_hold(r, r->rule, &bind, NULL);
    if (ok) {
        ir_tid *ins;
        struct ir_access *access;
        int32_t nins = flat_operands(r, trial.v, trial.n, &ins, &access);
        ir_tid out = rules_slot(r, first)->out;
        ok = rules_admits_slots(r, IR_CLASS_CONV_PARTS, trial.v, trial.n, ins, nins, out, ir_dst_own(out));
        free(ins);
        free(access);
    }
    rules_list_free(&trial);
    return ok;
}

/* A step's causal convolutions as one op over their channels, each later one moved up to the first one's slot
 * where it crosses nothing; the chip says which it takes together. A later convolution that would cross an operand's
 * writer other than a convolution is passed over unasked while the no_cross atom is in force (it would fail it): a
 * tree of each one's latest other writer finds the candidates without passing every later convolution. */
static void apply_conv_parts(struct rules_rewriter *r)
{
    struct rules_list convs = {0};
    int32_t len = ir_slots_len(r->s);
    bool *is_conv = rules_xmalloc(sizeof *is_conv * (size_t)(len + 1));
    for (int32_t i = 0; i < len; i++) {
        is_conv[i] = conv_at(r, i);
        if (is_conv[i])
            rules_list_push(&convs, i);
    }
    bool early = rules_atom_active(r->rule, "no_cross");
    int32_t *writer = rules_xmalloc(sizeof *writer * (size_t)(convs.n + 1));
    for (int32_t x = 0; x < convs.n; x++)
        writer[x] = early ? rules_last_writer_but(r, convs.v[x], is_conv) : -1;
    struct rules_min_tree wt = rules_min_tree_make(writer, convs.n);
    for (int32_t at = 0; at < convs.n; at++) {
        int32_t i = convs.v[at];
        if (!conv_at(r, i))
            continue;
        struct rules_list group = {0};
        rules_list_push(&group, i);
        for (int32_t x = rules_min_tree_next(&wt, at + 1, i); x >= 0; x = rules_min_tree_next(&wt, x + 1, i))
            if (conv_at(r, convs.v[x]) && conv_joins(r, i, &group, convs.v[x]))
                rules_list_push(&group, convs.v[x]);
        /* The guards once more of the group as it fires: the last binding asked is then the one that moves. */
        struct rules_binding bind = rules_group_binding(i, group.v, group.n);
        if (group.n >= 2 && rules_guards_hold(r, r->rule, &bind, NULL)) {
            ir_tid *ins;
            struct ir_access *access;
            int32_t nins = flat_operands(r, group.v, group.n, &ins, &access);
            ir_tid out = rules_slot(r, i)->out;
            rules_fuse(r, IR_CLASS_CONV_PARTS, i, group.v + 1, group.n - 1, ins, access, nins, out, ir_dst_own(out));
            free(ins);
            free(access);
        }
        rules_list_free(&group);
    }
    rules_min_tree_free(&wt);
    free(writer);
    free(is_conv);
    rules_list_free(&convs);
}

const struct rules_rule rules_rule_conv_parts = {
    "conv_parts", RULES_GROUP, builds_conv_parts, 1, apply_conv_parts, guards_conv_parts, 1,
    RULES_MOTION_HOIST_TO_FIRST,
    "a step's causal convolutions run as one op at the first one's slot: each later one moves up past nothing "
    "outside the group that writes what it reads or touches what it writes"};

/* ── gates ───────────────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_gates[] = {IR_CLASS_GDN_GATING};

/* The earlier gate moves down to the later gate's slot: legal when it sinks past nothing that writes what it reads
 * or touches what it writes; the delta rule is each gate's only reader. */
static const struct rules_atom guards_gates[] = {
    {.name = "only_reader_b", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
    {.name = "only_reader_a", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_OTHER, .a = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
    {.name = "no_sink_past", .kind = RULES_ATOM_NO_SINK_PAST, .a = RULES_ROLE_EACH, .b = RULES_ROLE_ANCHOR,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_ADDED_BY("F11")},
};

/* Fold the write strength's sigmoid at pb and the forget gate's decay at pa (both read by the delta rule at j) into
 * one op at the later one's slot, when the guards hold and the chip runs it whole. */
static void fold_gates(struct rules_rewriter *r, int32_t j, int32_t pb, int32_t pa)
{
    const struct ir_op *delta = rules_slot(r, j);
    ir_tid b = delta->ins[4], a = delta->ins[5];
    int32_t keep = pb > pa ? pb : pa, gone = pb > pa ? pa : pb;
    struct rules_list members = {0};
    rules_list_push(&members, gone);
    rules_list_push(&members, keep);
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_CONSUMER] = j;
    bind.slot[RULES_ROLE_ANCHOR] = keep;
    bind.tensor[RULES_ROLE_RESULT] = b;
    bind.tensor[RULES_ROLE_OTHER] = a;
    rules_bind_list(&bind, RULES_ROLE_MEMBERS, &members);
    bool ok = rules_guards_hold(r, r->rule, &bind, NULL);
    rules_list_free(&members);
    if (!ok)
        return;
    /* The sigmoid's operands, then the decay's; the candidate's parts in that order too. */
    int32_t order[2] = {pb, pa};
    ir_tid *ins;
    struct ir_access *access;
    int32_t nins = flat_operands(r, order, 2, &ins, &access);
    if (rules_admits_slots(r, IR_CLASS_GDN_GATING, order, 2, ins, nins, b, ir_dst_own(b)))
        rules_fuse(r, IR_CLASS_GDN_GATING, keep, &gone, 1, ins, access, nins, b, ir_dst_own(b));
    free(ins);
    free(access);
}

/* Gated DeltaNet's write strength and forget gate in one op, at the later gate's slot: the earlier gate sinks to it
 * past nothing that writes what it reads or touches what it writes. */
static void apply_gates(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *op = rules_slot(r, j);
        if (!op || !rules_is(op, IR_KIND_GATED_DELTA) || op->nins < 6)
            continue;
        int32_t pb = ir_facts_producer(r->s, op->ins[4]), pa = ir_facts_producer(r->s, op->ins[5]);
        if (pb < 0 || pa < 0)
            continue;
        const struct ir_op *sop = rules_slot(r, pb), *aop = rules_slot(r, pa);
        if (!rules_is(sop, IR_KIND_SIGMOID) || !rules_is(aop, IR_KIND_DECAY) ||
            sop->spec.u.unary.n != aop->spec.u.decay.n)
            continue;
        fold_gates(r, j, pb, pa);
    }
}

const struct rules_rule rules_rule_gates = {
    "gates", RULES_GROUP, builds_gates, 1, apply_gates, guards_gates, 3, RULES_MOTION_GROUP_AT_LAST,
    "a gated delta rule's write strength and forget gate, each read only by it, run as one op at the later gate: the "
    "earlier sinks past nothing that writes what it reads or touches what it writes"};

/* ── gate_projections ────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_gate_projections[] = {IR_CLASS_GDN_GATE_PROJECTIONS};

/* The two projections move down to the gates' slot: legal when each sinks past nothing that writes what it reads
 * (the activation among it) or touches what it writes; the gates are each projection's only reader. */
static const struct rules_atom guards_gate_projections[] = {
    {.name = "only_reader_b", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_INPUT, .a = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
    {.name = "only_reader_a", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_OTHER, .a = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
    {.name = "no_sink_past", .kind = RULES_ATOM_NO_SINK_PAST, .a = RULES_ROLE_EACH, .b = RULES_ROLE_ANCHOR,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_WIDENED_BY("F16")},
};

/* The slot's product of one activation row into `heads` values (no bias, its own buffer), or false. */
static bool gate_projection(const struct rules_rewriter *r, int32_t i, int64_t heads, struct rules_gemv_form *p)
{
    return rules_gemv(rules_slot(r, i), r->g, p) && p->bias == IR_NONE && ir_dst_is_own(&p->dst) && p->n == heads &&
           p->m == 1;
}

/* Fold the projections at ib and ia into the gating op at g, when the guards hold and the chip runs it whole. */
static void fold_gate_projections(struct rules_rewriter *r, int32_t g, int32_t ib, int32_t ia, ir_tid br, ir_tid ar,
                                  const struct rules_gemv_form *pb, const struct rules_gemv_form *pa)
{
    struct rules_list members = {0};
    rules_list_push(&members, ib);
    rules_list_push(&members, ia);
    rules_list_push(&members, g);
    rules_list_sort_unique(&members);
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_CONSUMER] = g;
    bind.slot[RULES_ROLE_ANCHOR] = g;
    bind.tensor[RULES_ROLE_INPUT] = br;
    bind.tensor[RULES_ROLE_OTHER] = ar;
    rules_bind_list(&bind, RULES_ROLE_MEMBERS, &members);
    bool ok = rules_guards_hold(r, r->rule, &bind, NULL);
    rules_list_free(&members);
    if (!ok)
        return;
    /* The activation, both weights, then the decay's A_log and bias. */
    const struct ir_op *decay = &rules_slot(r, g)->parts[1];
    int32_t nins = 3 + (decay->nins > 1 ? decay->nins - 1 : 0);
    ir_tid *ins = rules_xmalloc(sizeof *ins * (size_t)nins);
    struct ir_access *access = rules_xmalloc(sizeof *access * (size_t)nins);
    memset(access, 0, sizeof *access * (size_t)nins);
    ins[0] = pb->x;
    access[0] = rules_slot(r, ib)->access[0];
    ins[1] = pb->w;
    ins[2] = pa->w;
    for (int32_t k = 1; k < decay->nins; k++)
        ins[2 + k] = decay->ins[k];
    int32_t order[3] = {ib, ia, g}, gone[2] = {ib, ia};
    ir_tid out = rules_slot(r, g)->out;
    if (rules_admits_slots(r, IR_CLASS_GDN_GATE_PROJECTIONS, order, 3, ins, nins, out, ir_dst_own(out)))
        rules_fuse(r, IR_CLASS_GDN_GATE_PROJECTIONS, g, gone, 2, ins, access, nins, out, ir_dst_own(out));
    free(ins);
    free(access);
}

/* A step's two Gated DeltaNet gates and the two products of one activation row they read (no bias, each whole, one
 * length), as one op at the gates' slot: the products sink to it past nothing that writes what they read (the
 * activation must still hold there) or touches what they write. */
static void apply_gate_projections(struct rules_rewriter *r)
{
    for (int32_t g = 0; g < ir_slots_len(r->s); g++) {
        const struct ir_op *op = rules_slot(r, g);
        if (!op || rules_class(op) != IR_CLASS_GDN_GATING || op->nparts < 2)
            continue;
        const struct ir_op *sg = &op->parts[0], *dc = &op->parts[1];
        if (!rules_is(sg, IR_KIND_SIGMOID) || !rules_is(dc, IR_KIND_DECAY) || sg->nins < 1 || dc->nins < 1)
            continue;
        ir_tid br = sg->ins[0], ar = dc->ins[0];
        int64_t rows = dc->spec.u.decay.rows > 1 ? dc->spec.u.decay.rows : 1;
        int64_t heads = dc->spec.u.decay.n / rows;
        if (dc->spec.u.decay.n != heads)
            continue;
        int32_t ib = ir_facts_producer(r->s, br), ia = ir_facts_producer(r->s, ar);
        struct rules_gemv_form pb, pa;
        if (ib < 0 || ia < 0 || ib == ia || !gate_projection(r, ib, heads, &pb) || !gate_projection(r, ia, heads, &pa))
            continue;
        if (pb.x != pa.x || pb.k != pa.k)
            continue;
        fold_gate_projections(r, g, ib, ia, br, ar, &pb, &pa);
    }
}

const struct rules_rule rules_rule_gate_projections = {
    "gate_projections", RULES_GROUP, builds_gate_projections, 1, apply_gate_projections, guards_gate_projections, 3,
    RULES_MOTION_GROUP_AT_LAST,
    "the two products of one activation row that a delta rule's gates read, each read only by them, run with the "
    "gates at their slot: each sinks past nothing that writes what it reads or touches what it writes"};

/* ── gdn_input_epilogue, gdn_post_conv_prep, gdn_decode_whole ────────────────────────────────────────────────── */

static const enum ir_class builds_gdn_input_epilogue[] = {IR_CLASS_GDN_INPUT_EPILOGUE};
static const enum ir_class builds_gdn_post_conv_prep[] = {IR_CLASS_GDN_POST_CONV_PREP};
static const enum ir_class builds_gdn_decode_whole[] = {IR_CLASS_GDN_DECODE_WHOLE};

/* Every member moves down to the last one's slot: legal when each sinks past nothing outside the group that writes
 * what it reads or touches what it writes. Each op made for the delta rule (PRODUCERS) writes only what the host
 * does not see and what the group and the delta rule (WITHIN) alone read. */
static const struct rules_atom guards_gdn_group[] = {
    {.name = "made_for", .kind = RULES_ATOM_READ_ONLY_WITHIN, .a = RULES_ROLE_EACH, .g = RULES_ROLE_WITHIN,
     .forall = RULES_ROLE_PRODUCERS, RULES_FROM_SEED},
    {.name = "no_sink_past", .kind = RULES_ATOM_NO_SINK_PAST, .a = RULES_ROLE_EACH, .b = RULES_ROLE_ANCHOR,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_FROM_SEED},
};

/* A gated delta rule's inputs as its step makes them: its rows; the ops making its query, key and values (each a
 * convolution, or convolutions as one op) ascending, then the op making both its gates; and, when an op makes each,
 * the ops making what those convolutions read and its output gate (ascending). */
struct delta_inputs {
    int64_t rows;
    struct rules_list prep;
    bool has_products;
    struct rules_list products;
};

/* Whether the op at slot c is a convolution, or a step's convolutions as one op. */
static bool conv_maker(const struct rules_rewriter *r, int32_t c)
{
    return conv_at(r, c) || rules_class(rules_slot(r, c)) == IR_CLASS_CONV_PARTS;
}

/* Add the makers of what the convolution leaves of the op at c read to d's products (has_products cleared when one
 * has none). */
static void conv_sources(const struct rules_rewriter *r, int32_t c, struct delta_inputs *d)
{
    const struct ir_op *op = rules_slot(r, c);
    int32_t n = rules_leaves(op, NULL, 0);
    const struct ir_op **leaves = rules_xmalloc(sizeof *leaves * (size_t)(n ? n : 1));
    rules_leaves(op, leaves, n);
    for (int32_t x = 0; x < n; x++) {
        if (!rules_is(leaves[x], IR_KIND_CAUSAL_CONV) || leaves[x]->nins < 1)
            continue;
        int32_t p = ir_facts_maker(r->s, leaves[x]->ins[0]);
        if (p < 0)
            d->has_products = false;
        else
            rules_list_push(&d->products, p);
    }
    free(leaves);
}

/* The inputs of the gated delta rule at slot j, or false when it is not one whose inputs its step makes so. */
static bool delta_inputs(const struct rules_rewriter *r, int32_t j, struct delta_inputs *d)
{
    memset(d, 0, sizeof *d);
    const struct ir_op *op = rules_slot(r, j);
    if (!op || !rules_is(op, IR_KIND_GATED_DELTA) || op->nins < 6)
        return false;
    d->rows = op->spec.u.gated_delta.rows;
    bool ok = true;
    for (int k = 0; k < 3 && ok; k++) {
        int32_t c = ir_facts_maker(r->s, op->ins[k]);
        ok = c >= 0 && conv_maker(r, c);
        if (ok)
            rules_list_push(&d->prep, c);
    }
    int32_t gating = ir_facts_maker(r->s, op->ins[4]);
    int cls = gating >= 0 ? rules_class(rules_slot(r, gating)) : -1;
    ok = ok && gating >= 0 && ir_facts_maker(r->s, op->ins[5]) == gating &&
         (cls == IR_CLASS_GDN_GATING || cls == IR_CLASS_GDN_GATE_PROJECTIONS);
    if (!ok) {
        rules_list_free(&d->prep);
        return false;
    }
    rules_list_sort_unique(&d->prep);
    d->has_products = true;
    for (int32_t x = 0; x < d->prep.n; x++)
        conv_sources(r, d->prep.v[x], d);
    int32_t z = ir_facts_maker(r->s, op->ins[3]);
    if (z < 0)
        d->has_products = false;
    else
        rules_list_push(&d->products, z);
    rules_list_sort_unique(&d->products);
    rules_list_push(&d->prep, gating);
    return true;
}

/* Free what d holds. */
static void delta_inputs_free(struct delta_inputs *d)
{
    rules_list_free(&d->prep);
    rules_list_free(&d->products);
}

/* Group `members` at the last one's slot as cls, the ops of `made` made for the delta rule at j. */
static void delta_group(struct rules_rewriter *r, enum ir_class cls, const struct rules_list *made, int32_t j,
                        const struct rules_list *members)
{
    struct rules_list within = rules_list_with(made, j);
    struct rules_list group = rules_list_with(members, -1);
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_CONSUMER] = j;
    rules_bind_list(&bind, RULES_ROLE_PRODUCERS, made);
    rules_bind_list(&bind, RULES_ROLE_WITHIN, &within);
    rules_group_at_last(r, cls, group.v, group.n, &bind);
    rules_list_free(&group);
    rules_list_free(&within);
}

/* Whether every product of d reads one activation row. */
static bool one_activation(const struct rules_rewriter *r, const struct delta_inputs *d)
{
    ir_tid x = IR_NONE;
    for (int32_t i = 0; i < d->products.n; i++) {
        struct rules_gemv_form p;
        if (!rules_gemv(rules_slot(r, d->products.v[i]), r->g, &p))
            return false;
        if (x != IR_NONE && p.x != x)
            return false;
        x = p.x;
    }
    return d->products.n > 0;
}

/* A one-row gated delta rule's every input projection — query, key, values, output gate (and both gates, when they
 * are projected with them) — with its convolutions, SiLU, L2 norms and gates in the projections' epilogue, as one
 * op: every member sinks to the last past nothing that sees the difference. */
static void apply_gdn_input_epilogue(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        struct delta_inputs d;
        if (!delta_inputs(r, j, &d))
            continue;
        if (d.has_products && d.rows == 1 && one_activation(r, &d)) {
            struct rules_list members = rules_list_with(&d.prep, -1);
            for (int32_t i = 0; i < d.products.n; i++)
                rules_list_push(&members, d.products.v[i]);
            rules_list_sort_unique(&members);
            delta_group(r, IR_CLASS_GDN_INPUT_EPILOGUE, &members, j, &members);
            rules_list_free(&members);
        }
        delta_inputs_free(&d);
    }
}

const struct rules_rule rules_rule_gdn_input_epilogue = {
    "gdn_input_epilogue", RULES_GROUP, builds_gdn_input_epilogue, 1, apply_gdn_input_epilogue, guards_gdn_group, 2,
    RULES_MOTION_GROUP_AT_LAST,
    "a one-row delta rule's input products with its convolutions and gates, each made only for it, run as one op at "
    "the last: each sinks past nothing that writes what it reads or touches what it writes"};

/* A chunk's gated delta inputs past their projections — the convolutions with their SiLU and L2 norms, and the
 * gates — as one op: every member sinks to the last past nothing that sees the difference. */
static void apply_gdn_post_conv_prep(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        struct delta_inputs d;
        if (!delta_inputs(r, j, &d))
            continue;
        if (d.rows > 1) {
            struct rules_list made = rules_list_with(&d.prep, -1);
            delta_group(r, IR_CLASS_GDN_POST_CONV_PREP, &made, j, &made);
            rules_list_free(&made);
        }
        delta_inputs_free(&d);
    }
}

const struct rules_rule rules_rule_gdn_post_conv_prep = {
    "gdn_post_conv_prep", RULES_GROUP, builds_gdn_post_conv_prep, 1, apply_gdn_post_conv_prep, guards_gdn_group, 2,
    RULES_MOTION_GROUP_AT_LAST,
    "a chunk's delta-rule convolutions and gates, each made only for it, run as one op at the last: each sinks past "
    "nothing that writes what it reads or touches what it writes"};

/* A one-row gated delta rule's whole step between its projections — its convolutions with their SiLU and L2 norms,
 * its two gates, the update of its memory and its gated norm — as one op at the delta rule's slot: every member
 * sinks to it past nothing that sees the difference. */
static void apply_gdn_decode_whole(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        struct delta_inputs d;
        if (!delta_inputs(r, j, &d))
            continue;
        if (d.rows == 1) {
            struct rules_list made = rules_list_with(&d.prep, -1);
            struct rules_list members = rules_list_with(&made, j);
            delta_group(r, IR_CLASS_GDN_DECODE_WHOLE, &made, j, &members);
            rules_list_free(&members);
            rules_list_free(&made);
        }
        delta_inputs_free(&d);
    }
}

const struct rules_rule rules_rule_gdn_decode_whole = {
    "gdn_decode_whole", RULES_GROUP, builds_gdn_decode_whole, 1, apply_gdn_decode_whole, guards_gdn_group, 2,
    RULES_MOTION_GROUP_AT_LAST,
    "a one-row delta rule with its convolutions and gates, each made only for it, runs as one op at its slot: each "
    "sinks past nothing that writes what it reads or touches what it writes"};
