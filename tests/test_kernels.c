/* tests/test_kernels.c — the lane's launch geometry: the chip table, the activation modes and their accumulators, and
 * every geometry function on both sides of each of its boundaries. */
#include "check.h"
#include "kernels/kernels.h"
#include "kernels/arith.inc"
#include "models/models.h"
#include "rules/rules.h"

#include <math.h>
#include <stdlib.h>

#include <string.h>

/* The chip table: five chips, found by name, with sane sizes; unknown names and out-of-range indices give NULL. */
static void test_chips(void)
{
    static const char *const names[] = {"h100", "h200", "a100", "l40s", "rtx4090"};
    CHECK(kernels_chip_count() == 5);
    for (int i = 0; i < 5; i++) {
        const struct kernels_chip *c = kernels_chip_find(names[i]);
        CHECKF(c != NULL, "%s", names[i]);
        if (!c)
            continue;
        CHECK(c == kernels_chip_get(i));
        CHECK(c->sms >= 100 && c->sms <= 200);
        CHECK(c->smem_kib >= 99 && c->smem_kib <= 228);
        CHECK(c->bandwidth_gbs > 500);
        CHECK(c->label && c->label[0]);
    }
    CHECK(kernels_chip_find("h300") == NULL);
    CHECK(kernels_chip_find(NULL) == NULL);
    CHECK(kernels_chip_get(-1) == NULL);
    CHECK(kernels_chip_get(5) == NULL);
    CHECK(kernels_chip_find("h100")->smem_kib == 227 && kernels_chip_find("a100")->smem_kib == 163);
    CHECK(kernels_chip_find("l40s")->smem_kib == 99 && kernels_chip_find("rtx4090")->sms == 128);
}

/* The activation modes: names, lookups, words, multiply modes and their accumulators. */
static void test_acts(void)
{
    CHECK_STR(kernels_acts_name(KERNELS_ACTS_DEQUANT), "dequant");
    CHECK_STR(kernels_acts_name(KERNELS_ACTS_INT8), "int8");
    CHECK_STR(kernels_acts_name(KERNELS_ACTS_INT8X2), "int8x2");
    CHECK(kernels_acts_lookup("int8x2") == KERNELS_ACTS_INT8X2);
    CHECK(kernels_acts_lookup("int4") == -1);
    CHECK(kernels_acts_lookup(NULL) == -1);
    CHECK(kernels_acts_words(KERNELS_ACTS_DEQUANT) == 0);
    CHECK(kernels_acts_words(KERNELS_ACTS_INT8) == 1);
    CHECK(kernels_acts_words(KERNELS_ACTS_INT8X2) == 2);
    CHECK(kernels_mode(KERNELS_ACTS_DEQUANT) == KERNELS_MODE_F32);
    CHECK(kernels_mode(KERNELS_ACTS_INT8) == KERNELS_MODE_I8);
    CHECK(kernels_mode(KERNELS_ACTS_INT8X2) == KERNELS_MODE_I8X2);
    struct kernels_accumulator f = kernels_accumulator(KERNELS_MODE_F32);
    struct kernels_accumulator i = kernels_accumulator(KERNELS_MODE_I8);
    CHECK(f.bits == 32 && !f.integer && f.stage_bytes == 4);
    CHECK(i.bits == 32 && i.integer && i.stage_bytes == 2);
    /* The most int8 products an i32 sums: the next one could overflow. */
    CHECK(i.terms == 133144);
    CHECK(i.terms * 127 * 127 <= 2147483647LL && (i.terms + 1) * 127 * 127 > 2147483647LL);
    CHECK(kernels_accumulator(KERNELS_MODE_I8X2).terms == i.terms);
}

/* Which formats the GEMV decodes, and rows a warp on both sides of each bound. */
static void test_gemv(void)
{
    CHECK(kernels_decodes(IR_FMT_Q4_0) && kernels_decodes(IR_FMT_Q4_K) && kernels_decodes(IR_FMT_Q6_K));
    CHECK(!kernels_decodes(IR_FMT_Q8_0) && !kernels_decodes(IR_FMT_F32) && !kernels_decodes(IR_FMT_F16));
    CHECK(!kernels_decodes(IR_FMT_BF16));
    CHECK(kernels_rows_a_warp(IR_FMT_Q8_0, 4096, 8192, 1) == 4);
    CHECK(kernels_rows_a_warp(IR_FMT_Q8_0, 4095, 8192, 1) == 1);
    CHECK(kernels_rows_a_warp(IR_FMT_Q8_0, 4096, 8193, 1) == 1);
    CHECK(kernels_rows_a_warp(IR_FMT_Q4_K, 4096, 256, 8) == 4);
    CHECK(kernels_rows_a_warp(IR_FMT_Q4_K, 4096, 256, 9) == 1);
    CHECK(kernels_rows_a_warp(IR_FMT_Q8_0, 4096, 256, 0) == 1);
    CHECK(kernels_rows_a_warp(IR_FMT_F16, 4096, 256, 1) == 1);
    CHECK(kernels_rows_a_warp(IR_FMT_F32, 4096, 256, 1) == 1);
}

/* Norm blocks: threads for a row, the GEMV's blocks, and whether a block holds its norm. */
static void test_norms(void)
{
    CHECK(kernels_norm_threads(256) == 32);
    CHECK(kernels_norm_threads(1) == 32);
    CHECK(kernels_norm_threads(0) == 32);
    CHECK(kernels_norm_threads(264) == 64);
    CHECK(kernels_norm_threads(8192) == 1024);
    CHECK(kernels_norm_threads(8200) == 1024);
    CHECK(kernels_gemv_blk_norm_threads(1) == 256);
    CHECK(kernels_gemv_blk_norm_threads(4) == 128);
    CHECK(kernels_block_holds_its_norm(256, 2048));
    CHECK(!kernels_block_holds_its_norm(256, 2049));
    CHECK(kernels_block_holds_its_norm(1024, 8192));
    CHECK(!kernels_block_holds_its_norm(kernels_norm_threads(8200), 8200));
    CHECK(!kernels_block_holds_its_norm(0, 1));
}

