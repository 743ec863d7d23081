/* ir/ir.h — fusecheck's graph: tensors, ops, op specs, fused-op classes, the text format, validation, facts over
 * the slots of a graph being rewritten, the GGML block formats and the evaluator.
 *
 * A graph is a list of tensors and a list of ops in program order. Ops name tensors by index (ir_tid) into the
 * graph's tensor list; names are interned once. Every table here (element types, roles, block formats, op kinds,
 * classes) is an X-macro: adding a row is one line.
 *
 * Errors are values: functions that can fail return 0 on success, non-zero on failure, and write a message into a
 * caller's buffer of IR_ERR_LEN bytes. */
#ifndef FUSECHECK_IR_H
#define FUSECHECK_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define IR_ERR_LEN 512

/* Hard limits that keep any input's memory bounded (the parser and validator enforce them). */
#define IR_MAX_DIM ((int64_t)1 << 40)        /* a tensor's rows or cols, and any spec size */
#define IR_MAX_ELEMS ((int64_t)1 << 42)      /* rows x cols */
#define IR_MAX_NAME 256                      /* bytes in a name */
#define IR_MAX_DEPTH 32                      /* nesting of fused blocks */
#define IR_MAX_OPERANDS 4096                 /* inputs or keeps of one op */
#define IR_MAX_COVERS ((int32_t)1 << 22)     /* covers of one op: a chunk's fold covers lifted ops of every row */

typedef int32_t ir_tid; /* a tensor's index in its graph; IR_NONE when absent */
#define IR_NONE ((ir_tid)-1)

/* ── Tables ──────────────────────────────────────────────────────────────────────────────────────────────── */

/* Element types: enum suffix, text name, bytes an element. */
#define IR_ELEMS(X) \
    X(F32, "f32", 4) \
    X(F16, "f16", 2) \
    X(BF16, "bf16", 2) \
    X(I32, "i32", 4)

enum ir_elem {
#define X(e, s, b) IR_ELEM_##e,
    IR_ELEMS(X)
#undef X
    IR_ELEM_COUNT
};

/* Roles: who defines a tensor. input/param are set by the host each step, constant is a model weight, activation is
 * computed by exactly one op, state is kept across steps and may be written in place. */
#define IR_ROLES(X) \
    X(INPUT, "input") \
    X(PARAM, "param") \
    X(CONSTANT, "constant") \
    X(ACTIVATION, "activation") \
    X(STATE, "state")

enum ir_role {
#define X(e, s) IR_ROLE_##e,
    IR_ROLES(X)
#undef X
    IR_ROLE_COUNT
};

/* GGML block formats a constant's checkpoint rows are stored in: enum suffix, text name, values a block, bytes a
 * block. */
#define IR_FORMATS(X) \
    X(F32, "f32", 1, 4) \
    X(F16, "f16", 1, 2) \
    X(BF16, "bf16", 1, 2) \
    X(Q8_0, "q8_0", 32, 34) \
    X(Q4_0, "q4_0", 32, 18) \
    X(Q4_K, "q4_k", 256, 144) \
    X(Q6_K, "q6_k", 256, 210)

enum ir_format {
#define X(e, s, n, b) IR_FMT_##e,
    IR_FORMATS(X)
#undef X
    IR_FMT_COUNT
};

/* Elementwise operators. */
#define IR_EWOPS(X) X(ADD, "add") X(SUB, "sub") X(MUL, "mul") X(DIV, "div")
enum ir_ewop {
#define X(e, s) IR_EW_##e,
    IR_EWOPS(X)
#undef X
    IR_EW_COUNT
};

/* A mixture's expert activation: silu(g)·u, gelu(g)·u, or the clamped SwiGLU (g clamped above at `limit`, u to
 * ±limit: g·σ(alpha·g)·(u + 1)). */
#define IR_MOEACTS(X) X(SWIGLU, "swiglu") X(GEGLU, "geglu") X(CLAMPED_SWIGLU, "clamped_swiglu")
enum ir_moeact {
#define X(e, s) IR_MOE_##e,
    IR_MOEACTS(X)
#undef X
    IR_MOE_COUNT
};

/* A gated delta rule's output gate activation. */
#define IR_GATEACTS(X) X(SILU, "silu") X(SIGMOID, "sigmoid")
enum ir_gateact {
#define X(e, s) IR_GATE_##e,
    IR_GATEACTS(X)
#undef X
    IR_GATE_COUNT
};

/* A norm's reduction: the root mean square of the row (RMSNorm), or the mean-centred standard deviation (LayerNorm:
 * the row's mean subtracted first). The first row is the default the text format leaves unwritten. */
#define IR_NORMKINDS(X) X(RMS, "rms") X(LAYER, "layer")
enum ir_normkind {
#define X(e, s) IR_NORM_##e,
    IR_NORMKINDS(X)
#undef X
    IR_NORM_COUNT
};

/* The rotary base a rope op's tables are filled with when its theta is absent. */
#define IR_ROPE_THETA_DEFAULT 10000.0

/* A rotary scaling of the rope tables' frequencies (struct ir_rope_scaling); the first row, none, is the default. */
#define IR_ROPESCALES(X) X(NONE, "none") X(LINEAR, "linear") X(LLAMA3, "llama3") X(YARN, "yarn")
enum ir_ropescale {
#define X(e, s) IR_ROPESCALE_##e,
    IR_ROPESCALES(X)
#undef X
    IR_ROPESCALE_COUNT
};
/* YaRN's rotation counts when a rope leaves them out (Transformers' and llama.cpp's defaults). */
#define IR_YARN_BETA_FAST_DEFAULT 32.0
#define IR_YARN_BETA_SLOW_DEFAULT 1.0

/* A row index: absent, a literal 1-based row, or the value of a named i32 tensor (an operand of the op, at the
 * position its spec documents). */
enum ir_rowidx_kind { IR_RIDX_NONE, IR_RIDX_LITERAL, IR_RIDX_NAMED };
struct ir_rowidx {
    enum ir_rowidx_kind kind;
    int64_t literal; /* 1-based, when kind == IR_RIDX_LITERAL */
};

/* An optional float: has says whether it is present. */
struct ir_optf {
    bool has;
    double v;
};

/* Primitive op kinds: enum suffix, text name, the spec struct's member name. Each spec's fields are described by
 * a field table (ir_spec_fields) that the text format, the validator and the CLI read. The operand order each kind
 * takes is documented beside its struct and in docs/format.md. */
#define IR_KINDS(X) \
    X(MATMUL, "matmul", matmul) \
    X(ELEMENTWISE, "elementwise", elementwise) \
    X(RMS_NORM, "rms_norm", rms_norm) \
    X(ROPE, "rope", rope) \
    X(HEAD_SLICE, "head_slice", head_slice) \
    X(ROW_GATHER, "row_gather", row_gather) \
    X(ROWS_GATHER, "rows_gather", rows_gather) \
    X(SET_ROW, "set_row", set_row) \
    X(ATTENTION, "attention", attention) \
    X(MOE, "moe", moe) \
    X(GATED_DELTA, "gated_delta", gated_delta) \
    X(CAUSAL_CONV, "causal_conv", causal_conv) \
    X(SILU, "silu", unary) \
    X(SIGMOID, "sigmoid", unary) \
    X(GELU, "gelu", unary) \
    X(RELU, "relu", unary) \
    X(SCALE, "scale", scale) \
    X(SWIGLU, "swiglu", swiglu) \
    X(HEAD_MATMUL, "head_matmul", head_matmul) \
    X(JOIN, "join", join) \
    X(L2_NORM, "l2_norm", l2_norm) \
    X(ARGMAX, "argmax", argmax) \
    X(DECAY, "decay", decay) \
    X(SOFTCAP, "softcap", softcap)

enum ir_kind {
#define X(e, s, m) IR_KIND_##e,
    IR_KINDS(X)
#undef X
    IR_KIND_COUNT
};

/* The fused-op classes a chip may run whole: enum suffix and snake_case name. Every class the CUDA lane's
 * `supports` answers for is a row. */
