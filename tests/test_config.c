/* tests/test_config.c — lifting a Hugging Face config.json (models/config.c): every config in tests/data/configs
 * reads to its zoo row field for field and lifts to the same graph (same sha256 of its text) in decode, prefill:8
 * and batch:4; the Transformers defaults a file leaves out; and every refusal (unknown architecture, missing field,
 * wrong type, impossible value, bad JSON, empty file, a directory) with its file:line:col and field. Where the zoo
 * simplifies a published config (its context, rotary scaling, routing, unlifted parts), both lifts share the
 * simplification and the digests agree; docs/config.md lists each departure. */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include "check.h"
#include "models/models.h"

#include <dirent.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CONFIGS "tests/data/configs"

/* The sha256 of g's canonical text as hex (empty when g is NULL). */
static void graph_digest(const struct ir_graph *g, char hex[65])
{
    hex[0] = '\0';
    size_t len;
    char *text = g ? ir_print(g, &len) : NULL;
    unsigned char md[32];
    unsigned int n = 0;
    if (text && EVP_Digest(text, len, md, &n, EVP_sha256(), NULL) == 1)
        for (unsigned int i = 0; i < n; i++)
            snprintf(hex + 2 * i, 3, "%02x", md[i]);
    free(text);
}

/* The digest of c lifted in `mode` (empty when the lift fails, with a failed check). */
static void lift_digest(const struct models_config *c, const char *mode, char hex[65])
{
    char err[IR_ERR_LEN];
    struct models_options o = models_default_options();
    models_parse_mode(mode, &o.mode, err);
    struct ir_graph *g = models_lift(c, &o, err);
    CHECKF(g != NULL, "%s %s: %s", c->name, mode, err);
    graph_digest(g, hex);
    ir_graph_free(g);
}

/* Whether two configurations agree in every field (names and families as strings). */
static bool same_config(const struct models_config *a, const struct models_config *b)
{
#define SAME(f) (a->f == b->f)
    bool dims = SAME(layers) && SAME(hidden) && SAME(heads) && SAME(kv_heads) && SAME(head_dim) && SAME(ffn) &&
                SAME(vocab) && SAME(experts) && SAME(top_k) && SAME(expert_ffn) && SAME(ctx) && SAME(window);
    bool consts = SAME(eps) && SAME(rope_base) && SAME(attn_softcap) && SAME(final_softcap) && SAME(query_scale) &&
                  SAME(tied) && SAME(tiny);
    bool ds = SAME(deepseek.q_lora) && SAME(deepseek.kv_lora) && SAME(deepseek.rope_dim) &&
              SAME(deepseek.v_head_dim) && SAME(deepseek.shared_ffn) && SAME(deepseek.dense_layers);
    bool rest = SAME(full_every) && SAME(lin_k_heads) && SAME(lin_v_heads) && SAME(lin_dk) && SAME(lin_dv) &&
                SAME(conv_taps) && SAME(rotary_dim) && SAME(shared_ffn) && SAME(embed_mult) &&
                SAME(residual_mult) && SAME(logit_scale) && SAME(head_divisor);
    bool routing = SAME(routing.sigmoid) && SAME(routing.no_renorm) && SAME(routing.correction) &&
                   SAME(routing.groups) && SAME(routing.topk_groups) && SAME(routing.scale);
#define SAME_OPT(f) (SAME(rope_scaling.f.has) && SAME(rope_scaling.f.v))
    bool rope = SAME(rope_scaling.kind) && SAME_OPT(factor) && SAME(rope_scaling.orig) && SAME_OPT(low_freq) &&
                SAME_OPT(high_freq) && SAME_OPT(beta_fast) && SAME_OPT(beta_slow) && SAME(rope_scaling.truncate) &&
                SAME_OPT(magnitude);
#undef SAME_OPT
#undef SAME
    return dims && consts && ds && rest && routing && rope && strcmp(a->name, b->name) == 0 && strcmp(a->family, b->family) == 0;
}

