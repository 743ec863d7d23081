/* models/models.c — the model table and the step modes. */
#include "models/models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The zoo: published dimensions of real models with the context the zoo allots them, and one tiny configuration a
 * family for evaluation (every contracted width a multiple of 256, so every block format applies). Adding a model is
 * one row. Fields: name, family, layers, hidden, heads, kv_heads, head_dim, ffn, vocab, experts, top_k, expert_ffn,
 * ctx, window, eps, rope_base, attn_softcap, final_softcap, query_scale, tied, tiny. */
/* The rows before the families' own fields end (full_every on) leave those fields zero: none of their parts. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct models_config zoo[] = {
    {"llama3.2-1b", "llama", 16, 2048, 32, 8, 64, 8192, 128256, 0, 0, 0, 4096, 0, 1e-5, 500000, 0, 0, 0, true, false},
    {"llama3-8b", "llama", 32, 4096, 32, 8, 128, 14336, 128256, 0, 0, 0, 4096, 0, 1e-5, 500000, 0, 0, 0, false,
     false},
    {"qwen3-0.6b", "qwen3", 28, 1024, 16, 8, 128, 3072, 151936, 0, 0, 0, 4096, 0, 1e-6, 1e6, 0, 0, 0, true, false},
    {"qwen3-8b", "qwen3", 36, 4096, 32, 8, 128, 12288, 151936, 0, 0, 0, 4096, 0, 1e-6, 1e6, 0, 0, 0, false, false},
    {"qwen3-30b-a3b", "qwen3-moe", 48, 2048, 32, 4, 128, 0, 151936, 128, 8, 768, 4096, 0, 1e-6, 1e6, 0, 0, 0, false,
     false},
    {"gemma2-2b", "gemma2", 26, 2304, 8, 4, 256, 9216, 256000, 0, 0, 0, 8192, 4096, 1e-6, 10000, 50, 30, 0.0625, true,
     false},
    {"tiny-llama", "llama", 2, 256, 4, 2, 64, 512, 512, 0, 0, 0, 64, 0, 1e-5, 500000, 0, 0, 0, false, true},
    {"tiny-qwen3", "qwen3", 2, 256, 4, 2, 64, 512, 512, 0, 0, 0, 64, 0, 1e-6, 1e6, 0, 0, 0, false, true},
    {"tiny-qwen3-moe", "qwen3-moe", 2, 256, 4, 2, 64, 0, 512, 8, 2, 256, 64, 0, 1e-6, 1e6, 0, 0, 0, false, true},
    {"tiny-gemma2", "gemma2", 2, 256, 4, 2, 64, 512, 512, 0, 0, 0, 64, 16, 1e-6, 10000, 50, 30, 0.125, true, true},
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
     .embed_mult = 12, .residual_mult = 0.221359436211787, .head_divisor = 9},
    {.name = "tiny-minicpm", .family = "minicpm", .layers = 2, .hidden = 256, .heads = 4, .kv_heads = 4,
     .head_dim = 64, .ffn = 512, .vocab = 512, .ctx = 64, .eps = 1e-5, .rope_base = 10000, .tied = true,
     .tiny = true, .embed_mult = 12, .residual_mult = 0.98994949366117, .head_divisor = 4},
};
#pragma GCC diagnostic pop

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
