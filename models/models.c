/* models/models.c — the model table and the step modes. */
#include "models/models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The zoo: published dimensions of real models with the context the zoo allots them, and one tiny configuration a
 * family for evaluation (every contracted width a multiple of 256, so every block format applies). Adding a model is
 * one row. Fields: name, family, layers, hidden, heads, kv_heads, head_dim, ffn, vocab, experts, top_k, expert_ffn,
 * ctx, window, eps, rope_base, attn_softcap, final_softcap, query_scale, tied, tiny, and deepseek's constants. */
/* deepseek's logit scales: (0.1 · mscale_all_dim · ln 40 + 1)² / sqrt(192); mscale_all_dim 0.707 (V2-Lite), 1 (V3). */
#define QS_V2_LITE 0.11472138679292612
#define QS_V3 0.1352337788608801

static const struct models_config zoo[] = {
    {"llama3.2-1b", "llama", 16, 2048, 32, 8, 64, 8192, 128256, 0, 0, 0, 4096, 0, 1e-5, 500000, 0, 0, 0, true, false,
     {0}},
    {"llama3-8b", "llama", 32, 4096, 32, 8, 128, 14336, 128256, 0, 0, 0, 4096, 0, 1e-5, 500000, 0, 0, 0, false,
     false, {0}},
    {"qwen3-0.6b", "qwen3", 28, 1024, 16, 8, 128, 3072, 151936, 0, 0, 0, 4096, 0, 1e-6, 1e6, 0, 0, 0, true, false, {0}},
    {"qwen3-8b", "qwen3", 36, 4096, 32, 8, 128, 12288, 151936, 0, 0, 0, 4096, 0, 1e-6, 1e6, 0, 0, 0, false, false, {0}},
    {"qwen3-30b-a3b", "qwen3-moe", 48, 2048, 32, 4, 128, 0, 151936, 128, 8, 768, 4096, 0, 1e-6, 1e6, 0, 0, 0, false,
     false, {0}},
    {"gemma2-2b", "gemma2", 26, 2304, 8, 4, 256, 9216, 256000, 0, 0, 0, 8192, 4096, 1e-6, 10000, 50, 30, 0.0625, true,
     false, {0}},
    {"tiny-llama", "llama", 2, 256, 4, 2, 64, 512, 512, 0, 0, 0, 64, 0, 1e-5, 500000, 0, 0, 0, false, true, {0}},
    {"tiny-qwen3", "qwen3", 2, 256, 4, 2, 64, 512, 512, 0, 0, 0, 64, 0, 1e-6, 1e6, 0, 0, 0, false, true, {0}},
    {"tiny-qwen3-moe", "qwen3-moe", 2, 256, 4, 2, 64, 0, 512, 8, 2, 256, 64, 0, 1e-6, 1e6, 0, 0, 0, false, true,
     {0}},
    {"tiny-gemma2", "gemma2", 2, 256, 4, 2, 64, 512, 512, 0, 0, 0, 64, 16, 1e-6, 10000, 50, 30, 0.125, true, true, {0}},
    /* deepseek: head_dim is qk_nope_head_dim; the logit scale is 1/sqrt(nope + rope) times YaRN's mscale squared
     * (0.1 · mscale_all_dim · ln(factor 40) + 1); ffn is the first dense layers' width; shared_ffn the shared experts'
     * count times moe_intermediate_size. */
    {.name = "deepseek-v2-lite", .family = "deepseek", .layers = 27, .hidden = 2048, .heads = 16, .kv_heads = 16,
     .head_dim = 128, .ffn = 10944, .vocab = 102400, .experts = 64, .top_k = 6, .expert_ffn = 1408, .ctx = 4096,
     .eps = 1e-6, .rope_base = 10000, .query_scale = QS_V2_LITE, .deepseek = {.kv_lora = 512, .rope_dim = 64,
     .v_head_dim = 128, .shared_ffn = 2 * 1408, .dense_layers = 1}},
    {.name = "deepseek-v3", .family = "deepseek", .layers = 61, .hidden = 7168, .heads = 128, .kv_heads = 128,
     .head_dim = 128, .ffn = 18432, .vocab = 129280, .experts = 256, .top_k = 8, .expert_ffn = 2048, .ctx = 4096,
     .eps = 1e-6, .rope_base = 10000, .query_scale = QS_V3, .deepseek = {.q_lora = 1536, .kv_lora = 512,
     .rope_dim = 64, .v_head_dim = 128, .shared_ffn = 2048, .dense_layers = 3}},
    {.name = "tiny-deepseek", .family = "deepseek", .layers = 3, .hidden = 256, .heads = 4, .kv_heads = 4,
     .head_dim = 64, .ffn = 512, .vocab = 512, .experts = 8, .top_k = 2, .expert_ffn = 256, .ctx = 64, .eps = 1e-6,
     .rope_base = 10000, .tiny = true, .deepseek = {.q_lora = 256, .kv_lora = 256, .rope_dim = 64, .v_head_dim = 64,
     .shared_ffn = 256, .dense_layers = 1}},
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
