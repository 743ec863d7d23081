/* rules/rules_moe.c — the rules over mixture-of-experts shapes: a mixture's shared expert inside it, a block's
 * one-row mixtures as one over their rows, and a mixture's combine deferred to the next add-and-norm.
 *
 * Every matcher finds a shape and binds roles; whether moving the members is legal is decided by the rule's guard
 * atoms alone. */
#include "rules.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
           rules_size_mul(m->down.m, m->down.n) == bf.n && gm.m == m->down.m && ir_dst_is_own(&m->mf.dst) &&
           ir_dst_is_own(&m->down.dst);
}

/* Fold a matched shared expert into its mixture at the sum's slot, when the guards hold and the chip runs it. */
static void fold_shared_expert(struct rules_rewriter *r, const struct shared_match *m)
{
    struct rules_list members = {0};
    int32_t order[4] = {m->pm, m->pg, m->pd, m->j};
    for (int i = 0; i < 4; i++)
        rules_list_push(&members, order[i]);
    rules_list_sort_unique(&members);
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_CONSUMER] = m->j;
    bind.slot[RULES_ROLE_PRODUCER] = m->pd;
    bind.slot[RULES_ROLE_ANCHOR] = m->j;
    bind.tensor[RULES_ROLE_SOURCE] = m->mixed;
    bind.tensor[RULES_ROLE_OTHER] = m->shared;
    bind.tensor[RULES_ROLE_INPUT] = m->hidden;
    rules_bind_list(&bind, RULES_ROLE_MEMBERS, &members);
    bool ok = rules_guards_hold(r, r->rule, &bind, NULL);
    rules_list_free(&members);
    if (!ok)
        return;
    /* The mixture's operands as it reads them, the pair's weights, the down product's weights. */
    const struct ir_op *mop = rules_slot(r, m->pm), *glu = rules_slot(r, m->pg);
    int32_t nins = mop->nins + (glu->nins - 1) + 1;
    ir_tid *ins = rules_xmalloc(sizeof *ins * (size_t)nins);
    struct ir_access *access = rules_xmalloc(sizeof *access * (size_t)nins);
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
    if (a->sym == IR_SYM_PRIM && !ir_spec_equal(&a->spec, &b->spec)) /* every field, the routing's among them */
        return false;
    for (int32_t k = 1; k < a->nins; k++)
        if (a->ins[k] != b->ins[k])
            return false;
    return true;
}

/* Whether the row's view is read by its own mixture alone, as the seed asks, while views_read_within is active (the
 * atom asks it within the group and unobserved: a view another mixture of the group reads would pass it). */
static bool own_view(const struct rules_rewriter *r, const struct moe_row *e)
{
    return !rules_atom_active(r->rule, "views_read_within") || rules_sole_reader(r, rules_slot(r, e->v)->out, e->i);
}

/* Fold one group of mixture rows (e[0..n), rows in order) into one mixture over the rows at the last mixture. The
 * folded op is the table, written whole, so the group must fill every row of it (the seed folds the rows it has,
 * F21). */
static void fold_moe_rows(struct rules_rewriter *r, const struct moe_row *e, int32_t n)
{
    if (!rules_seed_rules() && n != r->g->tensors[e[0].table].rows)
        return;
    int32_t lo = -1, hi = -1;
    struct rules_list ours = {0}, views = {0};
    for (int32_t k = 0; k < n; k++) {
        if (e[k].row != k || !rules_slot(r, e[k].i) || !rules_slot(r, e[k].v) ||
            !moe_alike(rules_slot(r, e[k].i), rules_slot(r, e[0].i)) || !own_view(r, &e[k])) {
            rules_list_free(&ours);
            rules_list_free(&views);
            return;
        }
        int32_t low = e[k].i < e[k].v ? e[k].i : e[k].v;
        lo = lo < 0 || low < lo ? low : lo;
        hi = e[k].i > hi ? e[k].i : hi;
        rules_list_push(&ours, e[k].i);
        rules_list_push(&ours, e[k].v);
        rules_list_push(&views, e[k].v);
    }
    struct rules_list members = rules_list_with(&ours, -1);
    rules_list_sort_unique(&views);
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_FIRST] = lo;
    bind.slot[RULES_ROLE_ANCHOR] = hi;
    bind.tensor[RULES_ROLE_TABLE] = e[0].table;
    rules_bind_list(&bind, RULES_ROLE_MEMBERS, &members);
    rules_bind_list(&bind, RULES_ROLE_PRODUCERS, &views);
    bool ok = members.n == 2 * n && rules_guards_hold(r, r->rule, &bind, NULL);
    if (ok) {
        /* The stacked rows whole, then the last mixture's weights. */
        const struct ir_op *last = rules_slot(r, hi);
        int32_t nins = last->nins;
        ir_tid *ins = rules_xmalloc(sizeof *ins * (size_t)nins);
        struct ir_access *access = rules_xmalloc(sizeof *access * (size_t)nins);
        memset(access, 0, sizeof *access * (size_t)nins);
        ins[0] = e[0].src;
        for (int32_t k = 1; k < nins; k++)
            ins[k] = last->ins[k];
        /* The op writes the table whole, as its own buffer: what the mixtures' rows fill. */
        ir_tid out = e[0].table;
        struct ir_dst dst = ir_dst_own(out);
        int32_t *gone = rules_xmalloc(sizeof *gone * (size_t)ours.n);
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
    rules_list_free(&members);
    rules_list_free(&ours);
    rules_list_free(&views);
}

/* A block's mixtures — each over a row of a stacked tensor read through a view, writing the same row of a table — as
 * one mixture over the rows, each routed on its own, each expert's weights read once for every row that chose it:
 * every member sinks to the last mixture past nothing that sees the difference. */
static void apply_moe_rows(struct rules_rewriter *r)
{
    int32_t n = ir_slots_len(r->s), count = 0;
    struct moe_row *e = rules_xmalloc(sizeof *e * (size_t)(n ? n : 1));
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
    struct rules_list members = {0};
    rules_list_push(&members, m);
    rules_list_push(&members, j);
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_PRODUCER] = m;
    bind.slot[RULES_ROLE_CONSUMER] = j;
    bind.slot[RULES_ROLE_ANCHOR] = j;
    bind.tensor[RULES_ROLE_SOURCE] = t;
    bind.tensor[RULES_ROLE_RESULT] = t;
    rules_bind_list(&bind, RULES_ROLE_MEMBERS, &members);
    bool ok = rules_guards_hold(r, r->rule, &bind, NULL);
    rules_list_free(&members);
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
