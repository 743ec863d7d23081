/* rules/rules_gdn.c — the rules over Gated DeltaNet, mixture-of-experts and latent-attention shapes: a convolution's
 * epilogues and its step's convolutions as one op; the delta rule's gates, their projections, its inputs' preparation
 * and its whole step; a mixture's shared expert, its rows and its deferred combine; a gated attention's output gate;
 * a latent attention's value expansion and its prologue; and a chunk's last-layer rows.
 *
 * Every matcher finds a shape and binds roles; whether moving the members is legal is decided by the rule's guard
 * atoms alone. Where a group grows by "what is made only for it", the growth asks the rule's own `made_for` atom, so
 * the atom (and a build that drops it) decides the growth as it decides the final group. */
#include "rules.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ── Helpers ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* malloc that aborts on exhaustion. */
static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();
    return p;
}

/* A growing list of slots. */
struct list {
    int32_t *v;
    int32_t n, cap;
};

/* Append x to l. */
static void list_push(struct list *l, int32_t x)
{
    if (l->n == l->cap) {
        int32_t cap = l->cap ? l->cap * 2 : 8;
        int32_t *v = realloc(l->v, sizeof *v * (size_t)cap);
        if (!v)
            abort();
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
}

/* Whether l holds x. */
static bool list_has(const struct list *l, int32_t x)
{
    for (int32_t i = 0; i < l->n; i++)
        if (l->v[i] == x)
            return true;
    return false;
}

/* Free what l holds and empty it. */
static void list_free(struct list *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Ascending order of int32 values, for qsort. */
static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Sort l ascending and drop repeats. */
static void list_sort_unique(struct list *l)
{
    if (l->n == 0)
        return;
    qsort(l->v, (size_t)l->n, sizeof *l->v, cmp_i32);
    int32_t m = 1;
    for (int32_t i = 1; i < l->n; i++)
        if (l->v[i] != l->v[m - 1])
            l->v[m++] = l->v[i];
    l->n = m;
}

/* A copy of l, with x appended when x >= 0, sorted and unique. */
static struct list list_with(const struct list *l, int32_t x)
{
    struct list c = {0};
    for (int32_t i = 0; i < l->n; i++)
        list_push(&c, l->v[i]);
    if (x >= 0)
        list_push(&c, x);
    list_sort_unique(&c);
    return c;
}

/* a·b for sizes, or -1 when either is negative or the product would overflow. */
static int64_t size_mul(int64_t a, int64_t b)
{
    if (a < 0 || b < 0 || (a != 0 && b > INT64_MAX / a))
        return -1;
    return a * b;
}

/* Bind set role g to the slots of l (which must outlive the binding's use). */
static void bind_set(struct rules_binding *b, enum rules_role g, const struct list *l)
{
    b->set[g] = l->v;
    b->nset[g] = l->n;
}

/* Whether the running rule's atom at `index` alone holds under b; an atom this build drops holds. A group that grows
 * by what is made only for it asks its `made_for` atom this way. */
static bool atom_holds(const struct rules_rewriter *r, int index, const struct rules_binding *b)
{
    struct rules_rule one = *r->rule;
    one.guards = &r->rule->guards[index];
    one.nguards = 1;
    return rules_guards_hold(r, &one, b, NULL);
}

/* Whether the consumer sought is op, one of t's readers (ctx: what the matcher knows). */
typedef bool (*reader_fit)(const struct ir_op *op, ir_tid t, const void *ctx);

/* The first live slot reading t whose op fits, or -1: the consumer found by its shape among t's readers. */
static int32_t reader_such(const struct rules_rewriter *r, ir_tid t, reader_fit fits, const void *ctx)
{
    int32_t n = rules_reader_count(r, t);
    int32_t *rd = xmalloc(sizeof *rd * (size_t)(n ? n : 1));
    ir_facts_readers(r->s, t, rd, n);
    int32_t found = -1;
    for (int32_t k = 0; k < n && found < 0; k++)
        if (fits(rules_slot(r, rd[k]), t, ctx))
            found = rd[k];
    free(rd);
    return found;
}

/* Every operand of the ops at `slots`, in order, repeats kept (an op over its members' operands as they stand);
 * returns the count, the arrays malloc'd into *ins and *access. */
static int32_t flat_operands(const struct rules_rewriter *r, const int32_t *slots, int32_t n, ir_tid **ins,
                             struct ir_access **access)
{
    int32_t count = 0;
    for (int32_t i = 0; i < n; i++)
        count += rules_slot(r, slots[i])->nins;
    *ins = xmalloc(sizeof **ins * (size_t)(count ? count : 1));
    *access = xmalloc(sizeof **access * (size_t)(count ? count : 1));
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

/* Whether the op at slot i has a leaf that is a primitive of kind k. */
static bool has_leaf(const struct rules_rewriter *r, int32_t i, enum ir_kind k)
{
    const struct ir_op *op = rules_slot(r, i);
    int32_t n = rules_leaves(op, NULL, 0);
    const struct ir_op **leaves = xmalloc(sizeof *leaves * (size_t)(n ? n : 1));
    rules_leaves(op, leaves, n);
    bool found = false;
    for (int32_t x = 0; x < n && !found; x++)
        found = rules_is(leaves[x], k);
    free(leaves);
    return found;
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
    int64_t n = size_mul(op->spec.u.l2_norm.rows, op->spec.u.l2_norm.cols);
    return n >= 0 && n == size_mul(c->chan, c->rows);
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
        int32_t j = reader_such(r, c.y, silu_of, NULL);
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
        int32_t k = reader_such(r, c.y, l2_of, &c);
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
static bool conv_joins(struct rules_rewriter *r, int32_t first, const struct list *group, int32_t j)
{
    struct list trial = list_with(group, j);
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
    list_free(&trial);
    return ok;
}

/* A step's causal convolutions as one op over their channels, each later one moved up to the first one's slot
 * where it crosses nothing; the chip says which it takes together. */
static void apply_conv_parts(struct rules_rewriter *r)
{
    struct list convs = {0};
    for (int32_t i = 0; i < ir_slots_len(r->s); i++)
        if (conv_at(r, i))
            list_push(&convs, i);
    for (int32_t at = 0; at < convs.n; at++) {
        int32_t i = convs.v[at];
        if (!conv_at(r, i))
            continue;
        struct list group = {0};
        list_push(&group, i);
        for (int32_t x = at + 1; x < convs.n; x++)
            if (conv_at(r, convs.v[x]) && conv_joins(r, i, &group, convs.v[x]))
                list_push(&group, convs.v[x]);
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
        list_free(&group);
    }
    list_free(&convs);
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
    struct list members = {0};
    list_push(&members, gone);
    list_push(&members, keep);
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_CONSUMER] = j;
    bind.slot[RULES_ROLE_ANCHOR] = keep;
    bind.tensor[RULES_ROLE_RESULT] = b;
    bind.tensor[RULES_ROLE_OTHER] = a;
    bind_set(&bind, RULES_ROLE_MEMBERS, &members);
    bool ok = rules_guards_hold(r, r->rule, &bind, NULL);
    list_free(&members);
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
    struct list members = {0};
    list_push(&members, ib);
    list_push(&members, ia);
    list_push(&members, g);
    list_sort_unique(&members);
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_CONSUMER] = g;
    bind.slot[RULES_ROLE_ANCHOR] = g;
    bind.tensor[RULES_ROLE_INPUT] = br;
    bind.tensor[RULES_ROLE_OTHER] = ar;
    bind_set(&bind, RULES_ROLE_MEMBERS, &members);
    bool ok = rules_guards_hold(r, r->rule, &bind, NULL);
    list_free(&members);
    if (!ok)
        return;
    /* The activation, both weights, then the decay's A_log and bias. */
    const struct ir_op *decay = &rules_slot(r, g)->parts[1];
    int32_t nins = 3 + (decay->nins > 1 ? decay->nins - 1 : 0);
    ir_tid *ins = xmalloc(sizeof *ins * (size_t)nins);
    struct ir_access *access = xmalloc(sizeof *access * (size_t)nins);
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
    struct list prep;
    bool has_products;
    struct list products;
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
    const struct ir_op **leaves = xmalloc(sizeof *leaves * (size_t)(n ? n : 1));
    rules_leaves(op, leaves, n);
    for (int32_t x = 0; x < n; x++) {
        if (!rules_is(leaves[x], IR_KIND_CAUSAL_CONV) || leaves[x]->nins < 1)
            continue;
        int32_t p = ir_facts_maker(r->s, leaves[x]->ins[0]);
        if (p < 0)
            d->has_products = false;
        else
            list_push(&d->products, p);
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
            list_push(&d->prep, c);
    }
    int32_t gating = ir_facts_maker(r->s, op->ins[4]);
    int cls = gating >= 0 ? rules_class(rules_slot(r, gating)) : -1;
    ok = ok && gating >= 0 && ir_facts_maker(r->s, op->ins[5]) == gating &&
         (cls == IR_CLASS_GDN_GATING || cls == IR_CLASS_GDN_GATE_PROJECTIONS);
    if (!ok) {
        list_free(&d->prep);
        return false;
    }
    list_sort_unique(&d->prep);
    d->has_products = true;
    for (int32_t x = 0; x < d->prep.n; x++)
        conv_sources(r, d->prep.v[x], d);
    int32_t z = ir_facts_maker(r->s, op->ins[3]);
    if (z < 0)
        d->has_products = false;
    else
        list_push(&d->products, z);
    list_sort_unique(&d->products);
    list_push(&d->prep, gating);
    return true;
}

/* Free what d holds. */
static void delta_inputs_free(struct delta_inputs *d)
{
    list_free(&d->prep);
    list_free(&d->products);
}

/* Group `members` at the last one's slot as cls, the ops of `made` made for the delta rule at j. */
static void delta_group(struct rules_rewriter *r, enum ir_class cls, const struct list *made, int32_t j,
                        const struct list *members)
{
    struct list within = list_with(made, j);
    struct list group = list_with(members, -1);
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_CONSUMER] = j;
    bind_set(&bind, RULES_ROLE_PRODUCERS, made);
    bind_set(&bind, RULES_ROLE_WITHIN, &within);
    rules_group_at_last(r, cls, group.v, group.n, &bind);
    list_free(&group);
    list_free(&within);
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
            struct list members = list_with(&d.prep, -1);
            for (int32_t i = 0; i < d.products.n; i++)
                list_push(&members, d.products.v[i]);
            list_sort_unique(&members);
            delta_group(r, IR_CLASS_GDN_INPUT_EPILOGUE, &members, j, &members);
            list_free(&members);
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
            struct list made = list_with(&d.prep, -1);
            delta_group(r, IR_CLASS_GDN_POST_CONV_PREP, &made, j, &made);
            list_free(&made);
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
            struct list made = list_with(&d.prep, -1);
            struct list members = list_with(&made, j);
            delta_group(r, IR_CLASS_GDN_DECODE_WHOLE, &made, j, &members);
            list_free(&members);
            list_free(&made);
        }
        delta_inputs_free(&d);
    }
}

