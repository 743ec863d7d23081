/* oracle/term.c — the term builder: one construction, two interpreters. Every atom, premise, invariant and motion
 * of the oracle is written once against these functions; a concrete builder evaluates them on a schedule and
 * binding, a Z3 builder builds the formula Z3 decides (quantifiers expanded over a bounded window, or kept as Z3
 * quantifiers over a window of any length). */
#include "oracle.h"

#include <stdio.h>
#include <string.h>

/* ── Values and formulas ─────────────────────────────────────────────────────────────────────────────────── */

/* A concrete term of value v. */
static struct oracle_term val(long long v)
{
    struct oracle_term t = {NULL, v};
    return t;
}

/* A Z3 term. */
static struct oracle_term ast(Z3_ast a)
{
    struct oracle_term t = {a, 0};
    return t;
}

/* Whether a Z3 Boolean term is the literal true (1), false (0), or neither (-1). */
static int literal(const struct oracle_builder *b, struct oracle_term x)
{
    Z3_lbool v = Z3_get_bool_value(b->z, x.z);
    return v == Z3_L_TRUE ? 1 : v == Z3_L_FALSE ? 0 : -1;
}

struct oracle_term oracle_ob_bool(struct oracle_builder *b, bool v)
{
    if (b->mode == ORACLE_CONCRETE)
        return val(v);
    return ast(v ? Z3_mk_true(b->z) : Z3_mk_false(b->z));
}

struct oracle_term oracle_ob_int(struct oracle_builder *b, long long v)
{
    if (b->mode == ORACLE_CONCRETE)
        return val(v);
    return ast(Z3_mk_int64(b->z, v, b->int_sort));
}

struct oracle_term oracle_ob_not(struct oracle_builder *b, struct oracle_term x)
{
    if (b->mode == ORACLE_CONCRETE)
        return val(!x.v);
    int l = literal(b, x);
    return l >= 0 ? oracle_ob_bool(b, !l) : ast(Z3_mk_not(b->z, x.z));
}

struct oracle_term oracle_ob_and(struct oracle_builder *b, struct oracle_term x, struct oracle_term y)
{
    if (b->mode == ORACLE_CONCRETE)
        return val(x.v && y.v);
    int lx = literal(b, x), ly = literal(b, y);
    if (lx == 0 || ly == 0)
        return oracle_ob_bool(b, false);
    if (lx == 1)
        return y;
    if (ly == 1)
        return x;
    Z3_ast args[2] = {x.z, y.z};
    return ast(Z3_mk_and(b->z, 2, args));
}

struct oracle_term oracle_ob_or(struct oracle_builder *b, struct oracle_term x, struct oracle_term y)
{
    if (b->mode == ORACLE_CONCRETE)
        return val(x.v || y.v);
    int lx = literal(b, x), ly = literal(b, y);
    if (lx == 1 || ly == 1)
        return oracle_ob_bool(b, true);
    if (lx == 0)
        return y;
    if (ly == 0)
        return x;
    Z3_ast args[2] = {x.z, y.z};
    return ast(Z3_mk_or(b->z, 2, args));
}

struct oracle_term oracle_ob_implies(struct oracle_builder *b, struct oracle_term x, struct oracle_term y)
{
    return oracle_ob_or(b, oracle_ob_not(b, x), y);
}

struct oracle_term oracle_ob_eq(struct oracle_builder *b, struct oracle_term x, struct oracle_term y)
{
    if (b->mode == ORACLE_CONCRETE)
        return val(x.v == y.v);
    return ast(Z3_mk_eq(b->z, x.z, y.z));
}

struct oracle_term oracle_ob_lt(struct oracle_builder *b, struct oracle_term x, struct oracle_term y)
{
    if (b->mode == ORACLE_CONCRETE)
        return val(x.v < y.v);
    return ast(Z3_mk_lt(b->z, x.z, y.z));
}

struct oracle_term oracle_ob_le(struct oracle_builder *b, struct oracle_term x, struct oracle_term y)
{
    if (b->mode == ORACLE_CONCRETE)
        return val(x.v <= y.v);
    return ast(Z3_mk_le(b->z, x.z, y.z));
}

struct oracle_term oracle_ob_ite(struct oracle_builder *b, struct oracle_term c, struct oracle_term x, struct oracle_term y)
{
    if (b->mode == ORACLE_CONCRETE)
        return c.v ? x : y;
    int l = literal(b, c);
    if (l >= 0)
        return l ? x : y;
    return ast(Z3_mk_ite(b->z, c.z, x.z, y.z));
}

