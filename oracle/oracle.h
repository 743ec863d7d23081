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
#include <z3.h>

#include "rules/rules.h"
#include "shim/shim.h"

#define ORACLE_REASON_LEN 256
#define ORACLE_NAME_LEN 128

/* ── Concrete schedules ──────────────────────────────────────────────────────────────────────────────────── */

/* A concrete schedule: ops 0..nops-1 in program order over tensors 0..ntensors-1, which tensors each op reads and
 * writes, each tensor's flags and role (IR_ROLE_INPUT stands for every host-set role: input, param, constant), and a
 * binding of a rule's roles to its slots and tensors (sets stored in set_store). A counterexample is one. */
struct oracle_index;
struct oracle_sched {
    int nops, ntensors;
    bool *reads, *writes;  /* [k * ntensors + t]; NULL in a sparse schedule (ix holds the relations) */
    struct oracle_index *ix; /* the relations as sorted lists, when indexed (NULL: not) */
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
/* A schedule of nops ops over ntensors tensors given as lists: op k reads rd[rd_at[k] .. rd_at[k+1]) and writes
 * wr[wr_at[k] .. wr_at[k+1]) (each ascending); indexed, with no matrix (for long windows: only the concrete
 * interpreters read it). */
struct oracle_sched *oracle_sched_new_sparse(int nops, int ntensors, const int32_t *rd_at, const int32_t *rd,
                                             const int32_t *wr_at, const int32_t *wr);
/* Index a schedule's relations and its binding's sets (after they are bound): the concrete twins, premises and
 * motion then answer from sorted lists in time near the relations' size instead of nops × ntensors. */
void oracle_sched_index(struct oracle_sched *s);
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

/* A second solver re-deciding every query from its SMT-LIB file (prove --cross-check): how its verdicts compare with
 * Z3's, and the last query's. */
struct oracle_cross {
    const char *solver;                     /* its command: "cvc5" */
    int queries, agreed, disagreed, undecided; /* disagreed: decided otherwise, or the query unreadable to it */
    enum oracle_verdict last;               /* the last query's verdict by the solver */
    char first[ORACLE_REASON_LEN];          /* the first disagreement: which query, both verdicts */
    double ms;                              /* the solver's own time on every query so far (its runs, wall clock) */
};
/* Whether the solver runs here (its command answers --version). */
bool oracle_cross_available(const char *solver);

/* How queries run. */
struct oracle_options {
    unsigned timeout_ms;  /* per query (default 10000) */
    unsigned seed;        /* Z3's random seed (default 1) */
    int bound;            /* K: windows of up to K ops when the unbounded query is not decided (default 8, >= 2) */
    bool unbounded;       /* ask for windows of any length first (default true) */
    const char *smt2_dir; /* dump every query as SMT-LIB 2.6 into this directory (NULL: none) */
    struct oracle_cross *cross; /* re-decide every query with a second solver (NULL: none) */
    bool fresh_results;   /* assume A5 too: the tensor a rule's producer computes (its RESULT, a join's halves) is an
                           * activation, never state a later op may rewrite (the matchers do not check it) */
    bool full_cut;        /* validate-run: cut every slot touching a tensor the binding sees, however far (the
                           * specification the windowed cut is tested against; slow on long graphs) */
    bool (*stop)(void);   /* polled before each obligation (NULL: never): true, and no further one starts */
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
    double ms;                         /* the oracle's own time on it (Z3's queries; the second solver's apart) */
    double cross_ms;                   /* the second solver's time on its queries (--cross-check), else 0 */
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

/* ── The rules' fixture cases ───────────────────────────────────────────────────────────────────────────────── */

/* One fixture case: a text-format graph under <dir>/<rule>/ whose leading comments say what the optimizer must decide
 * on it (docs/oracle.md, "Fixture cases"), and how it went. */
struct oracle_fixture {
    char path[1024];
    char rule[ORACLE_NAME_LEN], shim[ORACLE_NAME_LEN]; /* its `rule:` and `shim:` (default reference) */
    char near_miss[ORACLE_NAME_LEN];                   /* its `near-miss:` atom, or empty */
    bool fires;      /* a firing case (it has `fires:` lines) */
    bool seed_fires; /* a firing case whose rule fires those lines alike under the seed's rules */
    int checks, failed;
};
/* What a fixture run tells its caller: each failed check (what failed, in words), each case once it is done. */
struct oracle_fixture_hooks {
    void (*failed)(const struct oracle_fixture *f, const char *what, void *ctx);
    void (*done)(const struct oracle_fixture *f, void *ctx);
    void *ctx;
    bool write_expected; /* write a firing case's missing <case>.expected from its rewritten graph */
};
/* The shim (`# shim:`, default reference) and the held steps (`# hold:`, comma-separated) a case's text names. */
void oracle_fixture_settings(const char *text, char *shim, size_t shim_cap, char *hold, size_t hold_cap);
/* Run the case at path: optimized under its shim and holds, held to its directives (and its rewritten graph to
 * <case>.expected when it fires), the rewritten graph validated and evaluated bit for bit against the lifted one.
 * The seed mode and dropped atoms are as they were after. Returns how many of its checks failed. */
int oracle_fixture_run(const char *path, const struct oracle_fixture_hooks *hooks, struct oracle_fixture *out);
/* Every case of every rule folder under dir (<dir>/<rule>/<case>.fc), folders and cases in name order. Returns how many
 * ran (*failed: how many had a failed check), or -1 with err when dir is unreadable or holds no case. */
int oracle_fixtures_run(const char *dir, const struct oracle_fixture_hooks *hooks, int *failed, char err[IR_ERR_LEN]);

/* ── The report's contract ────────────────────────────────────────────────────────────────────────────────── */

/* Whether rep, the report of a compile of graph g under shim with the steps `held` held, keeps the contract of every
 * report: each decision names a rule and lists, ascending, lifted ops that g's ops (or their parts) cover, a firing or
 * a hold at least one; a refusal, and nothing else, gives a reason; no refusal is the decision before it again — but
 * where a step the chip does not link ran dry unheld, each firing reported refused, two firings alike stay two. -1
 * when it does, else the index of the first decision that does not, with why. */
int32_t oracle_report_check(const struct ir_graph *g, const struct shim *shim, const char *const *held, int nheld,
                            const struct rules_report *rep, char why[IR_ERR_LEN]);

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
    bool unknown;     /* Z3 gave no answer on the positions (a timeout): neither held nor broken */
    bool admitted;    /* the shim admits the op the firing built: every class it realizes supported, the chip's fits
                       * met (a chip's own rule that asks no admission can build one the chip refuses) */
    char why[ORACLE_REASON_LEN]; /* the first failure, in words */
    const int32_t *covers;       /* the lifted ops the op the firing built covers (valid during the callback) */
    int32_t ncovers;
};
typedef void (*oracle_check_fn)(const struct oracle_check *c, void *ctx);

/* Totals of a validated run. */
struct oracle_validation {
    int rewrites, checked, failed, unbound, unknown;
    bool invalid;                  /* the rewritten graph itself does not validate */
    char invalid_why[IR_ERR_LEN];  /* the validator's message, when invalid */
};

/* Optimize g under shim, re-checking every firing as it happens; each check to fn; then the rewritten graph itself
 * validated. 0 on success (whatever the checks found: see *v), else err. */
int oracle_validate_run(const struct ir_graph *g, const struct shim *shim, const struct oracle_options *opt,
                        oracle_check_fn fn, void *ctx, struct oracle_validation *v, char err[IR_ERR_LEN]);

/* ── Another optimizer's firings (oracle/external.c) ────────────────────────────────────────────────────────
 * An optimizer of its own process gives only its report and its rewritten graph: no binding, no trace. Each firing it
 * reports is re-checked on the lifted graph without its guard evaluation: where fusecheck's own rules, run under the
 * same shim and seed mode, fire the same (rule, class, covers), that firing's own translation validation gives the
 * verdict; and every firing must be legal by dataflow alone, the covered ops fused into one op making no cycle with
 * the rest. */

/* Whether fusing the lifted ops `covers` (ascending) of g into one op keeps g acyclic: -1 when it does, else a lifted
 * op outside the cover that depends on a covered op (a tensor it reads or writes that one wrote or read, or onwards)
 * and on which a covered op depends. -2 when a cover is no op of g. */
int32_t oracle_fusion_cycle(const struct ir_graph *g, const int32_t *covers, int32_t ncovers);

/* One reported firing, re-checked. */
struct oracle_external_check {
    const struct rules_decision *d; /* the firing, from the optimizer's report */
    int32_t index;                  /* its place in the report, from 0 */
    bool matched;                   /* fusecheck's own rules fire the same rule, class and covers */
    bool own_ok, own_unknown;       /* when matched: that firing's verdict (ok; Z3 gave no answer) */
    int32_t cycle;                  /* oracle_fusion_cycle of its covers */
    bool failed;                    /* its own verdict failed, or the fusion makes a cycle */
    char why[ORACLE_REASON_LEN];    /* the first failure, in words */
};
typedef void (*oracle_external_fn)(const struct oracle_external_check *c, void *ctx);
/* Totals of a re-checked report. */
struct oracle_external_totals {
    int firings, matched, unmatched, failed, unknown;
};
/* Re-check every firing of rep, another optimizer's report of its compile of the lifted graph g under shim (nothing
 * held), each to fn. 0 (whatever the checks found: see *t), or -1 with err when fusecheck's own run failed. */
int oracle_validate_external(const struct ir_graph *g, const struct shim *shim, const struct oracle_options *opt,
                             const struct rules_report *rep, oracle_external_fn fn, void *ctx,
                             struct oracle_external_totals *t, char err[IR_ERR_LEN]);

/* Release what Z3 keeps between queries (call once at exit). */
void oracle_shutdown(void);

/* ── Internals: what the oracle's own files share ─────────────────────────────────────────────────────────
 * The term builder every atom, premise and motion is written against (one construction, two interpreters:
 * evaluated on a concrete schedule, or built as a Z3 formula), the symbolic schedule and the helpers that run one
 * query. Callers outside oracle/ use the functions above. */
/* calloc of n items of size (at least one byte) that aborts when memory is exhausted: the oracle's files' one. */
void *oracle_xcalloc(size_t n, size_t size);
/* ── Terms ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* A term: a Z3 expression when the builder builds formulas, else its value (a truth value 0/1 or an integer). */
struct oracle_term {
    Z3_ast z;
    long long v;
};

/* How a builder interprets what it is asked to build. */
enum oracle_builder_mode { ORACLE_CONCRETE, ORACLE_Z3 };

/* The builder: the schedule a formula speaks of, and how to build over it.
 *
 * Concrete: a concrete schedule and binding; every term is a value. Z3, bounded: slots 0..nslots-1 and tensors
 * 0..ntensors-1, quantifiers expanded into finite conjunctions. Z3, unbounded: slots 0..n-1 for a symbolic n and
 * tensors any natural number, quantifiers as Z3 quantifiers. Reads, writes, flags, tensor roles and set membership
 * are uninterpreted functions; role slots and tensors are constants (the binding is symbolic). */
struct oracle_builder {
    enum oracle_builder_mode mode;
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

/* A schedule's relations as sorted lists. Op k reads the tensors rd[rd_at[k] .. rd_at[k+1]) and tensor t is read by
 * the ops readers[readers_at[t] .. readers_at[t+1]), each ascending; likewise written. Per set role g the binding
 * had when indexed (or was bound since): member[g][k] whether op k is in it, and readers_in[g][i] how many of the
 * entries readers[0 .. i) are in it (writers_in likewise), so a range of a tensor's list counts its members at once. */
struct oracle_index {
    int32_t *rd_at, *rd, *wr_at, *wr;
    int32_t *readers_at, *readers, *writers_at, *writers;
    bool *member[RULES_ROLE_COUNT];
    int32_t *readers_in[RULES_ROLE_COUNT], *writers_in[RULES_ROLE_COUNT];
};

/* Whether a concrete builder may answer from the schedule's index: it is indexed and the binding is its own. */
bool oracle_ob_indexed(const struct oracle_builder *b);
/* The first index i in [lo, hi) of ascending v with v[i] >= k (hi when none). */
int32_t oracle_lower_bound(const int32_t *v, int32_t lo, int32_t hi, long long k);

/* A body under a quantifier: the formula for the bound variable x. */
typedef struct oracle_term (*oracle_ob_body)(struct oracle_builder *b, struct oracle_term x, const void *ctx);

struct oracle_term oracle_ob_bool(struct oracle_builder *b, bool v);
struct oracle_term oracle_ob_int(struct oracle_builder *b, long long v);
struct oracle_term oracle_ob_not(struct oracle_builder *b, struct oracle_term x);
struct oracle_term oracle_ob_and(struct oracle_builder *b, struct oracle_term x, struct oracle_term y);
struct oracle_term oracle_ob_or(struct oracle_builder *b, struct oracle_term x, struct oracle_term y);
struct oracle_term oracle_ob_implies(struct oracle_builder *b, struct oracle_term x, struct oracle_term y);
struct oracle_term oracle_ob_eq(struct oracle_builder *b, struct oracle_term x, struct oracle_term y);
struct oracle_term oracle_ob_lt(struct oracle_builder *b, struct oracle_term x, struct oracle_term y);
struct oracle_term oracle_ob_le(struct oracle_builder *b, struct oracle_term x, struct oracle_term y);
struct oracle_term oracle_ob_ite(struct oracle_builder *b, struct oracle_term c, struct oracle_term x, struct oracle_term y);
struct oracle_term oracle_ob_add(struct oracle_builder *b, struct oracle_term x, long long k);
/* The schedule's relations: op k reads / writes tensor t; t's flags and role. */
struct oracle_term oracle_ob_reads(struct oracle_builder *b, struct oracle_term k, struct oracle_term t);
struct oracle_term oracle_ob_writes(struct oracle_builder *b, struct oracle_term k, struct oracle_term t);
struct oracle_term oracle_ob_observed(struct oracle_builder *b, struct oracle_term t);
struct oracle_term oracle_ob_carried(struct oracle_builder *b, struct oracle_term t);
struct oracle_term oracle_ob_state(struct oracle_builder *b, struct oracle_term t);
struct oracle_term oracle_ob_activation(struct oracle_builder *b, struct oracle_term t);
/* Whether slot k is in the set bound to role g (false for NONE). */
struct oracle_term oracle_ob_in(struct oracle_builder *b, enum rules_role g, struct oracle_term k);
/* The slot or tensor bound to a role. */
struct oracle_term oracle_ob_slot(struct oracle_builder *b, enum rules_role r);
struct oracle_term oracle_ob_tensor(struct oracle_builder *b, enum rules_role r);
/* The window's length (a number of slots). */
struct oracle_term oracle_ob_len(struct oracle_builder *b);
/* Quantifiers over the window's slots and over tensors. */
struct oracle_term oracle_ob_forall_slot(struct oracle_builder *b, oracle_ob_body body, const void *ctx);
struct oracle_term oracle_ob_exists_slot(struct oracle_builder *b, oracle_ob_body body, const void *ctx);
struct oracle_term oracle_ob_forall_tensor(struct oracle_builder *b, oracle_ob_body body, const void *ctx);
struct oracle_term oracle_ob_exists_tensor(struct oracle_builder *b, oracle_ob_body body, const void *ctx);

/* Existential witnesses, for positive places only (never under a universal): a fresh constant in Z3 (a slot, a
 * slot or -1 meaning none, a tensor), a search over the domain when concrete. */
struct oracle_term oracle_ob_witness_slot(struct oracle_builder *b, oracle_ob_body body, const void *ctx);
struct oracle_term oracle_ob_witness_slot_or_none(struct oracle_builder *b, oracle_ob_body body, const void *ctx);
struct oracle_term oracle_ob_witness_tensor(struct oracle_builder *b, oracle_ob_body body, const void *ctx);
/* x ∧ body(x): when concrete and x is false, body is not evaluated. */
struct oracle_term oracle_ob_and_then(struct oracle_builder *b, struct oracle_term x, oracle_ob_body body, const void *ctx);
/* x → body(x): when concrete and x is false, body is not evaluated. */
struct oracle_term oracle_ob_implies_then(struct oracle_builder *b, struct oracle_term x, oracle_ob_body body, const void *ctx);

/* A builder over a concrete schedule and binding. */
void oracle_ob_concrete(struct oracle_builder *b, const struct oracle_sched *s, const struct rules_binding *bind);
/* A Z3 builder in context z: bounded to nslots × ntensors, or unbounded when nslots is 0. Declares the relations
 * and a constant for every role. */
void oracle_ob_symbolic(struct oracle_builder *b, Z3_context z, int nslots, int ntensors);
/* A fresh integer constant (an existential witness) named after `what`. */
struct oracle_term oracle_ob_fresh_int(struct oracle_builder *b, const char *what);
/* The constraint that x is a slot of the window, or a tensor of the domain. */
struct oracle_term oracle_ob_is_slot(struct oracle_builder *b, struct oracle_term x);
struct oracle_term oracle_ob_is_tensor(struct oracle_builder *b, struct oracle_term x);

/* ── Atoms, premises, invariants ─────────────────────────────────────────────────────────────────────────── */

/* The symbolic twin of one guard atom (its quantifier applied). */
struct oracle_term oracle_atom_term(struct oracle_builder *b, const struct rules_atom *atom);
/* The graph invariants, each one a listed assumption (docs/oracle.md). */
struct oracle_term oracle_invariants(struct oracle_builder *b);
/* The facts the rule's matcher establishes about its roles (its motion's and its own), as one formula. */
struct oracle_term oracle_premises(struct oracle_builder *b, const struct rules_rule *rule);
/* Every role a rule's atoms, premises and motion use, as a bitset over RULES_ROLE_COUNT. */
void oracle_rule_roles(const struct rules_rule *rule, bool used[RULES_ROLE_COUNT]);

/* The slot of the op writing the join's half h (0: INPUT, 1: OTHER) under place_units: a constant in Z3, the first
 * writer of that half before the consumer when concrete (-1 when none). */
struct oracle_term oracle_half_producer(struct oracle_builder *b, int h);

/* ── Motions ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* The formula that the rule's motion breaks a dependence: some read (the host's final reads of observed and carried
 * tensors included) reads from another write than before, or a read the motion makes internal did not read from the
 * op that now computes it in place. */
struct oracle_term oracle_violation(struct oracle_builder *b, const struct rules_rule *rule);

/* What a concrete counterexample breaks, in one line (the first broken read, old source and new). */
void oracle_violation_note(const struct oracle_sched *s, const struct rules_rule *rule, char *buf, size_t n);

/* ── Kernel contracts ────────────────────────────────────────────────────────────────────────────────────── */

/* The formula that the rule's fold breaks the built class's kernel contract (rules_contract_of, ir_class_writes): an
 * inner result the fused op must keep for a need its kernel does not serve, or an op outside the fold touching an
 * operand the kernel updates in place. False for a rule without a contract row. */
struct oracle_term oracle_contract_breach(struct oracle_builder *b, const struct rules_rule *rule);
/* What a concrete counterexample to the contract breaks, in one line. */
void oracle_contract_note(const struct oracle_sched *s, const struct rules_rule *rule, char *buf, size_t n);

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
struct oracle_sched *oracle_sched_from_model(struct oracle_builder *b, Z3_model m, const struct rules_rule *rule);

/* ── Index maps ──────────────────────────────────────────────────────────────────────────────────────────── */

/* The index-map obligations of a placement rule (none for the others): their names into names (room for cap),
 * their count. */
int oracle_index_obligations(const struct rules_rule *rule, const char **names, int cap);
/* The formula whose satisfiability refutes index obligation k of rule. */
Z3_ast oracle_index_query(Z3_context z, const struct rules_rule *rule, int k);

#endif
