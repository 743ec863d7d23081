/* fuzz/fuzz.h — fusecheck's fuzzing pieces: the byte-driven graph generator, the cases the optimizer harness reads,
 * the checks each harness runs (as plain functions, so ctest and the libFuzzer targets share them), the
 * structure-aware mutator over the text format, and the hook a translation validator plugs into.
 *
 * Nothing here prints to stdout. A check that fails fills a struct fuzz_finding (a signature — the check that failed
 * and the rule or detail it concerns — and a message); the harness (fuzz/fuzz_*.c) reports it and aborts, so
 * libFuzzer and the replay driver both see a crash whose stderr names the signature. */
#ifndef FUSECHECK_FUZZ_H
#define FUSECHECK_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"
#include "rules/rules.h"
#include "shim/shim.h"

/* ── Bytes ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* A byte reader over a fuzzer's input: past the end it reads zeros, so every input decodes to something. */
struct fuzz_bytes {
    const uint8_t *p;
    size_t n, at;
};

/* The next byte, or 0 past the end. */
uint8_t fuzz_byte(struct fuzz_bytes *b);
/* A value in [0, n) from the next byte (0 when n is 0). */
int fuzz_pick(struct fuzz_bytes *b, int n);
/* Whether the bytes are used up. */
bool fuzz_bytes_done(const struct fuzz_bytes *b);

/* ── The generator (fuzz/gen.c) ──────────────────────────────────────────────────────────────────────────── */

/* The motifs the generator builds graphs from: each a shape from the model zoo or a rule's pattern. */
#define FUZZ_MOTIFS(X) \
    X(ADD_NORM, "add_norm") \
    X(NORM_ADD, "norm_add") \
    X(PROJECTION, "projection") \
    X(GATED_PAIR, "gated_pair") \
    X(EMBED, "embed") \
    X(HEAD_NORM_ROPE, "head_norm_rope") \
    X(SLICE, "slice") \
    X(ROW_WRITE, "row_write") \
    X(JOIN, "join") \
    X(CONV, "conv") \
    X(DELTA, "delta") \
    X(ATTENTION, "attention") \
    X(MIXTURE, "mixture") \
    X(LAST_ROW, "last_row") \
    X(POINTWISE, "pointwise") \
    X(LATENT, "latent") \
    X(ARGMAX, "argmax") \
    X(DUAL_NORM, "dual_norm")

enum fuzz_motif {
#define X(e, s) FUZZ_MOTIF_##e,
    FUZZ_MOTIFS(X)
#undef X
    FUZZ_MOTIF_COUNT
};

/* The hazards the generator puts between a motif's ops: what the rules' guards must respect. */
#define FUZZ_HAZARDS(X) \
    X(EXTRA_READER, "extra_reader") \
    X(OBSERVED, "observed") \
    X(CARRIED, "carried") \
    X(STATE_WRITE, "state_write") \
    X(STATE_READ, "state_read")

enum fuzz_hazard {
#define X(e, s) FUZZ_HAZARD_##e,
    FUZZ_HAZARDS(X)
#undef X
    FUZZ_HAZARD_COUNT
};

const char *fuzz_motif_name(enum fuzz_motif m);
const char *fuzz_hazard_name(enum fuzz_hazard h);

/* What one generation built: how many of each motif and hazard. */
struct fuzz_gen_stats {
    int motifs[FUZZ_MOTIF_COUNT];
    int hazards[FUZZ_HAZARD_COUNT];
};

/* The most motifs and ops one generated graph has: an input's cost grows with its ops (about 0.1 ms an op under the
 * sanitizers); the largest motif with its hazards takes 21 (the delta rule's 17 and four one-op hazards), and a motif
 * starts only while 24 more still fit. */
#define FUZZ_GEN_MAX_MOTIFS 6
#define FUZZ_GEN_MAX_OPS 32

/* Decode bytes into the text of a valid graph (malloc'd, NUL-terminated; *len its length). Every byte string gives
 * a graph the validator accepts; the same bytes give the same text. stats may be NULL. NULL only when out of
 * memory. */
char *fuzz_generate(struct fuzz_bytes *b, size_t *len, struct fuzz_gen_stats *stats);
/* fuzz_generate, parsed (and validated) into a graph; NULL with err when the generator broke its promise. */
struct ir_graph *fuzz_generate_graph(struct fuzz_bytes *b, struct fuzz_gen_stats *stats, char err[IR_ERR_LEN]);

