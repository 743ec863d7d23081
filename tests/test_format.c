/* tests/test_format.c — the text format: canonical printing, print∘parse round trips over graphs that use every
 * construct, exact error positions and messages for malformed inputs, and robustness against huge, deep and random
 * inputs. */
#include "check.h"
#include "ir/ir.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FUSECHECK_SOURCE_DIR
#define FUSECHECK_SOURCE_DIR "."
#endif

/* ── Helpers ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* Whether two optional strings are equal (NULL equals NULL). */
static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Whether two graphs are equal: header, then tensor for tensor and op for op (ir_graph_same_program). */
static bool graph_equal(const struct ir_graph *a, const struct ir_graph *b)
{
    return str_eq(a->name, b->name) && str_eq(a->family, b->family) && str_eq(a->mode, b->mode) &&
           ir_graph_same_program(a, b);
}

/* Print g, parse it back, print again: the texts are byte-identical and the graphs equal. Returns the text. */
static char *check_roundtrip(const struct ir_graph *g, const char *what)
{
    size_t n1 = 0, n2 = 0;
    char *t1 = ir_print(g, &n1);
    CHECKF(t1 != NULL, "%s: print", what);
    if (!t1)
        return NULL;
    CHECKF(strlen(t1) == n1 && n1 > 0 && t1[n1 - 1] == '\n', "%s: text ends in a newline", what);
    CHECKF(strstr(t1, "\n\n") == NULL && strstr(t1, "  =") == NULL, "%s: canonical spacing", what);
    char err[IR_ERR_LEN] = "";
    struct ir_graph *h = ir_parse_unchecked(t1, n1, "rt.fc", err);
    CHECKF(h != NULL, "%s: reparse: %s\n%s", what, err, t1);
    if (!h)
        return t1;
    CHECKF(graph_equal(g, h), "%s: parse(print(g)) == g", what);
    char *t2 = ir_print(h, &n2);
    CHECKF(t2 && n1 == n2 && memcmp(t1, t2, n1) == 0, "%s: print(parse(print(g))) == print(g)\n%s---\n%s", what, t1,
           t2 ? t2 : "");
    free(t2);
    ir_graph_free(h);
    return t1;
}

/* Add a tensor and return its id. */
static ir_tid T(struct ir_graph *g, const char *name, enum ir_elem e, int64_t r, int64_t c, enum ir_role role)
{
    ir_tid t = ir_tensor_add(g, name, e, r, c, role);
    CHECK(t != IR_NONE);
    return t;
}

/* Set every field of op's spec from its table: variant 0 leaves optional fields absent, flags false and row
 * indices literal; variant 1 sets them all; enum values cycle with `seed`. */
static void fill_fields(struct ir_op *op, int variant, int seed)
{
    static const double floats[] = {1e-05, 0.1, 1.0 / 3.0, -2.5e-300, 4.9406564584124654e-324, 1e300, -0.0, 0.125,
                                    123456789.125, 2.220446049250313e-16};
    int n;
    const struct ir_field *f = ir_spec_fields(op->spec.kind, &n);
    for (int i = 0; i < n; i++) {
        char *p = (char *)&op->spec + f[i].offset;
        int64_t iv = 3 + i + seed;
        double fv = floats[(i + seed) % 10];
        bool flag = variant == 1;
        int ev;
        struct ir_optf of = {variant == 1, fv};
        struct ir_rowidx ri = {variant == 1 ? IR_RIDX_NAMED : IR_RIDX_LITERAL, variant == 1 ? 0 : 1 + seed};
        struct ir_rowidx none = {IR_RIDX_NONE, 0};
        switch (f[i].type) {
        case IR_F_INT:
            memcpy(p, &iv, sizeof iv);
            break;
        case IR_F_INT_OPT:
            iv = variant == 1 ? iv : 0;
            memcpy(p, &iv, sizeof iv);
            break;
        case IR_F_FLOAT:
            memcpy(p, &fv, sizeof fv);
            break;
        case IR_F_FLOAT_OPT:
            memcpy(p, &of, sizeof of);
            break;
        case IR_F_FLAG:
            memcpy(p, &flag, sizeof flag);
            break;
        case IR_F_EWOP:
            ev = (seed + variant) % IR_EW_COUNT;
            memcpy(p, &ev, sizeof ev);
            break;
        case IR_F_MOEACT:
            ev = (seed + variant) % IR_MOE_COUNT;
            memcpy(p, &ev, sizeof ev);
            break;
        case IR_F_GATEACT:
            ev = (seed + variant) % IR_GATE_COUNT;
            memcpy(p, &ev, sizeof ev);
            break;
        case IR_F_NORMKIND:
            ev = (seed + variant) % IR_NORM_COUNT;
            memcpy(p, &ev, sizeof ev);
            break;
        case IR_F_ROPESCALE:
            ev = (seed + variant) % IR_ROPESCALE_COUNT;
            memcpy(p, &ev, sizeof ev);
            break;
        case IR_F_ROWIDX:
            memcpy(p, &ri, sizeof ri);
            break;
        case IR_F_ROWIDX_OPT:
            memcpy(p, variant == 1 ? &ri : &none, sizeof ri);
            break;
        }
    }
}

/* ── Graphs built through the API ────────────────────────────────────────────────────────────────────────── */

/* Every kind, in both variants and with every enum value, over every element type, role and storage. */
static struct ir_graph *graph_every_kind(void)
{
    struct ir_graph *g = ir_graph_new();
    ir_graph_set_meta(g, "every_kind", "llama", "prefill:8");
    ir_tid x = T(g, "x", IR_ELEM_F32, 4, 64, IR_ROLE_INPUT);
    ir_tid pos = T(g, "pos", IR_ELEM_I32, 1, 1, IR_ROLE_PARAM);
    T(g, "h16", IR_ELEM_F16, 2, 2, IR_ROLE_ACTIVATION);
    T(g, "hb16", IR_ELEM_BF16, 2, 2, IR_ROLE_STATE);
    for (int f = 0; f < IR_FMT_COUNT; f++) {
        char name[32];
        snprintf(name, sizeof name, "blk.%d.w_%s", f, ir_format_name((enum ir_format)f));
        ir_tid w = T(g, name, IR_ELEM_F32, 64, 256, IR_ROLE_CONSTANT);
        g->tensors[w].checkpoint = true;
        g->tensors[w].format = (enum ir_format)f;
        g->tensors[w].transposed = f % 2 == 1;
    }
    int seed = 0;
    for (int k = 0; k < IR_KIND_COUNT; k++) {
        for (int variant = 0; variant < 2; variant++) {
            for (int e = 0; e < 4; e++, seed++) {
                char name[64];
                snprintf(name, sizeof name, "y_%s_%d_%d", ir_kind_name((enum ir_kind)k), variant, e);
                ir_tid y = T(g, name, IR_ELEM_F32, 1, 64, IR_ROLE_ACTIVATION);
                g->tensors[y].observed = e == 1;
                g->tensors[y].carried = e == 2;
                g->tensors[y].next = e == 3;
                ir_tid ins[3] = {x, pos, 4};
                struct ir_op op = ir_op_prim((enum ir_kind)k, ins, 3, y);
                fill_fields(&op, variant, seed);
                ir_graph_push(g, op);
            }
        }
    }
    return g;
}

