/* rules/optimize.c — the rule table and the optimizer that runs it: the views pre-pass, each step in order with the
 * chip's rules at their positions, holds and dry runs, argmax_advance, the numerics fold and the late rules. */
#include "rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shared table, in the order the rules apply. */
static const struct rules_rule *const shared_table[] = {
#define X(name) &rules_rule_##name,
    RULES_SHARED(X)
#undef X
};

/* The rules that apply once every product's activation is quantized where it is read. */
static const struct rules_rule *const late_table[] = {&rules_rule_merged_projections};

const struct rules_rule *const *rules_table(int *n)
{
    *n = (int)(sizeof shared_table / sizeof shared_table[0]);
    return shared_table;
}

const struct rules_rule *rules_advance(void) { return &rules_rule_argmax_advance; }

const struct rules_rule *const *rules_late(int *n)
{
    *n = (int)(sizeof late_table / sizeof late_table[0]);
    return late_table;
}

const struct rules_rule *rules_find(const char *name)
{
    int n;
    const struct rules_rule *const *t = rules_table(&n);
    for (int i = 0; i < n; i++)
        if (rules_same_name(t[i]->name, name))
            return t[i];
    t = rules_late(&n);
    for (int i = 0; i < n; i++)
        if (rules_same_name(t[i]->name, name))
            return t[i];
    return rules_same_name(name, rules_advance()->name) ? rules_advance() : NULL;
}

/* ── The views pre-pass ──────────────────────────────────────────────────────────────────────────────────── */

/* Every op's in-place writes, by tensor: the ops that write tensor t in place (t one of their state inputs) are
 * at[first[t] .. first[t + 1]), ascending. */
struct in_place_writers {
    int32_t *first, *at;
};

/* Whether t is a tensor of g. */
static bool tensor_ok(const struct ir_graph *g, ir_tid t) { return t >= 0 && t < g->ntensors; }

/* The in-place writers of every tensor of g (a counting sort over the ops' state inputs). */
static struct in_place_writers in_place_writers(const struct ir_graph *g)
{
    struct in_place_writers w = {calloc((size_t)g->ntensors + 2, sizeof *w.first), NULL};
    if (!w.first)
        abort();
    int idx[4];
    for (int32_t k = 0; k < g->nops; k++)
        for (int i = 0, n = ir_op_state_inputs(&g->ops[k], idx); i < n; i++)
            if (tensor_ok(g, g->ops[k].ins[idx[i]]))
                w.first[g->ops[k].ins[idx[i]] + 2]++;
    for (ir_tid t = 0; t < g->ntensors; t++)
        w.first[t + 2] += w.first[t + 1];
    w.at = malloc(sizeof *w.at * (size_t)(w.first[g->ntensors + 1] + 1));
    if (!w.at)
        abort();
    for (int32_t k = 0; k < g->nops; k++)
        for (int i = 0, n = ir_op_state_inputs(&g->ops[k], idx); i < n; i++)
            if (tensor_ok(g, g->ops[k].ins[idx[i]]))
                w.at[w.first[g->ops[k].ins[idx[i]] + 1]++] = k;
    return w; /* first[t] now starts t's writers */
}

/* Whether an op at a slot k, lo <= k < hi, writes t in place. */
static bool written_in_place(const struct in_place_writers *w, ir_tid t, int32_t lo, int32_t hi)
{
    int32_t a = w->first[t], b = w->first[t + 1];
    while (a < b) { /* the first writer at or after lo */
        int32_t mid = a + (b - a) / 2;
        if (w->at[mid] < lo)
            a = mid + 1;
        else
            b = mid;
    }
    return a < w->first[t + 1] && w->at[a] < hi;
}

/* The lifted ops, each literal row of a computed table read in place as a view, unless the table is written in
 * place before the row's last reader (then the row is copied where the program takes it). */
