/* ir/eval_moe.c — mixtures of experts: routing (softmax or sigmoid scores, groups, top-k, normalised and scaled
 * weights), each chosen expert's gated product, the weighted sum in rank order; and a prefill's mixtures (one op a
 * row) batched per expert with the bits each op gives alone. */
#include "eval_values.h"

#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* An expert's probability and index, for ranking. */
struct ranked {
    float p;
    int64_t i;
};

/* Rank order: the larger probability first, NaN after every number, ties to the lower index (a total order, so
 * the sort's own stability does not matter). */
static int rank_cmp(const void *pa, const void *pb)
{
    const struct ranked *a = pa, *b = pb;
    bool na = a->p != a->p, nb = b->p != b->p;
    if (na != nb)
        return na ? 1 : -1;
    if (!na && a->p != b->p)
        return a->p > b->p ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* The k experts a router picks among those keep allows (all without keep), in rank order, into sel (room for k); rk
 * has room for every expert. */
static void top_k(const float *prob, const bool *keep, int64_t experts, int64_t k, struct ranked *rk, int64_t *sel)
{
    int64_t n = 0;
    for (int64_t x = 0; x < experts; x++)
        if (!keep || keep[x])
            rk[n++] = (struct ranked){prob[x], x};
    qsort(rk, (size_t)n, sizeof *rk, rank_cmp);
    for (int64_t r = 0; r < k; r++)
        sel[r] = rk[r].i;
}

/* x clamped to [lo, hi] (NaN stays NaN). */
static float clampf(float x, float lo, float hi)
{
    return x > hi ? hi : x < lo ? lo : x;
}

/* The clamped SwiGLU of a gate g and an up u: g' = g clamped above at limit, u' = u clamped to ±limit,
 * (g' · σ(alpha · g')) · (u' + 1). */
static float clamped_swiglu(float g, float u, float alpha, float limit)
{
    float gc = g > limit ? limit : g;
    float t = alpha * gc;
    float glu = gc * sigmoidf(t);
    float u1 = clampf(u, -limit, limit) + 1.0f;
    return glu * u1;
}

/* A mixture's expert activation of gate g and up u. */
static float moe_act(const struct ir_moe *s, float g, float u)
{
    if (s->act == IR_MOE_CLAMPED_SWIGLU)
        return clamped_swiglu(g, u, (float)s->alpha.v, (float)s->limit.v);
    float a = s->act == IR_MOE_GEGLU ? geluf(g) : siluf(g);
    return a * u;
}

/* v[i] += b[i] for i < n (a bias row added to a product; no-op without one). */
static void add_bias(float *v, const float *b, int64_t n)
{
    for (int64_t i = 0; b && i < n; i++)
        v[i] = v[i] + b[i];
}

/* The softmax of v[0..n) in place: the largest subtracted (scanning upward), then each exp over their sum. */
static void softmax_inplace(float *v, int64_t n)
{
    float m = v[0];
    for (int64_t i = 1; i < n; i++)
        if (v[i] > m)
            m = v[i];
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        v[i] = expf(v[i] - m);
        sum += v[i];
    }
    for (int64_t i = 0; i < n; i++)
        v[i] = v[i] / sum;
}

/* A mixture's routing room: the choosing scores and which experts compete (experts each), the groups' scores and
 * the kept groups (groups each), the ranking room (experts). */
struct moe_route_room {
    float *choose, *gs;
    bool *keep;
    int64_t *kept;
    struct ranked *rk;
};

/* The experts that compete under group-limited choice, from the choosing scores ch: each group scored by the sum of
 * its two best (in rank order), the topk_groups best groups (in rank order) kept whole. */
static void moe_keep_groups(const struct ir_moe *s, const float *ch, struct moe_route_room *m)
{
    int64_t size = s->experts / s->groups;
    for (int64_t j = 0; j < s->groups; j++) {
        int64_t two[2];
        top_k(ch + j * size, NULL, size, 2, m->rk, two);
        m->gs[j] = ch[j * size + two[0]] + ch[j * size + two[1]];
    }
    top_k(m->gs, NULL, s->groups, s->topk_groups, m->rk, m->kept);
    for (int64_t e = 0; e < s->experts; e++)
        m->keep[e] = false;
    for (int64_t r = 0; r < s->topk_groups; r++)
        for (int64_t i = 0; i < size; i++)
            m->keep[m->kept[r] * size + i] = true;
}