/* The decode mixture's down launch: a warp per kept expert and one for a shared expert. */
static void test_moe_down(void)
{
    struct kernels_moe_down a = kernels_moe_down_launch(256, 256, 2, 0);
    CHECK(a.threads == 64 && a.blocks == 8 && a.smem_bytes == 4 * 512);
    struct kernels_moe_down b = kernels_moe_down_launch(2048, 768, 8, 512);
    CHECK(b.threads == 9 * 32 && b.blocks == 64 && b.smem_bytes == 4 * (8 * 768 + 512));
    CHECK(kernels_moe_down_launch(33, 1, 1, 0).blocks == 2);
}

/* Attention: the span, heads a block on both sides of the shared-memory bound, splits, and tiles. */
static void test_attention(void)
{
    CHECK(kernels_attended_span(64, 0) == 64);
    CHECK(kernels_attended_span(64, 16) == 16);
    CHECK(kernels_attended_span(64, 64) == 64);
    CHECK(kernels_attended_span(64, 100) == 64);
    /* One latent head of 576 keys and 512 values at 2 bytes: 64·1088·2 + 1088·4 = 143616 bytes. */
    int64_t per_head = 64 * 1088 * 2 + 1088 * 4;
    CHECK(kernels_attn_heads_per_block(1, 576, 512, 4096, per_head, 2) == 1);
    CHECK(kernels_attn_heads_per_block(1, 576, 512, 4096, per_head - 1, 2) == 0);
    CHECK(kernels_attn_heads_per_block(1, 576, 512, 4096, 227 * 1024, 2) == 1);
    CHECK(kernels_attn_heads_per_block(1, 576, 512, 4096, 99 * 1024, 2) == 0);
    CHECK(kernels_attn_heads_per_block(1, 576, 512, 4096, 163 * 1024, 2) == 1);
    /* Small heads: at most four a block; a short span stages fewer rows. */
    CHECK(kernels_attn_heads_per_block(4, 64, 64, 4096, 227 * 1024, 2) == 4);
    CHECK(kernels_attn_heads_per_block(1, 576, 512, 16, 99 * 1024, 2) == 2);
    CHECK(kernels_attn_heads_per_block(0, 64, 64, 64, 1 << 20, 2) == 0);
    CHECK(kernels_attn_splits(4, 4096, 132) == 16);
    CHECK(kernels_attn_splits(264, 4096, 132) == 1);
    CHECK(kernels_attn_splits(4, 100, 132) == 1);
    CHECK(kernels_attn_splits(4, 1024, 132) == 4);
    CHECK(kernels_attn_splits(0, 4096, 132) == 1);
    CHECK(kernels_head_gemm_in_tiles(KERNELS_MODE_I8, 9, 32, 16));
    CHECK(!kernels_head_gemm_in_tiles(KERNELS_MODE_I8, 8, 32, 16));
    CHECK(!kernels_head_gemm_in_tiles(KERNELS_MODE_I8, 9, 48, 16));
    CHECK(!kernels_head_gemm_in_tiles(KERNELS_MODE_I8, 9, 32, 24));
    CHECK(!kernels_head_gemm_in_tiles(KERNELS_MODE_F32, 64, 32, 16));
    CHECK(kernels_attention_in_tiles(KERNELS_MODE_I8X2, 9, 48, 32));
    CHECK(!kernels_attention_in_tiles(KERNELS_MODE_I8X2, 8, 48, 32));
    CHECK(!kernels_attention_in_tiles(KERNELS_MODE_I8X2, 9, 40, 32));
    CHECK(!kernels_attention_in_tiles(KERNELS_MODE_F32, 64, 48, 32));
}

/* ── The host lane ───────────────────────────────────────────────────────────────────────────────────────── */

/* A deterministic value in [-s, s) for index i. */
static float wave(int64_t i, float s) { return s * (float)sin(0.7 * (double)i + 0.3 * (double)(i % 7)); }

/* The kernels' decode of every block format gives the evaluator's dequantized values bit for bit, and the f16 and
 * bf16 roundings are the IEEE conversions'. */
static void test_decode(void)
{
    float src[512], want[512];
    unsigned char bytes[2048];
    for (int f = 0; f < IR_FMT_COUNT; f++) {
        for (int i = 0; i < 512; i++)
            src[i] = wave(i + 31 * f, 3.0f) * (i % 37 == 0 ? 40.0f : 1.0f);
        CHECK(ir_ggml_quantize((enum ir_format)f, src, 512, bytes) == 0);
        ir_ggml_dequantize((enum ir_format)f, bytes, 512, want);
        int same = 0;
        for (int i = 0; i < 512; i++)
            same += ka_bits(ka_decode(f, bytes, i)) == ka_bits(want[i]);
        CHECKF(same == 512, "%s: %d of 512 decoded alike", ir_format_name((enum ir_format)f), same);
        float chunk[32];
        int alike = 0;
        for (int c = 0; c < 16; c++) {
            ka_decode_chunk(f, bytes, 32 * c, c == 15 ? 17 : 32, chunk);
            for (int j = 0; j < (c == 15 ? 17 : 32); j++)
                alike += ka_bits(chunk[j]) == ka_bits(want[32 * c + j]);
        }
        CHECKF(alike == 497, "%s: %d of 497 decoded alike by chunks", ir_format_name((enum ir_format)f), alike);
    }
    int halves = 0, bf = 0, n = 0;
    for (uint32_t u = 0; u < 0x7f800000u; u += 0x00012345u, n++) {
        float x = ka_from_bits(u);
        halves += ka_bits(ka_round_half(x)) == ka_bits(ir_f16_to_f32(ir_f32_to_f16(x))) &&
                  ka_bits(ka_round_half(-x)) == ka_bits(ir_f16_to_f32(ir_f32_to_f16(-x)));
        bf += ka_bits(ka_round_bf16(x)) == ka_bits(ir_bf16_to_f32(ir_f32_to_bf16(x)));
    }
    CHECKF(halves == n && bf == n, "f16 %d, bf16 %d of %d", halves, bf, n);
}