#define IR_CLASSES(X) \
    X(NORM_WEIGHT, "norm_weight") \
    X(ADD_NORM, "add_norm") \
    X(NORM_THEN_ADD, "norm_then_add") \
    X(GATED_NORM, "gated_norm") \
    X(EMBED_SCALE, "embed_scale") \
    X(QK_NORM_ROPE, "qk_norm_rope") \
    X(QK_NORM_ROPE_KV_APPEND, "qk_norm_rope_kv_append") \
    X(ROPE_KV_APPEND, "rope_kv_append") \
    X(ROPE_QK_ONE_LAUNCH, "rope_qk_one_launch") \
    X(MLA, "mla") \
    X(FLASH_DECODE, "flash_decode") \
    X(FLASH_PREFILL, "flash_prefill") \
    X(ATTENTION_VARIANTS_INLINE, "attention_variants_inline") \
    X(ATTN_LSE_MERGE, "attn_lse_merge") \
    X(GLU_ACT_MUL, "glu_act_mul") \
    X(GEMV_GATE_UP_GLU, "gemv_gate_up_glu") \
    X(GEMM_BIAS, "gemm_bias") \
    X(MERGED_QKV, "merged_qkv") \
    X(MERGED_GATE_UP, "merged_gate_up") \
    X(GEMM_DEQUANT_INKERNEL, "gemm_dequant_inkernel") \
    X(ROUTER_TOPK, "router_topk") \
    X(MOE_TOKEN_SORT, "moe_token_sort") \
    X(MOE_GATE_UP_ACT, "moe_gate_up_act") \
    X(MOE_DOWN_COMBINE, "moe_down_combine") \
    X(SHARED_EXPERT_FUSION, "shared_expert_fusion") \
    X(GDN_STEP, "gdn_step") \
    X(CONV_BIAS_SILU, "conv_bias_silu") \
    X(CONV_PARTS, "conv_parts") \
    X(CONV_SILU_L2NORM, "conv_silu_l2norm") \
    X(GDN_GATE_PROJECTIONS, "gdn_gate_projections") \
    X(GDN_GATING, "gdn_gating") \
    X(FUSED_SAMPLING, "fused_sampling") \
    X(STRIDED_READ, "strided_read") \
    X(ROW_WRITE, "row_write") \
    X(JOIN_IN_PLACE, "join_in_place") \
    X(STRIDED_VALUES, "strided_values") \
    X(CUDA_GRAPHS, "cuda_graphs") \
    X(NORM_QUANT, "norm_quant") \
    X(ADD_NORM_QUANT, "add_norm_quant") \
    X(GLU_ACT_MUL_QUANT, "glu_act_mul_quant") \
    X(ELEMENTWISE_QUANT, "elementwise_quant") \
    X(GDN_OUTPUT_QUANT, "gdn_output_quant") \
    X(GEMV_QUANT, "gemv_quant") \
    X(GEMV_NORM_EPILOGUE, "gemv_norm_epilogue") \
    X(EMBED_NORM, "embed_norm") \
    X(NORM_SCALE, "norm_scale") \
    X(NORM_WEIGHT_OFFSET, "norm_weight_offset") \
    X(DUAL_NORM, "dual_norm") \
    X(PREFILL_NORM_EPILOGUES, "prefill_norm_epilogues") \
    X(ATTN_RESIDUAL_NORM, "attn_residual_norm") \
    X(QKV_HEAD_EPILOGUE, "qkv_head_epilogue") \
    X(RECOMPUTE_FANOUT, "recompute_fanout") \
    X(QK_NORM_ROPE_GATE_SPLIT, "qk_norm_rope_gate_split") \
    X(HORIZONTAL_NORM_ROPE_INSERT, "horizontal_norm_rope_insert") \
    X(CROSS_LAYER_LAUNCH, "cross_layer_launch") \
    X(ATTN_OUTPUT_QUANT, "attn_output_quant") \
    X(ATTN_OUTPUT_GATE, "attn_output_gate") \
    X(ROW_WRITE_QUANT, "row_write_quant") \
    X(MLA_PROLOGUE, "mla_prologue") \
    X(MLA_UNABSORB_IN_FOLD, "mla_unabsorb_in_fold") \
    X(ELEMENTWISE_CHAINS, "elementwise_chains") \
    X(ELEMENTWISE_REGIONS, "elementwise_regions") \
    X(MASKED_EXPERT_ACTIVATION, "masked_expert_activation") \
    X(GEMM_SCALE, "gemm_scale") \
    X(AFFINE_INPUT_FOLD, "affine_input_fold") \
    X(ROUTER_SHARED_GATE_MERGE, "router_shared_gate_merge") \
    X(MOE_GATHER_IN_OPERAND, "moe_gather_in_operand") \
    X(MOE_DEFERRED_FINALIZE, "moe_deferred_finalize") \
    X(GDN_INPUT_EPILOGUE, "gdn_input_epilogue") \
    X(GDN_DECODE_WHOLE, "gdn_decode_whole") \
    X(GDN_POST_CONV_PREP, "gdn_post_conv_prep") \
    X(LAST_LAYER_ROWS, "last_layer_rows") \
    X(RELU_SQR, "relu_sqr") \
    X(SOFTCAP, "softcap") \
    X(MIXED_BATCH_ATTENTION, "mixed_batch_attention") \
    X(SPARSE_ATTENTION, "sparse_attention") \
    X(GROUPED_TOPK, "grouped_topk") \
    X(SAMPLING, "sampling") \
    X(KV_CACHE_QUANT, "kv_cache_quant") \
    X(HADAMARD_ROTATION, "hadamard_rotation") \
    X(COMPENSATED_RESIDUAL, "compensated_residual") \
    X(HOST_RESIDENT_KV, "host_resident_kv") \
    X(ATTN_GQA_ROW_PACKING, "attn_gqa_row_packing") \
    X(MOE_DIRECT_PAIRS, "moe_direct_pairs") \
    X(PERSISTENT_LAYER_MEGAKERNEL, "persistent_layer_megakernel") \
    X(ALLREDUCE_NORM, "allreduce_norm")

enum ir_class {
#define X(e, s) IR_CLASS_##e,
    IR_CLASSES(X)
#undef X
    IR_CLASS_COUNT
};

/* The kernel contract of a fused class: what its kernel writes of the inner results its own fold computes (not
 * those a fused part already keeps, which that part's class answers for), by whom they are needed — a later op
 * reading them, the host reading them after the step, the host keeping them across steps. A fused op may keep an
 * inner result only for needs its class's kernel serves. READ_AFTER: for ops after the fold's last stage only (the
 * kernel stores the value from that stage); READ_NAMED: for the readers the building rule names only (the op the
 * fold feeds: its guards keep every other reader away) — the oracle holds it to them; the concrete check, which
 * cannot tell them, counts both as READ. */
enum ir_writes {
    IR_WRITES_READ = 1 << 0,
    IR_WRITES_READ_AFTER = 1 << 1,
    IR_WRITES_READ_NAMED = 1 << 2,
    IR_WRITES_OBSERVED = 1 << 3,
    IR_WRITES_CARRIED = 1 << 4,
    IR_WRITES_ALL = IR_WRITES_READ | IR_WRITES_READ_AFTER | IR_WRITES_READ_NAMED | IR_WRITES_OBSERVED |
                    IR_WRITES_CARRIED,
};
/* What the kernel of class c writes of its inner results (enum ir_writes bits; IR_WRITES_ALL for a class the
 * table does not restrict). */
unsigned ir_class_writes(enum ir_class c);

/* Names of table rows, and lookups by name (-1 when unknown). */
const char *ir_elem_name(enum ir_elem e);
int ir_elem_lookup(const char *s, size_t n);
int ir_elem_bytes(enum ir_elem e);
const char *ir_role_name(enum ir_role r);
int ir_role_lookup(const char *s, size_t n);
const char *ir_format_name(enum ir_format f);
int ir_format_lookup(const char *s, size_t n);
int ir_format_block_values(enum ir_format f);
int ir_format_block_bytes(enum ir_format f);
const char *ir_ewop_name(enum ir_ewop o);
int ir_ewop_lookup(const char *s, size_t n);
const char *ir_moeact_name(enum ir_moeact a);
int ir_moeact_lookup(const char *s, size_t n);
const char *ir_gateact_name(enum ir_gateact a);
int ir_gateact_lookup(const char *s, size_t n);
const char *ir_normkind_name(enum ir_normkind k);
int ir_normkind_lookup(const char *s, size_t n);
const char *ir_ropescale_name(enum ir_ropescale k);
int ir_ropescale_lookup(const char *s, size_t n);
const char *ir_kind_name(enum ir_kind k);
int ir_kind_lookup(const char *s, size_t n);
const char *ir_class_name(enum ir_class c);
int ir_class_lookup(const char *s, size_t n);