/* Whether a mixture's routing fields can be evaluated (the validator's rules; an unchecked graph may break them). */
static bool moe_routing_ok(const struct ir_moe *s)
{
    if (s->groups < 0 || s->topk_groups < 0 || (s->groups > 0) != (s->topk_groups > 0))
        return false;
    return s->groups == 0 || (s->experts % s->groups == 0 && s->experts / s->groups >= 2 &&
                              s->topk_groups <= s->groups && s->topk_groups * (s->experts / s->groups) >= s->k);
}

/* Allocate a mixture's routing room (free it with moe_room_free); whether it was. */
static bool moe_room_alloc(const struct ir_moe *s, struct moe_route_room *m)
{
    size_t e = (size_t)s->experts, g = (size_t)max64(s->groups, 1);
    m->choose = calloc(e, sizeof *m->choose);
    m->gs = calloc(g, sizeof *m->gs);
    m->keep = calloc(e, sizeof *m->keep);
    m->kept = calloc(g, sizeof *m->kept);
    m->rk = calloc(e, sizeof *m->rk);
    return m->choose && m->gs && m->keep && m->kept && m->rk;
}

/* Free a mixture's routing room. */
static void moe_room_free(struct moe_route_room *m)
{
    free(m->choose);
    free(m->gs);
    free(m->keep);
    free(m->kept);
    free(m->rk);
}

/* The scores of a router's logits lg in place: a softmax over every expert, σ of each (sigmoid), or the logits
 * themselves (topk_softmax). */
static void moe_score(const struct ir_moe *s, float *lg)
{
    if (s->topk_softmax)
        return;
    if (!s->sigmoid)
        softmax_inplace(lg, s->experts);
    for (int64_t e = 0; s->sigmoid && e < s->experts; e++)
        lg[e] = sigmoidf(lg[e]);
}

/* A router's choice from its logits lg[experts] (overwritten by the scores): the k experts in rank order into ix and
 * their weights into w. The scores (plus the correction row corr, when there is one) choose, among the kept groups'
 * experts with groups; the chosen scores weigh: a softmax over the k (topk_softmax), renormalised over their sum (in
 * rank order; not with no_renorm), then each times scale when present. */
static void moe_route(const struct ir_moe *s, float *lg, const float *corr, struct moe_route_room *m, int64_t *ix,
                      float *w)
{
    moe_score(s, lg);
    const float *ch = lg;
    if (corr) {
        for (int64_t e = 0; e < s->experts; e++)
            m->choose[e] = lg[e] + corr[e];
        ch = m->choose;
    }
    if (s->groups > 0)
        moe_keep_groups(s, ch, m);
    top_k(ch, s->groups > 0 ? m->keep : NULL, s->experts, s->k, m->rk, ix);
    for (int64_t r = 0; r < s->k; r++)
        w[r] = lg[ix[r]];
    if (s->topk_softmax && s->k > 0)
        softmax_inplace(w, s->k);
    if (!s->topk_softmax && !s->no_renorm) {
        float wsum = 0.0f;
        for (int64_t r = 0; r < s->k; r++)
            wsum += w[r];
        for (int64_t r = 0; r < s->k; r++)
            w[r] = w[r] / wsum;
    }
    for (int64_t r = 0; s->scale.has && r < s->k; r++)
        w[r] = (float)s->scale.v * w[r];
}

/* A mixture's operands: x and the four matrices, with bias the four bias rows, with correction its row (each NULL
 * without). */
struct moe_args {
    const float *x, *rb, *gb, *ub, *db, *corr;
    struct wts R, G, U, D;
};

/* Read a mixture's operands into a; 0, or -1 with err. */
static int moe_args_get(struct ev *e, const struct ir_moe *s, struct moe_args *a)
{
    int64_t wide = mulc(s->experts, s->dff);
    memset(a, 0, sizeof *a);
    a->x = ir_ev_arg(e, 0, s->d);
    if (!a->x || ir_ev_wts_get(e, 1, s->d, s->experts, &a->R) || ir_ev_wts_get(e, 2, s->d, wide, &a->G) ||
        ir_ev_wts_get(e, 3, s->d, wide, &a->U) || ir_ev_wts_get(e, 4, s->dff, mulc(s->experts, s->d), &a->D))
        return -1;
    if (s->correction && !(a->corr = ir_ev_arg(e, s->bias ? 9 : 5, s->experts)))
        return -1;
    if (!s->bias)
        return 0;
    a->rb = ir_ev_arg(e, 5, s->experts);
    a->gb = a->rb ? ir_ev_arg(e, 6, wide) : NULL;
    a->ub = a->gb ? ir_ev_arg(e, 7, wide) : NULL;
    a->db = a->ub ? ir_ev_arg(e, 8, mulc(s->experts, s->d)) : NULL;
    return a->db ? 0 : -1;
}

