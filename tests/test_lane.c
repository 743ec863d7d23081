/* tests/test_lane.c — the CUDA lane's shim: its names and knobs, its class table, every `fits` condition on both
 * sides of its boundary with every refusal reason asserted, its activations and contract, its two rules (firing,
 * held, and near misses of their guard atoms), the numerics fold, and `diff` between the quantized lifted graph and
 * the rewritten one over the tiny zoo.
 *
 * The zoo loop is the full activation x cache x fuse_quant cross product on one chip (h200) and one representative
 * operating point on each other chip (the chips only change launch geometry); the nightly `fusecheck check` runs the
 * full cross product on every chip. */
#include "check.h"
#include "kernels/kernels.h"
#include "models/models.h"
#include "rules/rules.h"
#include "shim/shim.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ── Helpers ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* The shim named `name` (a failed check when it does not exist). */
static struct shim *lane(const char *name)
{
    char err[IR_ERR_LEN];
    struct shim *s = shim_lookup(name, err);
    CHECKF(s != NULL, "%s: %s", name, err);
    return s;
}

/* printf into a fresh malloc'd string. */
static char *fmt(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(NULL, 0, f, ap);
    va_end(ap);
    char *s = malloc((size_t)n + 1);
    va_start(ap, f);
    vsnprintf(s, (size_t)n + 1, f, ap);
    va_end(ap);
    return s;
}

/* Parse (and validate) a test graph; NULL with a failed check when it does not parse. */
static struct ir_graph *parse(const char *text, const char *label)
{
    char err[IR_ERR_LEN];
    struct ir_graph *g = ir_parse(text, strlen(text), label, err);
    CHECKF(g != NULL, "%s: %s", label, err);
    return g;
}

/* The lane's fits answer for op `at` of the graph text under shim `name`: 0 fits, 1 with why, -1 when either could
 * not be made. The text is freed. */
static int fits_of(const char *name, char *text, int at, char why[IR_ERR_LEN])
{
    why[0] = '\0';
    struct shim *s = lane(name);
    struct ir_graph *g = parse(text, name);
    int rc = -1;
    if (s && g && at < g->nops)
        rc = s->fits(s, &g->ops[at], g, why);
    ir_graph_free(g);
    shim_free(s);
    free(text);
    return rc;
}

/* Expect the op to fit. */
static void fits(const char *label, const char *name, char *text, int at)
{
    char why[IR_ERR_LEN];
    int rc = fits_of(name, text, at, why);
    CHECKF(rc == 0, "%s under %s should fit: %s", label, name, why);
}

/* Expect the op to be refused with exactly `expected`. */
static void refused(const char *label, const char *name, char *text, int at, const char *expected)
{
    char why[IR_ERR_LEN];
    int rc = fits_of(name, text, at, why);
    CHECKF(rc == 1 && strcmp(why, expected) == 0, "%s under %s: rc %d, why \"%s\", expected \"%s\"", label, name, rc,
           why, expected);
    struct shim *s = lane(name);
    CHECKF(s && s->reason_code(s, why, false) != NULL, "%s: the reason \"%s\" has no code", label, why);
    shim_free(s);
}

/* Optimize g under shim `name` with the comma-free list of held steps; the report lines joined by newlines. */
static char *report_of(const struct ir_graph *g, const char *name, const char *const *held, int nheld,
                       struct ir_graph **rewritten)
{
    char err[IR_ERR_LEN];
    struct shim *s = lane(name);
    struct rules_optimized o;
    if (!s || rules_optimize(g, s, held, nheld, &o, err) != 0) {
        CHECKF(0, "optimize under %s: %s", name, err);
        shim_free(s);
        return calloc(1, 1);
    }
    size_t cap = 1, len = 0;
    for (int32_t i = 0; i < o.report.n; i++) {
        char *line = rules_decision_line(&o.report.d[i]);
        cap += strlen(line) + 1;
        free(line);
    }
    char *all = malloc(cap);
    all[0] = '\0';
    for (int32_t i = 0; i < o.report.n; i++) {
        char *line = rules_decision_line(&o.report.d[i]);
        len += (size_t)sprintf(all + len, "%s\n", line);
        free(line);
    }
    char verr[IR_ERR_LEN];
    CHECKF(ir_validate(o.graph, verr) == 0, "the graph rewritten under %s is invalid: %s", name, verr);
    if (rewritten) {
        *rewritten = o.graph;
        o.graph = NULL;
    }
    rules_optimized_free(&o);
    shim_free(s);
    return all;
}

/* Whether the report holds `line` as one of its lines. */
static bool has_line(const char *report, const char *line)
{
    size_t n = strlen(line);
    for (const char *at = report; (at = strstr(at, line)) != NULL; at++)
        if ((at == report || at[-1] == '\n') && at[n] == '\n')
            return true;
    return false;
}

/* How many quantize leaves g's ops hold, and how many of them take `words` words. */
static void count_quantizes(const struct ir_op *op, int *all, int *with, int words)
{
    if (op->sym == IR_SYM_QUANT) {
        (*all)++;
        *with += op->quant_words == words;
    }
    for (int32_t i = 0; i < op->nparts; i++)
        count_quantizes(&op->parts[i], all, with, words);
}

/* Quantize leaves in a graph. */
static int quantizes_in(const struct ir_graph *g, int words, int *with)
{
    int all = 0;
    *with = 0;
    for (int32_t i = 0; i < g->nops; i++)
        count_quantizes(&g->ops[i], &all, with, words);
    return all;
}

/* Evaluate a and b from one seed; whether their observed and carried tensors agree bit for bit (-1: eval failed).
 * The first difference is shown unless one is expected (`differ`). */
static int same_values(const struct ir_graph *a, const struct ir_graph *b, const char *label, bool differ)
{
    char err[IR_ERR_LEN];
    struct ir_values *va = ir_values_new(a, 7, err);
    if (!va || ir_eval(a, va, err)) {
        CHECKF(0, "%s: evaluating the reference: %s", label, err);
        ir_values_free(va);
        return -1;
    }
    struct ir_values *vb = ir_values_new_like(b, 7, a, err);
    if (!vb || ir_eval(b, vb, err)) {
        CHECKF(0, "%s: evaluating the rewritten graph: %s", label, err);
        ir_values_free(va);
        ir_values_free(vb);
        return -1;
    }
    struct ir_compare c = ir_values_compare(a, va, b, vb);
    if (!c.identical && c.tensor >= 0 && !differ)
        fprintf(stderr, "%s: %s[%lld]: %.9g vs %.9g\n", label, a->tensors[c.tensor].name, (long long)c.index,
                (double)c.a, (double)c.b);
    ir_values_free(va);
    ir_values_free(vb);
    return c.identical && c.compared > 0 ? 1 : 0;
}

/* Optimize g under shim `name` and compare it, evaluated, with the quantized lifted graph: bit-identical. */
static void diff_identical(const struct ir_graph *g, const char *name, const char *label)
{
    char err[IR_ERR_LEN];
    struct shim *s = lane(name);
    if (!s)
        return;
    struct ir_graph *ref = rules_quantized_lifted(g, s);
    struct rules_optimized o;
    CHECKF(ir_validate(ref, err) == 0, "%s under %s: the quantized lifted graph is invalid: %s", label, name, err);
    if (rules_optimize(g, s, NULL, 0, &o, err) == 0) {
        CHECKF(ir_validate(o.graph, err) == 0, "%s under %s: rewritten invalid: %s", label, name, err);
        char what[256];
        snprintf(what, sizeof what, "%s under %s", label, name);
        CHECKF(same_values(ref, o.graph, what, false) == 1, "%s differs", what);
        rules_optimized_free(&o);
    } else {
        CHECKF(0, "%s under %s: %s", label, name, err);
    }
    ir_graph_free(ref);
    shim_free(s);
}

/* ── Names and knobs ─────────────────────────────────────────────────────────────────────────────────────── */

/* A name parses to the shim whose canonical name is `canonical`. */
static void good_name(const char *name, const char *canonical)
{
    struct shim *s = lane(name);
    if (!s)
        return;
    CHECK_STR(s->name, canonical);
    struct shim *again = lane(s->name);
    if (again)
        CHECK_STR(again->name, canonical);
    shim_free(again);
    shim_free(s);
}

/* A name is refused with an error that holds `part`. */
static void bad_name(const char *name, const char *part)
{
    char err[IR_ERR_LEN];
    struct shim *s = shim_lookup(name, err);
    CHECKF(s == NULL && strstr(err, part) != NULL, "'%.80s': err \"%s\", expected to hold \"%s\"", name, err, part);
    shim_free(s);
}

/* The shim table's line for the lane, gathered from shim_list. */
static void list_line(const char *name, const char *what, void *ctx)
{
    if (strcmp(name, "cuda-lane:") == 0)
        *(const char **)ctx = what;
}

static void test_names(void)
{
    good_name("cuda-lane:h200:int8", "cuda-lane:h200:int8");
    good_name("cuda-lane:h100:dequant:cache=f32:batch", "cuda-lane:h100:dequant:cache=f32:batch");
    good_name("cuda-lane:h100:dequant:batch:cache=f32", "cuda-lane:h100:dequant:cache=f32:batch");
    good_name("cuda-lane:a100:int8x2:cache=f16:state=f32:fuse_quant=on:batch=off", "cuda-lane:a100:int8x2");
    good_name("cuda-lane:l40s:int8:hold=gemv_parts+rows_a_warp", "cuda-lane:l40s:int8:hold=rows_a_warp+gemv_parts");
    good_name("cuda-lane:rtx4090:int8x2:fuse_quant=off:state=bf16",
              "cuda-lane:rtx4090:int8x2:state=bf16:fuse_quant=off");
    good_name("cuda-lane:h200:int8:batch=on:hold=latent_expanded", "cuda-lane:h200:int8:batch:hold=latent_expanded");
    /* The longest canonical name still fits the shim's name. */
    good_name("cuda-lane:rtx4090:int8x2:hold=latent_expanded+gemv_parts+rows_a_warp:batch:fuse_quant=off:state=bf16:"
              "cache=f32",
              "cuda-lane:rtx4090:int8x2:cache=f32:state=bf16:fuse_quant=off:batch:hold=rows_a_warp+gemv_parts+"
              "latent_expanded");
    bad_name("cuda-lane", "missing the chip");
    bad_name("cuda-lane:h200", "missing the activations");
    bad_name("cuda-lane:h300:int8", "unknown chip 'h300' (h100, h200, a100, l40s, rtx4090)");
    bad_name("cuda-lane:h200:int4", "unknown activations 'int4' (dequant, int8, int8x2)");
    bad_name("cuda-lane:h200:int8:cache=f8", "cache=f8: expected cache=f32 or cache=f16");
    bad_name("cuda-lane:h200:int8:cache", "cache needs a value: cache=f32 or cache=f16");
    bad_name("cuda-lane:h200:int8:state=f16", "state=f16: expected state=f32 or state=bf16");
    bad_name("cuda-lane:h200:int8:fuse_quant=maybe", "fuse_quant=maybe: expected fuse_quant=on or fuse_quant=off");
    bad_name("cuda-lane:h200:int8:batch=2", "batch=2: expected batch=on or batch=off");
    bad_name("cuda-lane:h200:int8:color=red", "unknown knob 'color' (cache, state, fuse_quant, batch, hold)");
    bad_name("cuda-lane:h200:int8:batch:batch", "knob 'batch' given twice");
    bad_name("cuda-lane:h200:int8:", "an empty field");
    bad_name("cuda-lane:h200::int8", "an empty field");
    bad_name("cuda-lane:h200:int8:hold=foo", "hold: unknown lane rule 'foo'");
    bad_name("cuda-lane:h200:int8:hold=gemv_parts+", "hold: unknown lane rule ''");
    bad_name("cuda-lane:h200:int8:hold=", "hold names no lane rule");
    bad_name("cuda-lanes:h200:int8", "unknown shim");
    /* A very long bad name is refused with a bounded message. */
    size_t n = 20000;
    char *huge = malloc(n + 1);
    memcpy(huge, "cuda-lane:h200:int8:", 20);
    memset(huge + 20, 'x', n - 20);
    huge[n] = '\0';
    bad_name(huge, "unknown knob 'xxxx");
    memset(huge + 10, 'x', 10);
    bad_name(huge, "unknown chip 'xxxx");
    free(huge);
    /* shim_list lists the lane with its chips, activation modes and knobs. */
    const char *what = NULL;
    shim_list(list_line, &what);
    CHECK(what == shim_lane_what);
    for (int i = 0; what && i < kernels_chip_count(); i++) {
        const struct kernels_chip *c = kernels_chip_get(i);
        char sms[32];
        snprintf(sms, sizeof sms, "%d SMs", (int)c->sms);
        CHECKF(strstr(what, c->name) && strstr(what, c->label) && strstr(what, sms), "%s", c->name);
    }
    for (int a = 0; what && a < KERNELS_ACTS_COUNT; a++)
        CHECK(strstr(what, kernels_acts_name((enum kernels_acts)a)) != NULL);
    static const char *const knobs[] = {"cache=f16|f32", "state=f32|bf16", "fuse_quant=on|off", "batch[=on|off]",
                                        "rows_a_warp", "gemv_parts", "latent_expanded"};
    for (size_t k = 0; what && k < sizeof knobs / sizeof knobs[0]; k++)
        CHECKF(strstr(what, knobs[k]) != NULL, "%s", knobs[k]);
}

/* The lane's rules link where the optimizer runs them, each with its guard atoms as data. */
static void step_name(const char *name, void *ctx)
{
    char *all = ctx;
    strcat(all, name);
    strcat(all, " ");
}

static void test_rules_linked(void)
{
    struct shim *s = lane("cuda-lane:h200:int8");
    if (!s)
        return;
    char *all = calloc(1, 8192);
    rules_steps(s, step_name, all);
    CHECK(strstr(all, "latent_expanded add_norm ") == all);
    CHECK(strstr(all, " fused_quant gemv_parts merged_projections ") != NULL);
    free(all);
    CHECK(s->nrules == 2);
    for (int i = 0; i < s->nrules; i++) {
        const struct rules_rule *r = s->rules[i].rule;
        CHECK(r != NULL && strcmp(r->name, s->rules[i].name) == 0 && r->nguards >= 1 && r->nbuilds == 1);
        CHECK(r != NULL && r->builds[0] == s->rules[i].builds[0]);
    }
    CHECK(s->rules[0].position == SHIM_BEFORE && strcmp(s->rules[0].anchor, "add_norm") == 0);
    CHECK(s->rules[1].position == SHIM_BEFORE && strcmp(s->rules[1].anchor, "merged_projections") == 0);
    /* The fold's own rule: hoisting the quantize to its producer, one guard. */
    CHECK(strcmp(rules_rule_fused_quant.name, "fused_quant") == 0 && rules_rule_fused_quant.nguards == 1);
    CHECK(rules_rule_fused_quant.motion == RULES_MOTION_HOIST_TO_PRODUCER && rules_rule_fused_quant.nbuilds == 8);
    /* No rule: the guards hold (nothing to check). */
    struct rules_rewriter r = {0};
    struct rules_binding b = rules_binding_empty();
    CHECK(rules_guards_hold(&r, NULL, &b, NULL));
    shim_free(s);
}