/* Every zoo model's config: read field for field as its row, lifted to the same graph in three modes. */
static void test_zoo_configs(void)
{
    static const char *const modes[] = {"decode", "prefill:8", "batch:4"};
    for (int m = 0; m < models_count(); m++) {
        const struct models_config *z = models_get(m);
        char path[512], err[IR_ERR_LEN];
        snprintf(path, sizeof path, CONFIGS "/%s.json", z->name);
        struct models_config *c = models_read_config(path, err);
        CHECKF(c != NULL, "%s", err);
        if (!c)
            continue;
        CHECKF(same_config(c, z), "%s: the config reads other than the zoo row", z->name);
        for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
            char a[65], b[65];
            lift_digest(c, modes[k], a);
            lift_digest(z, modes[k], b);
            CHECKF(a[0] && strcmp(a, b) == 0, "%s %s: config %s, zoo %s", z->name, modes[k], a, b);
        }
        models_config_free(c);
    }
}

/* Every file in tests/data/configs is a zoo model's. */
static void test_no_stray_configs(void)
{
    DIR *dir = opendir(CONFIGS);
    CHECK(dir != NULL);
    int files = 0;
    for (struct dirent *e; dir && (e = readdir(dir));) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(n - 5), e->d_name);
        CHECKF(models_find(name) != NULL, "%s is no zoo model's config", e->d_name);
        files++;
    }
    if (dir)
        closedir(dir);
    CHECKF(files == models_count(), "%d configs for %d zoo models", files, models_count());
}

/* A config parsed from text named t.json; NULL with err. */
static struct models_config *parse(const char *text, char err[IR_ERR_LEN])
{
    return models_parse_config(text, strlen(text), "t.json", "t", err);
}

/* What a class's defaults give a llama config that states only its sizes. */
static void test_defaults(void)
{
    char err[IR_ERR_LEN];
    struct models_config *c = parse("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": 256,\n"
                                    " \"num_attention_heads\": 4, \"vocab_size\": 512, \"intermediate_size\": 512}",
                                    err);
    CHECKF(c != NULL, "%s", err);
    if (c) {
        CHECK_STR(c->family, "llama");
        CHECK(c->kv_heads == 4);          /* num_key_value_heads None: the heads */
        CHECK(c->head_dim == 64);         /* head_dim None: hidden / heads */
        CHECK(c->eps == 1e-6);            /* LlamaConfig's rms_norm_eps */
        CHECK(c->rope_base == 10000);     /* its rope_theta */
        CHECK(!c->tied);                  /* its tie_word_embeddings */
        CHECK(c->ctx == 2048);            /* its max_position_embeddings, below the zoo's 4096 */
        CHECK(c->tiny);                   /* under 2^24 parameters */
        CHECK_STR(c->name, "t");
    }
    models_config_free(c);
    /* Gemma2Config ties the head and defaults its window, soft caps and logit scale; null caps mean none. */
    c = parse("{\"architectures\": [\"Gemma2ForCausalLM\"], \"num_hidden_layers\": 2, \"hidden_size\": 256,\n"
              " \"num_attention_heads\": 4, \"vocab_size\": 512, \"intermediate_size\": 512,\n"
              " \"final_logit_softcapping\": null}",
              err);
    CHECKF(c != NULL, "%s", err);
    if (c) {
        CHECK(c->tied && c->window == 4096 && c->attn_softcap == 50 && c->final_softcap == 0);
        CHECK(c->head_dim == 256 && c->kv_heads == 4 && c->query_scale == 0.0625);
        CHECK(c->ctx == 8192); /* two windows of 4096, within max_position_embeddings 8192 */
    }
    models_config_free(c);
    /* Olmo2Config: rms_norm_eps 1e-5, rope_theta 10000, an untied head, 2048 positions, kv heads the heads. */
    c = parse("{\"model_type\": \"olmo2\", \"num_hidden_layers\": 2, \"hidden_size\": 256,\n"
              " \"num_attention_heads\": 4, \"vocab_size\": 512, \"intermediate_size\": 512}",
              err);
    CHECKF(c != NULL, "%s", err);
    if (c) {
        CHECK_STR(c->family, "olmo2");
        CHECK(c->eps == 1e-5 && c->rope_base == 10000 && !c->tied && c->ctx == 2048);
        CHECK(c->kv_heads == 4 && c->head_dim == 64 && c->tiny);
    }
    models_config_free(c);
}