int ir_ev_moe(struct ev *e)
{
    const struct ir_moe *s = &e->op->spec.u.moe;
    if (ir_ev_sizes_ok(e, (const int64_t[]){s->d, s->k, s->dff, s->experts}, 4))
        return -1;
    if (s->experts < 1 || s->k > s->experts || (int)s->act < 0 || s->act >= IR_MOE_COUNT)
        return ir_ev_fail(e, "top-%lld of %lld experts", (long long)s->k, (long long)s->experts);
    if (!moe_routing_ok(s))
        return ir_ev_fail(e, "top-%lld of %lld experts in %lld groups, %lld kept", (long long)s->k,
                    (long long)s->experts, (long long)s->groups, (long long)s->topk_groups);
    struct moe_args a;
    if (moe_args_get(e, s, &a))
        return -1;
    float *y = ir_ev_result(e, s->d);
    float *prob = y ? ir_ev_scratch(e, s->experts) : NULL;
    float *gate = prob ? ir_ev_scratch(e, s->dff) : NULL, *up = gate ? ir_ev_scratch(e, s->dff) : NULL;
    float *down = up ? ir_ev_scratch(e, s->d) : NULL;
    float *w = down ? ir_ev_scratch(e, max64(s->k, 1)) : NULL;
    if (!w)
        return -1;
    struct moe_route_room room;
    int64_t *ix = calloc((size_t)max64(s->k, 1), sizeof *ix);
    if (!moe_room_alloc(s, &room) || !ix) {
        moe_room_free(&room);
        free(ix);
        return ir_ev_fail(e, "out of memory");
    }
    ir_eval_wts_matmul(&a.R, 0, s->d, 0, s->experts, a.x, 1, s->d, prob, s->experts);
    add_bias(prob, a.rb, s->experts);
    moe_route(s, prob, a.corr, &room, ix, w);
    for (int64_t i = 0; i < s->d; i++)
        y[i] = 0.0f;
    for (int64_t r = 0; r < s->k; r++) {
        int64_t ex = ix[r];
        ir_eval_wts_matmul(&a.G, 0, s->d, ex * s->dff, s->dff, a.x, 1, s->d, gate, s->dff);
        ir_eval_wts_matmul(&a.U, 0, s->d, ex * s->dff, s->dff, a.x, 1, s->d, up, s->dff);
        add_bias(gate, a.gb ? a.gb + ex * s->dff : NULL, s->dff);
        add_bias(up, a.ub ? a.ub + ex * s->dff : NULL, s->dff);
        for (int64_t j = 0; j < s->dff; j++)
            gate[j] = moe_act(s, gate[j], up[j]);
        ir_eval_wts_matmul(&a.D, 0, s->dff, ex * s->d, s->d, gate, 1, s->dff, down, s->d);
        add_bias(down, a.db ? a.db + ex * s->d : NULL, s->d);
        for (int64_t i = 0; i < s->d; i++) {
            float t = w[r] * down[i];
            y[i] += t;
        }
    }
    moe_room_free(&room);
    free(ix);
    return 0;
}

/* ── Mixtures batched per expert ──────────────────────────────────────────────────────────────────────────── */

/* A prefill's mixture is one moe op a row, each row gathered from the normed rows before it and set into the
 * layer's table after. Those ops are evaluated together when they reach the first: every row routed, then each
 * expert's rows multiplied at once (a product of several rows keeps each output's sum, so each row's values are the
 * ones its own op computes), each row's result summed in its own rank order. A run is batched only where doing so
 * early changes nothing another op of the run reads or writes; elsewhere each op runs alone. */

#define MOE_BATCH_MAX 4096

/* Whether op is primitive op of kind k. */
static bool is_kind(const struct ir_op *op, enum ir_kind k)
{
    return op->sym == IR_SYM_PRIM && op->spec.kind == k;
}

/* Whether op writes tensor t: its result, its destination, or (set_row) the table it updates. */
static bool op_writes(const struct ir_op *op, ir_tid t)
{
    return op->out == t || op->dst.buf == t || (is_kind(op, IR_KIND_SET_ROW) && op->nins > 0 && op->ins[0] == t);
}

