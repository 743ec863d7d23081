/* rules/rules.h — the shared optimizer: one fixed table of fusion rules over the one IR, the rewriter they run on,
 * the forms they read ops by, their guard atoms (data the oracle reads too), the report of every decision and its
 * digest.
 *
 * Each rule is legal by dataflow alone: its matcher finds a shape (which ops, which sizes) and binds roles (slots
 * and tensors); its guard atoms — declared beside it as data — decide whether moving the members is legal; the shim
 * decides whether the chip runs the result whole. Rules run in table order, each over the slots in turn; chip rules
 * link before or after a named shared rule or at the end; then argmax_advance, the numerics fold (fused_quant) and
 * the late rules. Any step can be held: a held rule, or one whose class the chip does not link, runs on a copy so the
 * report says where it would have fired. */
#ifndef FUSECHECK_RULES_H
#define FUSECHECK_RULES_H

#include "ir/ir.h"
#include "shim/shim.h"

#include <string.h>

/* ── The report ──────────────────────────────────────────────────────────────────────────────────────────── */

/* What became of a place a rule could fire. */
enum rules_outcome { RULES_FIRED, RULES_REFUSED, RULES_HELD };

/* One place a rule could fire: the class it builds over the lifted ops it would compute, and what became of it. */
struct rules_decision {
    const char *rule;      /* static: a rule's name */
    enum ir_class cls;
    int32_t *covers;       /* ascending */
    int32_t ncovers;
    enum rules_outcome outcome;
    char *why;             /* RULES_REFUSED: the chip's reason */
    const char *code;      /* RULES_REFUSED: the reason's stable code (static), or NULL when its shim gives none */
};

/* Whether two rule or step names are the same: the same pointer (names are static), or equal text. The first
 * byte is compared before strcmp, since a compile compares names by the thousand and most differ there. */
static inline bool rules_same_name(const char *a, const char *b)
{
    return a == b || (a[0] == b[0] && strcmp(a, b) == 0);
}

/* Every decision a compile made, in order. */
struct rules_report {
    struct rules_decision *d;
    int32_t n, cap;
    bool seed_rules; /* made under rules_seed_mode: the digest covers a "seed-rules" line first */
};

/* The report's lines: "<rule> <class> [<covers, ...>] fired|refused: <why> {<code>}|held", each into a callback (a
 * refusal whose shim gives no code ends at its reason). Two optimizers' reports compare by rule, class, covers,
 * outcome and code; the reason's words are each optimizer's own. */
void rules_report_lines(const struct rules_report *rep, void (*line)(const char *text, void *ctx), void *ctx);
/* One decision as its line, malloc'd. */
char *rules_decision_line(const struct rules_decision *d);
/* The stable code of a refusal's reason `why`: "supports.parts" for the optimizer's own "the chip runs `X` as its
 * parts", else the shim's code for its text (a refused class's reason when `supports`, else a fit's), or NULL. */
const char *rules_reason_code(const struct shim *shim, const char *why, bool supports);
/* The sha256 of the report's lines, each without its code, joined by newlines, as 64 lowercase hex digits. */
void rules_report_digest(const struct rules_report *rep, char hex[65]);
/* How many decisions have `outcome` (and, when rule is not NULL, are about that rule). */
int32_t rules_report_count(const struct rules_report *rep, enum rules_outcome outcome, const char *rule);
void rules_report_free(struct rules_report *rep);
/* Append decision d to rep, taking what it owns (its covers, already ascending, and its why). */
void rules_report_take(struct rules_report *rep, struct rules_decision d);
/* Append a decision (covers and why copied; covers sorted on the way in). */
void rules_report_push(struct rules_report *rep, const char *rule, enum ir_class cls, const int32_t *covers,
                       int32_t ncovers, enum rules_outcome outcome, const char *why);
/* Whether a decision equals the report's last one. */
bool rules_report_repeats(const struct rules_report *rep, const char *rule, enum ir_class cls, const int32_t *covers,
                          int32_t ncovers, enum rules_outcome outcome, const char *why);

/* ── Guards as data ──────────────────────────────────────────────────────────────────────────────────────── */

/* The roles a rule's match binds: slots (S), tensors (T) and sets of slots (G); NONE (zero) is unbound, so an
 * atom's unused role fields may be left out of its initializer. */
#define RULES_ROLES(X) \
    X(NONE, "none", '-') \
    X(PRODUCER, "producer", 'S') \
    X(CONSUMER, "consumer", 'S') \
    X(ANCHOR, "anchor", 'S') \
    X(FIRST, "first", 'S') \
    X(MOVER, "mover", 'S') \
    X(EACH, "each", 'S') \
    X(RESULT, "result", 'T') \
    X(INPUT, "input", 'T') \
    X(TABLE, "table", 'T') \
    X(SOURCE, "source", 'T') \
    X(PARAM, "param", 'T') \
    X(OTHER, "other", 'T') \
    X(MEMBERS, "members", 'G') \
    X(WITHIN, "within", 'G') \
    X(EXCEPT, "except", 'G') \
    X(PRODUCERS, "producers", 'G')

