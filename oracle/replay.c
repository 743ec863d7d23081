/* oracle/replay.c — counterexamples that replay. A counterexample is an abstract schedule; to show it failing on the
 * optimizer it becomes a concrete graph: the rule's firing case (a fixture the rule fires on) with the schedule's
 * other ops inserted where the schedule puts them relative to the rule's bound ops — a writer (`scale` of a fresh
 * input) for each tensor the op writes, a reader (`scale` into a fresh observed tensor) for each it reads — and the
 * schedule's flags and roles given to the tensors it names. The fixture's bound ops and tensors come from running the
 * optimizer on it with the trace hook; the schedule's tensors map to the bound tensors, or to what a bound op reads
 * or writes. Then the optimizer with the atom dropped runs on it and the two evaluations are compared, as
 * `fusecheck diff` does. */
#include "oracle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void oracle_replay_free(struct oracle_replay *r)
{
    free(r->text);
    memset(r, 0, sizeof *r);
}

/* ── The fixture ─────────────────────────────────────────────────────────────────────────────────────────── */

/* The binding the rule fired under on the fixture (slots are the fixture's op indices). */
struct capture {
    const char *rule;
    bool have, fired;
    struct rules_binding b;
    int32_t *store;  /* the sets' members */
    int32_t nstore;
    int32_t half[2];
};

/* The trace hook: keep the rule's last guard binding; stop at its first firing. */
static void capture_hook(enum rules_trace_kind kind, const struct rules_rewriter *r, const struct rules_rule *rule,
                         const struct rules_binding *b, enum ir_class cls, int32_t at, void *ctx)
{
    (void)cls;
    (void)at;
    struct capture *c = ctx;
    if (c->fired)
        return;
    if (kind == RULES_TRACE_FIRED) {
        c->fired = c->have && r->step && strcmp(r->step, c->rule) == 0;
        return;
    }
    if (!rule || !b || strcmp(rule->name, c->rule) != 0)
        return;
    c->have = true;
    c->b = *b;
    int32_t at_store = 0;
    for (int g = 0; g < RULES_ROLE_COUNT; g++) {
        c->b.set[g] = NULL;
        if (!b->set[g] || b->nset[g] <= 0 || at_store + b->nset[g] > c->nstore)
            continue;
        memcpy(c->store + at_store, b->set[g], sizeof *c->store * (size_t)b->nset[g]);
        c->b.set[g] = c->store + at_store;
        at_store += b->nset[g];
    }
    c->half[0] = ir_facts_producer(r->s, b->tensor[RULES_ROLE_INPUT]);
    c->half[1] = ir_facts_producer(r->s, b->tensor[RULES_ROLE_OTHER]);
}

/* Split a comma-separated list into held[] (pointers into copy); their count. */
static int split_holds(char *copy, const char **held, int cap)
{
    int n = 0;
    for (char *tok = strtok(copy, ","); tok && n < cap; tok = strtok(NULL, ","))
        held[n++] = tok;
    return n;
}

/* Run the optimizer on the fixture and capture the rule's binding. 0 when it fired. */
static int capture_binding(const struct ir_graph *g, const char *shim_name, const char *hold, struct capture *c,
                           char err[IR_ERR_LEN])
{
    struct shim *shim = shim_lookup(shim_name, err);
    if (!shim)
        return 1;
    char *copy = strdup(hold);
    const char *held[64];
    int nheld = copy ? split_holds(copy, held, 64) : 0;
    struct rules_optimized out;
    rules_trace(capture_hook, c);
    int rc = rules_optimize(g, shim, held, nheld, &out, err);
    rules_trace(NULL, NULL);
    if (rc == 0)
        rules_optimized_free(&out);
    free(copy);
    shim_free(shim);
    if (rc == 0 && !c->fired) {
        snprintf(err, IR_ERR_LEN, "the rule does not fire on its fixture");
        return 1;
    }
    return rc;
}

/* ── Mapping the schedule onto the fixture ───────────────────────────────────────────────────────────────── */

/* The role kinds of the role table. */
static const char role_kind[] = {
#define X(e, s, k) k,
    RULES_ROLES(X)
#undef X
};

