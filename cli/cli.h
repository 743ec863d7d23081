/* cli/cli.h — the fusecheck command's shared pieces: the command table, loading a graph from a file or the zoo,
 * writing outputs whole, exit codes. */
#ifndef FUSECHECK_CLI_H
#define FUSECHECK_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "ir/ir.h"
#include "kernels/kernels.h"
#include "models/models.h"
#include "shim/shim.h"

/* Exit codes: a check passed, a check failed, bad usage or bad input (and a resource refusal, and standard output
 * lost: cli_stdout_close). */
enum { CLI_OK = 0, CLI_FAILED = 1, CLI_USAGE = 2 };

/* A subcommand: its name, one-line summary, usage text, and entry point (argv[0] is the command's name). */
struct cli_command {
    const char *name;
    const char *summary;
    const char *usage;
    int (*run)(int argc, char **argv);
};

/* How to lift a zoo model when a command is given one instead of a file. */
struct cli_lift {
    struct models_options options;
    bool mode_set;
    const char *given; /* the last lift option given (--mode, --layers, --weights, --ctx), or NULL */
    bool allow_empty;  /* --allow-empty: a graph file with no tensor and no op is read, not refused */
};

/* The default lift options. */
struct cli_lift cli_lift_defaults(void);
/* Apply one of the lift options (--mode, --layers, --weights) to l; 0 on success, else a message on stderr. */
int cli_lift_option(struct cli_lift *l, const char *name, const char *value);
/* The long options of a lift (a MODEL's --mode, --layers, --weights and --ctx) for a getopt_long table, and their
 * handling: 0 handled, 1 refused (a message on stderr), -1 not a lift option's code. */
#define CLI_LIFT_OPTIONS \
    {"mode", required_argument, NULL, 'm'}, {"layers", required_argument, NULL, 'l'}, \
        {"weights", required_argument, NULL, 'w'}, {"ctx", required_argument, NULL, 'C'}
int cli_lift_code(struct cli_lift *l, int code, const char *arg);
/* The long option that lets cli_load read an empty graph file (cli_lift_code handles its code). */
#define CLI_EMPTY_OPTION {"allow-empty", no_argument, NULL, 'E'}
/* Parse --layers' value: a count of 1..MODELS_MAX_LAYERS, or "all" (0: every layer). 0, or 1 with the one message
 * on stderr that states the range. */
int cli_parse_layers(const char *s, int32_t *out);
/* Say why an option parser (getopt_long over opts and the short options `shorts`) stopped at argv[optind - 1]:
 * "--X needs a value" for a known option given without one, "--X takes no value" for a flag given one, else "unknown
 * option". A usage error of cmd: returns CLI_USAGE. */
struct option;
int cli_option_error(const char *cmd, const struct option *opts, const char *shorts, char **argv);
/* For a hand-written option parser: CLI_USAGE with "--X needs a value" when the last of argv[1..argc-1] is one of the
 * options `valued` (NULL-ended) names, each of which takes a value; else 0. */
int cli_last_needs_value(const char *cmd, int argc, char **argv, const char *const *valued);
/* Make standard output a stream that keeps the reason its first failed write failed (glibc's fopencookie; elsewhere
 * stdout as it is), for cli_stdout_flush to say: called once, before anything is written. */
void cli_stdout_keep(void);
/* Flush standard output; when anything written to it was lost, say "fusecheck: stdout: why" (once a run). 0, or 1. */
int cli_stdout_flush(void);
/* The end of every command: standard output flushed and closed, a loss said (cli_stdout_flush). The command's exit
 * code rc, or CLI_USAGE when it was CLI_OK and its output was lost. */
int cli_stdout_close(int rc);
/* Whether the evaluator can hold g's values (IR_EVAL_MAX_BYTES): 0, or CLI_USAGE with "fusecheck: CMD: the graph's
 * values need N bytes ..., more than the evaluator's limit" on stderr (a resource refusal, exit 2). */
int cli_values_fit(const char *cmd, const struct ir_graph *g);
/* The long option that runs the seed's rules (rules_seed_mode) in optimize, diff, check, validate-run and prove. */
#define CLI_SEED_RULES_OPTION {"seed-rules", no_argument, NULL, 'R'}
/* The context a lift of c gives its caches and rotary tables: --ctx, else the model's. */
int64_t cli_lift_ctx(const struct cli_lift *l, const struct models_config *c);
/* Whether arg names a model's config.json rather than a zoo model or a graph's text: a path ending in ".json", or a
 * file whose text starts with '{'. */