static struct ir_op *views(const struct ir_graph *g)
{
    int32_t *last_reader = malloc(sizeof *last_reader * (size_t)(g->ntensors + 1));
    struct ir_op *ops = malloc(sizeof *ops * (size_t)(g->nops + 1));
    if (!last_reader || !ops)
        abort();
    struct in_place_writers w = in_place_writers(g);
    for (ir_tid t = 0; t < g->ntensors; t++)
        last_reader[t] = -1;
    for (int32_t k = 0; k < g->nops; k++)
        for (int32_t i = 0; i < g->ops[k].nins; i++)
            last_reader[g->ops[k].ins[i]] = k;
    for (int32_t i = 0; i < g->nops; i++) {
        const struct ir_op *op = &g->ops[i];
        ops[i] = ir_op_clone(op);
        if (!rules_is(op, IR_KIND_ROW_GATHER) || op->spec.u.row_gather.index.kind != IR_RIDX_LITERAL)
            continue;
        const struct ir_row_gather *rg = &op->spec.u.row_gather;
        ir_tid table = op->ins[0];
        if (g->tensors[table].role == IR_ROLE_CONSTANT || rg->index.literal < 1 || rg->index.literal > rg->rows)
            continue;
        int32_t last = last_reader[op->out] > i ? last_reader[op->out] : i + 1;
        if (written_in_place(&w, table, i + 1, last < g->nops ? last : g->nops))
            continue;
        ops[i].sym = IR_SYM_VIEW;
        ops[i].view_offset = (rg->index.literal - 1) * rg->cols;
    }
    free(w.first);
    free(w.at);
    free(last_reader);
    return ops;
}

/* ── Steps ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* What a step runs: a shared rule, a chip rule, or the numerics fold. */
struct step {
    const char *name;
    const enum ir_class *builds;
    int nbuilds;
    const struct rules_rule *rule;      /* a shared rule */
    const struct shim_chip_rule *chip;  /* a chip rule */
    bool fold;                          /* the numerics fold */
};

/* Run a step's body on r. */
static void run_body(struct rules_rewriter *r, const struct step *st)
{
    if (st->rule)
        st->rule->apply(r);
    else if (st->chip)
        st->chip->apply(r, r->shim);
    else
        rules_numerics_fold(r, true);
}

/* Whether name is among the held steps. */
static bool is_held(const char *const *held, int nheld, const char *name)
{
    for (int i = 0; i < nheld; i++)
        if (held[i] && rules_same_name(held[i], name))
            return true;
    return false;
}

/* Why the chip does not link the classes a step builds, and the reason's stable code (the class's own, beneath the
 * class's name the text starts with), or false when it links them all. */
static bool unlinked(const struct shim *shim, const enum ir_class *builds, int n, char why[IR_ERR_LEN],
                     const char **code)
{
    for (int i = 0; i < n; i++) {
        struct shim_support s = shim->supports(shim, builds[i]);
        if (s.kind == SHIM_DECOMPOSE) {
            snprintf(why, IR_ERR_LEN, "the chip runs `%s` as its parts", ir_class_name(builds[i]));
            *code = rules_reason_code(shim, why, true);
            return true;
        }
        if (s.kind == SHIM_REFUSE) {
            snprintf(why, IR_ERR_LEN, "%s: %s", ir_class_name(builds[i]), s.why ? s.why : "refused");
            *code = rules_reason_code(shim, s.why, true);
            return true;
        }
    }
    return false;
}

/* Run st on r's slots borrowed (its changes undone after) and its tensors, linking `linking` classes; report each
 * firing as `then` (held, or refused with why and its code) and each refusal met as it is. */
static void dry(struct rules_rewriter *r, const struct step *st, const enum ir_class *linking, int nlinking,
                enum rules_outcome then, const char *why, const char *code)
{
    struct rules_report scratch = {0};
    /* Only the numerics fold adds tensors: the other steps' dry runs share the working graph's. */
    struct ir_graph *g = st->fold ? ir_graph_clone_tensors(r->g) : NULL;
    struct rules_rewriter d = *r;
    d.g = g ? g : r->g;
    d.borrowed = true;
    d.dry = true;
    d.journal = !st->fold; /* the fold replaces the slots wholesale: it works on a copy */
    d.report = &scratch;
    d.linking = linking;
    d.nlinking = nlinking;
    run_body(&d, st);
    /* The decisions move to the compile's report, a firing written as `then`. */
    for (int32_t i = 0; i < scratch.n; i++) {
        struct rules_decision x = scratch.d[i];
        if (x.outcome == RULES_FIRED) {
            free(x.why);
            x.outcome = then;
            x.why = then == RULES_REFUSED && why ? strdup(why) : NULL;
            x.code = then == RULES_REFUSED ? code : NULL;
        }
        rules_report_take(r->report, x);
    }
    free(scratch.d);
    if (!d.borrowed && d.journal)
        ir_slots_rollback(d.s);
    else if (!d.borrowed)
        ir_slots_free(d.s);
    ir_graph_free(g);
}

