/* models/models.h — the model zoo: builders that lift one step of a model family into an ir graph.
 *
 * A model is a row of the model table (its published dimensions, or a tiny configuration for evaluation); its family
 * is a row of the family table (a name and the hooks that build what the family adds to the common decoder block).
 * models_lift builds one step of a model in one of three modes:
 *
 *   decode      one row at the named position `pos` (i32 1×1 param); the token `token` (i32 1×1 input) picks its
 *               embedding row through a named `row_gather`.
 *   prefill:N   a chunk of N rows at the named position `pos`; the tokens `tokens` (i32 N×1 input) through a
 *               `rows_gather`. Only the chunk's last row (a literal `row_gather` of the last layer's result) goes
 *               through the final norm and the LM head.
 *   batch:N     N sequences, one row each, each with its own position `pos.<b>` (i32 1×1 param) and its own caches
 *               `blk.<l>.k_cache.<b>` / `blk.<l>.v_cache.<b>`; the tokens `tokens` (i32 N×1 input). Per sequence, a
 *               literal `row_gather` takes its row of q, k and v; its attention result is set into row b+1 of the
 *               layer's `blk.<l>.attn_rows` table (state, not carried), which the output projection reads whole.
 *
 * Families (models/lift.c's family table). Every rope op carries the model's rotary base (`theta`, rope_base), its
 * frequency scaling (`scaling` and its fields, rope_scaling: linear, llama3, YaRN with its magnitude) and the
 * pairing of llama.cpp's rope type for the architecture: adjacent pairs (2i, 2i+1) (`adjacent`, its NORM type) for
 * llama, granite, minicpm and deepseek; pairs (i, i+half) (its NEOX type) for the rest. Every norm weight is read as
 * a GGUF file stores it (offset 0): the (1+w) families' checkpoints (gemma2, nemotron, qwen3-next) store w + 1.
 *   llama      plain pre-norm blocks, the FFN swiglu(gate, up) of two products of the normed rows.
 *   qwen3      llama's block with a per-head rms_norm (rows = heads, cols = head_dim, weighted) of q and of k before
 *              their rotations.
 *   qwen3-moe  qwen3's attention; the FFN a `moe` (act swiglu). Decode: one op on the row. Prefill and batch: per row
 *              r a literal `row_gather` of the normed rows, the `moe`, and a `set_row` of its result into row r+1 of
 *              `blk.<l>.ffn_moe_rows`; then the residual add reads that table.
 *   qwen3-next layers l with (l+1) % full_every == 0 are gated attention: qwen3's per-head q/k norms, a partial
 *              rotation (rotary_dim of each head), and the attention's result times sigmoid(x·W_gate) before the output
 *              projection. The other layers are Gated DeltaNet (below). Every norm but the DeltaNet's gated one is (1+w),
 *              stored so (w + 1 in the file: offset 0). The FFN a `moe` plus a shared SwiGLU expert gated by sigmoid(x·W_shexp_gate), one per row.
 *              A Gated DeltaNet layer: six products of the normed rows (q and k of lin_k_heads heads, v and z of
 *              lin_v_heads, b and a one value a value head); a short causal convolution of q, of k and of v (each over
 *              its own carried ring of conv_taps−1 rows: the model's one depthwise convolution over their joined
 *              channels, split by channel), each through a SiLU; q and k L2-normed per head; β = σ(b); the log-decay of
 *              a (`decay`, A_log and dt_bias); `gated_delta` (kh = lin_k_heads) over the layer's carried memory; its
 *              output product. A batch runs each sequence's rows through its own rings and memory and sets its result
 *              into its row of the layer's `blk.<l>.ssm_rows` table. The gated attention's q and gate are two products
 *              (the model's one interleaved projection, split by column).
 *   nemotron   the FFN down(relu(x·W_up)²), the square the ReLU's product with itself; rotary_dim of each head
 *              rotated. Its norms (attention, FFN, final) are LayerNorms (`kind=layer`: mean-centred) with a weight,
 *              (1+w) stored as w + 1, and a bias row (`blk.<l>.attn_norm.bias`, `blk.<l>.ffn_norm.bias`,
 *              `output_norm.bias`), as the published model and llama.cpp compute them.
 *   qwen2.5    llama's block with a bias row added to each of the q, k and v products.
 *   granite    the embedding times embed_mult; each branch's output times residual_mult before its residual add; the
 *              attention's logit scale query_scale; the logits divided by logit_scale.
 *   minicpm    granite's embedding and residual multipliers (muP); no logit divisor, but the final norm's output
 *              divided by head_divisor (hidden/dim_model_base) before the LM head.
 *   gemma2     the embedding scaled by √hidden; (1+w) norms (stored as w + 1: offset 0): the attention norm, the
 *              post-attention norm, the FFN norm, the post-FFN norm and the final norm; the FFN gelu(gate) times up; a
 *              sliding window on even layers; the attention logits' soft cap and the output logits through `softcap`.
 *   deepseek   multi-head latent attention in its absorbed form (models/lift.c's deepseek section): one carried cache
 *              `blk.<l>.kv_cache` a layer (a sequence), each row the normed latent then the rotated key part every
 *              head shares; the query through a low rank (q_lora) or one product; per head its unrotated part
 *              absorbed into the latent by `head_matmul`, joined with its rotated part; the attention (kv 1) reads
 *              the cache's latents as its values through a `head_slice`, and a second `head_matmul` expands the
 *              attended latent into each head's values. The first dense_layers layers a SwiGLU FFN, the rest a
 *              mixture (as qwen3-moe's) plus the shared experts' SwiGLU, summed.
 *   gpt-oss    bias rows on the q, k, v and output products; a learned sink a head in the attention (`sinks`); a
 *              sliding window on even layers; the FFN a `moe` (as qwen3-moe's, by rows) of clamped SwiGLU experts
 *              (act clamped_swiglu, swiglu_alpha, swiglu_limit) with bias rows on the router and on every expert
 *              product, routed by the top k of the logits then their softmax (topk_softmax); YaRN's frequency scaling
 *              and attention factor (rope_scaling) in every rope.
 *   olmo2      no pre-norms: q, k and v are products of the stream itself and the FFN reads the attention's residual
 *              sum; q and k each RMS-normed whole (rows = the step's rows, cols = heads × head_dim and kv_heads ×
 *              head_dim, weighted) before their rotations; the attention's and the FFN's outputs RMS-normed
 *              (`post_attention_norm`, `post_ffw_norm`) before their residual adds; a SwiGLU FFN.
 *
 * What the host sees, as a runtime would:
 *   carried   every key and value cache, convolution ring and DeltaNet memory (role state): the host keeps them
 *             across steps.
 *   observed  `next` (i32, the arg-max of the logits, flagged next: the step moves on from it) and `logits` (the host
 *             may sample otherwise or report log-probabilities). Nothing else is observed, so every other result is
 *             free for the optimizer to fuse away.
 *   state, not carried: the per-row tables a step fills and reads within itself (a batch's attention rows, a chunk's
 *             or a batch's mixture rows).
 *
 * Weights are constants. The matrices (projections, experts, LM head) and the embedding table are checkpoint rows in
 * the chosen block format (default q8_0); matrices are stored transposed (GGML's layout: a stored row per output),
 * the embedding a stored row per token. A mixture's router is checkpoint f32 (as GGUF files keep it). Norm weights,
 * biases, convolution weights, A_log and dt_bias, and the rotary tables (`rope.cos`, `rope.sin`: ctx rows ×
 * rotary_dim/2 cols, rotary_dim the head_dim unless set) are plain f32 values. Tensor names follow GGUF's
 * (`token_embd.weight`, `blk.<l>.attn_q.weight`, ...). A tied model (its LM head the embedding
 * table's bytes) still has its own `output.weight` tensor in the graph, marked `tied`: the evaluator gives it the
 * embedding's stored rows, as a host binds the same bytes to both (a GGUF file has none); its parameter count counts
 * them once.
 *
 * Errors are values: functions that can fail return NULL or non-zero and write a message of IR_ERR_LEN bytes. */
