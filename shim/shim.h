/* shim/shim.h — what a chip runs whole, and why not: the interface the shared optimizer asks, and the shims
 * fusecheck ships, looked up by name from a table.
 *
 * A shim answers four questions: does the chip link a class (native, decompose into its parts, or refuse with a
 * reason); does a candidate op fit the chip's kernels (or why not); does a consumer read an operand quantized (and in
 * which format); which rules of its own does the chip link, and where in the shared table. It also states its
 * numerics contract. The interface knows only ir; a chip's own rules reach the rewriter through an opaque pointer. */
#ifndef FUSECHECK_SHIM_H
#define FUSECHECK_SHIM_H

#include "ir/ir.h"

/* How a chip links a class. */
enum shim_support_kind { SHIM_NATIVE, SHIM_DECOMPOSE, SHIM_REFUSE };
struct shim_support {
    enum shim_support_kind kind;
    const char *why; /* SHIM_REFUSE: the chip's reason (static text) */
};

/* Where a chip's own rule runs: before or after a named shared rule, or at the end of the table. */
enum shim_position { SHIM_BEFORE, SHIM_AFTER, SHIM_END };

struct rules_rewriter; /* the rewriter a chip rule runs on (rules/rules.h) */
struct shim;

/* A chip's own rule: its name, the classes it builds, where it runs, and what it does. */
struct shim_chip_rule {
    const char *name;
    const enum ir_class *builds;
    int nbuilds;
    enum shim_position position;
    const char *anchor; /* the shared rule it runs before or after (NULL at the end) */
    void (*apply)(struct rules_rewriter *r, const struct shim *s);
    const void *rule;   /* a `const struct rules_rule` describing it (name, builds, guard atoms, motion, what; its
                         * apply may be NULL): the optimizer sets it as the running rule, so the rule's guards are
                         * data the oracle reads like the shared rules' (void: this header does not know rules.h) */
};

/* How values are kept in memory under a contract. */
enum shim_keep { SHIM_KEEP_F32, SHIM_KEEP_F16, SHIM_KEEP_BF16 };

/* A chip's numerics contract: how its activations, caches and state are held, and the bound fused results keep. */
struct shim_contract {
    char point[192];        /* one line describing the operating point */
    int activation_words;   /* 0: products read dequantized activations; 1 or 2 int8 words a value, blocks of 32 */
    enum shim_keep cache;   /* KV caches */
    enum shim_keep state;   /* recurrent state */
    char attention[160];    /* how attention takes its operands, in words */
    double fused_bound;     /* 0: a fused op is exact against its parts */
    int accumulator_bits;   /* integer accumulators' width */
};

/* A shim: a name, its answers, its chip rules, its contract, and the state its answers read. */
struct shim {
    char name[128];
    /* How the chip links class c. */
    struct shim_support (*supports)(const struct shim *s, enum ir_class c);
    /* 0 when op fits the chip's kernels, else 1 with the reason written to why (IR_ERR_LEN bytes). */
    int (*fits)(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why);
    /* The int8 words (1 or 2) in which `consumer` reads its operand at `operand`, or 0 when it reads it as is. */
    int (*activation)(const struct shim *s, const struct ir_op *consumer, int operand, const struct ir_graph *g);
    /* The chip's contract, or 0 when it states none. */
    int (*numerics)(const struct shim *s, struct shim_contract *out);
    const struct shim_chip_rule *rules;
    int nrules;
    /* What the chip's hold knob can hold back (its own rules, a kernel fact), NULL-free, and whether it holds one
     * (NULL when it has no such knob). A compile holds a step the chip holds as it holds one named by the caller:
     * `hold=gemv_parts` and `--hold gemv_parts` mean the same (one list, where the seed keeps two: docs/findings.md,
     * F26). */
    const char *const *holdable;
    int nholdable;
    bool (*holds)(const struct shim *s, const char *name);
    /* Hold back one of `holdable` (its canonical name gains it); false when the chip cannot hold `name`. */
    bool (*hold)(struct shim *s, const char *name);
    /* The stable code of a reason this shim gave — a refused class's `why` (supports true) or what `fits` wrote —
     * static text such as "lane.merged_qkv.in_parts", or NULL when the text is none of its own (the member itself
     * NULL: the shim gives no codes). */
    const char *(*reason_code)(const struct shim *s, const char *why, bool supports);
    void *self; /* a shim's own state (knobs); freed by free_self */
    void (*free_self)(void *self);
};