/* A refusal: text parsed as t.json fails with exactly `want` as its message. */
static void refused(const char *text, size_t len, const char *want)
{
    char err[IR_ERR_LEN] = "";
    struct models_config *c = models_parse_config(text, len, "t.json", "t", err);
    CHECKF(c == NULL && strcmp(err, want) == 0, "got '%s', wanted '%s'", c ? "(read)" : err, want);
    models_config_free(c);
}
#define REFUSED(text, want) refused(text, sizeof text - 1, want)

/* The sizes of a valid tiny llama, after which a test's own members follow. */
#define LLAMA "{\"architectures\": [\"LlamaForCausalLM\"],\n \"num_hidden_layers\": 2, \"hidden_size\": 256,\n" \
              " \"vocab_size\": 512, \"intermediate_size\": 512,\n"

/* The sizes of a valid tiny gpt-oss, after which a test's own members follow. */
#define GPT_OSS "{\"architectures\": [\"GptOssForCausalLM\"],\n \"num_hidden_layers\": 2, \"hidden_size\": 256,\n" \
                " \"vocab_size\": 512, \"num_attention_heads\": 8, \"num_local_experts\": 8, \"num_experts_per_tok\": 2,\n" \
                " \"intermediate_size\": 256,\n"

/* Unknown families, missing fields, wrong types and impossible values: each at its field's line:col. */
static void test_field_errors(void)
{
    REFUSED("{\n  \"architectures\": [\"FooForCausalLM\"]\n}",
            "t.json:2:21: architectures: unknown architecture 'FooForCausalLM'; fusecheck reads LlamaForCausalLM "
            "Qwen3ForCausalLM Qwen3MoeForCausalLM Gemma2ForCausalLM Qwen3NextForCausalLM NemotronForCausalLM "
            "Qwen2ForCausalLM GraniteForCausalLM MiniCPMForCausalLM DeepseekV2ForCausalLM DeepseekV3ForCausalLM "
            "GptOssForCausalLM Olmo2ForCausalLM");
    /* gpt-oss lifts its attention biases, and its windows on the even layers. */
    REFUSED(GPT_OSS " \"attention_bias\": false}", "t.json:5:20: attention_bias: expected true (gpt-oss lifts its biases)");
    REFUSED(GPT_OSS " \"layer_types\": [\"full_attention\", \"sliding_attention\"]}",
            "t.json:5:18: layer_types: expected \"sliding_attention\" for layer 0 (even layers slide)");
    /* olmo2 lifts no attention biases and a SiLU-gated FFN. */
    REFUSED("{\"architectures\": [\"Olmo2ForCausalLM\"], \"num_hidden_layers\": 2, \"hidden_size\": 256,\n"
            " \"num_attention_heads\": 4, \"vocab_size\": 512, \"intermediate_size\": 512, \"attention_bias\": true}",
            "t.json:2:91: attention_bias: expected false (fusecheck lifts no other), got true");
    REFUSED("{\"model_type\": \"bert\"}", "t.json:1:16: model_type: unknown model_type 'bert'");
    REFUSED("{\"hidden_size\": 8}", "t.json:1:1: architectures: missing (and no model_type); expected "
                                    "[\"...ForCausalLM\"]");
    REFUSED("{\"architectures\": []}", "t.json:1:19: architectures: expected an array of one or more names");
    REFUSED("{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"qwen3\"}",
            "t.json:1:55: model_type: expected \"llama\" for LlamaForCausalLM");
    REFUSED(LLAMA " \"rope_theta\": 1}", "t.json:1:1: num_attention_heads: missing; a llama configuration needs it");
    REFUSED(LLAMA " \"num_attention_heads\": \"4\"}",
            "t.json:4:25: num_attention_heads: expected a whole number from 1 to 16777216, got a string");
    REFUSED(LLAMA " \"num_attention_heads\": 0}",
            "t.json:4:25: num_attention_heads: expected a whole number from 1 to 16777216, got 0");
    REFUSED(LLAMA " \"num_attention_heads\": 4.0}",
            "t.json:4:25: num_attention_heads: expected a whole number from 1 to 16777216, got a number");
    REFUSED(LLAMA " \"num_attention_heads\": null}",
            "t.json:4:25: num_attention_heads: expected a whole number from 1 to 16777216, got null");
    REFUSED(LLAMA " \"num_attention_heads\": 99999999999999999999}",
            "t.json:4:25: num_attention_heads: expected a whole number from 1 to 16777216, got an integer past 64 "
            "bits");
    REFUSED(LLAMA " \"num_attention_heads\": 3}",
            "t.json:4:25: num_attention_heads: expected a divisor of hidden_size (256) when head_dim is not given");
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"num_key_value_heads\": 3}",
            "t.json:4:51: num_key_value_heads: expected a divisor of num_attention_heads (4), got 3");
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"rms_norm_eps\": -1}",
            "t.json:4:44: rms_norm_eps: expected a positive number, got -1");
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"tie_word_embeddings\": 1}",
            "t.json:4:51: tie_word_embeddings: expected true or false, got an integer");
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"hidden_act\": \"gelu\"}",
            "t.json:4:42: hidden_act: expected \"silu\" (the one fusecheck lifts), got \"gelu\"");
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"attention_bias\": true}",
            "t.json:4:46: attention_bias: expected false (fusecheck lifts no other), got true");
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"num_hidden_layers\": 3}",
            "t.json:4:49: num_hidden_layers: given twice (first at 2:23); expected each key once");
    REFUSED("{\"model_type\": \"nemotron\", \"num_hidden_layers\": 2, \"hidden_size\": 256, \"vocab_size\": 512,\n"
            " \"intermediate_size\": 512, \"num_attention_heads\": 4, \"partial_rotary_factor\": 0.3}",
            "t.json:2:79: partial_rotary_factor: expected a fraction of head_dim (64) that is an even width, got "
            "0.3");
    REFUSED("{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 2, \"hidden_size\": 256, \"vocab_size\": 512,\n"
            " \"num_attention_heads\": 4, \"num_experts\": 2, \"num_experts_per_tok\": 3,\n"
            " \"moe_intermediate_size\": 256}",
            "t.json:2:69: num_experts_per_tok: expected at most the 2 experts, got 3");
    REFUSED("{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 2, \"hidden_size\": 256, \"vocab_size\": 512,\n"
            " \"num_attention_heads\": 4, \"num_experts\": 2, \"num_experts_per_tok\": 1,\n"
            " \"moe_intermediate_size\": 256, \"mlp_only_layers\": [1]}",
            "t.json:3:51: mlp_only_layers: expected [] (every layer alike), got an array with elements");
    REFUSED("[1, 2]", "t.json:1:1: expected a JSON object (a config.json), got an array");
}