bool cli_is_config(const char *arg);
/* Whether arg names a GGUF file: a path ending in ".gguf", or a file starting with "GGUF". */
bool cli_is_gguf(const char *arg);
/* One step of c lifted: a GGUF file's configuration (cli_model's) by models_gguf_lift over its file, whose weights
 * give every values instance made from then on its constants (ir_values_use_gguf); any other by models_lift. */
struct ir_graph *cli_lift_config(const struct models_config *c, const struct models_options *o, char err[IR_ERR_LEN]);
/* The model arg names where a command takes a MODEL: a zoo model, or a GGUF file's metadata (cli_is_gguf; the file and its
 * configuration kept for the run, *owned NULL), or (a path ending in ".json", or any path
 * that exists) a config.json read into *owned, which the caller frees (models_config_free). NULL with the error printed:
 * an unknown model (a usage error of cmd), or the file's file:line:col: field: what was expected. */
const struct models_config *cli_model(const char *cmd, const char *arg, struct models_config **owned);
/* The GGUF file a configuration cli_model returned was read from, or NULL when it came from elsewhere. */
const struct ir_gguf *cli_model_gguf(const struct models_config *c);
/* "fusecheck" and the arguments, space-separated, whole (malloc'd; the caller frees it): the command a run
 * records. */
char *cli_command_line(int argc, char **argv);
/* The graph `arg` names: a zoo model or a config.json lifted under l, or a text-format file parsed and validated (an
 * empty one refused unless l->allow_empty). NULL with the error printed (file:line:col: message). */
struct ir_graph *cli_load(const char *arg, const struct cli_lift *l);
/* Write len bytes to path whole (a temporary file renamed into place), or to stdout when path is NULL or "-"
 * (flushed: cli_stdout_flush). 0 on success, else a message on stderr. */
int cli_write(const char *path, const char *data, size_t len);
/* Parse a count: a decimal integer in 1..INT32_MAX (nothing after it). 0, or 1 when s is not one. */
int cli_parse_count(const char *s, int32_t *out);
/* The evaluator's thread count (ir_eval_set_threads): --threads N (the long option CLI_THREADS_OPTION, code 'T')
 * when given, else $FUSECHECK_THREADS when set, else 1; N in 1..64. 0, or CLI_USAGE said as cmd's error. */
#define CLI_THREADS_OPTION {"threads", required_argument, NULL, 'T'}
int cli_threads(const char *cmd, const char *arg);
/* Parse a seed: a decimal integer in 0..2^64-1 (no sign, nothing after it). 0, or 1 when s is not one. */
int cli_parse_seed(const char *s, uint64_t *out);

/* Holds a compile makes: rule names from `--hold R1,R2` (repeatable), at most CLI_MAX_HOLDS. */
#define CLI_MAX_HOLDS 64
struct cli_holds {
    char *names[CLI_MAX_HOLDS];
    int n;
};
/* Add the comma-separated names of text to h (each non-empty, each once). 0, or 1 with a message on stderr. */
int cli_holds_add(struct cli_holds *h, const char *text);
/* Whether a compile under shim can hold name: a step it runs, or what its hold knob holds. */
bool cli_holdable(const struct shim *shim, const char *name);
/* Apply h to shim: what its hold knob holds it holds itself (its name says so, as `:hold=` would); the steps are
 * passed to rules_optimize as h->names. */
void cli_holds_apply(const struct cli_holds *h, struct shim *shim);
void cli_holds_free(struct cli_holds *h);
/* Print a usage error for cmd and return CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...);
/* The git revision of the checkout fusecheck runs in (FUSECHECK_GIT_REV overrides), or why there is none: "none: not a
 * git checkout", "none: git not found", "none: no commit yet". Never empty: every run records it. */
void cli_git_revision(char *out, size_t cap);