struct oracle_term oracle_ob_add(struct oracle_builder *b, struct oracle_term x, long long k)
{
    if (b->mode == ORACLE_CONCRETE)
        return val(x.v + k);
    Z3_ast args[2] = {x.z, Z3_mk_int64(b->z, k, b->int_sort)};
    return ast(Z3_mk_add(b->z, 2, args));
}

struct oracle_term oracle_ob_and_then(struct oracle_builder *b, struct oracle_term x, oracle_ob_body body, const void *ctx)
{
    if (b->mode == ORACLE_CONCRETE && !x.v)
        return val(0);
    return oracle_ob_and(b, x, body(b, x, ctx));
}

struct oracle_term oracle_ob_implies_then(struct oracle_builder *b, struct oracle_term x, oracle_ob_body body, const void *ctx)
{
    if (b->mode == ORACLE_CONCRETE && !x.v)
        return val(1);
    return oracle_ob_implies(b, x, body(b, x, ctx));
}

/* ── The schedule's relations ────────────────────────────────────────────────────────────────────────────── */

/* Apply a unary or binary uninterpreted function. */
static struct oracle_term app(struct oracle_builder *b, Z3_func_decl f, int n, struct oracle_term x, struct oracle_term y)
{
    Z3_ast args[2] = {x.z, y.z};
    return ast(Z3_mk_app(b->z, f, (unsigned)n, args));
}

/* Whether (k, t) lies in a concrete schedule's matrix. */
static bool in_matrix(const struct oracle_sched *s, long long k, long long t)
{
    return k >= 0 && k < s->nops && t >= 0 && t < s->ntensors;
}

/* Whether op k's ascending list (at, v) holds t. */
static bool listed(const int32_t *at, const int32_t *v, long long k, long long t)
{
    int32_t i = oracle_lower_bound(v, at[k], at[k + 1], t);
    return i < at[k + 1] && v[i] == t;
}

struct oracle_term oracle_ob_reads(struct oracle_builder *b, struct oracle_term k, struct oracle_term t)
{
    if (b->mode == ORACLE_CONCRETE) {
        if (!in_matrix(b->cs, k.v, t.v))
            return val(0);
        if (!b->cs->reads)
            return val(listed(b->cs->ix->rd_at, b->cs->ix->rd, k.v, t.v));
        return val(b->cs->reads[k.v * b->cs->ntensors + t.v]);
    }
    return app(b, b->reads, 2, k, t);
}

struct oracle_term oracle_ob_writes(struct oracle_builder *b, struct oracle_term k, struct oracle_term t)
{
    if (b->mode == ORACLE_CONCRETE) {
        if (!in_matrix(b->cs, k.v, t.v))
            return val(0);
        if (!b->cs->writes)
            return val(listed(b->cs->ix->wr_at, b->cs->ix->wr, k.v, t.v));
        return val(b->cs->writes[k.v * b->cs->ntensors + t.v]);
    }
    return app(b, b->writes, 2, k, t);
}

bool oracle_ob_indexed(const struct oracle_builder *b)
{
    return b->mode == ORACLE_CONCRETE && b->cs->ix && b->cb == &b->cs->bind;
}

/* Whether t is a tensor of a concrete schedule. */
static bool is_tensor(const struct oracle_sched *s, long long t)
{
    return t >= 0 && t < s->ntensors;
}

struct oracle_term oracle_ob_observed(struct oracle_builder *b, struct oracle_term t)
{
    if (b->mode == ORACLE_CONCRETE)
        return val(is_tensor(b->cs, t.v) && b->cs->observed[t.v]);
    return app(b, b->observed, 1, t, t);
}

struct oracle_term oracle_ob_carried(struct oracle_builder *b, struct oracle_term t)
{
    if (b->mode == ORACLE_CONCRETE)
        return val(is_tensor(b->cs, t.v) && b->cs->carried[t.v]);
    return app(b, b->carried, 1, t, t);
}

struct oracle_term oracle_ob_state(struct oracle_builder *b, struct oracle_term t)
{
    if (b->mode == ORACLE_CONCRETE)
        return val(is_tensor(b->cs, t.v) && b->cs->role[t.v] == IR_ROLE_STATE);
    return app(b, b->state, 1, t, t);
}

struct oracle_term oracle_ob_activation(struct oracle_builder *b, struct oracle_term t)
{
    if (b->mode == ORACLE_CONCRETE)
        return val(is_tensor(b->cs, t.v) && b->cs->role[t.v] == IR_ROLE_ACTIVATION);
    return app(b, b->activation, 1, t, t);
}