/* Views, quantizes, strided reads, every destination form, keeps, covers (default, explicit, empty), and fused
 * blocks nested two deep: the shape of a rewritten graph. */
static struct ir_graph *graph_rewritten(void)
{
    struct ir_graph *g = ir_graph_new();
    ir_graph_set_meta(g, "rewritten", NULL, NULL);
    ir_tid x = T(g, "x", IR_ELEM_F32, 1, 64, IR_ROLE_INPUT);
    ir_tid pos = T(g, "pos", IR_ELEM_I32, 1, 1, IR_ROLE_PARAM);
    ir_tid w = T(g, "blk.0.attn_q", IR_ELEM_F32, 64, 64, IR_ROLE_CONSTANT);
    ir_tid cache = T(g, "cache-k", IR_ELEM_F16, 32, 64, IR_ROLE_STATE);
    g->tensors[cache].carried = true;
    ir_tid a = T(g, "a", IR_ELEM_F32, 1, 64, IR_ROLE_ACTIVATION);
    ir_tid b = T(g, "b", IR_ELEM_F32, 1, 64, IR_ROLE_ACTIVATION);
    ir_tid c = T(g, "_c", IR_ELEM_F32, 1, 128, IR_ROLE_ACTIVATION);
    ir_tid v = T(g, "v", IR_ELEM_F32, 1, 32, IR_ROLE_ACTIVATION);
    ir_tid q = T(g, "q", IR_ELEM_I32, 1, 64, IR_ROLE_ACTIVATION);
    ir_tid o = T(g, "o", IR_ELEM_F32, 1, 64, IR_ROLE_ACTIVATION);
    g->tensors[o].observed = true;

    /* 0: a strided read, default covers. */
    ir_tid ins2[2] = {x, w};
    struct ir_op op = ir_op_prim(IR_KIND_MATMUL, ins2, 2, a);
    op.spec.u.matmul = (struct ir_matmul){1, 64, 64};
    op.access[0].strided = true;
    op.access[0].s = (struct ir_strided){64, 0, 64};
    ir_graph_push(g, op);

    /* 1: a view with explicit covers. */
    op = ir_op_prim(IR_KIND_SILU, &a, 1, v);
    op.sym = IR_SYM_VIEW;
    op.view_offset = 32;
    int32_t cov[3] = {1, 5, 9};
    ir_op_set_covers(&op, cov, 3);
    ir_graph_push(g, op);

    /* 2: a quantize with empty covers. */
    op = ir_op_prim(IR_KIND_SILU, &a, 1, q);
    op.sym = IR_SYM_QUANT;
    op.quant_words = 2;
    int at = ir_graph_push(g, op);
    ir_op_set_covers(&g->ops[at], NULL, 0);

    /* 3: a row at a fixed row. */
    op = ir_op_prim(IR_KIND_SCALE, &a, 1, b);
    op.spec.u.scale = (struct ir_scale){64, 0.5};
    op.dst.buf = cache;
    op.dst.row = IR_ROWSEL_FIXED;
    op.dst.row_fixed = 3;
    op.dst.row_cols = 64;
    ir_graph_push(g, op);

    /* 4: a row a param names, plus a unit. */
    op = ir_op_prim(IR_KIND_SCALE, &a, 1, b);
    op.spec.u.scale = (struct ir_scale){64, -1.5e-7};
    op.dst.buf = cache;
    op.dst.row = IR_ROWSEL_PARAM;
    op.dst.row_param = pos;
    op.dst.row_cols = 64;
    op.dst.has_unit = true;
    op.dst.unit = (struct ir_strided){16, 8, 8};
    ir_graph_push(g, op);

    /* 5: a unit alone; 6: another buffer, nothing else. */
    op = ir_op_prim(IR_KIND_RELU, &a, 1, b);
    op.spec.u.unary.n = 64;
    op.dst.buf = c;
    op.dst.has_unit = true;
    op.dst.unit = (struct ir_strided){2, 1, 1};
    ir_graph_push(g, op);
    op = ir_op_prim(IR_KIND_GELU, &a, 1, b);
    op.spec.u.unary.n = 64;
    op.dst.buf = c;
    ir_graph_push(g, op);

    /* 7: fused, two deep, with keeps, covers on parts, strided operands and a destination. */
    struct ir_op *inner = calloc(2, sizeof *inner);
    inner[0] = ir_op_prim(IR_KIND_SILU, &a, 1, b);
    inner[0].spec.u.unary.n = 64;
    ir_op_set_covers(&inner[0], (int32_t[]){8}, 1);
    ir_tid jins[2] = {b, a};
    inner[1] = ir_op_prim(IR_KIND_JOIN, jins, 2, c);
    inner[1].spec.u.join = (struct ir_join){1, 2, 64, 64};
    struct ir_access acc[2] = {{true, {32, 0, 16}}, {false, {0, 0, 0}}};
    struct ir_op *outer = calloc(3, sizeof *outer);
    outer[0] = ir_op_prim(IR_KIND_MATMUL, ins2, 2, a);
    outer[0].spec.u.matmul = (struct ir_matmul){1, 64, 64};
    ir_op_set_covers(&outer[0], (int32_t[]){7}, 1);
    outer[1] = ir_op_fused(IR_CLASS_GLU_ACT_MUL, inner, 2, jins, acc, 2, c, ir_dst_own(c));
    ir_op_set_keeps(&outer[1], &b, 1);
    outer[2] = ir_op_prim(IR_KIND_ARGMAX, &c, 1, o);
    outer[2].spec.u.argmax = (struct ir_argmax){1, 128};
    struct ir_dst d = ir_dst_own(o);
    d.buf = cache;
    d.row = IR_ROWSEL_PARAM;
    d.row_param = pos;
    d.row_cols = 64;
    op = ir_op_fused(IR_CLASS_CROSS_LAYER_LAUNCH, outer, 3, ins2, acc, 2, o, d);
    ir_tid keeps[2] = {a, c};
    ir_op_set_keeps(&op, keeps, 2);
    ir_op_set_covers(&op, (int32_t[]){7, 8, 10}, 3);
    ir_graph_push(g, op);

    /* 8: a fused op with no operands, no parts and default covers. */
    op = ir_op_fused(IR_CLASS_CUDA_GRAPHS, NULL, 0, NULL, NULL, 0, o, ir_dst_own(o));
    ir_graph_push(g, op);
    return g;
}

/* A graph with no header and no ops; and one with only a family. */
static void test_headers(void)
{
    struct ir_graph *g = ir_graph_new();
    T(g, "x", IR_ELEM_F32, 0, 0, IR_ROLE_INPUT);
    char *t = check_roundtrip(g, "no header");
    CHECK_STR(t, "tensor x f32 0x0 input\n");
    free(t);
    ir_graph_set_meta(g, NULL, "qwen3", NULL);
    t = check_roundtrip(g, "family only");
    CHECK_STR(t, "graph family=qwen3\ntensor x f32 0x0 input\n");
    free(t);
    ir_graph_set_meta(g, "g", NULL, "decode");
    t = check_roundtrip(g, "name and mode");
    CHECK_STR(t, "graph g mode=decode\ntensor x f32 0x0 input\n");
    free(t);
    ir_graph_free(g);
    g = ir_graph_new();
    size_t n = 99;
    t = ir_print(g, &n);
    CHECK(t && n == 0 && t[0] == '\0');
    free(t);
    ir_graph_free(g);
}