/* Whether op reads tensor t. */
static bool op_reads(const struct ir_op *op, ir_tid t)
{
    for (int32_t k = 0; k < op->nins; k++)
        if (op->ins[k] == t)
            return true;
    return false;
}

/* Whether two optional reals are alike. */
static bool optf_same(struct ir_optf a, struct ir_optf b) { return a.has == b.has && (!a.has || a.v == b.v); }

/* Whether two mixtures' specs are alike. */
static bool moe_spec_same(const struct ir_moe *a, const struct ir_moe *b)
{
    return a->d == b->d && a->k == b->k && a->dff == b->dff && a->experts == b->experts && a->act == b->act &&
           a->bias == b->bias && a->topk_softmax == b->topk_softmax && a->sigmoid == b->sigmoid &&
           a->no_renorm == b->no_renorm && a->correction == b->correction && a->groups == b->groups &&
           a->topk_groups == b->topk_groups && optf_same(a->scale, b->scale) && optf_same(a->alpha, b->alpha) &&
           optf_same(a->limit, b->limit);
}

/* Whether op b is the mixture a on another row: a moe of a's spec reading a's weights, every operand read whole. */
static bool same_mixture(const struct ir_op *a, const struct ir_op *b)
{
    if (!is_kind(b, IR_KIND_MOE) || b->nins != a->nins || !b->access || !moe_spec_same(&a->spec.u.moe, &b->spec.u.moe))
        return false;
    for (int32_t k = 0; k < b->nins; k++)
        if (b->access[k].strided || (k > 0 && b->ins[k] != a->ins[k]))
            return false;
    return true;
}

/* Whether no op of ops[from, to) writes t. */
static bool unwritten(const struct ir_op *ops, int32_t from, int32_t to, ir_tid t)
{
    for (int32_t p = from; p < to; p++)
        if (op_writes(&ops[p], t))
            return false;
    return true;
}

/* The gather (a row gather or a view) in ops(i, j) that computes mixture j's row, when j can be computed at i: its
 * row gathered from values no op of ops[i, j) writes, that row written by nothing else there nor read by ops[i], its
 * weights written by nothing there, its result neither read nor written there, and its destination written there
 * only by the batch's earlier mixtures (whose results are placed before j's). -1 when it cannot. */
static int32_t moe_early_gather(const struct ir_op *ops, int32_t i, int32_t j)
{
    ir_tid x = ops[j].ins[0];
    int32_t g = -1;
    if (op_reads(&ops[i], x))
        return -1;
    for (int32_t p = i + 1; p < j; p++) {
        const struct ir_op *op = &ops[p];
        bool member = same_mixture(&ops[i], op); /* an earlier op of the batch: its result placed before j's */
        if (op_reads(op, ops[j].out) || op_reads(op, ops[j].dst.buf) || op_writes(op, ops[j].out) ||
            (!member && op_writes(op, ops[j].dst.buf)))
            return -1;
        if (op_writes(op, x)) {
            bool gather = is_kind(op, IR_KIND_ROW_GATHER) || op->sym == IR_SYM_VIEW;
            if (g != -1 || !gather || op->out != x || op->dst.buf != x)
                return -1;
            g = p;
        }
        for (int32_t k = 1; k < ops[j].nins; k++)
            if (op_writes(op, ops[j].ins[k]))
                return -1;
    }
    if (g < 0)
        return -1;
    for (int32_t k = 0; k < ops[g].nins; k++)
        if (!unwritten(ops, i, g, ops[g].ins[k]))
            return -1;
    return g;
}

/* The mixtures computed with ops[i] (into at[], their gathers into gat[]): the moe ops after it of the same mixture,
 * up to the first op that is no row gather, set_row or such a mixture, each while it can be computed at i. Their
 * count (ops[i] first). */
static int32_t moe_batch_of(const struct ir_op *ops, int32_t n, int32_t i, int32_t *at, int32_t *gat)
{
    int32_t nb = 1;
    at[0] = i;
    gat[0] = -1;
    for (int32_t j = i + 1; j < n && nb < MOE_BATCH_MAX; j++) {
        if (is_kind(&ops[j], IR_KIND_ROW_GATHER) || is_kind(&ops[j], IR_KIND_SET_ROW) || ops[j].sym == IR_SYM_VIEW)
            continue;
        if (!same_mixture(&ops[i], &ops[j]) || (gat[nb] = moe_early_gather(ops, i, j)) < 0)
            break;
        at[nb++] = j;
    }
    return nb;
}

