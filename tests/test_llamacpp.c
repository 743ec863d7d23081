/* tests/test_llamacpp.c — the llama.cpp binding (cli/llamacpp.c). Without llama.cpp: the binding's refusal names the
 * file and how to configure, and the suite skips (77) saying why. With it: the version string; a missing file, a
 * file that is not GGUF and a GGUF file without a tokenizer refused naming the file and llama.cpp's own reason; no
 * tokens and a token outside the vocabulary refused; and a small `llama` model written here with ir/'s GGUF writer
 * (random f32 weights, a vocabulary of bare ids) run step by step and as one batch: vocab columns, both runs close
 * to each other and to a plain f32 forward pass written here, the same top-1 at every position. */
#include "check.h"
#include "cli/cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The small model's sizes. */
enum { EMBD = 64, HEADS = 4, KV_HEADS = 2, HEAD = EMBD / HEADS, FF = 96, LAYERS = 2, VOCAB = 77, TOKENS = 24 };
#define EPS 1e-5f
#define ROPE_BASE 10000.0f

static char dir[64];

/* A path in the scratch folder. */
static const char *scratch(const char *name)
{
    static char path[4][128];
    static int turn;
    char *p = path[turn++ % 4];
    snprintf(p, sizeof path[0], "%s/%s", dir, name);
    return p;
}

/* Seconds on the monotonic clock. */
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ── The small model: its weights and a plain f32 forward pass ────────────────────────────────────────────── */

/* Every weight of the model, in GGUF's layout: a matrix of dims {in, out} is out rows of in values. */
struct weights {
    float embd[VOCAB * EMBD], out_norm[EMBD], out[VOCAB * EMBD];
    struct {
        float attn_norm[EMBD], q[EMBD * EMBD], k[KV_HEADS * HEAD * EMBD], v[KV_HEADS * HEAD * EMBD], o[EMBD * EMBD];
        float ffn_norm[EMBD], gate[FF * EMBD], up[FF * EMBD], down[EMBD * FF];
    } layer[LAYERS];
};

/* A uniform value in [-scale, scale) from the state s (a 64-bit LCG). */
static float draw(uint64_t *s, float scale)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return scale * ((float)(*s >> 40) / (float)(1u << 24) * 2.0f - 1.0f);
}

/* Fill n values around `centre` within ±scale. */
static void fill(float *v, size_t n, uint64_t *s, float centre, float scale)
{
    for (size_t i = 0; i < n; i++)
        v[i] = centre + draw(s, scale);
}

/* Seeded weights: matrices scaled by 1/sqrt(their input width), norms near 1. */
static void seed_weights(struct weights *w)
{
    uint64_t s = 0x5eedull;
    fill(w->embd, VOCAB * EMBD, &s, 0, 1.0f);
    fill(w->out_norm, EMBD, &s, 1, 0.1f);
    fill(w->out, VOCAB * EMBD, &s, 0, 1.0f / sqrtf(EMBD));
    for (int l = 0; l < LAYERS; l++) {
        fill(w->layer[l].attn_norm, EMBD, &s, 1, 0.1f);
        fill(w->layer[l].q, EMBD * EMBD, &s, 0, 1.0f / sqrtf(EMBD));
        fill(w->layer[l].k, KV_HEADS * HEAD * EMBD, &s, 0, 1.0f / sqrtf(EMBD));
        fill(w->layer[l].v, KV_HEADS * HEAD * EMBD, &s, 0, 1.0f / sqrtf(EMBD));
        fill(w->layer[l].o, EMBD * EMBD, &s, 0, 1.0f / sqrtf(EMBD));
        fill(w->layer[l].ffn_norm, EMBD, &s, 1, 0.1f);
        fill(w->layer[l].gate, FF * EMBD, &s, 0, 1.0f / sqrtf(EMBD));
        fill(w->layer[l].up, FF * EMBD, &s, 0, 1.0f / sqrtf(EMBD));
        fill(w->layer[l].down, EMBD * FF, &s, 0, 1.0f / sqrtf(FF));
    }
}