/* The ulps between a float and the exact value (in double). */
static double ulps(float got, double want)
{
    if (want == 0.0)
        return got == 0.0f ? 0.0 : INFINITY;
    int e;
    frexp(want, &e);
    double ulp = ldexp(1.0, (e - 24) < -149 ? -149 : e - 24);
    return fabs((double)got - want) / ulp;
}

/* The lane's own e^x and tanh (the same bits on the device and the host) stay within 3 ulp, and keep their edges. */
static void test_transcendentals(void)
{
    double we = 0.0, wt = 0.0;
    int n = 0;
    for (double x = -103.0; x < 88.7; x += 0.000731, n++) {
        double u = ulps(ka_expf((float)x), exp((double)(float)x));
        we = u > we ? u : we;
    }
    for (double x = -12.0; x < 12.0; x += 0.0000917) {
        double u = ulps(ka_tanhf((float)x), tanh((double)(float)x));
        wt = u > wt ? u : wt;
    }
    CHECKF(we <= 3.0 && wt <= 3.0, "e^x within %.2f ulp, tanh within %.2f ulp", we, wt);
    CHECK(ka_expf(0.0f) == 1.0f && ka_expf(-200.0f) == 0.0f && isinf(ka_expf(100.0f)) && isnan(ka_expf(NAN)));
    CHECK(ka_tanhf(0.0f) == 0.0f && ka_tanhf(30.0f) == 1.0f && ka_tanhf(-30.0f) == -1.0f && isnan(ka_tanhf(NAN)));
    CHECK(ka_tanhf(1e-30f) == 1e-30f && n > 100000);
    printf("e^x within %.2f ulp, tanh within %.2f ulp\n", we, wt);
}

/* The lane's own ln and ln(1 + y) (softplus's, the log-decay's): within 2 ulp over every positive float's binade
 * (subnormals too) and over y = e^x for the softplus's whole range (x up to 20); exact at their edges. */
static void test_logarithms(void)
{
    double wl = 0.0, wp = 0.0;
    int n = 0;
    for (double x = -103.0; x < 88.7; x += 0.000917, n++) {
        float v = (float)exp(x);
        if (v > 0.0f) {
            double u = ulps(ka_logf(v), log((double)v));
            wl = u > wl ? u : wl;
        }
    }
    for (double x = -100.0; x <= 20.0; x += 0.000613) {
        float y = ka_expf((float)x);
        double u = ulps(ka_log1pf(y), log1p((double)y));
        wp = u > wp ? u : wp;
    }
    CHECKF(wl <= 2.0 && wp <= 2.0, "ln within %.2f ulp, ln(1 + y) within %.2f ulp", wl, wp);
    CHECK(ka_logf(1.0f) == 0.0f && ka_log1pf(0.0f) == 0.0f && ka_log1pf(1e-30f) == 1e-30f && n > 100000);
    CHECK(ka_softplus(25.0f) == 25.0f && ka_decay(0.0f, 0.0f, 0.0f) == -ka_log1pf(1.0f));
    printf("ln within %.2f ulp, ln(1 + y) within %.2f ulp\n", wl, wp);
}

/* The bounds on inputs whose error is known: a product summed in two orders, a quantized block. */
static void test_bounds(void)
{
    CHECK(fabs(kernels_gamma(1) - 1.0 / 16777215.0) < 1e-15);
    CHECK(kernels_quant_error(127.0, 1) == 0.5 && kernels_quant_error(254.0 * 254.0, 2) == 1.0);
    CHECK(kernels_quant_error(5.0, 0) == 0.0);
    /* k products summed forward and by the lanes' chunks: the difference within the bound, the bound not loose */
    enum { K = 4096 };
    static float x[K], w[K];
    double mag = 0.0;
    for (int i = 0; i < K; i++) {
        x[i] = wave(i, 1.0f) + 1.0f;
        w[i] = wave(3 * i + 1, 1.0f) + 1.0f;
        mag += fabs((double)x[i] * w[i]);
    }
    float fwd = ka_dot_f32(x, w, K), part[KA_WARP];
    for (int l = 0; l < KA_WARP; l++) {
        float acc = 0.0f;
        for (int c = l; c < K / 32; c += KA_WARP)
            acc += ka_dot_f32(x + 32 * c, w + 32 * c, 32);
        part[l] = acc;
    }
    double diff = fabs((double)fwd - ka_warp_sum_host(part)), bound = kernels_product_bound(K, 0, mag);
    CHECKF(diff > 0 && diff <= bound, "diff %g bound %g", diff, bound);
    CHECKF(bound < 2.5 * kernels_gamma(K) * mag, "bound %g is past 2.5 γ_k Σ|xw| (%g)", bound, kernels_gamma(K) * mag);
    /* a quantized block: every value within a/254 (one word), a/254² (two), and the largest exactly kept */
    float blk[32], out[32];
    struct ka_qblock qb;
    for (int words = 1; words <= 2; words++) {
        for (int i = 0; i < 32; i++)
            blk[i] = wave(i + 5 * words, 2.0f) + (i == 9 ? 3.0f : 0.0f);
        ka_quant_block(blk, 32, words, &qb, out);
        double amax = ka_amax(blk, 32), worst = 0.0;
        for (int i = 0; i < 32; i++)
            worst = fabs((double)out[i] - blk[i]) > worst ? fabs((double)out[i] - blk[i]) : worst;
        CHECKF(worst <= kernels_quant_error(amax, words) * (1 + 1e-5) && worst > 0.01 * kernels_quant_error(amax, words),
               "words %d: worst %g of bound %g", words, worst, kernels_quant_error(amax, words));
        CHECK(qb.q[0][9] == 127.0f);
    }
}

