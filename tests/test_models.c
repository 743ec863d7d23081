/* tests/test_models.c — the model zoo: the tables, modes and errors, every model lifted in every mode (valid, round
 * trip through the text format, the shapes the optimizer's rules look for), tiny models evaluated deterministically,
 * and tiny-llama and tiny-deepseek steps against plain implementations of the same networks. */
#include "check.h"
#include "models/models.h"
#include "rope_reference.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ── Helpers over a lifted graph ─────────────────────────────────────────────────────────────────────────── */

/* The tensor named `name`, or IR_NONE. */
static ir_tid find(const struct ir_graph *g, const char *name) { return ir_tensor_find(g, name, strlen(name)); }

/* The index of the first op whose result is t, or -1. */
static int producer(const struct ir_graph *g, ir_tid t)
{
    for (int i = 0; t != IR_NONE && i < g->nops; i++)
        if (g->ops[i].out == t)
            return i;
    return -1;
}

/* Whether op i reads t. */
static bool reads(const struct ir_graph *g, int i, ir_tid t)
{
    for (int k = 0; k < g->ops[i].nins; k++)
        if (g->ops[i].ins[k] == t)
            return true;
    return false;
}

/* The index of the first op after `after` that reads t, or -1. */
static int first_reader(const struct ir_graph *g, ir_tid t, int after)
{
    for (int i = after + 1; t != IR_NONE && i < g->nops; i++)
        if (reads(g, i, t))
            return i;
    return -1;
}

/* Number of ops of kind k. */
static int count_kind(const struct ir_graph *g, enum ir_kind k)
{
    int n = 0;
    for (int i = 0; i < g->nops; i++)
        n += g->ops[i].sym == IR_SYM_PRIM && g->ops[i].spec.kind == k;
    return n;
}

/* Whether op i is a primitive of kind k. */
static bool is_kind(const struct ir_graph *g, int i, enum ir_kind k)
{
    return i >= 0 && i < g->nops && g->ops[i].sym == IR_SYM_PRIM && g->ops[i].spec.kind == k;
}

/* A model lifted in `mode` with `layers` layers and weights fmt; NULL (with a failed check) on error. */
static struct ir_graph *lift(const char *model, const char *mode, int layers, enum ir_format fmt)
{
    char err[IR_ERR_LEN] = "";
    const struct models_config *c = models_find(model);
    struct models_options o = models_default_options();
    o.layers = layers;
    o.weights = fmt;
    CHECKF(c != NULL, "model %s", model);
    CHECKF(models_parse_mode(mode, &o.mode, err) == 0, "%s", err);
    struct ir_graph *g = c ? models_lift(c, &o, err) : NULL;
    CHECKF(g != NULL, "%s %s: %s", model, mode, err);
    return g;
}

/* ── The tables ──────────────────────────────────────────────────────────────────────────────────────────── */

/* Every model has a known family, a unique name, and sane dimensions; tiny ones fit evaluation. */
static void test_table(void)
{
    CHECK(models_count() >= 10);
    CHECK(models_family_count() == 12);
    for (int i = 0; i < models_count(); i++) {
        const struct models_config *c = models_get(i);
        CHECK(c != NULL && models_find(c->name) == c);
        bool family = false;
        for (int f = 0; f < models_family_count(); f++)
            family |= strcmp(models_family_name(f), c->family) == 0;
        CHECKF(family, "%s: family %s", c->name, c->family);
        CHECK(c->heads % c->kv_heads == 0 && c->head_dim % 2 == 0);
        if (!c->tiny)
            continue;
        int64_t inner = c->experts ? c->expert_ffn : c->ffn;
        CHECKF(c->layers >= 2 && c->ctx >= 64, "%s", c->name);
        CHECKF(c->hidden % 256 == 0 && (c->heads * c->head_dim) % 256 == 0 && inner % 256 == 0, "%s", c->name);
    }
    int tiny = 0;
    for (int f = 0; f < models_family_count(); f++) {
        char name[64];
        snprintf(name, sizeof name, "tiny-%s", models_family_name(f));
        const struct models_config *c = models_find(name);
        CHECKF(c && c->tiny, "%s", name);
        tiny += c != NULL;
    }
    CHECK(tiny == models_family_count());
    CHECK(models_get(-1) == NULL && models_get(models_count()) == NULL);
    CHECK(models_find("no-such-model") == NULL && models_find(NULL) == NULL);
    CHECK(models_family_name(models_family_count()) == NULL);
}

/* Parameter counts of the real models within 1% of their published sizes. qwen3-0.6b, llama3.2-1b and gemma2-2b tie
 * their LM head to the embedding: counted once (qwen3-0.6b would be ≈ 0.75e9 counting it twice). DeepSeek-V3's 671B
 * is its main model: the checkpoint's 685B adds the multi-token-prediction module (one more layer and its
 * projection, ≈ 14B), which the zoo does not lift. */
static void test_params(void)
{
    static const struct {
        const char *name;
        double published;
    } sizes[] = {
        {"llama3.2-1b", 1.24e9}, {"llama3-8b", 8.03e9},      {"qwen3-0.6b", 0.6e9},
        {"qwen3-8b", 8.2e9},     {"qwen3-30b-a3b", 30.5e9}, {"gemma2-2b", 2.6e9},
        {"qwen3-next-80b-a3b", 80e9}, {"minitron-4b", 4.19e9},    {"qwen2.5-7b", 7.61e9},
        {"granite-3.1-8b", 8.17e9},   {"minicpm-2b", 2.72e9},
        {"deepseek-v2-lite", 15.7e9}, {"deepseek-v3", 671e9},     {"gpt-oss-20b", 20.9e9},
        {"olmo2-7b", 7.30e9},         {"olmo2-13b", 13.7e9},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const struct models_config *c = models_find(sizes[i].name);
        CHECKF(c != NULL, "%s", sizes[i].name);
        if (!c)
            continue;
        double n = (double)models_param_count(c);
        CHECKF(fabs(n / sizes[i].published - 1) < 0.01, "%s: %.4g params, published %.4g", c->name, n,
               sizes[i].published);
    }
    /* Sizes too large to count, or no family: -1. */
    struct models_config huge = *models_find("tiny-qwen3-moe");
    huge.experts = huge.hidden = huge.expert_ffn = (int64_t)1 << 24;
    CHECK(models_param_count(&huge) == -1);
    huge.family = "none";
    CHECK(models_param_count(&huge) == -1 && models_param_count(NULL) == -1);
    /* More layers than a lift takes: no count (a GGUF file claiming 687,865,857 layers of a tiny width counted each
     * before it was refused: fuzz/findings/fuzz_gguf/lift-param-count-past-max-layers). */
    struct models_config deep = *models_find("tiny-gpt-oss");
    deep.layers = 687865857;
    CHECK(models_param_count(&deep) == -1);
    deep.layers = 1024;
    CHECK(models_param_count(&deep) > 0);
    const struct models_config *q = models_find("qwen3-0.6b");
    double twice = (double)(models_param_count(q) + q->vocab * q->hidden);
    CHECKF(fabs(twice / 0.75e9 - 1) < 0.01, "qwen3-0.6b with its head counted twice: %.4g", twice);
    /* The count agrees with the constants the lifted graph declares (less the rotary tables, a tied head once). */
    for (int i = 0; i < models_count(); i++) {
        const struct models_config *c = models_get(i);
        struct models_options o = models_default_options();
        char err[IR_ERR_LEN];
        struct ir_graph *g = models_lift(c, &o, err);
        CHECKF(g != NULL, "%s: %s", c->name, err);
        if (!g)
            continue;
        int64_t n = c->tied ? -c->vocab * c->hidden : 0;
        for (int t = 0; t < g->ntensors; t++)
            if (g->tensors[t].role == IR_ROLE_CONSTANT && strncmp(g->tensors[t].name, "rope.", 5) != 0)
                n += g->tensors[t].rows * g->tensors[t].cols;
        CHECKF(n == models_param_count(c), "%s: graph %lld, count %lld", c->name, (long long)n,
               (long long)models_param_count(c));
        ir_graph_free(g);
    }
}

/* Modes parse and print back; malformed ones are errors. */
static void test_modes(void)
{
    static const char *good[] = {"decode", "prefill:1", "prefill:8", "prefill:4096", "batch:4", "batch:16"};
    static const char *bad[] = {"",           "decod",      "decode:1",   "prefill",  "prefill:", "prefill:0",
                                "prefill:-1", "prefill:8x", "batch:4097", "batch: 4", "Batch:4",
                                "prefill:99999999999999999999"};
    char err[IR_ERR_LEN], buf[32];
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        struct models_mode m;
        CHECKF(models_parse_mode(good[i], &m, err) == 0, "%s", good[i]);
        models_mode_name(m, buf);
        const char *text = buf;
        CHECK_STR(text, good[i]);
    }
    struct models_mode m;
    CHECK(models_parse_mode("prefill:8", &m, err) == 0 && m.kind == MODELS_PREFILL && m.n == 8);
    CHECK(models_parse_mode("batch:3", &m, err) == 0 && m.kind == MODELS_BATCH && m.n == 3);
    CHECK(models_parse_mode("decode", &m, err) == 0 && m.kind == MODELS_DECODE && m.n == 1);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECKF(models_parse_mode(bad[i], &m, err) != 0, "'%s' parsed", bad[i]);
        CHECKF(strstr(err, "bad mode") != NULL, "'%s': %s", bad[i], err);
    }
}

/* Lifting fails, with a message naming the cause, on bad options and configurations. */
static void test_errors(void)
{
    char err[IR_ERR_LEN];
    const struct models_config *tiny = models_find("tiny-llama");
    struct models_options o = models_default_options();
    struct {
        const char *mode;
        int layers;
        int weights;
        int64_t ctx;
        const char *expect;
    } cases[] = {
        {"prefill:65", 0, IR_FMT_Q8_0, 0, "exceed the context"},
        {"batch:65", 0, IR_FMT_Q8_0, 0, "exceed the context"},
        {"prefill:9", 0, IR_FMT_Q8_0, 8, "exceed the context"},
        {"decode", 3, IR_FMT_Q8_0, 0, "layers 3 is out of range: model 'tiny-llama' has 2 layers (a count of 1..2, or all)"},
        {"decode", -1, IR_FMT_Q8_0, 0, "layers -1 is out of range"},
        {"decode", 0, IR_FMT_COUNT, 0, "unknown weights format"},
        {"decode", 0, -1, 0, "unknown weights format"},
        {"decode", 0, IR_FMT_Q8_0, -5, "context -5 is out of range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(models_parse_mode(cases[i].mode, &o.mode, err) == 0);
        o.layers = cases[i].layers;
        o.weights = (enum ir_format)cases[i].weights;
        o.ctx = cases[i].ctx;
        err[0] = '\0';
        struct ir_graph *g = models_lift(tiny, &o, err);
        CHECKF(g == NULL && strstr(err, cases[i].expect), "case %zu: %s", i, err);
        ir_graph_free(g);
    }
    /* A mode built by hand out of range. */
    o = models_default_options();
    o.mode.n = 0;
    o.mode.kind = MODELS_PREFILL;
    CHECK(models_lift(tiny, &o, err) == NULL && strstr(err, "bad mode"));
    o.mode.kind = (enum models_mode_kind)7;
    o.mode.n = 1;
    CHECK(models_lift(tiny, &o, err) == NULL && strstr(err, "bad mode"));
    /* A block format that does not divide a contracted width: hidden 96 takes q8_0 (32) but not q4_k (256). */
    struct models_config odd = *tiny;
    odd.name = "odd";
    odd.hidden = 96;
    o = models_default_options();
    struct ir_graph *g = models_lift(&odd, &o, err);
    CHECKF(g != NULL, "%s", err);
    ir_graph_free(g);
    o.weights = IR_FMT_Q4_K;
    CHECK(models_lift(&odd, &o, err) == NULL && strstr(err, "does not divide") && strstr(err, "q4_k"));
    odd.hidden = 256;
    odd.ffn = 500;
    CHECK(models_lift(&odd, &o, err) == NULL && strstr(err, "ffn (down input) = 500"));
    /* Configurations out of range or inconsistent; an unknown family; no model. */
    struct models_config bad = *tiny;
    bad.kv_heads = 3;
    o = models_default_options();
    CHECK(models_lift(&bad, &o, err) == NULL && strstr(err, "kv_heads"));
    bad = *tiny;
    bad.vocab = 0;
    CHECK(models_lift(&bad, &o, err) == NULL && strstr(err, "vocab 0 is out of range"));
    bad = *tiny;
    bad.family = "mamba";
    CHECK(models_lift(&bad, &o, err) == NULL && strstr(err, "unknown family 'mamba'"));
    CHECK(models_lift(NULL, &o, err) == NULL);
    /* A dimension too large for a tensor is an error, not an allocation. */
    bad = *tiny;
    bad.vocab = (int64_t)1 << 24;
    bad.hidden = (int64_t)1 << 24;
    bad.heads = bad.kv_heads = 1;
    bad.head_dim = 256;
    bad.ffn = 256;
    CHECK(models_lift(&bad, &o, err) == NULL && strstr(err, "out of range"));
    bad = *tiny;
    bad.layers = 5000;
    CHECK(models_lift(&bad, &o, err) == NULL && strstr(err, "layers 5000 is out of range"));
    /* A step too large to lift: many layers of a large batch. */
    bad = *tiny;
    bad.layers = 1024;
    bad.ctx = 4096;
    CHECK(models_parse_mode("batch:4096", &o.mode, err) == 0);
    CHECK(models_lift(&bad, &o, err) == NULL && strstr(err, "ops"));
    o = models_default_options();
    /* deepseek: a latent attention without a latent, or an odd rotary width; a block format that does not divide
     * V2-Lite's expert width (1408, not a multiple of q4_k's 256). */
    struct models_config ds = *models_find("tiny-deepseek");
    ds.deepseek.kv_lora = 0;
    CHECK(models_lift(&ds, &o, err) == NULL && strstr(err, "latent attention needs"));
    ds = *models_find("tiny-deepseek");
    ds.deepseek.rope_dim = 63;
    CHECK(models_lift(&ds, &o, err) == NULL && strstr(err, "rope_dim even"));
    o.weights = IR_FMT_Q4_K;
    CHECK(models_lift(models_find("deepseek-v2-lite"), &o, err) == NULL && strstr(err, "expert_ffn") &&
          strstr(err, "1408"));
    o = models_default_options();
    /* gpt-oss: the clamped SwiGLU needs a positive alpha and limit; gpt-oss-20b's expert width (2880) takes q8_0
     * but not q4_k. */
    struct models_config go = *models_find("tiny-gpt-oss");
    go.swiglu_limit = 0;
    CHECK(models_lift(&go, &o, err) == NULL && strstr(err, "swiglu_alpha and swiglu_limit"));
    go = *models_find("tiny-gpt-oss");
    go.swiglu_alpha = -1;
    CHECK(models_lift(&go, &o, err) == NULL && strstr(err, "swiglu_alpha and swiglu_limit"));
    o.weights = IR_FMT_Q4_K;
    CHECK(models_lift(models_find("gpt-oss-20b"), &o, err) == NULL && strstr(err, "2880"));
    o = models_default_options();
    /* A decode mode's count is ignored: it is one row. */
    o = models_default_options();
    o.mode.n = 0;
    g = models_lift(tiny, &o, err);
    CHECK(g != NULL && g->mode && strcmp(g->mode, "decode") == 0 && g->tensors[find(g, "embd")].rows == 1);
    ir_graph_free(g);
    /* NULL options mean the defaults. */
    g = models_lift(tiny, NULL, err);
    CHECK(g != NULL && g->mode && strcmp(g->mode, "decode") == 0);
    ir_graph_free(g);
}

/* ── Every model, every mode: valid, deterministic, round trip ───────────────────────────────────────────── */

/* The graph prints, parses back and prints identically; a second lift prints the same. */
static void check_round_trip(const struct ir_graph *g, const struct ir_graph *again, const char *what)
{
    char err[IR_ERR_LEN] = "";
    size_t n1 = 0, n2 = 0, n3 = 0;
    char *t1 = ir_print(g, &n1);
    CHECKF(t1 != NULL, "%s: print", what);
    struct ir_graph *p = t1 ? ir_parse(t1, n1, what, err) : NULL;
    CHECKF(p != NULL, "%s: parse: %s", what, err);
    char *t2 = p ? ir_print(p, &n2) : NULL;
    CHECKF(t2 && n1 == n2 && memcmp(t1, t2, n1) == 0, "%s: print-parse-print differs", what);
    if (p) {
        bool same = p->nops == g->nops && p->ntensors == g->ntensors;
        for (int i = 0; same && i < g->nops; i++)
            same = ir_op_equal(&g->ops[i], &p->ops[i]);
        CHECKF(same, "%s: parsed ops differ", what);
    }
    char *t3 = ir_print(again, &n3);
    CHECKF(t3 && n1 == n3 && memcmp(t1, t3, n1) == 0, "%s: a second lift prints differently", what);
    free(t1);
    free(t2);
    free(t3);
    ir_graph_free(p);
}

/* Every model in decode, prefill:8 and batch:4 (tiny ones also prefill:32 and batch:16) lifts valid, with its meta,
 * and round-trips. */
static void test_all_lift(void)
{
    static const char *modes[] = {"decode", "prefill:8", "batch:4", "prefill:32", "batch:16"};
    for (int i = 0; i < models_count(); i++) {
        const struct models_config *c = models_get(i);
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
            if (m >= 3 && !c->tiny)
                continue;
            char what[96], err[IR_ERR_LEN] = "";
            snprintf(what, sizeof what, "%s %s", c->name, modes[m]);
            struct ir_graph *g = lift(c->name, modes[m], 0, IR_FMT_Q8_0);
            struct ir_graph *again = lift(c->name, modes[m], 0, IR_FMT_Q8_0);
            if (!g || !again) {
                ir_graph_free(g);
                ir_graph_free(again);
                continue;
            }
            CHECKF(ir_validate(g, err) == 0, "%s: %s", what, err);
            CHECK_STR(g->name, c->name);
            CHECK_STR(g->family, c->family);
            CHECK_STR(g->mode, modes[m]);
            check_round_trip(g, again, what);
            ir_graph_free(g);
            ir_graph_free(again);
        }
    }
}