#ifndef FUSECHECK_MODELS_H
#define FUSECHECK_MODELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

/* The most sequences a batch step takes, and the most rows a prefill chunk takes (besides the model's context). */
#define MODELS_MAX_ROWS 4096
/* The most layers a configuration may have: the lift, the parameter count and the config reader refuse more. */
#define MODELS_MAX_LAYERS 1024

/* A model's configuration: its published dimensions, the context the zoo allots it, and its family's constants. */
struct models_config {
    const char *name;       /* e.g. "llama3.2-1b", "tiny-llama" */
    const char *family;     /* a row of the family table: "llama", "qwen3", "qwen3-moe", "gemma2", "deepseek", ... */
    int32_t layers;
    int64_t hidden;         /* the residual stream's width */
    int64_t heads;          /* query heads */
    int64_t kv_heads;       /* key/value heads (grouped-query attention) */
    int64_t head_dim;
    int64_t ffn;            /* the dense FFN's inner width (0 for a mixture) */
    int64_t vocab;
    int64_t experts;        /* a mixture's experts (0 when dense) */
    int64_t top_k;          /* experts a row uses */
    int64_t expert_ffn;     /* each expert's inner width */
    int64_t ctx;            /* the context allotted: rows of every cache and of the rotary tables */
    int64_t window;         /* sliding window of the windowed layers (0: none) */
    double eps;             /* RMS norm epsilon */
    double rope_base;       /* the rotary base θ: every rope op's `theta`, the base the rotary tables are filled with */
    struct ir_rope_scaling rope_scaling; /* every rope op's frequency scaling (linear, llama3, YaRN) and magnitude */
    double attn_softcap;    /* tanh cap of the attention logits (0: none) */
    double final_softcap;   /* tanh cap of the output logits (0: none) */
    double query_scale;     /* the attention's logit scale (0: 1/sqrt(head_dim)) */
    bool tied;              /* the LM head is the embedding table (counted once) */
    bool tiny;              /* an evaluation configuration, small enough to evaluate in milliseconds */
    /* deepseek: multi-head latent attention and DeepSeekMoE (all 0 for every other family). head_dim is each query
     * head's unrotated width (qk_nope_head_dim), kv_heads equals heads, ffn is the dense layers' inner width. */
    struct models_deepseek {
        int64_t q_lora;       /* the query's low rank (0: one full-rank query projection) */
        int64_t kv_lora;      /* the compressed latent's width; a cache row is kv_lora latent values then rope_dim */
        int64_t rope_dim;     /* the rotary width of each query head and of the one key part all heads share (0: the
                               * rotary tables are head_dim wide, as every other family's) */
        int64_t v_head_dim;   /* each head's value width */
        int64_t shared_ffn;   /* the shared experts' inner width (their count × expert_ffn) */
        int32_t dense_layers; /* the first layers whose FFN is dense SwiGLU of width ffn (first_k_dense_replace) */
    } deepseek;
    /* qwen3-next, nemotron, qwen2.5, granite, minicpm, gpt-oss (0 where a family has no such part). */
    int32_t full_every;     /* qwen3-next: layers l with (l+1) % full_every == 0 attend; the rest are Gated DeltaNet */
    int64_t lin_k_heads;    /* Gated DeltaNet key heads (each shared by lin_v_heads/lin_k_heads value heads) */
    int64_t lin_v_heads;    /* Gated DeltaNet value heads */
    int64_t lin_dk;         /* Gated DeltaNet key head width */
    int64_t lin_dv;         /* Gated DeltaNet value head width */
    int64_t conv_taps;      /* the short causal convolution's taps */
    int64_t rotary_dim;     /* the rotated leading part of a head (0: the whole head) */
    int64_t shared_ffn;     /* the sigmoid-gated shared expert's inner width (0: none) */
    double embed_mult;      /* granite: the embedding's multiplier */
    double residual_mult;   /* granite: each branch's multiplier before its residual add */
    double logit_scale;     /* granite: the logits are divided by it */
    double head_divisor;    /* minicpm: the final norm's output is divided by it before the LM head */
    double swiglu_alpha;    /* gpt-oss: the clamped SwiGLU's σ(alpha·g) */
    double swiglu_limit;    /* gpt-oss: its gate clamped above, its up to ±limit */
    /* A mixture's routing (all 0: a softmax over every expert, the top k renormalised; gpt-oss's top k of the logits
     * then their softmax is its family's own). */
    struct models_routing {
        bool sigmoid;        /* each expert scored σ(logit) (deepseek-v3: scoring_func sigmoid) */
        bool no_renorm;      /* the chosen scores weigh as they are (norm_topk_prob false) */
        bool correction;     /* a per-expert row added to the scores for the choice only (noaux_tc's
                              * e_score_correction_bias: blk.<l>.exp_probs_b.bias) */
        int64_t groups;      /* group-limited choice: the experts in `groups` equal groups (n_group; 0: none) ... */
        int64_t topk_groups; /* ... of which the topk_groups best compete (topk_group) */
        double scale;        /* each weight times it (routed_scaling_factor; 0: none) */
    } routing;
};