/* ── supports ────────────────────────────────────────────────────────────────────────────────────────────── */

/* The classes the lane refuses and the reason each gives. */
static const struct {
    enum ir_class cls;
    const char *why;
} refusals[] = {
    {IR_CLASS_RELU_SQR, "the lane has no ReLU kernel"},
    {IR_CLASS_SOFTCAP, "the lane's attention kernels put no soft cap on their logits"},
    {IR_CLASS_MIXED_BATCH_ATTENTION,
     "the lane attends each sequence of a batch at its own position, never one part-way through a prefill"},
    {IR_CLASS_SPARSE_ATTENTION, "the lane's attention reads every cached row within its span"},
    {IR_CLASS_GROUPED_TOPK, "the lane's router takes a single top-k across all experts"},
    {IR_CLASS_SAMPLING, "the lane chooses the next token by arg-max only"},
    {IR_CLASS_KV_CACHE_QUANT, "the lane keeps its caches as f32 or f16 values, never quantized"},
    {IR_CLASS_HADAMARD_ROTATION, "the lane applies no rotation to its caches"},
    {IR_CLASS_COMPENSATED_RESIDUAL, "the lane adds its residual stream in plain f32, with no compensation"},
    {IR_CLASS_HOST_RESIDENT_KV,
     "the lane's caches stay in device memory; only weight matrices may live in host memory"},
    {IR_CLASS_ATTN_GQA_ROW_PACKING, "the lane's decode attention takes each head's dot products on the CUDA cores"},
    {IR_CLASS_MOE_DIRECT_PAIRS, "the lane sorts a chunk's rows by expert before its expert products"},
    {IR_CLASS_PERSISTENT_LAYER_MEGAKERNEL, "the lane replays a CUDA graph of one launch per op"},
    {IR_CLASS_ALLREDUCE_NORM, "the lane runs on a single device"},
};

/* The classes that quantize their result in the epilogue: native only with fuse_quant on. */
static const enum ir_class epilogues[] = {
    IR_CLASS_NORM_QUANT,       IR_CLASS_ADD_NORM_QUANT, IR_CLASS_GLU_ACT_MUL_QUANT, IR_CLASS_ELEMENTWISE_QUANT,
    IR_CLASS_GDN_OUTPUT_QUANT, IR_CLASS_GEMV_QUANT,     IR_CLASS_ATTN_OUTPUT_QUANT,
};

/* The classes run as their parts. */
static const enum ir_class decomposed[] = {
    IR_CLASS_NORM_SCALE,         IR_CLASS_NORM_WEIGHT_OFFSET,     IR_CLASS_DUAL_NORM,
    IR_CLASS_PREFILL_NORM_EPILOGUES, IR_CLASS_ATTN_RESIDUAL_NORM, IR_CLASS_RECOMPUTE_FANOUT,
    IR_CLASS_QK_NORM_ROPE_GATE_SPLIT, IR_CLASS_HORIZONTAL_NORM_ROPE_INSERT, IR_CLASS_CROSS_LAYER_LAUNCH,
    IR_CLASS_MLA_PROLOGUE,       IR_CLASS_MLA_UNABSORB_IN_FOLD,   IR_CLASS_ELEMENTWISE_CHAINS,
    IR_CLASS_ELEMENTWISE_REGIONS, IR_CLASS_MASKED_EXPERT_ACTIVATION, IR_CLASS_GEMM_SCALE,
    IR_CLASS_AFFINE_INPUT_FOLD,  IR_CLASS_ROUTER_SHARED_GATE_MERGE, IR_CLASS_MOE_GATHER_IN_OPERAND,
    IR_CLASS_GDN_INPUT_EPILOGUE, IR_CLASS_GDN_DECODE_WHOLE,       IR_CLASS_GDN_POST_CONV_PREP,
    IR_CLASS_LAST_LAYER_ROWS,
};

/* Whether c is among the n classes of list. */
static bool among(enum ir_class c, const enum ir_class *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == c)
            return true;
    return false;
}

/* Every class has its row: refused with the lane's reason, run as parts, native, or an epilogue under fuse_quant. */
static void test_supports(void)
{
    struct shim *on = lane("cuda-lane:h200:int8"), *off = lane("cuda-lane:h200:int8:fuse_quant=off");
    if (!on || !off)
        return;
    int native = 0;
    for (int c = 0; c < IR_CLASS_COUNT; c++) {
        struct shim_support a = on->supports(on, (enum ir_class)c), b = off->supports(off, (enum ir_class)c);
        const char *want = NULL;
        for (size_t k = 0; k < sizeof refusals / sizeof refusals[0]; k++)
            if (refusals[k].cls == (enum ir_class)c)
                want = refusals[k].why;
        if (want) {
            CHECKF(a.kind == SHIM_REFUSE && check_str_eq(a.why, want), "%s", ir_class_name((enum ir_class)c));
            const char *code = on->reason_code(on, a.why, true);
            CHECKF(code && strncmp(code, "lane.supports.", 14) == 0 &&
                       strcmp(code + 14, ir_class_name((enum ir_class)c)) == 0,
                   "%s: code %s", ir_class_name((enum ir_class)c), code ? code : "none");
        } else if (among((enum ir_class)c, epilogues, sizeof epilogues / sizeof epilogues[0])) {
            CHECKF(a.kind == SHIM_NATIVE && b.kind == SHIM_DECOMPOSE, "%s", ir_class_name((enum ir_class)c));
        } else if (among((enum ir_class)c, decomposed, sizeof decomposed / sizeof decomposed[0])) {
            CHECKF(a.kind == SHIM_DECOMPOSE && b.kind == SHIM_DECOMPOSE, "%s", ir_class_name((enum ir_class)c));
        } else {
            CHECKF(a.kind == SHIM_NATIVE && b.kind == SHIM_NATIVE, "%s", ir_class_name((enum ir_class)c));
            native++;
        }
    }
    CHECK(native == IR_CLASS_COUNT - 14 - 7 - 22);
    CHECK(on->supports(on, IR_CLASS_COUNT).kind == SHIM_REFUSE);
    shim_free(on);
    shim_free(off);
}

/* Every refused class's reason reached through a graph: an op of that class (over a ReLU) as the optimizer asks it. */
static void test_refusals_reached(void)
{
    struct shim *s = lane("cuda-lane:h100:int8x2");
    if (!s)
        return;
    for (size_t k = 0; k < sizeof refusals / sizeof refusals[0]; k++) {
        char *text = fmt("tensor x f32 1x8 input\n"
                         "tensor y f32 1x8 activation observed\n"
                         "fused %s y = (x) {\n"
                         "    op y = relu(x) n=8\n"
                         "}\n",
                         ir_class_name(refusals[k].cls));
        struct ir_graph *g = parse(text, ir_class_name(refusals[k].cls));
        free(text);
        if (!g)
            continue;
        struct rules_rewriter r = {0};
        r.g = g;
        r.shim = s;
        char why[IR_ERR_LEN];
        CHECKF(rules_allows(&r, &g->ops[0], why) == 1 && strcmp(why, refusals[k].why) == 0, "%s: %s",
               ir_class_name(refusals[k].cls), why);
        ir_graph_free(g);
    }
    /* A rule building a refused class reports the refusal with the reason: relu_sqr on a ReLU squared. */
    struct ir_graph *g = parse("tensor x f32 1x8 input\n"
                               "tensor r f32 1x8 activation\n"
                               "tensor y f32 1x8 activation observed\n"
                               "op r = relu(x) n=8\n"
                               "op y = elementwise(r, r) op=mul n=8\n",
                               "relu_sqr");
    if (g) {
        char *rep = report_of(g, "cuda-lane:h100:int8x2", NULL, 0, NULL);
        CHECKF(has_line(rep, "relu_sqr relu_sqr [0, 1] refused: relu_sqr: the lane has no ReLU kernel "
                             "{lane.supports.relu_sqr}"),
               "%s", rep);
        free(rep);
        ir_graph_free(g);
    }
    shim_free(s);
}

/* ── fits: the conditions every op meets ─────────────────────────────────────────────────────────────────── */

/* A product of one row by q8_0 rows, k deep. */
static char *product_text(int64_t k)
{
    return fmt("tensor x f32 1x%lld input\n"
               "tensor w f32 %lldx32 constant q8_0 transposed\n"
               "tensor y f32 1x32 activation observed\n"
               "op y = matmul(x, w) m=1 k=%lld n=32\n",
               (long long)k, (long long)k, (long long)k);
}

/* An attention of one row over four cached rows, its values read as `vread`, with `extra` fields. */
static char *attention_text(const char *vread, const char *extra)
{
    return fmt("tensor q f32 1x8 input\n"
               "tensor kc f32 4x4 state carried\n"
               "tensor vc f32 4x8 state carried\n"
               "tensor att f32 1x8 activation observed\n"
               "op att = attention(q, kc, %s) h=2 kv=1 hd=4 vd=4 l=4 rows=1%s\n",
               vread, extra);
}

/* A gated delta rule gated by `gate`. */
static char *delta_text(const char *gate)
{
    return fmt("tensor q f32 1x4 input\ntensor k f32 1x4 input\ntensor v f32 1x4 input\ntensor z f32 1x4 input\n"
               "tensor b f32 1x2 input\ntensor a f32 1x2 input\ntensor st f32 2x4 state carried\n"
               "tensor nw f32 1x2 constant\ntensor o f32 1x4 activation observed\n"
               "op o = gated_delta(q, k, v, z, b, a, st, nw) h=2 dk=2 dv=2 rows=1 gate=%s eps=1e-06\n",
               gate);
}

/* A norm or an elementwise op writing into the units of a wider state tensor. */
static char *unit_text(const char *op, int width)
{
    return fmt("tensor x f32 2x8 input\ntensor w f32 1x8 constant\ntensor big f32 4x16 state\n"
               "tensor y f32 2x8 activation\n"
               "op y = %s -> big unit(16:0:%d)\n",
               op, width);
}

/* A per-head product reading its input in place at `offset`. */
static char *head_part_text(int offset)
{
    return fmt("tensor x f32 2x128 input\ntensor w f32 64x32 constant\ntensor y f32 2x64 activation observed\n"
               "op y = head_matmul(x[64:%d:32], w) m=2 heads=2 a=32 b=32\n",
               offset);
}

/* A mixture of one row of 32 landing at `row` of a table. */
static char *mixture_row_text(const char *row)
{
    return fmt("tensor x f32 1x32 input\ntensor rt f32 32x4 constant\ntensor eg f32 32x8 constant\n"
               "tensor eu f32 32x8 constant\ntensor ed f32 8x32 constant\ntensor tab f32 2x32 state carried\n"
               "tensor pos i32 1x1 param\ntensor ym f32 1x32 activation\n"
               "op ym = moe(x, rt, eg, eu, ed) d=32 k=2 dff=2 experts=4 act=swiglu -> tab row(%s, 32)\n",
               row);
}

static void test_fits_common(void)
{
    const char *acc = "an int8 product adds at most 133144 terms in its 32-bit accumulator; this one adds 133152";
    fits("accumulator", "cuda-lane:h200:int8", product_text(133120), 0);
    refused("accumulator", "cuda-lane:h200:int8", product_text(133152), 0, acc);
    refused("accumulator", "cuda-lane:h200:int8x2", product_text(133152), 0, acc);
    fits("accumulator", "cuda-lane:h200:dequant", product_text(133152), 0);
    fits("soft cap", "cuda-lane:h200:int8", attention_text("vc[8:0:4]", ""), 0);
    refused("soft cap", "cuda-lane:h200:int8", attention_text("vc[8:0:4]", " softcap=30"), 0,
            "the lane's attention kernels put no soft cap on their logits");
    fits("capped tensor", "cuda-lane:h200:int8",
         fmt("tensor x f32 1x8 input\ntensor y f32 1x8 activation observed\nop y = scale(x) n=8 factor=2\n"), 0);
    refused("capped tensor", "cuda-lane:h200:int8",
            fmt("tensor x f32 1x8 input\ntensor y f32 1x8 activation observed\nop y = softcap(x) n=8 cap=30\n"), 0,
            "the lane has no kernel for a soft-capped tensor");
    fits("delta gate", "cuda-lane:h200:int8", delta_text("silu"), 0);
    refused("delta gate", "cuda-lane:h200:int8", delta_text("sigmoid"), 0,
            "the lane's delta-rule kernel gates its output with SiLU, never a sigmoid");
    const char *unit = "the lane writes into a part of every unit of a wider tensor only from a norm, a rotation or a "
                       "per-head product of that unit's width";
    const char *norm = "rms_norm(x, w) rows=2 cols=8 eps=1e-06 weight offset=0";
    fits("unit", "cuda-lane:h200:int8", unit_text(norm, 8), 0);
    refused("unit", "cuda-lane:h200:int8", unit_text(norm, 4), 0, unit);
    refused("unit", "cuda-lane:h200:int8", unit_text("elementwise(x, x) op=add n=16", 8), 0, unit);
    fits("head part", "cuda-lane:h200:int8", head_part_text(32), 0);
    refused("head part", "cuda-lane:h200:int8", head_part_text(16), 0,
            "a per-head product reads its input in place only at whole 32-value blocks");
    fits("attention part", "cuda-lane:h200:int8", attention_text("vc[8:2:4]", ""), 0);
    refused("attention part", "cuda-lane:h200:int8", attention_text("vc[8:1:4]", ""), 0,
            "an attention reads its operands in place two values at a time: an even place, an even pitch");
    fits("mixture row", "cuda-lane:h200:int8", mixture_row_text("2"), 0);
    refused("mixture row", "cuda-lane:h200:int8", mixture_row_text("pos"), 0,
            "a mixture writes its result at a fixed row of a table, never at a row a parameter names");
}

/* ── fits: per class ─────────────────────────────────────────────────────────────────────────────────────── */

/* A projection of m rows (32 deep, n wide, by `weights`) whose epilogue adds a residual and norms the sum — or,
 * with `plain`, only adds. */
static char *gemv_norm_text(int m, int n, const char *weights, bool plain)
{
    char *body = plain ? fmt("    op y = elementwise(res, p) op=add n=%d\n", m * n)
                       : fmt("    fused add_norm y = (res, p, nw) {\n"
                             "        op s = elementwise(res, p) op=add n=%d\n"
                             "        op y = rms_norm(s, nw) rows=%d cols=%d eps=1e-06 weight offset=0\n"
                             "    }\n",
                             m * n, m, n);
    char *text = fmt("tensor x f32 %dx32 input\ntensor w f32 32x%d constant %s\ntensor res f32 %dx%d input\n"
                     "tensor nw f32 1x%d constant\ntensor p f32 %dx%d activation\ntensor s f32 %dx%d activation\n"
                     "tensor y f32 %dx%d activation observed\n"
                     "fused gemv_norm_epilogue y = (x, w, res%s) {\n"
                     "    op p = matmul(x, w) m=%d k=32 n=%d\n%s}\n",
                     m, n, weights, m, n, n, m, n, m, n, m, n, plain ? "" : ", nw", m, n, body);
    free(body);
    return text;
}