enum rules_role {
#define X(e, s, k) RULES_ROLE_##e,
    RULES_ROLES(X)
#undef X
    RULES_ROLE_COUNT
};

/* The guard atoms: each one meaning, a concrete predicate over the facts (ir/facts.c) and a symbolic twin in the
 * oracle. Columns: enum suffix, name, and which roles it reads (t: tensor, a/b: slots, g: set). */
#define RULES_ATOMS(X) \
    X(ONLY_READER, "only_reader", "readers(t) = {a}") \
    X(FIRST_READER, "first_reader", "the first reader of t is a") \
    X(READERS_WITHIN, "readers_within", "every reader of t is in g") \
    X(UNTOUCHED, "untouched", "no slot strictly between a and b, outside g, writes t") \
    X(UNREAD_UNWRITTEN, "unread_unwritten", "no slot strictly between a and b, outside g, reads or writes t") \
    X(NO_CROSS, "no_cross", "b moves up to a past no slot outside g that writes what b reads or touches what b writes") \
    X(NO_SINK_PAST, "no_sink_past", "a moves down to b past no slot outside g that writes what a reads or touches what a writes") \
    X(NOT_OBSERVED, "not_observed", "the host does not read t after the step") \
    X(NOT_CARRIED, "not_carried", "the host does not keep t across steps") \
    X(READ_ONLY_WITHIN, "read_only_within", "what a writes is unobserved and read only by slots in g")

enum rules_atom_kind {
#define X(e, s, m) RULES_ATOM_##e,
    RULES_ATOMS(X)
#undef X
    RULES_ATOM_COUNT
};

/* Where a guard atom comes from, measured against the seed (reference/fuse.rs, lane_shim.rs): its matcher checks
 * the same condition (SEED), checks part of it and fusecheck widened it (WIDENED), or has no such check (ADDED).
 * Zero is "not said", which the rule tests reject, so no row can leave it out unnoticed. */
#define RULES_ORIGINS(X) \
    X(SEED, "seed") \
    X(WIDENED, "widened") \
    X(ADDED, "added")

enum rules_origin {
    RULES_ORIGIN_UNSAID,
#define X(e, s) RULES_ORIGIN_##e,
    RULES_ORIGINS(X)
#undef X
    RULES_ORIGIN_COUNT
};

/* One guard atom of a rule: its kind, a name unique within the rule (what FUSECHECK_MUTANT drops), and the roles
 * it reads. With `forall` set to a set role, the atom must hold with EACH bound to every slot of that set. `origin`
 * says whether the seed has it; a WIDENED or ADDED atom names the finding (docs/findings.md, "F7") that shows
 * what the seed's version gets wrong. */
struct rules_atom {
    const char *name;
    enum rules_atom_kind kind;
    enum rules_role t, a, b, g;
    enum rules_role forall; /* RULES_ROLE_NONE (the default): no quantifier */
    enum rules_origin origin;
    const char *finding; /* WIDENED, ADDED: a finding's id; SEED: NULL */
    bool seed_apart;     /* WIDENED: under the seed's rules the matcher asks the seed's part itself, not the atom */
};

const char *rules_origin_name(enum rules_origin o);
/* Designators for an atom's origin in a rule's guard table. */
#define RULES_FROM_SEED .origin = RULES_ORIGIN_SEED
#define RULES_WIDENED_BY(f) .origin = RULES_ORIGIN_WIDENED, .finding = (f)
#define RULES_WIDENED_APART_BY(f) .origin = RULES_ORIGIN_WIDENED, .finding = (f), .seed_apart = true
#define RULES_ADDED_BY(f) .origin = RULES_ORIGIN_ADDED, .finding = (f)
/* Whether the seed's rules leave atom `at` unasked: an ADDED one, or a WIDENED one whose seed part the matcher asks. */
static inline bool rules_seed_drops(const struct rules_atom *at)
{
    return at->origin == RULES_ORIGIN_ADDED || (at->origin == RULES_ORIGIN_WIDENED && at->seed_apart);
}

/* Roles bound by a match. Unbound slots and tensors are -1; unbound sets are empty. */
struct rules_binding {
    int32_t slot[RULES_ROLE_COUNT];
    ir_tid tensor[RULES_ROLE_COUNT];
    const int32_t *set[RULES_ROLE_COUNT];
    int32_t nset[RULES_ROLE_COUNT];
};

/* How a rule moves what it fuses — what the oracle proves legal under the guards. */
#define RULES_MOTIONS(X) \
    X(SINK_TO_CONSUMER, "sink_to_consumer", "the producer moves down to the consumer's slot") \
    X(HOIST_TO_PRODUCER, "hoist_to_producer", "the consumer moves up to the producer's slot") \
    X(HOIST_TO_FIRST, "hoist_to_first", "each later member moves up to the first member's slot") \
    X(GROUP_AT_LAST, "group_at_last", "every member moves down to the last member's slot") \
    X(GROUP_AT_ANCHOR, "group_at_anchor", "every member moves to the anchor's slot: those before it down, those after it up") \
    X(PLACE_ROWS, "place_rows", "the producer writes its result into the table's rows; the row set goes") \
    X(PLACE_UNITS, "place_units", "each producer writes its result into its part of every unit; the join goes") \
    X(READ_IN_PLACE, "read_in_place", "the consumer reads the source's part in place; the slice goes") \
    X(RECOMPUTE, "recompute", "the producer is recomputed inside each reader and goes") \
    X(IN_PLACE, "in_place", "one op takes a new symbol where it stands")