/* One tolerance run of graph g (lifted) under shim `name`; its result; 0 when it ran. */
static int tolerance_of(const struct ir_graph *g, const char *name, enum kernels_fault fault, int steps,
                        struct kernels_tol_result *res)
{
    char err[IR_ERR_LEN];
    struct shim *shim = shim_lookup(name, err);
    struct kernels_point p;
    struct rules_optimized o;
    if (!shim || kernels_point_of(shim, &p, err) || rules_optimize(g, shim, NULL, 0, &o, err)) {
        fprintf(stderr, "%s: %s\n", name, err);
        shim_free(shim);
        memset(res, 0, sizeof *res);
        return -1;
    }
    struct ir_graph *ref = rules_quantized_lifted(g, shim);
    struct kernels_tol_input in = {o.graph, ref, g, &p, 7, steps, fault, false, NULL, NULL};
    int rc = kernels_tolerance(&in, res, err);
    if (rc)
        fprintf(stderr, "%s on %s: %s\n", name, g->name, err);
    ir_graph_free(ref);
    rules_optimized_free(&o);
    shim_free(shim);
    return rc;
}

/* Every tiny model × mode × activation mode × cache × state × fold under two chips: every launch within its bound,
 * the end-to-end logits close, the same rows twice. */
static void test_zoo_tolerance(void)
{
    static const char *const models[] = {"tiny-llama", "tiny-qwen3", "tiny-qwen3-moe", "tiny-gemma2",
                                         "tiny-qwen3-next", "tiny-olmo2"};
    static const char *const modes[] = {"decode", "prefill:8", "batch:4"};
    static const char *const acts[] = {"dequant", "int8", "int8x2"};
    static const char *const knobs[] = {"cache=f16", "cache=f32:state=bf16", "cache=f16:fuse_quant=off"};
    static const char *const chips[] = {"h200"};
    int runs = 0, clean = 0;
    long rows = 0;
    for (int m = 0; m < (int)(sizeof models / sizeof *models); m++)
        for (int k = 0; k < 3; k++) {
            char err[IR_ERR_LEN];
            struct models_options o = models_default_options();
            models_parse_mode(modes[k], &o.mode, err);
            struct ir_graph *g = models_lift(models_find(models[m]), &o, err);
            CHECKF(g != NULL, "%s", err);
            for (int c = 0; g && c < 1; c++)
                for (int a = 0; a < 3; a++)
                    for (int n = 0; n < 3; n++) {
                        char name[128];
                        snprintf(name, sizeof name, "cuda-lane:%s:%s:%s", chips[c], acts[a], knobs[n]);
                        struct kernels_tol_result r;
                        runs++;
                        if (tolerance_of(g, name, KERNELS_FAULT_NONE, 1, &r) == 0 && r.failed == 0 && r.nrows > 0 &&
                            r.nsteps == 1 && r.steps[0].nmse < 1e-2)
                            clean++;
                        else
                            for (int32_t i = 0; i < r.nrows; i++)
                                if (!r.rows[i].pass)
                                    fprintf(stderr, "%s %s %s: launch %d %s %s ratio %g %s\n", models[m], modes[k],
                                            name, r.rows[i].launch, r.rows[i].kernel, r.rows[i].tensor,
                                            r.rows[i].ratio, r.rows[i].why);
                        rows += r.nrows;
                        kernels_tol_result_free(&r);
                    }
            ir_graph_free(g);
        }
    CHECKF(clean == runs, "%d of %d runs clean", clean, runs);
    CHECK(rows > 5000);
    /* the same inputs give the same rows */
    char err[IR_ERR_LEN];
    struct models_options o = models_default_options();
    struct ir_graph *g = models_lift(models_find("tiny-qwen3-moe"), &o, err);
    struct kernels_tol_result a, b;
    CHECK(g && tolerance_of(g, "cuda-lane:h100:int8x2", KERNELS_FAULT_NONE, 3, &a) == 0 &&
          tolerance_of(g, "cuda-lane:h100:int8x2", KERNELS_FAULT_NONE, 3, &b) == 0);
    bool same = a.nrows == b.nrows && a.nsteps == b.nsteps;
    for (int32_t i = 0; same && i < a.nrows; i++)
        same = a.rows[i].max_abs == b.rows[i].max_abs && a.rows[i].nmse == b.rows[i].nmse &&
               a.rows[i].bound == b.rows[i].bound && strcmp(a.rows[i].tensor, b.rows[i].tensor) == 0;
    for (int32_t i = 0; same && i < a.nsteps; i++)
        same = a.steps[i].nmse == b.steps[i].nmse && a.steps[i].kl == b.steps[i].kl;
    CHECK(same);
    kernels_tol_result_free(&a);
    kernels_tol_result_free(&b);
    ir_graph_free(g);
}

/* Each routing through the host lane against the evaluator, within the bound: hand-written mixtures of every routing
 * field, and tiny-deepseek (deepseek-v3's routing: sigmoid, corrected, grouped, scaled) in every mode; a lane that
 * routed otherwise would pick other experts or weigh them otherwise, far past the bound. */
