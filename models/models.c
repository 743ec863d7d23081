/* models/models.c — the model table and the step modes. */
#include "models/models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The zoo: published dimensions of real models with the context the zoo allots them, and one tiny configuration a
 * family for evaluation (every contracted width a multiple of 256, so every block format applies). Adding a model is
 * one row. Fields: name, family, layers, hidden, heads, kv_heads, head_dim, ffn, vocab, experts, top_k, expert_ffn,
 * ctx, window, eps, rope_base, attn_softcap, final_softcap, query_scale, tied, tiny; then each family's own
 * constants (0 where a family has no such part). */
/* deepseek's logit scales: (0.1 · mscale_all_dim · ln 40 + 1)² / sqrt(192); mscale_all_dim 0.707 (V2-Lite), 1 (V3). */
#define QS_V2_LITE 0.11472138679292612
#define QS_V3 0.1352337788608801
/* tiny-deepseek's: (0.1 · ln 4 + 1)² / sqrt(128), YaRN by 4 with mscale_all_dim 1. */
#define QS_TINY_DEEPSEEK 0.1145934591559475
/* Rotary scalings as the published rope_scaling gives them: llama3's band (factor, original context, low and high
 * frequency factors); YaRN's factor over an original context, betas 32 and 1, truncated or not, and its magnitude
 * (the attention factor 0.1 · ln factor + 1 where mscale and mscale_all_dim do not cancel it). */
#define LLAMA3(f, o, lo, hi) \
    {.kind = IR_ROPESCALE_LLAMA3, .factor = {true, f}, .orig = o, .low_freq = {true, lo}, .high_freq = {true, hi}}
#define YARN(f, o, trunc, has_m, m)                                                                                \
    {.kind = IR_ROPESCALE_YARN, .factor = {true, f}, .orig = o, .beta_fast = {true, 32}, .beta_slow = {true, 1},  \
     .truncate = trunc, .magnitude = {has_m, m}}
/* deepseek-v3's routing (noaux_tc): sigmoid scores, the correction row choosing, the topk best of n groups competing,
 * renormalised, times routed_scaling_factor 2.5. deepseek-v2-lite's (greedy): softmax, not renormalised, × 1.0.
 * qwen3-moe's and qwen3-next's published norm_topk_prob is true: the default routing. */
#define ROUTING_V3(n, topk) {.sigmoid = true, .correction = true, .groups = n, .topk_groups = topk, .scale = 2.5}