/* The shim named `name` ("reference", "none", or a parameterised name a table row accepts), or NULL with err. */
struct shim *shim_lookup(const char *name, char err[IR_ERR_LEN]);
/* Free a shim from shim_lookup. */
void shim_free(struct shim *s);
/* The names (or name patterns) of the shims fusecheck ships, one line each with what it is, into a callback. */
void shim_list(void (*line)(const char *name, const char *what, void *ctx), void *ctx);

/* The int8 words a value the shim's products read their activations in (its contract's activation_words; 0: none,
 * or no contract). */
int shim_activation_words(const struct shim *s);

/* The `reference` shim (every class native, no limits) and the `none` shim (every class decomposed). */
struct shim *shim_reference(void);
struct shim *shim_none(void);

/* ── The quantized reference (shim/quantized.c) ──────────────────────────────────────────────────────────── */

/* The lifted graph g with, before every op, a quantize of each operand the shim's `activation` says that op reads
 * quantized (in that many words), the op reading it: what a quantizing chip's rewritten graph must compute, built
 * without the optimizer. g itself (a copy) when the shim quantizes nothing. NULL with err when g is not lifted or an
 * answer cannot be built. */
struct ir_graph *shim_quantized_reference(const struct ir_graph *g, const struct shim *shim, char err[IR_ERR_LEN]);

/* Where a quantized value leaves its mode's bound: the quantized tensor, the index, the unquantized value it reads,
 * the value it holds, the bound. */
struct shim_quant_excess {
    ir_tid tensor;
    int64_t index;
    double source, quantized, bound;
};
/* Evaluate g over v (ir_eval's meaning) and, for a chip whose products read `words` int8 words a value (0: none),
 * hold every value each quantize op (top level or inside a fused op) makes to the mode's bound of the values it read
 * when it ran (1: a/254, 2: a/254², a the block's largest magnitude; plus the f32 roundings, docs/numerics.md).
 * *within false with the first excess in *excess when one is out of bound; the values compared to *compared (may be
 * NULL). 0, or -1 with err when the evaluation failed. */
int shim_quantized_eval(const struct ir_graph *g, struct ir_values *v, int words, bool *within,
                        struct shim_quant_excess *excess, int64_t *compared, char err[IR_ERR_LEN]);

/* ── The CUDA lane (shim/lane.c) ─────────────────────────────────────────────────────────────────────────── */

/* The CUDA lane under the knobs its name spells: "cuda-lane:<chip>:<activations>[:<knob>...]", knobs
 * cache=f32|f16, state=f32|bf16, fuse_quant=on|off, batch[=on|off], hold=<lane rule>[+<lane rule>...] (see
 * shim_lane_what). Its name is canonical: the same knobs give the same name. NULL with err on a bad name. */
struct shim *shim_lane(const char *name, char err[IR_ERR_LEN]);
/* What the lane's row of the shim table says: its name's grammar, its chips, activation modes and knobs. */
extern const char shim_lane_what[];

/* One reason a shim can give for a refusal: its stable code, its text (with `prefix`, the text's fixed start: the rest
 * carries numbers), and whether it is a refused class's reason (`supports`) or a candidate's that does not fit. */
struct shim_reason {
    const char *code;
    const char *text;
    bool supports;
    bool prefix;
};
/* Every reason the lane can give, once each; *n receives their count. */
const struct shim_reason *shim_lane_reasons(int *n);

#endif