/* ── Findings ────────────────────────────────────────────────────────────────────────────────────────────── */

/* A failed check: the check's name, what it concerns (a rule, a tensor, a query), and what happened. The
 * signature the campaign deduplicates by is "<check>:<detail>". */
struct fuzz_finding {
    char check[32];
    char detail[128];
    char message[IR_ERR_LEN];
};

/* Fill a finding; returns 1 (so a check can `return fuzz_fail(...)`). */
int fuzz_fail(struct fuzz_finding *f, const char *check, const char *detail, const char *fmt, ...);
/* Write "fusecheck-finding: <harness> <check>:<detail>" and the message to stderr (what the campaign parses). */
void fuzz_report(const char *harness, const struct fuzz_finding *f);

/* ── Shims the bytes choose from ─────────────────────────────────────────────────────────────────────────── */

/* The shim names a case may pick: every plain name shim_list offers, and for each parameterised row the concrete
 * names built from its parameters that shim_lookup accepts. Built once, in shim_list's order. */
int fuzz_shim_count(void);
const char *fuzz_shim_name(int i);
/* The first row of shim_list that gives no name shim_lookup loads (its name as listed), or NULL: every row loads. */
const char *fuzz_shim_dead_row(void);
/* Look up names one edit away from offered name i — the edit the bits of pick choose, and for a parameterised name
 * the two at its first ':' (the name cut there, and the ':' replaced; tried once a name, as they depend on it alone)
 * — each in a buffer of its own length. 1 when a shim loads under a name spelled otherwise than shim_list says names
 * are (a row's name, or a parameterised row's prefix then parameters); that name, else the last tried, goes to name. */
#define FUZZ_NAME_LEN 192
int fuzz_shim_name_probe(int i, uint64_t pick, char *name, size_t cap);

/* ── The optimizer harness's case: control bytes, then a graph ───────────────────────────────────────────── */

#define FUZZ_CTL 8
/* The most top-level ops a case's graph may have to be checked (larger ones pass unchecked, and the mutator and
 * crossover do not make them): one input stays a few milliseconds even under the sanitizers. Room for every past
 * finding's reproducer (the largest has 71 ops). */
#define FUZZ_MAX_CASE_OPS 80
/* The most ops the mutator and crossover grow a graph to: a graph already larger is changed but not grown, and a
 * splice is at most as large as the larger of its two graphs or this. The rules' patterns are local (the largest
 * motif with its hazards takes 21 ops), and an input's cost grows with its ops, so the fuzzer spends its time on
 * graphs where every motif fits and inputs stay near a millisecond under the sanitizers. */
#define FUZZ_GROW_MAX_OPS 32

/* What the control bytes choose. */
struct fuzz_plan {
    int shim;      /* index into fuzz_shim_name */
    int hold[2];   /* step indices held (-1: none) */
    int prefix;    /* prefix % 4 is 0: the prefix-hold check, holding the steps from prefix / 4 on; 1: the text
                    * round trip of the rewritten graph */
    uint64_t seed; /* the evaluator's seed */
};

/* The index of the offered shim named `name` (as fuzz_shim_name spells it), or -1 when the list does not offer it. */
int fuzz_shim_index(const char *name);
/* The control bytes that decode to plan p: what a seed that must run under a given shim and holds starts with. 0 on
 * success; 1 when no bytes decode to it (a shim not offered or beyond what one byte reaches, a hold above 255, a
 * seed of 2^24 or more). */
int fuzz_plan_encode(const struct fuzz_plan *p, uint8_t ctl[FUZZ_CTL]);

/* A decoded case: the plan, and the graph (the body parsed as text when it is a graph with an op, else generated
 * from the body's bytes). */
struct fuzz_case {
    struct fuzz_plan plan;
    struct ir_graph *g;
    bool generated;
};

/* Decode an input of the optimizer harness. 0 on success; 1 with err when the generator failed its promise. */
int fuzz_case_decode(const uint8_t *data, size_t size, struct fuzz_case *c, char err[IR_ERR_LEN]);
void fuzz_case_free(struct fuzz_case *c);

/* ── Checks (fuzz/checks.c): 0 when every check passes, 1 with a finding ──────────────────────────────────── */

/* Any bytes → parse; when they parse, print → parse → print is the identity and the validating parser agrees
 * with the validator. */