static void test_routings(void)
{
    static const char *const routes[] = {"", " no_renorm", " sigmoid", " sigmoid no_renorm scale=1.5",
                                         " sigmoid correction groups=4 topk_groups=2 scale=2.5",
                                         " correction groups=2 topk_groups=1", " topk_softmax correction"};
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        char text[1024], err[IR_ERR_LEN];
        bool corr = strstr(routes[i], "correction") != NULL;
        snprintf(text, sizeof text,
                 "tensor x f32 1x32 input\ntensor r f32 32x8 constant\ntensor g f32 32x16 constant\n"
                 "tensor u f32 32x16 constant\ntensor dn f32 2x256 constant\ntensor cb f32 1x8 constant\n"
                 "tensor y f32 1x32 activation observed\n"
                 "op y = moe(x, r, g, u, dn%s) d=32 k=2 dff=2 experts=8 act=swiglu%s\n",
                 corr ? ", cb" : "", routes[i]);
        struct ir_graph *g = ir_parse(text, strlen(text), "route.fc", err);
        CHECKF(g != NULL, "%s", err);
        struct kernels_tol_result r;
        bool ok = g && tolerance_of(g, "cuda-lane:h200:dequant", KERNELS_FAULT_NONE, 1, &r) == 0;
        CHECKF(ok && r.failed == 0 && r.nrows > 0, "routing '%s' under the lane", routes[i]);
        if (ok)
            kernels_tol_result_free(&r);
        ir_graph_free(g);
    }
    static const char *const modes[] = {"decode", "prefill:8", "batch:4"};
    for (int k = 0; k < 3; k++) {
        char err[IR_ERR_LEN];
        struct models_options o = models_default_options();
        models_parse_mode(modes[k], &o.mode, err);
        struct ir_graph *g = models_lift(models_find("tiny-deepseek"), &o, err);
        CHECKF(g != NULL, "%s", err);
        struct kernels_tol_result r;
        bool ok = g && tolerance_of(g, "cuda-lane:h200:int8", KERNELS_FAULT_NONE, 1, &r) == 0;
        int64_t amb = 0; /* a choice a bound could flip: the lane may pick another expert, far apart end to end */
        for (int32_t i = 0; ok && i < r.nrows; i++)
            amb += r.rows[i].ambiguous;
        CHECKF(ok && r.failed == 0 && r.nrows > 0 && r.nsteps == 1 && (r.steps[0].nmse < 1e-2 || amb > 0),
               "tiny-deepseek %s under the lane: %d of %d rows failed, NMSE %g", modes[k], ok ? (int)r.failed : -1,
               ok ? (int)r.nrows : -1, ok && r.nsteps ? r.steps[0].nmse : -1.0);
        if (ok)
            kernels_tol_result_free(&r);
        ir_graph_free(g);
    }
}

/* Whether a run with the fault planted fails a row of a launch of `kernel`. */
static bool caught(const struct ir_graph *g, const char *shim, enum kernels_fault f, const char *kernel)
{
    struct kernels_tol_result r;
    bool hit = false;
    if (tolerance_of(g, shim, f, 1, &r) == 0)
        for (int32_t i = 0; i < r.nrows; i++)
            hit = hit || (!r.rows[i].pass && strcmp(r.rows[i].kernel, kernel) == 0);
    kernels_tol_result_free(&r);
    return hit;
}

/* Each planted fault fails the tolerance run, naming the launch it is in. */
static void test_planted_faults(void)
{
    char err[IR_ERR_LEN];
    struct models_options o = models_default_options();
    struct ir_graph *g = models_lift(models_find("tiny-qwen3"), &o, err);
    struct ir_graph *split = ir_parse_file("tests/data/kernels/split_attention.fc", err);
    CHECKF(g && split, "%s", err);
    if (!g || !split) {
        ir_graph_free(g);
        ir_graph_free(split);
        return;
    }
    CHECK(caught(g, "cuda-lane:h200:int8", KERNELS_FAULT_SCALE_STEP, "norm_quant"));
    CHECK(caught(g, "cuda-lane:h200:int8", KERNELS_FAULT_SCALE_STEP, "merged_qkv"));
    CHECK(caught(g, "cuda-lane:h200:dequant", KERNELS_FAULT_GEMV_ROW, "merged_qkv"));
    CHECK(caught(g, "cuda-lane:h200:int8", KERNELS_FAULT_DROP_F16, "merged_qkv"));
    CHECK(caught(g, "cuda-lane:h200:dequant", KERNELS_FAULT_ROPE_PAIR, "merged_qkv"));
    CHECK(caught(split, "cuda-lane:h200:dequant", KERNELS_FAULT_SPLIT_MAX, "attention"));
    CHECK(!caught(split, "cuda-lane:h200:dequant", KERNELS_FAULT_NONE, "attention"));
    /* a fault with nothing to break passes: f32 caches are not rounded, so dropping the rounding changes nothing */
    CHECK(!caught(g, "cuda-lane:h200:int8:cache=f32", KERNELS_FAULT_DROP_F16, "merged_qkv"));
    ir_graph_free(g);
    ir_graph_free(split);
}

/* The rows of a run for launches of `kernel` writing tensor `tensor` (NULL: any): how many, and whether all pass
 * with a bound above zero and their worst error over bound; the largest error among them. */
struct kind_rows {
    int n, pass;
    double worst, max_abs;
};
static struct kind_rows rows_of(const struct kernels_tol_result *r, const char *kernel, const char *tensor)
{
    struct kind_rows k = {0, 0, 0.0, 0.0};
    for (int32_t i = 0; i < r->nrows; i++) {
        const struct kernels_tol_row *w = &r->rows[i];
        if (strcmp(w->kernel, kernel) != 0 || (tensor && strcmp(w->tensor, tensor) != 0))
            continue;
        k.n++;
        k.pass += w->pass;
        k.worst = w->ratio > k.worst ? w->ratio : k.worst;
        k.max_abs = w->max_abs > k.max_abs ? w->max_abs : k.max_abs;
    }
    return k;
}