/* The sizes of a valid tiny deepseek-v3 of 8 experts, 2 a token, after which a test's own members follow. */
#define DSV3 "{\"architectures\": [\"DeepseekV3ForCausalLM\"],\n \"num_hidden_layers\": 4, \"hidden_size\": 256,\n" \
             " \"vocab_size\": 512, \"num_attention_heads\": 4, \"intermediate_size\": 512, \"n_routed_experts\": 8,\n" \
             " \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 256, \"qk_nope_head_dim\": 64,\n"          \
             " \"qk_rope_head_dim\": 64, \"kv_lora_rank\": 256, \"v_head_dim\": 64, \"num_key_value_heads\": 4,\n"
#define DSV2 "{\"architectures\": [\"DeepseekV2ForCausalLM\"],\n \"num_hidden_layers\": 2, \"hidden_size\": 256,\n" \
             " \"vocab_size\": 512, \"num_attention_heads\": 4, \"intermediate_size\": 512, \"n_routed_experts\": 8,\n" \
             " \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 256, \"qk_nope_head_dim\": 64,\n"          \
             " \"qk_rope_head_dim\": 64, \"kv_lora_rank\": 256, \"v_head_dim\": 64, \"num_key_value_heads\": 4,\n"

/* A config read without error (failing the suite with its message otherwise). */
static struct models_config *read_ok(const char *text)
{
    char err[IR_ERR_LEN] = "";
    struct models_config *c = models_parse_config(text, strlen(text), "t.json", "t", err);
    CHECKF(c != NULL, "%s", err);
    return c;
}