/* Every block format lifts tiny-llama valid, the matrices and the embedding in that format. */
static void test_formats(void)
{
    for (int f = 0; f < IR_FMT_COUNT; f++) {
        struct ir_graph *g = lift("tiny-llama", "decode", 0, (enum ir_format)f);
        if (!g)
            continue;
        char err[IR_ERR_LEN] = "";
        CHECKF(ir_validate(g, err) == 0, "%s: %s", ir_format_name((enum ir_format)f), err);
        ir_tid q = find(g, "blk.0.attn_q.weight"), e = find(g, "token_embd.weight");
        CHECK(q != IR_NONE && g->tensors[q].checkpoint && g->tensors[q].transposed && (int)g->tensors[q].format == f);
        CHECK(e != IR_NONE && g->tensors[e].checkpoint && !g->tensors[e].transposed && (int)g->tensors[e].format == f);
        ir_graph_free(g);
    }
}

/* Fewer layers: only those layers' tensors, still a whole step. */
static void test_layers(void)
{
    struct ir_graph *all = lift("qwen3-8b", "decode", 0, IR_FMT_Q8_0);
    struct ir_graph *one = lift("qwen3-8b", "decode", 1, IR_FMT_Q8_0);
    struct ir_graph *three = lift("qwen3-8b", "prefill:4", 3, IR_FMT_Q4_K);
    if (all && one && three) {
        char err[IR_ERR_LEN] = "";
        CHECKF(ir_validate(one, err) == 0, "%s", err);
        CHECKF(ir_validate(three, err) == 0, "%s", err);
        CHECK(find(one, "blk.0.attn_q.weight") != IR_NONE && find(one, "blk.1.attn_q.weight") == IR_NONE);
        CHECK(find(three, "blk.2.k_cache") != IR_NONE && find(three, "blk.3.k_cache") == IR_NONE);
        CHECK(find(one, "next") != IR_NONE && find(one, "output.weight") != IR_NONE);
        int per_layer = (all->nops - one->nops) / 35;
        CHECK((all->nops - one->nops) % 35 == 0 && one->nops == per_layer + (all->nops - 36 * per_layer));
        CHECK(count_kind(one, IR_KIND_ATTENTION) == 1 && count_kind(all, IR_KIND_ATTENTION) == 36);
        CHECK(count_kind(three, IR_KIND_ATTENTION) == 3);
    }
    ir_graph_free(all);
    ir_graph_free(one);
    ir_graph_free(three);
}

/* ── The shapes the rules look for ───────────────────────────────────────────────────────────────────────── */

/* The decode step of tiny-qwen3: embedding, per-head norms, ropes, cache writes, attention, residual adds, SwiGLU,
 * head, arg-max, flags. */
static void test_shape_decode(void)
{
    struct ir_graph *g = lift("tiny-qwen3", "decode", 0, IR_FMT_Q8_0);
    if (!g)
        return;
    /* The embedding: a named row gather of a checkpoint table by the token, read first by the first norm. */
    int e = producer(g, find(g, "embd"));
    CHECK(is_kind(g, e, IR_KIND_ROW_GATHER) && g->ops[e].spec.u.row_gather.index.kind == IR_RIDX_NAMED);
    CHECK(g->ops[e].ins[1] == find(g, "token") && g->tensors[find(g, "token")].elem == IR_ELEM_I32);
    CHECK(is_kind(g, first_reader(g, find(g, "embd"), e), IR_KIND_RMS_NORM));
    ir_tid pos = find(g, "pos");
    CHECK(pos != IR_NONE && g->tensors[pos].role == IR_ROLE_PARAM && g->tensors[pos].elem == IR_ELEM_I32);
    for (int layer = 0; layer < 2; layer++) {
        char n[64];
        /* q, k, v: products of the attention norm's output, GGML layout. */
        snprintf(n, sizeof n, "blk.%d.attn_norm", layer);
        ir_tid xn = find(g, n);
        const char *proj[3] = {"q", "k", "v"};
        for (int p = 0; p < 3; p++) {
            snprintf(n, sizeof n, "blk.%d.%s", layer, proj[p]);
            int i = producer(g, find(g, n));
            CHECK(is_kind(g, i, IR_KIND_MATMUL) && g->ops[i].ins[0] == xn && g->ops[i].spec.u.matmul.m == 1);
            CHECK(i >= 0 && g->tensors[g->ops[i].ins[1]].transposed && g->tensors[g->ops[i].ins[1]].checkpoint);
        }
        /* The per-head norm of k (rows = kv heads, cols = head_dim, weighted), read only by its rope. */
        snprintf(n, sizeof n, "blk.%d.k_norm", layer);
        ir_tid kn = find(g, n);
        int i = producer(g, kn);
        CHECK(is_kind(g, i, IR_KIND_RMS_NORM) && g->ops[i].spec.u.rms_norm.rows == 2 &&
              g->ops[i].spec.u.rms_norm.cols == 64 && g->ops[i].spec.u.rms_norm.weight);
        int r = first_reader(g, kn, i);
        CHECK(is_kind(g, r, IR_KIND_ROPE) && first_reader(g, kn, r) == -1);
        CHECK(r >= 0 && g->ops[r].spec.u.rope.pos.kind == IR_RIDX_NAMED && g->ops[r].ins[3] == pos &&
              g->ops[r].spec.u.rope.h == 2 && g->ops[r].spec.u.rope.half == 32);
        ir_tid cos = r >= 0 ? g->ops[r].ins[1] : IR_NONE;
        CHECK(cos != IR_NONE && g->tensors[cos].rows == 64 && g->tensors[cos].cols == 32 &&
              g->tensors[cos].role == IR_ROLE_CONSTANT);
        /* The rope's result set into the carried cache at pos, count 1; read by nothing else. */
        ir_tid kr = r >= 0 ? g->ops[r].out : IR_NONE;
        int s = first_reader(g, kr, r);
        snprintf(n, sizeof n, "blk.%d.k_cache", layer);
        ir_tid kc = find(g, n);
        CHECK(is_kind(g, s, IR_KIND_SET_ROW) && g->ops[s].ins[0] == kc && g->ops[s].out == kc &&
              g->ops[s].spec.u.set_row.count == 1 && g->ops[s].spec.u.set_row.index.kind == IR_RIDX_NAMED &&
              g->ops[s].ins[2] == pos && first_reader(g, kr, s) == -1);
        CHECK(kc != IR_NONE && g->tensors[kc].role == IR_ROLE_STATE && g->tensors[kc].carried);
        /* v set straight from its product. */
        snprintf(n, sizeof n, "blk.%d.v", layer);
        int sv = first_reader(g, find(g, n), producer(g, find(g, n)));
        CHECK(is_kind(g, sv, IR_KIND_SET_ROW) && g->ops[sv].spec.u.set_row.index.kind == IR_RIDX_NAMED);
        /* The attention over the caches at pos, causal. */
        snprintf(n, sizeof n, "blk.%d.attn", layer);
        int a = producer(g, find(g, n));
        CHECK(is_kind(g, a, IR_KIND_ATTENTION) && g->ops[a].ins[1] == kc && g->ops[a].ins[3] == pos &&
              g->ops[a].spec.u.attention.l == 64 && g->ops[a].spec.u.attention.rows == 1 &&
              g->ops[a].spec.u.attention.h == 4 && g->ops[a].spec.u.attention.kv == 2);
        /* The residual add: the stream first, the projection second; read first by the FFN norm. */
        snprintf(n, sizeof n, "blk.%d.attn_res", layer);
        ir_tid h = find(g, n);
        int add = producer(g, h);
        snprintf(n, sizeof n, "blk.%d.attn_out", layer);
        CHECK(is_kind(g, add, IR_KIND_ELEMENTWISE) && g->ops[add].spec.u.elementwise.op == IR_EW_ADD &&
              g->ops[add].ins[1] == find(g, n));
        int fn = first_reader(g, h, add);
        CHECK(is_kind(g, fn, IR_KIND_RMS_NORM) && g->ops[fn].ins[0] == h);
        /* SwiGLU of two products of one activation, read only by it. */
        snprintf(n, sizeof n, "blk.%d.ffn_act", layer);
        int sw = producer(g, find(g, n));
        CHECK(is_kind(g, sw, IR_KIND_SWIGLU));
        if (sw >= 0) {
            int pg = producer(g, g->ops[sw].ins[0]), pu = producer(g, g->ops[sw].ins[1]);
            CHECK(is_kind(g, pg, IR_KIND_MATMUL) && is_kind(g, pu, IR_KIND_MATMUL) &&
                  g->ops[pg].ins[0] == g->ops[pu].ins[0] && g->ops[pg].ins[0] == g->ops[fn].out);
            CHECK(first_reader(g, g->ops[sw].ins[0], sw) == -1 && first_reader(g, g->ops[sw].ins[1], sw) == -1);
        }
        /* The layer's output read first by the next norm. */
        snprintf(n, sizeof n, "blk.%d.out", layer);
        int o = producer(g, find(g, n));
        CHECK(is_kind(g, first_reader(g, find(g, n), o), IR_KIND_RMS_NORM));
    }
    /* The head: the final norm, the LM head, the arg-max; flags. */
    ir_tid next = find(g, "next"), logits = find(g, "logits");
    int am = producer(g, next);
    CHECK(is_kind(g, am, IR_KIND_ARGMAX) && g->ops[am].ins[0] == logits && g->ops[am].spec.u.argmax.cols == 512);
    CHECK(next != IR_NONE && g->tensors[next].next && g->tensors[next].observed &&
          g->tensors[next].elem == IR_ELEM_I32);
    CHECK(logits != IR_NONE && g->tensors[logits].observed);
    int observed = 0, carried = 0;
    for (int t = 0; t < g->ntensors; t++) {
        observed += g->tensors[t].observed;
        carried += g->tensors[t].carried;
        if (g->tensors[t].carried)
            CHECK(g->tensors[t].role == IR_ROLE_STATE);
    }
    CHECK(observed == 2 && carried == 4);
    ir_graph_free(g);
}

/* A prefill chunk: tokens through a rows gather, ropes and cache writes of every row at pos, the last row through a
 * literal row gather before the final norm. */
static void test_shape_prefill(void)
{
    struct ir_graph *g = lift("tiny-llama", "prefill:8", 0, IR_FMT_Q8_0);
    if (!g)
        return;
    int e = producer(g, find(g, "embd"));
    CHECK(is_kind(g, e, IR_KIND_ROWS_GATHER) && g->ops[e].spec.u.rows_gather.count == 8);
    CHECK(g->tensors[find(g, "tokens")].rows == 8 && g->tensors[find(g, "tokens")].elem == IR_ELEM_I32);
    int r = producer(g, find(g, "blk.1.k_rope"));
    CHECK(is_kind(g, r, IR_KIND_ROPE) && g->ops[r].spec.u.rope.rows == 8 && g->ops[r].spec.u.rope.h == 16);
    int s = first_reader(g, find(g, "blk.1.k_rope"), r);
    CHECK(is_kind(g, s, IR_KIND_SET_ROW) && g->ops[s].spec.u.set_row.count == 8 &&
          g->ops[s].spec.u.set_row.cols == 128 && g->ops[s].spec.u.set_row.rows == 64);
    int a = producer(g, find(g, "blk.1.attn"));
    CHECK(is_kind(g, a, IR_KIND_ATTENTION) && g->ops[a].spec.u.attention.rows == 8);
    int last = producer(g, find(g, "out.last"));
    CHECK(is_kind(g, last, IR_KIND_ROW_GATHER) && g->ops[last].spec.u.row_gather.index.kind == IR_RIDX_LITERAL &&
          g->ops[last].spec.u.row_gather.index.literal == 8 && g->ops[last].ins[0] == find(g, "blk.1.out"));
    int n = first_reader(g, find(g, "out.last"), last);
    CHECK(is_kind(g, n, IR_KIND_RMS_NORM) && g->tensors[find(g, "next")].rows == 1);
    ir_graph_free(g);
}

/* A batch: a position and caches per sequence, literal row gathers, attention rows set into a state table (not
 * carried) that the output projection reads whole. */
static void test_shape_batch(void)
{
    struct ir_graph *g = lift("tiny-qwen3", "batch:4", 0, IR_FMT_Q8_0);
    if (!g)
        return;
    ir_tid rows = find(g, "blk.0.attn_rows");
    CHECK(rows != IR_NONE && g->tensors[rows].role == IR_ROLE_STATE && !g->tensors[rows].carried &&
          g->tensors[rows].rows == 4);
    for (int b = 0; b < 4; b++) {
        char n[64];
        snprintf(n, sizeof n, "pos.%d", b);
        ir_tid pos = find(g, n);
        CHECK(pos != IR_NONE && g->tensors[pos].role == IR_ROLE_PARAM);
        snprintf(n, sizeof n, "blk.0.q.%d", b);
        int qg = producer(g, find(g, n));
        CHECK(is_kind(g, qg, IR_KIND_ROW_GATHER) && g->ops[qg].spec.u.row_gather.index.kind == IR_RIDX_LITERAL &&
              g->ops[qg].spec.u.row_gather.index.literal == b + 1 && g->ops[qg].ins[0] == find(g, "blk.0.q"));
        snprintf(n, sizeof n, "blk.0.k_cache.%d", b);
        ir_tid kc = find(g, n);
        CHECK(kc != IR_NONE && g->tensors[kc].carried);
        snprintf(n, sizeof n, "blk.0.q_rope.%d", b);
        int r = producer(g, find(g, n));
        CHECK(is_kind(g, r, IR_KIND_ROPE) && g->ops[r].ins[3] == pos && g->ops[r].spec.u.rope.rows == 1);
        snprintf(n, sizeof n, "blk.0.attn.%d", b);
        ir_tid at = find(g, n);
        int a = producer(g, at);
        CHECK(is_kind(g, a, IR_KIND_ATTENTION) && g->ops[a].ins[1] == kc && g->ops[a].ins[3] == pos &&
              g->ops[a].spec.u.attention.rows == 1);
        int s = first_reader(g, at, a);
        CHECK(is_kind(g, s, IR_KIND_SET_ROW) && g->ops[s].ins[0] == rows &&
              g->ops[s].spec.u.set_row.index.kind == IR_RIDX_LITERAL &&
              g->ops[s].spec.u.set_row.index.literal == b + 1);
    }
    int o = producer(g, find(g, "blk.0.attn_out"));
    CHECK(is_kind(g, o, IR_KIND_MATMUL) && g->ops[o].ins[0] == rows && g->ops[o].spec.u.matmul.m == 4);
    CHECK(g->tensors[find(g, "next")].rows == 4 && g->tensors[find(g, "logits")].rows == 4);
    ir_graph_free(g);
}