/* A norm (kind, bias) of two rows then their rotation (pairing, base, half of a head of 32) as text, observed. */
static void turn_text(char *text, size_t cap, const char *kind, bool bias, bool adjacent, const char *theta,
                      int half)
{
    snprintf(text, cap,
             "tensor x f32 2x64 input\ntensor res f32 2x64 input\ntensor w f32 1x64 constant\n"
             "tensor b f32 1x64 constant\ntensor cos f32 16x%d constant\ntensor sin f32 16x%d constant\n"
             "tensor pos i32 1x1 param\ntensor n f32 2x64 activation observed\n"
             "tensor r f32 2x64 activation observed\n"
             "op n = rms_norm(x, w, res%s) rows=2 cols=64%s eps=1e-05 weight offset=0 residual%s\n"
             "op r = rope(n, cos, sin, pos) h=4 hd=32 half=%d rows=2 pos=named%s%s\n",
             half, half, bias ? ", b" : "", kind, bias ? " bias" : "", half, theta, adjacent ? " adjacent" : "");
}

/* The norms (RMS and layer, with and without a bias) and the rotations (both pairings, several bases, whole and
 * partial heads) through the host lane against the evaluator, each launch within its bound; the planted pairing fault
 * caught under either pairing (so the bound sees a rotation of the other pairs); tiny-nemotron's LayerNorms and
 * tiny-llama's adjacent rotations whole under the lane. */
static void test_turns_and_norms(void)
{
    static const char *const kinds[] = {"", " kind=layer"}, *const thetas[] = {"", " theta=5e+05", " theta=1e+07"};
    int runs = 0, clean = 0;
    for (int k = 0; k < 2; k++)
        for (int bias = 0; bias < 2; bias++)
            for (int adj = 0; adj < 2; adj++)
                for (int t = 0; t < 3; t++)
                    for (int half = 8; half <= 16; half += 8) {
                        char text[1536], err[IR_ERR_LEN];
                        turn_text(text, sizeof text, kinds[k], bias, adj, thetas[t], half);
                        struct ir_graph *g = ir_parse(text, strlen(text), "turn.fc", err);
                        CHECKF(g != NULL, "%s", err);
                        struct kernels_tol_result r;
                        runs++;
                        if (g && tolerance_of(g, "cuda-lane:h200:dequant", KERNELS_FAULT_NONE, 1, &r) == 0) {
                            struct kind_rows nr = rows_of(&r, "rms_norm", NULL), rr = rows_of(&r, "rope", NULL);
                            clean += r.failed == 0 && nr.n > 0 && nr.pass == nr.n && rr.n > 0 && rr.pass == rr.n;
                            kernels_tol_result_free(&r);
                        }
                        if (g && t == 1 && half == 16)
                            CHECKF(caught(g, "cuda-lane:h200:dequant", KERNELS_FAULT_ROPE_PAIR, "rope"),
                                   "the pairing fault under %s pairs", adj ? "adjacent" : "neox");
                        ir_graph_free(g);
                    }
    CHECKF(clean == runs, "%d of %d norm and rotation runs clean", clean, runs);
    static const char *const models[] = {"tiny-nemotron", "tiny-llama"};
    static const char *const acts[] = {"cuda-lane:h200:dequant", "cuda-lane:h200:int8"};
    for (int m = 0; m < 2; m++)
        for (int a = 0; a < 2; a++) {
            char err[IR_ERR_LEN];
            struct models_options o = models_default_options();
            struct ir_graph *g = models_lift(models_find(models[m]), &o, err);
            CHECKF(g != NULL, "%s", err);
            struct kernels_tol_result r;
            bool ok = g && tolerance_of(g, acts[a], KERNELS_FAULT_NONE, 1, &r) == 0;
            CHECKF(ok && r.failed == 0 && r.nrows > 0 && r.nsteps == 1 && r.steps[0].nmse < 1e-2, "%s under %s",
                   models[m], acts[a]);
            if (ok)
                kernels_tol_result_free(&r);
            ir_graph_free(g);
        }
}

/* The Gated DeltaNet kernels against the evaluator on a layer's mixer over three rows (tests/data/kernels/
 * deltanet.fc: kh = 2 of 4 heads, a sigmoid gate) and three steps, the state carried: each kernel's outputs and the
 * rings and memory it writes within their bounds, at f32 and bf16 state. With f32 state the convolution is the
 * evaluator's sum in its order (exact), and the delta rule differs from it only by e^x's last bits. Each planted
 * fault (a wrong conv tap, the memory not decayed, the dt bias dropped) fails the kernel it is planted in. */