const struct rules_rule rules_rule_gdn_decode_whole = {
    "gdn_decode_whole", RULES_GROUP, builds_gdn_decode_whole, 1, apply_gdn_decode_whole, guards_gdn_group, 2,
    RULES_MOTION_GROUP_AT_LAST,
    "a one-row delta rule with its convolutions and gates, each made only for it, runs as one op at its slot: each "
    "sinks past nothing that writes what it reads or touches what it writes"};

/* ── shared_expert ───────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_shared_expert[] = {IR_CLASS_SHARED_EXPERT_FUSION};

/* The mixture, the shared expert's gated pair and its down product move down to the sum: legal when each sinks past
 * nothing that writes what it reads (the mixture's input among it) or touches what it writes; the sum is the only
 * reader of both summands and the down product the only reader of the hidden row. */
static const struct rules_atom guards_shared_expert[] = {
    {.name = "only_reader_mixture", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_SOURCE,
     .a = RULES_ROLE_CONSUMER, RULES_FROM_SEED},
    {.name = "only_reader_shared", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_OTHER, .a = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
    {.name = "only_reader_hidden", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_INPUT, .a = RULES_ROLE_PRODUCER,
     RULES_FROM_SEED},
    {.name = "no_sink_past", .kind = RULES_ATOM_NO_SINK_PAST, .a = RULES_ROLE_EACH, .b = RULES_ROLE_ANCHOR,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_WIDENED_BY("F16")},
};

/* A shared expert's match: the mixture (pm), the gated pair (pg), the down product (pd), the sum (j). */
struct shared_match {
    int32_t pm, pg, pd, j;
    ir_tid mixed, shared, hidden, out;
    struct rules_moe_form mf;
    struct rules_gemv_form down;
};

/* Whether a summand pair of the add at j is a lifted mixture's result and another op's, into m. */
static bool mixture_and_other(const struct rules_rewriter *r, ir_tid mixed, ir_tid shared, struct shared_match *m)
{
    m->pm = ir_facts_producer(r->s, mixed);
    m->pd = ir_facts_producer(r->s, shared);
    if (m->pm < 0 || m->pd < 0 || !rules_moe(rules_slot(r, m->pm), &m->mf) || m->mf.shared)
        return false;
    m->mixed = mixed;
    m->shared = shared;
    return true;
}

/* Whether the shapes around the add at j make a mixture plus its shared SwiGLU expert, into m. */
static bool shared_expert_shape(const struct rules_rewriter *r, int32_t j, struct shared_match *m)
{
    const struct ir_op *op = rules_slot(r, j);
    struct rules_binary_form bf;
    if (!op || !rules_binary(op, &bf) || bf.op != IR_EW_ADD || bf.gated || bf.row || rules_class(op) >= 0)
        return false;
    if (!mixture_and_other(r, bf.a, bf.b, m) && !mixture_and_other(r, bf.b, bf.a, m))
        return false;
    if (!rules_gemv(rules_slot(r, m->pd), r->g, &m->down))
        return false;
    m->hidden = m->down.x;
    m->pg = ir_facts_producer(r->s, m->hidden);
    const struct ir_op *glu = m->pg >= 0 ? rules_slot(r, m->pg) : NULL;
    if (!glu || rules_class(glu) != IR_CLASS_GEMV_GATE_UP_GLU || glu->nins < 1)
        return false;
    struct rules_gemv_form gm;
    int32_t p = 0;
    while (p < glu->nparts && !rules_gemv(&glu->parts[p], r->g, &gm))
        p++;
    if (p == glu->nparts)
        return false;
    m->j = j;
    m->out = bf.out;
    return glu->ins[0] == m->mf.x && gm.k == m->mf.d && gm.n == m->down.k && m->down.n == m->mf.d &&
           size_mul(m->down.m, m->down.n) == bf.n && gm.m == m->down.m && ir_dst_is_own(&m->mf.dst) &&
           ir_dst_is_own(&m->down.dst);
}

/* Fold a matched shared expert into its mixture at the sum's slot, when the guards hold and the chip runs it. */
static void fold_shared_expert(struct rules_rewriter *r, const struct shared_match *m)
{
    struct list members = {0};
    int32_t order[4] = {m->pm, m->pg, m->pd, m->j};
    for (int i = 0; i < 4; i++)
        list_push(&members, order[i]);
    list_sort_unique(&members);
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_CONSUMER] = m->j;
    bind.slot[RULES_ROLE_PRODUCER] = m->pd;
    bind.slot[RULES_ROLE_ANCHOR] = m->j;
    bind.tensor[RULES_ROLE_SOURCE] = m->mixed;
    bind.tensor[RULES_ROLE_OTHER] = m->shared;
    bind.tensor[RULES_ROLE_INPUT] = m->hidden;
    bind_set(&bind, RULES_ROLE_MEMBERS, &members);
    bool ok = rules_guards_hold(r, r->rule, &bind, NULL);
    list_free(&members);
    if (!ok)
        return;
    /* The mixture's operands as it reads them, the pair's weights, the down product's weights. */
    const struct ir_op *mop = rules_slot(r, m->pm), *glu = rules_slot(r, m->pg);
    int32_t nins = mop->nins + (glu->nins - 1) + 1;
    ir_tid *ins = xmalloc(sizeof *ins * (size_t)nins);
    struct ir_access *access = xmalloc(sizeof *access * (size_t)nins);
    memset(access, 0, sizeof *access * (size_t)nins);
    int32_t n = 0;
    for (int32_t k = 0; k < mop->nins; k++, n++) {
        ins[n] = mop->ins[k];
        access[n] = mop->access[k];
    }
    for (int32_t k = 1; k < glu->nins; k++)
        ins[n++] = glu->ins[k];
    ins[n++] = m->down.w;
    int32_t gone[3] = {m->pm, m->pg, m->pd};
    if (rules_admits_slots(r, IR_CLASS_SHARED_EXPERT_FUSION, order, 4, ins, n, m->out, ir_dst_own(m->out)))
        rules_fuse(r, IR_CLASS_SHARED_EXPERT_FUSION, m->j, gone, 3, ins, access, n, m->out, ir_dst_own(m->out));
    free(ins);
    free(access);
}