/* ── Interruptions (cli/interrupt.c) ─────────────────────────────────────────────────────────────────────────── */
/* A long command (check, prove, tolerance, crosscheck) catches SIGINT and SIGTERM from its start: the handler only
 * notes the signal; the command polls it between units of work (a graph, a rule, a proof, a step), ends its run
 * `interrupted` with every committed transaction whole, and exits 128 + the signal. A second signal ends the process
 * at once (the default action): what it committed stays whole, its run `incomplete`. */
void cli_interrupt_catch(void);
/* The signal caught (SIGINT, SIGTERM), or 0. */
int cli_interrupted(void);
/* Whether a signal was caught: the poll between units of work, as a hook (kernels_tol_input.stop,
 * oracle_options.stop). */
bool cli_stop_requested(void);
/* The exit code of a command the caught signal stopped: 128 + it (130 for SIGINT, 143 for SIGTERM). */
int cli_interrupt_exit(void);
/* Say on stderr that cmd stopped on the signal caught, and what became of its run (run 0: none logged). */
void cli_interrupt_say(const char *cmd, const char *db, long long run);
/* The sha256 of len bytes as 64 lowercase hex digits. */
void cli_sha256_hex(const void *data, size_t len, char hex[65]);

/* How a tolerance run goes: the seed, decode steps, a planted fault (tests only), whether to print rows (every
 * one, or only failures), and where to log them (db NULL: nowhere). */
struct db;
struct cli_tol_options {
    uint64_t seed;
    int steps;
    enum kernels_fault fault;
    bool print_rows, all;
    struct db *db;
    int64_t run, graph, shim;
    struct kernels_device *device; /* where the launches run (NULL: the host lane) */
};
/* Running totals of tolerance runs. */
struct cli_tol_totals {
    int64_t graphs, launches, rows, failed, top1_misses;
    double worst_ratio, lane_s, eval_s;
};
/* The host lane's tolerance run of `rewritten` (lifted's rewriting under a cuda-lane shim): rows printed as asked,
 * failures on stderr naming the launch, element and values, everything logged; totals added to t. 0, or -1 with
 * err when the run could not be made (failing rows are not an error: t->failed counts them). */
int cli_tolerance_graph(const struct ir_graph *lifted, const struct ir_graph *rewritten, const struct shim *shim,
                        const struct cli_tol_options *o, struct cli_tol_totals *t, char err[IR_ERR_LEN]);
/* Record the shim a tolerance run's rows are logged under into *id: `logged` on the host lane, `logged@<backend>` on
 * device dev, so that results.db's views compare a device's rows with the same device's only. 0, or 1 with err. */
int cli_tolerance_shim(struct db *db, const char *logged, const char *knobs, const struct kernels_device *dev,
                       int64_t *id, char err[IR_ERR_LEN]);
/* Open the device a --device value names into *out (NULL for "host" or no value); 0, or a usage error of command
 * `cmd` (exit 2) saying why: a bad value, no CUDA device, a build without CUDA. */
int cli_device_open(const char *cmd, const char *spec, struct kernels_device **out);

/* One comparison a rewritten graph is held to (cli/compare.c): its kind ("valid", "values", "unquantized"), whether
 * it passed, how much it compared, and where and why it failed. */
struct cli_comparison {
    const char *kind;
    bool pass;
    int64_t compared;
    char tensor[IR_MAX_NAME + 1];
    int64_t index;
    double lifted, rewritten;
    char reason[IR_ERR_LEN];
};
struct cli_comparisons {
    struct cli_comparison rows[3];
    int n;
};
/* Hold `rewritten` (lifted's rewriting under shim) to what any optimizer's output must be: valid; its values bit for
 * bit those of the reference (lifted, or under a quantizing shim shim_quantized_reference of it), evaluated from
 * `seed`; and under a quantizing shim each quantized value within the mode's bound of the unquantized value it reads.
 * lifted_values: lifted's evaluation from the same seed (NULL: a graph too large to evaluate, held to its validity
 * alone). 0 with the rows in out (failing rows are no error), -1 with
 * err when a reference could not be built or evaluated. */
int cli_compare_rewritten(const struct ir_graph *lifted, const struct ir_values *lifted_values,
                          const struct ir_graph *rewritten, const struct shim *shim, uint64_t seed,
                          struct cli_comparisons *out, char err[IR_ERR_LEN]);