int fuzz_check_format(const uint8_t *data, size_t size, struct fuzz_finding *f);
/* A case → optimize: the result validates and prints back to itself; a second run gives the same graph and digest;
 * the diff is bit-identical; every result the host reads is still written; every fired decision passes the
 * validator hooks; holding every step from the plan's k gives the graph the earlier steps make. */
int fuzz_check_optimize(const uint8_t *data, size_t size, struct fuzz_finding *f);
/* The optimizer checks on a graph and plan directly (the case decoded). */
int fuzz_check_graph(const struct ir_graph *g, const struct fuzz_plan *plan, struct fuzz_finding *f);
/* A generated graph's slots under random takes, puts and replaces: every indexed fact equals its scanning
 * specification after each. */
int fuzz_check_facts(const uint8_t *data, size_t size, struct fuzz_finding *f);
/* GGUF bytes to the reader (fuzz/check_gguf.c): a refusal names its byte; a file that reads keeps its tensors inside
 * its bytes, its arrays' items readable, and lifts (when small) or is refused naming the file. */
int fuzz_check_gguf(const uint8_t *data, size_t size, struct fuzz_finding *f);
/* Decisions (with their codes), runs (with their optimizers), graphs, shims and findings with arbitrary text
 * round-trip through results.db unchanged. */
int fuzz_check_db(const uint8_t *data, size_t size, struct fuzz_finding *f);
/* Release what the db check keeps between inputs (its scratch file). */
void fuzz_db_cleanup(void);

/* ── Translation validation of fired decisions ───────────────────────────────────────────────────────────── */

/* A validator of one fired decision (report index `decision` of o, a compile of lifted under shim): 0 when it
 * holds, else 1 with why. The oracle's translation validation plugs in here. */
typedef int (*fuzz_decision_validator)(const struct ir_graph *lifted, const struct shim *shim,
                                       const struct rules_optimized *o, int32_t decision, char why[IR_ERR_LEN]);
/* Install (or with NULL remove) the validator fuzz_check_optimize calls on every fired decision. */
void fuzz_set_validator(fuzz_decision_validator fn);
/* The installed validator, or NULL. */
fuzz_decision_validator fuzz_validator(void);

/* A validator of a whole compile (the oracle's translation validation: it compiles lifted under shim itself,
 * re-checking every firing as it happens): 0 when every firing holds, else 1 with the rule that failed and why. */
typedef int (*fuzz_run_validator)(const struct ir_graph *lifted, const struct shim *shim, char rule[64],
                                  char why[IR_ERR_LEN]);
/* Install (or with NULL remove) the run validator fuzz_check_optimize calls once a case; and the installed one. */
void fuzz_set_run_validator(fuzz_run_validator fn);
fuzz_run_validator fuzz_run_validator_installed(void);

/* ── An optimizer run as its own process (fuzz/external.c) ───────────────────────────────────────────────── */

/* Check the optimizer `command` (run by /bin/sh -c, speaking docs/optimizer-protocol.md) instead of fusecheck's own:
 * start it now and read its greeting; each answer within timeout_ms (0: 2000). 0, or -1 with err. */
int fuzz_external_use(const char *command, int32_t timeout_ms, char err[IR_ERR_LEN]);
/* fuzz_external_use from a harness's arguments (--optimizer=CMD, --optimizer-timeout=MS) or the environment
 * (FUSECHECK_OPTIMIZER, FUSECHECK_OPTIMIZER_TIMEOUT): 0 when none names an optimizer, 1 when it runs, -1 with err. */
int fuzz_external_from_args(int argc, char **argv, char err[IR_ERR_LEN]);
/* Whether an external optimizer is the one checked; its command, and the name and version it greeted with. */
bool fuzz_external_on(void);
const char *fuzz_external_command(void);
const char *fuzz_external_name(void);
const char *fuzz_external_version(void);
/* Ask the external optimizer for g under shim with held held: 0 with out filled (graph parsed, not validated), or 1
 * with the finding "external:<fault>" (the process is started again for the next request). */
int fuzz_external_optimize(const struct ir_graph *g, const char *shim, const char *const *held, int nheld,
                           struct rules_optimized *out, struct fuzz_finding *f);
/* The optimizer's stderr tail at its last fault ("" when none): reported beside the finding. */
const char *fuzz_external_fault_stderr(void);

/* ── Mutations over the text format (fuzz/mutate.c) ──────────────────────────────────────────────────────── */