enum rules_motion {
#define X(e, s, m) RULES_MOTION_##e,
    RULES_MOTIONS(X)
#undef X
    RULES_MOTION_COUNT
};

const char *rules_role_name(enum rules_role r);
const char *rules_atom_name(enum rules_atom_kind k);
const char *rules_atom_meaning(enum rules_atom_kind k);
const char *rules_motion_name(enum rules_motion m);
const char *rules_motion_meaning(enum rules_motion m);

/* ── Rules and the table ─────────────────────────────────────────────────────────────────────────────────── */

struct rules_rewriter;

/* What a rule does: several ops as one, or a part read in place / a result written in place. */
enum rules_rule_kind { RULES_GROUP, RULES_PLACE };

/* One rule: name, kind, the classes it builds, its matcher and rewrite, its guard atoms, its motion and what it
 * fuses and why that is legal (one line). */
struct rules_rule {
    const char *name;
    enum rules_rule_kind kind;
    const enum ir_class *builds;
    int nbuilds;
    void (*apply)(struct rules_rewriter *r);
    const struct rules_atom *guards;
    int nguards;
    enum rules_motion motion;
    const char *what;
};

/* ── Kernel contracts in a rule's roles ─────────────────────────────────────────────────────────────────── */

/* Where a fused class's kernel contract (ir_class_writes) meets the roles of the rule that builds the class: the
 * inner results its fold computes (tensor roles, and every tensor each slot of a set role writes), the slots that
 * make up the fold (a set role, besides whichever of producer, consumer, first and anchor the rule binds), and an
 * operand its kernel updates in place from FIRST to ANCHOR (no op outside the fold reads or writes it between). The
 * oracle proves that, with the rule's guards, every inner result the fused op must keep is one the kernel writes. */
struct rules_contract {
    enum ir_class cls;
    enum rules_role inner[3]; /* NONE: unused */
    enum rules_role inner_of; /* a set role, or NONE */
    enum rules_role fold;     /* a set role, or NONE */
    enum rules_role in_place; /* a tensor role, or NONE */
};
/* The contract row of the class a rule builds (its first class with a row), or NULL when its kernels write every
 * inner result anything needs. */
const struct rules_contract *rules_contract_of(const struct rules_rule *rule);

/* The number of atoms in a rule's guard array. */
#define RULES_NGUARDS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The shared table in the order it applies; *n receives its length. */
const struct rules_rule *const *rules_table(int *n);
/* The rule that closes the table (argmax_advance), and the late rules (merged_projections). */
const struct rules_rule *rules_advance(void);
const struct rules_rule *const *rules_late(int *n);
/* A shared rule (table, advance or late) by name, or NULL. */
const struct rules_rule *rules_find(const char *name);

/* Whether the guards of `rule` hold on the rewriter's slots under binding b. When one fails and failed is not NULL,
 * *failed names it. The build flag FUSECHECK_MUTANT=rule:atom drops that one atom. */
bool rules_guards_hold(const struct rules_rewriter *r, const struct rules_rule *rule, const struct rules_binding *b,
                       const char **failed);
/* Whether one atom holds under b (the quantifier applied). */
bool rules_atom_holds(const struct rules_rewriter *r, const struct rules_atom *atom, const struct rules_binding *b);
/* A binding with nothing bound. */
struct rules_binding rules_binding_empty(void);
/* The binding of a group fused at slot `first`: the first member, and the n members (which must outlive the
 * binding's use). */
struct rules_binding rules_group_binding(int32_t first, const int32_t *members, int32_t n);
/* The atom `rule:atom` that this build drops, or NULL in a faithful build. */
const char *rules_mutant(void);
/* Whether the atom named `atom` of rule is evaluated in this build (not dropped by a mutant or the test hook): a
 * matcher may skip a candidate early by a condition the atom implies only while the atom is active. */
bool rules_atom_active(const struct rules_rule *rule, const char *atom);
/* Drop the atom `rule:atom` from now on (NULL: back to the build's own choice) — the near-miss tests' hook. */
void rules_drop_atom(const char *rule_atom);
/* Run the seed's rules from now on (false: fusecheck's own): every ADDED atom is dropped and each matcher fusecheck
 * fixed behaves as the seed's (docs/findings.md lists both). Not thread-safe, like rules_drop_atom. */
void rules_seed_mode(bool on);
/* Whether the seed's rules are in force. */
bool rules_seed_rules(void);
/* Whether atom `at` of rule is evaluated now: not dropped by a mutant, the test hook or the seed mode. */
bool rules_atom_in_force(const struct rules_rule *rule, const struct rules_atom *at);