/* Round trips over the API-built graphs, and the exact canonical text of a small one. */
static void test_roundtrip(void)
{
    struct ir_graph *g = graph_every_kind();
    free(check_roundtrip(g, "every kind"));
    ir_graph_free(g);
    g = graph_rewritten();
    char *t = check_roundtrip(g, "rewritten");
    const char *want =
        "graph rewritten\n"
        "tensor x f32 1x64 input\n"
        "tensor pos i32 1x1 param\n"
        "tensor blk.0.attn_q f32 64x64 constant\n"
        "tensor cache-k f16 32x64 state carried\n"
        "tensor a f32 1x64 activation\n"
        "tensor b f32 1x64 activation\n"
        "tensor _c f32 1x128 activation\n"
        "tensor v f32 1x32 activation\n"
        "tensor q i32 1x64 activation\n"
        "tensor o f32 1x64 activation observed\n"
        "op a = matmul(x[64:0:64], blk.0.attn_q) m=1 k=64 n=64\n"
        "op v = view(a) offset=32 covers 1, 5, 9\n"
        "op q = quantize(a) words=2 covers -\n"
        "op b = scale(a) n=64 factor=0.5 -> cache-k row(3, 64)\n"
        "op b = scale(a) n=64 factor=-1.5e-07 -> cache-k row(pos, 64) unit(16:8:8)\n"
        "op b = relu(a) n=64 -> _c unit(2:1:1)\n"
        "op b = gelu(a) n=64 -> _c\n"
        "fused cross_layer_launch o = (x[32:0:16], blk.0.attn_q) -> cache-k row(pos, 64) keep a, _c covers 7, 8, 10 {\n"
        "    op a = matmul(x, blk.0.attn_q) m=1 k=64 n=64 covers 7\n"
        "    fused glu_act_mul _c = (b[32:0:16], a) keep b {\n"
        "        op b = silu(a) n=64 covers 8\n"
        "        op _c = join(b, a) rows=1 heads=2 wa=64 wb=64\n"
        "    }\n"
        "    op o = argmax(_c) rows=1 cols=128\n"
        "}\n"
        "fused cuda_graphs o = () {\n"
        "}\n";
    CHECK_STR(t, want);
    free(t);
    char *one = ir_print_op(g, &g->ops[7].parts[1]);
    CHECK_STR(one, "fused glu_act_mul _c = (b[32:0:16], a) keep b {\n    op b = silu(a) n=64 covers 8\n"
                   "    op _c = join(b, a) rows=1 heads=2 wa=64 wb=64\n}");
    free(one);
    one = ir_print_op(g, &g->ops[0]);
    CHECK_STR(one, "op a = matmul(x[64:0:64], blk.0.attn_q) m=1 k=64 n=64 covers 0");
    free(one);
    ir_graph_free(g);
}

/* A mixture's routing fields: printed in table order after act (only where set, so today's texts keep their text),
 * read back equal; refused where they say nothing or cannot be (the validator's messages). */