/* A mixture: one op on a decode row; per row gather, mixture and set into a state table for a chunk. */
static void test_shape_moe(void)
{
    struct ir_graph *d = lift("tiny-qwen3-moe", "decode", 0, IR_FMT_Q8_0);
    struct ir_graph *p = lift("tiny-qwen3-moe", "prefill:8", 0, IR_FMT_Q8_0);
    if (d) {
        int m = producer(d, find(d, "blk.0.ffn_moe"));
        CHECK(is_kind(d, m, IR_KIND_MOE) && d->ops[m].ins[0] == find(d, "blk.0.ffn_norm") &&
              d->ops[m].spec.u.moe.k == 2 && d->ops[m].spec.u.moe.experts == 8 && d->ops[m].spec.u.moe.dff == 256);
        CHECK(count_kind(d, IR_KIND_MOE) == 2 && count_kind(d, IR_KIND_SWIGLU) == 0);
        int add = first_reader(d, find(d, "blk.0.ffn_moe"), m);
        CHECK(is_kind(d, add, IR_KIND_ELEMENTWISE) && d->ops[add].out == find(d, "blk.0.out"));
    }
    if (p) {
        ir_tid table = find(p, "blk.1.ffn_moe_rows");
        CHECK(table != IR_NONE && p->tensors[table].role == IR_ROLE_STATE && !p->tensors[table].carried);
        CHECK(count_kind(p, IR_KIND_MOE) == 16);
        for (int r = 0; r < 8; r++) {
            char n[64];
            snprintf(n, sizeof n, "blk.1.ffn_in.%d", r);
            int v = producer(p, find(p, n));
            CHECK(is_kind(p, v, IR_KIND_ROW_GATHER) && p->ops[v].ins[0] == find(p, "blk.1.ffn_norm") &&
                  p->ops[v].spec.u.row_gather.index.literal == r + 1);
            int m = v + 1, s = v + 2;
            CHECK(is_kind(p, m, IR_KIND_MOE) && p->ops[m].ins[0] == p->ops[v].out);
            CHECK(is_kind(p, s, IR_KIND_SET_ROW) && p->ops[s].ins[0] == table && p->ops[s].ins[1] == p->ops[m].out &&
                  p->ops[s].spec.u.set_row.index.literal == r + 1 && p->ops[s].spec.u.set_row.count == 1);
        }
        int add = producer(p, find(p, "blk.1.out"));
        CHECK(is_kind(p, add, IR_KIND_ELEMENTWISE) && p->ops[add].ins[1] == table);
    }
    ir_graph_free(d);
    ir_graph_free(p);
}

/* gemma2: the embedding scaled, four (1+w) norms a block (read as stored, w + 1: offset 0), GeLU gate, windows on
 * alternating layers, soft caps. */
static void test_shape_gemma(void)
{
    struct ir_graph *g = lift("tiny-gemma2", "decode", 0, IR_FMT_Q8_0);
    if (!g)
        return;
    int sc = producer(g, find(g, "embd.scaled"));
    CHECK(is_kind(g, sc, IR_KIND_SCALE) && fabs(g->ops[sc].spec.u.scale.factor - 16.0) < 1e-12);
    CHECK(is_kind(g, first_reader(g, find(g, "embd.scaled"), sc), IR_KIND_RMS_NORM));
    int norms = 0;
    for (int i = 0; i < g->nops; i++)
        if (is_kind(g, i, IR_KIND_RMS_NORM)) {
            norms++;
            CHECK(g->ops[i].spec.u.rms_norm.offset == 0.0 && g->ops[i].spec.u.rms_norm.weight &&
                  g->ops[i].spec.u.rms_norm.kind == IR_NORM_RMS && !g->ops[i].spec.u.rms_norm.bias);
        }
    CHECK(norms == 4 * 2 + 1);
    int post = producer(g, find(g, "blk.0.post_attention_norm"));
    CHECK(is_kind(g, post, IR_KIND_RMS_NORM) && g->ops[post].ins[0] == find(g, "blk.0.attn_out"));
    int add = producer(g, find(g, "blk.0.attn_res"));
    CHECK(add >= 0 && g->ops[add].ins[1] == find(g, "blk.0.post_attention_norm"));
    int gelu = producer(g, find(g, "blk.1.ffn_gelu"));
    CHECK(is_kind(g, gelu, IR_KIND_GELU) && g->ops[gelu].ins[0] == find(g, "blk.1.ffn_gate"));
    int mul = producer(g, find(g, "blk.1.ffn_act"));
    CHECK(is_kind(g, mul, IR_KIND_ELEMENTWISE) && g->ops[mul].spec.u.elementwise.op == IR_EW_MUL &&
          g->ops[mul].ins[0] == find(g, "blk.1.ffn_gelu") && g->ops[mul].ins[1] == find(g, "blk.1.ffn_up"));
    int a0 = producer(g, find(g, "blk.0.attn")), a1 = producer(g, find(g, "blk.1.attn"));
    CHECK(a0 >= 0 && g->ops[a0].spec.u.attention.window == 16 && g->ops[a0].spec.u.attention.softcap.has &&
          g->ops[a0].spec.u.attention.softcap.v == 50 && g->ops[a0].spec.u.attention.scale.has &&
          g->ops[a0].spec.u.attention.scale.v == 0.125);
    CHECK(a1 >= 0 && g->ops[a1].spec.u.attention.window == 0);
    int cap = producer(g, find(g, "logits"));
    CHECK(is_kind(g, cap, IR_KIND_SOFTCAP) && g->ops[cap].spec.u.softcap.cap == 30 &&
          g->ops[cap].ins[0] == find(g, "logits.raw"));
    ir_graph_free(g);
    struct ir_graph *real = lift("gemma2-2b", "decode", 0, IR_FMT_Q8_0);
    if (real) {
        int a = producer(real, find(real, "blk.0.attn"));
        CHECK(a >= 0 && real->ops[a].spec.u.attention.window == 4096 &&
              real->ops[a].spec.u.attention.scale.v == 0.0625);
        ir_graph_free(real);
    }
}

/* qwen3-next: three DeltaNet layers then a gated attention one; each DeltaNet layer three convolutions over carried
 * rings, two L2 norms, σ and decay gates, one delta rule over a carried memory sharing each key head between two value
 * heads; the attention gated by a sigmoid, a quarter of each head rotated; a mixture plus a sigmoid-gated shared
 * expert. */
static void test_shape_qwen3_next(void)
{
    struct ir_graph *g = lift("tiny-qwen3-next", "decode", 0, IR_FMT_Q8_0);
    if (!g)
        return;
    CHECK(count_kind(g, IR_KIND_CAUSAL_CONV) == 9 && count_kind(g, IR_KIND_L2_NORM) == 6);
    CHECK(count_kind(g, IR_KIND_GATED_DELTA) == 3 && count_kind(g, IR_KIND_DECAY) == 3);
    CHECK(count_kind(g, IR_KIND_ATTENTION) == 1 && count_kind(g, IR_KIND_MOE) == 4);
    CHECK(count_kind(g, IR_KIND_SIGMOID) == 3 + 1 + 4);
    int d = producer(g, find(g, "blk.0.ssm_y"));
    CHECK(is_kind(g, d, IR_KIND_GATED_DELTA) && g->ops[d].spec.u.gated_delta.kh == 2 &&
          g->ops[d].spec.u.gated_delta.h == 4 && g->ops[d].spec.u.gated_delta.gate == IR_GATE_SILU);
    CHECK(is_kind(g, producer(g, g->ops[d].ins[0]), IR_KIND_L2_NORM));
    CHECK(is_kind(g, producer(g, g->ops[d].ins[4]), IR_KIND_SIGMOID));
    CHECK(is_kind(g, producer(g, g->ops[d].ins[5]), IR_KIND_DECAY));
    CHECK(g->tensors[find(g, "blk.0.ssm_state")].carried && g->tensors[find(g, "blk.0.ssm_conv_q.ring")].carried);
    CHECK(find(g, "blk.3.ssm_state") == IR_NONE && find(g, "blk.3.k_cache") != IR_NONE);
    CHECK(find(g, "blk.0.k_cache") == IR_NONE);
    int q = producer(g, find(g, "blk.3.q_rope"));
    CHECK(is_kind(g, q, IR_KIND_ROPE) && g->ops[q].spec.u.rope.half == 8 && g->ops[q].spec.u.rope.hd == 64);
    int gated = producer(g, find(g, "blk.3.attn_gated"));
    CHECK(is_kind(g, gated, IR_KIND_ELEMENTWISE) && is_kind(g, producer(g, g->ops[gated].ins[0]), IR_KIND_ATTENTION));
    int sh = producer(g, find(g, "blk.0.ffn_shexp"));
    CHECK(is_kind(g, sh, IR_KIND_ELEMENTWISE) && g->ops[sh].spec.u.elementwise.row == 1);
    ir_graph_free(g);
    /* A batch: each sequence its own rings and memory. */
    g = lift("tiny-qwen3-next", "batch:2", 0, IR_FMT_Q8_0);
    if (g) {
        CHECK(find(g, "blk.0.ssm_state.1") != IR_NONE && find(g, "blk.0.ssm_conv_v.ring.1") != IR_NONE);
        CHECK(count_kind(g, IR_KIND_GATED_DELTA) == 6);
    }
    ir_graph_free(g);
}

/* A deepseek model's published logit scale under YaRN: 1/sqrt(q head width) times mscale², mscale = 0.1 ·
 * mscale_all_dim · ln factor + 1 (factor its rope_scaling's; mscale_all_dim as its config.json gives it). */
static double ref_deepseek_scale(const struct models_config *c, double mscale_all_dim)
{
    double factor = c->rope_scaling.factor.has ? c->rope_scaling.factor.v : 1.0;
    double mscale = factor > 1 ? 0.1 * mscale_all_dim * log(factor) + 1.0 : 1.0;
    return mscale * mscale / sqrt((double)(c->head_dim + c->deepseek.rope_dim));
}

/* deepseek: the latent attention's absorbed shape as the latent-attention rules look for it, the query's low rank
 * where the model has one, dense first layers, the shared experts summed with the mixture, and a batch's caches. */
static void test_shape_deepseek(void)
{
    struct ir_graph *g = lift("tiny-deepseek", "decode", 0, IR_FMT_Q8_0);
    if (g) {
        ir_tid pos = find(g, "pos"), kc = find(g, "blk.1.kv_cache");
        CHECK(kc != IR_NONE && g->tensors[kc].carried && g->tensors[kc].rows == 64 && g->tensors[kc].cols == 320);
        CHECK(find(g, "blk.1.k_cache") == IR_NONE && find(g, "blk.1.v_cache") == IR_NONE);
        CHECK(g->tensors[find(g, "rope.cos")].cols == 32);
        /* The query: the low rank, its norm, the up product; each head's unrotated part absorbed, its rotary part
         * rotated, the two joined head by head. */
        int qa = producer(g, find(g, "blk.1.q_a_norm"));
        CHECK(is_kind(g, qa, IR_KIND_RMS_NORM) && g->ops[qa].spec.u.rms_norm.cols == 256);
        int qn = producer(g, find(g, "blk.1.q_nope")), qp = producer(g, find(g, "blk.1.q_pe"));
        CHECK(is_kind(g, qn, IR_KIND_HEAD_SLICE) && g->ops[qn].spec.u.head_slice.every == 128 &&
              g->ops[qn].spec.u.head_slice.from == 0 && g->ops[qn].spec.u.head_slice.width == 64);
        CHECK(is_kind(g, qp, IR_KIND_HEAD_SLICE) && g->ops[qp].spec.u.head_slice.from == 64 &&
              g->ops[qp].ins[0] == find(g, "blk.1.q"));
        int ab = producer(g, find(g, "blk.1.q_absorbed"));
        CHECK(is_kind(g, ab, IR_KIND_HEAD_MATMUL) && g->ops[ab].spec.u.head_matmul.heads == 4 &&
              g->ops[ab].spec.u.head_matmul.a == 64 && g->ops[ab].spec.u.head_matmul.b == 256);
        int jq = producer(g, find(g, "blk.1.q_mla"));
        CHECK(is_kind(g, jq, IR_KIND_JOIN) && g->ops[jq].spec.u.join.heads == 4 &&
              g->ops[jq].spec.u.join.wa == 1024 && g->ops[jq].spec.u.join.wb == 256);
        /* The cache row: the normed latent and the rotated shared key, joined and set at pos. */
        int jk = producer(g, find(g, "blk.1.kv_row"));
        CHECK(is_kind(g, jk, IR_KIND_JOIN) && g->ops[jk].spec.u.join.heads == 1 &&
              g->ops[jk].ins[0] == find(g, "blk.1.kv_norm") && g->ops[jk].ins[1] == find(g, "blk.1.k_rope"));
        int set = first_reader(g, find(g, "blk.1.kv_row"), jk);
        CHECK(is_kind(g, set, IR_KIND_SET_ROW) && g->ops[set].ins[0] == kc && g->ops[set].ins[2] == pos);
        /* The attention: one kv head, the latent and key part as its keys, the latents (a slice of the cache) as
         * its values; its result expanded per head, read by nothing else. */
        int a = producer(g, find(g, "blk.1.attn_latent"));
        const struct ir_attention *at = a >= 0 ? &g->ops[a].spec.u.attention : NULL;
        CHECK(is_kind(g, a, IR_KIND_ATTENTION) && at->h == 4 && at->kv == 1 && at->hd == 320 && at->vd == 256 &&
              at->scale.has && fabs(at->scale.v - ref_deepseek_scale(models_find("tiny-deepseek"), 1.0)) < 1e-15 &&
              g->ops[a].ins[1] == kc);
        /* The published scale by hand: YaRN by 4 over a 128-wide query head, (0.1 · ln 4 + 1)² / √128. */
        CHECK(at && fabs(at->scale.v - (0.1 * log(4.0) + 1) * (0.1 * log(4.0) + 1) / sqrt(128.0)) < 1e-15 &&
              at->scale.v > 1.1 / sqrt(128.0));
        int vs = a >= 0 ? producer(g, g->ops[a].ins[2]) : -1;
        CHECK(is_kind(g, vs, IR_KIND_HEAD_SLICE) && g->ops[vs].ins[0] == kc &&
              g->ops[vs].spec.u.head_slice.every == 320 && g->ops[vs].spec.u.head_slice.width == 256);
        int ex = first_reader(g, find(g, "blk.1.attn_latent"), a);
        CHECK(is_kind(g, ex, IR_KIND_HEAD_MATMUL) && g->ops[ex].spec.u.head_matmul.a == 256 &&
              g->ops[ex].spec.u.head_matmul.b == 64 && first_reader(g, find(g, "blk.1.attn_latent"), ex) == -1);
        /* Layer 0 dense; layers 1 and 2 a mixture plus the shared experts, summed. */
        CHECK(count_kind(g, IR_KIND_MOE) == 2 && find(g, "blk.0.ffn_gate.weight") != IR_NONE &&
              find(g, "blk.0.ffn_gate_inp.weight") == IR_NONE);
        int sum = producer(g, find(g, "blk.1.ffn_experts"));
        CHECK(is_kind(g, sum, IR_KIND_ELEMENTWISE) && g->ops[sum].ins[0] == find(g, "blk.1.ffn_moe") &&
              g->ops[sum].ins[1] == find(g, "blk.1.ffn_down_shexp"));
        ir_graph_free(g);
    }
    /* V2-Lite: one query product, no low rank; V3: the low rank; the real logit scales. */
    struct ir_graph *lite = lift("deepseek-v2-lite", "decode", 2, IR_FMT_Q8_0);
    struct ir_graph *v3 = lift("deepseek-v3", "decode", 4, IR_FMT_Q8_0);
    if (lite && v3) {
        CHECK(find(lite, "blk.0.attn_q.weight") != IR_NONE && find(lite, "blk.0.q_a") == IR_NONE);
        CHECK(find(v3, "blk.0.attn_q_a.weight") != IR_NONE && find(v3, "blk.0.attn_q.weight") == IR_NONE);
        CHECK(find(v3, "blk.2.ffn_gate.weight") != IR_NONE && find(v3, "blk.3.ffn_gate_exps.weight") != IR_NONE);
        CHECK(find(lite, "blk.1.ffn_gate_exps.weight") != IR_NONE);
        int a = producer(v3, find(v3, "blk.0.attn_latent"));
        CHECK(a >= 0 && v3->ops[a].spec.u.attention.hd == 576 && v3->ops[a].spec.u.attention.h == 128 &&
              fabs(v3->ops[a].spec.u.attention.scale.v - 0.13523) < 1e-5 &&
              fabs(v3->ops[a].spec.u.attention.scale.v - ref_deepseek_scale(models_find("deepseek-v3"), 1.0)) <
                  1e-15);
        a = producer(lite, find(lite, "blk.0.attn_latent"));
        CHECK(a >= 0 && fabs(lite->ops[a].spec.u.attention.scale.v - 0.11472) < 1e-5 &&
              fabs(lite->ops[a].spec.u.attention.scale.v -
                   ref_deepseek_scale(models_find("deepseek-v2-lite"), 0.707)) < 1e-15);
    }
    ir_graph_free(lite);
    ir_graph_free(v3);
    /* A batch: each sequence its own cache and position; its expanded values set into the attention table. */
    struct ir_graph *b = lift("tiny-deepseek", "batch:4", 0, IR_FMT_Q8_0);
    if (b) {
        for (int s = 0; s < 4; s++) {
            char n[64];
            snprintf(n, sizeof n, "blk.2.kv_cache.%d", s);
            ir_tid kc = find(b, n);
            CHECK(kc != IR_NONE && b->tensors[kc].carried);
            snprintf(n, sizeof n, "blk.2.attn.%d", s);
            int set = first_reader(b, find(b, n), producer(b, find(b, n)));
            CHECK(is_kind(b, set, IR_KIND_SET_ROW) && b->ops[set].ins[0] == find(b, "blk.2.attn_rows") &&
                  b->ops[set].spec.u.set_row.index.literal == s + 1);
        }
        ir_graph_free(b);
    }
}