/* ── Primitive specs ─────────────────────────────────────────────────────────────────────────────────────── */
/* Operand order of each kind ("ins"), and its result's shape ("out"). Sizes count f32 values. */

/* y[m×n] = x[m×k] · W[k×n]. ins: x, W (a constant: W's tensor is k rows × n cols). */
struct ir_matmul { int64_t m, k, n; };
/* y = a (op) b over n values; with row > 0, b is one row of `row` values broadcast over every row of a.
 * ins: a, b. */
struct ir_elementwise { enum ir_ewop op; int64_t n, row; };
/* A row norm over rows × cols of v = x[r] + res[r]: kind rms, v / rms(v); kind layer, (v − mean(v)) / std(v); eps
 * inside the root either way; then · (w + offset) with a weight, + b with a bias.
 * ins: x, [w when weight], [res when residual], [b (cols) when bias]. */
struct ir_rms_norm {
    int64_t rows, cols;
    double eps;
    bool weight;
    double offset;
    bool residual;
    enum ir_normkind kind;
    bool bias;
};
/* How a rope's tables scale the frequency ω_i = theta^(−i/half) of pair i, as Transformers and llama.cpp define it:
 *   linear  ω_i / factor;
 *   llama3  wavelengths 2π/ω_i above orig/low_freq ÷ factor, below orig/high_freq kept, a linear blend between;
 *   yarn    blended from ω_i/factor (pairs past the correction range) to ω_i (pairs before it); the range is where
 *           beta_fast and beta_slow rotations fit in orig positions (floored and ceiled when truncate);
 * and every kind: cos and sin × magnitude (YaRN's attention factor; absent 1). */
struct ir_rope_scaling {
    enum ir_ropescale kind;
    struct ir_optf factor;
    int64_t orig;
    struct ir_optf low_freq, high_freq;
    struct ir_optf beta_fast, beta_slow;
    bool truncate;
    struct ir_optf magnitude;
};
/* Rotate each of h heads (h/rows a row) of width hd: `half` pairs, (i, i+half) (NeoX) or with adjacent (2i, 2i+1)
 * (GPT-J, llama.cpp's NORM type), pair i by cos/sin tables of `half` cols at the row's position (pos: absent = row r
 * at r, literal, or named i32). theta is the rotary base the tables hold, angle pos · ω_i, ω_i = theta^(−i/half)
 * (absent: IR_ROPE_THETA_DEFAULT), scaled as `scaling` says. ins: x, cos, sin, [pos]. */
struct ir_rope {
    int64_t h, hd, half, rows;
    struct ir_rowidx pos;
    struct ir_optf theta;
    bool adjacent;
    struct ir_rope_scaling scaling;
};
/* The rotary base of a rope spec (theta, or the default when absent). */
double ir_rope_theta(const struct ir_rope *r);
/* The angular frequency of pair i (0 ≤ i < half) of a rope's tables, its scaling applied: row p's angle is p · it. */
double ir_rope_frequency(const struct ir_rope *r, int64_t i);
/* The factor a rope's cos and sin tables are multiplied by (its scaling's magnitude, else 1). */
double ir_rope_magnitude(const struct ir_rope *r);
/* Whether two ropes read tables of the same values: the same width, base and scaling. */
bool ir_rope_same_tables(const struct ir_rope *a, const struct ir_rope *b);
/* What is wrong with a rope's scaling fields for its kind (a field it lacks, one it must not have, a value out of
 * range), written to why with the field's name in *field; NULL when they are right. */
const char *ir_rope_scaling_check(const struct ir_rope *r, const char **field, char *why, size_t n);
/* y[g·width + i] = x[g·every + from + i] for g < n/every, i < width. ins: x (n values). */
struct ir_head_slice { int64_t n, every, from, width; };
/* y[1×cols] = table row `index` (literal 1-based, or named i32 0-based). ins: table, [idx]. */
struct ir_row_gather { int64_t rows, cols; struct ir_rowidx index; };
/* y[count×cols] = table rows idx[0..count) (0-based). ins: table, idx (count i32). */
struct ir_rows_gather { int64_t rows, cols, count; };
/* table rows [index, index+count) = src, in place (table is state; out is the table). ins: table, src, [idx]. */
struct ir_set_row { int64_t rows, cols, count; struct ir_rowidx index; };
/* Causal attention of `rows` query rows (h heads of hd) over l cached rows (kv heads of hd keys, of vd values).
 * ins: q, kcache, vcache, [pos when pos is named], [sinks when sinks]. */
struct ir_attention {
    int64_t h, kv, hd, vd, l, rows;
    struct ir_rowidx pos;
    struct ir_optf scale;   /* absent: 1/sqrt(hd) */
    struct ir_optf softcap; /* tanh cap of the logits */
    bool sinks;             /* a per-head logit in the softmax's denominator */
    int64_t window;         /* 0: none; else attend the last `window` positions */
};
/* A mixture of `experts` experts over one row of d: each expert's act(x·gate)⊙(x·up)·down of width dff, the k a
 * router picks weighted and summed; with bias, a bias row added to the router's, each expert's gate, up and down
 * products. The routing (docs/semantics.md): each expert scored by a softmax over every logit (or σ of its logit with
 * sigmoid; or the logit itself with topk_softmax), the score plus a correction row (with correction) choosing; with
 * groups, only the topk_groups best of `groups` equal groups (by their two best choosing scores) compete; the k best
 * chosen; their scores renormalised to sum one (not with no_renorm; with topk_softmax a softmax over the k instead);
 * each weight times scale when present. alpha and limit: the clamped SwiGLU's (present exactly when act is
 * clamped_swiglu). ins: x, router[d×experts], gate[d×(experts·dff)], up, down[dff×(experts·d)], [router_b (experts),
 * gate_b, up_b (experts·dff), down_b (experts·d) when bias], [corr (experts) when correction]. */
struct ir_moe {
    int64_t d, k, dff, experts;
    enum ir_moeact act;
    bool bias;
    bool topk_softmax;
    bool sigmoid;              /* each expert scored σ(logit), not a softmax over every logit */
    bool no_renorm;            /* the k scores weigh as they are (softmax or sigmoid scoring) */
    bool correction;           /* a per-expert row added to the scores for the choice only */
    int64_t groups;            /* 0: none; else the experts in `groups` equal groups ... */
    int64_t topk_groups;       /* ... of which the topk_groups best compete (given exactly with groups) */
    struct ir_optf scale;      /* each weight times it (DeepSeek's routed scaling factor) */
    struct ir_optf alpha, limit;
};
/* Gated delta rule over rows of h heads (dk keys, dv values), memory updated in place, output normed and gated.
 * q and k hold kh key heads (0: h), each read by h/kh consecutive heads.
 * ins: q, k, v, z (output gate), b (write strength), a (forget gate), state, norm weight. */
struct ir_gated_delta { int64_t h, dk, dv, rows; enum ir_gateact gate; double eps; int64_t kh; };
/* y[t][c] = Σ_j w[c][j] · x'[t+j][c] over the ring (taps-1 rows) then x; the ring updated in place.
 * ins: x[rows×chan], w[chan×taps], ring. */