/* y = W x for W of `out` rows of `in` values. */
static void matvec(const float *w, const float *x, int in, int out, float *y)
{
    for (int o = 0; o < out; o++) {
        double sum = 0;
        for (int i = 0; i < in; i++)
            sum += (double)w[(size_t)o * in + i] * x[i];
        y[o] = (float)sum;
    }
}

/* y = x / rms(x) * weight. */
static void rms_norm(const float *x, const float *weight, float *y)
{
    double ss = 0;
    for (int i = 0; i < EMBD; i++)
        ss += (double)x[i] * x[i];
    float scale = (float)(1.0 / sqrt(ss / EMBD + EPS));
    for (int i = 0; i < EMBD; i++)
        y[i] = x[i] * scale * weight[i];
}

/* Rotate each head's adjacent pairs by the position's angles (llama's normal rope over the whole head). */
static void rope(float *x, int heads, int pos)
{
    for (int h = 0; h < heads; h++) {
        for (int j = 0; j < HEAD / 2; j++) {
            double theta = pos * pow(ROPE_BASE, -2.0 * j / HEAD);
            float *p = x + h * HEAD + 2 * j, a = p[0], b = p[1];
            p[0] = (float)(a * cos(theta) - b * sin(theta));
            p[1] = (float)(a * sin(theta) + b * cos(theta));
        }
    }
}

/* Causal attention of position t's queries over the cached keys and values of positions 0..t. */
static void attend(const float *q, const float *kc, const float *vc, int t, float *out)
{
    double score[TOKENS];
    for (int h = 0; h < HEADS; h++) {
        int kh = h / (HEADS / KV_HEADS);
        double top = -INFINITY, sum = 0;
        for (int s = 0; s <= t; s++) {
            double d = 0;
            for (int i = 0; i < HEAD; i++)
                d += (double)q[h * HEAD + i] * kc[(s * KV_HEADS + kh) * HEAD + i];
            score[s] = d / sqrt(HEAD);
            top = score[s] > top ? score[s] : top;
        }
        for (int s = 0; s <= t; s++)
            sum += score[s] = exp(score[s] - top);
        for (int i = 0; i < HEAD; i++) {
            double acc = 0;
            for (int s = 0; s <= t; s++)
                acc += score[s] / sum * vc[(s * KV_HEADS + kh) * HEAD + i];
            out[h * HEAD + i] = (float)acc;
        }
    }
}

/* One transformer block at position t, the residual x updated, this position's key and value cached. */
static void block(const struct weights *w, int l, float *x, float *kc, float *vc, int t)
{
    float h[EMBD], q[EMBD], att[EMBD], o[EMBD], g[FF], u[FF];
    rms_norm(x, w->layer[l].attn_norm, h);
    matvec(w->layer[l].q, h, EMBD, EMBD, q);
    matvec(w->layer[l].k, h, EMBD, KV_HEADS * HEAD, kc + t * KV_HEADS * HEAD);
    matvec(w->layer[l].v, h, EMBD, KV_HEADS * HEAD, vc + t * KV_HEADS * HEAD);
    rope(q, HEADS, t);
    rope(kc + t * KV_HEADS * HEAD, KV_HEADS, t);
    attend(q, kc, vc, t, att);
    matvec(w->layer[l].o, att, EMBD, EMBD, o);
    for (int i = 0; i < EMBD; i++)
        x[i] += o[i];
    rms_norm(x, w->layer[l].ffn_norm, h);
    matvec(w->layer[l].gate, h, EMBD, FF, g);
    matvec(w->layer[l].up, h, EMBD, FF, u);
    for (int i = 0; i < FF; i++)
        g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
    matvec(w->layer[l].down, g, FF, EMBD, o);
    for (int i = 0; i < EMBD; i++)
        x[i] += o[i];
}