/* olmo2: no pre-norms (the stream itself is the q, k and v products' input, attn_res the FFN's), q and k each normed
 * whole over its heads by a weight as wide, the two post-norms the residual adds' second operands; the real size's
 * q and k norms of one shape (as many kv heads as heads). */
static void test_shape_olmo2(void)
{
    static const char *const modes[] = {"decode", "prefill:8", "batch:4"};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        struct ir_graph *g = lift("tiny-olmo2", modes[m], 0, IR_FMT_Q8_0);
        if (!g)
            continue;
        CHECK(find(g, "blk.0.attn_norm") == IR_NONE && find(g, "blk.0.ffn_norm") == IR_NONE &&
              find(g, "blk.1.attn_norm.weight") == IR_NONE && find(g, "blk.1.ffn_norm.weight") == IR_NONE);
        int q = producer(g, find(g, "blk.0.q")), gate = producer(g, find(g, "blk.1.ffn_gate"));
        CHECK(is_kind(g, q, IR_KIND_MATMUL) && g->ops[q].ins[0] == find(g, "embd"));
        CHECK(is_kind(g, gate, IR_KIND_MATMUL) && g->ops[gate].ins[0] == find(g, "blk.1.attn_res"));
        int norms = 0;
        for (int i = 0; i < g->nops; i++)
            norms += is_kind(g, i, IR_KIND_RMS_NORM);
        int seqs = m == 2 ? 4 : 1;
        CHECKF(norms == 2 * (2 + 2 * seqs) + 1, "tiny-olmo2 %s: %d norms", modes[m], norms);
        for (int layer = 0; layer < 2; layer++)
            for (int s = 0; s < seqs; s++) {
                static const char *const which[] = {"q", "k"};
                for (int w = 0; w < 2; w++) {
                    char n[64], wt[64];
                    snprintf(n, sizeof n, seqs > 1 ? "blk.%d.%s_norm.%d" : "blk.%d.%s_norm", layer, which[w], s);
                    snprintf(wt, sizeof wt, "blk.%d.attn_%s_norm.weight", layer, which[w]);
                    int i = producer(g, find(g, n));
                    CHECKF(is_kind(g, i, IR_KIND_RMS_NORM), "%s", n);
                    if (!is_kind(g, i, IR_KIND_RMS_NORM))
                        continue;
                    const struct ir_rms_norm *rn = &g->ops[i].spec.u.rms_norm;
                    CHECKF(rn->cols == 256 && rn->rows == g->tensors[g->ops[i].ins[0]].rows && rn->weight &&
                               rn->offset == 0 && g->ops[i].ins[1] == find(g, wt) &&
                               g->tensors[find(g, wt)].cols == 256,
                           "%s: normed whole", n);
                    char r[64];
                    snprintf(r, sizeof r, seqs > 1 ? "blk.%d.%s_rope.%d" : "blk.%d.%s_rope", layer, which[w], s);
                    int ro = producer(g, find(g, r));
                    CHECKF(is_kind(g, ro, IR_KIND_ROPE) && g->ops[ro].ins[0] == find(g, n), "%s reads %s", r, n);
                }
            }
        static const char *const post[][3] = {{"post_attention_norm", "attn_out", "attn_res"},
                                              {"post_ffw_norm", "ffn_down", "out"}};
        for (int k = 0; k < 2; k++) {
            char n[64], in[64], add[64];
            snprintf(n, sizeof n, "blk.1.%s", post[k][0]);
            snprintf(in, sizeof in, "blk.1.%s", post[k][1]);
            snprintf(add, sizeof add, "blk.1.%s", post[k][2]);
            int i = producer(g, find(g, n)), a = producer(g, find(g, add));
            CHECK(is_kind(g, i, IR_KIND_RMS_NORM) && g->ops[i].ins[0] == find(g, in) &&
                  g->ops[i].spec.u.rms_norm.cols == 256);
            CHECK(is_kind(g, a, IR_KIND_ELEMENTWISE) && g->ops[a].ins[1] == find(g, n));
        }
        CHECK(find(g, "output.weight") != IR_NONE && find(g, "output_norm") != IR_NONE);
        ir_graph_free(g);
    }
    struct ir_graph *real = lift("olmo2-7b", "decode", 0, IR_FMT_Q8_0);
    if (real) {
        int qn = producer(real, find(real, "blk.31.q_norm")), kn = producer(real, find(real, "blk.31.k_norm"));
        CHECK(is_kind(real, qn, IR_KIND_RMS_NORM) && is_kind(real, kn, IR_KIND_RMS_NORM) &&
              real->ops[qn].spec.u.rms_norm.cols == 4096 && real->ops[kn].spec.u.rms_norm.cols == 4096);
        ir_graph_free(real);
    }
}

/* ── Evaluation ──────────────────────────────────────────────────────────────────────────────────────────── */

/* gpt-oss: biased q, k, v and output products, sinks on every attention and a window on even layers only, the
 * mixture of clamped SwiGLU experts with its biases and its top-k-then-softmax routing, by rows in a chunk. */
static void test_shape_gpt_oss(void)
{
    struct ir_graph *d = lift("tiny-gpt-oss", "decode", 0, IR_FMT_Q8_0);
    struct ir_graph *p = lift("tiny-gpt-oss", "prefill:8", 0, IR_FMT_Q8_0);
    const struct models_config *c = models_find("tiny-gpt-oss");
    if (d && c) {
        static const char *const biased[] = {"q", "k", "v", "attn_out"};
        for (int i = 0; i < 4; i++) {
            char n[64];
            snprintf(n, sizeof n, "blk.1.%s", biased[i]);
            int b = producer(d, find(d, n));
            CHECKF(is_kind(d, b, IR_KIND_ELEMENTWISE) && d->ops[b].spec.u.elementwise.op == IR_EW_ADD &&
                   d->ops[b].spec.u.elementwise.row == d->tensors[find(d, n)].cols &&
                   d->tensors[d->ops[b].ins[1]].role == IR_ROLE_CONSTANT, "%s: a bias row added", n);
        }
        for (int layer = 0; layer < 2; layer++) {
            char n[64];
            snprintf(n, sizeof n, "blk.%d.attn", layer);
            int a = producer(d, find(d, n));
            snprintf(n, sizeof n, "blk.%d.attn_sinks.weight", layer);
            CHECK(is_kind(d, a, IR_KIND_ATTENTION) && d->ops[a].spec.u.attention.sinks && d->ops[a].nins == 5 &&
                  d->ops[a].ins[4] == find(d, n) && d->tensors[find(d, n)].cols == c->heads);
            CHECK(d->ops[a].spec.u.attention.window == (layer % 2 == 0 ? c->window : 0));
        }
        int m = producer(d, find(d, "blk.0.ffn_moe"));
        CHECK(is_kind(d, m, IR_KIND_MOE) && d->ops[m].nins == 9);
        if (is_kind(d, m, IR_KIND_MOE)) {
            const struct ir_moe *mo = &d->ops[m].spec.u.moe;
            CHECK(mo->act == IR_MOE_CLAMPED_SWIGLU && mo->bias && mo->topk_softmax && mo->alpha.has &&
                  mo->alpha.v == 1.702 && mo->limit.has && mo->limit.v == 7 && mo->k == 2 && mo->experts == 8);
            CHECK(d->ops[m].ins[5] == find(d, "blk.0.ffn_gate_inp.bias") &&
                  d->ops[m].ins[8] == find(d, "blk.0.ffn_down_exps.bias"));
        }
        CHECK(count_kind(d, IR_KIND_MOE) == 2 && find(d, "output.weight") != IR_NONE);
    }
    if (p)
        CHECK(count_kind(p, IR_KIND_MOE) == 16 && find(p, "blk.1.ffn_moe_rows") != IR_NONE &&
              count_kind(p, IR_KIND_ATTENTION) == 2);
    ir_graph_free(d);
    ir_graph_free(p);
}

/* The bytes of every tensor of g that v holds as plain values (checkpoint constants aside), one after another. */
static float *snapshot(const struct ir_graph *g, const struct ir_values *v, size_t *n)
{
    size_t total = 0;
    for (ir_tid t = 0; t < g->ntensors; t++)
        total += ir_values_cdata(v, t) ? (size_t)ir_tensor_len(g, t) : 0;
    float *out = malloc(sizeof(float) * (total ? total : 1)), *p = out;
    for (ir_tid t = 0; out && t < g->ntensors; t++) {
        const float *x = ir_values_cdata(v, t);
        if (x) {
            memcpy(p, x, sizeof(float) * (size_t)ir_tensor_len(g, t));
            p += ir_tensor_len(g, t);
        }
    }
    *n = total;
    return out;
}

/* Put a snapshot's bytes back into v. */
static void restore(const struct ir_graph *g, struct ir_values *v, const float *snap)
{
    for (ir_tid t = 0; t < g->ntensors; t++) {
        float *x = ir_values_data(v, t);
        if (x) {
            memcpy(x, snap, sizeof(float) * (size_t)ir_tensor_len(g, t));
            snap += ir_tensor_len(g, t);
        }
    }
}

/* The next token(s) of an evaluation are vocabulary indices. */
static void check_next(const struct ir_graph *g, const struct ir_values *v, const struct models_config *c,
                       const char *mode)
{
    ir_tid t = find(g, "next");
    const float *next = ir_values_cdata(v, t);
    CHECK(next != NULL);
    for (int64_t r = 0; next && r < ir_tensor_len(g, t); r++)
        CHECKF(next[r] >= 0 && next[r] < (float)c->vocab && next[r] == floorf(next[r]), "%s %s: next %g", c->name,
               mode, (double)next[r]);
}

/* A graph evaluated twice from the same values gives the same bytes in every tensor: from two fresh fills (decode),
 * or from one fill restored before the second run (the larger modes, whose fill costs as much as the step). */
static void check_twice(const struct ir_graph *g, const struct models_config *c, const char *mode, bool fresh)
{
    char err[IR_ERR_LEN] = "";
    struct ir_values *a = ir_values_new(g, 42, err), *b = fresh && a ? ir_values_new(g, 42, err) : NULL;
    CHECKF(a && (b || !fresh), "%s %s: %s", c->name, mode, err);
    size_t n0 = 0, n1 = 0, n2 = 0;
    float *before = a ? snapshot(g, a, &n0) : NULL, *first = NULL, *second = NULL;
    if (a && before) {
        CHECKF(ir_eval(g, a, err) == 0, "%s %s: %s", c->name, mode, err);
        check_next(g, a, c, mode);
        first = snapshot(g, a, &n1);
        if (fresh) {
            CHECKF(ir_eval(g, b, err) == 0, "%s %s: %s", c->name, mode, err);
            struct ir_compare cmp = ir_values_compare(g, a, g, b);
            CHECKF(cmp.identical && cmp.compared > 0, "%s %s: observed or carried tensors differ", c->name, mode);
            second = snapshot(g, b, &n2);
        } else {
            restore(g, a, before);
            CHECKF(ir_eval(g, a, err) == 0, "%s %s: %s", c->name, mode, err);
            second = snapshot(g, a, &n2);
        }
        CHECKF(first && second && n1 == n2 && n1 > 0 && memcmp(first, second, sizeof(float) * n1) == 0,
               "%s %s: not the same bytes", c->name, mode);
        /* The step changed something: the caches took their new rows. */
        CHECKF(first && n0 == n1 && memcmp(before, first, sizeof(float) * n1) != 0, "%s %s: nothing computed",
               c->name, mode);
    }
    free(before);
    free(first);
    free(second);
    ir_values_free(a);
    ir_values_free(b);
}

/* Whether rotary scaling a is b: the same kind, fields given and values, the attention factor within 1e-15 (b's may
 * be computed from its published formula). */
static bool scaling_is(const struct ir_rope_scaling *a, const struct ir_rope_scaling *b)
{
    return a->kind == b->kind && a->factor.has == b->factor.has && a->factor.v == b->factor.v && a->orig == b->orig &&
           a->low_freq.has == b->low_freq.has && a->low_freq.v == b->low_freq.v &&
           a->high_freq.has == b->high_freq.has && a->high_freq.v == b->high_freq.v &&
           a->beta_fast.has == b->beta_fast.has && a->beta_fast.v == b->beta_fast.v &&
           a->beta_slow.has == b->beta_slow.has && a->beta_slow.v == b->beta_slow.v && a->truncate == b->truncate &&
           a->magnitude.has == b->magnitude.has && fabs(a->magnitude.v - b->magnitude.v) < 1e-15;
}

/* Every rope of a lifted model carries its published rotary scaling (config.json's rope_scaling) at its base:
 * llama3.2-1b's llama3 band; gpt-oss-20b's YaRN, not truncated, its attention factor 0.1 · ln 32 + 1 on the tables;
 * deepseek's YaRN by 40, truncated, its attention factor 1 (mscale over mscale_all_dim; the logit scale takes
 * mscale_all_dim's); the tiny rows' own; none where the config has none. */