/* The structural mutations: each keeps the graph valid or is not taken. */
#define FUZZ_MUTATIONS(X) \
    X(SWAP, "swap") \
    X(MOVE, "move") \
    X(DUPLICATE, "duplicate") \
    X(RETARGET, "retarget") \
    X(OBSERVE, "observe") \
    X(READER, "reader") \
    X(CARRY, "carry") \
    X(RESIZE, "resize") \
    X(DROP, "drop") \
    X(ALIAS, "alias")

enum fuzz_mutation {
#define X(e, s) FUZZ_MUT_##e,
    FUZZ_MUTATIONS(X)
#undef X
    FUZZ_MUT_COUNT
};

const char *fuzz_mutation_name(enum fuzz_mutation m);

/* The pairs of reads of one length and type in lifted graph g where one is a product's activation (a matmul's or a
 * mixture's operand 0) and the other is any other operand of another tensor: where one value may be read in two
 * roles. */
int64_t fuzz_alias_count(const struct ir_graph *g);

/* Make pair n (of fuzz_alias_count) read one value in both roles: the other read takes the activation
 * (to_activation), or the product reads the other value. False when that would read a value before it is made.
 * The graph is left for the caller to validate. */
bool fuzz_alias_apply(struct ir_graph *g, int64_t n, bool to_activation);

/* A deterministic generator of random numbers for the mutator (splitmix64). */
uint64_t fuzz_rand(uint64_t *state);

/* Mutate the graph text (which must parse and validate) by one structural mutation chosen from seed; the new
 * canonical text, malloc'd, or NULL when the text is not a valid graph or no mutation kept it valid. *which (may
 * be NULL) receives the mutation taken. */
char *fuzz_mutate_text(const char *text, size_t len, uint64_t seed, size_t *out_len, enum fuzz_mutation *which);
/* Apply exactly mutation m (NULL when it does not apply or breaks validity). */
char *fuzz_mutate_with(const char *text, size_t len, enum fuzz_mutation m, uint64_t seed, size_t *out_len);
/* Splice two graph texts into one valid graph: b's tensors renamed apart, its ops merged into a's at points chosen
 * from seed, and some of b's inputs read from a's results of the same length. NULL when either is not a valid
 * graph. */
char *fuzz_splice_text(const char *a, size_t na, const char *b, size_t nb, uint64_t seed, size_t *out_len);

/* The libFuzzer-facing mutator of an optimizer case (control bytes + body): mutates data in place (size bytes, room
 * for max) and returns the new size. byte_mutate mutates raw bytes (LLVMFuzzerMutate in a libFuzzer build). */
typedef size_t (*fuzz_byte_mutator)(uint8_t *data, size_t size, size_t max);
size_t fuzz_mutate_case(uint8_t *data, size_t size, size_t max, unsigned seed, fuzz_byte_mutator byte_mutate);
/* The crossover of two optimizer cases into out (room for max); returns its size. */
size_t fuzz_cross_case(const uint8_t *a, size_t na, const uint8_t *b, size_t nb, uint8_t *out, size_t max,
                       unsigned seed);
/* The mutator of a format input (any bytes; structural when it is a graph). */
size_t fuzz_mutate_format(uint8_t *data, size_t size, size_t max, unsigned seed, fuzz_byte_mutator byte_mutate);

/* ── The harnesses' shared glue (fuzz/harness.c) ─────────────────────────────────────────────────────────── */

/* libFuzzer's entry points (the replay driver calls the same ones). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
#ifdef FUSECHECK_FUZZ_LIBFUZZER
/* libFuzzer's own byte mutator, for the inputs the structural mutators leave to it. */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1, const uint8_t *data2, size_t size2, uint8_t *out,
                                 size_t max_out_size, unsigned int seed);
#endif

/* A harness's check over one input: non-zero with f filled when it fails. */
typedef int (*fuzz_harness_check)(const uint8_t *data, size_t size, struct fuzz_finding *f);

/* Set up harness h: its known findings (fuzz/known-findings, as FUSECHECK_FUZZ_IGNORE unless set) and the mutant to
 * run (FUSECHECK_FUZZ_MUTANT=rule:atom, dropped for the whole run). */
void fuzz_harness_init(const char *h);
/* Run one input through a check; a failure is reported and aborts (FUSECHECK_FUZZ_KEEP_GOING: reported only), and
 * under a mutant only a failure the faithful optimizer does not share counts. */
int fuzz_harness_run(const char *harness, fuzz_harness_check check, const uint8_t *data, size_t size);

#endif