/* A mixture's shared SwiGLU expert, read only by its sum with the mixture, inside the mixture: its gate and up rows
 * beside the kept experts', its down row summed after theirs; every member sinks to the sum past nothing that sees
 * the difference (the mixture's input must still hold there). */
static void apply_shared_expert(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        struct shared_match m;
        if (shared_expert_shape(r, j, &m))
            fold_shared_expert(r, &m);
    }
}

const struct rules_rule rules_rule_shared_expert = {
    "shared_expert", RULES_GROUP, builds_shared_expert, 1, apply_shared_expert, guards_shared_expert, 4,
    RULES_MOTION_GROUP_AT_LAST,
    "a mixture's shared SwiGLU expert runs inside the mixture at their sum: each summand and the hidden row have one "
    "reader, and every member sinks past nothing that writes what it reads or touches what it writes"};

/* ── moe_rows ────────────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_moe_rows[] = {IR_CLASS_MOE_TOKEN_SORT};

/* Every mixture and its view move down to the last mixture's slot: legal when each sinks past nothing outside the
 * group that writes what it reads or touches what it writes, nothing outside the group between the first member and
 * the last reads or writes the table, and each view (PRODUCERS) is unseen and read only by the group. */
static const struct rules_atom guards_moe_rows[] = {
    {.name = "table_untouched", .kind = RULES_ATOM_UNREAD_UNWRITTEN, .t = RULES_ROLE_TABLE, .a = RULES_ROLE_FIRST,
     .b = RULES_ROLE_ANCHOR, .g = RULES_ROLE_MEMBERS, RULES_FROM_SEED},
    {.name = "views_read_within", .kind = RULES_ATOM_READ_ONLY_WITHIN, .a = RULES_ROLE_EACH, .g = RULES_ROLE_MEMBERS,
     .forall = RULES_ROLE_PRODUCERS, RULES_WIDENED_BY("F4")},
    {.name = "no_sink_past", .kind = RULES_ATOM_NO_SINK_PAST, .a = RULES_ROLE_EACH, .b = RULES_ROLE_ANCHOR,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_WIDENED_BY("F16")},
};

/* One mixture writing row `row` (0-based) of `table` from the view at v of `src`'s same row. */
struct moe_row {
    int32_t i, v;
    int64_t row;
    ir_tid src, table;
    const struct ir_graph *g; /* for ordering by name */
};

/* Order by source name, table name, row, then slot: the groups in name order, each's rows in order. */
static int cmp_moe_row(const void *pa, const void *pb)
{
    const struct moe_row *a = pa, *b = pb;
    int c = strcmp(a->g->tensors[a->src].name, b->g->tensors[b->src].name);
    if (c == 0)
        c = strcmp(a->g->tensors[a->table].name, b->g->tensors[b->table].name);
    if (c == 0)
        c = (a->row > b->row) - (a->row < b->row);
    if (c == 0)
        c = (a->i > b->i) - (a->i < b->i);
    return c;
}

/* Whether the slot holds a lifted one-row mixture reading a view of a row and writing that row of a table; *e
 * receives it. */