static void test_rope_scalings(void)
{
    const struct ir_rope_scaling none = {0};
    const struct ir_rope_scaling l3 = {.kind = IR_ROPESCALE_LLAMA3, .factor = {true, 32}, .orig = 8192,
                                       .low_freq = {true, 1}, .high_freq = {true, 4}};
    const struct ir_rope_scaling tiny_l3 = {.kind = IR_ROPESCALE_LLAMA3, .factor = {true, 8}, .orig = 256,
                                            .low_freq = {true, 1}, .high_freq = {true, 4}};
    const struct ir_rope_scaling oss = {.kind = IR_ROPESCALE_YARN, .factor = {true, 32}, .orig = 4096,
                                        .beta_fast = {true, 32}, .beta_slow = {true, 1},
                                        .magnitude = {true, 0.1 * log(32.0) + 1}};
    const struct ir_rope_scaling tiny_oss = {.kind = IR_ROPESCALE_YARN, .factor = {true, 4}, .orig = 16,
                                             .beta_fast = {true, 32}, .beta_slow = {true, 1}, .truncate = true,
                                             .magnitude = {true, 0.1 * log(4.0) + 1}};
    const struct ir_rope_scaling ds = {.kind = IR_ROPESCALE_YARN, .factor = {true, 40}, .orig = 4096,
                                       .beta_fast = {true, 32}, .beta_slow = {true, 1}, .truncate = true};
    const struct ir_rope_scaling tiny_ds = {.kind = IR_ROPESCALE_YARN, .factor = {true, 4}, .orig = 16,
                                            .beta_fast = {true, 32}, .beta_slow = {true, 1}, .truncate = true};
    const struct {
        const char *model;
        const struct ir_rope_scaling *want;
    } cases[] = {{"llama3.2-1b", &l3},     {"tiny-llama", &tiny_l3},     {"gpt-oss-20b", &oss},
                 {"tiny-gpt-oss", &tiny_oss}, {"deepseek-v2-lite", &ds}, {"deepseek-v3", &ds},
                 {"tiny-deepseek", &tiny_ds}, {"llama3-8b", &none},     {"qwen3-0.6b", &none}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct models_config *c = models_find(cases[i].model);
        struct ir_graph *g = lift(cases[i].model, "decode", 1, IR_FMT_Q8_0);
        int ropes = 0, wrong = 0;
        for (int k = 0; g && c && k < g->nops; k++) {
            if (!is_kind(g, k, IR_KIND_ROPE))
                continue;
            const struct ir_rope *r = &g->ops[k].spec.u.rope;
            ropes++;
            wrong += !scaling_is(&r->scaling, cases[i].want) || ir_rope_theta(r) != c->rope_base;
        }
        CHECKF(c && scaling_is(&c->rope_scaling, cases[i].want), "%s: the zoo row's rotary scaling",
               cases[i].model);
        CHECKF(ropes >= 2 && wrong == 0, "%s: %d of %d ropes not scaled as published", cases[i].model, wrong, ropes);
        ir_graph_free(g);
    }
}

/* Every tiny model in every mode evaluates to the same bytes twice. */
static void test_eval_deterministic(void)
{
    static const char *modes[] = {"decode", "prefill:8", "batch:4", "prefill:32", "batch:16"};
    for (int i = 0; i < models_count(); i++) {
        const struct models_config *c = models_get(i);
        if (!c->tiny)
            continue;
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
            struct ir_graph *g = lift(c->name, modes[m], 0, IR_FMT_Q8_0);
            if (g)
                check_twice(g, c, modes[m], m == 0);
            ir_graph_free(g);
        }
    }
}

/* ── tiny-llama against a plain implementation ───────────────────────────────────────────────────────────── */

/* The values of the tensor named `name`. */
static const float *val(const struct ir_graph *g, const struct ir_values *v, const char *name)
{
    ir_tid t = find(g, name);
    const float *p = t == IR_NONE ? NULL : ir_values_cdata(v, t);
    CHECKF(p != NULL, "no values for %s", name);
    return p;
}

/* The values of layer `layer`'s tensor `what` (of sequence seq ≥ 0 of a batch). */
static const float *lval(const struct ir_graph *g, const struct ir_values *v, int layer, const char *what, int seq)
{
    char n[64];
    if (seq >= 0)
        snprintf(n, sizeof n, "blk.%d.%s.%d", layer, what, seq);
    else
        snprintf(n, sizeof n, "blk.%d.%s", layer, what);
    return val(g, v, n);
}

/* y[n] = x[k] · W[k×n] (row-major W). */
static void ref_matvec(const double *x, const float *w, int k, int n, double *y)
{
    for (int j = 0; j < n; j++)
        y[j] = 0;
    for (int i = 0; i < k; i++)
        for (int j = 0; j < n; j++)
            y[j] += x[i] * w[(size_t)i * n + j];
}

/* y = x / sqrt(mean(x²) + eps) · w over n values. */
static void ref_rms(const double *x, const float *w, int n, double eps, double *y)
{
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    double r = 1 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++)
        y[i] = x[i] * r * w[i];
}

/* Rotate the first 2·half values of each of `heads` heads of x (width hd) by the tables' row pos (tables `half`
 * wide): pair i is (i, i + half), or with adjacent (2i, 2i + 1) as llama.cpp's NORM rope type turns it. */
static void ref_turn(double *x, int heads, int hd, int half, const float *cos, const float *sin, int pos, bool adjacent)
{
    for (int h = 0; h < heads; h++)
        for (int i = 0; i < half; i++) {
            int i0 = h * hd + (adjacent ? 2 * i : i), i1 = h * hd + (adjacent ? 2 * i + 1 : i + half);
            double a = x[i0], b = x[i1];
            double c = cos[pos * half + i], s = sin[pos * half + i];
            x[i0] = a * c - b * s;
            x[i1] = a * s + b * c;
        }
}

/* Rotate each of `heads` heads of x (width hd, all of it rotated) by the tables' row pos. */
static void ref_rope(double *x, int heads, int hd, const float *cos, const float *sin, int pos, bool adjacent)
{
    ref_turn(x, heads, hd, hd / 2, cos, sin, pos, adjacent);
}

/* Rotate the first 2·half values (half ≤ 64) of each of `heads` heads of x as ref_turn does, by position pos's
 * angles under the model's published rotary scaling (tests/rope_reference.h, not the graph's tables), cos and sin
 * times its attention factor. */
static void ref_turn_published(double *x, int heads, int hd, int half, const struct models_config *m, int pos,
                               bool adjacent)
{
    float cos_row[64], sin_row[64];
    double f = ref_attention_factor(&m->rope_scaling);
    CHECK(half <= 64);
    for (int i = 0; i < half && i < 64; i++) {
        double angle = pos * ref_scaled_freq(&m->rope_scaling, m->rope_base, half, i);
        cos_row[i] = (float)(f * cos(angle));
        sin_row[i] = (float)(f * sin(angle));
    }
    ref_turn(x, heads, hd, half <= 64 ? half : 64, cos_row, sin_row, 0, adjacent);
}

/* Check the lifted graph's rotary tables (ctx rows of `half` values) hold the angles of model m's published rotary
 * scaling: value i of row p is cos (sin) of p · ω_i times the attention factor, ω_i pair i's inverse frequency at
 * m's base scaled as its rope_scaling says (tests/rope_reference.h), over a rotated width of 2·half. A scaled model's
 * tables must also be far from the unscaled angles, so the scaling is seen to reach them. */
static void check_tables(const struct ir_graph *g, struct ir_values *v, const struct models_config *m,
                         const char *what)
{
    ir_tid ct = find(g, "rope.cos"), st = find(g, "rope.sin");
    CHECKF(ct >= 0 && st >= 0, "%s: no rotary tables", what);
    if (ct < 0 || st < 0)
        return;
    int64_t half = g->tensors[ct].cols, rows = g->tensors[ct].rows;
    const float *c = ir_values_cdata(v, ct), *s = ir_values_cdata(v, st);
    double worst = 0, unscaled = 0, f = ref_attention_factor(&m->rope_scaling);
    for (int64_t p = 0; c && s && p < rows; p++)
        for (int64_t i = 0; i < half; i++) {
            double theta = (double)p * ref_scaled_freq(&m->rope_scaling, m->rope_base, (int)half, (int)i);
            double plain = (double)p * ref_inv_freq(m->rope_base, 2.0 * (double)half, (int)i);
            worst = fmax(worst, fabs(c[p * half + i] - f * cos(theta)));
            worst = fmax(worst, fabs(s[p * half + i] - f * sin(theta)));
            unscaled = fmax(unscaled, fabs(c[p * half + i] - cos(plain)));
            unscaled = fmax(unscaled, fabs(s[p * half + i] - sin(plain)));
        }
    CHECKF(c && s && worst < 1e-6, "%s: rotary tables differ from base %g's %s angles by %g", what, m->rope_base,
           ir_ropescale_name(m->rope_scaling.kind), worst);
    CHECKF(m->rope_scaling.kind == IR_ROPESCALE_NONE || unscaled > 0.1,
           "%s: %s rotary tables within %g of the unscaled angles", what, ir_ropescale_name(m->rope_scaling.kind),
           unscaled);
}

/* The largest difference of n values of a from the reference r, relative to r's largest magnitude. */
static double rel_diff(const float *a, const double *r, int n)
{
    double big = 1e-30, diff = 0;
    for (int i = 0; i < n; i++) {
        big = fmax(big, fabs(r[i]));
        diff = fmax(diff, fabs(a[i] - r[i]));
    }
    return diff / big;
}

enum { D = 256, H = 4, KV = 2, HD = 64, FF = 512, V = 512, CTX = 64, HQ = H * HD, HK = KV * HD, ROWS = 4 };

/* Each of the H heads of q (HD wide) attending the cached rows 0..last, its group's key/value head of kvn (rows
 * `stride` wide): softmax of the logits times scale, in double, into att. */
static void ref_attend(const double *q, const double *kc, const double *vc, int kvn, int stride, int last, double scale,
                       double *att)
{
    for (int h = 0; h < H; h++) {
        int kvh = h / (H / kvn);
        double logit[CTX], mx = -INFINITY, sum = 0;
        for (int j = 0; j <= last; j++) {
            double s = 0;
            for (int i = 0; i < HD; i++)
                s += q[h * HD + i] * kc[j * stride + kvh * HD + i];
            logit[j] = s * scale;
            mx = fmax(mx, logit[j]);
        }
        for (int j = 0; j <= last; j++) {
            logit[j] = exp(logit[j] - mx);
            sum += logit[j];
        }
        for (int i = 0; i < HD; i++) {
            double s = 0;
            for (int j = 0; j <= last; j++)
                s += logit[j] / sum * vc[j * stride + kvh * HD + i];
            att[h * HD + i] = s;
        }
    }
}

/* One sequence's rows through one layer of the reference: x (rows × D) at positions pos.., the layer's caches as
 * they were before the step (kc0, vc0) updated into kc, vc. */
static void ref_layer(const struct ir_graph *g, const struct ir_values *v, int layer, double eps, int rows, int pos,
                      const float *kc0, const float *vc0, double x[][D], double *kc, double *vc)
{
    static double xn[D], q[ROWS][HQ], k[HK], vv[HK], att[HQ], o[D], gate[FF], up[FF], dn[D];
    for (int i = 0; i < CTX * HK; i++) {
        kc[i] = kc0[i];
        vc[i] = vc0[i];
    }
    for (int r = 0; r < rows; r++) {
        ref_rms(x[r], lval(g, v, layer, "attn_norm.weight", -1), D, eps, xn);
        ref_matvec(xn, lval(g, v, layer, "attn_q.weight", -1), D, HQ, q[r]);
        ref_matvec(xn, lval(g, v, layer, "attn_k.weight", -1), D, HK, k);
        ref_matvec(xn, lval(g, v, layer, "attn_v.weight", -1), D, HK, vv);
        ref_rope(q[r], H, HD, val(g, v, "rope.cos"), val(g, v, "rope.sin"), pos + r, true); /* llama: NORM */
        ref_rope(k, KV, HD, val(g, v, "rope.cos"), val(g, v, "rope.sin"), pos + r, true);
        for (int i = 0; i < HK; i++) {
            kc[(pos + r) * HK + i] = k[i];
            vc[(pos + r) * HK + i] = vv[i];
        }
    }
    for (int r = 0; r < rows; r++) {
        ref_attend(q[r], kc, vc, KV, HK, pos + r, 1 / sqrt((double)HD), att);
        ref_matvec(att, lval(g, v, layer, "attn_output.weight", -1), HQ, D, o);
        for (int i = 0; i < D; i++)
            x[r][i] += o[i];
        ref_rms(x[r], lval(g, v, layer, "ffn_norm.weight", -1), D, eps, xn);
        ref_matvec(xn, lval(g, v, layer, "ffn_gate.weight", -1), D, FF, gate);
        ref_matvec(xn, lval(g, v, layer, "ffn_up.weight", -1), D, FF, up);
        for (int i = 0; i < FF; i++)
            gate[i] = gate[i] / (1 + exp(-gate[i])) * up[i];
        ref_matvec(gate, lval(g, v, layer, "ffn_down.weight", -1), FF, D, dn);
        for (int i = 0; i < D; i++)
            x[r][i] += dn[i];
    }
}

/* One sequence of the step through the reference and compared with the evaluation: `rows` rows of tokens at
 * position pos, its caches (of batch sequence seq, or -1) as they were before the step; `out` is the row of the
 * evaluated head (output_norm, logits, next) that the sequence's last row reaches. */
static void ref_sequence(const struct ir_graph *g, const struct ir_values *v, double eps, const int *tokens, int rows,
                         int pos, int seq, float kc0[2][CTX * HK], float vc0[2][CTX * HK], int out, const char *what)
{
    static double x[ROWS][D], xn[D], logits[V], kc[CTX * HK], vc[CTX * HK];
    const float *emb = val(g, v, "token_embd.weight");
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < D; i++)
            x[r][i] = emb[tokens[r] * D + i];
    for (int layer = 0; layer < 2; layer++) {
        ref_layer(g, v, layer, eps, rows, pos, kc0[layer], vc0[layer], x, kc, vc);
        double dk = rel_diff(lval(g, v, layer, "k_cache", seq), kc, CTX * HK);
        double dv = rel_diff(lval(g, v, layer, "v_cache", seq), vc, CTX * HK);
        CHECKF(dk < 1e-5 && dv < 1e-5, "%s: layer %d caches differ by %g, %g", what, layer, dk, dv);
    }
    const double *last = x[rows - 1];
    ref_rms(last, val(g, v, "output_norm.weight"), D, eps, xn);
    ref_matvec(xn, val(g, v, "output.weight"), D, V, logits);
    int best = 0;
    for (int i = 1; i < V; i++)
        if (logits[i] > logits[best])
            best = i;
    double hidden = rel_diff(val(g, v, "output_norm") + out * D, xn, D);
    double lg = rel_diff(val(g, v, "logits") + out * V, logits, V);
    CHECKF(hidden < 1e-5, "%s: final hidden state differs by %g", what, hidden);
    CHECKF(lg < 1e-5, "%s: logits differ by %g", what, lg);
    CHECKF(val(g, v, "next")[out] == (float)best, "%s: next %g, reference %d", what, (double)val(g, v, "next")[out],
           best);
}

/* tiny-llama evaluated in `mode` matches the plain implementation, sequence by sequence: the caches' new rows, the
 * final hidden state, the logits and the next token. Weights are taken as plain values (the checkpoint flag dropped)
 * so the reference reads the very values the evaluator multiplies by. */