struct ir_causal_conv { int64_t chan, taps, rows; };
/* silu, sigmoid, gelu, relu over n values. ins: x. */
struct ir_unary { int64_t n; };
/* y = factor · x over n values. ins: x. */
struct ir_scale { int64_t n; double factor; };
/* y = silu(g) ⊙ u over total values. ins: g, u. */
struct ir_swiglu { int64_t total; };
/* Per head: y[m × heads·b] from x[m × heads·a] by each head's W_h[a×b]. ins: x, W (heads·a rows × b cols). */
struct ir_head_matmul { int64_t m, heads, a, b; };
/* Each of rows·heads units: wa/heads values of a then wb/heads values of b. ins: a, b. */
struct ir_join { int64_t rows, heads, wa, wb; };
/* y[r] = x[r] / sqrt(Σ x[r]² + eps) (eps inside the root; see docs/semantics.md). ins: x. */
struct ir_l2_norm { int64_t rows, cols; double eps; };
/* y[r] = the first index of the largest value of x[r] (i32). ins: x. */
struct ir_argmax { int64_t rows, cols; };
/* g = -exp(alog) · softplus(a + dt_bias) over n values (n/rows heads a row). ins: a, alog, dt_bias. */
struct ir_decay { int64_t n, rows; };
/* y = cap · tanh(x / cap) over n values. ins: x. */
struct ir_softcap { int64_t n; double cap; };

struct ir_spec {
    enum ir_kind kind;
    union {
        struct ir_matmul matmul;
        struct ir_elementwise elementwise;
        struct ir_rms_norm rms_norm;
        struct ir_rope rope;
        struct ir_head_slice head_slice;
        struct ir_row_gather row_gather;
        struct ir_rows_gather rows_gather;
        struct ir_set_row set_row;
        struct ir_attention attention;
        struct ir_moe moe;
        struct ir_gated_delta gated_delta;
        struct ir_causal_conv causal_conv;
        struct ir_unary unary;
        struct ir_scale scale;
        struct ir_swiglu swiglu;
        struct ir_head_matmul head_matmul;
        struct ir_join join;
        struct ir_l2_norm l2_norm;
        struct ir_argmax argmax;
        struct ir_decay decay;
        struct ir_softcap softcap;
    } u;
};

/* How a spec field is typed, for the table-driven text format and checks. */
enum ir_field_type {
    IR_F_INT,      /* int64_t, required */
    IR_F_INT_OPT,  /* int64_t, 0 = absent (printed only when non-zero) */
    IR_F_FLOAT,    /* double, required */
    IR_F_FLOAT_OPT,/* struct ir_optf */
    IR_F_FLAG,     /* bool, printed as the bare field name when true */
    IR_F_EWOP,     /* enum ir_ewop */
    IR_F_MOEACT,   /* enum ir_moeact */
    IR_F_GATEACT,  /* enum ir_gateact */
    IR_F_NORMKIND, /* enum ir_normkind, optional: the first row (rms) is the default, printed only otherwise */
    IR_F_ROPESCALE,/* enum ir_ropescale, optional: the first row (none) is the default, printed only otherwise */
    IR_F_ROWIDX,   /* struct ir_rowidx, required: literal or `named` */
    IR_F_ROWIDX_OPT/* struct ir_rowidx, may be absent */
};

/* One field of a spec: its text name, its type and where it lies in struct ir_spec. */
struct ir_field {
    const char *name;
    enum ir_field_type type;
    size_t offset; /* offsetof(struct ir_spec, u.<member>.<field>) */
};

/* The fields of a kind's spec, in print order; *count receives their number. */
const struct ir_field *ir_spec_fields(enum ir_kind k, int *count);

/* ── Ops and tensors ─────────────────────────────────────────────────────────────────────────────────────── */

/* A part of every unit of a wider tensor: unit u's values at u·pitch + offset + [0, width). */
struct ir_strided { int64_t pitch, offset, width; };

/* How an op reads one operand: whole, or a part of every unit in place. */
struct ir_access {
    bool strided;
    struct ir_strided s;
};

/* Which row of a table a result lands at: none, a fixed 1-based row, or the row a param tensor names. */
enum ir_rowsel { IR_ROWSEL_NONE, IR_ROWSEL_FIXED, IR_ROWSEL_PARAM };

/* Where an op's result lands: its own buffer (buf == out, no row, no unit), the rows of a table starting at a fixed
 * or a param-named row, `row_cols` values a row, and/or a part of every unit of a wider tensor. */
struct ir_dst {
    ir_tid buf;
    enum ir_rowsel row;
    int64_t row_fixed; /* 1-based, when row == IR_ROWSEL_FIXED */
    ir_tid row_param;  /* when row == IR_ROWSEL_PARAM */
    int64_t row_cols;
    bool has_unit;
    struct ir_strided unit;
};

/* What an op is: a primitive spec, a fused op of a class over parts, a view of a row of a computed table, or an
 * activation quantization. */
enum ir_sym { IR_SYM_PRIM, IR_SYM_FUSED, IR_SYM_VIEW, IR_SYM_QUANT };
#define IR_SYM_NAMES(X) X(PRIM, "prim") X(FUSED, "fused") X(VIEW, "view") X(QUANT, "quantize")

struct ir_op {
    enum ir_sym sym;
    struct ir_spec spec;     /* IR_SYM_PRIM */
    enum ir_class cls;       /* IR_SYM_FUSED */
    struct ir_op *parts;     /* IR_SYM_FUSED: the members in the order they run */
    int32_t nparts;
    int64_t view_offset;     /* IR_SYM_VIEW: y = x[offset, offset + len(y)) */
    int32_t quant_words;     /* IR_SYM_QUANT: 1 or 2 int8 words a value, blocks of 32 */
    int32_t nins;
    ir_tid *ins;
    struct ir_access *access; /* one per input */
    ir_tid out;
    struct ir_dst dst;
    int32_t nkeeps;
    ir_tid *keeps;           /* internal results a fused op keeps written for later readers */
    int32_t ncovers;
    int32_t *covers;         /* the lifted ops (indices into the lifted graph) this op computes, ascending */
    void *block;             /* ir_op_clone's one allocation holding the arrays `packed` names (IR_PACK_*) */
    uint8_t packed;
};

/* The arrays of an op that may live in its block rather than in allocations of their own. */
enum { IR_PACK_INS = 1, IR_PACK_ACCESS = 2, IR_PACK_KEEPS = 4, IR_PACK_COVERS = 8 };

struct ir_tensor {
    char *name;               /* kept in the graph's name blocks: never freed or grown on its own */
    enum ir_elem elem;
    int64_t rows, cols;
    enum ir_role role;
    bool checkpoint;          /* constant stored as checkpoint rows in `format` (else plain f32 values) */
    enum ir_format format;
    bool transposed;          /* checkpoint rows are the cols (outputs): stored cols rows of `rows` values */
    bool observed;            /* the host reads it after the step */
    bool carried;             /* the host keeps it across steps (caches, rings, recurrent memory) */
    bool next;                /* the next token an arg-max picks: the step moves on from it */
    bool tied;                /* a tied LM head: its stored rows are IR_TIED_TO's (the embedding table's) */
};
/* The constant a `tied` tensor's stored rows are: the embedding table a tied LM head shares. */
#define IR_TIED_TO "token_embd.weight"

struct ir_graph {
    char *name;               /* model or test name; may be NULL */
    char *family;             /* may be NULL */
    char *mode;               /* may be NULL */
    struct ir_tensor *tensors;
    int32_t ntensors, tensors_cap;
    struct ir_op *ops;
    int32_t nops, ops_cap;
    struct ir_name_index *index; /* name → tensor id */
};

/* ── Construction ────────────────────────────────────────────────────────────────────────────────────────── */

/* A new empty graph (NULL on allocation failure). */
struct ir_graph *ir_graph_new(void);
/* Free a graph and everything it owns. */
void ir_graph_free(struct ir_graph *g);
/* A deep copy of g. */
struct ir_graph *ir_graph_clone(const struct ir_graph *g);
/* A copy of g's tensors and meta, without ops (the working graph a rewrite adds tensors to). */
struct ir_graph *ir_graph_clone_tensors(const struct ir_graph *g);
/* Set the graph's name, family or mode (copied; NULL clears). */
void ir_graph_set_meta(struct ir_graph *g, const char *name, const char *family, const char *mode);
/* Add a tensor; its id, or IR_NONE if the name is taken. The name is copied. */
ir_tid ir_tensor_add(struct ir_graph *g, const char *name, enum ir_elem elem, int64_t rows, int64_t cols,
                     enum ir_role role);
/* The id of the tensor named `name` (n bytes), or IR_NONE. */
ir_tid ir_tensor_find(const struct ir_graph *g, const char *name, size_t n);
/* Number of values in tensor t (rows × cols). */
int64_t ir_tensor_len(const struct ir_graph *g, ir_tid t);