/* Number of models in the zoo. */
int models_count(void);
/* The i-th model (0 ≤ i < models_count()), or NULL. */
const struct models_config *models_get(int i);
/* The model named `name`, or NULL if unknown. */
const struct models_config *models_find(const char *name);
/* Number of the model's parameters (a tied embedding counted once); -1 for an unknown family, or sizes negative or
 * too large to count. */
int64_t models_param_count(const struct models_config *c);

/* A model's configuration read from a Hugging Face config.json (models/config.c): architectures[0] (else
 * model_type) picks the family, whose reader fills every field the family lifts, taking the Transformers
 * configuration class's defaults for what the file leaves out (but never for the sizes of a weight). Its name is the
 * file's name less ".json" (a file called config.json: its folder's name); its context the zoo's 4096 rows, or two
 * sliding windows where the model slides one wider than 2048, never past max_position_embeddings; tiny when it has
 * fewer than 2^24 parameters. malloc'd (models_config_free frees it); NULL with err "file:line:col: field: what was
 * expected" (an unknown architecture, a missing field, a wrong type, an impossible value, text that is not JSON). */
struct models_config *models_read_config(const char *path, char err[IR_ERR_LEN]);
/* The same from text in memory: label names it in messages, name is the model's name. */
struct models_config *models_parse_config(const char *text, size_t len, const char *label, const char *name,
                                          char err[IR_ERR_LEN]);
