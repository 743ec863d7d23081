/* oracle/internal.h — what the oracle's own files share: the term builder every atom, premise and motion is written
 * against (one construction, two interpreters: evaluated on a concrete schedule, or built as a Z3 formula), the
 * symbolic schedule and the helpers that run one query. Nothing outside oracle/ includes it. */
#ifndef FUSECHECK_ORACLE_INTERNAL_H
#define FUSECHECK_ORACLE_INTERNAL_H

#include <z3.h>

#include "oracle.h"

/* ── Terms ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* A term: a Z3 expression when the builder builds formulas, else its value (a truth value 0/1 or an integer). */
struct ot {
    Z3_ast z;
    long long v;
};

/* How a builder interprets what it is asked to build. */
enum ob_mode { OB_CONCRETE, OB_Z3 };

/* The builder: the schedule a formula speaks of, and how to build over it.
 *
 * Concrete: a concrete schedule and binding; every term is a value. Z3, bounded: slots 0..nslots-1 and tensors
 * 0..ntensors-1, quantifiers expanded into finite conjunctions. Z3, unbounded: slots 0..n-1 for a symbolic n and
 * tensors any natural number, quantifiers as Z3 quantifiers. Reads, writes, flags, tensor roles and set membership
 * are uninterpreted functions; role slots and tensors are constants (the binding is symbolic). */
struct ob {
    enum ob_mode mode;
    bool unbounded;
    int nslots, ntensors;
    /* Z3 */
    Z3_context z;
    Z3_sort int_sort, bool_sort;
    Z3_ast n;                                     /* the window's length */
    Z3_func_decl reads, writes, observed, carried, state, activation;
    Z3_func_decl set[RULES_ROLE_COUNT];           /* membership of the set roles */
    Z3_ast slot_role[RULES_ROLE_COUNT];           /* slot roles (and EACH while an atom's quantifier binds it) */
    Z3_ast tensor_role[RULES_ROLE_COUNT];
    bool fresh_results;                           /* assume A5 (see struct oracle_options) */
    Z3_ast half[2];                               /* place_units: the producers of the join's two halves */
    int fresh;                                    /* counter for bound variable names */
    /* concrete */
    const struct oracle_sched *cs;
    const struct rules_binding *cb;
    long long each;                               /* EACH while an atom's quantifier binds it */
    bool each_bound;
};

/* A body under a quantifier: the formula for the bound variable x. */
typedef struct ot (*ob_body)(struct ob *b, struct ot x, const void *ctx);

struct ot ob_bool(struct ob *b, bool v);
struct ot ob_int(struct ob *b, long long v);
struct ot ob_not(struct ob *b, struct ot x);
struct ot ob_and(struct ob *b, struct ot x, struct ot y);
struct ot ob_or(struct ob *b, struct ot x, struct ot y);
struct ot ob_implies(struct ob *b, struct ot x, struct ot y);
struct ot ob_eq(struct ob *b, struct ot x, struct ot y);
struct ot ob_lt(struct ob *b, struct ot x, struct ot y);
struct ot ob_le(struct ob *b, struct ot x, struct ot y);
struct ot ob_ite(struct ob *b, struct ot c, struct ot x, struct ot y);
struct ot ob_add(struct ob *b, struct ot x, long long k);
/* The schedule's relations: op k reads / writes tensor t; t's flags and role. */
struct ot ob_reads(struct ob *b, struct ot k, struct ot t);
struct ot ob_writes(struct ob *b, struct ot k, struct ot t);
struct ot ob_observed(struct ob *b, struct ot t);
struct ot ob_carried(struct ob *b, struct ot t);
struct ot ob_state(struct ob *b, struct ot t);
struct ot ob_activation(struct ob *b, struct ot t);
/* Whether slot k is in the set bound to role g (false for NONE). */
struct ot ob_in(struct ob *b, enum rules_role g, struct ot k);
/* The slot or tensor bound to a role. */
struct ot ob_slot(struct ob *b, enum rules_role r);
struct ot ob_tensor(struct ob *b, enum rules_role r);
/* The window's length (a number of slots). */
struct ot ob_len(struct ob *b);
/* Quantifiers over the window's slots and over tensors. */
struct ot ob_forall_slot(struct ob *b, ob_body body, const void *ctx);
struct ot ob_exists_slot(struct ob *b, ob_body body, const void *ctx);
struct ot ob_forall_tensor(struct ob *b, ob_body body, const void *ctx);
struct ot ob_exists_tensor(struct ob *b, ob_body body, const void *ctx);