/* A primitive op with `nins` inputs (each read whole), its result `out` landing in its own buffer, covering
 * nothing; the caller fills spec fields through op->spec. */
struct ir_op ir_op_prim(enum ir_kind kind, const ir_tid *ins, int32_t nins, ir_tid out);
/* A fused op of `cls` taking ownership of `parts` (an array of nparts ops), with inputs and accesses copied. */
struct ir_op ir_op_fused(enum ir_class cls, struct ir_op *parts, int32_t nparts, const ir_tid *ins,
                         const struct ir_access *access, int32_t nins, ir_tid out, struct ir_dst dst);
/* Append op to g (taking ownership); when it covers nothing it is given covers = {its index}. Returns its index. */
int32_t ir_graph_push(struct ir_graph *g, struct ir_op op);
/* Whether op computes t: as its result or as any part's (a kept inner result is computed inside the op too). */
bool ir_op_computes(const struct ir_op *op, ir_tid t);
/* Whether two accesses read the same values the same way (both whole, or one strided window). */
bool ir_access_same(const struct ir_access *a, const struct ir_access *b);
/* Whether op names t among its operands. */
bool ir_op_has_operand(const struct ir_op *op, ir_tid t);
/* A deep copy of op. */
struct ir_op ir_op_clone(const struct ir_op *op);
/* Free what op owns (not op itself). */
void ir_op_free(struct ir_op *op);
/* The destination that is `out`'s own buffer. */
struct ir_dst ir_dst_own(ir_tid out);
/* Whether a destination is the result's own buffer (no row, no unit). */
bool ir_dst_is_own(const struct ir_dst *d);
/* Whether two ops are equal in every field, parts included. */
bool ir_op_equal(const struct ir_op *a, const struct ir_op *b);
/* Whether two primitive specs are the same kind with every field of its table equal. */
bool ir_spec_equal(const struct ir_spec *a, const struct ir_spec *b);
/* Whether two graphs are the same program: equal tensors (in order, every field the text format carries) and equal
 * ops (the graphs' own name, family and mode aside). Such graphs evaluate alike from the same seed. */
bool ir_graph_same_program(const struct ir_graph *a, const struct ir_graph *b);

/* Replace op's inputs by a copy of ins/access (access NULL = every input whole). */
void ir_op_set_ins(struct ir_op *op, const ir_tid *ins, const struct ir_access *access, int32_t nins);
/* Add input t (read whole) after op's inputs. */
void ir_op_append_in(struct ir_op *op, ir_tid t);
/* Replace op's keeps or covers by a copy. */
void ir_op_set_keeps(struct ir_op *op, const ir_tid *keeps, int32_t n);
void ir_op_set_covers(struct ir_op *op, const int32_t *covers, int32_t n);

/* The input positions of a primitive op whose tensor it writes in place (set_row's table, causal_conv's ring,
 * gated_delta's state); returns their count, written to idx (room for 4). */
int ir_op_state_inputs(const struct ir_op *op, int idx[4]);
/* The op's leaves: itself when not fused, else every part's leaves in order. Calls fn for each. */
void ir_op_leaves(const struct ir_op *op, void (*fn)(const struct ir_op *leaf, void *ctx), void *ctx);
/* The op's result length in values for a primitive spec (what its spec says it computes), or -1. */
int64_t ir_spec_out_len(const struct ir_spec *s);

/* ── Growing text (ir/text.c) ────────────────────────────────────────────────────────────────────────────── */

/* A string that grows as text is printed into it; s is NUL-terminated once anything was added. */
struct ir_text {
    char *s;
    size_t n, cap;
};