static void test_moe_routing_text(void)
{
#define MOE_PRE                                                                                                     \
    "tensor x f32 1x4 input\ntensor r f32 4x8 constant\ntensor g f32 4x8 constant\ntensor u f32 4x8 constant\n"    \
    "tensor dn f32 1x32 constant\ntensor cb f32 1x8 constant\ntensor y f32 1x4 activation\n"
    const char *text = MOE_PRE "op y = moe(x, r, g, u, dn, cb) d=4 k=2 dff=1 experts=8 act=swiglu sigmoid correction "
                               "groups=4 topk_groups=2 scale=2.5\n";
    const char *shuffled = MOE_PRE "op y = moe(x, r, g, u, dn, cb) scale=2.5 topk_groups=2 correction d=4 k=2 dff=1 "
                                   "experts=8 groups=4 sigmoid act=swiglu\n";
    char err[IR_ERR_LEN] = "";
    struct ir_graph *g = ir_parse(shuffled, strlen(shuffled), "m.fc", err);
    CHECKF(g != NULL, "routing text: %s", err);
    if (g) {
        char *t = check_roundtrip(g, "routing");
        CHECK_STR(t, text);
        free(t);
        ir_graph_free(g);
    }
    static const struct {
        const char *fields, *want;
    } bad[] = {
        {"k=2 act=swiglu sigmoid topk_softmax", "sigmoid and topk_softmax are two scorings"},
        {"k=2 act=swiglu no_renorm topk_softmax", "topk_softmax's weights are their own softmax"},
        {"k=2 act=swiglu groups=4", "groups and topk_groups come together"},
        {"k=2 act=swiglu groups=3 topk_groups=1", "3 groups must split 8 experts evenly"},
        {"k=2 act=swiglu groups=8 topk_groups=1", "two or more a group"},
        {"k=2 act=swiglu groups=2 topk_groups=3", "topk_groups = 3 exceeds groups = 2"},
        {"k=3 act=swiglu groups=4 topk_groups=1", "1 groups of 2 experts hold fewer than k = 3"},
        {"k=2 act=swiglu scale=-1", "scale: must be a positive finite number"},
        {"k=2 act=swiglu correction", "5 operands, expected 6"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char line[512];
        snprintf(line, sizeof line, MOE_PRE "op y = moe(x, r, g, u, dn) d=4 dff=1 experts=8 %s\n", bad[i].fields);
        struct ir_graph *h = ir_parse(line, strlen(line), "m.fc", err);
        CHECKF(h == NULL && strstr(err, bad[i].want) != NULL, "moe %s: got '%s', want '%s'", bad[i].fields,
               h ? "accepted" : err, bad[i].want);
        ir_graph_free(h);
    }
#undef MOE_PRE
}

/* A rope's rotary scaling in the text: a llama3 band and a YaRN range, every scaling field between them, printed in
 * table order after adjacent (each only where set), read back field for field; refused where the validator refuses
 * it (a field without a scaling or not of its kind, one missing, a value out of range, an unknown kind, two
 * scalings on one table). */
static void test_rope_scaling_text(void)
{
#define ROPE_PRE                                                                                                    \
    "tensor x f32 1x8 input\ntensor c1 f32 16x4 constant\ntensor s1 f32 16x4 constant\n"                           \
    "tensor c2 f32 16x4 constant\ntensor s2 f32 16x4 constant\ntensor pos i32 1x1 param\n"                         \
    "tensor y1 f32 1x8 activation\ntensor y2 f32 1x8 activation\n"
    const char *text = ROPE_PRE "op y1 = rope(x, c1, s1, pos) h=1 hd=8 half=4 rows=1 pos=named theta=5e+05 "
                                "scaling=llama3 factor=32 orig=8192 low_freq=1 high_freq=4 magnitude=1.25\n"
                                "op y2 = rope(x, c2, s2) h=1 hd=8 half=4 rows=1 theta=1.5e+05 adjacent scaling=yarn "
                                "factor=32 orig=4096 beta_fast=16 beta_slow=0.5 truncate "
                                "magnitude=1.3465735902799727\n";
    const char *shuffled = ROPE_PRE "op y1 = rope(x, c1, s1, pos) high_freq=4 magnitude=1.25 low_freq=1 orig=8192 "
                                    "factor=32 scaling=llama3 theta=500000 pos=named h=1 hd=8 half=4 rows=1\n"
                                    "op y2 = rope(x, c2, s2) truncate magnitude=1.3465735902799727 beta_slow=0.5 "
                                    "beta_fast=16 orig=4096 factor=32 scaling=yarn adjacent theta=150000 h=1 hd=8 "
                                    "half=4 rows=1\n";
    char err[IR_ERR_LEN] = "";
    struct ir_graph *g = ir_parse(shuffled, strlen(shuffled), "r.fc", err);
    CHECKF(g != NULL && g->nops == 2, "rope scaling text: %s", err);
    if (g && g->nops == 2) {
        char *t = check_roundtrip(g, "rope scaling");
        CHECK_STR(t, text);
        free(t);
        const struct ir_rope_scaling *a = &g->ops[0].spec.u.rope.scaling, *b = &g->ops[1].spec.u.rope.scaling;
        CHECK(a->kind == IR_ROPESCALE_LLAMA3 && a->factor.has && a->factor.v == 32 && a->orig == 8192 &&
              a->low_freq.has && a->low_freq.v == 1 && a->high_freq.has && a->high_freq.v == 4 &&
              !a->beta_fast.has && !a->beta_slow.has && !a->truncate && a->magnitude.has && a->magnitude.v == 1.25);
        CHECK(b->kind == IR_ROPESCALE_YARN && b->factor.has && b->factor.v == 32 && b->orig == 4096 &&
              !b->low_freq.has && !b->high_freq.has && b->beta_fast.has && b->beta_fast.v == 16 &&
              b->beta_slow.has && b->beta_slow.v == 0.5 && b->truncate && b->magnitude.has &&
              b->magnitude.v == 1.3465735902799727);
        ir_graph_free(g);
    }
    static const struct {
        const char *fields, *want;
    } bad[] = {
        {"factor=2", "factor: given without a rotary scaling"},
        {"scaling=none orig=16", "orig: given without a rotary scaling"},
        {"scaling=linear", "factor: required by this rotary scaling"},
        {"scaling=linear factor=2 truncate", "truncate: not a field of this rotary scaling"},
        {"scaling=llama3 factor=8 low_freq=1 high_freq=4", "orig: required by this rotary scaling"},
        {"scaling=llama3 factor=8 orig=256 high_freq=4", "low_freq: required by this rotary scaling"},
        {"scaling=llama3 factor=8 orig=256 low_freq=1", "high_freq: required by this rotary scaling"},
        {"scaling=llama3 factor=8 orig=256 low_freq=4 high_freq=4", "high_freq: must exceed low_freq"},
        {"scaling=yarn orig=16", "factor: required by this rotary scaling"},
        {"scaling=yarn factor=4", "orig: required by this rotary scaling"},
        {"scaling=yarn factor=4 orig=16 magnitude=-1", "magnitude: must be positive"},
        {"scaling=ntk factor=4", "ntk"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char line[512];
        snprintf(line, sizeof line, ROPE_PRE "op y1 = rope(x, c1, s1) h=1 hd=8 half=4 rows=1 %s\n", bad[i].fields);
        struct ir_graph *h = ir_parse(line, strlen(line), "r.fc", err);
        CHECKF(h == NULL && strstr(err, bad[i].want) != NULL, "rope %s: got '%s', want '%s'", bad[i].fields,
               h ? "accepted" : err, bad[i].want);
        ir_graph_free(h);
    }
    /* One table, two ropes: the same scaling passes, another (here only the attention factor) is refused. */
    const char *same = ROPE_PRE "op y1 = rope(x, c1, s1) h=1 hd=8 half=4 rows=1 scaling=yarn factor=4 orig=16 "
                                "magnitude=1.1\nop y2 = rope(x, c1, s1) h=1 hd=8 half=4 rows=1 scaling=yarn factor=4 "
                                "orig=16 magnitude=1.1\n";
    g = ir_parse(same, strlen(same), "r.fc", err);
    CHECKF(g != NULL, "one scaling on one table: %s", err);
    ir_graph_free(g);
    const char *other = ROPE_PRE "op y1 = rope(x, c1, s1) h=1 hd=8 half=4 rows=1 scaling=yarn factor=4 orig=16 "
                                 "magnitude=1.1\nop y2 = rope(x, c1, s1) h=1 hd=8 half=4 rows=1 scaling=yarn factor=4 "
                                 "orig=16 magnitude=1.2\n";
    g = ir_parse(other, strlen(other), "r.fc", err);
    CHECKF(g == NULL && strstr(err, "rotary table 'c1' is read with another rotary scaling") != NULL,
           "two scalings on one table: got '%s'", g ? "accepted" : err);
    ir_graph_free(g);
#undef ROPE_PRE
}

/* Every float prints in its shortest exact form and reads back bit for bit. */
static void test_floats(void)
{
    static const struct {
        double v;
        const char *text;
    } cases[] = {{0.1, "0.1"}, {1e-05, "1e-05"}, {1.0 / 3.0, "0.3333333333333333"}, {-0.0, "-0"}, {1.0, "1"},
                 {5e-324, "5e-324"}, {1.7976931348623157e308, "1.7976931348623157e+308"},
                 {-2.5, "-2.5"}, {100.0, "1e+02"}, {0.30000000000000004, "0.30000000000000004"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ir_graph *g = ir_graph_new();
        ir_tid x = T(g, "x", IR_ELEM_F32, 1, 1, IR_ROLE_INPUT);
        struct ir_op op = ir_op_prim(IR_KIND_SCALE, &x, 1, x);
        op.spec.u.scale = (struct ir_scale){1, cases[i].v};
        ir_graph_push(g, op);
        char *t = check_roundtrip(g, cases[i].text);
        char want[128];
        snprintf(want, sizeof want, "op x = scale(x) n=1 factor=%s\n", cases[i].text);
        CHECKF(t && strstr(t, want) != NULL, "float %s printed as\n%s", cases[i].text, t ? t : "");
        free(t);
        ir_graph_free(g);
    }
    /* Non-finite values print by name and read back. */
    const char *text = "tensor x f32 1x1 input\n"
                       "op x = attention(x) h=1 kv=1 hd=1 vd=1 l=1 rows=1 scale=inf softcap=-inf\n"
                       "op x = scale(x) n=1 factor=nan\n";
    char err[IR_ERR_LEN];
    struct ir_graph *g = ir_parse_unchecked(text, strlen(text), "nf.fc", err);
    CHECKF(g != NULL, "%s", err);
    if (g) {
        char *t = ir_print(g, NULL);
        CHECK_STR(t, text);
        free(t);
        ir_graph_free(g);
    }
}

/* Lenient input (blanks, tabs, comments with any bytes, CRLF, fields in any order) parses to the canonical text. */
static void test_lenient(void)
{
    static const char text[] =
        "# a comment with bytes \xff\xfe and \x01 and \r in it\r\n"
        "\r\n"
        "   graph  g\tfamily=llama   mode=decode   # trailing\r\n"
        "tensor x f32 1x8 input observed\n"
        "\t\n"
        "tensor w f32 8x8 constant q4_k transposed carried # c\n"
        "tensor y f32 1x8 activation next observed\n"
        "op y=matmul( x , w[8:0:8] )   n=8 k=8 m=1   ->  w   row( 2 ,8 )  unit( 1:0:1 )  keep  x ,y  covers  3 ,4\n"
        "fused add_norm y = (x) covers - {\n"
        "  op y = rms_norm(x) offset=0 weight residual eps=1e-6 cols=8 rows=1 covers -\n"
        "}\n"
        "op y = view(x) offset=0 -> y";
    const char *want = "graph g family=llama mode=decode\n"
                       "tensor x f32 1x8 input observed\n"
                       "tensor w f32 8x8 constant q4_k transposed carried\n"
                       "tensor y f32 1x8 activation observed next\n"
                       "op y = matmul(x, w[8:0:8]) m=1 k=8 n=8 -> w row(2, 8) unit(1:0:1) keep x, y covers 3, 4\n"
                       "fused add_norm y = (x) covers - {\n"
                       "    op y = rms_norm(x) rows=1 cols=8 eps=1e-06 weight offset=0 residual\n"
                       "}\n"
                       "op y = view(x) offset=0\n";
    /* the NUL inside the comment is part of the text */
    char buf[sizeof text + 8];
    memcpy(buf, "#\0z\n", 4);
    memcpy(buf + 4, text, sizeof text - 1);
    char err[IR_ERR_LEN];
    struct ir_graph *g = ir_parse_unchecked(buf, 4 + sizeof text - 1, "l.fc", err);
    CHECKF(g != NULL, "%s", err);
    if (!g)
        return;
    char *t = ir_print(g, NULL);
    CHECK_STR(t, want);
    CHECK(g->nops == 3 && g->ops[1].ncovers == 0 && g->ops[2].ncovers == 1 && g->ops[2].covers[0] == 2);
    CHECK(g->ops[1].parts[0].ncovers == 0);
    free(t);
    ir_graph_free(g);
}

/* ── Errors ──────────────────────────────────────────────────────────────────────────────────────────────── */

/* Declarations most error cases start from (3 lines). */
#define PRE "tensor x f32 1x8 input\ntensor w f32 8x8 constant\ntensor y f32 1x8 activation\n"

static const struct {
    const char *input;
    const char *want;
} bad[] = {
    {PRE "op y = matmull(x, w) m=1 k=8 n=8\n", "e.fc:4:8: unknown kind 'matmull'"},
    {PRE "op y = matmul(x, w m=1 k=8 n=8\n", "e.fc:4:20: expected ')' after operands"},
    {PRE "tensor x f32 1x8 input\n", "e.fc:4:8: duplicate tensor name 'x'"},
    {PRE "op y = matmul(x, z) m=1 k=8 n=8\n", "e.fc:4:18: unknown tensor 'z'"},
    {PRE "op y = matmul(x, w) m=1 k=8 n=8 n=8\n", "e.fc:4:33: field 'n' given twice"},
    {"\xff", "e.fc:1:1: unexpected byte 0xff"},
    {"tensor big f32 1099511627777x1 input\n", "e.fc:1:16: size 1099511627777 exceeds 1099511627776"},
    {PRE "op y = matmul(x, w) m=1 n=8\n", "e.fc:4:8: missing field 'k'"},
    {"tensor x f32 1x8 input\n\0", "e.fc:2:1: unexpected byte 0x00"},
    {"tensor q f32 1048576x4194305 input\n", "e.fc:1:14: size 1048576x4194305 exceeds 4398046511104 values"},
    {"tensor q f32 99999999999999999999999x1 input\n",
     "e.fc:1:14: size 99999999999999999999999 exceeds 1099511627776"},
    {"tensor q f64 1x8 input\n", "e.fc:1:10: unknown element type 'f64'"},
    {"tensor q f32 1x8 weight\n", "e.fc:1:18: unknown role 'weight'"},
    {"tensor q f32 1x8 constant q9_0\n",
     "e.fc:1:27: unknown tensor flag 'q9_0' (expected a format, observed, carried, next or tied)"},
    {"tensor q f32 1x8 constant transposed\n", "e.fc:1:27: 'transposed' must follow the tensor's format"},
    {"tensor q f32 1x8 input observed observed\n", "e.fc:1:33: tensor flag 'observed' given twice"},
    {"tensor q f32 1 8 input\n", "e.fc:1:15: expected 'x' between rows and cols"},
    {"tensor q f32 8x input\n", "e.fc:1:16: expected cols after 'x'"},
    {PRE "graph g\n", "e.fc:4:1: the graph line must come before every other declaration"},
    {"graph g colour=red\n", "e.fc:1:9: unknown graph attribute 'colour' (expected family= or mode=)"},
    {"graph g mode=a mode=b\n", "e.fc:1:16: graph attribute 'mode' given twice"},
    {"graph g h\n", "e.fc:1:9: expected family=<word> or mode=<word>"},
    {"tensr q f32 1x8 input\n", "e.fc:1:1: unknown declaration 'tensr' (expected graph, tensor, op or fused)"},
    {"}\n", "e.fc:1:1: '}' without an open fused block"},
    {PRE "op y = matmul(x, w) m=1 k=8 n=8 q=1\n", "e.fc:4:33: unknown field 'q' for matmul"},
    {PRE "op y = rms_norm(x) rows=1 cols=8 eps=1e-5 offset=0 weight=1\n",
     "e.fc:4:58: field 'weight' is a flag and takes no value"},
    {PRE "op y = matmul(x, w) m 1\n", "e.fc:4:22: expected '=' after field 'm'"},
    {PRE "op y = elementwise(x, y) op=pow n=8\n", "e.fc:4:29: unknown value 'pow' for field 'op'"},
    {PRE "op y = rms_norm(x) rows=1 cols=8 eps=1e-5e offset=0\n", "e.fc:4:38: expected a number, found '1e-5e'"},
    {PRE "op y = scale(x) n=8 factor=1e999\n", "e.fc:4:28: number 1e999 is out of range"},
    {PRE "op y = matmul(x, w) m=-1 k=8 n=8\n", "e.fc:4:23: expected a non-negative integer"},
    {PRE "op y = row_gather(w) rows=8 cols=8 index=foo\n",
     "e.fc:4:42: expected a row or 'named' for field 'index'"},
    {PRE "op y = quantize(x) words=3\n", "e.fc:4:26: words must be 1 or 2"},
    {PRE "op y = view(x)\n", "e.fc:4:8: missing field 'offset'"},
    {PRE "op y = silu(x[8:0]) n=8\n", "e.fc:4:18: expected ':' after the offset"},
    {PRE "op y = silu(x[8:0:4) n=8\n", "e.fc:4:20: expected ']' after a strided access"},
    {PRE "op y = silu(x) n=8 -> q\n", "e.fc:4:23: unknown tensor 'q'"},
    {PRE "op y = silu(x) n=8 -> w row(1 8)\n", "e.fc:4:31: expected ',' after the row"},
    {PRE "op y = silu(x) n=8 covers x\n", "e.fc:4:27: expected an op index or '-' after 'covers'"},
    {PRE "op y = silu(x) n=8 covers 2147483648\n", "e.fc:4:27: size 2147483648 exceeds 2147483647"},
    {PRE "op y = silu(x) n=8 covers 1 keep y\n", "e.fc:4:29: expected end of line, found 'k'"},
    {PRE "fused add_norm y = (x)\n", "e.fc:4:23: expected '{' at the end of a fused line"},
    {PRE "fused add_nrm y = (x) {\n}\n", "e.fc:4:7: unknown class 'add_nrm'"},
    {PRE "fused add_norm y = (x) {\ntensor z f32 1x1 input\n}\n",
     "e.fc:5:1: expected 'op', 'fused' or '}' in a fused block"},
    {PRE "fused add_norm y = (x) {\n} x\n", "e.fc:5:3: expected end of line, found 'x'"},
    {PRE "fused add_norm y = (x) {\n    op y = silu(x) n=8\n", "e.fc:4:1: unterminated fused block"},
    {"tensor x f32 1x8 input\rtensor w f32 8x8 constant\n", "e.fc:1:23: unexpected byte 0x0d"},
    {"tensor x f32 1x8 input\x01\n", "e.fc:1:23: unexpected byte 0x01"},
    {"tensor caf\xc3\xa9 f32 1x8 input\n", "e.fc:1:11: unexpected byte 0xc3"},
    {"tensor x\x7f f32 1x8 input\n", "e.fc:1:9: unexpected byte 0x7f"},
    {PRE "op y = matmul x, w\n", "e.fc:4:15: expected '(' after the kind"},
    {PRE "op y matmul(x, w)\n", "e.fc:4:6: expected '=' after the result"},
    {PRE "op 1y = silu(x) n=8\n", "e.fc:4:4: expected a result tensor name"},
    {PRE "op\n", "e.fc:4:3: expected a result tensor name"},
    {PRE "op y = silu(x) n=8 keep\n", "e.fc:4:24: expected a tensor name to keep"},
    {PRE "op y = matmul(x, w)m=1 k=8 n=8\n", "e.fc:4:20: expected a blank before 'm'"},
    {PRE "op y = moe(x) d=8 k=1 dff=8 experts=2 act=relu\n", "e.fc:4:43: unknown value 'relu' for field 'act'"},
    {PRE "op y = silu(x) n=8=\n", "e.fc:4:19: expected a blank after field 'n'"},
    {PRE "op y = silu(x) n=1099511627777\n", "e.fc:4:18: size 1099511627777 exceeds 1099511627776"},
    {PRE "op y = silu(, x) n=8\n", "e.fc:4:13: expected an operand"},
    {PRE "op y = (x) n=8\n", "e.fc:4:8: expected a kind"},
    {PRE "op y = silu(x) n=8 -> w row(pos, 8)\n", "e.fc:4:29: unknown tensor 'pos'"},
    {PRE "op y = silu(x) n=8 -> w unit(1:0:1\n", "e.fc:4:35: expected ')' after the unit"},
    {PRE "@\n", "e.fc:4:1: expected a declaration, found '@'"},
    {"graph g family=\n", "e.fc:1:16: expected a word"},
    {"graph 9\n", "e.fc:1:7: expected a graph name"},
    {PRE "op y = silu(x) n=8 -> \n", "e.fc:4:22: expected a tensor name after '->'"},
};

/* Each malformed input fails with its exact position and message, leaving no graph behind. */
static void test_errors(void)
{
    CHECK(sizeof bad / sizeof bad[0] >= 40);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[IR_ERR_LEN] = "";
        /* inputs with an embedded NUL give their length through the table's string up to the final byte */
        size_t len = strlen(bad[i].input);
        if (strcmp(bad[i].want, "e.fc:2:1: unexpected byte 0x00") == 0)
            len += 1;
        struct ir_graph *g = ir_parse_unchecked(bad[i].input, len, "e.fc", err);
        CHECKF(g == NULL, "case %zu parsed", i);
        ir_graph_free(g);
        CHECKF(strcmp(err, bad[i].want) == 0, "case %zu:\n  got  %s\n  want %s", i, err, bad[i].want);
    }
}

/* Line of text n repeated count times, into a malloc'd buffer; *len receives the length. */
static char *repeat(const char *head, const char *unit, size_t count, const char *tail, size_t *len)
{
    size_t h = strlen(head), u = strlen(unit), t = strlen(tail);
    char *buf = malloc(h + u * count + t + 1);
    memcpy(buf, head, h);
    for (size_t i = 0; i < count; i++)
        memcpy(buf + h + i * u, unit, u);
    memcpy(buf + h + u * count, tail, t + 1);
    *len = h + u * count + t;
    return buf;
}

/* Parse text expecting failure with a message that begins with want. */
static void expect_error(const char *text, size_t len, const char *want, const char *what)
{
    char err[IR_ERR_LEN] = "";
    struct ir_graph *g = ir_parse_unchecked(text, len, "big.fc", err);
    CHECKF(g == NULL, "%s parsed", what);
    ir_graph_free(g);
    CHECKF(strncmp(err, want, strlen(want)) == 0, "%s:\n  got  %s\n  want %s", what, err, want);
}

/* Huge lines, huge operand lists and deep nesting fail cleanly (or parse) in linear time. */
static void test_huge(void)
{
    enum { MB10 = 10 * 1024 * 1024 };
    size_t len;
    char *t = repeat("tensor ", "a", MB10, " f32 1x1 input\n", &len);
    expect_error(t, len, "big.fc:1:8: name longer than 256 bytes", "10 MB name");
    free(t);
    t = repeat("tensor x f32 ", "9", MB10, "x1 input\n", &len);
    size_t len9 = 0;
    char *nines = repeat("big.fc:1:14: size ", "9", 48, "... exceeds 1099511627776", &len9);
    expect_error(t, len, nines, "10 MB size");
    free(nines);
    free(t);
    t = repeat("tensor x f32 1x1 input\nop x = silu(x", ", x", MB10 / 3, ") n=1\n", &len);
    expect_error(t, len, "big.fc:2:12301: more than 4096 operands", "10 MB operand list");
    free(t);
    t = repeat("tensor x f32 1x1 input\nop x = silu(x) n=1 ", "#", MB10, "\n", &len);
    char err[IR_ERR_LEN];
    struct ir_graph *g = ir_parse_unchecked(t, len, "big.fc", err);
    CHECKF(g && g->nops == 1, "10 MB comment: %s", err);
    ir_graph_free(g);
    free(t);
    t = repeat("", " ", MB10, "\n", &len);
    g = ir_parse_unchecked(t, len, "big.fc", err);
    CHECKF(g && g->ntensors == 0, "10 MB of blanks: %s", err);
    ir_graph_free(g);
    free(t);
    t = repeat("tensor x f32 1x1 input\nop x = silu(x) n=1 -> x row(", "1", MB10, ", 1)\n", &len);
    expect_error(t, len, "big.fc:2:29: size 11111111", "10 MB row");
    free(t);

    /* 10,000 nested openings: refused at the 33rd level. */
    t = repeat("tensor x f32 1x1 input\n", "fused add_norm x = (x) {\n", 10000, "", &len);
    expect_error(t, len, "big.fc:34:1: fused blocks nest deeper than 32", "10000 openings");
    free(t);
    /* 10,000 openings of undeclared tensors: refused at the first. */
    t = repeat("", "fused add_norm x = (x) {\n", 10000, "", &len);
    expect_error(t, len, "big.fc:1:16: unknown tensor 'x'", "10000 openings, undeclared");
    free(t);
    /* exactly 32 levels parse and round-trip; 10,000 closings after a valid graph are refused at the first. */
    char *open = repeat("tensor x f32 1x1 input\n", "fused add_norm x = (x) {\nop x = silu(x) n=1\n", 32, "", &len);
    char *all = repeat(open, "}\n", 32, "", &len);
    g = ir_parse_unchecked(all, len, "deep.fc", err);
    CHECKF(g != NULL, "32 levels: %s", err);
    if (g) {
        free(check_roundtrip(g, "32 levels"));
        ir_graph_free(g);
    }
    free(all);
    free(open);
    t = repeat("tensor x f32 1x1 input\n", "}\n", 10000, "", &len);
    expect_error(t, len, "big.fc:2:1: '}' without an open fused block", "10000 closings");
    free(t);
}

/* ── Random inputs ───────────────────────────────────────────────────────────────────────────────────────── */

/* xorshift64*: the tests' deterministic random numbers. */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717u;
}
static size_t rnd_below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

/* Parse text; a graph must round-trip, a failure must carry a positioned message. Counts each outcome. */
static void fuzz_one(const char *text, size_t len, int *parsed, int *failed)
{
    char err[IR_ERR_LEN] = "";
    struct ir_graph *g = ir_parse_unchecked(text, len, "fz", err);
    if (!g) {
        (*failed)++;
        if (strncmp(err, "fz:", 3) != 0) {
            CHECKF(false, "error without position: %s", err);
        }
        return;
    }
    (*parsed)++;
    /* validation either accepts it or names a line */
    struct ir_graph *v = ir_parse(text, len, "fz", err);
    CHECKF(v != NULL || strncmp(err, "fz:", 3) == 0, "validation error without position: %s", err);
    ir_graph_free(v);
    size_t n1, n2;
    char *t1 = ir_print(g, &n1);
    struct ir_graph *h = t1 ? ir_parse_unchecked(t1, n1, "fz2", err) : NULL;
    char *t2 = h ? ir_print(h, &n2) : NULL;
    bool ok = t1 && h && t2 && n1 == n2 && memcmp(t1, t2, n1) == 0 && graph_equal(g, h);
    if (!ok)
        CHECKF(false, "fuzzed graph does not round-trip (%s):\n%.*s", err, (int)(len < 400 ? len : 400), text);
    free(t1);
    free(t2);
    ir_graph_free(h);
    ir_graph_free(g);
}

/* Words and punctuation the mutator splices in. */
static const char *const dict[] = {
    "op ", "fused ", "tensor ", "graph ", " = ", "(", ")", "[", "]", ":", ", ", "->", " row(", " unit(",
    " keep ", " covers ", " covers -", "{\n", "}\n", "\n", "#", "\r\n", "=", "named", "1099511627777",
    "4398046511104", "-1", "0", "1e-5", "nan", "inf", "x", "y", "w", "add_norm", "matmul", "silu", "view",
    "quantize", " weight", " words=2", " offset=3", " n=8", "q8_0", " transposed", " observed", "\t", "\xff", "\0",
};

/* A valid text the mutator starts from. */
static const char seed_text[] =
    "graph seed family=llama mode=prefill:8\n"
    "tensor x f32 1x8 input observed\n"
    "tensor w f32 8x8 constant q8_0 transposed\n"
    "tensor y f32 1x8 activation\n"
    "tensor pos i32 1x1 param\n"
    "op y = matmul(x[8:0:8], w) m=1 k=8 n=8 -> w row(pos, 8) unit(2:0:1) keep x covers 1, 2\n"
    "fused add_norm y = (x, w) keep y {\n"
    "    op y = rms_norm(x, w) rows=1 cols=8 eps=1e-06 weight offset=0 covers 3\n"
    "    fused norm_quant y = (y) {\n"
    "        op y = quantize(y) words=2\n"
    "    }\n"
    "}\n"
    "op y = view(x) offset=4 covers -\n"
    "op y = attention(x, w, w, pos) h=1 kv=1 hd=8 vd=8 l=1 rows=1 pos=named softcap=30 sinks window=4\n";

/* Bytes the mutator and the random strings favour. */
static const char punct[] = "x(),:=[]{}-# \n0123456789";
static const char alphabet[] = "tensor op fused x=(),:[]{}#\n 019abyq-";

/* Apply one random edit (replace, insert, delete, splice a dictionary word, duplicate a span, truncate, change a
 * digit, double a blank). */
static size_t mutate(char *buf, size_t len, size_t cap)
{
    size_t at = rnd_below(len + 1);
    switch (rnd_below(8)) {
    case 0:
        if (len)
            buf[rnd_below(len)] = (char)rnd();
        return len;
    case 1:
        if (len < cap) {
            memmove(buf + at + 1, buf + at, len - at);
            buf[at] = rnd_below(2) ? (char)rnd() : punct[rnd_below(sizeof punct - 1)];
            return len + 1;
        }
        return len;
    case 2: {
        size_t n = rnd_below(8);
        if (at + n > len)
            n = len - at;
        memmove(buf + at, buf + at + n, len - at - n);
        return len - n;
    }
    case 3: {
        size_t w = rnd_below(sizeof dict / sizeof dict[0]);
        size_t n = strlen(dict[w]) + (dict[w][0] == '\0');
        if (len + n > cap)
            return len;
        memmove(buf + at + n, buf + at, len - at);
        memcpy(buf + at, dict[w], n);
        return len + n;
    }
    case 4: {
        size_t from = rnd_below(len + 1), n = rnd_below(40);
        char span_copy[40];
        if (from + n > len)
            n = len - from;
        if (len + n > cap)
            return len;
        memcpy(span_copy, buf + from, n);
        memmove(buf + at + n, buf + at, len - at);
        memcpy(buf + at, span_copy, n);
        return len + n;
    }
    case 5:
        return at < len ? at + rnd_below(len - at) : len;
    case 6:
        /* a digit becomes another digit: mostly still valid text */
        for (size_t k = 0; k < len; k++) {
            size_t j = (at + k) % len;
            if (buf[j] >= '0' && buf[j] <= '9') {
                buf[j] = (char)('0' + rnd_below(10));
                break;
            }
        }
        return len;
    default:
        /* a blank doubles: still valid unless inside a token */
        for (size_t k = 0; k < len && len < cap; k++) {
            size_t j = (at + k) % len;
            if (buf[j] == ' ') {
                memmove(buf + j + 1, buf + j, len - j);
                buf[j] = rnd_below(2) ? ' ' : '\t';
                return len + 1;
            }
        }
        return len;
    }
}

/* Thousands of random byte strings and random mutations of a valid text: no crash, leak or unpositioned error, and
 * whatever parses round-trips. */
static void test_random(void)
{
    int parsed = 0, failed = 0;
    char buf[4096];
    for (int i = 0; i < 2000; i++) {
        size_t len = rnd_below(160);
        for (size_t j = 0; j < len; j++)
            buf[j] = rnd_below(4) ? alphabet[rnd_below(sizeof alphabet - 1)] : (char)rnd();
        fuzz_one(buf, len, &parsed, &failed);
    }
    for (int i = 0; i < 4000; i++) {
        size_t len = sizeof seed_text - 1;
        memcpy(buf, seed_text, len);
        int edits = 1 + (int)rnd_below(i % 3 == 0 ? 1 : 6);
        for (int e = 0; e < edits; e++)
            len = mutate(buf, len, sizeof buf);
        fuzz_one(buf, len, &parsed, &failed);
    }
    /* the seed itself parses, and mutations reach both outcomes */
    fuzz_one(seed_text, sizeof seed_text - 1, &parsed, &failed);
    CHECKF(parsed > 300 && failed > 2000, "parsed %d, failed %d", parsed, failed);
}

/* ── Files and docs ──────────────────────────────────────────────────────────────────────────────────────── */

/* The example files in tests/data/format are canonical: they parse and print back to the same bytes. */
static void test_files(void)
{
    static const char *const files[] = {"example.fc", "rewritten.fc"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/tests/data/format/%s", FUSECHECK_SOURCE_DIR, files[i]);
        size_t len = 0;
        char *text = ir_read_file(path, &len);
        CHECKF(text != NULL, "read %s", path);
        if (!text)
            continue;
        char err[IR_ERR_LEN];
        struct ir_graph *g = ir_parse_unchecked(text, len, files[i], err);
        CHECKF(g != NULL, "%s", err);
        if (g) {
            size_t n;
            char *t = ir_print(g, &n);
            CHECKF(t && n == len && memcmp(t, text, n) == 0, "%s is not canonical:\n%s", files[i], t ? t : "");
            free(t);
            ir_graph_free(g);
        }
        free(text);
    }
    char err[IR_ERR_LEN];
    CHECK(ir_parse_file(FUSECHECK_SOURCE_DIR "/tests/data/format/missing.fc", err) == NULL);
    CHECKF(strstr(err, "missing.fc:1:1: cannot open: ") != NULL, "%s", err);
}

/* ir_parse validates: valid files parse, and a validation error names the offending op's or tensor's line. */
static void test_validated(void)
{
    static const char *const files[] = {"example.fc", "rewritten.fc"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[512], err[IR_ERR_LEN] = "";
        snprintf(path, sizeof path, "%s/tests/data/format/%s", FUSECHECK_SOURCE_DIR, files[i]);
        struct ir_graph *g = ir_parse_file(path, err);
        CHECKF(g != NULL, "%s", err);
        ir_graph_free(g);
    }
    static const struct {
        const char *text, *prefix;
    } invalid[] = {
        /* op 1 reads b before any op defines it */
        {"tensor a f32 1x8 input\ntensor b f32 1x8 activation\ntensor c f32 1x8 activation\n"
         "op c = silu(a) n=8\n  op c = silu(b) n=8\n",
         "v.fc:5:3: "},
        /* a checkpoint row of 8 values is not a whole q8_0 block */
        {"tensor a f32 1x8 input\n# a comment\ntensor w f32 8x8 constant q8_0\n", "v.fc:3:1: "},
        /* the same activation written twice */
        {"tensor a f32 1x8 input\ntensor c f32 1x8 activation\nop c = silu(a) n=8\nop c = relu(a) n=8\n",
         "v.fc:4:1: "},
    };
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        char err[IR_ERR_LEN] = "";
        const char *text = invalid[i].text;
        struct ir_graph *g = ir_parse(text, strlen(text), "v.fc", err);
        CHECKF(g == NULL, "invalid case %zu validated", i);
        ir_graph_free(g);
        CHECKF(strncmp(err, invalid[i].prefix, strlen(invalid[i].prefix)) == 0 && strlen(err) > 12,
               "invalid case %zu: %s", i, err);
        /* the same text parses unchecked */
        g = ir_parse_unchecked(text, strlen(text), "v.fc", err);
        CHECKF(g != NULL, "unchecked case %zu: %s", i, err);
        ir_graph_free(g);
    }
    /* syntax errors come before validation */
    char err[IR_ERR_LEN];
    CHECK(ir_parse("op", 2, "v.fc", err) == NULL);
    CHECKF(strcmp(err, "v.fc:1:3: expected a result tensor name") == 0, "%s", err);
}