static void test_fits_gemv_norm_epilogue(void)
{
    const char *one = "a projection norms in its last block only the one row it writes whole: a GEMV of a step's one "
                      "row by q8_0 or block-format rows";
    const char *regs = "a projection norms in its last block only a row that block holds in its registers";
    const char *q8 = "q8_0 transposed", *q4 = "q4_0 transposed";
    fits("q8_0 at the norm kernel's widest", "cuda-lane:h200:int8", gemv_norm_text(1, 8192, q8, false), 0);
    refused("q8_0 past it", "cuda-lane:h200:int8", gemv_norm_text(1, 8224, q8, false), 0, regs);
    fits("q4_0 one row a warp", "cuda-lane:h200:int8", gemv_norm_text(1, 2048, q4, false), 0);
    refused("q4_0 past its block", "cuda-lane:h200:int8", gemv_norm_text(1, 2080, q4, false), 0, regs);
    refused("q4_0 four rows a warp", "cuda-lane:h200:int8", gemv_norm_text(1, 4096, q4, false), 0, regs);
    refused("f16 rows", "cuda-lane:h200:int8", gemv_norm_text(1, 64, "f16 transposed", false), 0, one);
    refused("plain values", "cuda-lane:h200:int8", gemv_norm_text(1, 64, "", false), 0, one);
    refused("two rows", "cuda-lane:h200:int8", gemv_norm_text(2, 64, q8, false), 0, one);
    fits("one row", "cuda-lane:h200:int8", gemv_norm_text(1, 64, q8, false), 0);
    refused("a batch", "cuda-lane:h200:int8:batch", gemv_norm_text(1, 64, q8, false), 0, one);
    refused("no norm", "cuda-lane:h200:int8", gemv_norm_text(1, 64, q8, true), 0,
            "a projection's epilogue norms the add of the projection's result");
}

/* A mixture of one row d wide, then `second` (an add or a multiply of the residual) and a norm as the last step. */
static char *moe_final_text(int d, const char *second)
{
    return fmt("tensor x f32 1x%d input\ntensor res f32 1x%d input\ntensor rt f32 %dx4 constant\n"
               "tensor eg f32 %dx8 constant\ntensor eu f32 %dx8 constant\ntensor ed f32 8x%d constant\n"
               "tensor nw f32 1x%d constant\ntensor ym f32 1x%d activation\n"
               "tensor s f32 1x%d activation observed\ntensor n f32 1x%d activation observed\n"
               "fused moe_deferred_finalize n = (x, rt, eg, eu, ed, res, nw) keep s {\n"
               "    op ym = moe(x, rt, eg, eu, ed) d=%d k=2 dff=2 experts=4 act=swiglu\n"
               "    op s = elementwise(res, ym) op=%s n=%d\n"
               "    op n = rms_norm(s, nw) rows=1 cols=%d eps=1e-06 weight offset=0\n"
               "}\n",
               d, d, d, d, d, d, d, d, d, d, d, second, d, d);
}

/* A decode mixture with its shared expert folded in (the fold's parts as `parts` lists them; freed here), added to
 * the residual and normed. */
static char *moe_shared_final_text(char *parts)
{
    char *text = fmt("tensor x f32 1x8 input\ntensor res f32 1x8 input\ntensor rt f32 8x4 constant\n"
               "tensor eg f32 8x8 constant\ntensor eu f32 8x8 constant\ntensor ed f32 8x8 constant\n"
               "tensor wg f32 8x6 constant\ntensor wd f32 6x8 constant\ntensor nw f32 1x8 constant\n"
               "tensor ym f32 1x8 activation\ntensor g f32 1x6 activation\ntensor ys f32 1x8 activation\n"
               "tensor y f32 1x8 activation\ntensor s f32 1x8 activation observed\n"
               "tensor n f32 1x8 activation observed\n"
               "fused moe_deferred_finalize n = (x, rt, eg, eu, ed, wg, wd, res, nw) keep s {\n"
               "    fused shared_expert_fusion y = (x, rt, eg, eu, ed, wg, wd) {\n%s    }\n"
               "    op s = elementwise(res, y) op=add n=8\n"
               "    op n = rms_norm(s, nw) rows=1 cols=8 eps=1e-06 weight offset=0\n"
               "}\n",
               parts);
    free(parts);
    return text;
}

static void test_fits_moe_deferred_finalize(void)
{
    fits("decode down block", "cuda-lane:h200:int8", moe_final_text(512, "add"), 0);
    refused("past the down block", "cuda-lane:h200:int8", moe_final_text(544, "add"), 0,
            "a decode mixture norms in its last down block only a row that block holds in its registers");
    fits("a batch's combine", "cuda-lane:h200:int8:batch", moe_final_text(544, "add"), 0);
    refused("not summed", "cuda-lane:h200:int8", moe_final_text(64, "mul"), 0,
            "a mixture, alone or summed with one other array, adds and norms in its last step only the whole rows "
            "it writes");
    refused("no norm", "cuda-lane:h200:int8",
            fmt("tensor x f32 1x32 input\ntensor res f32 1x32 input\ntensor rt f32 32x4 constant\n"
                "tensor eg f32 32x8 constant\ntensor eu f32 32x8 constant\ntensor ed f32 8x32 constant\n"
                "tensor ym f32 1x32 activation\ntensor s f32 1x32 activation observed\n"
                "fused moe_deferred_finalize s = (x, rt, eg, eu, ed, res) {\n"
                "    op ym = moe(x, rt, eg, eu, ed) d=32 k=2 dff=2 experts=4 act=swiglu\n"
                "    op s = elementwise(res, ym) op=add n=32\n"
                "}\n"),
            0, "a mixture's last step norms the add of the mixture's result");
    /* The down launch reads the shared expert's width from the fold's third part: a product there fits; the
     * shared expert's ops first, its third part the mixture, is refused. */
    const char *moe = "        op ym = moe(x, rt, eg, eu, ed) d=8 k=2 dff=2 experts=4 act=swiglu\n";
    const char *gate = "        op g = matmul(x, wg) m=1 k=8 n=6\n";
    const char *down = "        op ys = matmul(g, wd) m=1 k=6 n=8\n";
    const char *sum = "        op y = elementwise(ym, ys) op=add n=8\n";
    fits("shared expert's down third", "cuda-lane:h200:int8", moe_shared_final_text(fmt("%s%s%s%s", moe, gate, down, sum)),
         0);
    refused("shared expert's down not third", "cuda-lane:h200:int8",
            moe_shared_final_text(fmt("%s%s%s%s", gate, down, moe, sum)), 0,
            "a decode mixture's down projection reads its experts' widths from its parts");
}

/* A gather (or `first`, reading `ins` and the norm's weight) whose rows a norm closes. */
static char *embed_text(const char *first, const char *ins)
{
    return fmt("tensor tok i32 1x1 param\ntensor emb f32 16x8 constant\ntensor w f32 1x8 constant\n"
               "tensor x f32 1x8 activation\ntensor n f32 1x8 activation observed\n"
               "fused embed_norm n = (%s) {\n"
               "    op x = %s\n"
               "    op n = rms_norm(x, w) rows=1 cols=8 eps=1e-06 weight offset=0\n"
               "}\n",
               ins, first);
}

/* A projection of one row (or m rows) whose epilogue turns `heads` heads hd wide. */
static char *qkv_text(int heads, int hd)
{
    int n = heads * hd;
    return fmt("tensor x f32 1x32 input\ntensor wq f32 32x%d constant q8_0 transposed\n"
               "tensor q f32 1x%d activation\ntensor cos f32 1x%d constant\ntensor sin f32 1x%d constant\n"
               "tensor qr f32 1x%d activation observed\n"
               "fused qkv_head_epilogue qr = (x, wq, cos, sin) {\n"
               "    op q = matmul(x, wq) m=1 k=32 n=%d\n"
               "    op qr = rope(q, cos, sin) h=%d hd=%d half=%d rows=1\n"
               "}\n",
               n, n, hd / 2, hd / 2, n, n, heads, hd, hd / 2);
}

/* A convolution of `chan` channels through its SiLU and a per-head L2 norm `cols` wide. */
static char *conv_l2_text(int chan, int cols)
{
    return fmt("tensor x f32 1x%d input\ntensor cw f32 %dx4 constant\ntensor ring f32 3x%d state carried\n"
               "tensor y f32 1x%d activation\ntensor s f32 1x%d activation\ntensor q f32 1x%d activation observed\n"
               "fused conv_silu_l2norm q = (x, cw, ring) {\n"
               "    fused conv_bias_silu s = (x, cw, ring) {\n"
               "        op y = causal_conv(x, cw, ring) chan=%d taps=4 rows=1\n"
               "        op s = silu(y) n=%d\n"
               "    }\n"
               "    op q = l2_norm(s) rows=%d cols=%d eps=1e-06\n"
               "}\n",
               chan, chan, chan, chan, chan, chan, chan, chan, chan / cols, cols);
}

static void test_fits_epilogues(void)
{
    fits("gather", "cuda-lane:h200:int8", embed_text("row_gather(emb, tok) rows=16 cols=8 index=named", "emb, tok, w"), 0);
    refused("not a gather", "cuda-lane:h200:int8", embed_text("elementwise(w, w) op=add n=8", "w"), 0,
            "a gather norms in its own blocks the whole rows it gathers");
    const char *turns = "a projection turns in its epilogue only the heads of the one row it writes whole, a GEMV of "
                        "a step's one row, heads at most 256 wide";
    fits("widest head", "cuda-lane:h200:int8", qkv_text(1, 256), 0);
    refused("past the widest head", "cuda-lane:h200:int8", qkv_text(1, 258), 0, turns);
    fits("four heads", "cuda-lane:h200:int8", qkv_text(4, 64), 0);
    refused("a batch", "cuda-lane:h200:int8:batch", qkv_text(4, 64), 0, turns);
    refused("no rotation", "cuda-lane:h200:int8",
            fmt("tensor x f32 1x32 input\ntensor wq f32 32x32 constant q8_0 transposed\ntensor q f32 1x32 activation\n"
                "tensor qr f32 1x32 activation observed\n"
                "fused qkv_head_epilogue qr = (x, wq) {\n    op q = matmul(x, wq) m=1 k=32 n=32\n"
                "    op qr = silu(q) n=32\n}\n"),
            0, "a projection's epilogue turns the heads of the projection's result");
    const char *l2 =
        "a convolution's epilogue norms heads of at most 1024 values, whole warps of them, that divide its channels";
    fits("widest head", "cuda-lane:h200:int8", conv_l2_text(1024, 1024), 0);
    refused("past it", "cuda-lane:h200:int8", conv_l2_text(1056, 1056), 0, l2);
    fits("whole warps", "cuda-lane:h200:int8", conv_l2_text(128, 64), 0);
    refused("part of a warp", "cuda-lane:h200:int8", conv_l2_text(96, 48), 0, l2);
    /* Issue 33 item 9: no channels at all (no graph holds one; the op is edited in place) divide any width, as the
     * seed has it; fusecheck refused them before. A zero width stays refused: the seed would divide by it. */
    struct shim *s = lane("cuda-lane:h200:int8");
    char *text = conv_l2_text(128, 64);
    struct ir_graph *g = parse(text, "no channels");
    char why[IR_ERR_LEN] = "";
    if (s && g) {
        struct ir_op *conv = &g->ops[0].parts[0].parts[0], *l2n = &g->ops[0].parts[1];
        conv->spec.u.causal_conv.chan = 0;
        CHECKF(s->fits(s, &g->ops[0], g, why) == 0, "no channels should fit: %s", why);
        l2n->spec.u.l2_norm.cols = 0;
        CHECKF(s->fits(s, &g->ops[0], g, why) == 1 && strcmp(why, l2) == 0, "a zero width: %s", why);
    }
    ir_graph_free(g);
    free(text);
    shim_free(s);
}

/* A gated pair of m rows, n wide, by gate and up weights of the given formats. */
static char *pair_text(int m, int n, const char *fg, const char *fu)
{
    return fmt("tensor x f32 %dx32 input\ntensor wg f32 32x%d constant %s\ntensor wu f32 32x%d constant %s\n"
               "tensor g f32 %dx%d activation\ntensor u f32 %dx%d activation\ntensor y f32 %dx%d activation observed\n"
               "fused gemv_gate_up_glu y = (x, wg, wu) {\n"
               "    op g = matmul(x, wg) m=%d k=32 n=%d\n"
               "    op u = matmul(x, wu) m=%d k=32 n=%d\n"
               "    op y = swiglu(g, u) total=%d\n"
               "}\n",
               m, n, fg, n, fu, m, n, m, n, m, n, m, n, m, n, m * n);
}

static void test_fits_pairs(void)
{
    const char *q8 = "q8_0 transposed";
    const char *tiles = "a gated pair on the tensor cores pairs tiles of one format, its hidden width whole 64-column "
                        "pair tiles";
    fits("pair tiles", "cuda-lane:h200:int8", pair_text(16, 64, q8, q8), 0);
    refused("past pair tiles", "cuda-lane:h200:int8", pair_text(16, 96, q8, q8), 0, tiles);
    refused("two formats", "cuda-lane:h200:int8", pair_text(16, 64, q8, "q4_0 transposed"), 0, tiles);
    fits("the GEMV's rows", "cuda-lane:h200:int8", pair_text(8, 96, q8, q8), 0);
    fits("dequantized", "cuda-lane:h200:dequant", pair_text(16, 96, q8, q8), 0);
    fits("a batch", "cuda-lane:h200:int8:batch", pair_text(16, 96, q8, q8), 0);
    refused("plain values", "cuda-lane:h200:int8", pair_text(1, 64, "", ""), 0,
            "the lane pairs a gate product with an up product only over checkpoint rows");
    refused("one product", "cuda-lane:h200:int8",
            fmt("tensor x f32 1x32 input\ntensor wg f32 32x32 constant q8_0 transposed\ntensor u f32 1x32 input\n"
                "tensor g f32 1x32 activation\ntensor y f32 1x32 activation observed\n"
                "fused gemv_gate_up_glu y = (x, wg, u) {\n    op g = matmul(x, wg) m=1 k=32 n=32\n"
                "    op y = swiglu(g, u) total=32\n}\n"),
            0, "a gated pair is two products");
}

/* A launch of n convolutions of one row through the SiLU (the last one `rows` rows, `taps` taps, or, with `bare`,
 * without its SiLU), each 32 channels; with `l2`, each normed over heads of 16 (the last of `last_l2`). */