/* Whether every comparison passed. */
bool cli_comparisons_pass(const struct cli_comparisons *c);

/* ── The optimizer a command checks (cli/common.c) ─────────────────────────────────────────────────────────── */
/* diff, check, validate-run and tolerance check fusecheck's own optimizer in process, or with --optimizer CMD any
 * optimizer that speaks the protocol (docs/optimizer-protocol.md): started once a command, asked for every graph.
 * What an external optimizer does wrong is a finding (exit 1), never a usage error: a command that cannot start,
 * and each answer it could not give (a fault: its name and the optimizer's stderr tail said). */
struct rules_report;
struct rules_optimized;
struct rules_external;
/* The option codes of --optimizer, --optimizer-timeout-ms and --expect-same (past any character a short option
 * uses). */
enum { CLI_OPT_OPTIMIZER = 0x4f01, CLI_OPT_OPTIMIZER_TIMEOUT, CLI_OPT_EXPECT_SAME };
#define CLI_OPTIMIZER_OPTIONS \
    {"optimizer", required_argument, NULL, CLI_OPT_OPTIMIZER}, \
        {"optimizer-timeout-ms", required_argument, NULL, CLI_OPT_OPTIMIZER_TIMEOUT}
#define CLI_EXPECT_SAME_OPTION {"expect-same", no_argument, NULL, CLI_OPT_EXPECT_SAME}

struct cli_optimizer {
    const char *command;      /* --optimizer CMD; NULL: fusecheck's own, in process */
    int32_t timeout_ms;       /* --optimizer-timeout-ms (0: the protocol client's default) */
    struct rules_external *x; /* the process, once started */
    char name[128], version[128]; /* what its greeting said */
};
/* Take one of the optimizer's options for command cmd: 0 taken, 1 refused (a usage error said), -1 not one. */
int cli_optimizer_code(struct cli_optimizer *o, const char *cmd, int code, const char *arg);
/* Whether o is an optimizer of its own process. */
bool cli_optimizer_external(const struct cli_optimizer *o);
/* Start an external optimizer (nothing for fusecheck's own). 0, or CLI_FAILED with the finding said on stderr: the
 * command could not start, or did not greet as the protocol says. */
int cli_optimizer_start(struct cli_optimizer *o, const char *cmd);
/* Optimize g under shim with `held` held (and the seed's rules when rules_seed_mode is on) with o into *out. 0; -1
 * with err when fusecheck's own optimizer failed; 1 with err when the external one gave no answer to read (a
 * finding: say it with cli_optimizer_say). Its graph is as the optimizer wrote it, not yet validated. */
int cli_optimizer_run(struct cli_optimizer *o, const struct ir_graph *g, const struct shim *shim,
                      const char *const *held, int nheld, struct rules_optimized *out, char err[IR_ERR_LEN]);
/* Say a finding of o on stderr: `what` (the graph and the fault) and the last lines of the optimizer's stderr. */
void cli_optimizer_say(const struct cli_optimizer *o, const char *what);
/* Stop an external optimizer (nothing for fusecheck's own). */
void cli_optimizer_stop(struct cli_optimizer *o);

/* The differential: an external optimizer's decisions beside fusecheck's own on the same graphs, compared by rule,
 * class, covers, outcome and reason code (a reason's words are each optimizer's own). */
struct cli_rule_tally {
    char *rule;
    int64_t agree, disagree;
};
struct cli_differential {
    int64_t reports, differing, agree, disagree;
    struct cli_rule_tally *rules; /* by name, ascending */
    int nrules, cap;
    bool shown; /* the first differing decision was printed */
};
/* Compare theirs with ours (the reports of one graph, `where` naming it: graph, mode, shim); the first differing
 * decision of the run printed to out. Returns the decisions that differ. */
int64_t cli_differential_add(struct cli_differential *d, const char *where, const struct rules_report *theirs,
                             const struct rules_report *ours, FILE *out);
/* Print the totals and the count per rule, every line starting "differential:". */
void cli_differential_print(const struct cli_differential *d, const char *ours, FILE *out);
void cli_differential_free(struct cli_differential *d);

/* ── A token sequence through the evaluator (cli/tokens.c) ─────────────────────────────────────────────── */