/* Existential witnesses, for positive places only (never under a universal): a fresh constant in Z3 (a slot, a
 * slot or -1 meaning none, a tensor), a search over the domain when concrete. */
struct ot ob_witness_slot(struct ob *b, ob_body body, const void *ctx);
struct ot ob_witness_slot_or_none(struct ob *b, ob_body body, const void *ctx);
struct ot ob_witness_tensor(struct ob *b, ob_body body, const void *ctx);
/* x ∧ body(x): when concrete and x is false, body is not evaluated. */
struct ot ob_and_then(struct ob *b, struct ot x, ob_body body, const void *ctx);
/* x → body(x): when concrete and x is false, body is not evaluated. */
struct ot ob_implies_then(struct ob *b, struct ot x, ob_body body, const void *ctx);

/* A builder over a concrete schedule and binding. */
void ob_concrete(struct ob *b, const struct oracle_sched *s, const struct rules_binding *bind);
/* A Z3 builder in context z: bounded to nslots × ntensors, or unbounded when nslots is 0. Declares the relations
 * and a constant for every role. */
void ob_symbolic(struct ob *b, Z3_context z, int nslots, int ntensors);
/* A fresh integer constant (an existential witness) named after `what`. */
struct ot ob_fresh_int(struct ob *b, const char *what);
/* The constraint that x is a slot of the window, or a tensor of the domain. */
struct ot ob_is_slot(struct ob *b, struct ot x);
struct ot ob_is_tensor(struct ob *b, struct ot x);

/* ── Atoms, premises, invariants ─────────────────────────────────────────────────────────────────────────── */

/* The symbolic twin of one guard atom (its quantifier applied). */
struct ot oracle_atom_term(struct ob *b, const struct rules_atom *atom);
/* The graph invariants, each one a listed assumption (docs/oracle.md). */
struct ot oracle_invariants(struct ob *b);
/* The facts the rule's matcher establishes about its roles (its motion's and its own), as one formula. */
struct ot oracle_premises(struct ob *b, const struct rules_rule *rule);
/* Every role a rule's atoms, premises and motion use, as a bitset over RULES_ROLE_COUNT. */
void oracle_rule_roles(const struct rules_rule *rule, bool used[RULES_ROLE_COUNT]);

/* The slot of the op writing the join's half h (0: INPUT, 1: OTHER) under place_units: a constant in Z3, the first
 * writer of that half before the consumer when concrete (-1 when none). */
struct ot oracle_half_producer(struct ob *b, int h);

/* ── Motions ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* The formula that the rule's motion breaks a dependence: some read (the host's final reads of observed and carried
 * tensors included) reads from another write than before, or a read the motion makes internal did not read from the
 * op that now computes it in place. */
struct ot oracle_violation(struct ob *b, const struct rules_rule *rule);

/* What a concrete counterexample breaks, in one line (the first broken read, old source and new). */
void oracle_violation_note(const struct oracle_sched *s, const struct rules_rule *rule, char *buf, size_t n);

/* ── Queries ─────────────────────────────────────────────────────────────────────────────────────────────────── */

/* A fresh Z3 context with the options' timeout and seed, errors recorded rather than fatal. */
Z3_context oracle_z3_new(const struct oracle_options *opt);
void oracle_z3_free(Z3_context z);
/* Check `f` in a fresh solver; dump it as SMT-LIB 2 to the options' directory under `name`. The verdict is
 * ORACLE_PROVED when f is unsatisfiable, REFUTED when satisfiable (the model kept in *model, referenced), UNKNOWN
 * with Z3's reason otherwise. */
enum oracle_verdict oracle_check(Z3_context z, Z3_ast f, const struct oracle_options *opt, const char *name,
                                 Z3_model *model, char reason[ORACLE_REASON_LEN]);
/* The value of an integer or Boolean term in a model (0 when it has none). */
long long oracle_model_value(Z3_context z, Z3_model m, Z3_ast t);

/* The schedule a model of a bounded query describes (its relations, flags, roles and binding), malloc'd. */
struct oracle_sched *oracle_sched_from_model(struct ob *b, Z3_model m, const struct rules_rule *rule);

/* ── Index maps ──────────────────────────────────────────────────────────────────────────────────────────── */

/* The index-map obligations of a placement rule (none for the others): their names into names (room for cap),
 * their count. */
int oracle_index_obligations(const struct rules_rule *rule, const char **names, int cap);
/* The formula whose satisfiability refutes index obligation k of rule. */
Z3_ast oracle_index_query(Z3_context z, const struct rules_rule *rule, int k);

#endif