/* The routing fields: their Transformers defaults, what each family reads, and every value refused at its field. */
static void test_routing(void)
{
    /* Qwen3MoeConfig renormalises only when told (norm_topk_prob false by default); Qwen3NextConfig by default. */
    struct models_config *c = read_ok("{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 2, \"hidden_size\": 256,"
                                      " \"vocab_size\": 512, \"num_attention_heads\": 4, \"num_experts\": 8,"
                                      " \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 256}");
    CHECK(c && c->routing.no_renorm && !c->routing.sigmoid && !c->routing.correction && c->routing.groups == 0);
    models_config_free(c);
    /* DeepseekV3's defaults: n_group 8, topk_group 4, norm_topk_prob true, routed_scaling_factor 2.5. */
    c = read_ok(DSV3 " \"n_group\": 4, \"topk_group\": 2}");
    CHECK(c && c->routing.sigmoid && c->routing.correction && !c->routing.no_renorm && c->routing.groups == 4 &&
          c->routing.topk_groups == 2 && c->routing.scale == 2.5);
    models_config_free(c);
    c = read_ok(DSV3 " \"n_group\": 1, \"topk_group\": 1, \"norm_topk_prob\": false, \"routed_scaling_factor\": 1.5}");
    CHECK(c && c->routing.no_renorm && c->routing.groups == 1 && c->routing.scale == 1.5);
    models_config_free(c);
    /* DeepseekV2's defaults: greedy, softmax, not renormalised, routed_scaling_factor 1. */
    c = read_ok(DSV2 " \"n_group\": 1}");
    CHECK(c && !c->routing.sigmoid && !c->routing.correction && c->routing.no_renorm && c->routing.scale == 1.0);
    models_config_free(c);
    REFUSED(DSV3 " \"topk_group\": 2}", "t.json:1:1: n_group: expected a divisor of n_routed_experts (8) leaving two "
                                        "or more experts a group, got 8");
    REFUSED(DSV3 " \"n_group\": 3, \"topk_group\": 1}",
            "t.json:6:13: n_group: expected a divisor of n_routed_experts (8) leaving two or more experts a group, "
            "got 3");
    REFUSED(DSV3 " \"n_group\": 4, \"topk_group\": 5}",
            "t.json:6:30: topk_group: expected at most n_group (4) groups holding num_experts_per_tok (2) experts, "
            "got 5");
    REFUSED(DSV3 " \"n_group\": 4, \"topk_group\": 0}",
            "t.json:6:30: topk_group: expected a whole number from 1 to 16777216, got 0");
    REFUSED(DSV3 " \"n_group\": 4, \"topk_group\": 2, \"topk_method\": \"greedy\"}",
            "t.json:6:48: topk_method: expected \"noaux_tc\" (the one fusecheck lifts), got \"greedy\"");
    REFUSED(DSV3 " \"n_group\": 4, \"topk_group\": 2, \"scoring_func\": \"softmax\"}",
            "t.json:6:49: scoring_func: expected \"sigmoid\" (the one fusecheck lifts), got \"softmax\"");
    REFUSED(DSV3 " \"n_group\": 4, \"topk_group\": 2, \"routed_scaling_factor\": 0}",
            "t.json:6:58: routed_scaling_factor: expected a positive number, got 0");
    REFUSED(DSV3 " \"n_group\": 4, \"topk_group\": 2, \"norm_topk_prob\": 1}",
            "t.json:6:51: norm_topk_prob: expected true or false, got an integer");
    REFUSED(DSV2 " \"topk_method\": \"group_limited_greedy\"}",
            "t.json:6:17: topk_method: expected \"greedy\" (the one fusecheck lifts), got \"group_limited_greedy\"");
    REFUSED(DSV2 " \"norm_topk_prob\": true}",
            "t.json:6:20: norm_topk_prob: expected false (DeepseekV2's greedy routing weighs the chosen softmax "
            "scores as they are)");
}

