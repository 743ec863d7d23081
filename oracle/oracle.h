/* oracle/oracle.h — the oracle: every rule's dataflow legality proved with Z3 from the rule's own data (its guard
 * atoms, its motion), each atom's necessity checked by dropping it (mutants), counterexamples as minimal schedules
 * and as text-format graphs that replay as diff failures, and translation validation of a concrete optimization's
 * every firing.
 *
 * The model (docs/oracle.md): a window of ops in program order over a set of tensors, with read and write relations,
 * tensor flags (observed, carried) and roles (state, activation, host-set), under the graph invariants as listed
 * assumptions. Each guard atom kind has one symbolic twin, written once against a term builder that either builds a
 * Z3 formula or evaluates on a concrete schedule; an exhaustive test checks the twins against the optimizer's own
 * interpreter (rules/guards.c over ir/facts.c). Each motion says where every read and write of the moved ops lands;
 * an obligation asks Z3 for a schedule that satisfies the invariants, the rule's premises and its guards yet makes
 * some read (or the host's final read of an observed or carried tensor) read from another write than before. */
#ifndef FUSECHECK_ORACLE_H
#define FUSECHECK_ORACLE_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"
#include "rules/rules.h"
#include "shim/shim.h"

#define ORACLE_REASON_LEN 256
#define ORACLE_NAME_LEN 128

/* ── Concrete schedules ──────────────────────────────────────────────────────────────────────────────────── */

/* A concrete schedule: ops 0..nops-1 in program order over tensors 0..ntensors-1, which tensors each op reads and
 * writes, each tensor's flags and role (IR_ROLE_INPUT stands for every host-set role: input, param, constant), and a
 * binding of a rule's roles to its slots and tensors (sets stored in set_store). A counterexample is one. */
struct oracle_sched {
    int nops, ntensors;
    bool *reads, *writes;  /* [k * ntensors + t] */
    bool *observed, *carried;
    enum ir_role *role;
    struct rules_binding bind;
    int32_t *set_store;    /* RULES_ROLE_COUNT × nops: the sets' members */
    int32_t half[2];       /* place_units: the producers of the join's halves (-2: the first writers before it) */
    char note[ORACLE_REASON_LEN]; /* what a counterexample breaks, in words */
};

/* A schedule of nops ops over ntensors tensors reading and writing nothing, every tensor an unflagged activation,
 * nothing bound. */
struct oracle_sched *oracle_sched_new(int nops, int ntensors);
void oracle_sched_free(struct oracle_sched *s);
/* Bind set role g to the given slots (copied). */
void oracle_sched_set(struct oracle_sched *s, enum rules_role g, const int32_t *slots, int32_t n);
/* The schedule as text: one line per op (its reads and writes), the tensors' roles and flags, the binding. */
char *oracle_sched_text(const struct oracle_sched *s);
/* A graph and slots whose facts are the schedule's (each op an IR op reading and writing exactly its row), for
 * asking the optimizer's own interpreter; free both with oracle_sched_slots_free. */
struct ir_slots *oracle_sched_slots(const struct oracle_sched *s, struct ir_graph **g);
void oracle_sched_slots_free(struct ir_slots *slots, struct ir_graph *g);

/* The symbolic twin of a guard atom evaluated on a concrete schedule and binding (the atom's quantifier applied). */
bool oracle_atom_twin(const struct oracle_sched *s, const struct rules_binding *b, const struct rules_atom *atom);
/* The same twin built as a Z3 formula over the schedule's relations, then decided by Z3: 1 true, 0 false, -1 when
 * Z3 fails. Slow; the twins' two interpreters are checked against each other with it. */
int oracle_atom_twin_z3(const struct oracle_sched *s, const struct rules_binding *b, const struct rules_atom *atom);
/* Whether the rule's premises hold and its motion breaks no dependence on a concrete schedule (translation
 * validation's check of one firing). *premises receives whether the premises hold. */
bool oracle_motion_legal(const struct oracle_sched *s, const struct rules_rule *rule, bool *premises);

/* The premises the oracle assumes of rule's roles (its motion's and its matcher's shape facts), one line each;
 * returns their count (at most cap written). */
int oracle_premise_lines(const struct rules_rule *rule, char lines[][ORACLE_REASON_LEN], int cap);

/* ── Proving ─────────────────────────────────────────────────────────────────────────────────────────────── */

enum oracle_verdict { ORACLE_PROVED, ORACLE_REFUTED, ORACLE_UNKNOWN };
const char *oracle_verdict_name(enum oracle_verdict v);