static void test_deltanet(void)
{
    char err[IR_ERR_LEN];
    struct ir_graph *g = ir_parse_file("tests/data/kernels/deltanet.fc", err);
    CHECKF(g != NULL, "%s", err);
    if (!g)
        return;
    static const char *const points[] = {"cuda-lane:h200:dequant", "cuda-lane:a100:int8:state=bf16",
                                         "cuda-lane:rtx4090:int8x2:state=bf16:fuse_quant=off"};
    static const char *const kinds[][2] = {{"conv_silu_l2norm", "q"}, {"conv_silu_l2norm", "ringq"},
                                           {"conv_bias_silu", "v"},   {"gdn_gating", "g"},
                                           {"gated_delta", "y"},      {"gated_delta", "S"}};
    for (int p = 0; p < 3; p++) {
        struct kernels_tol_result r;
        CHECK(tolerance_of(g, points[p], KERNELS_FAULT_NONE, 3, &r) == 0);
        CHECKF(r.failed == 0 && r.nsteps == 3, "%s: %d failed", points[p], (int)r.failed);
        for (int k = 0; k < 6; k++) {
            struct kind_rows w = rows_of(&r, kinds[k][0], kinds[k][1]);
            CHECKF(w.n >= 3 && w.pass == w.n && w.worst <= 1.0, "%s %s %s: %d rows, %d pass, worst %g", points[p],
                   kinds[k][0], kinds[k][1], w.n, w.pass, w.worst);
        }
        if (p == 0) { /* f32 state: the ring and the convolution exact, the memory within e^x's last bits */
            CHECK(rows_of(&r, "conv_silu_l2norm", "ringq").max_abs == 0.0);
            CHECK(rows_of(&r, "conv_bias_silu", "ringv").max_abs == 0.0);
            CHECK(rows_of(&r, "gated_delta", "S").max_abs < 1e-6);
        } else { /* bf16 state: the memory moves by its rounding, every stored value a bf16 value */
            CHECK(rows_of(&r, "gated_delta", "S").max_abs > 1e-5);
        }
        kernels_tol_result_free(&r);
    }
    CHECK(caught(g, "cuda-lane:h200:dequant", KERNELS_FAULT_CONV_TAP, "conv_silu_l2norm"));
    CHECK(caught(g, "cuda-lane:h200:dequant", KERNELS_FAULT_CONV_TAP, "conv_bias_silu"));
    CHECK(caught(g, "cuda-lane:h200:int8:state=bf16", KERNELS_FAULT_GDN_STATE, "gated_delta"));
    CHECK(caught(g, "cuda-lane:h200:dequant", KERNELS_FAULT_DECAY_BIAS, "gdn_gating"));
    CHECK(!caught(g, "cuda-lane:h200:dequant", KERNELS_FAULT_NONE, "gated_delta"));
    ir_graph_free(g);
    /* on the zoo's model: the fused conv parts, the delta rule with its output quantized */
    struct models_options o = models_default_options();
    struct ir_graph *m = models_lift(models_find("tiny-qwen3-next"), &o, err);
    CHECKF(m != NULL, "%s", err);
    if (m) {
        CHECK(caught(m, "cuda-lane:h100:dequant", KERNELS_FAULT_CONV_TAP, "conv_parts"));
        CHECK(caught(m, "cuda-lane:h100:int8", KERNELS_FAULT_GDN_STATE, "gdn_output_quant"));
        CHECK(caught(m, "cuda-lane:h100:int8x2:state=bf16", KERNELS_FAULT_DECAY_BIAS, "gdn_gating"));
    }
    ir_graph_free(m);
}

/* Launch shapes follow the geometry: a GEMV's grid covers its outputs, an attention's block its heads. */
static void test_launch_plan(void)
{
    char err[IR_ERR_LEN];
    struct shim *shim = shim_lookup("cuda-lane:h200:int8", err);
    struct kernels_point p;
    struct ir_graph *split = ir_parse_file("tests/data/kernels/split_attention.fc", err);
    struct ir_graph *gdn = ir_parse_file("tests/data/kernels/deltanet.fc", err);
    CHECK(shim && kernels_point_of(shim, &p, err) == 0 && split && gdn);
    if (split) {
        struct kernels_launch l = kernels_launch_plan(&p, split, 0);
        CHECK_STR(l.kernel, "attention");
        CHECKF(l.stages == 1 && l.block == 32 && l.grid == 4 && l.smem_bytes > 0, "%d %lld %lld %lld", (int)l.stages,
               (long long)l.block, (long long)l.grid, (long long)l.smem_bytes);
    }
    if (gdn) { /* the delta rule: a block a value head, a warp over its 32 columns, the memory staged */
        struct kernels_launch l = kernels_launch_plan(&p, gdn, 10), c = kernels_launch_plan(&p, gdn, 6);
        CHECK_STR(l.kernel, "gated_delta");
        CHECK(l.grid == 4 && l.block == 32 && l.smem_bytes == 4 * 33 * 32);
        CHECK(c.grid == 1 && c.block == 256 && kernels_gdn_threads(33) == 64 && kernels_gdn_threads(5000) == 1024);
    }
    ir_graph_free(gdn);
    struct shim *ref = shim_lookup("reference", err);
    CHECK(kernels_point_of(ref, &p, err) == -1 && strstr(err, "not the CUDA lane"));
    shim_free(ref);
    shim_free(shim);
    ir_graph_free(split);
}

/* Whether the rewriting of model/mode under shim has a launch of signature `sig`, and its tolerance run is clean. */
static bool example_holds(const char *model, const char *mode, const char *shim_name, const char *sig, bool *clean)
{
    char err[IR_ERR_LEN];
    struct models_options o = models_default_options();
    const struct models_config *c = models_find(model);
    struct shim *shim = shim_lookup(shim_name, err);
    struct kernels_point p;
    bool found = false;
    *clean = false;
    if (!c || !shim || models_parse_mode(mode, &o.mode, err) || kernels_point_of(shim, &p, err)) {
        shim_free(shim);
        return false;
    }
    struct ir_graph *g = models_lift(c, &o, err);
    struct rules_optimized r;
    if (g && rules_optimize(g, shim, NULL, 0, &r, err) == 0) {
        char got[2048];
        for (int32_t i = 0; i < r.graph->nops && !found; i++) {
            kernels_launch_signature(&p, r.graph, i, got, sizeof got);
            found = strcmp(got, sig) == 0;
        }
        rules_optimized_free(&r);
        struct kernels_tol_result t;
        *clean = tolerance_of(g, shim_name, KERNELS_FAULT_NONE, 1, &t) == 0 && t.failed == 0 && t.nrows > 0;
        kernels_tol_result_free(&t);
    }
    ir_graph_free(g);
    shim_free(shim);
    return found;
}

/* The launch list (kernels/launches.txt, `fusecheck launches`): every kind has a host stage for each of its stages;
 * a kind first seen on a tiny graph is emitted there and that graph's tolerance run is clean; a kind seen only on a
 * real-size graph is made of stages (with their variants) that tiny kinds run. */