/* Append printf-style text to t (aborts when memory is exhausted). */
void ir_text_add(struct ir_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append n raw bytes (any bytes, NULs included: n counts them). */
void ir_text_put(struct ir_text *t, const void *bytes, size_t n);
/* The text, never NULL (an empty string when nothing was added), handed to the caller to free; t is left empty. */
char *ir_text_take(struct ir_text *t);

/* ── Text format (ir/format.c) ───────────────────────────────────────────────────────────────────────────── */

/* Parse `len` bytes of text into a new graph (validated). On error returns NULL and writes
 * "file:line:col: message" to err. `file` names the source in messages. */
struct ir_graph *ir_parse(const char *text, size_t len, const char *file, char err[IR_ERR_LEN]);
/* Parse without validating (the fuzzer and format tests use it). */
struct ir_graph *ir_parse_unchecked(const char *text, size_t len, const char *file, char err[IR_ERR_LEN]);
/* The whole of a file ("-": standard input), malloc'd and NUL-terminated, its length in *len; NULL (errno says why,
 * *len 0) when it cannot be opened or read. */
char *ir_read_file(const char *path, size_t *len);
/* Read and parse a file (validated; "-": standard input, called stdin in messages); an empty graph (ir_graph_empty)
 * refused as ir_refuse_empty says. */
struct ir_graph *ir_parse_file(const char *path, char err[IR_ERR_LEN]);
/* ir_parse_file, an empty graph read as any other when allow_empty. */
struct ir_graph *ir_parse_file_opt(const char *path, bool allow_empty, char err[IR_ERR_LEN]);
/* Whether g declares no tensor and no op (a file of blanks and comments, or a graph line alone). */
bool ir_graph_empty(const struct ir_graph *g);
/* 0 when g is not empty; else -1 with "file:1:1: empty graph: no tensor and no op" in err: what the readers of graph
 * files refuse unless asked (`--allow-empty`). */
int ir_refuse_empty(const struct ir_graph *g, const char *file, char err[IR_ERR_LEN]);
/* The canonical text of g, malloc'd and NUL-terminated (NULL on allocation failure); *len receives its length. */
char *ir_print(const struct ir_graph *g, size_t *len);
/* The canonical text of one op (and its parts), malloc'd, for reports and messages (see docs/format.md). */
char *ir_print_op(const struct ir_graph *g, const struct ir_op *op);

/* ── Validation (ir/validate.c) ──────────────────────────────────────────────────────────────────────────── */

/* Check every invariant of DESIGN.md (defined before read, one writer for a non-state tensor, only state written in
 * place, shapes agree with specs, sizes fit). 0 when valid, else writes "op N (<kind>): field: message". */
int ir_validate(const struct ir_graph *g, char err[IR_ERR_LEN]);
/* Like ir_validate, also saying what offends: *op is the top-level op's index and *tensor the tensor's id, each -1
 * when not that (the parser maps them back to their lines). */
int ir_validate_where(const struct ir_graph *g, int32_t *op, ir_tid *tensor, char err[IR_ERR_LEN]);

/* ── Facts over slots (ir/facts.c) ───────────────────────────────────────────────────────────────────────── */

/* The slots of a graph being rewritten: ops in program order, some taken (empty). Indexed so producer, maker and
 * readers answer without scanning all slots, and stay right as slots are taken and put. */
struct ir_slots;

/* Slots over `n` ops (ownership of the array and the ops moves in). g supplies the tensors (flags, roles). */
struct ir_slots *ir_slots_new(const struct ir_graph *g, struct ir_op *ops, int32_t n);
void ir_slots_free(struct ir_slots *s);
/* A deep copy of the ops and their index (not of a journal: the copy records nothing). */
struct ir_slots *ir_slots_clone(const struct ir_slots *s);
/* Start recording every change (take, put, replace) so that ir_slots_rollback can undo them: a dry run changes the
 * working slots in place and undoes its changes, paying for the slots it touched rather than a whole copy. */
void ir_slots_journal(struct ir_slots *s);
/* Undo every change since ir_slots_journal, newest first (the slots and their index are as they were), and stop
 * recording. */
void ir_slots_rollback(struct ir_slots *s);
/* The graph whose ops the slots hold (its tensors). */
const struct ir_graph *ir_slots_graph(const struct ir_slots *s);
/* Number of slots (live or taken). */
int32_t ir_slots_len(const struct ir_slots *s);
/* The op at slot i, or NULL when taken or out of range. */
const struct ir_op *ir_slots_get(const struct ir_slots *s, int32_t i);
/* Remove and return the op at slot i (which must be live). */
struct ir_op ir_slots_take(struct ir_slots *s, int32_t i);
/* Put op at slot i (which must be empty), taking ownership. */
void ir_slots_put(struct ir_slots *s, int32_t i, struct ir_op op);
/* Replace the op at live slot i by op (the old one is freed). */
void ir_slots_replace(struct ir_slots *s, int32_t i, struct ir_op op);
/* The live ops in slot order, moved out into a new array; *n receives their count. s becomes empty. */
struct ir_op *ir_slots_into_ops(struct ir_slots *s, int32_t *n);

/* The tensors an op reads: every input of it and of its leaves, and each param a row destination names; sorted,
 * unique; returns the count (at most cap written). */
int ir_op_reads(const struct ir_op *op, ir_tid *out, int cap);
/* The tensors an op writes: its destination's buffer, its leaves' placed destinations, its keeps, and every state
 * input written in place; sorted, unique; returns the count. */
int ir_op_writes(const struct ir_op *op, ir_tid *out, int cap);
/* The tensors an op computes: its result and every leaf's; sorted, unique; returns the count. */
int ir_op_makes(const struct ir_op *op, ir_tid *out, int cap);

/* Sort ids (tensor or slot indices) ascending and drop repeats, in place; returns how many remain. */
size_t ir_ids_sort_unique(int32_t *v, size_t n);
/* The live slot whose op's result is t (its `out`), the first when several; -1 if none. */
int32_t ir_facts_producer(const struct ir_slots *s, ir_tid t);
/* The live slot whose op computes t as its result or as any part's result; -1 if none. */
int32_t ir_facts_maker(const struct ir_slots *s, ir_tid t);
/* The live slots that read t, ascending; returns the count, writes at most cap. */
int32_t ir_facts_readers(const struct ir_slots *s, ir_tid t, int32_t *out, int32_t cap);
/* The live slots that write t, ascending; returns the count, writes at most cap. */
int32_t ir_facts_writers(const struct ir_slots *s, ir_tid t, int32_t *out, int32_t cap);
/* The live slots that read (or write) t, ascending, as a view into the index valid until the slots next change; *n
 * their count (NULL when none). */
const int32_t *ir_facts_reader_list(const struct ir_slots *s, ir_tid t, int32_t *n);
const int32_t *ir_facts_writer_list(const struct ir_slots *s, ir_tid t, int32_t *n);
/* The tensors live slot i reads (or writes): ir_op_reads (ir_op_writes) less any id beyond the graph's tensors, as a
 * view valid until slot i next changes; *n their count (0 and NULL when i is not live). */
const ir_tid *ir_facts_slot_reads(const struct ir_slots *s, int32_t i, int32_t *n);
const ir_tid *ir_facts_slot_writes(const struct ir_slots *s, int32_t i, int32_t *n);
/* Whether the host sees t after the step (observed or carried). */
bool ir_facts_observed(const struct ir_slots *s, ir_tid t);
/* Whether the host keeps t across steps. */
bool ir_facts_carried(const struct ir_slots *s, ir_tid t);
/* Whether no live slot strictly between i and j, other than those in except, writes t (or, with also_reads,
 * reads it). */
bool ir_facts_untouched(const struct ir_slots *s, ir_tid t, int32_t i, int32_t j, bool also_reads,
                        const int32_t *except, int32_t nexcept);
/* Whether moving slot j up to slot i's place crosses a live slot between them not in group: one that writes what j
 * reads, or reads or writes what j writes. */
bool ir_facts_crosses(const struct ir_slots *s, int32_t i, int32_t j, const int32_t *group, int32_t ngroup);
/* Whether moving slot i down to slot j's place passes a live slot between them not in members: one that writes what
 * i reads, or reads or writes what i writes. */
bool ir_facts_sinks_past(const struct ir_slots *s, int32_t i, int32_t j, const int32_t *members, int32_t nmembers);
/* Whether every tensor slot i's op writes is unobserved and read only by slots in within. */
bool ir_facts_read_only_within(const struct ir_slots *s, int32_t i, const int32_t *within, int32_t nwithin);
/* Whether every live slot that reads t is in group. */
bool ir_facts_readers_within(const struct ir_slots *s, ir_tid t, const int32_t *group, int32_t ngroup);
/* Whether ir_facts_sinks_past is false for every slot of movers sinking to j past members: the quantified question
 * asked once, its cost the movers' tensors' lists, not the movers times the members. */
bool ir_facts_none_sinks_past(const struct ir_slots *s, const int32_t *movers, int32_t nmovers, int32_t j,
                              const int32_t *members, int32_t nmembers);
/* Whether ir_facts_read_only_within holds for every slot of ps, the group within prepared once. */
bool ir_facts_all_read_only_within(const struct ir_slots *s, const int32_t *ps, int32_t nps, const int32_t *within,
                                   int32_t nwithin);

/* The same predicates by plainly scanning every slot through the public slot and op queries above
 * (ir/facts_spec.c): the specification the indexed ones are tested against. */
int32_t ir_facts_spec_producer(const struct ir_slots *s, ir_tid t);
int32_t ir_facts_spec_maker(const struct ir_slots *s, ir_tid t);
int32_t ir_facts_spec_readers(const struct ir_slots *s, ir_tid t, int32_t *out, int32_t cap);
bool ir_facts_spec_untouched(const struct ir_slots *s, ir_tid t, int32_t i, int32_t j, bool also_reads,
                             const int32_t *except, int32_t nexcept);
bool ir_facts_spec_crosses(const struct ir_slots *s, int32_t i, int32_t j, const int32_t *group, int32_t ngroup);
bool ir_facts_spec_sinks_past(const struct ir_slots *s, int32_t i, int32_t j, const int32_t *members,
                              int32_t nmembers);
bool ir_facts_spec_read_only_within(const struct ir_slots *s, int32_t i, const int32_t *within, int32_t nwithin);

/* ── GGML block formats (ir/ggml.c) ──────────────────────────────────────────────────────────────────────── */

/* Bytes that n values take in format f (n a multiple of its block), or -1. */
int64_t ir_ggml_row_bytes(enum ir_format f, int64_t n);
/* Quantize n values (a multiple of the block) into dst, with GGML's exact byte layout. 0 on success; -1, dst
 * untouched, when ir_ggml_row_bytes(f, n) is -1. In q8_0/q4_0/q4_k/q6_k a NaN reads as 0 and magnitudes past the
 * format's range (inf included) clip, so blocks always dequantize finite; f16/bf16 keep IEEE inf and NaN. */
int ir_ggml_quantize(enum ir_format f, const float *src, int64_t n, void *dst);
/* Dequantize n values of format f from src into dst (any bytes are valid input); an invalid n > 0 zero-fills dst. */
void ir_ggml_dequantize(enum ir_format f, const void *src, int64_t n, float *dst);
/* llama.cpp's CPU backend multiplies a q8_0 or q4_0 matrix by activations it quantizes to q8_0 first: per block of
 * 32 values the scale max|x|/127 kept in f16 and the codes x·(127/max|x|) rounded to nearest even. Quantize n values
 * (a multiple of 32) so: IR_GGML_Q8_ACT_FLOATS floats a block, the scale then the 32 codes. */
#define IR_GGML_Q8_ACT_FLOATS 33
void ir_ggml_q8_activations(const float *x, int64_t n, float *blocks);
/* A stored q8_0 or q4_0 row of n values (a multiple of 32) times activations quantized so: per block the exact
 * integer sum of code products times the product of the two scales, summed in f32 in block order. 0 with *out, or
 * -1 for another format. */
int ir_ggml_dot_q8_activations(enum ir_format f, const void *row, const float *blocks, int64_t n, float *out);
/* IEEE half and bfloat16 conversions (round to nearest even). */
uint16_t ir_f32_to_f16(float x);
float ir_f16_to_f32(uint16_t h);
uint16_t ir_f32_to_bf16(float x);
float ir_bf16_to_f32(uint16_t h);

/* ── GGUF files (ir/gguf.c) ──────────────────────────────────────────────────────────────────────────────── */

/* GGUF metadata value types, in the file's numbering (0..12): enum suffix, name, bytes of a scalar (0: variable). */
#define IR_GGUF_VTYPES(X) \
    X(UINT8, "u8", 1) X(INT8, "i8", 1) X(UINT16, "u16", 2) X(INT16, "i16", 2) X(UINT32, "u32", 4) \
    X(INT32, "i32", 4) X(FLOAT32, "f32", 4) X(BOOL, "bool", 1) X(STRING, "string", 0) X(ARRAY, "array", 0) \
    X(UINT64, "u64", 8) X(INT64, "i64", 8) X(FLOAT64, "f64", 8)

enum ir_gguf_vtype {
#define X(e, s, b) IR_GGUF_##e,
    IR_GGUF_VTYPES(X)
#undef X
    IR_GGUF_VTYPE_COUNT
};

#define IR_GGUF_MAX_DEPTH 8      /* nesting of arrays in a value */
#define IR_GGUF_MAX_DIMS 4       /* a tensor's dimensions */
#define IR_GGUF_ALIGNMENT 32     /* the default alignment, and the one the writer uses */

/* One metadata value. Integers in u (unsigned, bool) or i (signed), floats in f; a string's bytes (in the file, not
 * NUL-terminated) at str; an array's element type, count and first element's bytes. */
struct ir_gguf_value {
    enum ir_gguf_vtype type;
    uint64_t u;
    int64_t i;
    double f;
    const char *str;
    uint64_t len;
    enum ir_gguf_vtype elem;
    uint64_t n;
    const unsigned char *at;
};

/* A key and its value; `offset` is the key's byte offset in the file. */
struct ir_gguf_kv {
    const char *key; /* in the file, key_len bytes, not NUL-terminated */
    uint64_t key_len, offset;
    struct ir_gguf_value value;
};

/* A tensor's info: its name, dimensions (dims[0] the contiguous one), GGML type and the block format it is (-1 when
 * fusecheck does not decode it), its offset in the data section, its bytes and where they lie in the mapping. */
struct ir_gguf_tensor {
    const char *name;
    uint64_t name_len;
    uint32_t ndims;
    uint64_t dims[IR_GGUF_MAX_DIMS];
    uint32_t type;
    int format;
    uint64_t offset, bytes;
    const unsigned char *data;
};

/* A GGUF file (version 2 or 3) read over its bytes: every count, length, offset and type checked against them. */
struct ir_gguf {
    char *label;
    uint32_t version;
    uint64_t alignment, data_offset;
    int64_t nkv, ntensors;
    struct ir_gguf_kv *kv;
    struct ir_gguf_tensor *tensors;
    const unsigned char *bytes;
    size_t size;
    bool mapped; /* bytes is an mmap of the file, unmapped by ir_gguf_close */
    struct ir_gguf_derived *derived; /* tensors fusecheck laid out from the file's (ir_gguf_derive) */
};

/* Read the GGUF file at path, its bytes mapped (never copied). NULL with err "path: byte OFFSET: what was expected"
 * (or "path: why" when it cannot be opened or mapped). */
struct ir_gguf *ir_gguf_open(const char *path, char err[IR_ERR_LEN]);
/* The same over len bytes in memory (borrowed: they must outlive the result); label names them in messages. */
struct ir_gguf *ir_gguf_parse(const void *bytes, size_t len, const char *label, char err[IR_ERR_LEN]);
void ir_gguf_close(struct ir_gguf *f);
/* The key named `key`, or NULL. */
const struct ir_gguf_kv *ir_gguf_find_kv(const struct ir_gguf *f, const char *key);
/* The tensor named `name`, or NULL. */
const struct ir_gguf_tensor *ir_gguf_find_tensor(const struct ir_gguf *f, const char *name);
/* Element i of an array value (checked when read, so never out of its bytes); 0, or -1 when i is past its count. */
int ir_gguf_array_item(const struct ir_gguf_value *arr, uint64_t i, struct ir_gguf_value *out);
/* A tensor in fusecheck's layout of values the file stores in another (a part of a joined tensor, another order or
 * form of its values): ndims dims (dims[0] a row) of format fmt, owned by f until ir_gguf_close and found by
 * ir_gguf_find_tensor before a file tensor of the same name. Its bytes to fill (*fresh true), or the same tensor's
 * bytes made before (*fresh false: already filled; a reader may still hold them); NULL when a row is not whole
 * blocks of fmt, or a tensor of that name was derived with another shape or format. */
void *ir_gguf_derive(const struct ir_gguf *f, const char *name, uint32_t ndims, const uint64_t *dims,
                     enum ir_format fmt, bool *fresh);
/* The name of a value type, or "?"; the GGML type number of a block format. */
const char *ir_gguf_vtype_name(enum ir_gguf_vtype t);
uint32_t ir_gguf_ggml_type(enum ir_format f);

/* A GGUF v3 file being built: metadata written in order (a key, then its value), tensors named with their data. */
struct ir_gguf_writer;
struct ir_gguf_writer *ir_gguf_writer_new(void);
void ir_gguf_writer_free(struct ir_gguf_writer *w);
/* Begin a key of the given type (its value follows: ir_gguf_put, once, or an array's items). */
void ir_gguf_key(struct ir_gguf_writer *w, const char *key, enum ir_gguf_vtype type);
/* Write a value's payload without its type: a scalar from u/i/f, a string from str/len, an array's element type and
 * count (its n items follow, each with ir_gguf_put). */
void ir_gguf_put(struct ir_gguf_writer *w, const struct ir_gguf_value *v);
/* Shorthands for one whole key: an unsigned, a signed 32-bit, a float, a double, a bool and a string. */
void ir_gguf_kv_u32(struct ir_gguf_writer *w, const char *key, uint32_t v);
void ir_gguf_kv_i32(struct ir_gguf_writer *w, const char *key, int32_t v);
void ir_gguf_kv_f32(struct ir_gguf_writer *w, const char *key, float v);
void ir_gguf_kv_f64(struct ir_gguf_writer *w, const char *key, double v);
void ir_gguf_kv_bool(struct ir_gguf_writer *w, const char *key, bool v);
void ir_gguf_kv_str(struct ir_gguf_writer *w, const char *key, const char *v);
/* Add a tensor of ndims dimensions (dims[0] contiguous) in format f; data (its whole bytes, borrowed until written)
 * or NULL for a hole of that size (a sparse file). 0, or -1 with err when its shape is not whole blocks. */
int ir_gguf_add_tensor(struct ir_gguf_writer *w, const char *name, uint32_t ndims, const uint64_t *dims,
                       enum ir_format f, const void *data, char err[IR_ERR_LEN]);
/* Write n bytes whole at fd's position, retrying short and interrupted writes; 0, or -1 with errno set. */
int ir_write_all(int fd, const void *bytes, uint64_t n);
/* Replace the file at path whole: body writes a new file beside it (its fd), given mode's permissions (mode < 0:
 * 0666 less the umask), synced and renamed over path; removed when anything fails. 0, or -1 with errno set. */
int ir_replace_file(const char *path, int mode, int (*body)(int fd, void *ctx), void *ctx);
/* Write the file whole or not at all (a temp file beside path, renamed over it; a regular file's permissions kept).
 * 0, or -1 with err. */
int ir_gguf_write(const struct ir_gguf_writer *w, const char *path, char err[IR_ERR_LEN]);

/* ── The evaluator (ir/eval.c) ───────────────────────────────────────────────────────────────────────────── */

/* The values of a graph's tensors during evaluation: f32 for every tensor (i32 tensors hold integral values),
 * constants stored as checkpoint rows kept quantized and dequantized on use. */
struct ir_values;

/* The most bytes of values ir_values_new allocates for one graph (larger graphs are refused with an error). */
#define IR_EVAL_MAX_BYTES ((int64_t)1 << 34)
/* The bytes of values ir_values_new would allocate for g (what ir_values_bytes then reports), or -1 when a tensor's
 * shape or block format is invalid: lets a caller (the fuzzer) refuse a graph before allocating. */
int64_t ir_values_plan_bytes(const struct ir_graph *g);

/* Values for every tensor of g, inputs/params/state/constants filled deterministically from `seed` and each
 * tensor's name (so a rewritten graph gets the same values as its lifted one), activations zero. NULL + err on
 * failure (e.g. a graph too large for memory). */
struct ir_values *ir_values_new(const struct ir_graph *g, uint64_t seed, char err[IR_ERR_LEN]);
/* Like ir_values_new, each tensor filled as the graph `like` uses the tensor of its name: a rewritten graph filled
 * from its lifted graph's uses gets exactly the lifted graph's values, whatever the rewrite changed about who reads
 * what. */
struct ir_values *ir_values_new_like(const struct ir_graph *g, uint64_t seed, const struct ir_graph *like,
                                     char err[IR_ERR_LEN]);
/* ir_values_new_like(g, seed, like), each constant that `donor_g` holds alike (its name, element, shape, role and
 * storage) borrowed from `donor` (read where it lies, neither copied nor generated again): donor must be
 * ir_values_new_like(donor_g, seed, like)'s, evaluated or not (an evaluation never writes a constant), and must
 * outlive the new values. The same values, without filling or holding the weights twice. */
struct ir_values *ir_values_new_shared(const struct ir_graph *g, uint64_t seed, const struct ir_graph *like,
                                       const struct ir_graph *donor_g, const struct ir_values *donor,
                                       char err[IR_ERR_LEN]);
void ir_values_free(struct ir_values *v);
/* on: from now on every product of v's evaluations by q8_0 or q4_0 checkpoint rows (a stored row an output, the
 * contracted run whole blocks) quantizes its activation rows to q8_0 first and sums block by block in integers
 * (ir_ggml_q8_activations), as llama.cpp's CPU backend computes such a product; off (the default): the exact f32
 * product of the activations and the dequantized weights. For holding the evaluator to llama.cpp (crosscheck). */
void ir_values_quantize_activations(struct ir_values *v, bool on);
/* on: from now on each evaluation over v frees an activation the host neither observes nor carries once the last op
 * naming it has run (the next evaluation gives it zeroed storage again), so the memory an evaluation holds is the
 * constants, state and observed values plus the activations still to be read; such an activation's values are then
 * gone (ir_values_cdata NULL). off (the default): every value stays. The bits computed are the same either way. */
void ir_values_free_dead(struct ir_values *v, bool on);
/* From now on (f NULL: no longer), every constant f holds by name takes its values from f instead of the seed: a
 * checkpoint's rows read where they lie in f's mapping (no copy), a plain tensor's decoded. f must outlive every
 * values instance made meanwhile; a file tensor of another count or format fails ir_values_new*. */
void ir_values_use_gguf(const struct ir_gguf *f);
/* The harness's self-test of its reference (FUSECHECK_PLANT): "rope_base" makes the evaluator fill the rotary
 * tables at base 10000 whatever a rope's theta, the fault `fusecheck crosscheck` must catch; NULL or "" plants
 * nothing. 0, or -1 (nothing planted) for a name that is no evaluator fault. */
#define IR_EVAL_PLANTS "rope_base"
int ir_eval_plant(const char *name);
/* From now on evaluations run their matrix products on up to n threads (1: the calling thread alone; clamped to
 * 1..64). Each output's sum stays in one thread in its documented order, so the bits do not depend on n. */
void ir_eval_set_threads(int n);
/* The thread count ir_eval_set_threads set (1 by default). */
int ir_eval_threads(void);
/* From now on seeding values (every few rows of a tensor) and evaluating (before each op) first ask `stop`: once it
 * answers true, ir_values_new* gives NULL and ir_eval* -1, err starting IR_EVAL_STOPPED, with nothing half-made left
 * behind. A long command passes its signal flag here so that a real-size graph stops within a moment. NULL (the
 * default): never asked. */
#define IR_EVAL_STOPPED "stopped on request"
void ir_eval_set_stop(bool (*stop)(void));
/* Run g's ops in order over v. 0 on success, else err. */
int ir_eval(const struct ir_graph *g, struct ir_values *v, char err[IR_ERR_LEN]);
/* Run `n` ops (their tensors are g's) over v. */
int ir_eval_ops(const struct ir_graph *g, const struct ir_op *ops, int32_t n, struct ir_values *v,
                char err[IR_ERR_LEN]);
/* The f32 values of tensor t (rows × cols), or NULL for a checkpoint constant. */
float *ir_values_data(struct ir_values *v, ir_tid t);
const float *ir_values_cdata(const struct ir_values *v, ir_tid t);
/* Bytes of memory the values hold (the quantized constants at their stored size). */
size_t ir_values_bytes(const struct ir_values *v);

/* ── Evaluating with another executor's leaves (the host lane, the tolerance bounds) ──────────────────────── */

/* A leaf op being evaluated, as a hook sees it: its op and the evaluator's access to its operands. */
struct ir_leaf;

/* Another executor's part in an evaluation. `leaf` computes a leaf op (primitive, view or quantize) in the
 * evaluator's place: 0 when done (the result written through ir_leaf_result / ir_leaf_state), 1 to let the
 * evaluator compute it, -1 on failure (ir_leaf_fail wrote why). `placed`, when set, sees every run of values a
 * placement copied into a destination buffer, after the copy. The walk itself (program order, parts in order,
 * strided reads, placements) stays the evaluator's, so both executors move data alike. */
struct ir_eval_hooks {
    int (*leaf)(void *ctx, struct ir_leaf *leaf);
    void (*placed)(void *ctx, ir_tid buf, float *values, int64_t n);
    void *ctx;
};
/* ir_eval_ops with hooks (NULL: plain evaluation). */
int ir_eval_ops_hooked(const struct ir_graph *g, const struct ir_op *ops, int32_t n, struct ir_values *v,
                       const struct ir_eval_hooks *hooks, char err[IR_ERR_LEN]);
/* The leaf's op, its graph, and the index of the top-level op it belongs to. */
const struct ir_op *ir_leaf_op(const struct ir_leaf *l);
const struct ir_graph *ir_leaf_graph(const struct ir_leaf *l);
int32_t ir_leaf_top(const struct ir_leaf *l);
/* Operand i's tensor id (IR_NONE with the failure written when it has none). */
ir_tid ir_leaf_operand(struct ir_leaf *l, int i);
/* The first `need` values operand i reads (strided reads gathered), every value it can read, or the same gathered
 * from another values instance of the same graph; NULL with the failure written. */
const float *ir_leaf_arg(struct ir_leaf *l, int i, int64_t need);
const float *ir_leaf_arg_all(struct ir_leaf *l, int i, int64_t *len);
const float *ir_leaf_arg_of(struct ir_leaf *l, const struct ir_values *other, int i, int64_t need);
/* Operand i as state written in place, the leaf's result buffer (exactly len values), a zeroed working buffer held
 * until the op is done; NULL with the failure written. */
float *ir_leaf_state(struct ir_leaf *l, int i, int64_t need);
float *ir_leaf_result(struct ir_leaf *l, int64_t len);
float *ir_leaf_scratch(struct ir_leaf *l, int64_t n);
/* The 0-based row a row index names (a named one read from operand `at`), in [0, hi]; -1 with the failure. */
int ir_leaf_row(struct ir_leaf *l, const struct ir_rowidx *ri, int at, int64_t hi, const char *what, int64_t *r);
/* Write "op N (name): message" as the evaluation's error; returns -1. */
int ir_leaf_fail(struct ir_leaf *l, const char *fmt, ...);

/* A checkpoint constant's stored rows: its bytes, format, layout, stored rows of slen values, bytes a stored row. */
struct ir_ckpt_rows {
    const unsigned char *bytes;
    enum ir_format format;
    bool transposed;
    int64_t srows, slen, row_bytes;
};
/* Whether tensor t is held as checkpoint rows in v; its rows into *out when it is. */
bool ir_values_checkpoint(const struct ir_values *v, ir_tid t, struct ir_ckpt_rows *out);

/* The outcome of comparing two evaluations of one graph's observed and carried tensors. */
struct ir_compare {
    bool identical;
    ir_tid tensor;  /* the first tensor that differs, when not identical */
    int64_t index;  /* its first differing index */
    float a, b;     /* the two values there */
    int32_t compared;
};
/* Compare every observed or carried tensor of g bit for bit between a and b (tensors by name in ga/gb). */
struct ir_compare ir_values_compare(const struct ir_graph *ga, const struct ir_values *a, const struct ir_graph *gb,
                                    const struct ir_values *b);

#endif