/* docs/format.md has a row for every kind listing its fields in table order. */
static void test_docs(void)
{
    size_t len = 0;
    char *doc = ir_read_file(FUSECHECK_SOURCE_DIR "/docs/format.md", &len);
    CHECK(doc != NULL);
    if (!doc)
        return;
    for (int k = 0; k < IR_KIND_COUNT; k++) {
        char want[128];
        snprintf(want, sizeof want, "| `%s` |", ir_kind_name((enum ir_kind)k));
        CHECKF(strstr(doc, want) != NULL, "docs/format.md lacks kind %s", want);
        int n;
        const struct ir_field *f = ir_spec_fields((enum ir_kind)k, &n);
        /* the kind's row in the docs' table lists its fields, in table order */
        const char *row = strstr(doc, want);
        const char *eol = row ? strchr(row, '\n') : NULL;
        if (row)
            row += strlen(want);
        for (int i = 0; row && eol && i < n; i++) {
            snprintf(want, sizeof want, "`%s`", f[i].name);
            const char *hit = strstr(row, want);
            CHECKF(hit && hit < eol, "docs/format.md: kind %s lacks field %s", ir_kind_name((enum ir_kind)k),
                   f[i].name);
            if (hit)
                row = hit + strlen(want);
        }
    }
    free(doc);
}