static const struct models_config zoo[] = {
    {.name = "llama3.2-1b", .family = "llama", .layers = 16, .hidden = 2048, .heads = 32, .kv_heads = 8,
     .head_dim = 64, .ffn = 8192, .vocab = 128256, .ctx = 4096, .eps = 1e-5, .rope_base = 500000, .tied = true,
     .rope_scaling = LLAMA3(32, 8192, 1, 4)},
    {.name = "llama3-8b", .family = "llama", .layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 8, .head_dim = 128,
     .ffn = 14336, .vocab = 128256, .ctx = 4096, .eps = 1e-5, .rope_base = 500000},
    {.name = "qwen3-0.6b", .family = "qwen3", .layers = 28, .hidden = 1024, .heads = 16, .kv_heads = 8,
     .head_dim = 128, .ffn = 3072, .vocab = 151936, .ctx = 4096, .eps = 1e-6, .rope_base = 1e6, .tied = true},
    {.name = "qwen3-8b", .family = "qwen3", .layers = 36, .hidden = 4096, .heads = 32, .kv_heads = 8, .head_dim = 128,
     .ffn = 12288, .vocab = 151936, .ctx = 4096, .eps = 1e-6, .rope_base = 1e6},
    {.name = "qwen3-30b-a3b", .family = "qwen3-moe", .layers = 48, .hidden = 2048, .heads = 32, .kv_heads = 4,
     .head_dim = 128, .vocab = 151936, .experts = 128, .top_k = 8, .expert_ffn = 768, .ctx = 4096, .eps = 1e-6,
     .rope_base = 1e6},
    {.name = "gemma2-2b", .family = "gemma2", .layers = 26, .hidden = 2304, .heads = 8, .kv_heads = 4, .head_dim = 256,
     .ffn = 9216, .vocab = 256000, .ctx = 8192, .window = 4096, .eps = 1e-6, .rope_base = 10000, .attn_softcap = 50,
     .final_softcap = 30, .query_scale = 0.0625, .tied = true},
    {.name = "tiny-llama", .family = "llama", .layers = 2, .hidden = 256, .heads = 4, .kv_heads = 2, .head_dim = 64,
     .ffn = 512, .vocab = 512, .ctx = 64, .eps = 1e-5, .rope_base = 500000, .tiny = true,
     .rope_scaling = LLAMA3(8, 256, 1, 4)},
    {.name = "tiny-qwen3", .family = "qwen3", .layers = 2, .hidden = 256, .heads = 4, .kv_heads = 2, .head_dim = 64,
     .ffn = 512, .vocab = 512, .ctx = 64, .eps = 1e-6, .rope_base = 1e6, .tiny = true},
    {.name = "tiny-qwen3-moe", .family = "qwen3-moe", .layers = 2, .hidden = 256, .heads = 4, .kv_heads = 2,
     .head_dim = 64, .vocab = 512, .experts = 8, .top_k = 2, .expert_ffn = 256, .ctx = 64, .eps = 1e-6,
     .rope_base = 1e6, .tiny = true},
    {.name = "tiny-gemma2", .family = "gemma2", .layers = 2, .hidden = 256, .heads = 4, .kv_heads = 2, .head_dim = 64,
     .ffn = 512, .vocab = 512, .ctx = 64, .window = 16, .eps = 1e-6, .rope_base = 10000, .attn_softcap = 50,
     .final_softcap = 30, .query_scale = 0.125, .tied = true, .tiny = true},
    /* qwen3-next (Qwen/Qwen3-Next-80B-A3B-Instruct's config.json: 48 layers, every 4th gated attention with 16 query
     * heads, 2 kv heads of 256 and a quarter of each head rotated; the rest Gated DeltaNet with 16 key heads, 32 value
     * heads of 128 and a 4-tap convolution; 512 experts of 512, 10 a token, one shared expert of 512). */
    {.name = "qwen3-next-80b-a3b", .family = "qwen3-next", .layers = 48, .hidden = 2048, .heads = 16, .kv_heads = 2,
     .head_dim = 256, .vocab = 151936, .experts = 512, .top_k = 10, .expert_ffn = 512, .ctx = 4096, .eps = 1e-6,
     .rope_base = 1e7, .full_every = 4, .lin_k_heads = 16, .lin_v_heads = 32, .lin_dk = 128, .lin_dv = 128,
     .conv_taps = 4, .rotary_dim = 64, .shared_ffn = 512},
    {.name = "tiny-qwen3-next", .family = "qwen3-next", .layers = 4, .hidden = 256, .heads = 4, .kv_heads = 2,
     .head_dim = 64, .vocab = 512, .experts = 8, .top_k = 2, .expert_ffn = 256, .ctx = 64, .eps = 1e-6,
     .rope_base = 1e7, .full_every = 4, .lin_k_heads = 2, .lin_v_heads = 4, .lin_dk = 64, .lin_dv = 64,
     .conv_taps = 4, .rotary_dim = 16, .shared_ffn = 256, .tiny = true},
    /* nemotron (nvidia/Minitron-4B-Base, pruned from Nemotron-4 15B: 24 heads of 128, 8 kv heads, half of each head
     * rotated, a squared-ReLU FFN of 9216, (1+w) norms). */
    {.name = "minitron-4b", .family = "nemotron", .layers = 32, .hidden = 3072, .heads = 24, .kv_heads = 8,
     .head_dim = 128, .ffn = 9216, .vocab = 256000, .ctx = 4096, .eps = 1e-5, .rope_base = 10000, .rotary_dim = 64},
    {.name = "tiny-nemotron", .family = "nemotron", .layers = 2, .hidden = 256, .heads = 4, .kv_heads = 2,
     .head_dim = 64, .ffn = 512, .vocab = 512, .ctx = 64, .eps = 1e-5, .rope_base = 10000, .rotary_dim = 32,
     .tiny = true},
    /* qwen2.5 (Qwen/Qwen2.5-7B: biases on the q, k and v products). */
    {.name = "qwen2.5-7b", .family = "qwen2.5", .layers = 28, .hidden = 3584, .heads = 28, .kv_heads = 4,
     .head_dim = 128, .ffn = 18944, .vocab = 152064, .ctx = 4096, .eps = 1e-6, .rope_base = 1e6},
    {.name = "tiny-qwen2.5", .family = "qwen2.5", .layers = 2, .hidden = 256, .heads = 4, .kv_heads = 2,
     .head_dim = 64, .ffn = 512, .vocab = 512, .ctx = 64, .eps = 1e-6, .rope_base = 1e6, .tiny = true},
    /* granite (ibm-granite/granite-3.1-8b-instruct: embedding ×12, attention logits ×1/128, each branch ×0.22
     * before its residual add, logits ÷16, a tied LM head). */
    {.name = "granite-3.1-8b", .family = "granite", .layers = 40, .hidden = 4096, .heads = 32, .kv_heads = 8,
     .head_dim = 128, .ffn = 12800, .vocab = 49155, .ctx = 4096, .eps = 1e-5, .rope_base = 1e7,
     .query_scale = 0.0078125, .tied = true, .embed_mult = 12, .residual_mult = 0.22, .logit_scale = 16},
    {.name = "tiny-granite", .family = "granite", .layers = 2, .hidden = 256, .heads = 4, .kv_heads = 2,
     .head_dim = 64, .ffn = 512, .vocab = 512, .ctx = 64, .eps = 1e-5, .rope_base = 1e7, .query_scale = 0.015625,
     .tied = true, .tiny = true, .embed_mult = 12, .residual_mult = 0.22, .logit_scale = 8},
    /* minicpm (openbmb/MiniCPM-2B-sft-bf16: scale_emb 12, each branch ×scale_depth/√layers = 1.4/√40, the final
     * norm's output ÷(hidden/dim_model_base) = 2304/256 before the tied LM head). */
    {.name = "minicpm-2b", .family = "minicpm", .layers = 40, .hidden = 2304, .heads = 36, .kv_heads = 36,
     .head_dim = 64, .ffn = 5760, .vocab = 122753, .ctx = 4096, .eps = 1e-5, .rope_base = 10000, .tied = true,
     .embed_mult = 12, .residual_mult = 0.22135943621178653, .head_divisor = 9},
    {.name = "tiny-minicpm", .family = "minicpm", .layers = 2, .hidden = 256, .heads = 4, .kv_heads = 4,
     .head_dim = 64, .ffn = 512, .vocab = 512, .ctx = 64, .eps = 1e-5, .rope_base = 10000, .tied = true,
     .tiny = true, .embed_mult = 12, .residual_mult = 0.9899494936611664, .head_divisor = 4},
    /* deepseek: head_dim is qk_nope_head_dim; the logit scale is 1/sqrt(nope + rope) times YaRN's mscale squared
     * (0.1 · mscale_all_dim · ln(factor 40) + 1); ffn is the first dense layers' width; shared_ffn the shared experts'
     * count times moe_intermediate_size. */
    {.name = "deepseek-v2-lite", .family = "deepseek", .layers = 27, .hidden = 2048, .heads = 16, .kv_heads = 16,
     .head_dim = 128, .ffn = 10944, .vocab = 102400, .experts = 64, .top_k = 6, .expert_ffn = 1408, .ctx = 4096,
     .eps = 1e-6, .rope_base = 10000, .query_scale = QS_V2_LITE, .deepseek = {.kv_lora = 512, .rope_dim = 64,
     .v_head_dim = 128, .shared_ffn = 2 * 1408, .dense_layers = 1}, .routing = {.no_renorm = true, .scale = 1.0},
     .rope_scaling = YARN(40, 4096, true, false, 0)},
    {.name = "deepseek-v3", .family = "deepseek", .layers = 61, .hidden = 7168, .heads = 128, .kv_heads = 128,
     .head_dim = 128, .ffn = 18432, .vocab = 129280, .experts = 256, .top_k = 8, .expert_ffn = 2048, .ctx = 4096,
     .eps = 1e-6, .rope_base = 10000, .query_scale = QS_V3, .deepseek = {.q_lora = 1536, .kv_lora = 512,
     .rope_dim = 64, .v_head_dim = 128, .shared_ffn = 2048, .dense_layers = 3}, .routing = ROUTING_V3(8, 4),
     .rope_scaling = YARN(40, 4096, true, false, 0)},
    {.name = "tiny-deepseek", .family = "deepseek", .layers = 3, .hidden = 256, .heads = 4, .kv_heads = 4,
     .head_dim = 64, .ffn = 512, .vocab = 512, .experts = 8, .top_k = 2, .expert_ffn = 256, .ctx = 64, .eps = 1e-6,
     .rope_base = 10000, .query_scale = QS_TINY_DEEPSEEK, .tiny = true, .deepseek = {.q_lora = 256, .kv_lora = 256,
     .rope_dim = 64, .v_head_dim = 64, .shared_ffn = 256, .dense_layers = 1}, .routing = ROUTING_V3(4, 2),
     .rope_scaling = YARN(4, 16, true, false, 0)},
    /* gpt-oss (openai/gpt-oss-20b's config.json: 24 layers of 64 query heads and 8 kv heads of 64 over a 2880-wide
     * stream, biases on q/k/v/o, a sink a head, a 128-row sliding window on even layers (layer_types), 32 experts of
     * 2880, 4 a token, router and expert biases, the clamped SwiGLU of alpha 1.702 and swiglu_limit 7, rope_theta
     * 150000 with YaRN (factor 32 over 4096), an untied LM head over 201088 tokens). */
    {.name = "gpt-oss-20b", .family = "gpt-oss", .layers = 24, .hidden = 2880, .heads = 64, .kv_heads = 8,
     .head_dim = 64, .vocab = 201088, .experts = 32, .top_k = 4, .expert_ffn = 2880, .ctx = 4096, .window = 128,
     .eps = 1e-5, .rope_base = 150000, .swiglu_alpha = 1.702, .swiglu_limit = 7,
     .rope_scaling = YARN(32, 4096, false, true, 1.3465735902799727)},
    /* tiny-gpt-oss keeps every structural feature: q wider than the stream, grouped kv heads, a window on layer 0
     * only, sinks, every bias, the clamped experts and their routing; YaRN by 4 over 16 positions, so 24 tokens
     * pass the original context, its correction range truncated as llama.cpp computes it (gpt-oss-20b's is not). */
    {.name = "tiny-gpt-oss", .family = "gpt-oss", .layers = 2, .hidden = 256, .heads = 8, .kv_heads = 2,
     .head_dim = 64, .vocab = 512, .experts = 8, .top_k = 2, .expert_ffn = 256, .ctx = 64, .window = 16,
     .eps = 1e-5, .rope_base = 150000, .tiny = true, .swiglu_alpha = 1.702, .swiglu_limit = 7,
     .rope_scaling = YARN(4, 16, true, true, 1.138629436111989)},
    /* olmo2 (allenai/OLMo-2-1124-7B and -13B's config.json: full multi-head attention, q and k RMS-normed whole over
     * heads × head_dim, the attention and FFN outputs RMS-normed before their residual adds and no pre-norm, an
     * untied LM head over 100352 tokens, rope_theta 500000, a context of 4096). */
    {.name = "olmo2-7b", .family = "olmo2", .layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 32,
     .head_dim = 128, .ffn = 11008, .vocab = 100352, .ctx = 4096, .eps = 1e-6, .rope_base = 500000},
    {.name = "olmo2-13b", .family = "olmo2", .layers = 40, .hidden = 5120, .heads = 40, .kv_heads = 40,
     .head_dim = 128, .ffn = 13824, .vocab = 100352, .ctx = 4096, .eps = 1e-6, .rope_base = 500000},
    /* tiny-olmo2 keeps every structural feature: kv heads as many as the query heads (so the q and k norms are one
     * width), q as wide as the stream, post-norms only, an untied head. */
    {.name = "tiny-olmo2", .family = "olmo2", .layers = 2, .hidden = 256, .heads = 4, .kv_heads = 4, .head_dim = 64,
     .ffn = 512, .vocab = 512, .ctx = 64, .eps = 1e-6, .rope_base = 500000, .tiny = true},
};