static char *conv_parts_text(int n, int rows, int taps, bool bare, bool l2, int last_l2)
{
    size_t cap = 16384, len = 0;
    char *t = malloc(cap);
    t[0] = '\0';
    for (int i = 0; i < n; i++) {
        bool last = i == n - 1;
        int r = last ? rows : 1, tp = last ? taps : 4;
        len += (size_t)snprintf(t + len, cap - len,
                                "tensor x%d f32 %dx32 input\ntensor w%d f32 32x%d constant\n"
                                "tensor ring%d f32 %dx32 state carried\ntensor y%d f32 %dx32 activation\n"
                                "tensor s%d f32 %dx32 activation%s\ntensor q%d f32 %dx32 activation%s\n",
                                i, r, i, tp, i, tp - 1, i, r, i, r, l2 ? "" : " observed", i, r, l2 ? " observed" : "");
    }
    /* each part's result is seen by the host: the op keeps all but its own */
    const char *res = l2 ? "q" : "s";
    len += (size_t)snprintf(t + len, cap - len, "fused conv_parts %s0 = (", res);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len, "%sx%d, w%d, ring%d", i ? ", " : "", i, i, i);
    len += (size_t)snprintf(t + len, cap - len, ")");
    for (int i = 1; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len, "%s%s%d", i == 1 ? " keep " : ", ", res, i);
    len += (size_t)snprintf(t + len, cap - len, " {\n");
    for (int i = 0; i < n; i++) {
        bool last = i == n - 1;
        int r = last ? rows : 1, tp = last ? taps : 4, cols = last ? last_l2 : 16;
        if (last && bare) {
            len += (size_t)snprintf(t + len, cap - len,
                                    "    op s%d = causal_conv(x%d, w%d, ring%d) chan=32 taps=%d rows=%d\n", i, i, i, i,
                                    tp, r);
            continue;
        }
        if (l2)
            len += (size_t)snprintf(t + len, cap - len, "    fused conv_silu_l2norm q%d = (x%d, w%d, ring%d) {\n", i, i,
                                    i, i);
        len += (size_t)snprintf(t + len, cap - len,
                                "    fused conv_bias_silu s%d = (x%d, w%d, ring%d) {\n"
                                "        op y%d = causal_conv(x%d, w%d, ring%d) chan=32 taps=%d rows=%d\n"
                                "        op s%d = silu(y%d) n=%d\n    }\n",
                                i, i, i, i, i, i, i, i, tp, r, i, i, 32 * r);
        if (l2)
            len += (size_t)snprintf(t + len, cap - len, "    op q%d = l2_norm(s%d) rows=%d cols=%d eps=1e-06\n    }\n",
                                    i, i, 32 * r / cols, cols);
    }
    snprintf(t + len, cap - len, "}\n");
    return t;
}

/* A launch of rotations: `n` parts, the last one of `rows` rows, or normed when `normed`. */
static char *rope_parts_text(int n, int rows, bool normed)
{
    size_t cap = 8192, len = 0;
    char *t = malloc(cap);
    len += (size_t)snprintf(t, cap,
                            "tensor cos f32 8x2 constant\ntensor sin f32 8x2 constant\ntensor pos i32 1x1 param\n"
                            "tensor nw f32 1x4 constant\n");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len,
                                "tensor x%d f32 1x8 input\ntensor m%d f32 1x8 activation\n"
                                "tensor r%d f32 1x8 activation observed\n",
                                i, i, i);
    len += (size_t)snprintf(t + len, cap - len, "fused rope_qk_one_launch r0 = (");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len, "%sx%d, cos, sin, pos%s", i ? ", " : "", i,
                                normed && i == n - 1 ? ", nw" : "");
    len += (size_t)snprintf(t + len, cap - len, ")");
    for (int i = 1; i < n; i++) /* the host sees every rotation: the op keeps all but its own */
        len += (size_t)snprintf(t + len, cap - len, "%sr%d", i == 1 ? " keep " : ", ", i);
    len += (size_t)snprintf(t + len, cap - len, " {\n");
    for (int i = 0; i < n; i++) {
        bool last = i == n - 1;
        int r = last ? rows : 1;
        if (last && normed)
            len += (size_t)snprintf(t + len, cap - len,
                                    "    fused qk_norm_rope r%d = (x%d, nw, cos, sin, pos) {\n"
                                    "        op m%d = rms_norm(x%d, nw) rows=2 cols=4 eps=1e-06 weight offset=0\n"
                                    "        op r%d = rope(m%d, cos, sin, pos) h=2 hd=4 half=2 rows=1 pos=named\n"
                                    "    }\n",
                                    i, i, i, i, i, i);
        else
            len += (size_t)snprintf(t + len, cap - len,
                                    "    op r%d = rope(x%d, cos, sin, pos) h=2 hd=4 half=2 rows=%d pos=named\n", i, i,
                                    r);
    }
    snprintf(t + len, cap - len, "}\n");
    return t;
}

/* A fused op of class `cls` over n SiLUs (no convolution, no rotation): too many parts of the wrong type. */
static char *silus_text(const char *cls, int n)
{
    size_t cap = 4096, len = 0;
    char *t = malloc(cap);
    t[0] = '\0';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len, "tensor x%d f32 1x8 input\ntensor y%d f32 1x8 activation observed\n",
                                i, i);
    len += (size_t)snprintf(t + len, cap - len, "fused %s y0 = (", cls);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len, "%sx%d", i ? ", " : "", i);
    len += (size_t)snprintf(t + len, cap - len, ")");
    for (int i = 1; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len, "%sy%d", i == 1 ? " keep " : ", ", i);
    len += (size_t)snprintf(t + len, cap - len, " {\n");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len, "    op y%d = silu(x%d) n=8\n", i, i);
    snprintf(t + len, cap - len, "}\n");
    return t;
}

static void test_fits_launches(void)
{
    /* Issue 33 item 9: too many parts of the wrong type give the seed's first reason, the type (fusecheck counted
     * first before). */
    refused("five, none a convolution", "cuda-lane:h200:int8", silus_text("conv_parts", 5), 0,
            "a launch of convolutions takes only convolutions");
    refused("three, none a rotation", "cuda-lane:h200:int8", silus_text("rope_qk_one_launch", 3), 0,
            "a launch of rotations takes only rotations");
    const char *convs = "one launch convolves a step's one row through the SiLU in at most four parts of one tap "
                        "count, the normed ones over heads of one width";
    fits("four parts", "cuda-lane:h200:int8", conv_parts_text(4, 1, 4, false, false, 16), 0);
    refused("five parts", "cuda-lane:h200:int8", conv_parts_text(5, 1, 4, false, false, 16), 0, convs);
    refused("two rows", "cuda-lane:h200:int8", conv_parts_text(2, 2, 4, false, false, 16), 0, convs);
    refused("two tap counts", "cuda-lane:h200:int8", conv_parts_text(2, 1, 3, false, false, 16), 0, convs);
    refused("no SiLU", "cuda-lane:h200:int8", conv_parts_text(2, 1, 4, true, false, 16), 0, convs);
    fits("normed alike", "cuda-lane:h200:int8", conv_parts_text(2, 1, 4, false, true, 16), 0);
    refused("normed apart", "cuda-lane:h200:int8", conv_parts_text(2, 1, 4, false, true, 32), 0, convs);
    refused("not a convolution", "cuda-lane:h200:int8",
            fmt("tensor x f32 1x8 input\ntensor y f32 1x8 activation observed\n"
                "fused conv_parts y = (x) {\n    op y = silu(x) n=8\n}\n"),
            0, "a launch of convolutions takes only convolutions");
    const char *turns = "one launch rotates at most a query and a key of a step's one row, both normed or neither";
    fits("query and key", "cuda-lane:h200:int8", rope_parts_text(2, 1, false), 0);
    refused("three", "cuda-lane:h200:int8", rope_parts_text(3, 1, false), 0, turns);
    refused("two rows", "cuda-lane:h200:int8", rope_parts_text(2, 2, false), 0, turns);
    refused("one normed", "cuda-lane:h200:int8", rope_parts_text(2, 1, true), 0, turns);
    refused("not a rotation", "cuda-lane:h200:int8",
            fmt("tensor x f32 1x8 input\ntensor y f32 1x8 activation observed\n"
                "fused rope_qk_one_launch y = (x) {\n    op y = silu(x) n=8\n}\n"),
            0, "a launch of rotations takes only rotations");
    const char *gates = "tensor x f32 1x32 input\ntensor wb f32 32x2 constant %s\ntensor wa f32 32x2 constant %s\n"
                        "tensor bl f32 1x2 activation observed\ntensor al f32 1x2 activation observed\n"
                        "fused gdn_gate_projections bl = (x, wb, wa) keep al {\n"
                        "    op bl = matmul(x, wb) m=1 k=32 n=2\n    op al = matmul(x, wa) m=1 k=32 n=2\n}\n";
    fits("gates by values", "cuda-lane:h200:int8", fmt(gates, "", ""), 0);
    refused("gates by rows", "cuda-lane:h200:int8", fmt(gates, "", "q8_0 transposed"), 0,
            "the lane projects a delta rule's gates from its activation only by matrices it holds as plain values");
}

/* A mixture of `experts` experts keeping k, with a shared expert (SwiGLU or, with `biased`, a biased gate) by rows. */
static char *shared_text(int experts, int k, const char *act, bool biased)
{
    return fmt("tensor x f32 1x32 input\ntensor rt f32 32x%d constant\ntensor eg f32 32x%d constant\n"
               "tensor eu f32 32x%d constant\ntensor ed f32 %dx32 constant\n"
               "tensor wg f32 32x32 constant q8_0 transposed\ntensor wu f32 32x32 constant q8_0 transposed\n"
               "tensor wd f32 32x32 constant q8_0 transposed\ntensor bg f32 1x32 constant\n"
               "tensor ym f32 1x32 activation\ntensor g f32 1x32 activation\ntensor gb f32 1x32 activation\n"
               "tensor u f32 1x32 activation\ntensor h f32 1x32 activation\ntensor ys f32 1x32 activation\n"
               "tensor y f32 1x32 activation observed\n"
               "fused shared_expert_fusion y = (x, rt, eg, eu, ed, wg, %s wu, wd) {\n"
               "    op ym = moe(x, rt, eg, eu, ed) d=32 k=%d dff=2 experts=%d act=%s\n"
               "    op g = matmul(x, wg) m=1 k=32 n=32\n"
               "    op gb = elementwise(g, %s) op=%s n=32%s\n"
               "    op u = matmul(x, wu) m=1 k=32 n=32\n"
               "    op h = swiglu(gb, u) total=32\n"
               "    op ys = matmul(h, wd) m=1 k=32 n=32\n"
               "    op y = elementwise(ym, ys) op=add n=32\n"
               "}\n",
               experts, experts * 2, experts * 2, experts * 2, biased ? "bg," : "", k, experts, act,
               biased ? "bg" : "g", biased ? "add" : "mul", biased ? " row=32" : "");
}

/* A gated attention (its gate a sigmoid of gz) of `rows` rows whose value heads are vd wide; with `quant`, quantized
 * as a gated pair's result. */
static char *gated_attention_text(int rows, int vd, bool quant)
{
    int w = 2 * vd;
    char *q = quant ? fmt("tensor yq f32 %dx%d activation observed\n", rows, w) : fmt("%s", "");
    char *text = fmt("tensor q f32 %dx8 input\ntensor kc f32 16x4 state carried\ntensor vc f32 16x%d state carried\n"
                     "tensor gz f32 %dx%d input\ntensor att f32 %dx%d activation\ntensor sg f32 %dx%d activation\n"
                     "tensor y f32 %dx%d activation%s\n%s"
                     "%s"
                     "fused attn_output_gate y = (q, kc, vc, gz) {\n"
                     "    op att = attention(q, kc, vc) h=2 kv=1 hd=4 vd=%d l=16 rows=%d\n"
                     "    fused glu_act_mul y = (att, gz) {\n"
                     "        op sg = sigmoid(gz) n=%d\n"
                     "        op y = elementwise(att, sg) op=mul n=%d\n"
                     "    }\n"
                     "}\n"
                     "%s",
                     rows, vd, rows, w, rows, w, rows, w, rows, w, quant ? "" : " observed", q,
                     quant ? "fused glu_act_mul_quant yq = (q, kc, vc, gz) {\n" : "", vd, rows, rows * w, rows * w,
                     quant ? "    op yq = quantize(y) words=1\n}\n" : "");
    free(q);
    return text;
}

static void test_fits_gates(void)
{
    const char *shared = "a mixture folds in only an unbiased SwiGLU shared expert, a step's one row by checkpoint "
                         "rows, beside fewer than 32 kept experts";
    fits("31 kept experts", "cuda-lane:h200:int8", shared_text(32, 31, "swiglu", false), 0);
    refused("32 kept experts", "cuda-lane:h200:int8", shared_text(32, 32, "swiglu", false), 0, shared);
    refused("GeGLU experts", "cuda-lane:h200:int8", shared_text(4, 2, "geglu", false), 0, shared);
    refused("a biased gate", "cuda-lane:h200:int8", shared_text(4, 2, "swiglu", true), 0, shared);
    const char *gate = "an attention gates its output only in the decode step's, a short chunk's and a batch's "
                       "kernels, its value heads whole pairs";
    fits("a short chunk", "cuda-lane:h200:int8", gated_attention_text(8, 4, false), 0);
    refused("a chunk in tiles", "cuda-lane:h200:int8", gated_attention_text(9, 4, false), 0, gate);
    refused("odd value heads", "cuda-lane:h200:int8", gated_attention_text(1, 3, false), 0, gate);
    refused("no attention", "cuda-lane:h200:int8",
            fmt("tensor a f32 1x8 input\ntensor gz f32 1x8 input\ntensor sg f32 1x8 activation\n"
                "tensor y f32 1x8 activation observed\n"
                "fused attn_output_gate y = (a, gz) {\n    op sg = sigmoid(gz) n=8\n"
                "    op y = elementwise(a, sg) op=mul n=8\n}\n"),
            0, gate);
}

/* A row set of rows `cols` wide carrying its quantized form. */
static char *row_quant_text(int cols)
{
    return fmt("tensor tab f32 2x%d state\ntensor src f32 1x%d input\ntensor tq f32 2x%d activation observed\n"
               "fused row_write_quant tq = (src) {\n"
               "    op tab = set_row(tab, src) rows=2 cols=%d count=1 index=1\n"
               "    op tq = quantize(tab) words=1\n"
               "}\n",
               cols, cols, cols, cols);
}

/* A gated pair of two rows, n wide, quantizing its hidden values. */
static char *pair_quant_text(int n)
{
    return fmt("tensor x f32 2x32 input\ntensor wg f32 32x%d constant q8_0 transposed\n"
               "tensor wu f32 32x%d constant q8_0 transposed\ntensor g f32 2x%d activation\n"
               "tensor u f32 2x%d activation\ntensor y f32 2x%d activation\ntensor yq f32 2x%d activation observed\n"
               "fused glu_act_mul_quant yq = (x, wg, wu) {\n"
               "    fused gemv_gate_up_glu y = (x, wg, wu) {\n"
               "        op g = matmul(x, wg) m=2 k=32 n=%d\n"
               "        op u = matmul(x, wu) m=2 k=32 n=%d\n"
               "        op y = swiglu(g, u) total=%d\n"
               "    }\n"
               "    op yq = quantize(y) words=2\n"
               "}\n",
               n, n, n, n, n, n, n, n, 2 * n);
}

/* An attention of `rows` rows, value heads vd wide, quantizing its output. */
static char *attention_quant_text(int rows, int vd)
{
    return fmt("tensor q f32 %dx8 input\ntensor kc f32 16x4 state carried\ntensor vc f32 16x%d state carried\n"
               "tensor att f32 %dx%d activation\ntensor aq f32 %dx%d activation observed\n"
               "fused attn_output_quant aq = (q, kc, vc) {\n"
               "    op att = attention(q, kc, vc) h=2 kv=1 hd=4 vd=%d l=16 rows=%d\n"
               "    op aq = quantize(att) words=1\n"
               "}\n",
               rows, vd, rows, 2 * vd, rows, 2 * vd, vd, rows);
}