/* Logits of every position of a run: n rows of vocab values, row i the logits after token i. */
struct cli_logits {
    int64_t vocab;
    int32_t n;
    float *v;
};
/* Parse "1,2,3" (decimal ids in 0..INT32_MAX, at most MODELS_MAX_ROWS) into a malloc'd array. 0, or 1 when s is not
 * such a list. */
int cli_parse_tokens(const char *s, int32_t **out, int32_t *n);
/* n token ids below vocab drawn from seed: the sequence a run takes when none is given. */
void cli_default_tokens(int64_t vocab, int32_t n, uint64_t seed, int32_t *out);
/* Run tokens through g (a model's decode step, or with prefill a chunk of n rows lifted with every_row_logits), its
 * values from seed (a GGUF file's under ir_values_use_gguf), every state tensor zeroed first: decode evaluates a step
 * a token at positions 0..n-1, caches carried; prefill evaluates the chunk once at position 0. q8_activations: the
 * products by q8_0/q4_0 rows as llama.cpp's CPU backend computes them (ir_values_quantize_activations). 0 with out
 * filled (cli_logits_free), or -1 with err (no token/pos/logits tensor, a token outside the vocabulary, an
 * evaluation that failed). */
int cli_eval_tokens(const struct ir_graph *g, uint64_t seed, bool prefill, bool q8_activations,
                    const int32_t *tokens, int32_t n, struct cli_logits *out, char err[IR_ERR_LEN]);
void cli_logits_free(struct cli_logits *l);
/* The ids of the k largest values of row (the first index of equal values first), largest first. */
void cli_logits_top(const float *row, int64_t vocab, int k, int32_t *ids);
/* Write the logits to path whole: little-endian f32, row after row, with a .npy header (shape n × vocab) when path
 * ends in ".npy". 0, or -1 with a message on stderr. */
int cli_logits_write(const char *path, const struct cli_logits *l);

/* The commands, each in its own file. */
int cli_cmd_print(int argc, char **argv);
int cli_cmd_validate(int argc, char **argv);
int cli_cmd_models(int argc, char **argv);
int cli_cmd_lift(int argc, char **argv);
int cli_cmd_eval(int argc, char **argv);
int cli_cmd_rules(int argc, char **argv);
int cli_cmd_shims(int argc, char **argv);
int cli_cmd_optimize(int argc, char **argv);
/* diff of fusecheck's own optimizer or, with --optimizer, any other (cli/cmd_diff.c). */
int cli_cmd_diff(int argc, char **argv);
int cli_cmd_coverage(int argc, char **argv);
int cli_cmd_check(int argc, char **argv);
int cli_cmd_db(int argc, char **argv);
int cli_cmd_fuzz(int argc, char **argv);
int cli_cmd_prove(int argc, char **argv);
int cli_cmd_validate_run(int argc, char **argv);
int cli_cmd_tolerance(int argc, char **argv);
int cli_cmd_launches(int argc, char **argv);
int cli_cmd_golden(int argc, char **argv);
int cli_cmd_dot(int argc, char **argv);
int cli_cmd_report(int argc, char **argv);
int cli_cmd_export(int argc, char **argv);
int cli_cmd_gguf(int argc, char **argv);
int cli_cmd_crosscheck(int argc, char **argv);
int cli_cmd_help(int argc, char **argv);

/* ── The help texts (cli/helpdocs.c) and what is made of them (cli/helpgen.c) ───────────────────────────────── */

/* The commands, in the order help lists them: how many, the i-th (NULL past the end), the one named name (or
 * NULL). */
size_t cli_command_count(void);
const struct cli_command *cli_command_at(size_t i);
const struct cli_command *cli_find_command(const char *name);
/* One option of a command's help and its meaning. */
struct cli_option_text {
    const char *option, *meaning;
};
/* The options `help COMMAND` explains for c — its own, then each shared one its usage names — at most cap into
 * out; returns how many. */
int cli_command_options(const struct cli_command *c, struct cli_option_text *out, int cap);
/* The overview `fusecheck help` prints, and the bugs FUSECHECK_PLANT plants (part of it). */
void cli_overview(FILE *out);
void cli_print_plants(FILE *out);
/* The manual page, roff (man(7)), made from the help texts: `fusecheck help --man`. */
void cli_help_man(FILE *out);
/* A completion script for shell ("bash" or "zsh") made from the help texts: the commands, then each one's options
 * as its usage names them. `fusecheck help --completion SHELL`. */