/* The rotary scaling: each kind read as Transformers reads it (defaults, YaRN's magnitude from attention_factor or
 * mscale and mscale_all_dim, rope_parameters' base), and every field that would change the rotation refused when
 * fusecheck cannot honor it. */
static void test_rope_scaling(void)
{
    struct models_config *c = read_ok(LLAMA " \"num_attention_heads\": 4, \"rope_scaling\": {\"rope_type\": \"linear\","
                                      " \"factor\": 2}}");
    CHECK(c && c->rope_scaling.kind == IR_ROPESCALE_LINEAR && c->rope_scaling.factor.v == 2 &&
          !c->rope_scaling.magnitude.has);
    models_config_free(c);
    c = read_ok(LLAMA " \"num_attention_heads\": 4, \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 32,"
                " \"low_freq_factor\": 1, \"high_freq_factor\": 4, \"original_max_position_embeddings\": 8192}}");
    CHECK(c && c->rope_scaling.kind == IR_ROPESCALE_LLAMA3 && c->rope_scaling.orig == 8192 &&
          c->rope_scaling.low_freq.v == 1 && c->rope_scaling.high_freq.v == 4);
    models_config_free(c);
    /* YaRN: the original context defaults to max_position_embeddings, the betas to 32 and 1, truncate to true, the
     * magnitude to 0.1·ln(factor) + 1; mscale over mscale_all_dim replaces it. */
    c = read_ok(LLAMA " \"num_attention_heads\": 4, \"max_position_embeddings\": 64, \"rope_scaling\": {\"type\": "
                "\"yarn\", \"factor\": 4}}");
    CHECK(c && c->rope_scaling.kind == IR_ROPESCALE_YARN && c->rope_scaling.orig == 64 &&
          c->rope_scaling.beta_fast.v == 32 && c->rope_scaling.beta_slow.v == 1 && c->rope_scaling.truncate &&
          c->rope_scaling.magnitude.has && fabs(c->rope_scaling.magnitude.v - (0.1 * log(4.0) + 1)) < 1e-15);
    models_config_free(c);
    c = read_ok(LLAMA " \"num_attention_heads\": 4, \"max_position_embeddings\": 64, \"rope_scaling\": {\"type\": "
                "\"yarn\", \"factor\": 4, \"mscale\": 0.5, \"mscale_all_dim\": 1, \"truncate\": false}}");
    CHECK(c && !c->rope_scaling.truncate &&
          fabs(c->rope_scaling.magnitude.v - (0.05 * log(4.0) + 1) / (0.1 * log(4.0) + 1)) < 1e-15);
    models_config_free(c);
    c = read_ok(LLAMA " \"num_attention_heads\": 4, \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": "
                "1e6}}");
    CHECK(c && c->rope_scaling.kind == IR_ROPESCALE_NONE && c->rope_base == 1e6);
    models_config_free(c);
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"rope_scaling\": {\"rope_type\": \"dynamic\", \"factor\": 2}}",
            "t.json:4:58: rope_scaling.rope_type: expected default, linear, llama3 or yarn (fusecheck computes no "
            "other rotary scaling), got 'dynamic'");
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"rope_scaling\": {\"rope_type\": \"longrope\", \"short_factor\": [1]}}",
            "t.json:4:86: rope_scaling.short_factor: a field fusecheck does not read (it may change the rotation); "
            "expected only rope_scaling's known fields");
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"rope_scaling\": {\"factor\": 2}}",
            "t.json:4:44: rope_scaling: expected a rope_type (default, linear, llama3 or yarn)");
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"rope_scaling\": {\"rope_type\": \"linear\"}}",
            "t.json:4:44: rope_scaling: expected a factor for linear scaling");
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 0}}",
            "t.json:4:78: rope_scaling.factor: expected a number above zero, got one out of range");
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8}}",
            "t.json:4:44: rope_scaling: expected low_freq_factor for llama3's scaling");
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, "
            "\"low_freq_factor\": 4, \"high_freq_factor\": 4, \"original_max_position_embeddings\": 64}}",
            "t.json:4:123: rope_scaling.high_freq_factor: expected above low_freq_factor (4), got 4");
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"max_position_embeddings\": 64, \"rope_scaling\": {\"rope_type\": "
            "\"yarn\", \"factor\": 8, \"original_max_position_embeddings\": 16}}",
            "t.json:4:146: rope_scaling.factor: 8, but max_position_embeddings / original_max_position_embeddings "
            "is 4 (Transformers' versions take one or the other); expected them equal");
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 2, "
            "\"truncate\": 1}}",
            "t.json:4:91: rope_scaling.truncate: expected true or false, got an integer");
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2},"
            " \"rope_parameters\": {\"rope_type\": \"default\"}}",
            "t.json:4:101: rope_parameters: given beside rope_scaling; expected one of them");
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"rope_scaling\": [1]}",
            "t.json:4:44: rope_scaling: expected an object or null, got an array");
    REFUSED(LLAMA " \"num_attention_heads\": 4, \"rope_theta\": 10000, \"rope_parameters\": {\"rope_type\": "
            "\"default\", \"rope_theta\": 1e6}}",
            "t.json:4:107: rope_parameters.rope_theta: 1e+06, but rope_theta is 10000; expected one base");
}