/* `first` (computing y, 1x32) quantized as a norm's result. */
static char *norm_quant_text(const char *first, const char *ins)
{
    return fmt("tensor tok i32 1x1 param\ntensor emb f32 16x32 constant\ntensor x f32 1x32 input\n"
               "tensor w f32 1x32 constant\ntensor e f32 1x32 activation\ntensor y f32 1x32 activation\n"
               "tensor yq f32 1x32 activation observed\n"
               "fused norm_quant yq = (%s) {\n%s    op yq = quantize(y) words=1\n}\n",
               ins, first);
}

/* A product of one row, 32 deep and n wide by `weights`, quantizing its outputs. */
static char *gemv_quant_text(int n, const char *weights)
{
    return fmt("tensor x f32 1x32 input\ntensor w f32 32x%d constant %s\ntensor y f32 1x%d activation\n"
               "tensor yq f32 1x%d activation observed\n"
               "fused gemv_quant yq = (x, w) {\n    op y = matmul(x, w) m=1 k=32 n=%d\n"
               "    op yq = quantize(y) words=1\n}\n",
               n, weights, n, n, n);
}

static void test_fits_quant(void)
{
    fits("whole blocks", "cuda-lane:h200:int8", row_quant_text(64), 0);
    refused("part of a block", "cuda-lane:h200:int8", row_quant_text(48), 0,
            "a row set carries its rows' quantized form only for rows of whole 32-value blocks");
    fits("whole blocks", "cuda-lane:h200:int8x2", pair_quant_text(64), 0);
    refused("part of a block", "cuda-lane:h200:int8x2", pair_quant_text(48), 0,
            "a gated pair quantizes its hidden values only in whole 32-value blocks");
    fits("gated attention", "cuda-lane:h200:int8", gated_attention_text(1, 32, true), 0);
    refused("gated attention", "cuda-lane:h200:int8", gated_attention_text(1, 48, true), 0,
            "a gated attention quantizes its output in its store only where its heads, and a batch's rows, are whole "
            "32-value groups");
    const char *att = "an attention quantizes its output only in the decode step's and a short chunk's kernels, its "
                      "value heads whole 32-value groups";
    fits("a short chunk", "cuda-lane:h200:int8", attention_quant_text(8, 32), 0);
    refused("a chunk in tiles", "cuda-lane:h200:int8", attention_quant_text(9, 32), 0, att);
    refused("part of a group", "cuda-lane:h200:int8", attention_quant_text(1, 48), 0, att);
    fits("a norm", "cuda-lane:h200:int8",
         norm_quant_text("    op y = rms_norm(x, w) rows=1 cols=32 eps=1e-06 weight offset=0\n", "x, w"), 0);
    fits("an embedding's norm", "cuda-lane:h200:int8",
         norm_quant_text("    fused embed_norm y = (emb, tok, w) {\n"
                         "        op e = row_gather(emb, tok) rows=16 cols=32 index=named\n"
                         "        op y = rms_norm(e, w) rows=1 cols=32 eps=1e-06 weight offset=0\n    }\n",
                         "emb, tok, w"),
         0);
    refused("not a norm", "cuda-lane:h200:int8", norm_quant_text("    op y = elementwise(x, w) op=add n=32\n", "x, w"), 0,
            "the lane's norm quantizes its result only from an RMS norm");
    const char *gq = "a product quantizes its outputs only four rows a warp, in whole 32-value blocks, into its own "
                     "buffer";
    fits("four rows a warp", "cuda-lane:h200:int8", gemv_quant_text(4096, "q8_0 transposed"), 0);
    refused("one row a warp", "cuda-lane:h200:int8", gemv_quant_text(4064, "q8_0 transposed"), 0, gq);
    refused("rows_a_warp held", "cuda-lane:h200:int8:hold=rows_a_warp", gemv_quant_text(4096, "q8_0 transposed"), 0,
            gq);
    refused("f16 rows", "cuda-lane:h200:int8", gemv_quant_text(4096, "f16 transposed"), 0, gq);
}

/* n products of one activation of m rows, each `width` wide by `fmt0` rows (the last by `fmtn`). */
static char *merged_text(int n, int m, int width, const char *fmt0, const char *fmtn)
{
    size_t cap = 8192, len = 0;
    char *t = malloc(cap);
    len += (size_t)snprintf(t, cap, "tensor x f32 %dx32 input\n", m);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len,
                                "tensor w%d f32 32x%d constant %s\ntensor y%d f32 %dx%d activation observed\n", i,
                                width, i == n - 1 ? fmtn : fmt0, i, m, width);
    len += (size_t)snprintf(t + len, cap - len, "fused merged_qkv y0 = (x");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len, ", w%d", i);
    len += (size_t)snprintf(t + len, cap - len, ")");
    for (int i = 1; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len, "%sy%d", i == 1 ? " keep " : ", ", i);
    len += (size_t)snprintf(t + len, cap - len, " {\n");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len, "    op y%d = matmul(x, w%d) m=%d k=32 n=%d\n", i, i, m, width);
    snprintf(t + len, cap - len, "}\n");
    return t;
}

static void test_fits_merged(void)
{
    const char *q8 = "q8_0 transposed", *q4 = "q4_0 transposed";
    const char *parts = "products of one activation are one launch in parts only at most four, one format: on the "
                        "tensor cores whole 128-output tiles, in the GEMV one number of rows a warp";
    fits("GEMV in parts", "cuda-lane:h200:int8", merged_text(4, 1, 64, q8, q8), 0);
    refused("five parts", "cuda-lane:h200:int8", merged_text(5, 1, 64, q8, q8), 0, parts);
    refused("two formats", "cuda-lane:h200:int8", merged_text(3, 1, 64, q8, q4), 0, parts);
    refused("gemv_parts held", "cuda-lane:h200:int8:hold=gemv_parts", merged_text(3, 1, 64, q8, q8), 0, parts);
    fits("GEMV rows", "cuda-lane:h200:int8", merged_text(3, 8, 64, q8, q8), 0);
    refused("past the GEMV's rows", "cuda-lane:h200:int8", merged_text(3, 9, 64, q8, q8), 0, parts);
    fits("a batch's rows", "cuda-lane:h200:int8:batch", merged_text(3, 9, 64, q8, q8), 0);
    fits("tensor-core tiles", "cuda-lane:h200:int8", merged_text(3, 16, 128, q8, q8), 0);
    fits("tensor-core tiles", "cuda-lane:h200:int8:hold=gemv_parts", merged_text(4, 16, 256, q8, q8), 0);
    refused("part of a tile", "cuda-lane:h200:int8", merged_text(3, 16, 192, q8, q8), 0, parts);
    refused("dequantized", "cuda-lane:h200:dequant", merged_text(3, 16, 128, q8, q8), 0, parts);
    /* A wide shallow part takes four rows a warp and a narrow one one: not one GEMV, unless rows_a_warp is held. */
    char *mixed = fmt("tensor x f32 1x32 input\ntensor w0 f32 32x4096 constant q8_0 transposed\n"
                      "tensor w1 f32 32x64 constant q8_0 transposed\ntensor y0 f32 1x4096 activation observed\n"
                      "tensor y1 f32 1x64 activation observed\n"
                      "fused merged_qkv y0 = (x, w0, w1) keep y1 {\n    op y0 = matmul(x, w0) m=1 k=32 n=4096\n"
                      "    op y1 = matmul(x, w1) m=1 k=32 n=64\n}\n");
    refused("rows a warp apart", "cuda-lane:h200:int8", fmt("%s", mixed), 0, parts);
    fits("rows a warp held", "cuda-lane:h200:int8:hold=rows_a_warp", mixed, 0);
    /* The norm-then-add kernel norms the sum it writes: the sandwich's norm of a sum fits, a plain add does not. */
    const char *sandwich = "tensor x f32 1x64 input\ntensor h f32 1x64 input\ntensor w1 f32 1x64 constant\n"
                           "tensor w2 f32 1x64 constant\ntensor m f32 1x64 activation\n"
                           "tensor y f32 1x64 activation observed\n"
                           "fused norm_then_add y = (x, h, w1%s) {\n"
                           "    op m = rms_norm(h, w1) rows=1 cols=64 eps=1e-06 weight offset=1\n"
                           "    op y = %s\n}\n";
    fits("norm of the sum", "cuda-lane:h200:int8",
         fmt(sandwich, ", w2", "rms_norm(x, w2, m) rows=1 cols=64 eps=1e-06 weight offset=0 residual"), 0);
    refused("add only", "cuda-lane:h200:int8", fmt(sandwich, "", "elementwise(x, m) op=add n=64"), 0,
            "the lane's norm-then-add kernel norms the sum it writes");
}

/* ── activation and numerics ─────────────────────────────────────────────────────────────────────────────── */

static void test_activation(void)
{
    struct shim *i8 = lane("cuda-lane:h200:int8"), *x2 = lane("cuda-lane:h200:int8x2");
    struct shim *dq = lane("cuda-lane:h200:dequant");
    struct ir_graph *g = parse("tensor x f32 1x32 input\ntensor xs f32 1x48 input\ntensor res f32 1x64 input\n"
                               "tensor w f32 32x64 constant q8_0 transposed\ntensor v f32 32x64 constant\n"
                               "tensor w48 f32 48x64 constant f16 transposed\ntensor nw f32 1x64 constant\n"
                               "tensor p f32 1x64 activation\ntensor pv f32 1x64 activation observed\n"
                               "tensor p48 f32 1x64 activation observed\ntensor s f32 1x64 activation observed\n"
                               "tensor y f32 1x64 activation observed\n"
                               "fused gemv_norm_epilogue y = (x, w, res, nw) keep s {\n"
                               "    op p = matmul(x, w) m=1 k=32 n=64\n"
                               "    fused add_norm y = (res, p, nw) keep s {\n"
                               "        op s = elementwise(res, p) op=add n=64\n"
                               "        op y = rms_norm(s, nw) rows=1 cols=64 eps=1e-06 weight offset=0\n"
                               "    }\n"
                               "}\n"
                               "op pv = matmul(x, v) m=1 k=32 n=64\n"
                               "op p48 = matmul(xs, w48) m=1 k=48 n=64\n",
                               "activation");
    if (i8 && x2 && dq && g) {
        const struct ir_op *epi = &g->ops[0], *prod = &g->ops[0].parts[0];
        CHECK(i8->activation(i8, prod, 0, g) == 1);
        CHECK(x2->activation(x2, prod, 0, g) == 2);
        CHECK(dq->activation(dq, prod, 0, g) == 0);
        CHECK(i8->activation(i8, prod, 1, g) == 0);
        /* A projection with its epilogue folded in reads its first operands as the projection does. */
        CHECK(i8->activation(i8, epi, 0, g) == 1);
        CHECK(i8->activation(i8, epi, 2, g) == 0);
        /* Plain values and rows that are not whole 32-value blocks are read as they are. */
        CHECK(i8->activation(i8, &g->ops[1], 0, g) == 0);
        CHECK(i8->activation(i8, &g->ops[2], 0, g) == 0);
        struct shim_contract c;
        CHECK(i8->numerics(i8, &c) == 1);
        CHECK(c.activation_words == 1 && c.cache == SHIM_KEEP_F16 && c.state == SHIM_KEEP_F32);
        CHECK(c.fused_bound == 0.0 && c.accumulator_bits == 32);
        CHECK(strstr(c.point, "cuda-lane:h200:int8") == c.point && strstr(c.attention, "f16 tensor cores") != NULL);
        CHECK(x2->numerics(x2, &c) == 1 && c.activation_words == 2 && strstr(c.attention, "int8 tensor cores"));
        CHECK(dq->numerics(dq, &c) == 1 && c.activation_words == 0 && strcmp(c.attention, "f32 queries, keys, "
                                                                                         "values and weights") == 0);
    }
    struct shim *k = lane("cuda-lane:a100:int8x2:cache=f32:state=bf16");
    struct shim_contract c;
    if (k) {
        CHECK(k->numerics(k, &c) == 1 && c.cache == SHIM_KEEP_F32 && c.state == SHIM_KEEP_BF16);
        CHECK(strstr(c.point, "f32 cache, bf16 state") != NULL);
    }
    shim_free(k);
    ir_graph_free(g);
    shim_free(i8);
    shim_free(x2);
    shim_free(dq);
}

/* ── The lane's rules ────────────────────────────────────────────────────────────────────────────────────── */

/* One step of a tiny zoo model in mode `mode`, `layers` layers (0: every one). */
static struct ir_graph *zoo_layers(const char *model, const char *mode, int32_t layers)
{
    char err[IR_ERR_LEN];
    struct models_options o = models_default_options();
    o.layers = layers;
    if (models_parse_mode(mode, &o.mode, err)) {
        CHECKF(0, "%s: %s", mode, err);
        return NULL;
    }
    struct ir_graph *g = models_lift(models_find(model), &o, err);
    CHECKF(g != NULL, "%s %s: %s", model, mode, err);
    return g;
}

/* One step of a tiny zoo model in mode `mode`, every layer. */
static struct ir_graph *zoo(const char *model, const char *mode) { return zoo_layers(model, mode, 0); }