void cli_help_completion(FILE *out, const char *shell);


struct rules_optimized;
/* An optimization of g under the named shim as Graphviz text (malloc'd into *text): the lifted ops as nodes, each
 * fusing op of the rewritten graph a cluster coloured by its class and labelled with its rule, each refusal a dashed
 * note with the chip's reason. 0, or 1 when out of memory. */
int cli_dot_text(const struct ir_graph *g, const char *shim, const struct rules_optimized *o, char **text,
                 size_t *len);

/* ── llama.cpp (cli/llamacpp.c): a GGUF file run through llama.cpp's C API ───────────────────────────────────── */
/* The other side of the crosscheck. fusecheck links llama.cpp when CMake finds it (FUSECHECK_LLAMACPP, ci/llamacpp);
 * without it these functions still exist: cli_llama_logits then fails saying how to configure it. Runs use settings
 * that make llama.cpp's logits comparable with a plain f32 reference: the CPU backend alone, one thread, f32 K and V
 * caches, no flash attention, no repacked weights, a logit row for every token. One run at a time (not thread-safe). */

/* The logits llama.cpp computed for a run of n tokens. */
struct cli_llama_run {
    int64_t vocab;
    int32_t n;
    float *logits; /* n × vocab, row i = logits after token i */
};
/* Whether fusecheck was built with llama.cpp. */
bool cli_llama_available(void);
/* Which llama.cpp fusecheck runs: "llama.cpp <commit> (ggml <version>, node-llama-cpp 3.21.1)", or
 * "none: built without llama.cpp". */
const char *cli_llama_version(void);
/* Run tokens[0..n-1] through the model in the GGUF file at gguf_path: step_by_step, one decode a token at positions
 * 0..n-1 (the caches carried); else one batch of all n. 0 with *out filled (cli_llama_run_free), or -1 with err
 * naming the file and why: it cannot be read, llama.cpp refused to load or run it (its own error lines), a token
 * outside the vocabulary (refused before any decode), a build without llama.cpp. */
int cli_llama_logits(const char *gguf_path, const int32_t *tokens, int32_t n, bool step_by_step,
                     struct cli_llama_run *out, char err[IR_ERR_LEN]);
/* Like cli_llama_logits of one batch, only the last token asking for its logits (as llama.cpp runs a prompt):
 * *out holds that one row (n 1). */
int cli_llama_last_logits(const char *gguf_path, const int32_t *tokens, int32_t n, struct cli_llama_run *out,
                          char err[IR_ERR_LEN]);
/* Free a run's logits and zero it (a zeroed run may be freed). */
void cli_llama_run_free(struct cli_llama_run *run);

/* ── JSON output (cli/json.c): every --json ──────────────────────────────────────────────────────────────── */

#define CLI_JSON_DEPTH 16
/* A JSON document written to `out` as it goes: members in the order written (deterministic), no whitespace but the
 * newline that ends the document. Keys are given inside objects and NULL inside arrays and at the top. */
struct cli_json {
    FILE *out;
    int depth;
    int members[CLI_JSON_DEPTH]; /* members written so far in each open container */
    char close[CLI_JSON_DEPTH];  /* how each open container closes */
};
void cli_json_start(struct cli_json *j, FILE *out);
/* Open an object or an array (as member `key`); cli_json_end closes the innermost one. */
void cli_json_object(struct cli_json *j, const char *key);
void cli_json_array(struct cli_json *j, const char *key);
void cli_json_end(struct cli_json *j);
/* One member: a string (NULL: null), an integer, a number (a non-finite one: null), a boolean, null. */
void cli_json_string(struct cli_json *j, const char *key, const char *v);
void cli_json_int(struct cli_json *j, const char *key, long long v);
void cli_json_number(struct cli_json *j, const char *key, double v);
void cli_json_bool(struct cli_json *j, const char *key, bool v);
void cli_json_null(struct cli_json *j, const char *key);
/* s as a JSON string, quotes included: '"', '\\' and control characters escaped, bytes that are not UTF-8 written
 * as U+FFFD. */
void cli_json_escape(FILE *out, const char *s);

#endif