static bool moe_row_at(const struct rules_rewriter *r, int32_t i, struct moe_row *e)
{
    const struct ir_op *op = rules_slot(r, i);
    struct rules_moe_form mf;
    if (!op || !rules_moe(op, &mf) || mf.rows != 1 || mf.shared || mf.dst.row != IR_ROWSEL_FIXED ||
        mf.dst.has_unit || mf.d <= 0)
        return false;
    int32_t v = ir_facts_producer(r->s, mf.x);
    const struct ir_op *view = v >= 0 ? rules_slot(r, v) : NULL;
    if (!view || view->sym != IR_SYM_VIEW || view->nins < 1)
        return false;
    int64_t offset = view->view_offset;
    if (mf.dst.row_cols != mf.d || offset % mf.d != 0 || mf.dst.row_fixed != offset / mf.d + 1)
        return false;
    *e = (struct moe_row){i, v, offset / mf.d, view->ins[0], mf.dst.buf, r->g};
    return true;
}

/* Whether two mixtures are alike but for their input and destination: one spec, the same weights. */
static bool moe_alike(const struct ir_op *a, const struct ir_op *b)
{
    if (a->sym != b->sym || a->nins != b->nins)
        return false;
    if (a->sym == IR_SYM_PRIM) {
        const struct ir_moe *x = &a->spec.u.moe, *y = &b->spec.u.moe;
        if (x->d != y->d || x->k != y->k || x->dff != y->dff || x->experts != y->experts || x->act != y->act ||
            x->bias != y->bias || x->topk_softmax != y->topk_softmax || x->alpha.has != y->alpha.has ||
            x->alpha.v != y->alpha.v || x->limit.has != y->limit.has || x->limit.v != y->limit.v)
            return false;
    }
    for (int32_t k = 1; k < a->nins; k++)
        if (a->ins[k] != b->ins[k])
            return false;
    return true;
}

/* Fold one group of mixture rows (e[0..n), rows in order) into one mixture over the rows at the last mixture. */
static void fold_moe_rows(struct rules_rewriter *r, const struct moe_row *e, int32_t n)
{
    int32_t lo = -1, hi = -1;
    struct list ours = {0}, views = {0};
    for (int32_t k = 0; k < n; k++) {
        if (e[k].row != k || !rules_slot(r, e[k].i) || !rules_slot(r, e[k].v) ||
            !moe_alike(rules_slot(r, e[k].i), rules_slot(r, e[0].i))) {
            list_free(&ours);
            list_free(&views);
            return;
        }
        int32_t low = e[k].i < e[k].v ? e[k].i : e[k].v;
        lo = lo < 0 || low < lo ? low : lo;
        hi = e[k].i > hi ? e[k].i : hi;
        list_push(&ours, e[k].i);
        list_push(&ours, e[k].v);
        list_push(&views, e[k].v);
    }
    struct list members = list_with(&ours, -1);
    list_sort_unique(&views);
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_FIRST] = lo;
    bind.slot[RULES_ROLE_ANCHOR] = hi;
    bind.tensor[RULES_ROLE_TABLE] = e[0].table;
    bind_set(&bind, RULES_ROLE_MEMBERS, &members);
    bind_set(&bind, RULES_ROLE_PRODUCERS, &views);
    bool ok = members.n == 2 * n && rules_guards_hold(r, r->rule, &bind, NULL);
    if (ok) {
        /* The stacked rows whole, then the last mixture's weights. */
        const struct ir_op *last = rules_slot(r, hi);
        int32_t nins = last->nins;
        ir_tid *ins = xmalloc(sizeof *ins * (size_t)nins);
        struct ir_access *access = xmalloc(sizeof *access * (size_t)nins);
        memset(access, 0, sizeof *access * (size_t)nins);
        ins[0] = e[0].src;
        for (int32_t k = 1; k < nins; k++)
            ins[k] = last->ins[k];
        /* The table is no part's result: the op's result and destination are the last mixture's. */
        ir_tid out = last->out;
        struct ir_dst dst = last->dst;
        int32_t *gone = xmalloc(sizeof *gone * (size_t)ours.n);
        int32_t ngone = 0;
        for (int32_t k = 0; k < ours.n; k++)
            if (ours.v[k] != hi)
                gone[ngone++] = ours.v[k];
        if (rules_admits_slots(r, IR_CLASS_MOE_TOKEN_SORT, ours.v, ours.n, ins, nins, out, dst))
            rules_fuse(r, IR_CLASS_MOE_TOKEN_SORT, hi, gone, ngone, ins, access, nins, out, dst);
        free(gone);
        free(ins);
        free(access);
    }
    list_free(&members);
    list_free(&ours);
    list_free(&views);
}

/* A block's mixtures — each over a row of a stacked tensor read through a view, writing the same row of a table — as
 * one mixture over the rows, each routed on its own, each expert's weights read once for every row that chose it:
 * every member sinks to the last mixture past nothing that sees the difference. */
static void apply_moe_rows(struct rules_rewriter *r)
{
    int32_t n = ir_slots_len(r->s), count = 0;
    struct moe_row *e = xmalloc(sizeof *e * (size_t)(n ? n : 1));
    for (int32_t i = 0; i < n; i++)
        if (moe_row_at(r, i, &e[count]))
            count++;
    qsort(e, (size_t)count, sizeof *e, cmp_moe_row);
    for (int32_t at = 0; at < count;) {
        int32_t end = at + 1;
        while (end < count && e[end].src == e[at].src && e[end].table == e[at].table)
            end++;
        if (end - at >= 2)
            fold_moe_rows(r, e + at, end - at);
        at = end;
    }
    free(e);
}

const struct rules_rule rules_rule_moe_rows = {
    "moe_rows", RULES_GROUP, builds_moe_rows, 1, apply_moe_rows, guards_moe_rows, 3, RULES_MOTION_GROUP_AT_LAST,
    "a block's one-row mixtures over views of a stacked tensor, writing its rows of a table, run as one at the last: "
    "each view read only by the group, the table untouched between, nothing passed that sees the difference"};

/* ── moe_deferred_finalize ───────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_moe_deferred_finalize[] = {IR_CLASS_MOE_DEFERRED_FINALIZE};

/* The mixture (and the sum with its shared expert, when there is one) move down to the add-and-norm: legal when each
 * sinks past nothing that writes what it reads or touches what it writes; the mixture's result has one reader
 * (CONSUMER), and so has the add-and-norm's operand (RESULT). */
static const struct rules_atom guards_moe_deferred_finalize[] = {
    {.name = "only_reader_mixture", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_SOURCE,
     .a = RULES_ROLE_CONSUMER, RULES_FROM_SEED},
    {.name = "only_reader_sum", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_ANCHOR,
     RULES_FROM_SEED},
    {.name = "no_sink_past", .kind = RULES_ATOM_NO_SINK_PAST, .a = RULES_ROLE_EACH, .b = RULES_ROLE_ANCHOR,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_FROM_SEED},
};

/* The slot of a mixture computing t whole into its own buffer, or -1. */
static int32_t mixture_of(const struct rules_rewriter *r, ir_tid t)
{
    int32_t i = ir_facts_producer(r->s, t);
    struct rules_moe_form mf;
    return i >= 0 && rules_moe(rules_slot(r, i), &mf) && ir_dst_is_own(&mf.dst) ? i : -1;
}