/* A tied head (tie_word_embeddings): the lifted LM head is marked tied and evaluates with the embedding's stored
 * rows, byte for byte; an untied one keeps rows of its own. */
static void test_tied_head(void)
{
    static const char *const texts[2] = {
        LLAMA " \"num_attention_heads\": 4, \"tie_word_embeddings\": true}",
        LLAMA " \"num_attention_heads\": 4, \"tie_word_embeddings\": false}",
    };
    for (int k = 0; k < 2; k++) {
        struct models_config *c = read_ok(texts[k]);
        char err[IR_ERR_LEN] = "";
        struct models_options o = models_default_options();
        struct ir_graph *g = c ? models_lift(c, &o, err) : NULL;
        CHECKF(g != NULL, "%s", err);
        struct ir_values *v = g ? ir_values_new(g, 7, err) : NULL;
        ir_tid h = g ? ir_tensor_find(g, "output.weight", strlen("output.weight")) : IR_NONE;
        ir_tid e = g ? ir_tensor_find(g, "token_embd.weight", strlen("token_embd.weight")) : IR_NONE;
        struct ir_ckpt_rows hr, er;
        bool rows = v && h != IR_NONE && e != IR_NONE && ir_values_checkpoint(v, h, &hr) &&
                    ir_values_checkpoint(v, e, &er);
        CHECK(rows && hr.srows * hr.row_bytes == er.srows * er.row_bytes);
        bool same = rows && memcmp(hr.bytes, er.bytes, (size_t)(hr.srows * hr.row_bytes)) == 0;
        CHECKF(rows && g->tensors[h].tied == (k == 0) && same == (k == 0), "tie_word_embeddings %s: head %s, rows %s",
               k == 0 ? "true" : "false", rows && g->tensors[h].tied ? "tied" : "untied",
               same ? "the embedding's" : "its own");
        ir_values_free(v);
        ir_graph_free(g);
        models_config_free(c);
    }
}