/* Bugs the harness's own tests plant in the optimizer, each one a mistake a real optimizer makes, so that the product's
 * checks (check, diff, validate-run, tolerance, fuzz) are shown to catch it: a fused op that forgets to keep an inner
 * result a later op reads; one whose operand list names its first operand where its last should be; a numerics fold
 * quantizing in the other number of words than the chip's answer; a report that says one refusal twice in a row; a
 * fold that leaves a quantized read's source where a later rule takes a product's activation from. Name, meaning. */
#define RULES_PLANTS(X)                                                                                             \
    X(drop_keep, "a fused op keeps none of its inner results, even those a later op or the host reads")              \
    X(wrong_operand, "a fused op names its first operand again where its last one belongs")                          \
    X(quant_words, "the numerics fold quantizes in two words where the chip says one, and in one where it says two") \
    X(repeat_refusal, "a place the chip refused, asked about again at once, is reported refused again")            \
    X(source_first, "the numerics fold lists a quantized read's source first in a fused op and its quantized value "  \
                    "last, where a part still reads the source in another role")
enum rules_plant {
    RULES_PLANT_NONE,
#define X(n, m) RULES_PLANT_##n,
    RULES_PLANTS(X)
#undef X
    RULES_PLANT_COUNT
};
/* Plant the bug named `name` from now on (NULL: none); -1 when no bug has that name. Not thread-safe. */
int rules_plant(const char *name);
/* The bug planted now (RULES_PLANT_NONE in every real run). */
enum rules_plant rules_planted(void);
/* A planted bug's name and meaning, for listings. */
const char *rules_plant_name(enum rules_plant p);
const char *rules_plant_meaning(enum rules_plant p);

/* What the rewriter tells an observer as it works — translation validation's hook (oracle/): GUARDS when a rule's
 * guards hold under binding b on the slots as they stand (before anything is rewritten), FIRED when a firing of cls
 * at slot `at` is about to be reported (the slots already rewritten; b is NULL). */
enum rules_trace_kind { RULES_TRACE_GUARDS, RULES_TRACE_FIRED };
typedef void (*rules_trace_fn)(enum rules_trace_kind kind, const struct rules_rewriter *r,
                               const struct rules_rule *rule, const struct rules_binding *b, enum ir_class cls,
                               int32_t at, void *ctx);
/* Observe every guard success and every firing from now on (NULL: stop). Not thread-safe, like rules_drop_atom. */
void rules_trace(rules_trace_fn fn, void *ctx);
/* Tell the observer, if any (the rewriter's and the guards' own use). */
void rules_trace_emit(enum rules_trace_kind kind, const struct rules_rewriter *r, const struct rules_rule *rule,
                      const struct rules_binding *b, enum ir_class cls, int32_t at);

/* ── The rewriter ────────────────────────────────────────────────────────────────────────────────────────── */

/* The graph being rewritten: its slots, its tensors (a working copy: the numerics fold adds tensors), the chip's
 * shim, the step running and the class it builds, and every decision made. */
struct rules_rewriter {
    struct ir_slots *s;
    struct ir_graph *g;
    const struct shim *shim;
    const struct rules_rule *rule; /* the running rule (for its guards) */
    const char *step;              /* the running step's name */
    enum ir_class building;
    struct rules_report *report;
    const enum ir_class *linking;  /* dry runs of an unlinked rule: these classes count as native */
    int nlinking;
    bool borrowed;                 /* a dry run reading the working slots, not yet changed */
    bool journal;                  /* ...which it changes in place under the slots' journal (else on a copy) */
    bool dry;                      /* a held or unlinked step's dry run: its firings are reported, never kept */
};

/* The slots a rewrite changes. A dry run's borrowed slots start their journal (or, for a step that replaces the
 * slots wholesale, become its own copy) at the first change, so a dry run that never fires costs nothing and one
 * that fires pays for the slots it touched. Every change to r->s goes through here. */
struct ir_slots *rules_slots(struct rules_rewriter *r);

/* Whether the chip runs `op` whole. When it does not, a refused decision with the chip's reason is reported (not
 * repeated back to back). */
bool rules_admits(struct rules_rewriter *r, const struct ir_op *op);
/* The chip's answer for op without reporting: 0 native, else 1 with why. */
int rules_allows(const struct rules_rewriter *r, const struct ir_op *op, char why[IR_ERR_LEN]);
/* Report that `rule` fired building `cls` at slot at (covers from the slot's op). */
void rules_record(struct rules_rewriter *r, enum ir_class cls, int32_t at);
/* Fold the ops at slots `at` and `gone` into one op of `cls` at `at`, its parts in slot order, operands `ins` with
 * `access`, result `out` landing at `dst`, keeping every internal result something else reads or the host sees;
 * records a firing. */
void rules_fuse(struct rules_rewriter *r, enum ir_class cls, int32_t at, const int32_t *gone, int32_t ngone,
                const ir_tid *ins, const struct ir_access *access, int32_t nins, ir_tid out, struct ir_dst dst);