/* A file with no tensor and no op (nothing, comments, a graph line alone) is refused by the readers of graph files
 * ("file:1:1: empty graph") unless asked; the text parsers read it, and ir_graph_empty says what it is. */
static void test_empty(void)
{
    static const char *const texts[] = {"", "\n\n", "# only a comment\n", "graph e family=llama mode=decode\n"};
    char path[256], err[IR_ERR_LEN];
    snprintf(path, sizeof path, "/tmp/fusecheck-test-format-empty-%ld.fc", (long)getpid());
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        FILE *f = fopen(path, "w");
        CHECK(f && fputs(texts[i], f) >= 0 && fclose(f) == 0);
        err[0] = '\0';
        struct ir_graph *g = ir_parse_file(path, err);
        char want[300];
        snprintf(want, sizeof want, "%s:1:1: empty graph", path);
        CHECKF(g == NULL && strncmp(err, want, strlen(want)) == 0, "case %zu: %s", i, err);
        ir_graph_free(g);
        g = ir_parse_file_opt(path, true, err);
        CHECKF(g && ir_graph_empty(g) && ir_refuse_empty(g, "x.fc", err) == -1 &&
                   strcmp(err, "x.fc:1:1: empty graph: no tensor and no op") == 0, "case %zu allowed: %s", i, err);
        ir_graph_free(g);
        g = ir_parse(texts[i], strlen(texts[i]), "t.fc", err);
        CHECKF(g && ir_graph_empty(g), "case %zu as text", i);
        ir_graph_free(g);
    }
    remove(path);
    const char *one = "tensor a f32 1x8 input\n";
    struct ir_graph *g = ir_parse(one, strlen(one), "t.fc", err);
    CHECK(g && !ir_graph_empty(g) && ir_refuse_empty(g, "t.fc", err) == 0);
    ir_graph_free(g);
}

int main(void)
{
    test_headers();
    test_roundtrip();
    test_moe_routing_text();
    test_rope_scaling_text();
    test_floats();
    test_lenient();
    test_errors();
    test_huge();
    test_random();
    test_files();
    test_validated();
    test_docs();
    test_empty();
    return check_done("format");
}