/* Text that is not JSON: the first byte the grammar cannot take, at its line:col. */
static void test_syntax_errors(void)
{
    REFUSED("", "t.json:1:1: not JSON: expected a value (an object, an array, a string, a number, true, false or "
                "null), found the end of the file");
    REFUSED("  \n  ", "t.json:2:3: not JSON: expected a value (an object, an array, a string, a number, true, "
                      "false or null), found the end of the file");
    REFUSED("{\"a\": 1,\n \"b\": [1, 2,]\n}", "t.json:2:13: not JSON: expected a value (an object, an array, a "
                                             "string, a number, true, false or null), found ']'");
    REFUSED("{\"a\": 1,}", "t.json:1:9: not JSON: expected a key in double quotes, found '}'");
    REFUSED("{\"a\" 1}", "t.json:1:6: not JSON: expected ':' after the key, found '1'");
    REFUSED("{\"a\": 01}", "t.json:1:8: not JSON: expected ',' or '}', found '1'");
    REFUSED("{\"a\": 1.}", "t.json:1:9: not JSON: expected a digit, found '}'");
    REFUSED("{\"a\": tru}", "t.json:1:7: not JSON: expected a value (an object, an array, a string, a number, true, "
                            "false or null), found 't'");
    REFUSED("{\"a\": \"x\\q\"}", "t.json:1:10: not JSON: expected an escape: \\\" \\\\ \\/ \\b \\f \\n \\r \\t or "
                                 "\\uXXXX, found 'q'");
    REFUSED("{\"a\": \"x\n\"}", "t.json:1:9: not JSON: expected a control character written as an escape (\\n, \\t, "
                                "\\u00XX), found byte 0x0a");
    REFUSED("{\"a\": 1} x", "t.json:1:10: not JSON: expected the end of the file after the top object, found 'x'");
    REFUSED("{\"a\": \"b", "t.json:1:9: not JSON: expected a closing '\"', found the end of the file");
    refused("{\"a\":\0 1}", 9, "t.json:1:6: not JSON: expected a value (an object, an array, a string, a number, "
                                "true, false or null), found byte 0x00");
    char deep[600];
    memset(deep, '[', sizeof deep);
    refused(deep, sizeof deep, "t.json:1:258: not JSON: expected a value nested at most 256 deep, found '['");
}

/* Files: a directory, a missing file, a folder's config.json named after the folder. */
static void test_files(void)
{
    char err[IR_ERR_LEN];
    struct models_config *c = models_read_config(CONFIGS, err);
    CHECKF(c == NULL && strcmp(err, CONFIGS ":1:1: cannot read: Is a directory") == 0, "%s", err);
    c = models_read_config(CONFIGS "/no-such-model.json", err);
    CHECKF(c == NULL && strstr(err, "no-such-model.json:1:1: cannot read: No such file") != NULL, "%s", err);
    /* A folder's config.json is named after the folder (as a downloaded model's is). */
    char dir[] = "/tmp/fusecheck-config-XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(LLAMA " \"num_attention_heads\": 4}\n", f);
        fclose(f);
    }
    c = models_read_config(path, err);
    CHECKF(c && strcmp(c->name, strrchr(dir, '/') + 1) == 0, "%s", c ? c->name : err);
    models_config_free(c);
    remove(path);
    rmdir(dir);
}

int main(void)
{
    test_zoo_configs();
    test_no_stray_configs();
    test_defaults();
    test_field_errors();
    test_routing();
    test_rope_scaling();
    test_tied_head();
    test_syntax_errors();
    test_files();
    return check_done("test_config");
}