/* How queries run. */
struct oracle_options {
    unsigned timeout_ms;  /* per query (default 10000) */
    unsigned seed;        /* Z3's random seed (default 1) */
    int bound;            /* K: windows of up to K ops when the unbounded query is not decided (default 8, >= 2) */
    bool unbounded;       /* ask for windows of any length first (default true) */
    const char *smt2_dir; /* dump every query as SMT-LIB 2 into this directory (NULL: none) */
    bool fresh_results;   /* assume A5 too: the tensor a rule's producer computes (its RESULT, a join's halves) is an
                           * activation, never state a later op may rewrite (the matchers do not check it) */
};
struct oracle_options oracle_defaults(void);

/* One obligation's outcome. */
struct oracle_outcome {
    const char *rule;
    char obligation[ORACLE_NAME_LEN];  /* "dataflow", "index: ..." */
    const char *dropped;               /* the atom dropped (a mutant), or NULL */
    enum oracle_verdict verdict;
    int bound;                         /* proved: 0 for windows of any length, else K; refuted: the window's length */
    char reason[ORACLE_REASON_LEN];    /* unknown: Z3's reason (timeout, memout, incomplete, ...) */
    const struct oracle_sched *cex;    /* refuted dataflow: the minimal schedule (valid during the callback) */
    double ms;
};
typedef void (*oracle_outcome_fn)(const struct oracle_outcome *o, void *ctx);

/* Every rule the oracle proves: the shared table, the late rules, argmax_advance, the numerics fold and each chip
 * rule a shippped shim links (by name, once). Returns the count; writes at most cap. */
int oracle_rules(const struct rules_rule **out, int cap);
/* A rule of oracle_rules by name, or NULL. */
const struct rules_rule *oracle_rule_find(const char *name);
/* Prove every obligation of rule — its dataflow legality and, for placements, its index maps — with atom `drop`
 * dropped when not NULL. Each outcome goes to fn. Returns how many were not proved. */
int oracle_prove(const struct rules_rule *rule, const char *drop, const struct oracle_options *opt,
                 oracle_outcome_fn fn, void *ctx);
/* The mutants of rule: its dataflow obligation with each atom dropped in turn (refuted: the atom is needed; proved:
 * redundant under the stated assumptions). Returns how many atoms were shown needed. */
int oracle_mutants(const struct rules_rule *rule, const struct oracle_options *opt, oracle_outcome_fn fn, void *ctx);

/* ── Counterexamples that replay ─────────────────────────────────────────────────────────────────────────── */

/* A replayable counterexample: the graph's canonical text (its first lines say how to replay it), and the shim and
 * held steps its firing case runs under. */
struct oracle_replay {
    char *text;
    char shim[128];
    char hold[256];
};
void oracle_replay_free(struct oracle_replay *r);

/* A text-format graph on which the rule, with `atom` dropped (NULL: none), fires as the counterexample says and
 * breaks a dependence: the rule's firing case (<fixtures>/<rule>/fires.fc) with the counterexample's interfering ops
 * (a writer or reader between the moved ops), flags and roles added. 0 on success; else a message in err. */
int oracle_replay_graph(const struct rules_rule *rule, const char *atom, const struct oracle_sched *cex,
                        const char *fixtures, struct oracle_replay *out, char err[IR_ERR_LEN]);
/* Optimize g under shim (holding the comma-separated steps `hold`) with `rule_atom` ("rule:atom", NULL: none)
 * dropped, and compare the evaluations of the lifted and the rewritten graph as `fusecheck diff` does: *differs is
 * whether they differ (or the rewritten graph fails to evaluate), *fired how often `rule` fired. 0 on success. */
int oracle_replay_diff(const struct ir_graph *g, const char *shim, const char *hold, const char *rule_atom,
                       const char *rule, bool *differs, int *fired, char err[IR_ERR_LEN]);

/* ── Translation validation ──────────────────────────────────────────────────────────────────────────────── */

/* One rewrite of a concrete optimization, re-checked. */
struct oracle_check {
    const char *rule;
    enum ir_class cls;
    int32_t at;
    bool bound;       /* a guard binding preceded the firing (else nothing to re-check but the rewrite) */
    bool atoms;       /* every atom's twin held on the slots as they stood */
    bool premises;    /* the matcher's premises held */
    bool legal;       /* the motion broke no dependence */
    bool positions;   /* a named row position: the written rows fit and miss every row read between, for every
                       * value the position may take (Z3); true when there is none */
    char why[ORACLE_REASON_LEN]; /* the first failure, in words */
};
typedef void (*oracle_check_fn)(const struct oracle_check *c, void *ctx);

/* Totals of a validated run. */
struct oracle_validation {
    int rewrites, checked, failed, unbound;
};

/* Optimize g under shim, re-checking every firing as it happens; each check to fn. 0 on success (whatever the
 * checks found: see *v), else err. */
int oracle_validate_run(const struct ir_graph *g, const struct shim *shim, const struct oracle_options *opt,
                        oracle_check_fn fn, void *ctx, struct oracle_validation *v, char err[IR_ERR_LEN]);

/* Release what Z3 keeps between queries (call once at exit). */
void oracle_shutdown(void);

#endif