static void check_reference(const char *mode, int nseq, int rows, const int *pos, const int *tokens)
{
    const struct models_config *c = models_find("tiny-llama");
    struct ir_graph *g = lift("tiny-llama", mode, 0, IR_FMT_F32);
    if (!g || !c)
        return;
    CHECK(c->hidden == D && c->heads == H && c->kv_heads == KV && c->head_dim == HD && c->ffn == FF &&
          c->vocab == V && c->ctx == CTX && c->layers == 2 && rows <= ROWS);
    for (int t = 0; t < g->ntensors; t++)
        g->tensors[t].checkpoint = false;
    char err[IR_ERR_LEN] = "";
    struct ir_values *v = ir_values_new(g, 7, err);
    CHECKF(v != NULL, "%s", err);
    if (!v) {
        ir_graph_free(g);
        return;
    }
    bool batch = nseq > 1;
    float *tok = ir_values_data(v, find(g, batch || rows > 1 ? "tokens" : "token"));
    for (int i = 0; i < nseq * rows; i++)
        tok[i] = (float)tokens[i];
    static float kc0[ROWS][2][CTX * HK], vc0[ROWS][2][CTX * HK];
    for (int b = 0; b < nseq; b++) {
        char n[16] = "pos";
        if (batch)
            snprintf(n, sizeof n, "pos.%d", b);
        ir_values_data(v, find(g, n))[0] = (float)pos[b];
        /* The caches before the step. */
        for (int layer = 0; layer < 2; layer++) {
            memcpy(kc0[b][layer], lval(g, v, layer, "k_cache", batch ? b : -1), sizeof kc0[b][layer]);
            memcpy(vc0[b][layer], lval(g, v, layer, "v_cache", batch ? b : -1), sizeof vc0[b][layer]);
        }
    }
    CHECKF(ir_eval(g, v, err) == 0, "%s", err);
    check_tables(g, v, c, "tiny-llama");
    for (int b = 0; b < nseq; b++) {
        char what[48];
        snprintf(what, sizeof what, "tiny-llama %s seq %d", mode, b);
        ref_sequence(g, v, c->eps, tokens + b * rows, rows, pos[b], batch ? b : -1, kc0[b], vc0[b], b, what);
    }
    ir_values_free(v);
    ir_graph_free(g);
}

/* A decode step, a prefill chunk and a batch of tiny-llama against the plain implementation. */
static void test_reference(void)
{
    static const int pos1[] = {37}, tok1[] = {123};
    check_reference("decode", 1, 1, pos1, tok1);
    static const int pos2[] = {29}, tok2[] = {5, 511, 0, 300};
    check_reference("prefill:4", 1, 4, pos2, tok2);
    static const int pos3[] = {0, 41, 63}, tok3[] = {77, 9, 400};
    check_reference("batch:3", 3, 1, pos3, tok3);
}

/* ── tiny-qwen3-next's Gated DeltaNet layer against a plain implementation ───────────────────────────────── */

enum { GKH = 2, GVH = 4, GDK = 64, GDV = 64, TAPS = 4, GQK = GKH * GDK, GVW = GVH * GDV };

/* y = x / sqrt(mean(x²) + eps) · w over n values: a (1+w) norm whose checkpoint stores w + 1 (qwen3-next's). */
static void ref_rms1(const double *x, const float *w, int n, double eps, double *y)
{
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    double r = 1 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++)
        y[i] = x[i] * r * w[i];
}

/* SiLU and the logistic function. */
static double ref_silu(double x) { return x / (1 + exp(-x)); }
static double ref_sigmoid(double x) { return 1 / (1 + exp(-x)); }

/* One row's causal convolution of `chan` channels: the ring's TAPS−1 rows (oldest first) then x, the SiLU of the sum;
 * the ring moves on by one row. */
static void ref_conv_silu(double *ring, const double *x, const float *w, int chan, double *y)
{
    for (int c = 0; c < chan; c++) {
        double acc = 0;
        for (int j = 0; j < TAPS; j++)
            acc += w[c * TAPS + j] * (j < TAPS - 1 ? ring[j * chan + c] : x[c]);
        y[c] = ref_silu(acc);
    }
    for (int j = 0; j + 1 < TAPS - 1; j++)
        for (int c = 0; c < chan; c++)
            ring[j * chan + c] = ring[(j + 1) * chan + c];
    for (int c = 0; c < chan; c++)
        ring[(TAPS - 2) * chan + c] = x[c];
}

/* Each of n/width heads of x divided by the root of its sum of squares plus eps. */
static void ref_l2(double *x, int n, int width, double eps)
{
    for (int h = 0; h < n / width; h++) {
        double ss = 0;
        for (int i = 0; i < width; i++)
            ss += x[h * width + i] * x[h * width + i];
        for (int i = 0; i < width; i++)
            x[h * width + i] /= sqrt(ss + eps);
    }
}

/* One row of the gated delta rule: each value head η reads key head η/(GVH/GKH), decays its memory S (GDK × GDV),
 * writes β·(v − Sᵀk) along k, reads with q/√GDK, and its output is RMS-normed, weighted and gated by silu(z). */
static void ref_delta(double *S, const double *q, const double *k, const double *v, const double *z,
                      const double *beta, const double *g, const float *w, double eps, double *y)
{
    for (int h = 0; h < GVH; h++) {
        double *s = S + (size_t)h * GDK * GDV, kv[GDV], o[GDV], ss = 0;
        const double *qh = q + h / (GVH / GKH) * GDK, *kh = k + h / (GVH / GKH) * GDK;
        for (int i = 0; i < GDK * GDV; i++)
            s[i] *= exp(g[h]);
        for (int j = 0; j < GDV; j++) {
            kv[j] = 0;
            for (int i = 0; i < GDK; i++)
                kv[j] += s[i * GDV + j] * kh[i];
        }
        for (int i = 0; i < GDK; i++)
            for (int j = 0; j < GDV; j++)
                s[i * GDV + j] += kh[i] * beta[h] * (v[h * GDV + j] - kv[j]);
        for (int j = 0; j < GDV; j++) {
            o[j] = 0;
            for (int i = 0; i < GDK; i++)
                o[j] += s[i * GDV + j] * qh[i] / sqrt((double)GDK);
            ss += o[j] * o[j];
        }
        double inv = 1 / sqrt(ss / GDV + eps);
        for (int j = 0; j < GDV; j++)
            y[h * GDV + j] = o[j] * inv * w[j] * ref_silu(z[h * GDV + j]);
    }
}

/* tiny-qwen3-next's first layer (Gated DeltaNet) lifted in `mode` (one layer) and evaluated matches the plain
 * implementation: the residual stream after the layer's first half, the recurrent memory and the three rings. */
static void check_gdn_reference(const char *mode, int rows, int pos, const int *tokens)
{
    const struct models_config *c = models_find("tiny-qwen3-next");
    struct ir_graph *g = lift("tiny-qwen3-next", mode, 1, IR_FMT_F32);
    if (!g || !c)
        return;
    CHECK(c->hidden == D && c->lin_k_heads == GKH && c->lin_v_heads == GVH && c->lin_dk == GDK &&
          c->lin_dv == GDV && c->conv_taps == TAPS && rows <= ROWS && c->full_every > 1);
    for (int t = 0; t < g->ntensors; t++)
        g->tensors[t].checkpoint = false;
    char err[IR_ERR_LEN] = "";
    struct ir_values *v = ir_values_new(g, 11, err);
    CHECKF(v != NULL, "%s", err);
    if (!v) {
        ir_graph_free(g);
        return;
    }
    float *tok = ir_values_data(v, find(g, rows > 1 ? "tokens" : "token"));
    for (int i = 0; i < rows; i++)
        tok[i] = (float)tokens[i];
    ir_values_data(v, find(g, "pos"))[0] = (float)pos;
    static double S[GVH * GDK * GDV], ring[3][(TAPS - 1) * GVW];
    static const char *const rings[3] = {"ssm_conv_q.ring", "ssm_conv_k.ring", "ssm_conv_v.ring"};
    static const int chans[3] = {GQK, GQK, GVW};
    const float *s0 = lval(g, v, 0, "ssm_state", -1);
    for (int i = 0; i < GVH * GDK * GDV; i++)
        S[i] = s0[i];
    for (int b = 0; b < 3; b++)
        for (int i = 0; i < (TAPS - 1) * chans[b]; i++)
            ring[b][i] = lval(g, v, 0, rings[b], -1)[i];
    CHECKF(ir_eval(g, v, err) == 0, "%s", err);
    static double x[D], xn[D], p[6][GVW], cq[GQK], ck[GQK], cv[GVW], beta[GVH], gd[GVH], y[GVW], o[D];
    static const char *const proj[6] = {"ssm_q.weight", "ssm_k.weight", "ssm_v.weight",
                                        "ssm_z.weight", "ssm_b.weight", "ssm_a_in.weight"};
    static const int widths[6] = {GQK, GQK, GVW, GVW, GVH, GVH};
    const float *alog = lval(g, v, 0, "ssm_a", -1), *dt = lval(g, v, 0, "ssm_dt.bias", -1);
    double worst = 0;
    for (int r = 0; r < rows; r++) {
        for (int i = 0; i < D; i++)
            x[i] = val(g, v, "token_embd.weight")[tokens[r] * D + i];
        ref_rms1(x, lval(g, v, 0, "attn_norm.weight", -1), D, c->eps, xn);
        for (int i = 0; i < 6; i++)
            ref_matvec(xn, lval(g, v, 0, proj[i], -1), D, widths[i], p[i]);
        ref_conv_silu(ring[0], p[0], lval(g, v, 0, "ssm_conv1d_q.weight", -1), GQK, cq);
        ref_conv_silu(ring[1], p[1], lval(g, v, 0, "ssm_conv1d_k.weight", -1), GQK, ck);
        ref_conv_silu(ring[2], p[2], lval(g, v, 0, "ssm_conv1d_v.weight", -1), GVW, cv);
        ref_l2(cq, GQK, GDK, c->eps);
        ref_l2(ck, GQK, GDK, c->eps);
        for (int h = 0; h < GVH; h++) {
            beta[h] = ref_sigmoid(p[4][h]);
            double sp = p[5][h] + dt[h];
            gd[h] = -exp(alog[h]) * (sp > 20 ? sp : log1p(exp(sp)));
        }
        ref_delta(S, cq, ck, cv, p[3], beta, gd, lval(g, v, 0, "ssm_norm.weight", -1), c->eps, y);
        ref_matvec(y, lval(g, v, 0, "ssm_out.weight", -1), GVW, D, o);
        for (int i = 0; i < D; i++)
            x[i] += o[i];
        worst = fmax(worst, rel_diff(lval(g, v, 0, "attn_res", -1) + r * D, x, D));
    }
    double ds = rel_diff(lval(g, v, 0, "ssm_state", -1), S, GVH * GDK * GDV);
    double dr = 0;
    for (int b = 0; b < 3; b++)
        dr = fmax(dr, rel_diff(lval(g, v, 0, rings[b], -1), ring[b], (TAPS - 1) * chans[b]));
    CHECKF(worst < 1e-5, "tiny-qwen3-next %s: the stream after the DeltaNet half differs by %g", mode, worst);
    CHECKF(ds < 1e-5 && dr < 1e-5, "tiny-qwen3-next %s: memory differs by %g, rings by %g", mode, ds, dr);
    ir_values_free(v);
    ir_graph_free(g);
}

/* A decode step and a prefill chunk of tiny-qwen3-next's DeltaNet layer against the plain implementation. */
static void test_gdn_reference(void)
{
    static const int tok1[] = {321};
    check_gdn_reference("decode", 1, 17, tok1);
    static const int tok2[] = {3, 500, 42, 7};
    check_gdn_reference("prefill:4", 4, 9, tok2);
}

/* ── tiny-nemotron, tiny-qwen2.5, tiny-granite and tiny-minicpm against a plain implementation ───────── */

/* y = x / sqrt(mean(x²) + eps) · (w + offset) over n values. */
static void ref_rms_off(const double *x, const float *w, int n, double eps, double offset, double *y)
{
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    double r = 1 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++)
        y[i] = x[i] * r * (w[i] + offset);
}

/* y = (x − mean(x)) / sqrt(var(x) + eps) · w + b over n values: a LayerNorm with its bias (nemotron's, its (1+w)
 * weight stored as w + 1). */
static void ref_layer_norm(const double *x, const float *w, const float *b, int n, double eps, double *y)
{
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++)
        mean += x[i];
    mean /= n;
    for (int i = 0; i < n; i++)
        var += (x[i] - mean) * (x[i] - mean);
    double r = 1 / sqrt(var / n + eps);
    for (int i = 0; i < n; i++)
        y[i] = (x[i] - mean) * r * w[i] + b[i];
}

/* The dense families' norm of x by the weight (and bias) named `name` ".weight" (".bias"): a LayerNorm with its bias
 * for nemotron, else an RMS norm. */