/* A batch's room: rows × d inputs, the router's rows × experts, each row's k choices and weights, each row's k
 * expert outputs (d each), and an expert's rows' inputs, gates, ups and downs. */
struct moe_batch_room {
    float *x, *prob, *w, *outs, *xe, *gate, *up, *down;
    int64_t *ix, *rows_of;
};

/* Free a batch's room. */
static void moe_batch_free(struct moe_batch_room *b)
{
    free(b->x);
    free(b->prob);
    free(b->w);
    free(b->outs);
    free(b->xe);
    free(b->gate);
    free(b->up);
    free(b->down);
    free(b->ix);
    free(b->rows_of);
}

/* Allocate a batch's room for nb rows; whether it was. */
static bool moe_batch_alloc(const struct ir_moe *s, int64_t nb, struct moe_batch_room *b)
{
    size_t r = (size_t)nb, k = (size_t)max64(s->k, 1), d = (size_t)s->d, f = (size_t)s->dff;
    memset(b, 0, sizeof *b);
    b->x = malloc(sizeof(float) * r * d + 1);
    b->prob = malloc(sizeof(float) * r * (size_t)s->experts + 1);
    b->w = malloc(sizeof(float) * r * k);
    b->outs = malloc(sizeof(float) * r * k * d + 1);
    b->xe = malloc(sizeof(float) * r * d + 1);
    b->gate = malloc(sizeof(float) * r * f + 1);
    b->up = malloc(sizeof(float) * r * f + 1);
    b->down = malloc(sizeof(float) * r * d + 1);
    b->ix = malloc(sizeof(int64_t) * r * k);
    b->rows_of = malloc(sizeof(int64_t) * r * k);
    return b->x && b->prob && b->w && b->outs && b->xe && b->gate && b->up && b->down && b->ix && b->rows_of;
}

/* Expert ex's rows of the batch (the (row, rank) pairs b->rows_of lists, cnt of them) through its gate, up and down,
 * each row's output into its slot of b->outs. */
static void moe_expert_rows(const struct ir_moe *s, const struct moe_args *a, struct moe_batch_room *b, int64_t ex,
                            int64_t cnt)
{
    for (int64_t c = 0; c < cnt; c++)
        memcpy(b->xe + c * s->d, b->x + b->rows_of[c] / max64(s->k, 1) * s->d, sizeof(float) * (size_t)s->d);
    ir_eval_wts_matmul(&a->G, 0, s->d, ex * s->dff, s->dff, b->xe, cnt, s->d, b->gate, s->dff);
    ir_eval_wts_matmul(&a->U, 0, s->d, ex * s->dff, s->dff, b->xe, cnt, s->d, b->up, s->dff);
    for (int64_t c = 0; c < cnt; c++) {
        float *gate = b->gate + c * s->dff, *up = b->up + c * s->dff;
        add_bias(gate, a->gb ? a->gb + ex * s->dff : NULL, s->dff);
        add_bias(up, a->ub ? a->ub + ex * s->dff : NULL, s->dff);
        for (int64_t j = 0; j < s->dff; j++)
            gate[j] = moe_act(s, gate[j], up[j]);
    }
    ir_eval_wts_matmul(&a->D, 0, s->dff, ex * s->d, s->d, b->gate, cnt, s->dff, b->down, s->d);
    for (int64_t c = 0; c < cnt; c++) {
        add_bias(b->down + c * s->d, a->db ? a->db + ex * s->d : NULL, s->d);
        memcpy(b->outs + b->rows_of[c] * s->d, b->down + c * s->d, sizeof(float) * (size_t)s->d);
    }
}

/* Route every row of the batch, then run each expert over its rows. 0, or -1 with err. */
static int moe_batch_experts(struct ev *e, const struct ir_moe *s, const struct moe_args *a, int64_t nb,
                             struct moe_batch_room *b)
{
    struct moe_route_room room;
    int64_t k = s->k;
    if (!moe_room_alloc(s, &room)) {
        moe_room_free(&room);
        return ir_ev_fail(e, "out of memory");
    }
    ir_eval_wts_matmul(&a->R, 0, s->d, 0, s->experts, b->x, nb, s->d, b->prob, s->experts);
    for (int64_t r = 0; r < nb; r++) {
        add_bias(b->prob + r * s->experts, a->rb, s->experts);
        moe_route(s, b->prob + r * s->experts, a->corr, &room, b->ix + r * k, b->w + r * k);
    }
    moe_room_free(&room);
    for (int64_t ex = 0; ex < s->experts; ex++) {
        int64_t cnt = 0;
        for (int64_t slot = 0; slot < nb * k; slot++)
            if (b->ix[slot] == ex)
                b->rows_of[cnt++] = slot; /* row slot / k, its rank slot % k */
        if (cnt)
            moe_expert_rows(s, a, b, ex, cnt);
    }
    return 0;
}