/* Run one step: held → a dry run reporting held; a class the chip does not link → a dry run reporting refused;
 * else for real. */
static void run_step(struct rules_rewriter *r, const struct step *st, const char *const *held, int nheld)
{
    char why[IR_ERR_LEN];
    const char *code = NULL;
    r->step = st->name;
    r->rule = st->chip ? (const struct rules_rule *)st->chip->rule : st->rule;
    r->building = st->nbuilds ? st->builds[0] : IR_CLASS_GEMV_QUANT;
    if (is_held(held, nheld, st->name) || (r->shim->holds && r->shim->holds(r->shim, st->name)))
        dry(r, st, NULL, 0, RULES_HELD, NULL, NULL);
    else if (unlinked(r->shim, st->builds, st->nbuilds, why, &code))
        dry(r, st, st->builds, st->nbuilds, RULES_REFUSED, why, code);
    else
        run_body(r, st);
}

/* A step for a shared rule. */
static struct step shared_step(const struct rules_rule *rule)
{
    return (struct step){rule->name, rule->builds, rule->nbuilds, rule, NULL, false};
}

/* Run (or list) the chip rules linked at position pos relative to anchor. */
static void chip_rules_at(const struct shim *shim, enum shim_position pos, const char *anchor,
                          void (*each)(const struct step *st, void *ctx), void *ctx)
{
    for (int i = 0; i < shim->nrules; i++) {
        const struct shim_chip_rule *c = &shim->rules[i];
        if (c->position != pos || (anchor && (!c->anchor || !rules_same_name(c->anchor, anchor))))
            continue;
        struct step st = {c->name, c->builds, c->nbuilds, NULL, c, false};
        each(&st, ctx);
    }
}

/* Visit every step in the order a compile under shim runs them (the advance step is not holdable and not visited). */
static void each_step(const struct shim *shim, void (*each)(const struct step *st, void *ctx), void *ctx)
{
    int n;
    const struct rules_rule *const *table = rules_table(&n);
    for (int i = 0; i < n; i++) {
        chip_rules_at(shim, SHIM_BEFORE, table[i]->name, each, ctx);
        struct step st = shared_step(table[i]);
        each(&st, ctx);
        chip_rules_at(shim, SHIM_AFTER, table[i]->name, each, ctx);
    }
    static const enum ir_class quant[] = {IR_CLASS_GEMV_QUANT};
    struct step fold = {"fused_quant", quant, 0, NULL, NULL, true};
    each(&fold, ctx);
    const struct rules_rule *const *late = rules_late(&n);
    for (int i = 0; i < n; i++) {
        chip_rules_at(shim, SHIM_BEFORE, late[i]->name, each, ctx);
        struct step st = shared_step(late[i]);
        each(&st, ctx);
        chip_rules_at(shim, SHIM_AFTER, late[i]->name, each, ctx);
    }
    chip_rules_at(shim, SHIM_END, NULL, each, ctx);
}

/* What each_step's callback needs while optimizing. */
struct run_ctx {
    struct rules_rewriter *r;
    const char *const *held;
    int nheld;
    int left;      /* steps still to run; negative: all */
    bool advanced; /* argmax_advance has run */
};

/* Run argmax_advance on r when the chip links it: the arg-max that picks the next token moves the step on. */
static void advance(struct rules_rewriter *r)
{
    const struct rules_rule *adv = rules_advance();
    char why[IR_ERR_LEN];
    const char *code;
    if (unlinked(r->shim, adv->builds, adv->nbuilds, why, &code))
        return;
    r->step = adv->name;
    r->rule = adv;
    r->building = adv->builds[0];
    adv->apply(r);
}