static void test_gemv_parts(void)
{
    struct ir_graph *g = zoo("tiny-qwen3", "decode");
    if (!g)
        return;
    const char *fired = "gemv_parts merged_qkv [2, 3, 4, 5, 6, 7, 8, 9, 10] fired";
    char *rep = report_of(g, "cuda-lane:h200:int8", NULL, 0, NULL);
    CHECKF(has_line(rep, fired), "%s", rep);
    CHECK(has_line(rep, "gemv_parts merged_qkv [21, 22, 23, 24, 25, 26, 27, 28, 29] fired"));
    free(rep);
    /* Under the dequantized numerics the products read the normed rows as they are, and still merge. */
    rep = report_of(g, "cuda-lane:rtx4090:dequant", NULL, 0, NULL);
    CHECKF(has_line(rep, fired), "%s", rep);
    free(rep);
    /* Held as a step: a dry run reports where it would fire, and the shared late rule merges the group instead. */
    const char *held[] = {"gemv_parts"};
    rep = report_of(g, "cuda-lane:h200:int8", held, 1, NULL);
    CHECKF(has_line(rep, "gemv_parts merged_qkv [2, 3, 4, 5, 6, 7, 8, 9, 10] held"), "%s", rep);
    CHECKF(has_line(rep, "merged_projections merged_qkv [2, 3, 4, 5, 6, 7, 8, 9, 10] fired"), "%s", rep);
    free(rep);
    /* The guard atom as data: a product that would move up past a reader of the table it writes stays; it joins with
     * the atom dropped, or with the reader after it. */
    const char *crossing = "tensor x f32 1x32 input\ntensor w1 f32 32x64 constant q8_0 transposed\n"
                           "tensor w2 f32 32x64 constant q8_0 transposed\ntensor tab f32 2x64 state carried\n"
                           "tensor y1 f32 1x64 activation observed\ntensor y2 f32 1x64 activation\n"
                           "tensor t f32 2x64 activation observed\n"
                           "op y1 = matmul(x, w1) m=1 k=32 n=64\n%s"
                           "op y2 = matmul(x, w2) m=1 k=32 n=64 -> tab row(1, 64)\n%s";
    const char *reader = "op t = scale(tab) n=128 factor=2\n";
    for (int k = 0; k < 3; k++) {
        char *text = fmt(crossing, k == 2 ? "" : reader, k == 2 ? reader : "");
        struct ir_graph *c = parse(text, "crossing");
        free(text);
        if (!c)
            continue;
        if (k == 1)
            rules_drop_atom("gemv_parts:no_cross");
        rep = report_of(c, "cuda-lane:h200:int8", NULL, 0, NULL);
        rules_drop_atom(NULL);
        const char *line = k == 2 ? "gemv_parts merged_qkv [0, 1] fired" : "gemv_parts merged_qkv [0, 2] fired";
        CHECKF(has_line(rep, line) == (k > 0), "case %d: %s", k, rep);
        free(rep);
        ir_graph_free(c);
    }
    /* The merged op's operands as the seed lists them: the activation, then every member's weights whole, a weight
     * two products share named twice; the rewritten graph stays valid (report_of validates it). */
    struct ir_graph *shared = parse("tensor x f32 1x32 input\ntensor w f32 32x64 constant q8_0 transposed\n"
                                    "tensor y1 f32 1x64 activation observed\ntensor y2 f32 1x64 activation observed\n"
                                    "op y1 = matmul(x, w) m=1 k=32 n=64\nop y2 = matmul(x, w) m=1 k=32 n=64\n",
                                    "shared weight");
    if (shared) {
        struct ir_graph *out = NULL;
        rep = report_of(shared, "cuda-lane:h200:int8", NULL, 0, &out);
        CHECKF(has_line(rep, "gemv_parts merged_qkv [0, 1] fired"), "%s", rep);
        const struct ir_op *m = NULL;
        for (int32_t i = 0; out && i < out->nops && !m; i++)
            if (out->ops[i].sym == IR_SYM_FUSED && out->ops[i].cls == IR_CLASS_MERGED_QKV)
                m = &out->ops[i];
        CHECKF(m && m->nins == 3 && m->ins[1] == m->ins[2] && m->ins[1] == ir_tensor_find(out, "w", 1),
               "merged operands: %d", m ? (int)m->nins : -1);
        free(rep);
        ir_graph_free(out);
        ir_graph_free(shared);
    }
    /* Held as a knob: the step runs dry, reported and merging nothing, as `--hold gemv_parts` holds it; and the lane
     * counts on no GEMV in parts, so neither rule merges the group. */
    rep = report_of(g, "cuda-lane:h200:int8:hold=gemv_parts", NULL, 0, NULL);
    CHECKF(strstr(rep, "gemv_parts merged_qkv") != NULL && !strstr(rep, "gemv_parts merged_qkv [2, 3, 4, 5, 6, 7, 8, 9, 10] fired") &&
               strstr(rep, "merged_qkv [2, 3, 4, 5, 6, 7, 8, 9, 10] fired") == NULL,
           "%s", rep);
    free(rep);
    ir_graph_free(g);
}

/* A wide chunk's absorbed latent attention: `heads` heads, a latent `lora` wide with a rotated key `rope` wide, each
 * head's query `nope` + rope wide and its values expanded to vd; `rows` query rows over `len` cached rows. With
 * `write`, the cache takes a row between the values' slice and the attention; with `seen`, the absorbed query is
 * observed. */
struct mla {
    int heads, lora, rope, nope, vd, rows, len;
    bool write, seen;
};

static char *mla_text(struct mla m)
{
    int qk = m.nope + m.rope, kw = m.lora + m.rope, h = m.heads;
    char *write = m.write ? fmt("op kc = set_row(kc, kn, pos) rows=%d cols=%d count=1 index=named\n", m.len, kw)
                          : fmt("%s", "");
    char *text = fmt(
        "tensor qr f32 %dx%d input\ntensor kc f32 %dx%d state carried\ntensor kn f32 1x%d input\n"
        "tensor pos i32 1x1 param\ntensor cos f32 %dx%d constant\ntensor sin f32 %dx%d constant\n"
        "tensor wkb f32 %dx%d constant q8_0\ntensor wvb f32 %dx%d constant q8_0 transposed\n"
        "tensor qn f32 %dx%d activation\ntensor qpe f32 %dx%d activation\ntensor qpp f32 %dx%d activation\n"
        "tensor ql f32 %dx%d activation%s\ntensor q f32 %dx%d activation\ntensor vc f32 %dx%d activation\n"
        "tensor ol f32 %dx%d activation\ntensor ct f32 %dx%d activation observed\n"
        "op qn = head_slice(qr) n=%d every=%d from=0 width=%d\n"
        "op qpe = head_slice(qr) n=%d every=%d from=%d width=%d\n"
        "op qpp = rope(qpe, cos, sin, pos) h=%d hd=%d half=%d rows=%d pos=named\n"
        "op ql = head_matmul(qn, wkb) m=%d heads=%d a=%d b=%d\n"
        "op q = join(ql, qpp) rows=%d heads=%d wa=%d wb=%d\n"
        "op vc = head_slice(kc) n=%d every=%d from=0 width=%d\n"
        "%s"
        "op ol = attention(q, kc, vc, pos) h=%d kv=1 hd=%d vd=%d l=%d rows=%d pos=named\n"
        "op ct = head_matmul(ol, wvb) m=%d heads=%d a=%d b=%d\n",
        m.rows, h * qk, m.len, kw, kw, m.len, m.rope / 2, m.len, m.rope / 2, h * m.nope, m.lora, h * m.lora, m.vd,
        m.rows, h * m.nope, m.rows, h * m.rope, m.rows, h * m.rope, m.rows, h * m.lora, m.seen ? " observed" : "",
        m.rows, h * kw, m.len, m.lora, m.rows, h * m.lora, m.rows, h * m.vd, m.rows * h * qk, qk, m.nope,
        m.rows * h * qk, qk, m.nope, m.rope, m.rows * h, m.rope, m.rope / 2, m.rows, m.rows, h, m.nope, m.lora, m.rows,
        h, h * m.lora, h * m.rope, m.len * kw, kw, m.lora, write, h, kw, m.lora, m.len, m.rows, m.rows, h, m.lora,
        m.vd);
    free(write);
    return text;
}

/* The report of the latent attention m optimized under shim `name` (and the rewritten graph when asked). */
static char *mla_report(struct mla m, const char *name, const char *const *held, int nheld, struct ir_graph **out)
{
    char *text = mla_text(m);
    struct ir_graph *g = parse(text, "mla");
    free(text);
    char *rep = g ? report_of(g, name, held, nheld, out) : calloc(1, 1);
    ir_graph_free(g);
    return rep;
}

static void test_latent_expanded(void)
{
    const struct mla small = {2, 32, 16, 32, 32, 16, 64, false, false};
    const char *fired = "latent_expanded mla [0, 3, 4, 5, 6, 7] fired";
    char *rep = mla_report(small, "cuda-lane:h200:int8", NULL, 0, NULL);
    CHECKF(has_line(rep, fired), "%s", rep);
    free(rep);
    /* The rewritten graph means what the lifted one does (with the lane's quantize ops on both sides). */
    char *text = mla_text(small);
    struct ir_graph *g = parse(text, "mla");
    free(text);
    if (g) {
        diff_identical(g, "cuda-lane:h200:int8", "mla");
        diff_identical(g, "cuda-lane:h100:int8x2:fuse_quant=off", "mla");
        ir_graph_free(g);
    }
    /* Not under the dequantized numerics, not for a batch, not for a chunk the GEMV takes. */
    rep = mla_report(small, "cuda-lane:h200:dequant", NULL, 0, NULL);
    CHECKF(strstr(rep, "latent_expanded") == NULL, "%s", rep);
    free(rep);
    rep = mla_report(small, "cuda-lane:h200:int8:batch", NULL, 0, NULL);
    CHECKF(strstr(rep, "latent_expanded") == NULL, "%s", rep);
    free(rep);
    struct mla short_chunk = small;
    short_chunk.rows = 8;
    rep = mla_report(short_chunk, "cuda-lane:h200:int8", NULL, 0, NULL);
    CHECKF(strstr(rep, "latent_expanded") == NULL, "%s", rep);
    free(rep);
    /* Held as a step, and held as a knob: the same report. */
    const char *held[] = {"latent_expanded"};
    rep = mla_report(small, "cuda-lane:h200:int8", held, 1, NULL);
    CHECKF(has_line(rep, "latent_expanded mla [0, 3, 4, 5, 6, 7] held"), "%s", rep);
    char *knob = mla_report(small, "cuda-lane:h200:int8:hold=latent_expanded", NULL, 0, NULL);
    CHECKF(strcmp(rep, knob) == 0, "step hold:\n%s\nknob hold:\n%s", rep, knob);
    free(knob);
    free(rep);
    /* The chip decides: heads this wide (576 keys and 512 values a head) fit one block's shared memory on Hopper and
     * the A100, not on the Ada parts. */
    const struct mla wide = {1, 64, 64, 512, 512, 16, 64, false, false};
    static const struct {
        const char *shim;
        bool fires;
    } chips[] = {{"cuda-lane:h100:int8", true},
                 {"cuda-lane:h200:int8x2", true},
                 {"cuda-lane:a100:int8", true},
                 {"cuda-lane:l40s:int8", false},
                 {"cuda-lane:rtx4090:int8x2", false}};
    for (size_t i = 0; i < sizeof chips / sizeof chips[0]; i++) {
        rep = mla_report(wide, chips[i].shim, NULL, 0, NULL);
        CHECKF(has_line(rep, fired) == chips[i].fires, "%s: %s", chips[i].shim, rep);
        free(rep);
    }
    /* Guard atoms as data: a cache write between the values' slice and the attention stops the slice sinking; an
     * observed absorbed query is not made only for the attention. Each fires with only its atom dropped. */
    struct mla written = small, seen = small;
    written.write = true;
    seen.seen = true;
    const struct {
        const char *atom;
        const char *line;
    } near[] = {{"latent_expanded:no_sink_past", "latent_expanded mla [0, 3, 4, 5, 7, 8] fired"},
                {"latent_expanded:made_for", fired}};
    for (int k = 0; k < 2; k++) {
        struct mla m = k == 0 ? written : seen;
        rep = mla_report(m, "cuda-lane:h200:int8", NULL, 0, NULL);
        CHECKF(strstr(rep, "latent_expanded") == NULL, "%s: %s", near[k].atom, rep);
        free(rep);
        rules_drop_atom(near[k].atom);
        rep = mla_report(m, "cuda-lane:h200:int8", NULL, 0, NULL);
        rules_drop_atom(NULL);
        CHECKF(has_line(rep, near[k].line), "%s dropped: %s", near[k].atom, rep);
        free(rep);
    }
}

/* ── Holds and reason codes (issue 33) ───────────────────────────────────────────────────────────────────── */

/* How many decisions of `rule` a compile of g under the lane named `name` made with `outcome`: gemv_parts held by
 * the optimizer's list, and by the lane's own too when `lane_too` (what `--hold` does: cli_holds_apply). */
static int hold_outcomes(const struct ir_graph *g, const char *name, bool lane_too, const char *rule,
                         enum rules_outcome outcome)
{
    char err[IR_ERR_LEN];
    static const char *const held[] = {"gemv_parts"};
    struct shim *s = lane(name);
    struct rules_optimized o;
    if (!s)
        return -1;
    if (lane_too)
        CHECK(s->hold(s, "gemv_parts"));
    int n = -1;
    if (rules_optimize(g, s, held, 1, &o, err) == 0) {
        n = rules_report_count(&o.report, outcome, rule);
        rules_optimized_free(&o);
    }
    CHECKF(n >= 0, "optimize under %s: %s", name, err);
    shim_free(s);
    return n;
}

/* Issue 33, item 7: one list of holds. The seed's optimizer holds the steps of its own list, and its lane reads its
 * own list only for rows_a_warp and gemv_parts; fusecheck's `--hold gemv_parts` holds the lane's too, as `hold=`
 * does (docs/findings.md, *What fusecheck does not follow*). On tiny-llama's decode step, gemv_parts held by the
 * optimizer alone (the seed's compile, the lane's list empty) leaves merged_projections the products the GEMV takes
 * in parts; held by the lane too (fusecheck's) refuses them, under either rule set. */
static void test_hold_lists(void)
{
    struct ir_graph *g = zoo("tiny-llama", "decode");
    if (!g)
        return;
    const char *name = "cuda-lane:h200:int8";
    for (int seed = 0; seed < 2; seed++) {
        rules_seed_mode(seed);
        int seed_fired = hold_outcomes(g, name, false, "merged_projections", RULES_FIRED);
        int seed_refused = hold_outcomes(g, name, false, "merged_projections", RULES_REFUSED);
        int ours_fired = hold_outcomes(g, name, true, "merged_projections", RULES_FIRED);
        int ours_refused = hold_outcomes(g, name, true, "merged_projections", RULES_REFUSED);
        /* The seed's: each layer's query, key and value products merged (two firings); the six other candidates
         * it refuses, fusecheck's refuses too, with seven more (the products the two firings took, and the head). */
        CHECKF(seed_fired == 2 && seed_refused == 6, "the seed's holds (seed rules %d): %d fired, %d refused", seed,
               seed_fired, seed_refused);
        CHECKF(ours_fired == 0 && ours_refused == 13, "fusecheck's holds (seed rules %d): %d fired, %d refused", seed,
               ours_fired, ours_refused);
        CHECKF(hold_outcomes(g, name, false, "gemv_parts", RULES_HELD) == 2 &&
                   hold_outcomes(g, name, true, "gemv_parts", RULES_HELD) == 2,
               "gemv_parts is held either way (seed rules %d)", seed);
    }
    rules_seed_mode(false);
    ir_graph_free(g);
}

/* Each lane reason's code and the seed's condition it names (lane_shim.rs: `supports` or `fits`, the arm and the
 * test that fails), as the audit of issue 33 found them. The lane's own table (shim_lane_reasons) must list exactly
 * these codes. */