/* Each batched op's result: Σ over its row's ranks in order of weight × output, then placed. 0, or -1 with err. */
static int moe_batch_results(struct ev *e, const struct ir_op *ops, const int32_t *at, int64_t nb,
                             const struct moe_batch_room *b)
{
    const struct ir_moe *s = &ops[at[0]].spec.u.moe;
    for (int64_t r = 0; r < nb; r++) {
        e->op = &ops[at[r]];
        e->top = e->scope ? e->top : at[r];
        float *y = ir_ev_result(e, s->d);
        if (!y)
            return -1;
        for (int64_t i = 0; i < s->d; i++)
            y[i] = 0.0f;
        for (int64_t q = 0; q < s->k; q++) {
            const float *o = b->outs + (r * s->k + q) * s->d;
            for (int64_t i = 0; i < s->d; i++) {
                float t = b->w[r * s->k + q] * o[i];
                y[i] += t;
            }
        }
        if (ir_ev_place(e))
            return -1;
    }
    return 0;
}

/* Evaluate the batch: ops[at[0]] and the mixtures after it whose gathers (gat) run first. 0, or -1 with err. */
static int moe_batch_run(struct ev *e, const struct ir_op *ops, const int32_t *at, const int32_t *gat, int64_t nb)
{
    int32_t top = e->top;
    for (int64_t r = 0; r < nb; r++)
        if (ir_ev_check_scope(e, &ops[at[r]]))
            return -1;
    for (int64_t r = 1; r < nb; r++) {
        e->top = e->scope ? top : gat[r]; /* a fused op's parts keep its index */
        int rc = ir_ev_eval_op(e, &ops[gat[r]], 0);
        if (rc)
            return rc;
    }
    e->top = top;
    e->op = &ops[at[0]];
    const struct ir_moe *s = &e->op->spec.u.moe;
    struct moe_args a;
    struct moe_batch_room b;
    if (moe_args_get(e, s, &a))
        return -1;
    int rc = moe_batch_alloc(s, nb, &b) ? 0 : ir_ev_fail(e, "out of memory for a batch of %lld rows", (long long)nb);
    for (int64_t r = 0; rc == 0 && r < nb; r++) {
        e->op = &ops[at[r]];
        const float *x = ir_ev_arg(e, 0, s->d);
        if (!x)
            rc = -1;
        else
            memcpy(b.x + r * s->d, x, sizeof(float) * (size_t)s->d);
    }
    e->op = &ops[at[0]];
    if (rc == 0)
        rc = moe_batch_experts(e, s, &a, nb, &b);
    if (rc == 0)
        rc = moe_batch_results(e, ops, at, nb, &b);
    moe_batch_free(&b);
    ir_ev_scratch_free(e);
    for (int64_t r = 1; rc == 0 && r < nb; r++)
        e->done[at[r]] = true;
    return rc;
}

int ir_ev_moe_batched(struct ev *e, const struct ir_op *ops, int32_t n, int32_t i)
{
    const struct ir_op *op = &ops[i];
    if (e->hooks || !is_kind(op, IR_KIND_MOE) || !same_mixture(op, op) || !moe_routing_ok(&op->spec.u.moe))
        return 1;
    const struct ir_moe *s = &op->spec.u.moe;
    if (s->experts < 1 || s->k > s->experts || s->k < 0 || (int)s->act < 0 || s->act >= IR_MOE_COUNT ||
        ir_ev_sizes_ok(e, (const int64_t[]){s->d, s->k, s->dff, s->experts}, 4))
        return 1; /* its own evaluation says why */
    int32_t *at = malloc(sizeof(int32_t) * 2 * MOE_BATCH_MAX);
    if (!at)
        return 1;
    int32_t nb = moe_batch_of(ops, n, i, at, at + MOE_BATCH_MAX);
    if (nb < 2 || (!e->done && !(e->done = calloc((size_t)n, sizeof *e->done)))) {
        free(at);
        return 1;
    }
    e->op = op;
    int rc = moe_batch_run(e, ops, at, at + MOE_BATCH_MAX, nb);
    free(at);
    return rc;
}

