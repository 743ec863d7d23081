/* oracle/term.c — the term builder: one construction, two interpreters. Every atom, premise, invariant and motion
 * of the oracle is written once against these functions; a concrete builder evaluates them on a schedule and
 * binding, a Z3 builder builds the formula Z3 decides (quantifiers expanded over a bounded window, or kept as Z3
 * quantifiers over a window of any length). */
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* ── Values and formulas ─────────────────────────────────────────────────────────────────────────────────── */

/* A concrete term of value v. */
static struct ot val(long long v)
{
    struct ot t = {NULL, v};
    return t;
}

/* A Z3 term. */
static struct ot ast(Z3_ast a)
{
    struct ot t = {a, 0};
    return t;
}

/* Whether a Z3 Boolean term is the literal true (1), false (0), or neither (-1). */
static int literal(const struct ob *b, struct ot x)
{
    Z3_lbool v = Z3_get_bool_value(b->z, x.z);
    return v == Z3_L_TRUE ? 1 : v == Z3_L_FALSE ? 0 : -1;
}

struct ot ob_bool(struct ob *b, bool v)
{
    if (b->mode == OB_CONCRETE)
        return val(v);
    return ast(v ? Z3_mk_true(b->z) : Z3_mk_false(b->z));
}

struct ot ob_int(struct ob *b, long long v)
{
    if (b->mode == OB_CONCRETE)
        return val(v);
    return ast(Z3_mk_int64(b->z, v, b->int_sort));
}

struct ot ob_not(struct ob *b, struct ot x)
{
    if (b->mode == OB_CONCRETE)
        return val(!x.v);
    int l = literal(b, x);
    return l >= 0 ? ob_bool(b, !l) : ast(Z3_mk_not(b->z, x.z));
}

struct ot ob_and(struct ob *b, struct ot x, struct ot y)
{
    if (b->mode == OB_CONCRETE)
        return val(x.v && y.v);
    int lx = literal(b, x), ly = literal(b, y);
    if (lx == 0 || ly == 0)
        return ob_bool(b, false);
    if (lx == 1)
        return y;
    if (ly == 1)
        return x;
    Z3_ast args[2] = {x.z, y.z};
    return ast(Z3_mk_and(b->z, 2, args));
}

struct ot ob_or(struct ob *b, struct ot x, struct ot y)
{
    if (b->mode == OB_CONCRETE)
        return val(x.v || y.v);
    int lx = literal(b, x), ly = literal(b, y);
    if (lx == 1 || ly == 1)
        return ob_bool(b, true);
    if (lx == 0)
        return y;
    if (ly == 0)
        return x;
    Z3_ast args[2] = {x.z, y.z};
    return ast(Z3_mk_or(b->z, 2, args));
}

struct ot ob_implies(struct ob *b, struct ot x, struct ot y)
{
    return ob_or(b, ob_not(b, x), y);
}

struct ot ob_eq(struct ob *b, struct ot x, struct ot y)
{
    if (b->mode == OB_CONCRETE)
        return val(x.v == y.v);
    return ast(Z3_mk_eq(b->z, x.z, y.z));
}

struct ot ob_lt(struct ob *b, struct ot x, struct ot y)
{
    if (b->mode == OB_CONCRETE)
        return val(x.v < y.v);
    return ast(Z3_mk_lt(b->z, x.z, y.z));
}

struct ot ob_le(struct ob *b, struct ot x, struct ot y)
{
    if (b->mode == OB_CONCRETE)
        return val(x.v <= y.v);
    return ast(Z3_mk_le(b->z, x.z, y.z));
}

struct ot ob_ite(struct ob *b, struct ot c, struct ot x, struct ot y)
{
    if (b->mode == OB_CONCRETE)
        return c.v ? x : y;
    int l = literal(b, c);
    if (l >= 0)
        return l ? x : y;
    return ast(Z3_mk_ite(b->z, c.z, x.z, y.z));
}

struct ot ob_add(struct ob *b, struct ot x, long long k)
{
    if (b->mode == OB_CONCRETE)
        return val(x.v + k);
    Z3_ast args[2] = {x.z, Z3_mk_int64(b->z, k, b->int_sort)};
    return ast(Z3_mk_add(b->z, 2, args));
}

struct ot ob_and_then(struct ob *b, struct ot x, ob_body body, const void *ctx)
{
    if (b->mode == OB_CONCRETE && !x.v)
        return val(0);
    return ob_and(b, x, body(b, x, ctx));
}

