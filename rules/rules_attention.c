/* rules/rules_attention.c — the rules around attention: a gated attention's output gate, a latent attention's value
 * expansion and its prologue, and a chunk's last-layer rows computed from its attention on.
 *
 * Every matcher finds a shape and binds roles; whether moving the members is legal is decided by the rule's guard
 * atoms alone. Where a group grows by "what is made only for it", the growth asks the rule's own `made_for` atom, so
 * the atom (and a build that drops it) decides the growth as it decides the final group. */
#include "rules.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ── Helpers ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* Whether the running rule's atom at `index` alone holds under b; an atom this build drops holds. A group that grows
 * by what is made only for it asks its `made_for` atom this way. */
static bool atom_holds(const struct rules_rewriter *r, int index, const struct rules_binding *b)
{
    struct rules_rule one = *r->rule;
    one.guards = &r->rule->guards[index];
    one.nguards = 1;
    return rules_guards_hold(r, &one, b, NULL);
}

/* Whether the op at slot i has a leaf that is a primitive of kind k. */
static bool has_leaf(const struct rules_rewriter *r, int32_t i, enum ir_kind k)
{
    const struct ir_op *op = rules_slot(r, i);
    int32_t n = rules_leaves(op, NULL, 0);
    const struct ir_op **leaves = rules_xmalloc(sizeof *leaves * (size_t)(n ? n : 1));
    rules_leaves(op, leaves, n);
    bool found = false;
    for (int32_t x = 0; x < n && !found; x++)
        found = rules_is(leaves[x], k);
    free(leaves);
    return found;
}

/* ── attn_output_gate ────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_attn_output_gate[] = {IR_CLASS_ATTN_OUTPUT_GATE};

/* The attentions (and their row sets) move down to the gated product: legal when each sinks past nothing outside the
 * group that writes what it reads or touches what it writes. What the product gates (RESULT: an attention's result,
 * or the table of a batch's rows) is unseen by the host and read only by the group — while readers_within is active
 * the matcher asks the seed's exact readers: the product alone, or the product and the row sets (seed_readers) —
 * and so is each attention's result. */
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
    ir_tid *w = rules_xmalloc(sizeof *w * (size_t)(n > 0 ? n : 1));
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

/* The attentions and row sets that fill `table` for the gated product at j — every live op writing it a literal set
 * of one whole row from an attention's result, each row of the table set once, each set before j (the product gates
 * the table as its sets store it: a set after it would store a row the product never saw; the seed takes a set
 * anywhere, F20) — each attention and its set in the order the sets run, into members; the attentions into attns.
 * False when the table is not filled so. */
static bool attended_rows(const struct rules_rewriter *r, ir_tid table, int32_t j, struct rules_list *members,
                          struct rules_list *attns)
{
    int32_t n = ir_slots_len(r->s), nrows = 0;
    int64_t *rows = rules_xmalloc(sizeof *rows * (size_t)(n ? n : 1));
    bool ok = true;
    for (int32_t k = 0; k < n && ok; k++) {
        const struct ir_op *op = rules_slot(r, k);
        if (!op || !writes_tensor(op, table))
            continue;
        int32_t i;
        ok = (k < j || rules_seed_rules()) && attended_set(r, k, table, &i, &rows[nrows]);
        if (ok) {
            nrows++;
            rules_list_push(members, i);
            rules_list_push(members, k);
            rules_list_push(attns, i);
        }
    }
    qsort(rows, (size_t)nrows, sizeof *rows, cmp_i64);
    ok = ok && nrows == r->g->tensors[table].rows;
    for (int32_t x = 0; x < nrows && ok; x++)
        ok = rows[x] == x + 1;
    free(rows);
    return ok;
}

/* Whether the readers of `result` are those the seed allows while the readers_within atom is active: the gated
 * product alone (one attention's result), or the product and the table's row sets (a batch's table). The atom asks
 * them within the group, which an attention reading its own result or the table would pass; the seed asks this. */
static bool seed_readers(const struct rules_rewriter *r, ir_tid result, int32_t j, const struct rules_list *sets)
{
    if (!rules_atom_active(r->rule, "readers_within"))
        return true;
    int32_t n;
    const int32_t *rd = ir_facts_reader_list(r->s, result, &n);
    bool ok = true;
    for (int32_t k = 0; k < n && ok; k++) {
        ok = rd[k] == j;
        for (int32_t x = 0; sets && x < sets->n && !ok; x++)
            ok = rd[k] == sets->v[x];
    }
    return ok;
}