static const struct {
    const char *code, *seed;
} reason_seeds[] = {
    {"lane.supports.allreduce_norm", "supports: AllreduceNorm refused"},
    {"lane.supports.attn_gqa_row_packing", "supports: AttnGqaRowPacking refused"},
    {"lane.supports.compensated_residual", "supports: CompensatedResidual refused"},
    {"lane.supports.grouped_topk", "supports: GroupedTopk refused"},
    {"lane.supports.hadamard_rotation", "supports: HadamardRotation refused"},
    {"lane.supports.host_resident_kv", "supports: HostResidentKv refused"},
    {"lane.supports.kv_cache_quant", "supports: KvCacheQuant refused"},
    {"lane.supports.mixed_batch_attention", "supports: MixedBatchAttention refused"},
    {"lane.supports.moe_direct_pairs", "supports: MoeDirectPairs refused"},
    {"lane.supports.persistent_layer_megakernel", "supports: PersistentLayerMegakernel refused"},
    {"lane.supports.relu_sqr", "supports: ReluSqr refused"},
    {"lane.supports.sampling", "supports: Sampling refused"},
    {"lane.supports.softcap", "supports: Softcap refused"},
    {"lane.supports.sparse_attention", "supports: SparseAttention refused"},
    {"lane.supports.unknown_class", "none: the seed's supports matches every ClassId (fusecheck's out-of-range class)"},
    {"lane.supports.unlisted", "none: the seed's supports matches every ClassId (fusecheck's table gap)"},
    {"lane.fits.accumulator", "fits, first: numerics::holds_accumulator(op, g, 32) fails"},
    {"lane.fits.attention_softcap", "fits, a leaf: an Attention whose softcap is set"},
    {"lane.fits.attention_part_pairs", "fits, a leaf's strided access: an Attention's pitch or offset odd"},
    {"lane.fits.delta_sigmoid", "fits, a leaf: a GatedDelta whose gate is Sigmoid"},
    {"lane.fits.head_part_blocks", "fits, a leaf's strided access: a HeadMatmul's pitch or offset off QBLOCK"},
    {"lane.fits.mixture_row_param", "fits: moe(op) whose destination row is a Param"},
    {"lane.fits.softcap", "fits, a leaf: a Softcap"},
    {"lane.fits.unit_output", "fits, a leaf: a unit destination unit_output does not give at its width"},
    {"lane.attn_output_gate.kernels", "fits AttnOutputGate: no attention part, or one past GEMV_ROWS or of odd vd"},
    {"lane.attn_output_quant.kernels", "fits AttnOutputQuant: parts[0] no attention within GEMV_ROWS, vd whole groups"},
    {"lane.conv_parts.convolutions", "fits ConvParts: a part conv() does not read"},
    {"lane.conv_parts.one_launch", "fits ConvParts: `one` fails (parts, rows, SiLU, taps, one norm width)"},
    {"lane.conv_silu_l2norm.heads", "fits ConvSiluL2norm: chan or cols missing, cols past 1024 or off 32, chan % cols"},
    {"lane.embed_norm.gathered", "fits EmbedNorm: parts[0] no gather, or embedded_norm none or not own"},
    {"lane.gdn_gate_projections.values", "fits GdnGateProjections: a product's weights not Values"},
    {"lane.gemv_gate_up_glu.pair_tiles", "fits GemvGateUpGlu: neither gemv_rows nor paired"},
    {"lane.gemv_gate_up_glu.rows", "fits GemvGateUpGlu: the gate's or the up's weights not Rows"},
    {"lane.gemv_gate_up_glu.two_products", "fits GemvGateUpGlu: fewer than two gemv parts"},
    {"lane.gemv_norm_epilogue.block_holds_norm", "fits GemvNormEpilogue: block_holds_its_norm fails"},
    {"lane.gemv_norm_epilogue.forms", "fits GemvNormEpilogue: parts[0] no gemv or parts[1] no norm"},
    {"lane.gemv_norm_epilogue.one_row", "fits GemvNormEpilogue: not one_gemv and whole_row"},
    {"lane.gemv_quant.four_rows", "fits GemvQuant: parts[0] not four rows a warp, whole blocks, its own buffer"},
    {"lane.glu_act_mul_quant.attention_groups", "fits GluActMulQuant over AttnOutputGate: `whole` fails"},
    {"lane.glu_act_mul_quant.hidden_blocks", "fits GluActMulQuant over GemvGateUpGlu: hidden none or off QBLOCK"},
    {"lane.merged_qkv.in_parts", "fits MergedQkv: neither gemm_parts nor gemv_in_parts (gemv_parts unheld)"},
    {"lane.moe_deferred_finalize.block_holds_norm", "fits MoeDeferredFinalize, decode: block_holds_its_norm fails"},
    {"lane.moe_deferred_finalize.down_widths", "fits MoeDeferredFinalize, decode: moe_down_launch none"},
    {"lane.moe_deferred_finalize.forms", "fits MoeDeferredFinalize: parts[0] no moe or the last part no norm"},
    {"lane.moe_deferred_finalize.whole_rows", "fits MoeDeferredFinalize: not summed and whole_rows"},
    {"lane.norm_quant.rms_norm", "fits NormQuant: parts[0] neither norm nor embedded_norm"},
    {"lane.norm_then_add.norm", "fits NormThenAdd: norm(op) none"},
    {"lane.qkv_head_epilogue.forms", "fits QkvHeadEpilogue: parts[0] no rows product or parts[1] no rope"},
    {"lane.qkv_head_epilogue.one_row", "fits QkvHeadEpilogue: not one_row and its_heads"},
    {"lane.rope_qk_one_launch.one_launch", "fits RopeQkOneLaunch: `one` fails (two sides, heads a row, norm alike)"},
    {"lane.rope_qk_one_launch.rotations", "fits RopeQkOneLaunch: a part rope() does not read"},
    {"lane.row_write_quant.blocks", "fits RowWriteQuant: parts[0] no SetRow of whole blocks"},
    {"lane.shared_expert_fusion.fold", "fits SharedExpertFusion: the moe arm's guard fails"},
};

/* The index of code in reason_seeds, or -1. */
static int seed_of(const char *code)
{
    for (size_t i = 0; i < sizeof reason_seeds / sizeof reason_seeds[0]; i++)
        if (strcmp(reason_seeds[i].code, code) == 0)
            return (int)i;
    return -1;
}

/* Whether code reads lane.<where>.<condition>, each part lower-case letters, digits and underscores. */
static bool code_shaped(const char *code)
{
    static const char allowed[] = "abcdefghijklmnopqrstuvwxyz0123456789_.";
    const char *where = code + 5, *dot = strncmp(code, "lane.", 5) == 0 ? strchr(where, '.') : NULL;
    return dot && dot > where && dot[1] && !strchr(dot + 1, '.') && strspn(where, allowed) == strlen(where);
}

/* The C string literals that follow `at` (adjacent ones joined) into out; false when none does. */
static bool literals_at(const char *at, char *out, size_t cap)
{
    size_t n = 0;
    bool any = false;
    for (;;) {
        while (*at == ' ' || *at == '\n')
            at++;
        if (*at != '"')
            break;
        any = true;
        for (at++; *at && *at != '"'; at++) {
            if (*at == '\\' && at[1])
                at++;
            if (n + 1 < cap)
                out[n++] = *at;
        }
        if (*at)
            at++;
    }
    out[n] = '\0';
    return any;
}

/* The index of the lane's reason whose text is `text` (a `supports` one or not), or -1. */
static int listed(const struct shim_reason *r, int n, const char *text, bool supports)
{
    for (int i = 0; i < n; i++)
        if (r[i].supports == supports && (r[i].prefix ? strncmp(text, r[i].text, strlen(r[i].text)) == 0
                                                       : strcmp(text, r[i].text) == 0))
            return i;
    return -1;
}

/* Every reason literal shim/lane.c writes — passed to refuse, a REFUSED row, a leaf misfit's, a SHIM_REFUSE's, the
 * shared text of conv_parts — is in the lane's reason table (so none refuses without a code), and every row of the
 * table is written there. */
static void reasons_in_source(const struct shim_reason *r, int n)
{
    static const struct {
        const char *marker;
        bool supports;
    } markers[] = {{"refuse(why, ", false}, {"REFUSED(", true}, {"SHIM_REFUSE, ", true},
                   {"*const text = ", false},  {"{capped_", false}, {"{sigmoid_", false},
                   {"{foreign_", false},        {"{head_part_", false}, {"{attention_part_", false}};
    char *src = ir_read_file("shim/lane.c", &(size_t){0});
    CHECKF(src != NULL, "shim/lane.c: unreadable");
    bool *seen = calloc((size_t)n, sizeof *seen);
    for (size_t m = 0; src && m < sizeof markers / sizeof markers[0]; m++)
        for (const char *at = src; (at = strstr(at, markers[m].marker)) != NULL; at++) {
            const char *lit = at + strlen(markers[m].marker);
            if (markers[m].marker[0] == '{')
                lit = strchr(lit, ',') ? strchr(lit, ',') + 1 : lit;
            char text[IR_ERR_LEN];
            if (!literals_at(lit, text, sizeof text))
                continue;
            int i = listed(r, n, text, markers[m].supports);
            CHECKF(i >= 0, "shim/lane.c writes a reason with no code: \"%s\"", text);
            if (i >= 0)
                seen[i] = true;
        }
    /* And every reason the table lists is one the source writes (the accumulator's through its format). */
    for (int i = 0; src && i < n; i++)
        CHECKF(seen[i] || (r[i].prefix && strstr(src, r[i].text)), "%s: shim/lane.c writes no such reason", r[i].code);
    free(seen);
    free(src);
}

/* Issue 33, item 10: every reason the lane can give has one stable code, unique, shaped lane.<where>.<condition>,
 * that its text maps back to, and that names a condition of the seed's (the list above, the lane's table exactly);
 * every reason the lane's source writes is in the table. The codes ride the report's lines, never its digest. */
static void test_reason_codes(void)
{
    int n;
    const struct shim_reason *r = shim_lane_reasons(&n);
    struct shim *s = lane("cuda-lane:h200:int8");
    if (!s)
        return;
    CHECKF(n == (int)(sizeof reason_seeds / sizeof reason_seeds[0]), "the lane gives %d reasons, the list maps %d",
           n, (int)(sizeof reason_seeds / sizeof reason_seeds[0]));
    for (int i = 0; i < n; i++) {
        CHECKF(code_shaped(r[i].code), "%s: not lane.<where>.<condition>", r[i].code);
        CHECKF(seed_of(r[i].code) >= 0, "%s: no seed condition mapped", r[i].code);
        for (int k = 0; k < i; k++) {
            CHECKF(strcmp(r[i].code, r[k].code) != 0, "%s: two reasons share the code", r[i].code);
            CHECKF(r[i].supports != r[k].supports || strcmp(r[i].text, r[k].text) != 0, "%s and %s: one text",
                   r[i].code, r[k].code);
        }
        char text[IR_ERR_LEN];
        snprintf(text, sizeof text, "%s%s", r[i].text, r[i].prefix ? "4096 terms in its 32-bit accumulator" : "");
        const char *back = s->reason_code(s, text, r[i].supports);
        CHECKF(back && strcmp(back, r[i].code) == 0, "%s: its text maps to %s", r[i].code, back ? back : "none");
    }
    reasons_in_source(r, n);
    CHECK(s->reason_code(s, "no reason of the lane's", false) == NULL);
    CHECK(strcmp(rules_reason_code(s, "the chip runs `norm_scale` as its parts", true), "supports.parts") == 0);
    /* A refusal's code is on its line, not in the digest: the digest of a report is its lines' without codes. */
    struct ir_graph *g = zoo("tiny-llama", "decode");
    struct rules_optimized o;
    char err[IR_ERR_LEN];
    static const char *const held[] = {"gemv_parts"};
    CHECK(s->hold(s, "gemv_parts"));
    if (g && rules_optimize(g, s, held, 1, &o, err) == 0) {
        char before[65], after[65];
        rules_report_digest(&o.report, before);
        int coded = 0;
        for (int32_t i = 0; i < o.report.n; i++) {
            struct rules_decision *d = &o.report.d[i];
            if (d->outcome != RULES_REFUSED)
                continue;
            char *line = rules_decision_line(d);
            CHECKF(d->code && strstr(line, d->code) != NULL, "a refusal with no code: %s", line);
            free(line);
            coded += d->code != NULL;
            d->code = NULL;
        }
        rules_report_digest(&o.report, after);
        CHECKF(coded == 13 && strcmp(before, after) == 0, "%d coded refusals; digest %s, without codes %s", coded,
               before, after);
        rules_optimized_free(&o);
    }
    ir_graph_free(g);
    shim_free(s);
}

/* ── The numerics fold ───────────────────────────────────────────────────────────────────────────────────── */

/* A producer's text (computing s) followed by a product of s by q8_0 rows, s `k` values wide. */
static char *fold_text(const char *tensors, const char *producer, int k)
{
    return fmt("%stensor wz f32 %dx32 constant q8_0 transposed\ntensor z f32 1x32 activation observed\n%s"
               "op z = matmul(s, wz) m=1 k=%d n=32\n",
               tensors, k, producer, k);
}

/* Expect the fold under `name` to report exactly `line` for the graph text (freed). */
static void folds(const char *name, char *text, const char *line)
{
    struct ir_graph *g = parse(text, line);
    free(text);
    if (!g)
        return;
    char *rep = report_of(g, name, NULL, 0, NULL);
    CHECKF(has_line(rep, line), "expected \"%s\" in:\n%s", line, rep);
    free(rep);
    diff_identical(g, name, line);
    ir_graph_free(g);
}

static void test_fold_classes(void)
{
    const char *i8 = "cuda-lane:h200:int8";
    folds(i8,
          fold_text("tensor a f32 1x32 input\ntensor b f32 1x32 input\ntensor s f32 1x32 activation\n",
                    "op s = elementwise(a, b) op=add n=32\n", 32),
          "fused_quant elementwise_quant [0] fired");
    folds(i8,
          fold_text("tensor x f32 1x32 input\ntensor w f32 1x32 constant\ntensor s f32 1x32 activation\n",
                    "op s = rms_norm(x, w) rows=1 cols=32 eps=1e-06 weight offset=0\n", 32),
          "fused_quant norm_quant [0] fired");
    folds(i8,
          fold_text("tensor x f32 1x32 input\ntensor w f32 1x32 constant\ntensor r f32 1x32 input\n"
                    "tensor s f32 1x32 activation\n",
                    "op s = rms_norm(x, w, r) rows=1 cols=32 eps=1e-06 weight offset=0 residual\n", 32),
          "fused_quant add_norm_quant [0] fired");
    folds(i8,
          fold_text("tensor g f32 1x32 input\ntensor u f32 1x32 input\ntensor s f32 1x32 activation\n",
                    "op s = swiglu(g, u) total=32\n", 32),
          "fused_quant glu_act_mul_quant [0] fired");
    folds(i8,
          fold_text("tensor q f32 1x8 input\ntensor k f32 1x8 input\ntensor v f32 1x32 input\n"
                    "tensor zg f32 1x32 input\ntensor b f32 1x2 input\ntensor a f32 1x2 input\n"
                    "tensor st f32 8x16 state carried\ntensor nw f32 1x16 constant\ntensor s f32 1x32 activation\n",
                    "op s = gated_delta(q, k, v, zg, b, a, st, nw) h=2 dk=4 dv=16 rows=1 gate=silu eps=1e-06\n", 32),
          "fused_quant gdn_output_quant [0] fired");
    folds(i8,
          fold_text("tensor q f32 1x8 input\ntensor kc f32 16x4 state carried\ntensor vc f32 16x16 state carried\n"
                    "tensor s f32 1x32 activation\n",
                    "op s = attention(q, kc, vc) h=2 kv=1 hd=4 vd=16 l=16 rows=1\n", 32),
          "fused_quant attn_output_quant [0] refused: an attention quantizes its output only in the decode step's and "
          "a short chunk's kernels, its value heads whole 32-value groups {lane.attn_output_quant.kernels}");
    folds(i8,
          fold_text("tensor x f32 1x32 input\ntensor w f32 32x4096 constant q8_0 transposed\n"
                    "tensor s f32 1x4096 activation\n",
                    "op s = matmul(x, w) m=1 k=32 n=4096\n", 4096),
          "fused_quant gemv_quant [0] fired");
    folds(i8,
          fold_text("tensor x f32 1x32 input\ntensor w f32 32x2048 constant q8_0 transposed\n"
                    "tensor s f32 1x2048 activation\n",
                    "op s = matmul(x, w) m=1 k=32 n=2048\n", 2048),
          "fused_quant gemv_quant [0] refused: a product quantizes its outputs only four rows a warp, in whole "
          "32-value blocks, into its own buffer {lane.gemv_quant.four_rows}");
    folds(i8,
          fmt("tensor tab f32 2x32 state\ntensor src f32 1x32 input\ntensor wz f32 32x32 constant q8_0 transposed\n"
              "tensor z f32 2x32 activation observed\n"
              "op tab = set_row(tab, src) rows=2 cols=32 count=1 index=2\nop z = matmul(tab, wz) m=2 k=32 n=32\n"),
          "fused_quant row_write_quant [0] fired");
    folds("cuda-lane:h200:int8x2:fuse_quant=off",
          fold_text("tensor g f32 1x32 input\ntensor u f32 1x32 input\ntensor s f32 1x32 activation\n",
                    "op s = swiglu(g, u) total=32\n", 32),
          "fused_quant glu_act_mul_quant [0] refused: the chip runs `glu_act_mul_quant` as its parts {supports.parts}");
}