/* For each schedule op, the fixture op it is (-1: an op to insert). */
static int32_t *map_ops(const struct oracle_sched *cex, const struct capture *c, int32_t nfix)
{
    int32_t *map = oracle_xcalloc((size_t)cex->nops, sizeof *map);
    for (int k = 0; k < cex->nops; k++)
        map[k] = -1;
    for (int r = 1; r < RULES_ROLE_COUNT; r++) {
        if (role_kind[r] == 'S' && r != RULES_ROLE_EACH) {
            int32_t x = cex->bind.slot[r], y = c->b.slot[r];
            if (x >= 0 && x < cex->nops && y >= 0 && y < nfix)
                map[x] = y;
        }
        if (role_kind[r] != 'G' || !cex->bind.set[r] || !c->b.set[r])
            continue;
        int32_t n1 = cex->bind.nset[r], n2 = c->b.nset[r];
        int32_t *a = oracle_xcalloc((size_t)n1, sizeof *a), *b = oracle_xcalloc((size_t)n2, sizeof *b);
        memcpy(a, cex->bind.set[r], sizeof *a * (size_t)n1);
        memcpy(b, c->b.set[r], sizeof *b * (size_t)n2);
        qsort(a, (size_t)n1, sizeof *a, rules_cmp_i32);
        qsort(b, (size_t)n2, sizeof *b, rules_cmp_i32);
        for (int32_t i = 0; i < n1 && n2 > 0; i++)
            if (a[i] >= 0 && a[i] < cex->nops && map[a[i]] < 0)
                map[a[i]] = b[i < n2 ? i : n2 - 1];
        free(a);
        free(b);
    }
    for (int h = 0; h < 2; h++)
        if (cex->half[h] >= 0 && cex->half[h] < cex->nops && c->half[h] >= 0)
            map[cex->half[h]] = c->half[h];
    return map;
}

/* Whether tensor t of the fixture is one the capture binds to a role. */
static bool bound_tensor(const struct capture *c, ir_tid t)
{
    for (int r = 1; r < RULES_ROLE_COUNT; r++)
        if (role_kind[r] == 'T' && c->b.tensor[r] == t)
            return true;
    return false;
}

/* The fixture tensor schedule tensor t stands for: the one bound to the same role, else one that a mapped op reads
 * (or writes) as the schedule's op does; IR_NONE when none. */
static ir_tid map_tensor(const struct oracle_sched *cex, const struct capture *c, const int32_t *ops,
                         const struct ir_graph *g, int t)
{
    for (int r = 1; r < RULES_ROLE_COUNT; r++)
        if (role_kind[r] == 'T' && cex->bind.tensor[r] == t && c->b.tensor[r] >= 0)
            return c->b.tensor[r];
    for (int k = 0; k < cex->nops; k++) {
        if (ops[k] < 0)
            continue;
        const struct ir_op *op = &g->ops[ops[k]];
        if (cex->writes[k * cex->ntensors + t] && !bound_tensor(c, op->out))
            return op->out;
        if (!cex->reads[k * cex->ntensors + t])
            continue;
        for (int32_t i = 0; i < op->nins; i++)
            if (!bound_tensor(c, op->ins[i]) && g->tensors[op->ins[i]].role != IR_ROLE_CONSTANT)
                return op->ins[i];
    }
    return IR_NONE;
}

/* ── Building the graph ──────────────────────────────────────────────────────────────────────────────────── */

/* A fresh tensor shaped like t (its name from prefix and a counter). */
static ir_tid fresh_like(struct ir_graph *g, ir_tid t, const char *prefix, enum ir_role role, int *counter)
{
    char name[64];
    for (;;) {
        snprintf(name, sizeof name, "%s_%d", prefix, (*counter)++);
        if (ir_tensor_find(g, name, strlen(name)) == IR_NONE)
            break;
    }
    const struct ir_tensor *x = &g->tensors[t];
    return ir_tensor_add(g, name, x->elem, x->rows, x->cols, role);
}

/* A scale op (factor f) of x into out, whole. */
static struct ir_op scale_op(const struct ir_graph *g, ir_tid x, ir_tid out, double f)
{
    struct ir_op op = ir_op_prim(IR_KIND_SCALE, &x, 1, out);
    op.spec.u.scale.n = ir_tensor_len(g, x);
    op.spec.u.scale.factor = f;
    return op;
}