/* The gated product at j of one attention's whole result (bf->a): the attention sinks to the product. */
static void gate_attention(struct rules_rewriter *r, int32_t i, int32_t j, ir_tid result)
{
    if (!seed_readers(r, result, j, NULL))
        return;
    struct rules_list members = {0}, attns = {0};
    rules_list_push(&members, i);
    rules_list_push(&members, j);
    rules_list_push(&attns, i);
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_ANCHOR] = j;
    bind.tensor[RULES_ROLE_RESULT] = result;
    rules_bind_list(&bind, RULES_ROLE_MEMBERS, &members);
    rules_bind_list(&bind, RULES_ROLE_PRODUCERS, &attns);
    bool ok = rules_guards_hold(r, r->rule, &bind, NULL);
    rules_list_free(&members);
    rules_list_free(&attns);
    if (ok)
        rules_pair(r, IR_CLASS_ATTN_OUTPUT_GATE, i, j, j);
}

/* The gated product at j of a batch's table of attended rows: the attentions and sets sink to the product. */
static void gate_rows(struct rules_rewriter *r, int32_t j, ir_tid table)
{
    struct rules_list members = {0}, attns = {0}, sets = {0};
    bool found = attended_rows(r, table, j, &members, &attns);
    for (int32_t x = 1; found && x < members.n; x += 2) /* members: each attention, then its set */
        rules_list_push(&sets, members.v[x]);
    if (found && seed_readers(r, table, j, &sets)) {
        rules_list_push(&members, j);
        struct rules_list sorted_attns = rules_list_with(&attns, -1);
        struct rules_binding bind = rules_binding_empty();
        bind.tensor[RULES_ROLE_RESULT] = table;
        rules_bind_list(&bind, RULES_ROLE_PRODUCERS, &sorted_attns);
        rules_group_at_last(r, IR_CLASS_ATTN_OUTPUT_GATE, members.v, members.n, &bind);
        rules_list_free(&sorted_attns);
    }
    rules_list_free(&members);
    rules_list_free(&attns);
    rules_list_free(&sets);
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
        int32_t j = rules_reader_such(r, o, expands, &a);
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
    const struct ir_op **leaves = rules_xmalloc(sizeof *leaves * (size_t)(n ? n : 1));
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
static bool made_for_group(const struct rules_rewriter *r, int atom, int32_t p, const struct rules_list *members,
                           int32_t at)
{
    struct rules_list within = rules_list_with(members, p);
    rules_list_push(&within, at);
    struct rules_list one = {0};
    rules_list_push(&one, p);
    struct rules_binding bind = rules_binding_empty();
    rules_bind_list(&bind, RULES_ROLE_PRODUCERS, &one);
    rules_bind_list(&bind, RULES_ROLE_WITHIN, &within);
    bool ok = atom_holds(r, atom, &bind);
    rules_list_free(&one);
    rules_list_free(&within);
    return ok;
}

/* Grow members by the makers (no later than the slot at) of what they read that are made only for them and the slot
 * at, until none joins; each one gathered also into grown. */
static void gather_made_for(const struct rules_rewriter *r, struct rules_list *members, struct rules_list *grown, int32_t at)
{
    for (bool grew = true; grew;) {
        grew = false;
        struct rules_list snapshot = rules_list_with(members, -1);
        for (int32_t x = 0; x < snapshot.n; x++) {
            const struct ir_op *m = rules_slot(r, snapshot.v[x]);
            for (int32_t k = 0; k < m->nins; k++) {
                int32_t p = ir_facts_maker(r->s, m->ins[k]);
                if (p < 0 || rules_list_has(members, p) || p > at || !made_for_group(r, 0, p, members, at))
                    continue;
                rules_list_push(members, p);
                rules_list_push(grown, p);
                grew = true;
            }
        }
        rules_list_free(&snapshot);
    }
}

/* Whether the group projects (a product of a constant, or merged projections), absorbs (a per-head product) and
 * rotates. */
static bool prologue_shape(const struct rules_rewriter *r, const struct rules_list *members)
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

/* The slots before `at` whose op places its result into q or kc (not its own buffer), ascending, into members: each
 * writes q or kc, so they are found among those tensors' writers. */
static void placed_into(const struct rules_rewriter *r, ir_tid q, ir_tid kc, int32_t at, struct rules_list *members)
{
    struct rules_list writers = {0};
    ir_tid both[2] = {q, kc};
    for (int x = 0; x < 2; x++) {
        int32_t n = ir_facts_writers(r->s, both[x], NULL, 0);
        int32_t *w = rules_xmalloc(sizeof *w * (size_t)(n + 1));
        ir_facts_writers(r->s, both[x], w, n);
        for (int32_t k = 0; k < n; k++)
            rules_list_push(&writers, w[k]);
        free(w);
    }
    rules_list_sort_unique(&writers);
    for (int32_t x = 0; x < writers.n && writers.v[x] < at; x++) {
        const struct ir_op *o = rules_slot(r, writers.v[x]);
        if (o && (o->dst.buf == q || o->dst.buf == kc) && !ir_dst_is_own(&o->dst))
            rules_list_push(members, writers.v[x]);
    }
    rules_list_free(&writers);
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
        struct rules_list members = {0}, grown = {0};
        placed_into(r, q, kc, at, &members);
        if (members.n > 0) {
            gather_made_for(r, &members, &grown, at);
            if (prologue_shape(r, &members)) {
                struct rules_list within = rules_list_with(&members, at);
                rules_list_sort_unique(&grown);
                struct rules_binding bind = rules_binding_empty();
                bind.slot[RULES_ROLE_CONSUMER] = at;
                rules_bind_list(&bind, RULES_ROLE_PRODUCERS, &grown);
                rules_bind_list(&bind, RULES_ROLE_WITHIN, &within);
                rules_group_at_last(r, IR_CLASS_MLA_PROLOGUE, members.v, members.n, &bind);
                rules_list_free(&within);
            }
        }
        rules_list_free(&members);
        rules_list_free(&grown);
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
    const struct ir_op **leaves = rules_xmalloc(sizeof *leaves * (size_t)(n ? n : 1));
    rules_leaves(op, leaves, n);
    bool all = true;
    for (int32_t x = 0; x < n && all; x++)
        all = row_wise_leaf(leaves[x]);
    free(leaves);
    return all;
}

/* Whether the op at p joins the tail `members` of a table of `rows` rows: row by row, of the table's rows, and made
 * only for the tail (its `made_for` atom). */
static bool tail_member(const struct rules_rewriter *r, int32_t p, const struct rules_list *members, int64_t rows)
{
    const struct ir_op *op = rules_slot(r, p);
    if (!row_wise(op) || r->g->tensors[op->out].rows != rows)
        return false;
    struct rules_list within = rules_list_with(members, p);
    struct rules_list one = {0};
    rules_list_push(&one, p);
    struct rules_binding bind = rules_binding_empty();
    rules_bind_list(&bind, RULES_ROLE_PRODUCERS, &one);
    rules_bind_list(&bind, RULES_ROLE_WITHIN, &within);
    bool ok = atom_holds(r, 0, &bind);
    rules_list_free(&one);
    rules_list_free(&within);
    return ok;
}

/* Gather the tail of the row at v from the table's producer `first` up: members (v first), the tail into tail. */
static void gather_tail(const struct rules_rewriter *r, int32_t first, int64_t rows, struct rules_list *members,
                        struct rules_list *tail)
{
    struct rules_list frontier = {0};
    rules_list_push(&frontier, first);
    while (frontier.n > 0) {
        int32_t p = frontier.v[--frontier.n];
        if (rules_list_has(members, p) || !tail_member(r, p, members, rows))
            continue;
        rules_list_push(members, p);
        rules_list_push(tail, p);
        const struct ir_op *op = rules_slot(r, p);
        for (int32_t k = 0; k < op->nins; k++) {
            int32_t q = ir_facts_producer(r->s, op->ins[k]);
            if (q >= 0)
                rules_list_push(&frontier, q);
        }
    }
    rules_list_free(&frontier);
}

/* Whether any slot of l holds an attention leaf. */
static bool attends(const struct rules_rewriter *r, const struct rules_list *l)
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
        struct rules_list members = {0}, tail = {0};
        rules_list_push(&members, v);
        gather_tail(r, first, t->rows, &members, &tail);
        if (attends(r, &members) && members.n > 2) {
            struct rules_list within = rules_list_with(&members, -1);
            rules_list_sort_unique(&tail);
            struct rules_binding bind = rules_binding_empty();
            bind.slot[RULES_ROLE_CONSUMER] = v;
            rules_bind_list(&bind, RULES_ROLE_PRODUCERS, &tail);
            rules_bind_list(&bind, RULES_ROLE_WITHIN, &within);
            rules_group_at_last(r, IR_CLASS_LAST_LAYER_ROWS, members.v, members.n, &bind);
            rules_list_free(&within);
        }
        rules_list_free(&members);
        rules_list_free(&tail);
    }
}

const struct rules_rule rules_rule_last_layer_rows = {
    "last_layer_rows", RULES_GROUP, builds_last_layer_rows, 1, apply_last_layer_rows, guards_last_layer_rows, 2,
    RULES_MOTION_GROUP_AT_LAST,
    "the ops of a chunk's last-layer tail that only its output row reads compute just that row, at the row's view: "
    "each made only for the tail, and every member sinks past nothing that writes what it reads or touches what it "
    "writes"};