/* The reference logits of every position (TOKENS × VOCAB), a token a step with the caches carried. */
static void reference(const struct weights *w, const int32_t *tokens, float *logits)
{
    static float kc[LAYERS][TOKENS * KV_HEADS * HEAD], vc[LAYERS][TOKENS * KV_HEADS * HEAD];
    for (int t = 0; t < TOKENS; t++) {
        float x[EMBD], h[EMBD];
        memcpy(x, w->embd + (size_t)tokens[t] * EMBD, sizeof x);
        for (int l = 0; l < LAYERS; l++)
            block(w, l, x, kc[l], vc[l], t);
        rms_norm(x, w->out_norm, h);
        matvec(w->out, h, EMBD, VOCAB, logits + (size_t)t * VOCAB);
    }
}

/* ── The small model as a GGUF file llama.cpp loads ───────────────────────────────────────────────────────── */

/* Add a tensor of dims {d0, d1} (d1 = 1: a vector) holding f32 values. */
static void tensor(struct ir_gguf_writer *g, const char *name, uint64_t d0, uint64_t d1, const float *v)
{
    char err[IR_ERR_LEN];
    uint64_t dims[2] = {d0, d1};
    int rc = ir_gguf_add_tensor(g, name, d1 > 1 ? 2 : 1, dims, IR_FMT_F32, v, err);
    CHECKF(rc == 0, "%s", err);
}

/* The `llama` architecture's keys: sizes, the norm's epsilon, the rope's base, and a vocabulary of VOCAB bare ids
 * (tokenizer "none", `llama.vocab_size`); with_tokenizer false leaves the tokenizer out. */
static void keys(struct ir_gguf_writer *g, bool with_tokenizer)
{
    ir_gguf_kv_str(g, "general.architecture", "llama");
    ir_gguf_kv_str(g, "general.name", "fusecheck test_llamacpp");
    ir_gguf_kv_u32(g, "llama.context_length", 256);
    ir_gguf_kv_u32(g, "llama.embedding_length", EMBD);
    ir_gguf_kv_u32(g, "llama.block_count", LAYERS);
    ir_gguf_kv_u32(g, "llama.feed_forward_length", FF);
    ir_gguf_kv_u32(g, "llama.attention.head_count", HEADS);
    ir_gguf_kv_u32(g, "llama.attention.head_count_kv", KV_HEADS);
    ir_gguf_kv_f32(g, "llama.attention.layer_norm_rms_epsilon", EPS);
    ir_gguf_kv_f32(g, "llama.rope.freq_base", ROPE_BASE);
    ir_gguf_kv_u32(g, "llama.vocab_size", VOCAB);
    if (with_tokenizer)
        ir_gguf_kv_str(g, "tokenizer.ggml.model", "none");
}

/* Write the model to path (tokenizer or not); whether it was written. */
static bool write_model(const struct weights *w, const char *path, bool with_tokenizer)
{
    char err[IR_ERR_LEN], name[64];
    struct ir_gguf_writer *g = ir_gguf_writer_new();
    keys(g, with_tokenizer);
    tensor(g, "token_embd.weight", EMBD, VOCAB, w->embd);
    tensor(g, "output_norm.weight", EMBD, 1, w->out_norm);
    tensor(g, "output.weight", EMBD, VOCAB, w->out);
    for (int l = 0; l < LAYERS; l++) {
#define T(suffix, d0, d1, field) \
    snprintf(name, sizeof name, "blk.%d." suffix, l), tensor(g, name, d0, d1, w->layer[l].field)
        T("attn_norm.weight", EMBD, 1, attn_norm);
        T("attn_q.weight", EMBD, EMBD, q);
        T("attn_k.weight", EMBD, KV_HEADS * HEAD, k);
        T("attn_v.weight", EMBD, KV_HEADS * HEAD, v);
        T("attn_output.weight", EMBD, EMBD, o);
        T("ffn_norm.weight", EMBD, 1, ffn_norm);
        T("ffn_gate.weight", EMBD, FF, gate);
        T("ffn_up.weight", EMBD, FF, up);
        T("ffn_down.weight", FF, EMBD, down);
#undef T
    }
    int rc = ir_gguf_write(g, path, err);
    CHECKF(rc == 0, "%s", err);
    ir_gguf_writer_free(g);
    return rc == 0;
}