/* The mixture at m, read by the add-and-norm at j: fold it there when the guards hold. Whether it fired. */
static bool finalize_direct(struct rules_rewriter *r, int32_t m, int32_t j, ir_tid t)
{
    struct list members = {0};
    list_push(&members, m);
    list_push(&members, j);
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_PRODUCER] = m;
    bind.slot[RULES_ROLE_CONSUMER] = j;
    bind.slot[RULES_ROLE_ANCHOR] = j;
    bind.tensor[RULES_ROLE_SOURCE] = t;
    bind.tensor[RULES_ROLE_RESULT] = t;
    bind_set(&bind, RULES_ROLE_MEMBERS, &members);
    bool ok = rules_guards_hold(r, r->rule, &bind, NULL);
    list_free(&members);
    return ok && rules_pair(r, IR_CLASS_MOE_DEFERRED_FINALIZE, m, j, j);
}

/* The summand of the add at i a mixture computes whole for the add alone, as the seed picks it (the one-reader test
 * only while only_reader_mixture, which says the same, is active): its slot, the summand into *mixed; or -1. */
static int32_t summed_mixture(const struct rules_rewriter *r, const struct rules_binary_form *b, int32_t i,
                              ir_tid *mixed)
{
    bool alone_asked = rules_atom_active(r->rule, "only_reader_mixture");
    ir_tid sides[2] = {b->a, b->b};
    for (int s = 0; s < 2; s++) {
        int32_t m = mixture_of(r, sides[s]);
        if (m >= 0 && (!alone_asked || rules_sole_reader(r, sides[s], i))) {
            *mixed = sides[s];
            return m;
        }
    }
    return -1;
}

/* The add at i of a mixture's result and its shared expert's, read by the add-and-norm at j as t: fold both there
 * when the guards hold. Whether it fired. */
static bool finalize_summed(struct rules_rewriter *r, int32_t i, int32_t j, ir_tid t)
{
    const struct ir_op *op = rules_slot(r, i);
    struct rules_binary_form b;
    if (!rules_binary(op, &b) || b.op != IR_EW_ADD || b.gated || b.row || rules_class(op) >= 0)
        return false;
    ir_tid mixed = IR_NONE;
    int32_t m = summed_mixture(r, &b, i, &mixed);
    if (m < 0)
        return false;
    int32_t members[3] = {m, i, j};
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_PRODUCER] = m;
    bind.slot[RULES_ROLE_CONSUMER] = i;
    bind.tensor[RULES_ROLE_SOURCE] = mixed;
    bind.tensor[RULES_ROLE_RESULT] = t;
    return rules_group_at_last(r, IR_CLASS_MOE_DEFERRED_FINALIZE, members, 3, &bind);
}

/* A mixture's whole result — or its sum with its shared expert's product, where the shared expert stays apart — one
 * summand of a residual add-and-norm, combined in the add-and-norm's place: the members sink to it past nothing that
 * sees the difference. */
static void apply_moe_deferred_finalize(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *op = rules_slot(r, j);
        if (!op || rules_class(op) != IR_CLASS_ADD_NORM || op->nins < 2)
            continue;
        ir_tid sides[2] = {op->ins[0], op->ins[1]};
        for (int s = 0; s < 2; s++) {
            int32_t m = mixture_of(r, sides[s]);
            if (m >= 0) {
                if (finalize_direct(r, m, j, sides[s]))
                    break;
                continue;
            }
            int32_t i = ir_facts_producer(r->s, sides[s]);
            if (i >= 0 && finalize_summed(r, i, j, sides[s]))
                break;
        }
    }
}

const struct rules_rule rules_rule_moe_deferred_finalize = {
    "moe_deferred_finalize", RULES_GROUP, builds_moe_deferred_finalize, 1, apply_moe_deferred_finalize,
    guards_moe_deferred_finalize, 3, RULES_MOTION_GROUP_AT_LAST,
    "a mixture's result (or its sum with the shared expert), read only by the next add-and-norm, combines there: "
    "every member sinks past nothing that writes what it reads or touches what it writes"};

/* ── attn_output_gate ────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_attn_output_gate[] = {IR_CLASS_ATTN_OUTPUT_GATE};

/* The attentions (and their row sets) move down to the gated product: legal when each sinks past nothing outside the
 * group that writes what it reads or touches what it writes. What the product gates (RESULT: an attention's result,
 * or the table of a batch's rows) is unseen by the host and read only by the group; so is each attention's result. */
static const struct rules_atom guards_attn_output_gate[] = {
    {.name = "not_observed", .kind = RULES_ATOM_NOT_OBSERVED, .t = RULES_ROLE_RESULT, RULES_FROM_SEED},
    {.name = "readers_within", .kind = RULES_ATOM_READERS_WITHIN, .t = RULES_ROLE_RESULT, .g = RULES_ROLE_MEMBERS,
     RULES_FROM_SEED},
    {.name = "made_for", .kind = RULES_ATOM_READ_ONLY_WITHIN, .a = RULES_ROLE_EACH, .g = RULES_ROLE_MEMBERS,
     .forall = RULES_ROLE_PRODUCERS, RULES_FROM_SEED},
    {.name = "no_sink_past", .kind = RULES_ATOM_NO_SINK_PAST, .a = RULES_ROLE_EACH, .b = RULES_ROLE_ANCHOR,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_FROM_SEED},
};

/* Whether op is a lifted attention writing its whole result into its own buffer. */
static bool plain_attention(const struct ir_op *op) { return rules_is(op, IR_KIND_ATTENTION) && ir_dst_is_own(&op->dst); }

/* Whether the op at k is a literal one-row set of a whole row of `table` (rows × cols) from an attention's result
 * that set alone reads, as the seed asks (while made_for, which implies it within the group, is active); its
 * attention's slot into *i and its row into *row. */
static bool attended_set(const struct rules_rewriter *r, int32_t k, ir_tid table, int32_t *i, int64_t *row)
{
    const struct ir_op *set = rules_slot(r, k);
    const struct ir_tensor *t = &r->g->tensors[table];
    if (!rules_is(set, IR_KIND_SET_ROW) || set->nins < 2 || set->ins[0] != table || !ir_dst_is_own(&set->dst))
        return false;
    const struct ir_set_row *sr = &set->spec.u.set_row;
    if (sr->index.kind != IR_RIDX_LITERAL || sr->rows != t->rows || sr->cols != t->cols || sr->count != 1)
        return false;
    *row = sr->index.literal;
    *i = ir_facts_producer(r->s, set->ins[1]);
    bool own_set = !rules_atom_active(r->rule, "made_for") || rules_sole_reader(r, set->ins[1], k);
    return *i >= 0 && plain_attention(rules_slot(r, *i)) && own_set;
}