#define ZOO_COUNT ((int)(sizeof zoo / sizeof zoo[0]))

int models_count(void) { return ZOO_COUNT; }

const struct models_config *models_get(int i) { return i >= 0 && i < ZOO_COUNT ? &zoo[i] : NULL; }

const struct models_config *models_find(const char *name)
{
    for (int i = 0; name && i < ZOO_COUNT; i++)
        if (strcmp(zoo[i].name, name) == 0)
            return &zoo[i];
    return NULL;
}

/* ── Modes ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* The modes by text: a kind and whether it takes `:N`. */
static const struct {
    const char *name;
    enum models_mode_kind kind;
    bool counted;
} mode_table[] = {
    {"decode", MODELS_DECODE, false},
    {"prefill", MODELS_PREFILL, true},
    {"batch", MODELS_BATCH, true},
};

#define MODE_COUNT ((int)(sizeof mode_table / sizeof mode_table[0]))

/* The count after a mode's colon: decimal digits only, 1..MODELS_MAX_ROWS; -1 otherwise. */
static int32_t parse_count(const char *s)
{
    int64_t n = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        n = n * 10 + (*s - '0');
        if (n > MODELS_MAX_ROWS)
            return -1;
    }
    return n >= 1 ? (int32_t)n : -1;
}

int models_parse_mode(const char *s, struct models_mode *m, char err[IR_ERR_LEN])
{
    if (!s)
        s = "";
    for (int i = 0; i < MODE_COUNT; i++) {
        size_t len = strlen(mode_table[i].name);
        if (strncmp(s, mode_table[i].name, len) != 0)
            continue;
        const char *rest = s + len;
        if (!mode_table[i].counted && *rest == '\0') {
            m->kind = mode_table[i].kind;
            m->n = 1;
            return 0;
        }
        if (mode_table[i].counted && *rest == ':') {
            int32_t n = parse_count(rest + 1);
            if (n < 0) {
                snprintf(err, IR_ERR_LEN, "bad mode '%.64s': N must be a whole number from 1 to %d", s,
                         MODELS_MAX_ROWS);
                return 1;
            }
            m->kind = mode_table[i].kind;
            m->n = n;
            return 0;
        }
    }
    snprintf(err, IR_ERR_LEN, "bad mode '%.64s': expected decode, prefill:N or batch:N", s);
    return 1;
}

void models_mode_name(struct models_mode m, char buf[32])
{
    for (int i = 0; i < MODE_COUNT; i++) {
        if (mode_table[i].kind != m.kind)
            continue;
        if (mode_table[i].counted)
            snprintf(buf, 32, "%s:%d", mode_table[i].name, (int)m.n);
        else
            snprintf(buf, 32, "%s", mode_table[i].name);
        return;
    }
    snprintf(buf, 32, "unknown");
}

struct models_options models_default_options(void)
{
    struct models_options o;
    memset(&o, 0, sizeof o);
    o.mode.kind = MODELS_DECODE;
    o.mode.n = 1;
    o.layers = 0;
    o.weights = IR_FMT_Q8_0;
    o.ctx = 0;
    return o;
}