struct ot ob_implies_then(struct ob *b, struct ot x, ob_body body, const void *ctx)
{
    if (b->mode == OB_CONCRETE && !x.v)
        return val(1);
    return ob_implies(b, x, body(b, x, ctx));
}

/* ── The schedule's relations ────────────────────────────────────────────────────────────────────────────── */

/* Apply a unary or binary uninterpreted function. */
static struct ot app(struct ob *b, Z3_func_decl f, int n, struct ot x, struct ot y)
{
    Z3_ast args[2] = {x.z, y.z};
    return ast(Z3_mk_app(b->z, f, (unsigned)n, args));
}

/* Whether (k, t) lies in a concrete schedule's matrix. */
static bool in_matrix(const struct oracle_sched *s, long long k, long long t)
{
    return k >= 0 && k < s->nops && t >= 0 && t < s->ntensors;
}

struct ot ob_reads(struct ob *b, struct ot k, struct ot t)
{
    if (b->mode == OB_CONCRETE)
        return val(in_matrix(b->cs, k.v, t.v) && b->cs->reads[k.v * b->cs->ntensors + t.v]);
    return app(b, b->reads, 2, k, t);
}

struct ot ob_writes(struct ob *b, struct ot k, struct ot t)
{
    if (b->mode == OB_CONCRETE)
        return val(in_matrix(b->cs, k.v, t.v) && b->cs->writes[k.v * b->cs->ntensors + t.v]);
    return app(b, b->writes, 2, k, t);
}

/* Whether t is a tensor of a concrete schedule. */
static bool is_tensor(const struct oracle_sched *s, long long t)
{
    return t >= 0 && t < s->ntensors;
}

struct ot ob_observed(struct ob *b, struct ot t)
{
    if (b->mode == OB_CONCRETE)
        return val(is_tensor(b->cs, t.v) && b->cs->observed[t.v]);
    return app(b, b->observed, 1, t, t);
}

struct ot ob_carried(struct ob *b, struct ot t)
{
    if (b->mode == OB_CONCRETE)
        return val(is_tensor(b->cs, t.v) && b->cs->carried[t.v]);
    return app(b, b->carried, 1, t, t);
}

struct ot ob_state(struct ob *b, struct ot t)
{
    if (b->mode == OB_CONCRETE)
        return val(is_tensor(b->cs, t.v) && b->cs->role[t.v] == IR_ROLE_STATE);
    return app(b, b->state, 1, t, t);
}

struct ot ob_activation(struct ob *b, struct ot t)
{
    if (b->mode == OB_CONCRETE)
        return val(is_tensor(b->cs, t.v) && b->cs->role[t.v] == IR_ROLE_ACTIVATION);
    return app(b, b->activation, 1, t, t);
}

struct ot ob_in(struct ob *b, enum rules_role g, struct ot k)
{
    if (g == RULES_ROLE_NONE || g >= RULES_ROLE_COUNT)
        return ob_bool(b, false);
    if (b->mode == OB_Z3)
        return app(b, b->set[g], 1, k, k);
    for (int32_t i = 0; i < b->cb->nset[g]; i++)
        if (b->cb->set[g][i] == k.v)
            return val(1);
    return val(0);
}

struct ot ob_slot(struct ob *b, enum rules_role r)
{
    if (b->mode == OB_Z3)
        return ast(b->slot_role[r]);
    if (r == RULES_ROLE_EACH && b->each_bound)
        return val(b->each);
    return val(b->cb->slot[r]);
}

struct ot ob_tensor(struct ob *b, enum rules_role r)
{
    if (b->mode == OB_Z3)
        return ast(b->tensor_role[r]);
    return val(b->cb->tensor[r]);
}

struct ot ob_len(struct ob *b)
{
    if (b->mode == OB_CONCRETE)
        return val(b->cs->nops);
    return b->unbounded ? ast(b->n) : ob_int(b, b->nslots);
}

struct ot ob_is_slot(struct ob *b, struct ot x)
{
    return ob_and(b, ob_le(b, ob_int(b, 0), x), ob_lt(b, x, ob_len(b)));
}

struct ot ob_is_tensor(struct ob *b, struct ot x)
{
    if (b->mode == OB_CONCRETE)
        return val(is_tensor(b->cs, x.v));
    struct ot lo = ob_le(b, ob_int(b, 0), x);
    return b->unbounded ? lo : ob_and(b, lo, ob_lt(b, x, ob_int(b, b->ntensors)));
}

/* ── Quantifiers ─────────────────────────────────────────────────────────────────────────────────────────── */