/* Run one visited step; argmax_advance runs right before the numerics fold. */
static void run_visited(const struct step *st, void *vctx)
{
    struct run_ctx *c = vctx;
    if (c->left == 0)
        return;
    if (c->left > 0)
        c->left--;
    if (st->fold) {
        /* argmax_advance closes the table right before the fold; it is never held. */
        advance(c->r);
        c->advanced = true;
        c->r->step = "fused_quant";
        c->r->rule = NULL;
        c->r->building = IR_CLASS_GEMV_QUANT;
        bool fold = !is_held(c->held, c->nheld, "fused_quant");
        if (!fold)
            dry(c->r, st, NULL, 0, RULES_HELD, NULL, NULL);
        rules_numerics_fold(c->r, fold);
    } else {
        run_step(c->r, st, c->held, c->nheld);
    }
}

int rules_optimize(const struct ir_graph *g, const struct shim *shim, const char *const *held, int nheld,
                   struct rules_optimized *out, char err[IR_ERR_LEN])
{
    return rules_optimize_steps(g, shim, held, nheld, -1, out, err);
}

int rules_optimize_steps(const struct ir_graph *g, const struct shim *shim, const char *const *held, int nheld,
                         int nsteps, struct rules_optimized *out, char err[IR_ERR_LEN])
{
    memset(out, 0, sizeof *out);
    err[0] = '\0';
    struct ir_op *lifted;
    if (shim->supports(shim, IR_CLASS_STRIDED_READ).kind == SHIM_NATIVE) {
        lifted = views(g);
    } else {
        lifted = malloc(sizeof *lifted * (size_t)(g->nops + 1));
        if (!lifted)
            abort();
        for (int32_t i = 0; i < g->nops; i++)
            lifted[i] = ir_op_clone(&g->ops[i]);
    }
    struct ir_graph *work = ir_graph_clone_tensors(g);
    struct rules_rewriter r = {0};
    r.g = work;
    r.s = ir_slots_new(work, lifted, g->nops);
    r.shim = shim;
    r.report = &out->report;
    out->report.seed_rules = rules_seed_rules();
    struct run_ctx ctx = {&r, held, nheld, nsteps, false};
    each_step(shim, run_visited, &ctx);
    if (!ctx.advanced)
        advance(&r);
    int32_t n;
    struct ir_op *ops = ir_slots_into_ops(r.s, &n);
    ir_slots_free(r.s);
    /* The rewritten ops keep their covers as they are (an inserted op may cover nothing). */
    free(work->ops);
    work->ops = ops;
    work->nops = work->ops_cap = n;
    out->graph = work;
    return 0;
}

void rules_optimized_free(struct rules_optimized *o)
{
    ir_graph_free(o->graph);
    rules_report_free(&o->report);
    memset(o, 0, sizeof *o);
}

/* A callback that lists a step's name. */
struct list_ctx {
    void (*step)(const char *name, void *ctx);
    void *ctx;
};

/* Pass a visited step's name on. */
static void list_visited(const struct step *st, void *vctx)
{
    struct list_ctx *c = vctx;
    c->step(st->name, c->ctx);
}

void rules_steps(const struct shim *shim, void (*step)(const char *name, void *ctx), void *ctx)
{
    struct list_ctx c = {step, ctx};
    each_step(shim, list_visited, &c);
}

/* What rules_step_linked looks for and finds. */
struct linked_ctx {
    const struct shim *shim;
    const char *name;
    bool found, linked;
};

/* Note whether the visited step, when it is the one sought, builds only classes the chip links. */
static void linked_visited(const struct step *st, void *vctx)
{
    struct linked_ctx *c = vctx;
    char why[IR_ERR_LEN];
    const char *code;
    if (c->found || !rules_same_name(st->name, c->name))
        return;
    c->found = true;
    c->linked = !unlinked(c->shim, st->builds, st->nbuilds, why, &code);
}

bool rules_step_linked(const struct shim *shim, const char *name)
{
    struct linked_ctx c = {shim, name, false, false};
    each_step(shim, linked_visited, &c);
    return c.linked;
}