/* Whether the op's read (or write) set holds t. */
static bool op_touches(const struct ir_op *op, ir_tid t, bool write)
{
    ir_tid v[256];
    int n = write ? ir_op_writes(op, v, 256) : ir_op_reads(op, v, 256);
    for (int i = 0; i < n && i < 256; i++)
        if (v[i] == t)
            return true;
    return false;
}

/* Append the schedule op k's accesses as ops: a reader of each mapped tensor it reads, then a writer of each it
 * writes (making that tensor state) — only those `op` (the fixture op k stands for, or NULL) lacks. */
static void emit_op(struct ir_graph *g, const struct oracle_sched *cex, int k, const ir_tid *tmap, int *counter,
                    const struct ir_op *op)
{
    for (int t = 0; t < cex->ntensors; t++) {
        ir_tid x = tmap[t];
        if (x == IR_NONE || !cex->reads[k * cex->ntensors + t] || cex->writes[k * cex->ntensors + t])
            continue;
        if (op && op_touches(op, x, false))
            continue;
        ir_tid seen = fresh_like(g, x, "oracle_reads", IR_ROLE_ACTIVATION, counter);
        g->tensors[seen].observed = true;
        ir_graph_push(g, scale_op(g, x, seen, 1.0));
    }
    for (int t = 0; t < cex->ntensors; t++) {
        ir_tid x = tmap[t];
        if (x == IR_NONE || !cex->writes[k * cex->ntensors + t] || (op && op_touches(op, x, true)))
            continue;
        g->tensors[x].role = IR_ROLE_STATE;
        g->tensors[x].checkpoint = false;
        /* An integer (an index a row or a position names) is set to 0, in place: a valid index unlike its own. */
        bool index = g->tensors[x].elem == IR_ELEM_I32;
        bool in_place = index || cex->reads[k * cex->ntensors + t];
        ir_tid src = in_place ? x : fresh_like(g, x, "oracle_writes", IR_ROLE_INPUT, counter);
        ir_graph_push(g, scale_op(g, src, x, index ? 0.0 : in_place ? 0.5 : 2.0));
    }
}

/* The fixture's graph with the schedule's other ops, flags and roles added. */
static struct ir_graph *build(const struct ir_graph *fix, const struct oracle_sched *cex, const int32_t *ops,
                              const ir_tid *tmap)
{
    struct ir_graph *g = ir_graph_clone(fix);
    for (int32_t i = 0; i < g->nops; i++)
        ir_op_free(&g->ops[i]);
    g->nops = 0;
    int counter = 0;
    for (int t = 0; t < cex->ntensors; t++) {
        ir_tid x = tmap[t];
        if (x == IR_NONE)
            continue;
        g->tensors[x].observed |= cex->observed[t];
        g->tensors[x].carried |= cex->carried[t];
        if (cex->role[t] == IR_ROLE_STATE) {
            g->tensors[x].role = IR_ROLE_STATE;
            g->tensors[x].checkpoint = false;
        }
    }
    /* Each fixture op in order; before it, the schedule's unmapped ops that come before its schedule op. */
    int next = 0;
    for (int32_t i = 0; i < fix->nops; i++) {
        int here = -1;
        for (int k = 0; k < cex->nops; k++)
            if (ops[k] == i)
                here = k;
        for (; here >= 0 && next < here; next++)
            if (ops[next] < 0)
                emit_op(g, cex, next, tmap, &counter, NULL);
        if (here >= 0 && next == here) {
            /* What the schedule's op does beyond the fixture's, just before it. */
            emit_op(g, cex, here, tmap, &counter, &fix->ops[i]);
            next++;
        }
        struct ir_op op = ir_op_clone(&fix->ops[i]);
        ir_op_set_covers(&op, NULL, 0);
        ir_graph_push(g, op);
    }
    for (; next < cex->nops; next++)
        if (ops[next] < 0)
            emit_op(g, cex, next, tmap, &counter, NULL);
    return g;
}