/* A fresh Z3 integer constant whose name starts with prefix. */
static Z3_ast fresh(struct ob *b, const char *prefix)
{
    char name[64];
    snprintf(name, sizeof name, "%s!%d", prefix, b->fresh++);
    return Z3_mk_const(b->z, Z3_mk_string_symbol(b->z, name), b->int_sort);
}

/* The size of a concrete or bounded domain: slots, or tensors. */
static int domain(const struct ob *b, bool slots)
{
    if (b->mode == OB_CONCRETE)
        return slots ? b->cs->nops : b->cs->ntensors;
    return slots ? b->nslots : b->ntensors;
}

/* ∀ (all) or ∃ over slots or tensors. */
static struct ot quantify(struct ob *b, bool all, bool slots, ob_body body, const void *ctx)
{
    if (b->mode == OB_Z3 && b->unbounded) {
        Z3_ast x = fresh(b, slots ? "k" : "t");
        struct ot range = slots ? ob_is_slot(b, ast(x)) : ob_is_tensor(b, ast(x));
        struct ot f = body(b, ast(x), ctx);
        struct ot inner = all ? ob_implies(b, range, f) : ob_and(b, range, f);
        Z3_app bound = Z3_to_app(b->z, x);
        Z3_ast q = all ? Z3_mk_forall_const(b->z, 0, 1, &bound, 0, NULL, inner.z)
                       : Z3_mk_exists_const(b->z, 0, 1, &bound, 0, NULL, inner.z);
        return ast(q);
    }
    int n = domain(b, slots);
    struct ot acc = ob_bool(b, all);
    for (int i = 0; i < n; i++) {
        struct ot f = body(b, ob_int(b, i), ctx);
        if (b->mode == OB_CONCRETE) {
            if (all && !f.v)
                return val(0);
            if (!all && f.v)
                return val(1);
            continue;
        }
        acc = all ? ob_and(b, acc, f) : ob_or(b, acc, f);
    }
    return acc;
}

struct ot ob_forall_slot(struct ob *b, ob_body body, const void *ctx) { return quantify(b, true, true, body, ctx); }
struct ot ob_exists_slot(struct ob *b, ob_body body, const void *ctx) { return quantify(b, false, true, body, ctx); }
struct ot ob_forall_tensor(struct ob *b, ob_body body, const void *ctx) { return quantify(b, true, false, body, ctx); }
struct ot ob_exists_tensor(struct ob *b, ob_body body, const void *ctx)
{
    return quantify(b, false, false, body, ctx);
}

/* A witness in [lo, the domain's end): a fresh constant so constrained, or a search. */
static struct ot witness(struct ob *b, bool slots, long long lo, ob_body body, const void *ctx)
{
    if (b->mode == OB_CONCRETE) {
        int n = domain(b, slots);
        for (long long i = lo; i < n; i++)
            if (body(b, val(i), ctx).v)
                return val(1);
        return val(0);
    }
    struct ot x = ast(fresh(b, slots ? "w" : "u"));
    struct ot range = ob_le(b, ob_int(b, lo), x);
    if (slots)
        range = ob_and(b, range, ob_lt(b, x, ob_len(b)));
    else if (!b->unbounded)
        range = ob_and(b, range, ob_lt(b, x, ob_int(b, b->ntensors)));
    return ob_and(b, range, body(b, x, ctx));
}

struct ot ob_witness_slot(struct ob *b, ob_body body, const void *ctx) { return witness(b, true, 0, body, ctx); }
struct ot ob_witness_slot_or_none(struct ob *b, ob_body body, const void *ctx)
{
    return witness(b, true, -1, body, ctx);
}
struct ot ob_witness_tensor(struct ob *b, ob_body body, const void *ctx) { return witness(b, false, 0, body, ctx); }

struct ot ob_fresh_int(struct ob *b, const char *what)
{
    return ast(fresh(b, what));
}

/* ── Builders ────────────────────────────────────────────────────────────────────────────────────────────── */

void ob_concrete(struct ob *b, const struct oracle_sched *s, const struct rules_binding *bind)
{
    memset(b, 0, sizeof *b);
    b->mode = OB_CONCRETE;
    b->cs = s;
    b->cb = bind;
}

/* An uninterpreted function from n integers to a sort. */
static Z3_func_decl function(struct ob *b, const char *name, int n, Z3_sort range)
{
    Z3_sort dom[2] = {b->int_sort, b->int_sort};
    return Z3_mk_func_decl(b->z, Z3_mk_string_symbol(b->z, name), (unsigned)n, dom, range);
}

void ob_symbolic(struct ob *b, Z3_context z, int nslots, int ntensors)
{
    memset(b, 0, sizeof *b);
    b->mode = OB_Z3;
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