static void ref_dense_norm(const struct ir_graph *g, const struct ir_values *v, const char *name, bool layer,
                           const double *x, double eps, double *y)
{
    char wn[64], bn[64];
    snprintf(wn, sizeof wn, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    if (layer)
        ref_layer_norm(x, val(g, v, wn), val(g, v, bn), D, eps, y);
    else
        ref_rms_off(x, val(g, v, wn), D, eps, 0.0, y);
}

/* Values for the decode graph g with its weights read as plain values (no checkpoint rows), filled from seed, the
 * step's token and position set; NULL (a failed check) when they cannot be made. */
static struct ir_values *plain_decode_values(struct ir_graph *g, uint64_t seed, int token, int pos)
{
    for (int t = 0; t < g->ntensors; t++)
        g->tensors[t].checkpoint = false;
    char err[IR_ERR_LEN] = "";
    struct ir_values *v = ir_values_new(g, seed, err);
    CHECKF(v != NULL, "%s", err);
    if (v) {
        ir_values_data(v, find(g, "token"))[0] = (float)token;
        ir_values_data(v, find(g, "pos"))[0] = (float)pos;
    }
    return v;
}

/* One decode row of the one-layer `model` (nemotron, qwen2.5, granite or minicpm) at position pos, token tok,
 * checked against the plain implementation: the layer's output stream and the logits. */
static void check_dense_reference(const char *model, int pos, int tok)
{
    const struct models_config *c = models_find(model);
    struct ir_graph *g = lift(model, "decode", 1, IR_FMT_F32);
    if (!g || !c)
        return;
    bool relu2 = strcmp(c->family, "nemotron") == 0, biased = strcmp(c->family, "qwen2.5") == 0;
    bool adjacent = strcmp(c->family, "granite") == 0 || strcmp(c->family, "minicpm") == 0; /* llama.cpp's NORM */
    double rm = c->residual_mult ? c->residual_mult : 1.0;
    int half = (int)(c->rotary_dim ? c->rotary_dim : c->head_dim) / 2;
    int kvn = (int)c->kv_heads, hk = kvn * HD;
    CHECK(c->hidden == D && c->heads == H && (kvn == KV || kvn == H) && c->head_dim == HD && c->ffn == FF &&
          c->vocab == V && c->ctx == CTX);
    char err[IR_ERR_LEN] = "";
    struct ir_values *v = plain_decode_values(g, 5, tok, pos);
    if (!v) {
        ir_graph_free(g);
        return;
    }
    static double kc[CTX * HQ], vc[CTX * HQ];
    for (int i = 0; i < CTX * hk; i++) {
        kc[i] = lval(g, v, 0, "k_cache", -1)[i];
        vc[i] = lval(g, v, 0, "v_cache", -1)[i];
    }
    CHECKF(ir_eval(g, v, err) == 0, "%s", err);
    static double x[D], xn[D], q[HQ], k[HQ], vv[HQ], att[HQ], o[D], gate[FF], up[FF], logits[V];
    for (int i = 0; i < D; i++)
        x[i] = val(g, v, "token_embd.weight")[tok * D + i] * (c->embed_mult ? c->embed_mult : 1.0);
    check_tables(g, v, c, model);
    ref_dense_norm(g, v, "blk.0.attn_norm", relu2, x, c->eps, xn);
    ref_matvec(xn, lval(g, v, 0, "attn_q.weight", -1), D, HQ, q);
    ref_matvec(xn, lval(g, v, 0, "attn_k.weight", -1), D, hk, k);
    ref_matvec(xn, lval(g, v, 0, "attn_v.weight", -1), D, hk, vv);
    for (int i = 0; biased && i < HQ; i++)
        q[i] += lval(g, v, 0, "attn_q.bias", -1)[i];
    for (int i = 0; biased && i < hk; i++) {
        k[i] += lval(g, v, 0, "attn_k.bias", -1)[i];
        vv[i] += lval(g, v, 0, "attn_v.bias", -1)[i];
    }
    ref_turn(q, H, HD, half, val(g, v, "rope.cos"), val(g, v, "rope.sin"), pos, adjacent);
    ref_turn(k, kvn, HD, half, val(g, v, "rope.cos"), val(g, v, "rope.sin"), pos, adjacent);
    for (int i = 0; i < hk; i++) {
        kc[pos * hk + i] = k[i];
        vc[pos * hk + i] = vv[i];
    }
    ref_attend(q, kc, vc, kvn, hk, pos, c->query_scale ? c->query_scale : 1 / sqrt((double)HD), att);
    ref_matvec(att, lval(g, v, 0, "attn_output.weight", -1), HQ, D, o);
    for (int i = 0; i < D; i++)
        x[i] += rm * o[i];
    ref_dense_norm(g, v, "blk.0.ffn_norm", relu2, x, c->eps, xn);
    ref_matvec(xn, lval(g, v, 0, "ffn_up.weight", -1), D, FF, up);
    if (relu2) {
        for (int i = 0; i < FF; i++)
            gate[i] = up[i] > 0 ? up[i] * up[i] : 0;
    } else {
        ref_matvec(xn, lval(g, v, 0, "ffn_gate.weight", -1), D, FF, gate);
        for (int i = 0; i < FF; i++)
            gate[i] = gate[i] / (1 + exp(-gate[i])) * up[i];
    }
    ref_matvec(gate, lval(g, v, 0, "ffn_down.weight", -1), FF, D, o);
    for (int i = 0; i < D; i++)
        x[i] += rm * o[i];
    ref_dense_norm(g, v, "output_norm", relu2, x, c->eps, xn);
    for (int i = 0; c->head_divisor > 0 && i < D; i++)
        xn[i] /= c->head_divisor;
    ref_matvec(xn, val(g, v, "output.weight"), D, V, logits);
    for (int i = 0; c->logit_scale > 0 && i < V; i++)
        logits[i] /= c->logit_scale;
    double dx = rel_diff(lval(g, v, 0, "out", -1), x, D), dl = rel_diff(val(g, v, "logits"), logits, V);
    CHECKF(dx < 1e-5 && dl < 1e-5, "%s decode: the layer's output differs by %g, the logits by %g", model, dx, dl);
    ir_values_free(v);
    ir_graph_free(g);
}

/* A decode step of each dense family's tiny model against the plain implementation. */
static void test_dense_reference(void)
{
    check_dense_reference("tiny-nemotron", 23, 99);
    check_dense_reference("tiny-qwen2.5", 40, 401);
    check_dense_reference("tiny-granite", 5, 17);
    check_dense_reference("tiny-minicpm", 12, 250);
}

/* ── tiny-deepseek against a plain implementation ────────────────────────────────────────────────────────── */

/* tiny-deepseek's sizes: hidden, heads, unrotated and rotary query widths, latent, value width, query low rank,
 * dense FFN, experts, top-k, expert and shared widths, cache rows. */
enum {
    DS_D = 256, DS_H = 4, DS_NOPE = 64, DS_ROPE = 64, DS_QK = DS_NOPE + DS_ROPE, DS_LORA = 256, DS_ROW = DS_LORA + DS_ROPE,
    DS_VD = 64, DS_QL = 256, DS_FF = 512, DS_E = 8, DS_K = 2, DS_EF = 256, DS_SF = 256, DS_CTX = 64
};

/* silu(g) · u over n values, into g. */
static void ref_swiglu(double *g, const double *u, int n)
{
    for (int i = 0; i < n; i++)
        g[i] = g[i] / (1 + exp(-g[i])) * u[i];
}

/* A dense SwiGLU FFN of xn by the layer's weights named `gate`, `up`, `down` (inner width ff), added into out. */
static void ref_glu(const struct ir_graph *g, const struct ir_values *v, int layer, const double *xn, int ff,
                    const char *gate, const char *up, const char *down, double *out)
{
    static double gt[DS_FF], ut[DS_FF], dn[DS_D];
    ref_matvec(xn, lval(g, v, layer, gate, -1), DS_D, ff, gt);
    ref_matvec(xn, lval(g, v, layer, up, -1), DS_D, ff, ut);
    ref_swiglu(gt, ut, ff);
    ref_matvec(gt, lval(g, v, layer, down, -1), ff, DS_D, dn);
    for (int i = 0; i < DS_D; i++)
        out[i] += dn[i];
}

/* The k largest of score[n] in rank order into chosen (the lower index first on ties). */
static void ref_top_k(const double *score, int n, int k, int *chosen)
{
    for (int r = 0; r < k; r++) {
        int best = -1;
        for (int e = 0; e < n; e++) {
            bool taken = false;
            for (int c = 0; c < r; c++)
                taken |= chosen[c] == e;
            if (!taken && (best < 0 || score[e] > score[best]))
                best = e;
        }
        chosen[r] = best;
    }
}

/* The routed experts of xn, routed as DeepSeek-V3's (tiny-deepseek's zoo row): sigmoid scores, the correction row
 * added for the choice, the 2 best of 4 groups of 2 (by each group's two best) competing, the top k of those, their
 * unbiased scores renormalised and times 2.5 (lower index first on ties); added into out. */
static void ref_experts(const struct ir_graph *g, const struct ir_values *v, int layer, const double *xn, double *out)
{
    enum { GROUPS = 4, KEPT = 2, SIZE = DS_E / GROUPS };
    static double logit[DS_E], gt[DS_EF], ut[DS_EF];
    const float *gate = lval(g, v, layer, "ffn_gate_exps.weight", -1), *up = lval(g, v, layer, "ffn_up_exps.weight", -1);
    const float *down = lval(g, v, layer, "ffn_down_exps.weight", -1);
    const float *corr = lval(g, v, layer, "exp_probs_b.bias", -1);
    ref_matvec(xn, lval(g, v, layer, "ffn_gate_inp.weight", -1), DS_D, DS_E, logit);
    double choose[DS_E], gs[GROUPS];
    for (int e = 0; e < DS_E; e++) {
        logit[e] = 1.0 / (1.0 + exp(-logit[e]));
        choose[e] = logit[e] + corr[e];
    }
    for (int j = 0; j < GROUPS; j++) {
        int two[2];
        ref_top_k(choose + j * SIZE, SIZE, 2, two);
        gs[j] = choose[j * SIZE + two[0]] + choose[j * SIZE + two[1]];
    }
    int kept[KEPT];
    ref_top_k(gs, GROUPS, KEPT, kept);
    for (int e = 0; e < DS_E; e++)
        if (e / SIZE != kept[0] && e / SIZE != kept[1])
            choose[e] = -INFINITY;
    int chosen[DS_K];
    double wsum = 0, sum = 1.0 / 2.5; /* w = score / wsum · 2.5 */
    ref_top_k(choose, DS_E, DS_K, chosen);
    for (int k = 0; k < DS_K; k++)
        wsum += logit[chosen[k]];
    for (int k = 0; k < DS_K; k++) {
        int e = chosen[k];
        for (int j = 0; j < DS_EF; j++) {
            gt[j] = ut[j] = 0;
            for (int t = 0; t < DS_D; t++) {
                gt[j] += xn[t] * gate[(size_t)t * DS_E * DS_EF + e * DS_EF + j];
                ut[j] += xn[t] * up[(size_t)t * DS_E * DS_EF + e * DS_EF + j];
            }
        }
        ref_swiglu(gt, ut, DS_EF);
        double w = logit[e] / sum / wsum;
        for (int i = 0; i < DS_D; i++) {
            double o = 0;
            for (int j = 0; j < DS_EF; j++)
                o += gt[j] * down[(size_t)j * DS_E * DS_D + e * DS_D + i];
            out[i] += w * o;
        }
    }
}

/* One decode row x through layer `layer` of tiny-deepseek at position pos, the latent attention computed in its
 * unabsorbed form (each cached latent expanded into every head's keys and values), the cache kc (as it was before
 * the step) taking its new row. */
static void ref_deepseek_layer(const struct ir_graph *g, const struct ir_values *v, const struct models_config *m,
                               int layer, int pos, double *x, double *kc)
{
    static double xn[DS_D], qa[DS_QL], q[DS_H * DS_QK], kva[DS_ROW], row[DS_ROW], att[DS_H * DS_VD], o[DS_D];
    static double ffn[DS_D], logit[DS_CTX];
    double eps = m->eps, scale = ref_deepseek_scale(m, 1.0); /* tiny-deepseek's mscale_all_dim */
    const float *wkb = lval(g, v, layer, "attn_k_b.weight", -1), *wvb = lval(g, v, layer, "attn_v_b.weight", -1);
    ref_rms(x, lval(g, v, layer, "attn_norm.weight", -1), DS_D, eps, xn);
    ref_matvec(xn, lval(g, v, layer, "attn_q_a.weight", -1), DS_D, DS_QL, qa);
    ref_rms(qa, lval(g, v, layer, "attn_q_a_norm.weight", -1), DS_QL, eps, qa);
    ref_matvec(qa, lval(g, v, layer, "attn_q_b.weight", -1), DS_QL, DS_H * DS_QK, q);
    ref_matvec(xn, lval(g, v, layer, "attn_kv_a_mqa.weight", -1), DS_D, DS_ROW, kva);
    ref_rms(kva, lval(g, v, layer, "attn_kv_a_norm.weight", -1), DS_LORA, eps, row);
    for (int i = 0; i < DS_ROPE; i++)
        row[DS_LORA + i] = kva[DS_LORA + i];
    ref_turn_published(row + DS_LORA, 1, DS_ROPE, DS_ROPE / 2, m, pos, true); /* deepseek2: NORM */
    for (int i = 0; i < DS_ROW; i++)
        kc[pos * DS_ROW + i] = row[i];
    for (int h = 0; h < DS_H; h++) {
        double *qn = q + h * DS_QK, *qp = qn + DS_NOPE, mx = -INFINITY, sum = 0;
        ref_turn_published(qp, 1, DS_ROPE, DS_ROPE / 2, m, pos, true);
        for (int j = 0; j <= pos; j++) {
            const double *c = kc + j * DS_ROW;
            double s = 0;
            for (int i = 0; i < DS_NOPE; i++) {
                double k = 0;
                for (int t = 0; t < DS_LORA; t++)
                    k += wkb[(size_t)(h * DS_NOPE + i) * DS_LORA + t] * c[t];
                s += qn[i] * k;
            }
            for (int i = 0; i < DS_ROPE; i++)
                s += qp[i] * c[DS_LORA + i];
            logit[j] = s * scale;
            mx = fmax(mx, logit[j]);
        }
        for (int j = 0; j <= pos; j++)
            sum += logit[j] = exp(logit[j] - mx);
        for (int t = 0; t < DS_VD; t++)
            att[h * DS_VD + t] = 0;
        for (int j = 0; j <= pos; j++)
            for (int t = 0; t < DS_VD; t++) {
                double value = 0;
                for (int u = 0; u < DS_LORA; u++)
                    value += kc[j * DS_ROW + u] * wvb[(size_t)(h * DS_LORA + u) * DS_VD + t];
                att[h * DS_VD + t] += logit[j] / sum * value;
            }
    }
    ref_matvec(att, lval(g, v, layer, "attn_output.weight", -1), DS_H * DS_VD, DS_D, o);
    for (int i = 0; i < DS_D; i++)
        x[i] += o[i];
    ref_rms(x, lval(g, v, layer, "ffn_norm.weight", -1), DS_D, eps, xn);
    for (int i = 0; i < DS_D; i++)
        ffn[i] = 0;
    if (layer == 0) {
        ref_glu(g, v, layer, xn, DS_FF, "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight", ffn);
    } else {
        ref_experts(g, v, layer, xn, ffn);
        ref_glu(g, v, layer, xn, DS_SF, "ffn_gate_shexp.weight", "ffn_up_shexp.weight", "ffn_down_shexp.weight", ffn);
    }
    for (int i = 0; i < DS_D; i++)
        x[i] += ffn[i];
}

/* A tiny-deepseek decode step evaluated against the plain implementation, layer by layer (the dense first layer and
 * a mixture layer): each layer from the evaluator's input to it, its output row and its cache within 1e-5. Weights
 * are taken as plain values, as for tiny-llama. */
static void test_reference_deepseek(void)
{
    const struct models_config *c = models_find("tiny-deepseek");
    struct ir_graph *g = lift("tiny-deepseek", "decode", 0, IR_FMT_F32);
    if (!g || !c) {
        ir_graph_free(g);
        return;
    }
    const struct models_deepseek *k = &c->deepseek;
    CHECK(c->hidden == DS_D && c->heads == DS_H && c->head_dim == DS_NOPE && k->rope_dim == DS_ROPE &&
          k->kv_lora == DS_LORA && k->v_head_dim == DS_VD && k->q_lora == DS_QL && c->ffn == DS_FF &&
          c->experts == DS_E && c->top_k == DS_K && c->expert_ffn == DS_EF && k->shared_ffn == DS_SF &&
          c->ctx == DS_CTX && k->dense_layers == 1 && fabs(c->query_scale - ref_deepseek_scale(c, 1.0)) < 1e-15 &&
          c->rope_scaling.kind == IR_ROPESCALE_YARN && !c->rope_scaling.magnitude.has);
    const int pos = 29;
    char err[IR_ERR_LEN] = "";
    struct ir_values *v = plain_decode_values(g, 11, 300, pos);
    if (!v) {
        ir_graph_free(g);
        return;
    }
    static float kc0[2][DS_CTX * DS_ROW];
    for (int layer = 0; layer < 2; layer++)
        memcpy(kc0[layer], lval(g, v, layer, "kv_cache", -1), sizeof kc0[layer]);
    CHECKF(ir_eval(g, v, err) == 0, "%s", err);
    check_tables(g, v, c, "tiny-deepseek");
    static double x[DS_D], kc[DS_CTX * DS_ROW];
    for (int layer = 0; layer < 2; layer++) {
        const float *in = layer == 0 ? val(g, v, "embd") : lval(g, v, layer - 1, "out", -1);
        for (int i = 0; i < DS_D; i++)
            x[i] = in[i];
        for (int i = 0; i < DS_CTX * DS_ROW; i++)
            kc[i] = kc0[layer][i];
        ref_deepseek_layer(g, v, c, layer, pos, x, kc);
        double dk = rel_diff(lval(g, v, layer, "kv_cache", -1), kc, DS_CTX * DS_ROW);
        double dx = rel_diff(lval(g, v, layer, "out", -1), x, DS_D);
        CHECKF(dk < 1e-5, "tiny-deepseek layer %d: cache differs by %g", layer, dk);
        CHECKF(dx < 1e-5, "tiny-deepseek layer %d: output differs by %g", layer, dx);
    }
    ir_values_free(v);
    ir_graph_free(g);
}

/* ── tiny-gpt-oss against a plain implementation ─────────────────────────────────────────────────────────── */

/* tiny-gpt-oss's sizes: hidden, query and kv heads, head width, their widths, experts, top-k, expert width, cache
 * rows. */
enum { GO_D = 256, GO_H = 8, GO_KV = 2, GO_HD = 64, GO_HQ = GO_H * GO_HD, GO_HK = GO_KV * GO_HD, GO_E = 8, GO_K = 2,
       GO_EF = 256, GO_CTX = 64 };

/* x[i] += b[i] over n values. */
static void ref_add(double *x, const float *b, int n)
{
    for (int i = 0; i < n; i++)
        x[i] += b[i];
}

/* Each query head of q attending the cached rows lo..hi of its group's kv head, with its sink's logit in the
 * softmax's denominator only, into att. */
static void ref_attend_sinks(const double *q, const double *kc, const double *vc, int lo, int hi, const float *sinks,
                             double *att)
{
    for (int h = 0; h < GO_H; h++) {
        int kvh = h / (GO_H / GO_KV);
        double logit[GO_CTX], mx = sinks[h], sum = 0;
        for (int j = lo; j <= hi; j++) {
            double s = 0;
            for (int i = 0; i < GO_HD; i++)
                s += q[h * GO_HD + i] * kc[j * GO_HK + kvh * GO_HD + i];
            logit[j] = s / sqrt((double)GO_HD);
            mx = fmax(mx, logit[j]);
        }
        for (int j = lo; j <= hi; j++)
            sum += logit[j] = exp(logit[j] - mx);
        sum += exp(sinks[h] - mx);
        for (int i = 0; i < GO_HD; i++) {
            double a = 0;
            for (int j = lo; j <= hi; j++)
                a += logit[j] / sum * vc[j * GO_HK + kvh * GO_HD + i];
            att[h * GO_HD + i] = a;
        }
    }
}

/* The clamped SwiGLU of gate g and up u: min(g, limit)·σ(alpha·min(g, limit))·(clamp(u, ±limit) + 1). */
static double ref_clamped(double g, double u, double alpha, double limit)
{
    g = fmin(g, limit);
    u = fmax(-limit, fmin(u, limit));
    return g / (1 + exp(-alpha * g)) * (u + 1);
}

/* The biased router's top k logits (lower index first on ties), a softmax over them, and each chosen expert's
 * biased clamped SwiGLU, added into out. */
static void ref_gpt_oss_experts(const struct ir_graph *g, const struct ir_values *v, int layer, const double *xn,
                                double alpha, double limit, double *out)
{
    static double logit[GO_E], gt[GO_EF], ut[GO_EF];
    const float *gate = lval(g, v, layer, "ffn_gate_exps.weight", -1), *up = lval(g, v, layer, "ffn_up_exps.weight", -1);
    const float *down = lval(g, v, layer, "ffn_down_exps.weight", -1);
    const float *gb = lval(g, v, layer, "ffn_gate_exps.bias", -1), *ub = lval(g, v, layer, "ffn_up_exps.bias", -1);
    const float *db = lval(g, v, layer, "ffn_down_exps.bias", -1);
    ref_matvec(xn, lval(g, v, layer, "ffn_gate_inp.weight", -1), GO_D, GO_E, logit);
    ref_add(logit, lval(g, v, layer, "ffn_gate_inp.bias", -1), GO_E);
    int chosen[GO_K];
    double w[GO_K], sum = 0;
    ref_top_k(logit, GO_E, GO_K, chosen);
    for (int k = 0; k < GO_K; k++)
        sum += w[k] = exp(logit[chosen[k]] - logit[chosen[0]]);
    for (int k = 0; k < GO_K; k++) {
        int e = chosen[k];
        for (int j = 0; j < GO_EF; j++) {
            gt[j] = gb[e * GO_EF + j];
            ut[j] = ub[e * GO_EF + j];
            for (int t = 0; t < GO_D; t++) {
                gt[j] += xn[t] * gate[(size_t)t * GO_E * GO_EF + e * GO_EF + j];
                ut[j] += xn[t] * up[(size_t)t * GO_E * GO_EF + e * GO_EF + j];
            }
            gt[j] = ref_clamped(gt[j], ut[j], alpha, limit);
        }
        for (int i = 0; i < GO_D; i++) {
            double o = db[e * GO_D + i];
            for (int j = 0; j < GO_EF; j++)
                o += gt[j] * down[(size_t)j * GO_E * GO_D + e * GO_D + i];
            out[i] += w[k] / sum * o;
        }
    }
}

/* One decode row x through layer `layer` of tiny-gpt-oss at position pos: biased q, k, v, the rotations, the caches
 * (as they were before the step) taking their new rows, the attention with sinks over the layer's window, the biased
 * output product, then the mixture. */
static void ref_gpt_oss_layer(const struct ir_graph *g, const struct ir_values *v, const struct models_config *c,
                              int layer, int pos, double *x, double *kc, double *vc)
{
    static double xn[GO_D], q[GO_HQ], k[GO_HK], vv[GO_HK], att[GO_HQ], o[GO_D], ffn[GO_D];
    ref_rms(x, lval(g, v, layer, "attn_norm.weight", -1), GO_D, c->eps, xn);
    ref_matvec(xn, lval(g, v, layer, "attn_q.weight", -1), GO_D, GO_HQ, q);
    ref_matvec(xn, lval(g, v, layer, "attn_k.weight", -1), GO_D, GO_HK, k);
    ref_matvec(xn, lval(g, v, layer, "attn_v.weight", -1), GO_D, GO_HK, vv);
    ref_add(q, lval(g, v, layer, "attn_q.bias", -1), GO_HQ);
    ref_add(k, lval(g, v, layer, "attn_k.bias", -1), GO_HK);
    ref_add(vv, lval(g, v, layer, "attn_v.bias", -1), GO_HK);
    for (int h = 0; h < GO_H; h++)
        ref_turn_published(q + h * GO_HD, 1, GO_HD, GO_HD / 2, c, pos, false); /* openai-moe: NEOX */
    for (int h = 0; h < GO_KV; h++)
        ref_turn_published(k + h * GO_HD, 1, GO_HD, GO_HD / 2, c, pos, false);
    for (int i = 0; i < GO_HK; i++) {
        kc[pos * GO_HK + i] = k[i];
        vc[pos * GO_HK + i] = vv[i];
    }
    int lo = layer % 2 == 0 && pos - c->window + 1 > 0 ? pos - (int)c->window + 1 : 0;
    ref_attend_sinks(q, kc, vc, lo, pos, lval(g, v, layer, "attn_sinks.weight", -1), att);
    ref_matvec(att, lval(g, v, layer, "attn_output.weight", -1), GO_HQ, GO_D, o);
    ref_add(o, lval(g, v, layer, "attn_output.bias", -1), GO_D);
    for (int i = 0; i < GO_D; i++)
        x[i] += o[i];
    ref_rms(x, lval(g, v, layer, "ffn_norm.weight", -1), GO_D, c->eps, xn);
    for (int i = 0; i < GO_D; i++)
        ffn[i] = 0;
    ref_gpt_oss_experts(g, v, layer, xn, c->swiglu_alpha, c->swiglu_limit, ffn);
    for (int i = 0; i < GO_D; i++)
        x[i] += ffn[i];
}

/* Push some of a layer's expert gate and up biases past the clamped SwiGLU's limit (both signs), so the clamps act. */
static void push_past_limit(const struct ir_graph *g, struct ir_values *v, int layer, double limit)
{
    char n[64];
    snprintf(n, sizeof n, "blk.%d.ffn_gate_exps.bias", layer);
    float *gb = ir_values_data(v, find(g, n));
    snprintf(n, sizeof n, "blk.%d.ffn_up_exps.bias", layer);
    float *ub = ir_values_data(v, find(g, n));
    for (int j = 0; gb && ub && j < GO_E * GO_EF; j += 3) {
        gb[j] = (float)(j % 2 ? limit + 2 : -limit - 2);
        ub[j] = (float)(j % 4 == 0 ? limit + 1.5 : -limit - 1.5);
    }
}

/* A tiny-gpt-oss decode step evaluated against the plain implementation, layer by layer (the windowed layer 0 at a
 * position past its window, and the full layer 1): each from the evaluator's input to it, its output row and its
 * caches within 1e-5; some expert biases pushed past the clamps' limit. Weights are taken as plain values. */
static void test_reference_gpt_oss(void)
{
    const struct models_config *c = models_find("tiny-gpt-oss");
    struct ir_graph *g = lift("tiny-gpt-oss", "decode", 0, IR_FMT_F32);
    if (!g || !c) {
        ir_graph_free(g);
        return;
    }
    CHECK(c->hidden == GO_D && c->heads == GO_H && c->kv_heads == GO_KV && c->head_dim == GO_HD &&
          c->experts == GO_E && c->top_k == GO_K && c->expert_ffn == GO_EF && c->ctx == GO_CTX && c->window == 16 &&
          c->query_scale == 0 && c->rotary_dim == 0);
    const int pos = 37;
    char err[IR_ERR_LEN] = "";
    struct ir_values *v = plain_decode_values(g, 13, 123, pos);
    if (!v) {
        ir_graph_free(g);
        return;
    }
    static float kc0[2][GO_CTX * GO_HK], vc0[2][GO_CTX * GO_HK];
    for (int layer = 0; layer < 2; layer++) {
        memcpy(kc0[layer], lval(g, v, layer, "k_cache", -1), sizeof kc0[layer]);
        memcpy(vc0[layer], lval(g, v, layer, "v_cache", -1), sizeof vc0[layer]);
        push_past_limit(g, v, layer, c->swiglu_limit);
    }
    CHECKF(ir_eval(g, v, err) == 0, "%s", err);
    check_tables(g, v, c, "tiny-gpt-oss");
    static double x[GO_D], kc[GO_CTX * GO_HK], vc[GO_CTX * GO_HK];
    for (int layer = 0; layer < 2; layer++) {
        const float *in = layer == 0 ? val(g, v, "embd") : lval(g, v, layer - 1, "out", -1);
        for (int i = 0; i < GO_D; i++)
            x[i] = in[i];
        for (int i = 0; i < GO_CTX * GO_HK; i++) {
            kc[i] = kc0[layer][i];
            vc[i] = vc0[layer][i];
        }
        ref_gpt_oss_layer(g, v, c, layer, pos, x, kc, vc);
        double dk = rel_diff(lval(g, v, layer, "k_cache", -1), kc, GO_CTX * GO_HK);
        double dv = rel_diff(lval(g, v, layer, "v_cache", -1), vc, GO_CTX * GO_HK);
        double dx = rel_diff(lval(g, v, layer, "out", -1), x, GO_D);
        CHECKF(dk < 1e-5 && dv < 1e-5, "tiny-gpt-oss layer %d: caches differ by %g, %g", layer, dk, dv);
        CHECKF(dx < 1e-5, "tiny-gpt-oss layer %d: output differs by %g", layer, dx);
    }
    ir_values_free(v);
    ir_graph_free(g);
}

/* ── tiny-olmo2 against a plain implementation ───────────────────────────────────────────────────────────── */

/* One layer of tiny-olmo2 lifted in `mode` (decode or prefill:N, N ≤ ROWS) and evaluated at position pos matches the
 * plain implementation: no pre-norms, q and k RMS-normed whole before their rotations, the attention's and the FFN's
 * outputs RMS-normed before their residual adds. Compared: the q and k norms and the layer's output, every row, its
 * caches, and the logits of the last row. Weights are taken as plain values. */
static void check_olmo2_reference(const char *mode, int rows, int pos, const int *tokens)
{
    const struct models_config *c = models_find("tiny-olmo2");
    struct ir_graph *g = lift("tiny-olmo2", mode, 1, IR_FMT_F32);
    if (!g || !c) {
        ir_graph_free(g);
        return;
    }
    CHECK(c->hidden == D && c->heads == H && c->kv_heads == H && c->head_dim == HD && c->ffn == FF &&
          c->vocab == V && c->ctx == CTX && rows <= ROWS && c->query_scale == 0 && c->rotary_dim == 0);
    for (int t = 0; t < g->ntensors; t++)
        g->tensors[t].checkpoint = false;
    char err[IR_ERR_LEN] = "";
    struct ir_values *v = ir_values_new(g, 17, err);
    CHECKF(v != NULL, "%s", err);
    if (!v) {
        ir_graph_free(g);
        return;
    }
    float *tok = ir_values_data(v, find(g, rows > 1 ? "tokens" : "token"));
    for (int r = 0; r < rows; r++)
        tok[r] = (float)tokens[r];
    ir_values_data(v, find(g, "pos"))[0] = (float)pos;
    static double kc[CTX * HQ], vc[CTX * HQ];
    for (int i = 0; i < CTX * HQ; i++) {
        kc[i] = lval(g, v, 0, "k_cache", -1)[i];
        vc[i] = lval(g, v, 0, "v_cache", -1)[i];
    }
    CHECKF(ir_eval(g, v, err) == 0, "%s", err);
    const float *cos = val(g, v, "rope.cos"), *sin = val(g, v, "rope.sin");
    static double x[ROWS][D], q[ROWS][HQ], qn[ROWS][HQ], kn[ROWS][HQ], k[HQ], vv[HQ], att[HQ], o[D], on[D];
    static double gate[FF], up[FF], xn[D], logits[V];
    for (int r = 0; r < rows; r++) {
        for (int i = 0; i < D; i++)
            x[r][i] = val(g, v, "token_embd.weight")[tokens[r] * D + i];
        ref_matvec(x[r], lval(g, v, 0, "attn_q.weight", -1), D, HQ, q[r]);
        ref_matvec(x[r], lval(g, v, 0, "attn_k.weight", -1), D, HQ, k);
        ref_matvec(x[r], lval(g, v, 0, "attn_v.weight", -1), D, HQ, vv);
        ref_rms(q[r], lval(g, v, 0, "attn_q_norm.weight", -1), HQ, c->eps, qn[r]);
        ref_rms(k, lval(g, v, 0, "attn_k_norm.weight", -1), HQ, c->eps, kn[r]);
        memcpy(q[r], qn[r], sizeof q[r]);
        memcpy(k, kn[r], sizeof k);
        ref_rope(q[r], H, HD, cos, sin, pos + r, false); /* olmo2: NEOX */
        ref_rope(k, H, HD, cos, sin, pos + r, false);
        for (int i = 0; i < HQ; i++) {
            kc[(pos + r) * HQ + i] = k[i];
            vc[(pos + r) * HQ + i] = vv[i];
        }
    }
    double worst = 0;
    for (int r = 0; r < rows; r++) {
        worst = fmax(worst, rel_diff(lval(g, v, 0, "q_norm", -1) + r * HQ, qn[r], HQ));
        worst = fmax(worst, rel_diff(lval(g, v, 0, "k_norm", -1) + r * HQ, kn[r], HQ));
        ref_attend(q[r], kc, vc, H, HQ, pos + r, 1 / sqrt((double)HD), att);
        ref_matvec(att, lval(g, v, 0, "attn_output.weight", -1), HQ, D, o);
        ref_rms(o, lval(g, v, 0, "post_attention_norm.weight", -1), D, c->eps, on);
        for (int i = 0; i < D; i++)
            x[r][i] += on[i];
        ref_matvec(x[r], lval(g, v, 0, "ffn_gate.weight", -1), D, FF, gate);
        ref_matvec(x[r], lval(g, v, 0, "ffn_up.weight", -1), D, FF, up);
        for (int i = 0; i < FF; i++)
            gate[i] = gate[i] / (1 + exp(-gate[i])) * up[i];
        ref_matvec(gate, lval(g, v, 0, "ffn_down.weight", -1), FF, D, o);
        ref_rms(o, lval(g, v, 0, "post_ffw_norm.weight", -1), D, c->eps, on);
        for (int i = 0; i < D; i++)
            x[r][i] += on[i];
        worst = fmax(worst, rel_diff(lval(g, v, 0, "out", -1) + r * D, x[r], D));
    }
    ref_rms(x[rows - 1], val(g, v, "output_norm.weight"), D, c->eps, xn);
    ref_matvec(xn, val(g, v, "output.weight"), D, V, logits);
    double dk = rel_diff(lval(g, v, 0, "k_cache", -1), kc, CTX * HQ);
    double dv = rel_diff(lval(g, v, 0, "v_cache", -1), vc, CTX * HQ);
    double dl = rel_diff(val(g, v, "logits"), logits, V);
    CHECKF(worst < 1e-5, "tiny-olmo2 %s: the norms or the layer's output differ by %g", mode, worst);
    CHECKF(dk < 1e-5 && dv < 1e-5 && dl < 1e-5, "tiny-olmo2 %s: caches differ by %g, %g, logits by %g", mode, dk, dv,
           dl);
    ir_values_free(v);
    ir_graph_free(g);
}

/* A decode step and a prefill chunk of tiny-olmo2 against the plain implementation. */
static void test_reference_olmo2(void)
{
    static const int one[] = {321}, chunk[] = {7, 500, 0, 256};
    check_olmo2_reference("decode", 1, 45, one);
    check_olmo2_reference("prefill:4", 4, 11, chunk);
}

int main(void)
{
    test_table();
    test_params();
    test_modes();
    test_errors();
    test_formats();
    test_layers();
    test_shape_decode();
    test_shape_prefill();
    test_shape_batch();
    test_shape_moe();
    test_shape_gemma();
    test_shape_qwen3_next();
    test_shape_deepseek();
    test_shape_gpt_oss();
    test_shape_olmo2();
    test_rope_scalings();
    test_all_lift();
    test_eval_deterministic();
    test_reference();
    test_gdn_reference();
    test_dense_reference();
    test_reference_deepseek();
    test_reference_gpt_oss();
    test_reference_olmo2();
    return check_done("test_models");
}