struct oracle_term oracle_ob_in(struct oracle_builder *b, enum rules_role g, struct oracle_term k)
{
    if (g == RULES_ROLE_NONE || g >= RULES_ROLE_COUNT)
        return oracle_ob_bool(b, false);
    if (b->mode == ORACLE_Z3)
        return app(b, b->set[g], 1, k, k);
    if (oracle_ob_indexed(b) && b->cs->ix->member[g] && k.v >= 0 && k.v < b->cs->nops)
        return val(b->cs->ix->member[g][k.v]);
    for (int32_t i = 0; i < b->cb->nset[g]; i++)
        if (b->cb->set[g][i] == k.v)
            return val(1);
    return val(0);
}

struct oracle_term oracle_ob_slot(struct oracle_builder *b, enum rules_role r)
{
    if (b->mode == ORACLE_Z3)
        return ast(b->slot_role[r]);
    if (r == RULES_ROLE_EACH && b->each_bound)
        return val(b->each);
    return val(b->cb->slot[r]);
}

struct oracle_term oracle_ob_tensor(struct oracle_builder *b, enum rules_role r)
{
    if (b->mode == ORACLE_Z3)
        return ast(b->tensor_role[r]);
    return val(b->cb->tensor[r]);
}

struct oracle_term oracle_ob_len(struct oracle_builder *b)
{
    if (b->mode == ORACLE_CONCRETE)
        return val(b->cs->nops);
    return b->unbounded ? ast(b->n) : oracle_ob_int(b, b->nslots);
}

struct oracle_term oracle_ob_is_slot(struct oracle_builder *b, struct oracle_term x)
{
    return oracle_ob_and(b, oracle_ob_le(b, oracle_ob_int(b, 0), x), oracle_ob_lt(b, x, oracle_ob_len(b)));
}

struct oracle_term oracle_ob_is_tensor(struct oracle_builder *b, struct oracle_term x)
{
    if (b->mode == ORACLE_CONCRETE)
        return val(is_tensor(b->cs, x.v));
    struct oracle_term lo = oracle_ob_le(b, oracle_ob_int(b, 0), x);
    return b->unbounded ? lo : oracle_ob_and(b, lo, oracle_ob_lt(b, x, oracle_ob_int(b, b->ntensors)));
}

/* ── Quantifiers ─────────────────────────────────────────────────────────────────────────────────────────── */

/* A fresh Z3 integer constant whose name starts with prefix. */
static Z3_ast fresh(struct oracle_builder *b, const char *prefix)
{
    char name[64];
    snprintf(name, sizeof name, "%s!%d", prefix, b->fresh++);
    return Z3_mk_const(b->z, Z3_mk_string_symbol(b->z, name), b->int_sort);
}

/* The size of a concrete or bounded domain: slots, or tensors. */
static int domain(const struct oracle_builder *b, bool slots)
{
    if (b->mode == ORACLE_CONCRETE)
        return slots ? b->cs->nops : b->cs->ntensors;
    return slots ? b->nslots : b->ntensors;
}

/* ∀ (all) or ∃ over slots or tensors. */
static struct oracle_term quantify(struct oracle_builder *b, bool all, bool slots, oracle_ob_body body, const void *ctx)
{
    if (b->mode == ORACLE_Z3 && b->unbounded) {
        Z3_ast x = fresh(b, slots ? "k" : "t");
        struct oracle_term range = slots ? oracle_ob_is_slot(b, ast(x)) : oracle_ob_is_tensor(b, ast(x));
        struct oracle_term f = body(b, ast(x), ctx);
        struct oracle_term inner = all ? oracle_ob_implies(b, range, f) : oracle_ob_and(b, range, f);
        Z3_app bound = Z3_to_app(b->z, x);
        Z3_ast q = all ? Z3_mk_forall_const(b->z, 0, 1, &bound, 0, NULL, inner.z)
                       : Z3_mk_exists_const(b->z, 0, 1, &bound, 0, NULL, inner.z);
        return ast(q);
    }
    int n = domain(b, slots);
    struct oracle_term acc = oracle_ob_bool(b, all);
    for (int i = 0; i < n; i++) {
        struct oracle_term f = body(b, oracle_ob_int(b, i), ctx);
        if (b->mode == ORACLE_CONCRETE) {
            if (all && !f.v)
                return val(0);
            if (!all && f.v)
                return val(1);
            continue;
        }
        acc = all ? oracle_ob_and(b, acc, f) : oracle_ob_or(b, acc, f);
    }
    return acc;
}