/* ── The checks ───────────────────────────────────────────────────────────────────────────────────────────── */

/* Whether err names `path` and holds `what`; printed either way, so the log shows the messages. */
static bool says(const char *err, const char *path, const char *what)
{
    printf("  refused: %s\n", err);
    return strstr(err, path) && strstr(err, what);
}

/* Refusals before anything runs: no file, a file that is not GGUF, GGUF without a tokenizer, no tokens. */
static void check_refusals(const struct weights *w)
{
    char err[IR_ERR_LEN];
    struct cli_llama_run run = {0};
    int32_t tokens[2] = {1, 2};
    const char *missing = scratch("missing.gguf");
    CHECK(cli_llama_logits(missing, tokens, 2, false, &run, err) == -1);
    CHECKF(says(err, missing, "No such file"), "%s", err);
    CHECK(run.logits == NULL && run.n == 0);

    const char *text = scratch("not.gguf");
    FILE *f = fopen(text, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("# not a GGUF file\n", f);
        fclose(f);
    }
    CHECK(cli_llama_logits(text, tokens, 2, false, &run, err) == -1);
    CHECKF(says(err, text, "llama.cpp: ") && strstr(err, "GGUF"), "%s", err);

    const char *bare = scratch("no-tokenizer.gguf");
    if (write_model(w, bare, false)) {
        CHECK(cli_llama_logits(bare, tokens, 2, false, &run, err) == -1);
        CHECKF(says(err, bare, "llama.cpp: error loading model vocabulary: key not found in model: "
                               "tokenizer.ggml.model"), "%s", err);
    }
    CHECK(cli_llama_logits(bare, tokens, 0, false, &run, err) == -1);
    CHECKF(says(err, bare, "no tokens"), "%s", err);
}

/* The largest |a - b| over n values, and the NMSE of a against b (sum of squared differences / sum of b squared). */
static double max_diff(const float *a, const float *b, size_t n, double *nmse)
{
    double worst = 0, num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        worst = d > worst ? d : worst;
        num += d * d;
        den += (double)b[i] * b[i];
    }
    *nmse = den > 0 ? num / den : num;
    return worst;
}

/* The id of the largest value of a row (the first of equals). */
static int top1(const float *row)
{
    int best = 0;
    for (int i = 1; i < VOCAB; i++)
        best = row[i] > row[best] ? i : best;
    return best;
}

/* Positions whose top-1 differs between two runs' logits. */
static int top1_misses(const float *a, const float *b)
{
    int misses = 0;
    for (int t = 0; t < TOKENS; t++)
        misses += top1(a + (size_t)t * VOCAB) != top1(b + (size_t)t * VOCAB);
    return misses;
}