/* Fold the slots of gone into the op at `at`, symbol and operands unchanged (a placement); records a firing. */
void rules_absorb(struct rules_rewriter *r, enum ir_class cls, int32_t at, const int32_t *gone, int32_t ngone);
/* A candidate fused op of cls over copies of the given parts, for the shim to judge (free with ir_op_free). */
struct ir_op rules_candidate(enum ir_class cls, const struct ir_op *const *parts, int32_t nparts, const ir_tid *ins,
                             int32_t nins, ir_tid out, struct ir_dst dst);
/* A candidate over the ops at the given slots. */
struct ir_op rules_candidate_slots(const struct rules_rewriter *r, enum ir_class cls, const int32_t *slots,
                                   int32_t nslots, const ir_tid *ins, int32_t nins, ir_tid out, struct ir_dst dst);
/* Whether the chip runs a candidate of cls over the ops at `slots` (operands ins, result out at dst) whole; a refusal
 * is reported. */
bool rules_admits_slots(struct rules_rewriter *r, enum ir_class cls, const int32_t *slots, int32_t nslots,
                        const ir_tid *ins, int32_t nins, ir_tid out, struct ir_dst dst);
/* Fold the ops at `slots` (ascending) into one op of cls at `at`, operands those none of them computes in the order
 * they read them, result `out` landing at `dst`, when the chip runs it whole. */
bool rules_fold(struct rules_rewriter *r, enum ir_class cls, const int32_t *slots, int32_t n, int32_t at, ir_tid out,
                struct ir_dst dst);
/* rules_fold, asking the chip's admission only when `ask` (a chip's own rule the seed fuses unasked). */
bool rules_fold_asking(struct rules_rewriter *r, enum ir_class cls, const int32_t *slots, int32_t n, int32_t at,
                       ir_tid out, struct ir_dst dst, bool ask);
/* Fuse producer and consumer (the consumer reading the producer's result) into one op of cls at anchor, operands
 * those neither computes, when the chip runs it whole. */
bool rules_pair(struct rules_rewriter *r, enum ir_class cls, int32_t producer, int32_t consumer, int32_t anchor);
/* Fold members into one op of cls at the last one's slot when the guards hold (b binds MEMBERS and ANCHOR) and the
 * chip runs it whole. members is sorted and deduplicated in place. */
bool rules_group_at_last(struct rules_rewriter *r, enum ir_class cls, int32_t *members, int32_t nmembers,
                         struct rules_binding *b);
/* The operands of products of one activation x merged side by side: x (with the first member's access), then every
 * member's other operands, each once; returns the count written to ins/access (room for cap). */
int32_t rules_projection_operands(const struct rules_rewriter *r, const int32_t *group, int32_t n, ir_tid x,
                                  ir_tid *ins, struct ir_access *access, int32_t cap);
/* The first slot that reads t, or -1; and how many slots read t. */
int32_t rules_first_reader(const struct rules_rewriter *r, ir_tid t);
int32_t rules_reader_count(const struct rules_rewriter *r, ir_tid t);
/* Whether slot j is the one slot that reads t. */
bool rules_sole_reader(const struct rules_rewriter *r, ir_tid t, int32_t j);
/* The live op at slot i, or NULL. */
const struct ir_op *rules_slot(const struct rules_rewriter *r, int32_t i);
/* The operands of the ops at `slots` that none of them computes, each once, in the order they read them; returns
 * the count, written to ins/access (room for cap). */
int32_t rules_external(const struct rules_rewriter *r, const int32_t *slots, int32_t nslots, ir_tid *ins,
                       struct ir_access *access, int32_t cap);

/* ── Helpers the rule files share (rules/helpers.c) ─────────────────────────────────────────────────────────── */

/* malloc that aborts on exhaustion. */
void *rules_xmalloc(size_t n);
/* Ascending order of int32 values, for qsort. */
int rules_cmp_i32(const void *a, const void *b);
/* A growing list of slots ({0} is empty). */
struct rules_list {
    int32_t *v;
    int32_t n, cap;
};
/* Append x to l. */
void rules_list_push(struct rules_list *l, int32_t x);
/* Whether l holds x. */
bool rules_list_has(const struct rules_list *l, int32_t x);
/* Free what l holds and empty it. */
void rules_list_free(struct rules_list *l);
/* Sort l ascending and drop repeats. */
void rules_list_sort_unique(struct rules_list *l);
/* A copy of l, with x appended when x >= 0, sorted and unique. */
struct rules_list rules_list_with(const struct rules_list *l, int32_t x);
/* a·b for sizes, or -1 when either is negative or the product would overflow. */
int64_t rules_size_mul(int64_t a, int64_t b);
/* Bind set role g to the slots of l (which must outlive the binding's use). */
void rules_bind_list(struct rules_binding *b, enum rules_role g, const struct rules_list *l);
/* Whether the consumer sought is op, one of t's readers (ctx: what the matcher knows). */
typedef bool (*rules_reader_fit)(const struct ir_op *op, ir_tid t, const void *ctx);
/* The first live slot reading t whose op fits, or -1: the consumer found by its shape among t's readers. */
int32_t rules_reader_such(const struct rules_rewriter *r, ir_tid t, rules_reader_fit fits, const void *ctx);
/* The latest slot before j, other than those `but` marks (indexed by slot), that writes an operand of the op at j, or
 * -1: a candidate moving up to a slot before that one would cross it. */