/* Whether op writes t (its destination, a placement, a kept result or state in place). */
static bool writes_tensor(const struct ir_op *op, ir_tid t)
{
    int n = ir_op_writes(op, NULL, 0);
    ir_tid *w = xmalloc(sizeof *w * (size_t)(n > 0 ? n : 1));
    ir_op_writes(op, w, n);
    bool found = false;
    for (int x = 0; x < n && !found; x++)
        found = w[x] == t;
    free(w);
    return found;
}

/* Ascending order of int64 values, for qsort. */
static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The attentions and row sets that fill `table` — every live op writing it a literal set of one whole row from an
 * attention's result, each row of the table set once — each attention and its set in the order the sets run, into
 * members; the attentions into attns. False when the table is not filled so. */
static bool attended_rows(const struct rules_rewriter *r, ir_tid table, struct list *members, struct list *attns)
{
    int32_t n = ir_slots_len(r->s), nrows = 0;
    int64_t *rows = xmalloc(sizeof *rows * (size_t)(n ? n : 1));
    bool ok = true;
    for (int32_t k = 0; k < n && ok; k++) {
        const struct ir_op *op = rules_slot(r, k);
        if (!op || !writes_tensor(op, table))
            continue;
        int32_t i;
        ok = attended_set(r, k, table, &i, &rows[nrows]);
        if (ok) {
            nrows++;
            list_push(members, i);
            list_push(members, k);
            list_push(attns, i);
        }
    }
    qsort(rows, (size_t)nrows, sizeof *rows, cmp_i64);
    ok = ok && nrows == r->g->tensors[table].rows;
    for (int32_t x = 0; x < nrows && ok; x++)
        ok = rows[x] == x + 1;
    free(rows);
    return ok;
}

/* The gated product at j of one attention's whole result (bf->a): the attention sinks to the product. */
static void gate_attention(struct rules_rewriter *r, int32_t i, int32_t j, ir_tid result)
{
    struct list members = {0}, attns = {0};
    list_push(&members, i);
    list_push(&members, j);
    list_push(&attns, i);
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_ANCHOR] = j;
    bind.tensor[RULES_ROLE_RESULT] = result;
    bind_set(&bind, RULES_ROLE_MEMBERS, &members);
    bind_set(&bind, RULES_ROLE_PRODUCERS, &attns);
    bool ok = rules_guards_hold(r, r->rule, &bind, NULL);
    list_free(&members);
    list_free(&attns);
    if (ok)
        rules_pair(r, IR_CLASS_ATTN_OUTPUT_GATE, i, j, j);
}

/* The gated product at j of a batch's table of attended rows: the attentions and sets sink to the product. */
static void gate_rows(struct rules_rewriter *r, int32_t j, ir_tid table)
{
    struct list members = {0}, attns = {0};
    if (attended_rows(r, table, &members, &attns)) {
        list_push(&members, j);
        struct list sorted_attns = list_with(&attns, -1);
        struct rules_binding bind = rules_binding_empty();
        bind.tensor[RULES_ROLE_RESULT] = table;
        bind_set(&bind, RULES_ROLE_PRODUCERS, &sorted_attns);
        rules_group_at_last(r, IR_CLASS_ATTN_OUTPUT_GATE, members.v, members.n, &bind);
        list_free(&sorted_attns);
    }
    list_free(&members);
    list_free(&attns);
}

/* An attention's whole result gated by an activation's product, unseen by the host and read by nothing else, gated
 * as the attention stores it; or a batch's attentions, each setting its row of one table the product gates whole,
 * gated with their sets as each stores its row: every member sinks to the product past nothing that sees the
 * difference. */
static void apply_attn_output_gate(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *op = rules_slot(r, j);
        if (!op || rules_class(op) != IR_CLASS_GLU_ACT_MUL)
            continue;
        bool whole = true;
        for (int32_t k = 0; k < op->nins; k++)
            whole = whole && !op->access[k].strided;
        struct rules_binary_form bf;
        if (!whole || !rules_binary(op, &bf) || bf.op != IR_EW_MUL || bf.row)
            continue;
        int32_t i = ir_facts_producer(r->s, bf.a);
        if (i >= 0 && plain_attention(rules_slot(r, i)))
            gate_attention(r, i, j, bf.a);
        else if (ir_tensor_len(r->g, bf.b) == bf.n)
            gate_rows(r, j, bf.a);
    }
}

const struct rules_rule rules_rule_attn_output_gate = {
    "attn_output_gate", RULES_GROUP, builds_attn_output_gate, 1, apply_attn_output_gate, guards_attn_output_gate, 4,
    RULES_MOTION_GROUP_AT_LAST,
    "an attention's result (or a batch's table of attended rows) that only a gated product reads is gated as it is "
    "stored: unseen by the host, and every member sinks past nothing that sees the difference"};

/* ── mla_unabsorb_in_fold ────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_mla_unabsorb_in_fold[] = {IR_CLASS_MLA_UNABSORB_IN_FOLD};

/* The expanding product (consumer) moves up to the attention (producer): legal when it crosses no slot that writes
 * what it reads or touches what it writes; it is the attended latent's only reader. */