/* Run the model both ways and hold them to each other and to the reference. */
static void check_model(const struct weights *w)
{
    char err[IR_ERR_LEN];
    const char *path = scratch("tiny-llama.gguf");
    if (!write_model(w, path, true))
        return;
    int32_t tokens[TOKENS];
    for (int t = 0; t < TOKENS; t++)
        tokens[t] = (int32_t)((t * 29 + 7) % VOCAB);
    struct cli_llama_run step = {0}, batch = {0};
    double t0 = now();
    int rc = cli_llama_logits(path, tokens, TOKENS, true, &step, err);
    double t1 = now();
    CHECKF(rc == 0, "%s", err);
    rc |= cli_llama_logits(path, tokens, TOKENS, false, &batch, err);
    double t2 = now();
    CHECKF(rc == 0, "%s", err);
    if (rc == 0) {
        CHECK(step.vocab == VOCAB && batch.vocab == VOCAB && step.n == TOKENS && batch.n == TOKENS);
        static float ref[TOKENS * VOCAB];
        reference(w, tokens, ref);
        size_t n = (size_t)TOKENS * VOCAB;
        bool finite = true;
        for (size_t i = 0; i < n; i++)
            finite = finite && isfinite(step.logits[i]) && isfinite(batch.logits[i]);
        CHECK(finite);
        double nmse_sb, nmse_s, nmse_b;
        double d_sb = max_diff(step.logits, batch.logits, n, &nmse_sb);
        double d_s = max_diff(step.logits, ref, n, &nmse_s);
        double d_b = max_diff(batch.logits, ref, n, &nmse_b);
        printf("  %s\n  %d tokens, vocab %lld: step by step %.1f ms, one batch %.1f ms (each: load, run, free)\n",
               cli_llama_version(), TOKENS, (long long)step.vocab, 1e3 * (t1 - t0), 1e3 * (t2 - t1));
        printf("  step vs batch: max |diff| %.3g, NMSE %.3g; step vs f32 reference: %.3g, NMSE %.3g; batch vs "
               "reference: %.3g, NMSE %.3g\n", d_sb, nmse_sb, d_s, nmse_s, d_b, nmse_b);
        CHECKF(d_sb <= 1e-4 && nmse_sb <= 1e-10, "step vs batch: %g, %g", d_sb, nmse_sb);
        CHECKF(d_s <= 1e-3 && nmse_s <= 1e-9, "step vs reference: %g, %g", d_s, nmse_s);
        CHECKF(d_b <= 1e-3 && nmse_b <= 1e-9, "batch vs reference: %g, %g", d_b, nmse_b);
        CHECK(top1_misses(step.logits, ref) == 0 && top1_misses(batch.logits, ref) == 0);
    }
    cli_llama_run_free(&step);
    cli_llama_run_free(&batch);
    CHECK(step.logits == NULL && step.n == 0 && step.vocab == 0);

    int32_t bad[3] = {1, VOCAB, 2};
    CHECK(cli_llama_logits(path, bad, 3, true, &step, err) == -1);
    CHECKF(says(err, path, "token 77 at position 1 is outside the vocabulary (0..76)"), "%s", err);
    bad[1] = -1;
    CHECK(cli_llama_logits(path, bad, 3, false, &step, err) == -1);
    CHECKF(says(err, path, "outside the vocabulary"), "%s", err);
}

/* Built without llama.cpp: the binding refuses saying how to configure; the suite skips. */
static int without_llamacpp(void)
{
    char err[IR_ERR_LEN];
    struct cli_llama_run run = {0};
    int32_t token = 0;
    CHECK_STR(cli_llama_version(), "none: built without llama.cpp");
    CHECK(cli_llama_logits("CMakeLists.txt", &token, 1, false, &run, err) == -1);
    CHECKF(says(err, "CMakeLists.txt", "FUSECHECK_LLAMACPP"), "%s", err);
    if (check_failed)
        return check_done("test_llamacpp");
    printf("test_llamacpp: skipped: fusecheck was built without llama.cpp (run ci/llamacpp and configure with "
           "FUSECHECK_LLAMACPP=AUTO or ON)\n");
    return 77;
}

int main(void)
{
    if (!cli_llama_available())
        return without_llamacpp();
    const char *version = cli_llama_version();
    printf("  %s\n", version);
    CHECKF(strncmp(version, "llama.cpp ", 10) == 0 && strstr(version, "(ggml "), "%s", version);
    snprintf(dir, sizeof dir, "/tmp/fusecheck-llamacpp-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    static struct weights w;
    seed_weights(&w);
    check_refusals(&w);
    check_model(&w);
    const char *names[] = {"missing.gguf", "not.gguf", "no-tokenizer.gguf", "tiny-llama.gguf"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        unlink(scratch(names[i]));
    rmdir(dir);
    return check_done("test_llamacpp");
}