static void test_launch_list(void)
{
    size_t len;
    char *text = ir_read_file("kernels/launches.txt", &len);
    CHECK(text != NULL);
    if (!text)
        return;
    char tiny_stages[16384] = " ";
    int kinds = 0, tiny = 0, held = 0, real = 0, composed = 0;
    char done[128][272];
    int ndone = 0;
    for (int pass = 0; pass < 2; pass++)
        for (char *line = text, *next; line && *line; line = next) {
            next = strchr(line, '\n');
            size_t n = next ? (size_t)(next - line) : strlen(line);
            if (next)
                next++;
            char buf[2048];
            if (line[0] == '#' || n >= sizeof buf)
                continue;
            memcpy(buf, line, n);
            buf[n] = 0;
            char *hash = strstr(buf, "   # ");
            CHECKF(hash && !strstr(buf, "NO HOST KERNEL"), "%s", buf);
            if (!hash)
                continue;
            *hash = 0;
            char model[64], mode[32], shim[160];
            bool is_tiny = sscanf(hash + 5, "%63[^/]/%31s under %159s", model, mode, shim) == 3 &&
                           strncmp(model, "tiny-", 5) == 0;
            const char *stages = strchr(buf, ':') + 2;
            if (pass == 0 && is_tiny) {
                kinds++;
                tiny++;
                /* every stage token of a tiny kind, space-delimited */
                char copy[2048];
                snprintf(copy, sizeof copy, "%s", stages);
                for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " ")) {
                    char key[256];
                    snprintf(key, sizeof key, " %s ", tok);
                    if (!strstr(tiny_stages, key) && strlen(tiny_stages) + strlen(key) < sizeof tiny_stages)
                        strcat(tiny_stages, key + 1);
                }
                char key[272];
                snprintf(key, sizeof key, "%s %s %s", model, mode, shim);
                bool clean = false, seen = false;
                for (int i = 0; i < ndone && !seen; i++)
                    seen = strcmp(done[i], key) == 0;
                bool found = example_holds(model, mode, shim, buf, &clean);
                CHECKF(found, "%s is not among the launches of %s", buf, key);
                if (!seen) {
                    CHECKF(clean, "the tolerance run of %s", key);
                    if (ndone < 128)
                        snprintf(done[ndone++], sizeof done[0], "%s", key);
                }
                held += found && clean;
            } else if (pass == 1 && !is_tiny) {
                kinds++;
                real++;
                char copy[2048];
                bool all = true;
                snprintf(copy, sizeof copy, "%s", stages);
                for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " ")) {
                    char key[256];
                    snprintf(key, sizeof key, " %s ", tok);
                    all = all && strstr(tiny_stages, key);
                }
                CHECKF(all, "%s: a stage no tiny launch runs", buf);
                composed += all;
            }
        }
    CHECKF(kinds >= 100 && held == tiny && composed == real, "%d kinds: %d tiny (%d held), %d real-size only (%d "
           "composed of tiny stages)", kinds, tiny, held, real, composed);
    printf("launch list: %d kinds, %d run on tiny graphs within their bounds, %d real-size only, made of tiny "
           "kinds' stages\n", kinds, held, composed);
    free(text);
}

/* FNV-1a over n bytes, continuing h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* The same inputs give the same bytes with gcc and clang at any level: a digest of every row's figures and worst
 * values and every step's logits figures, over a few graphs and points, equals the one tests/data/kernels/
 * lane_digests.expected keeps (made by one compiler, checked by the other preset). */
static void test_digests(void)
{
    static const char *const runs[][3] = {
        {"tiny-qwen3", "decode", "cuda-lane:h200:int8"},      {"tiny-gemma2", "prefill:16", "cuda-lane:a100:int8"},
        {"tiny-qwen3-moe", "batch:4", "cuda-lane:l40s:int8x2"}, {"tiny-llama", "prefill:16", "cuda-lane:h100:int8x2"},
        {"tiny-gemma2", "decode", "cuda-lane:rtx4090:dequant:cache=f32"}};
    size_t len;
    char *want = ir_read_file("tests/data/kernels/lane_digests.expected", &len);
    CHECK(want != NULL);
    for (int i = 0; i < 5; i++) {
        char err[IR_ERR_LEN];
        struct models_options o = models_default_options();
        models_parse_mode(runs[i][1], &o.mode, err);
        struct ir_graph *g = models_lift(models_find(runs[i][0]), &o, err);
        struct kernels_tol_result r;
        uint64_t h = 1469598103934665603ull;
        if (g && tolerance_of(g, runs[i][2], KERNELS_FAULT_NONE, 2, &r) == 0) {
            for (int32_t k = 0; k < r.nrows; k++) {
                const struct kernels_tol_row *w = &r.rows[k];
                double f[5] = {w->max_abs, w->max_rel, w->nmse, w->bound, w->ratio};
                h = fnv(h, f, sizeof f);
                h = fnv(h, &w->lane, sizeof w->lane);
                h = fnv(h, &w->worst, sizeof w->worst);
            }
            for (int32_t k = 0; k < r.nsteps; k++) {
                double f[3] = {r.steps[k].nmse, r.steps[k].kl, r.steps[k].max_abs};
                h = fnv(h, f, sizeof f);
            }
        }
        kernels_tol_result_free(&r);
        ir_graph_free(g);
        char line[256];
        snprintf(line, sizeof line, "%s %s %s %016llx\n", runs[i][0], runs[i][1], runs[i][2], (unsigned long long)h);
        CHECKF(want && strstr(want, line), "not in lane_digests.expected: %s", line);
    }
    free(want);
}

int main(void)
{
    test_chips();
    test_acts();
    test_gemv();
    test_norms();
    test_moe_down();
    test_routings();
    test_attention();
    test_decode();
    test_transcendentals();
    test_logarithms();
    test_bounds();
    test_launch_plan();
    test_planted_faults();
    test_turns_and_norms();
    test_deltanet();
    test_zoo_tolerance();
    test_launch_list();
    test_digests();
    return check_done("test_kernels");
}