static const struct rules_atom guards_mla_unabsorb_in_fold[] = {
    {.name = "only_reader", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
    {.name = "no_cross", .kind = RULES_ATOM_NO_CROSS, .a = RULES_ROLE_PRODUCER, .b = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
};

/* Whether op is a per-head product expanding t, a latent attention's whole result (ctx: its spec), into its own
 * buffer. */
static bool expands(const struct ir_op *op, ir_tid t, const void *ctx)
{
    const struct ir_attention *a = ctx;
    if (!rules_is(op, IR_KIND_HEAD_MATMUL) || op->nins < 1 || op->ins[0] != t || op->access[0].strided)
        return false;
    const struct ir_head_matmul *c = &op->spec.u.head_matmul;
    return c->heads == a->h && c->a == a->vd && ir_dst_is_own(&op->dst);
}

/* A latent attention's attended latent, read only by the product expanding it into each head's values, expanded in
 * the attention's place: the product moves up past nothing that writes what it reads or touches what it writes. */
static void apply_mla_unabsorb_in_fold(struct rules_rewriter *r)
{
    for (int32_t i = 0; i < ir_slots_len(r->s); i++) {
        const struct ir_op *op = rules_slot(r, i);
        if (!op || !rules_is(op, IR_KIND_ATTENTION) || !ir_dst_is_own(&op->dst))
            continue;
        struct ir_attention a = op->spec.u.attention;
        if (a.kv != 1 || a.vd >= a.hd)
            continue;
        ir_tid o = op->out;
        int32_t j = reader_such(r, o, expands, &a);
        if (j < 0)
            continue;
        struct rules_binding bind = rules_binding_empty();
        bind.slot[RULES_ROLE_PRODUCER] = i;
        bind.slot[RULES_ROLE_CONSUMER] = j;
        bind.tensor[RULES_ROLE_RESULT] = o;
        if (rules_guards_hold(r, r->rule, &bind, NULL))
            rules_pair(r, IR_CLASS_MLA_UNABSORB_IN_FOLD, i, j, i);
    }
}

const struct rules_rule rules_rule_mla_unabsorb_in_fold = {
    "mla_unabsorb_in_fold", RULES_GROUP, builds_mla_unabsorb_in_fold, 1, apply_mla_unabsorb_in_fold,
    guards_mla_unabsorb_in_fold, 2, RULES_MOTION_HOIST_TO_PRODUCER,
    "the product expanding a latent attention's result, its only reader, runs in the attention's fold: it moves up "
    "past nothing that writes what it reads or touches what it writes"};

/* ── mla_prologue ────────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_mla_prologue[] = {IR_CLASS_MLA_PROLOGUE};

/* Every member moves down to the last one's slot: legal when each sinks past nothing outside the group that writes
 * what it reads or touches what it writes. Each op gathered as made for the attention (PRODUCERS) writes only what
 * the host does not see and the group and the attention (WITHIN) alone read. */
static const struct rules_atom guards_mla_prologue[] = {
    {.name = "made_for", .kind = RULES_ATOM_READ_ONLY_WITHIN, .a = RULES_ROLE_EACH, .g = RULES_ROLE_WITHIN,
     .forall = RULES_ROLE_PRODUCERS, RULES_FROM_SEED},
    {.name = "no_sink_past", .kind = RULES_ATOM_NO_SINK_PAST, .a = RULES_ROLE_EACH, .b = RULES_ROLE_ANCHOR,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_FROM_SEED},
};

/* The query and cache a latent attention leaf of the op at slot `at` reads, or false. */
static bool latent_attention(const struct rules_rewriter *r, int32_t at, ir_tid *q, ir_tid *kc)
{
    const struct ir_op *op = rules_slot(r, at);
    int32_t n = rules_leaves(op, NULL, 0);
    const struct ir_op **leaves = xmalloc(sizeof *leaves * (size_t)(n ? n : 1));
    rules_leaves(op, leaves, n);
    bool found = false;
    for (int32_t x = 0; x < n && !found; x++) {
        const struct ir_op *l = leaves[x];
        if (rules_is(l, IR_KIND_ATTENTION) && l->nins >= 2 && l->spec.u.attention.kv == 1 &&
            l->spec.u.attention.vd < l->spec.u.attention.hd) {
            *q = l->ins[0];
            *kc = l->ins[1];
            found = true;
        }
    }
    free(leaves);
    return found;
}

/* Whether the op at p is made only for the group `members` and the slot at (its `made_for` atom). */
static bool made_for_group(const struct rules_rewriter *r, int atom, int32_t p, const struct list *members,
                           int32_t at)
{
    struct list within = list_with(members, p);
    list_push(&within, at);
    struct list one = {0};
    list_push(&one, p);
    struct rules_binding bind = rules_binding_empty();
    bind_set(&bind, RULES_ROLE_PRODUCERS, &one);
    bind_set(&bind, RULES_ROLE_WITHIN, &within);
    bool ok = atom_holds(r, atom, &bind);
    list_free(&one);
    list_free(&within);
    return ok;
}

/* Grow members by the makers (no later than the slot at) of what they read that are made only for them and the slot
 * at, until none joins; each one gathered also into grown. */
static void gather_made_for(const struct rules_rewriter *r, struct list *members, struct list *grown, int32_t at)
{
    for (bool grew = true; grew;) {
        grew = false;
        struct list snapshot = list_with(members, -1);
        for (int32_t x = 0; x < snapshot.n; x++) {
            const struct ir_op *m = rules_slot(r, snapshot.v[x]);
            for (int32_t k = 0; k < m->nins; k++) {
                int32_t p = ir_facts_maker(r->s, m->ins[k]);
                if (p < 0 || list_has(members, p) || p > at || !made_for_group(r, 0, p, members, at))
                    continue;
                list_push(members, p);
                list_push(grown, p);
                grew = true;
            }
        }
        list_free(&snapshot);
    }
}

/* Whether the group projects (a product of a constant, or merged projections), absorbs (a per-head product) and
 * rotates. */
static bool prologue_shape(const struct rules_rewriter *r, const struct list *members)
{
    bool projects = false, absorbs = false, rotates = false;
    for (int32_t x = 0; x < members->n; x++) {
        const struct ir_op *op = rules_slot(r, members->v[x]);
        struct rules_gemv_form p;
        projects = projects || rules_gemv(op, r->g, &p) || rules_class(op) == IR_CLASS_MERGED_QKV;
        absorbs = absorbs || has_leaf(r, members->v[x], IR_KIND_HEAD_MATMUL);
        rotates = rotates || has_leaf(r, members->v[x], IR_KIND_ROPE);
    }
    return projects && absorbs && rotates;
}

/* Everything a latent attention's query and cache row are made by in its step — the projection of the layer's
 * activation, the latent's norm, the rotations, the cache append and the query's absorption — made only for itself
 * and the attention, as one op before the attention: every member sinks to the last past nothing that sees the
 * difference. */
static void apply_mla_prologue(struct rules_rewriter *r)
{
    for (int32_t at = 0; at < ir_slots_len(r->s); at++) {
        ir_tid q, kc;
        if (!rules_slot(r, at) || !latent_attention(r, at, &q, &kc))
            continue;
        struct list members = {0}, grown = {0};
        for (int32_t k = 0; k < at; k++) {
            const struct ir_op *o = rules_slot(r, k);
            if (o && (o->dst.buf == q || o->dst.buf == kc) && !ir_dst_is_own(&o->dst))
                list_push(&members, k);
        }
        if (members.n > 0) {
            gather_made_for(r, &members, &grown, at);
            if (prologue_shape(r, &members)) {
                struct list within = list_with(&members, at);
                list_sort_unique(&grown);
                struct rules_binding bind = rules_binding_empty();
                bind.slot[RULES_ROLE_CONSUMER] = at;
                bind_set(&bind, RULES_ROLE_PRODUCERS, &grown);
                bind_set(&bind, RULES_ROLE_WITHIN, &within);
                rules_group_at_last(r, IR_CLASS_MLA_PROLOGUE, members.v, members.n, &bind);
                list_free(&within);
            }
        }
        list_free(&members);
        list_free(&grown);
    }
}

const struct rules_rule rules_rule_mla_prologue = {
    "mla_prologue", RULES_GROUP, builds_mla_prologue, 1, apply_mla_prologue, guards_mla_prologue, 2,
    RULES_MOTION_GROUP_AT_LAST,
    "what a latent attention's query and cache row are made by, made only for them, runs as one op before it: every "
    "member sinks past nothing that writes what it reads or touches what it writes"};

/* ── last_layer_rows ─────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_last_layer_rows[] = {IR_CLASS_LAST_LAYER_ROWS};

/* Every member moves down to the row's view: legal when each sinks past nothing outside the group that writes what it
 * reads or touches what it writes (so the cache writes stay before it). Each op of the tail (PRODUCERS) writes only
 * what the host does not see (nor keeps) and the tail (WITHIN) alone reads. */
static const struct rules_atom guards_last_layer_rows[] = {
    {.name = "made_for", .kind = RULES_ATOM_READ_ONLY_WITHIN, .a = RULES_ROLE_EACH, .g = RULES_ROLE_WITHIN,
     .forall = RULES_ROLE_PRODUCERS, RULES_FROM_SEED},
    {.name = "no_sink_past", .kind = RULES_ATOM_NO_SINK_PAST, .a = RULES_ROLE_EACH, .b = RULES_ROLE_ANCHOR,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_FROM_SEED},
};

/* The primitive kinds that compute each row of their result from that row of their activations alone. */
static const enum ir_kind row_wise_kinds[] = {
    IR_KIND_MATMUL, IR_KIND_ELEMENTWISE, IR_KIND_RMS_NORM, IR_KIND_ROPE,        IR_KIND_SILU,    IR_KIND_SIGMOID,
    IR_KIND_GELU,   IR_KIND_RELU,        IR_KIND_SCALE,    IR_KIND_SWIGLU,      IR_KIND_HEAD_MATMUL,
    IR_KIND_ATTENTION, IR_KIND_MOE,      IR_KIND_JOIN,     IR_KIND_L2_NORM,     IR_KIND_HEAD_SLICE,
};

/* Whether a leaf computes row by row (a row-wise primitive, or a quantize). */
static bool row_wise_leaf(const struct ir_op *l)
{
    if (l->sym == IR_SYM_QUANT)
        return true;
    for (size_t k = 0; k < sizeof row_wise_kinds / sizeof row_wise_kinds[0]; k++)
        if (rules_is(l, row_wise_kinds[k]))
            return true;
    return false;
}

/* Whether op computes each row of its result from that row of its activations alone (an attention each query row
 * from its row and the whole cache; a token-sorted mixture each row on its own), writing no state and no rows of a
 * table. */
static bool row_wise(const struct ir_op *op)
{
    int idx[4];
    if (op->dst.row != IR_ROWSEL_NONE || ir_op_state_inputs(op, idx) > 0)
        return false;
    int cls = rules_class(op);
    if (cls == IR_CLASS_MOE_TOKEN_SORT || cls == IR_CLASS_MOE_DEFERRED_FINALIZE)
        return true;
    int32_t n = rules_leaves(op, NULL, 0);
    const struct ir_op **leaves = xmalloc(sizeof *leaves * (size_t)(n ? n : 1));
    rules_leaves(op, leaves, n);
    bool all = true;
    for (int32_t x = 0; x < n && all; x++)
        all = row_wise_leaf(leaves[x]);
    free(leaves);
    return all;
}

/* Whether the op at p joins the tail `members` of a table of `rows` rows: row by row, of the table's rows, and made
 * only for the tail (its `made_for` atom). */
static bool tail_member(const struct rules_rewriter *r, int32_t p, const struct list *members, int64_t rows)
{
    const struct ir_op *op = rules_slot(r, p);
    if (!row_wise(op) || r->g->tensors[op->out].rows != rows)
        return false;
    struct list within = list_with(members, p);
    struct list one = {0};
    list_push(&one, p);
    struct rules_binding bind = rules_binding_empty();
    bind_set(&bind, RULES_ROLE_PRODUCERS, &one);
    bind_set(&bind, RULES_ROLE_WITHIN, &within);
    bool ok = atom_holds(r, 0, &bind);
    list_free(&one);
    list_free(&within);
    return ok;
}

/* Gather the tail of the row at v from the table's producer `first` up: members (v first), the tail into tail. */
static void gather_tail(const struct rules_rewriter *r, int32_t first, int64_t rows, struct list *members,
                        struct list *tail)
{
    struct list frontier = {0};
    list_push(&frontier, first);
    while (frontier.n > 0) {
        int32_t p = frontier.v[--frontier.n];
        if (list_has(members, p) || !tail_member(r, p, members, rows))
            continue;
        list_push(members, p);
        list_push(tail, p);
        const struct ir_op *op = rules_slot(r, p);
        for (int32_t k = 0; k < op->nins; k++) {
            int32_t q = ir_facts_producer(r->s, op->ins[k]);
            if (q >= 0)
                list_push(&frontier, q);
        }
    }
    list_free(&frontier);
}

/* Whether any slot of l holds an attention leaf. */
static bool attends(const struct rules_rewriter *r, const struct list *l)
{
    for (int32_t x = 0; x < l->n; x++)
        if (has_leaf(r, l->v[x], IR_KIND_ATTENTION))
            return true;
    return false;
}

/* A chunk's output row read from its last layer's result: every op of the layer's tail that only that row reads —
 * row by row from the attention on, read by nothing but the tail — computes with it, as one op at the row's place:
 * every member sinks to the row past nothing that sees the difference, so the cache writes stay before it. */
static void apply_last_layer_rows(struct rules_rewriter *r)
{
    for (int32_t v = 0; v < ir_slots_len(r->s); v++) {
        const struct ir_op *view = rules_slot(r, v);
        if (!view || view->sym != IR_SYM_VIEW || view->nins < 1)
            continue;
        const struct ir_tensor *t = &r->g->tensors[view->ins[0]];
        if (t->rows < 2 || t->cols < 1 || view->view_offset % t->cols != 0)
            continue;
        int32_t first = ir_facts_producer(r->s, view->ins[0]);
        if (first < 0)
            continue;
        struct list members = {0}, tail = {0};
        list_push(&members, v);
        gather_tail(r, first, t->rows, &members, &tail);
        if (attends(r, &members) && members.n > 2) {
            struct list within = list_with(&members, -1);
            list_sort_unique(&tail);
            struct rules_binding bind = rules_binding_empty();
            bind.slot[RULES_ROLE_CONSUMER] = v;
            bind_set(&bind, RULES_ROLE_PRODUCERS, &tail);
            bind_set(&bind, RULES_ROLE_WITHIN, &within);
            rules_group_at_last(r, IR_CLASS_LAST_LAYER_ROWS, members.v, members.n, &bind);
            list_free(&within);
        }
        list_free(&members);
        list_free(&tail);
    }
}

const struct rules_rule rules_rule_last_layer_rows = {
    "last_layer_rows", RULES_GROUP, builds_last_layer_rows, 1, apply_last_layer_rows, guards_last_layer_rows, 2,
    RULES_MOTION_GROUP_AT_LAST,
    "the ops of a chunk's last-layer tail that only its output row reads compute just that row, at the row's view: "
    "each made only for the tail, and every member sinks past nothing that writes what it reads or touches what it "
    "writes"};