int32_t rules_last_writer_but(const struct rules_rewriter *r, int32_t j, const bool *but);
/* A tree of minima over n values, to find the next position whose value is within a bound without passing every
 * position. */
struct rules_min_tree {
    int32_t *min; /* node k covers a range of positions; the leaves from `size` on */
    int32_t size;
};
/* The tree over the n values v. */
struct rules_min_tree rules_min_tree_make(const int32_t *v, int32_t n);
/* The first position at or after `from` whose value is at most `bound`, or -1. */
int32_t rules_min_tree_next(const struct rules_min_tree *t, int32_t from, int32_t bound);
/* Free what rules_min_tree_make made. */
void rules_min_tree_free(struct rules_min_tree *t);

/* ── Forms: what an op is, as the rules read it ──────────────────────────────────────────────────────────── */

/* How a product's weights are held: checkpoint rows in a block format, or plain values; none when not a constant. */
enum rules_weights_kind { RULES_W_NONE, RULES_W_ROWS, RULES_W_VALUES };
struct rules_weights {
    enum rules_weights_kind kind;
    enum ir_format format;
};
struct rules_weights rules_weights_of(const struct ir_graph *g, ir_tid w);
bool rules_weights_equal(struct rules_weights a, struct rules_weights b);

/* The class of a fused op, or -1. */
int rules_class(const struct ir_op *op);
/* The op's primitive spec when it is a primitive, else NULL. */
const struct ir_spec *rules_prim(const struct ir_op *op);
/* Whether op is a primitive of kind k. */
bool rules_is(const struct ir_op *op, enum ir_kind k);
/* The op's leaves as pointers into it, in order; returns the count (at most cap written). */
int32_t rules_leaves(const struct ir_op *op, const struct ir_op **out, int32_t cap);
/* The first and the last leaf. */
const struct ir_op *rules_first_leaf(const struct ir_op *op);
const struct ir_op *rules_last_leaf(const struct ir_op *op);

/* Whether op is an RMS norm without a bias: the only norm a fused class computes (a layer norm, or a norm with a bias,
 * stays a launch of its own). */
bool rules_plain_rms(const struct ir_op *op);

/* An RMS norm (without a bias): its input (read whole or as a part), the operand it adds first, whether it norms that operand and
 * adds (pre), whether it writes the sum on (sum), its weight, result, rows, cols and epsilon. */
struct rules_norm_form {
    ir_tid x;
    bool has_part;
    struct ir_strided part;
    ir_tid add;  /* IR_NONE when none */
    bool pre, sum;
    ir_tid w;    /* IR_NONE when none */
    ir_tid out;
    bool own;
    int64_t rows, cols;
    double eps;
};
bool rules_norm(const struct ir_op *op, struct rules_norm_form *f);

/* An elementwise op: operator, operands, the activation folded in (a glu_act_mul), the broadcast row, length. */
struct rules_binary_form {
    enum ir_ewop op;
    ir_tid a, b;
    bool gated;
    enum ir_kind gate; /* silu, sigmoid or gelu when gated */
    int64_t row;
    ir_tid out;
    int64_t n;
};
bool rules_binary(const struct ir_op *op, struct rules_binary_form *f);
/* The activation a lifted unary op applies (silu, sigmoid, gelu), or -1. */
int rules_activation(const struct ir_op *op);

/* A matrix product by a constant (or a product with its bias folded in): activation, weights, bias, destination,
 * k in, n out, m rows. */
struct rules_gemv_form {
    ir_tid x, w;
    struct rules_weights weights;
    ir_tid bias; /* IR_NONE when none */
    struct ir_dst dst;
    int64_t k, n, m;
};
bool rules_gemv(const struct ir_op *op, const struct ir_graph *g, struct rules_gemv_form *f);

/* A rotation (or a per-head RMS norm with a rotation): input, part, the folded norm's weight and epsilon, tables,
 * position, destination, heads, heads a row, head width, rotated half, its pairing (adjacent: (2i, 2i+1), else
 * (i, i+half)) and its rotary base. */
struct rules_rope_form {
    ir_tid x;
    bool has_part;
    struct ir_strided part;
    bool normed;
    ir_tid norm_w;
    double norm_eps;
    ir_tid cos, sin, pos; /* pos IR_NONE when not named */
    struct ir_dst dst;
    int64_t heads, per_row, hd, half;
    bool adjacent;
    double theta;
};
bool rules_rope(const struct ir_op *op, struct rules_rope_form *f);

/* A head slice, or a literal row of a table taken as a copy: y[g·width + i] = x[g·every + from + i]. */
struct rules_slice_form {
    ir_tid x, y;
    int64_t groups, every, from, width;
};
bool rules_slice(const struct ir_op *op, struct rules_slice_form *f);