int oracle_replay_graph(const struct rules_rule *rule, const char *atom, const struct oracle_sched *cex,
                        const char *fixtures, struct oracle_replay *out, char err[IR_ERR_LEN])
{
    memset(out, 0, sizeof *out);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/fires.fc", fixtures ? fixtures : "tests/rules", rule->name);
    size_t len;
    char *text = ir_read_file(path, &len);
    if (!text) {
        snprintf(err, IR_ERR_LEN, "%.400s: no firing case to build on", path);
        return 1;
    }
    oracle_fixture_settings(text, out->shim, sizeof out->shim, out->hold, sizeof out->hold);
    free(text);
    struct ir_graph *fix = ir_parse_file(path, err);
    if (!fix)
        return 1;
    struct capture c;
    memset(&c, 0, sizeof c);
    c.rule = rule->name;
    c.nstore = fix->nops * 4 + 16;
    c.store = oracle_xcalloc((size_t)c.nstore, sizeof *c.store);
    int rc = capture_binding(fix, out->shim, out->hold, &c, err);
    if (rc == 0) {
        int32_t *ops = map_ops(cex, &c, fix->nops);
        ir_tid *tmap = oracle_xcalloc((size_t)cex->ntensors, sizeof *tmap);
        for (int t = 0; t < cex->ntensors; t++)
            tmap[t] = map_tensor(cex, &c, ops, fix, t);
        struct ir_graph *g = build(fix, cex, ops, tmap);
        char verr[IR_ERR_LEN];
        if (ir_validate(g, verr)) {
            snprintf(err, IR_ERR_LEN, "the built graph is invalid: %.400s", verr);
            rc = 1;
        } else {
            size_t len;
            char *body = ir_print(g, &len);
            size_t cap = len + 1024;
            out->text = oracle_xcalloc(cap, 1);
            snprintf(out->text, cap,
                     "# oracle counterexample: rule %s%s%s\n# replay: fusecheck diff FILE --shim %s%s%s%s\n%s",
                     rule->name, atom ? ", atom dropped: " : "", atom ? atom : "", out->shim,
                     out->hold[0] ? " --hold " : "", out->hold,
                     atom ? "   (on an optimizer built with -DFUSECHECK_MUTANT=rule:atom)" : "", body ? body : "");
            free(body);
        }
        ir_graph_free(g);
        free(ops);
        free(tmap);
    }
    free(c.store);
    ir_graph_free(fix);
    return rc;
}

/* ── Replaying ───────────────────────────────────────────────────────────────────────────────────────────── */

int oracle_replay_diff(const struct ir_graph *g, const char *shim_name, const char *hold, const char *rule_atom,
                       const char *rule, bool *differs, int *fired, char err[IR_ERR_LEN])
{
    *differs = false;
    *fired = 0;
    struct shim *shim = shim_lookup(shim_name, err);
    if (!shim)
        return 1;
    char *copy = strdup(hold ? hold : "");
    const char *held[64];
    int nheld = copy ? split_holds(copy, held, 64) : 0;
    struct rules_optimized o;
    rules_drop_atom(rule_atom);
    int rc = rules_optimize(g, shim, held, nheld, &o, err);
    rules_drop_atom(NULL);
    struct ir_graph *lifted = rc == 0 ? rules_quantized_lifted(g, shim) : NULL;
    if (rc == 0 && !lifted) {
        snprintf(err, IR_ERR_LEN, "out of memory");
        rules_optimized_free(&o);
        rc = 1;
    }
    if (rc == 0) {
        *fired = rules_report_count(&o.report, RULES_FIRED, rule);
        char eerr[IR_ERR_LEN];
        /* Both sides filled as g uses each tensor, so only what the rewrite computes can differ. */
        struct ir_values *a = ir_values_new_like(lifted, 1, g, err);
        struct ir_values *b = a ? ir_values_new_like(o.graph, 1, g, err) : NULL;
        if (!a || !b || ir_eval(lifted, a, err))
            rc = 1;
        else if (ir_eval(o.graph, b, eerr))
            *differs = true; /* the rewritten graph does not even evaluate */
        else
            *differs = !ir_values_compare(lifted, a, o.graph, b).identical;
        ir_values_free(a);
        ir_values_free(b);
        rules_optimized_free(&o);
    }
    if (lifted && lifted != g)
        ir_graph_free(lifted);
    free(copy);
    shim_free(shim);
    return rc;
}