struct oracle_term oracle_ob_forall_slot(struct oracle_builder *b, oracle_ob_body body, const void *ctx) { return quantify(b, true, true, body, ctx); }
struct oracle_term oracle_ob_exists_slot(struct oracle_builder *b, oracle_ob_body body, const void *ctx) { return quantify(b, false, true, body, ctx); }
struct oracle_term oracle_ob_forall_tensor(struct oracle_builder *b, oracle_ob_body body, const void *ctx) { return quantify(b, true, false, body, ctx); }
struct oracle_term oracle_ob_exists_tensor(struct oracle_builder *b, oracle_ob_body body, const void *ctx)
{
    return quantify(b, false, false, body, ctx);
}

/* A witness in [lo, the domain's end): a fresh constant so constrained, or a search. */
static struct oracle_term witness(struct oracle_builder *b, bool slots, long long lo, oracle_ob_body body, const void *ctx)
{
    if (b->mode == ORACLE_CONCRETE) {
        int n = domain(b, slots);
        for (long long i = lo; i < n; i++)
            if (body(b, val(i), ctx).v)
                return val(1);
        return val(0);
    }
    struct oracle_term x = ast(fresh(b, slots ? "w" : "u"));
    struct oracle_term range = oracle_ob_le(b, oracle_ob_int(b, lo), x);
    if (slots)
        range = oracle_ob_and(b, range, oracle_ob_lt(b, x, oracle_ob_len(b)));
    else if (!b->unbounded)
        range = oracle_ob_and(b, range, oracle_ob_lt(b, x, oracle_ob_int(b, b->ntensors)));
    return oracle_ob_and(b, range, body(b, x, ctx));
}

struct oracle_term oracle_ob_witness_slot(struct oracle_builder *b, oracle_ob_body body, const void *ctx) { return witness(b, true, 0, body, ctx); }
struct oracle_term oracle_ob_witness_slot_or_none(struct oracle_builder *b, oracle_ob_body body, const void *ctx)
{
    return witness(b, true, -1, body, ctx);
}
struct oracle_term oracle_ob_witness_tensor(struct oracle_builder *b, oracle_ob_body body, const void *ctx) { return witness(b, false, 0, body, ctx); }

struct oracle_term oracle_ob_fresh_int(struct oracle_builder *b, const char *what)
{
    return ast(fresh(b, what));
}

/* ── Builders ────────────────────────────────────────────────────────────────────────────────────────────── */

void oracle_ob_concrete(struct oracle_builder *b, const struct oracle_sched *s, const struct rules_binding *bind)
{
    memset(b, 0, sizeof *b);
    b->mode = ORACLE_CONCRETE;
    b->cs = s;
    b->cb = bind;
}

/* An uninterpreted function from n integers to a sort. */
static Z3_func_decl function(struct oracle_builder *b, const char *name, int n, Z3_sort range)
{
    Z3_sort dom[2] = {b->int_sort, b->int_sort};
    return Z3_mk_func_decl(b->z, Z3_mk_string_symbol(b->z, name), (unsigned)n, dom, range);
}

void oracle_ob_symbolic(struct oracle_builder *b, Z3_context z, int nslots, int ntensors)
{
    memset(b, 0, sizeof *b);
    b->mode = ORACLE_Z3;
    b->z = z;
    b->unbounded = nslots <= 0;
    b->nslots = nslots;
    b->ntensors = ntensors;
    b->int_sort = Z3_mk_int_sort(z);
    b->bool_sort = Z3_mk_bool_sort(z);
    b->n = Z3_mk_const(z, Z3_mk_string_symbol(z, "n"), b->int_sort);
    b->reads = function(b, "reads", 2, b->bool_sort);
    b->writes = function(b, "writes", 2, b->bool_sort);
    b->observed = function(b, "observed", 1, b->bool_sort);
    b->carried = function(b, "carried", 1, b->bool_sort);
    b->state = function(b, "state", 1, b->bool_sort);
    b->activation = function(b, "activation", 1, b->bool_sort);
    for (int r = 1; r < RULES_ROLE_COUNT; r++) {
        char name[64];
        const char *role = rules_role_name((enum rules_role)r);
        snprintf(name, sizeof name, "in_%s", role);
        b->set[r] = function(b, name, 1, b->bool_sort);
        snprintf(name, sizeof name, "slot_%s", role);
        b->slot_role[r] = Z3_mk_const(z, Z3_mk_string_symbol(z, name), b->int_sort);
        snprintf(name, sizeof name, "tensor_%s", role);
        b->tensor_role[r] = Z3_mk_const(z, Z3_mk_string_symbol(z, name), b->int_sort);
    }
    b->half[0] = Z3_mk_const(z, Z3_mk_string_symbol(z, "half_a_producer"), b->int_sort);
    b->half[1] = Z3_mk_const(z, Z3_mk_string_symbol(z, "half_b_producer"), b->int_sort);
}