/* The input an op reads unit by unit, its units and width, for an op that can read them in place. */
bool rules_unit_input(const struct ir_op *op, ir_tid *x, int64_t *units, int64_t *width);
/* The units and width an op writes its result in, when it can write them into every unit of a wider tensor. */
bool rules_unit_output(const struct ir_op *op, int64_t *units, int64_t *width);
/* The elements a row-writing producer writes and the row width it writes them in. */
bool rules_written(const struct ir_op *op, const struct ir_graph *g, int64_t *elems, int64_t *row);

/* A causal convolution (with its SiLU and per-head L2 norm folded in or not). */
struct rules_conv_form {
    ir_tid x, w, ring, y;
    int64_t chan, taps, rows;
    bool silu;
    bool l2;
    int64_t l2_cols;
    double l2_eps;
};
bool rules_conv(const struct ir_op *op, struct rules_conv_form *f);

/* A mixture of experts (lifted, with its shared expert folded in, or a block's mixtures as one). */
struct rules_moe_form {
    ir_tid x;
    struct ir_dst dst;
    int64_t d, k, dff;
    enum ir_moeact act;
    int64_t rows;
    bool shared;
};
bool rules_moe(const struct ir_op *op, struct rules_moe_form *f);

/* Land op's result where dst says — on the op and on the part computing its result, recursively. */
void rules_set_dst(struct ir_op *op, struct ir_dst dst);
/* Read `to` with access wherever op, or any part of it, reads `from`. */
void rules_read_in_place(struct ir_op *op, ir_tid from, ir_tid to, struct ir_access access);
/* Every class op realizes — its own, each part's, and those its placements and composites make — as a bitset. */
void rules_realizes(const struct ir_op *op, const struct ir_graph *g, bool out[IR_CLASS_COUNT]);

/* ── The optimizer ───────────────────────────────────────────────────────────────────────────────────────── */

/* A graph after the rules, and the report of every decision. */
struct rules_optimized {
    struct ir_graph *graph;
    struct rules_report report;
};

/* g with every step but those held applied under shim. held is a list of step names (NULL-terminated or nheld). */
int rules_optimize(const struct ir_graph *g, const struct shim *shim, const char *const *held, int nheld,
                   struct rules_optimized *out, char err[IR_ERR_LEN]);
/* Like rules_optimize, running only the first `nsteps` holdable steps (rules_steps' order; argmax_advance still runs
 * where it would, or at the stop when that comes first) and none after: what holding every later step must leave. */
int rules_optimize_steps(const struct ir_graph *g, const struct shim *shim, const char *const *held, int nheld,
                         int nsteps, struct rules_optimized *out, char err[IR_ERR_LEN]);
void rules_optimized_free(struct rules_optimized *o);
/* Every step a compile under shim can hold, in the order it runs them, into a callback. */
void rules_steps(const struct shim *shim, void (*step)(const char *name, void *ctx), void *ctx);
/* Whether the chip links every class step `name` builds (a step it does not only dry-runs, its firings refused). */
bool rules_step_linked(const struct shim *shim, const char *name);

/* Read a report back from its lines (rules_report_lines' form, one a line, "\n"-separated, a final newline optional):
 * each rule's name resolved to fusecheck's table (rules_find; "argmax_advance" and the numerics fold included), its
 * class by ir_class_lookup, its covers, outcome, reason and code (a code resolved to the static string of the same
 * text that rules_reason_code can return, else refused). seed_rules is set by a first line "seed-rules". 0, or -1 with
 * err ("report line N: what was expected") and rep left empty. */
int rules_report_parse(const char *text, size_t len, struct rules_report *rep, char err[IR_ERR_LEN]);

/* ── An optimizer as its own process (rules/external.c; the protocol: docs/optimizer-protocol.md) ────────── */

/* What became of one request to an optimizer process: an answer, or the finding that it gave none fit to read. */
#define RULES_EXTERNAL_FAULTS(X) \
    X(NONE, "none", "an answer was read") \
    X(START, "start", "the command could not be started") \
    X(HANDSHAKE, "handshake", "its first message was not the protocol's greeting") \
    X(TIMEOUT, "timeout", "no whole answer within the time allowed") \
    X(EXIT, "exit", "it exited or closed its output before a whole answer") \
    X(FRAMING, "framing", "a message's length prefix was not the protocol's") \
    X(TOO_LARGE, "too-large", "an answer longer than the limit") \
    X(WRONG_ID, "wrong-id", "an answer to another request") \
    X(MALFORMED, "malformed", "an answer whose graph or report does not parse") \
    X(REFUSED, "refused", "it answered that it could not serve the request")
#define X(e, name, meaning) RULES_EXTERNAL_##e,
enum rules_external_fault { RULES_EXTERNAL_FAULTS(X) RULES_EXTERNAL_FAULT_COUNT };
#undef X
const char *rules_external_fault_name(enum rules_external_fault f);
const char *rules_external_fault_meaning(enum rules_external_fault f);