void models_config_free(struct models_config *c);

/* Number of families, and the name of the i-th (NULL when out of range). */
int models_family_count(void);
const char *models_family_name(int i);

/* A step's mode: one decode row, a prefill chunk of n rows, or a batch of n sequences. */
enum models_mode_kind { MODELS_DECODE, MODELS_PREFILL, MODELS_BATCH };
struct models_mode {
    enum models_mode_kind kind;
    int32_t n; /* rows (prefill) or sequences (batch); decode ignores it (one row) */
};

/* Parse "decode", "prefill:N" or "batch:N" (1 ≤ N ≤ MODELS_MAX_ROWS). 0 on success, else err. */
int models_parse_mode(const char *s, struct models_mode *m, char err[IR_ERR_LEN]);
/* The mode's text, as models_parse_mode reads it. */
void models_mode_name(struct models_mode m, char buf[32]);

/* How to lift: the mode, how many layers (0 = all), the matrices' block format, the context (0 = the model's), and
 * whether a prefill chunk's every row goes through the final norm and the LM head (logits and next then have a row
 * a token: what a run that reports every position's logits lifts; default: the chunk's last row only). */
struct models_options {
    struct models_mode mode;
    int32_t layers;
    enum ir_format weights;
    int64_t ctx;
    bool every_row_logits;
};

/* The default options: decode, every layer, q8_0 weights, the model's context. */
struct models_options models_default_options(void);

/* One step of model c lifted into a new graph (meta: the model's name, its family, the mode's text). NULL with err on
 * a bad mode, a chunk or batch larger than the context, a layer count out of range, a block format that does not
 * divide a matrix's contracted width, an unknown family, or a configuration out of range (dimensions up to 2^24,
 * at most 1024 layers, a step of at most about 4M ops: what a lift allocates stays bounded). */
struct ir_graph *models_lift(const struct models_config *c, const struct models_options *o, char err[IR_ERR_LEN]);

/* ── GGUF files (models/gguf.c) ──────────────────────────────────────────────────────────────────────────── */

/* A model's configuration from a GGUF file's metadata: general.architecture picks the family (llama qwen3 qwen3moe
 * gemma2 qwen3next nemotron qwen2 granite minicpm deepseek2 gpt-oss olmo2), `<arch>.block_count`,
 * `<arch>.embedding_length`, heads, kv heads, key length, context, RMS epsilon, rope, experts, ... fill it
 * (llama.cpp's key names and types, its defaults where a key is absent; a key fusecheck's graph cannot follow
 * refused); its name is general.name (else the file's name); the head's width hidden/heads and the vocabulary
 * token_embd.weight's rows where their keys are absent; tied when the file has no output.weight (gemma2: always);
 * its context as a config.json's. malloc'd (models_config_free); NULL with err "file: [byte N: ]key: what was expected". */
struct models_config *models_gguf_config(const struct ir_gguf *f, char err[IR_ERR_LEN]);
/* One step of the file's model lifted: every constant the lift reads but the rotary tables checked present in the
 * file (a tied LM head: the embedding) with its dims and a type the evaluator decodes, each checkpoint constant in
 * the file's format; one the file lays out otherwise derived into fusecheck's layout (ir_gguf_derive, kept with f).
 * NULL with err naming the tensor or key. Its values come from the file under ir_values_use_gguf. */
struct ir_graph *models_gguf_lift(const struct ir_gguf *f, const struct models_options *o, char err[IR_ERR_LEN]);
/* Write g (lifted from c, perhaps fewer layers: the file says as many as g holds) and its constants' values in v as
 * a GGUF v3 file at path (whole or not at all) in llama.cpp's conventions: its keys, a minimal vocabulary, every
 * constant but the rotary tables as llama.cpp's tensors (models/gguf.c's tables: renamed, joined, per head, another
 * form, experts 3-D, a tied head left out). Refused (err) where llama.cpp cannot be told the configuration. v NULL:
 * every tensor a hole of its size (a sparse file of the model's shape, its weights zeros). */
int models_gguf_export(const struct models_config *c, const struct ir_graph *g, const struct ir_values *v,
                       const char *path, char err[IR_ERR_LEN]);

#endif