/* The reference built from the chip's activation answers alone (shim_quantized_reference) agrees bit for bit with
 * the fold's own insertion on every tiny model and mode under both quantizing modes: two builders sharing no code.
 * It quantizes one read at a time (each product its own), and refuses a graph that is not lifted. */
static void test_quantized_reference(void)
{
    static const char *const models[] = {"tiny-llama", "tiny-qwen3", "tiny-qwen3-moe", "tiny-gemma2"};
    static const char *const modes[] = {"decode", "prefill:8", "batch:4"};
    static const char *const lanes[] = {"cuda-lane:h200:int8", "cuda-lane:a100:int8x2:cache=f32"};
    char err[IR_ERR_LEN];
    for (size_t m = 0; m < sizeof models / sizeof *models; m++)
        for (size_t d = 0; d < sizeof modes / sizeof *modes; d++) {
            struct ir_graph *g = zoo(models[m], modes[d]);
            for (size_t l = 0; g && l < sizeof lanes / sizeof *lanes; l++) {
                struct shim *s = lane(lanes[l]);
                struct ir_graph *fold = s ? rules_quantized_lifted(g, s) : NULL;
                struct ir_graph *ref = s ? shim_quantized_reference(g, s, err) : NULL;
                CHECKF(ref != NULL, "%s %s %s: %s", models[m], modes[d], lanes[l], ref ? "" : err);
                if (fold && ref) {
                    char label[160];
                    snprintf(label, sizeof label, "%s %s %s: fold vs reference", models[m], modes[d], lanes[l]);
                    CHECK(same_values(fold, ref, label, false) == 1);
                    CHECKF(ir_validate(ref, err) == 0, "%s: %s", label, err);
                    int with, all = quantizes_in(ref, l == 0 ? 1 : 2, &with); /* each in the mode's words */
                    CHECKF(all > 0 && with == all, "%s: %d of %d quantizes in the mode's words", label, with, all);
                }
                ir_graph_free(fold);
                ir_graph_free(ref);
                shim_free(s);
            }
            ir_graph_free(g);
        }
    /* the reference of a graph that is already rewritten is refused, not built from its fused ops */
    struct ir_graph *g = zoo("tiny-llama", "decode");
    struct shim *s = lane("cuda-lane:h200:int8");
    struct rules_optimized o;
    if (g && s && rules_optimize(g, s, NULL, 0, &o, err) == 0) {
        struct ir_graph *ref = shim_quantized_reference(o.graph, s, err);
        CHECKF(!ref && strstr(err, "is not lifted"), "%s", ref ? "built" : err);
        ir_graph_free(ref);
        rules_optimized_free(&o);
    }
    shim_free(s);
    ir_graph_free(g);
}

/* The fold on a tiny zoo model: where it inserts and what it folds, held, off and under the dequantized numerics. */
static void test_fold_zoo(void)
{
    struct ir_graph *g = zoo("tiny-llama", "decode");
    if (!g)
        return;
    /* Quantizing the activations changes the step's result: the quantized lifted graph means something else. */
    struct shim *s = lane("cuda-lane:h200:int8");
    struct ir_graph *q = s ? rules_quantized_lifted(g, s) : NULL;
    int words;
    if (q) {
        CHECK(same_values(g, q, "lifted vs quantized", true) == 0);
        /* Every product and the LM head read quantized rows: 7 a layer (q, k, v, o, gate, up, down) and the head —
         * one quantize for each activation read: attn_norm, attn, ffn_norm, ffn_act a layer, then output_norm. */
        CHECK(quantizes_in(q, 1, &words) == 2 * 4 + 1 && words == 9);
        CHECK(ir_tensor_find(q, "blk.0.attn_norm.q8", 18) != IR_NONE);
    }
    ir_graph_free(q);
    shim_free(s);
    struct ir_graph *out = NULL;
    char *rep = report_of(g, "cuda-lane:h200:int8", NULL, 0, &out);
    static const char *const lines[] = {
        "fused_quant norm_quant [0, 1] fired",
        "fused_quant attn_output_quant [9] fired",
        "fused_quant add_norm_quant [10, 11, 12] fired",
        "fused_quant glu_act_mul_quant [13, 14, 15] fired",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        CHECKF(has_line(rep, lines[i]), "%s in:\n%s", lines[i], rep);
    CHECK(out && quantizes_in(out, 1, &words) == 9 && words == 9);
    free(rep);
    ir_graph_free(out);
    /* Held: the same quantize ops, none folded; the dry run reports the folds held. */
    const char *held[] = {"fused_quant"};
    rep = report_of(g, "cuda-lane:h200:int8", held, 1, &out);
    CHECKF(has_line(rep, "fused_quant norm_quant [0, 1] held"), "%s", rep);
    CHECK(strstr(rep, "fused_quant norm_quant [0, 1] fired") == NULL);
    int top = 0;
    for (int32_t i = 0; out && i < out->nops; i++)
        top += out->ops[i].sym == IR_SYM_QUANT;
    CHECK(out && top == 9 && quantizes_in(out, 1, &words) == 9);
    free(rep);
    ir_graph_free(out);
    diff_identical(g, "cuda-lane:h200:int8", "tiny-llama decode");
    /* Two words a value. */
    rep = report_of(g, "cuda-lane:h100:int8x2", NULL, 0, &out);
    CHECK(out && quantizes_in(out, 2, &words) == 9 && words == 9 && ir_tensor_find(out, "output_norm.q8x2", 16) >= 0);
    free(rep);
    ir_graph_free(out);
    /* The dequantized numerics quantize nothing; the quantized lifted graph is the lifted one. */
    rep = report_of(g, "cuda-lane:h200:dequant", NULL, 0, &out);
    CHECK(strstr(rep, "fused_quant") == NULL && out && quantizes_in(out, 1, &words) == 0);
    free(rep);
    ir_graph_free(out);
    struct shim *d = lane("cuda-lane:h200:dequant");
    q = d ? rules_quantized_lifted(g, d) : NULL;
    size_t la, lb;
    char *ta = ir_print(g, &la), *tb = q ? ir_print(q, &lb) : NULL;
    CHECK(tb && la == lb && memcmp(ta, tb, la) == 0);
    free(ta);
    free(tb);
    ir_graph_free(q);
    shim_free(d);
    ir_graph_free(g);
}

/* A fused op whose product reads what an earlier part computes gets its quantize as a part of its own. */
static void test_fold_inside(void)
{
    char *text = shared_text(4, 2, "swiglu", false);
    struct ir_graph *g = parse(text, "inside");
    free(text);
    struct shim *s = lane("cuda-lane:h200:int8");
    if (g && s) {
        struct ir_graph *q = rules_quantized_lifted(g, s);
        int words;
        char err[IR_ERR_LEN];
        CHECKF(ir_validate(q, err) == 0, "%s", err);
        /* One before the op for x (the mixture and both shared products), one inside for the hidden row. */
        CHECK(q->nops == 2 && q->ops[0].sym == IR_SYM_QUANT && quantizes_in(q, 1, &words) == 2);
        const struct ir_op *f = &q->ops[1];
        CHECK(f->nparts == 8 && f->parts[5].sym == IR_SYM_QUANT && f->ins[0] == q->ops[0].out);
        CHECK(ir_tensor_find(q, "h.q8", 4) == f->parts[5].out && f->parts[6].ins[0] == f->parts[5].out);
        ir_graph_free(q);
        diff_identical(g, "cuda-lane:h200:int8", "inside");
    }
    shim_free(s);
    ir_graph_free(g);
}

/* ── diff over the tiny zoo ──────────────────────────────────────────────────────────────────────────────── */

/* One zoo graph's evaluations: its quantized lifted graph per activation mode (evaluated once each), and the texts
 * of the rewritten graphs already found identical to it (an identical text evaluates identically). */
struct zoo_refs {
    struct ir_graph *ref[KERNELS_ACTS_COUNT];
    struct ir_values *values[KERNELS_ACTS_COUNT];
    char *seen[64];
    int nseen;
};

/* Whether text is one of the rewritten texts already checked; remembers it when not. */
static bool seen_before(struct zoo_refs *z, char *text)
{
    for (int i = 0; i < z->nseen; i++)
        if (strcmp(z->seen[i], text) == 0) {
            free(text);
            return true;
        }
    if (z->nseen < 64)
        z->seen[z->nseen++] = text;
    else
        free(text);
    return false;
}

/* Check g rewritten under shim `name` against its quantized lifted graph (made and evaluated once per mode). */
static void zoo_diff_one(const struct ir_graph *g, struct zoo_refs *z, const char *name, const char *label)
{
    char err[IR_ERR_LEN];
    struct shim *s = lane(name);
    if (!s)
        return;
    struct shim_contract c;
    s->numerics(s, &c);
    int a = c.activation_words;
    if (!z->ref[a]) {
        z->ref[a] = rules_quantized_lifted(g, s);
        CHECKF(ir_validate(z->ref[a], err) == 0, "%s under %s: quantized lifted graph invalid: %s", label, name, err);
        z->values[a] = ir_values_new(z->ref[a], 7, err);
        CHECKF(z->values[a] && ir_eval(z->ref[a], z->values[a], err) == 0, "%s: %s", label, err);
    }
    struct rules_optimized o;
    if (rules_optimize(g, s, NULL, 0, &o, err) != 0) {
        CHECKF(0, "%s under %s: %s", label, name, err);
        shim_free(s);
        return;
    }
    CHECKF(ir_validate(o.graph, err) == 0, "%s under %s: rewritten invalid: %s", label, name, err);
    size_t len;
    if (!seen_before(z, ir_print(o.graph, &len))) {
        struct ir_values *v = ir_values_new_like(o.graph, 7, z->ref[a], err);
        bool ok = v && ir_eval(o.graph, v, err) == 0;
        CHECKF(ok, "%s under %s: %s", label, name, err);
        struct ir_compare cmp = ok ? ir_values_compare(z->ref[a], z->values[a], o.graph, v) : (struct ir_compare){0};
        CHECKF(ok && cmp.identical && cmp.compared > 0, "%s under %s differs at %s[%lld]", label, name,
               cmp.tensor >= 0 ? z->ref[a]->tensors[cmp.tensor].name : "?", (long long)cmp.index);
        ir_values_free(v);
    }
    rules_optimized_free(&o);
    shim_free(s);
}

/* Every tiny zoo model in every mode (a decode step with both its layers, a chunk of 16 rows — past the GEMV's, on the
 * tensor cores — and a batch of 3 with one), under the full activation x cache x fuse_quant cross product on h200 and
 * one operating point on each other chip (a batch's steps also with the batch knob): the rewritten graph matches the
 * quantized lifted graph bit for bit. */
static void test_zoo_diff(void)
{
    static const char *const modes[] = {"decode", "prefill:16", "batch:3"};
    static const char *const others[] = {"cuda-lane:h100:int8", "cuda-lane:a100:int8x2:state=bf16",
                                         "cuda-lane:l40s:dequant:cache=f32", "cuda-lane:rtx4090:int8:fuse_quant=off"};
    int graphs = 0, checked = 0;
    for (int m = 0; m < models_count(); m++) {
        const struct models_config *c = models_get(m);
        if (!c->tiny)
            continue;
        for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
            /* A decode step with both layers (what one layer quantizes for the next); a chunk and a batch with one. */
            struct ir_graph *g = zoo_layers(c->name, modes[k], k == 0 ? 0 : 1);
            if (!g)
                continue;
            struct zoo_refs z;
            memset(&z, 0, sizeof z);
            char label[96];
            snprintf(label, sizeof label, "%s %s", c->name, modes[k]);
            for (int a = 0; a < KERNELS_ACTS_COUNT; a++)
                for (int cache = 0; cache < 2; cache++)
                    for (int fq = 0; fq < 2; fq++, checked++) {
                        char name[128];
                        snprintf(name, sizeof name, "cuda-lane:h200:%s%s%s", kernels_acts_name((enum kernels_acts)a),
                                 cache ? ":cache=f32" : "", fq ? ":fuse_quant=off" : "");
                        zoo_diff_one(g, &z, name, label);
                    }
            for (size_t o = 0; o < sizeof others / sizeof others[0]; o++, checked++)
                zoo_diff_one(g, &z, others[o], label);
            if (strncmp(modes[k], "batch", 5) == 0) {
                zoo_diff_one(g, &z, "cuda-lane:h200:int8:batch", label);
                zoo_diff_one(g, &z, "cuda-lane:h100:int8x2:batch:fuse_quant=off", label);
                checked += 2;
            }
            for (int a = 0; a < KERNELS_ACTS_COUNT; a++) {
                ir_values_free(z.values[a]);
                ir_graph_free(z.ref[a]);
            }
            for (int i = 0; i < z.nseen; i++)
                free(z.seen[i]);
            graphs++;
            ir_graph_free(g);
        }
    }
    int tiny = 0;
    for (int m = 0; m < models_count(); m++)
        tiny += models_get(m)->tiny;
    CHECK(graphs == 3 * tiny && checked == 3 * tiny * 16 + tiny * 2);
}

int main(void)
{
    test_names();
    test_rules_linked();
    test_supports();
    test_refusals_reached();
    test_fits_common();
    test_fits_gemv_norm_epilogue();
    test_fits_moe_deferred_finalize();
    test_fits_epilogues();
    test_fits_pairs();
    test_fits_launches();
    test_fits_gates();
    test_fits_quant();
    test_fits_merged();
    test_activation();
    test_gemv_parts();
    test_hold_lists();
    test_reason_codes();
    test_latent_expanded();
    test_fold_classes();
    test_fold_zoo();
    test_quantized_reference();
    test_fold_inside();
    if (!getenv("FUSECHECK_LANE_QUICK"))
        test_zoo_diff();
    return check_done("test_lane");
}