/* How long and how much an optimizer process may take (0 in a field: its default). */
struct rules_external_limits {
    int32_t timeout_ms; /* for one answer, the greeting's included (default 10000) */
    size_t max_answer;  /* bytes in one message (default 256 MiB) */
    size_t keep_stderr; /* the last bytes of its stderr kept for a finding (default 64 KiB) */
};

/* A running optimizer process spoken to by the protocol. */
struct rules_external;

/* Start command (by /bin/sh -c, its stdin and stdout the protocol's, its stderr read and kept) and read its greeting
 * (name, version). NULL with err and *fault (START or HANDSHAKE, or a read's fault) when it cannot be started or does
 * not greet. Never hangs past the limits; SIGPIPE from a closed pipe is not raised in the caller. */
struct rules_external *rules_external_start(const char *command, const struct rules_external_limits *lim,
                                            enum rules_external_fault *fault, char err[IR_ERR_LEN]);
const char *rules_external_command(const struct rules_external *x);
const char *rules_external_name(const struct rules_external *x);    /* from its greeting */
const char *rules_external_version(const struct rules_external *x); /* from its greeting */
/* Ask the process to optimize the lifted graph g under the shim named `shim` with the steps `held` held (and the
 * seed's rules when seed_rules), and read back its rewritten graph (parsed by ir_parse_unchecked, not validated: the
 * caller's checks do that) and its report (rules_report_parse) into *out. RULES_EXTERNAL_NONE, or the fault with err
 * and *out empty. After any fault but REFUSED the process is stopped; the next request starts it again. */
enum rules_external_fault rules_external_optimize(struct rules_external *x, const struct ir_graph *g, const char *shim,
                                                  const char *const *held, int nheld, bool seed_rules,
                                                  struct rules_optimized *out, char err[IR_ERR_LEN]);
/* The last bytes the process wrote on its stderr (NUL-terminated, "" when none): kept with a finding. */
const char *rules_external_stderr(const struct rules_external *x);
/* Close its stdin, give it a moment to exit, then kill it; free x (NULL: nothing). */
void rules_external_stop(struct rules_external *x);
/* Serve the protocol on in_fd/out_fd with fusecheck's own optimizer (rules_optimize; seed_rules forced on when asked
 * by the command line, else as each request says), greeting as name/version, until in_fd ends. 0 at a clean end, -1
 * with err when the client broke the protocol (an error message is answered first where one can be). */
int rules_external_serve(int in_fd, int out_fd, const char *name, const char *version, bool seed_rules,
                         char err[IR_ERR_LEN]);

/* ── The numerics fold (rules/numerics.c) ────────────────────────────────────────────────────────────────── */

/* Insert a quantize op before every operand the shim's activation says a product reads quantized, folded into the
 * producer's epilogue where the chip links that class (fold false: insert only, report the folds held). */
void rules_numerics_fold(struct rules_rewriter *r, bool fold);
/* The fold as a rule the oracle reads: the classes it builds, its guard atoms (the quantize, bound as CONSUMER, moves
 * up to the op computing its source, bound as PRODUCER, its source as RESULT) and its motion (hoist_to_producer). */
extern const struct rules_rule rules_rule_fused_quant;
/* A copy of the lifted graph g with the quantize ops the fold inserts under shim — and nothing folded: the reference
 * side of `diff` under a shim whose products read quantized activations (the graph itself when none do). NULL on
 * allocation failure. */
struct ir_graph *rules_quantized_lifted(const struct ir_graph *g, const struct shim *shim);

/* ── The rules (one apply function each, in rules/rules_*.c) ─────────────────────────────────────────────── */

#define RULES_SHARED(X) \
    X(add_norm) X(sandwich_norm) X(gemv_bias) X(gemm_scale) X(affine_input_fold) X(gemv_norm_epilogue) \
    X(prefill_norm_epilogues) X(norm_scale) X(head_norm_rope) X(slice_read) X(row_write) X(qkv_head_epilogue) \
    X(join_in_place) X(conv_silu) X(conv_silu_l2) X(conv_parts) X(gates) X(gate_projections) X(gdn_input_epilogue) \
    X(gdn_post_conv_prep) X(gdn_decode_whole) X(act_gate) X(attn_output_gate) X(glu_pair) X(relu_sqr) \
    X(elementwise_regions) X(elementwise_chains) X(recompute_fanout) X(shared_expert) X(moe_rows) \
    X(moe_deferred_finalize) X(gather_scale) X(embed_norm) X(strided_values) X(mla_unabsorb_in_fold) X(dual_norm) \
    X(cross_layer_launch) X(rope_parts) X(qk_norm_rope_gate_split) X(horizontal_norm_rope_insert) X(mla_prologue) \
    X(last_layer_rows)

#define X(name) extern const struct rules_rule rules_rule_##name;
RULES_SHARED(X)
#undef X
extern const struct rules_rule rules_rule_argmax_advance;
extern const struct rules_rule rules_rule_merged_projections;

#endif
