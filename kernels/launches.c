/* kernels/launches.c — what a launch is: its kernel and the stages it runs, each with the variant of its numerics the
 * lane's operating point picks (a product's activation words and weight format, an attention's tiles). The list of
 * every launch the zoo emits (kernels/launches.txt, from `fusecheck launches`) is data the tests walk. */
#include "kernels.h"

#include <stdio.h>
#include <string.h>

const struct ir_op *kernels_quantize_of(const struct ir_graph *g, ir_tid t)
{
    for (int32_t i = 0; t != IR_NONE && i < g->nops; i++) {
        const struct ir_op *op = &g->ops[i];
        if (op->sym == IR_SYM_QUANT && op->out == t)
            return op;
        for (int32_t k = 0; op->sym == IR_SYM_FUSED && k < op->nparts; k++)
            if (op->parts[k].sym == IR_SYM_QUANT && op->parts[k].out == t)
                return &op->parts[k];
    }
    return NULL;
}

/* The int8 words tensor t of g is read in: those of the quantize that made it, else 0. */
static int words_of(const struct ir_graph *g, ir_tid t)
{
    const struct ir_op *q = kernels_quantize_of(g, t);
    return q ? q->quant_words : 0;
}

/* The format a weight operand is stored in ("f32" for plain values). */
static const char *format_of(const struct ir_graph *g, ir_tid t)
{
    const struct ir_tensor *T = &g->tensors[t];
    return T->checkpoint ? ir_format_name(T->format) : "f32";
}

/* Append one stage's name and variant to out. */
static void stage_name(const struct kernels_point *p, const struct ir_graph *g, const struct ir_op *leaf, char *out,
                       size_t cap)
{
    size_t n = strlen(out);
    const char *sep = n ? " " : "";
    if (leaf->sym == IR_SYM_QUANT) {
        snprintf(out + n, cap - n, "%squantize[x%d]", sep, (int)leaf->quant_words);
        return;
    }
    if (leaf->sym == IR_SYM_VIEW) {
        snprintf(out + n, cap - n, "%sview", sep);
        return;
    }
    const struct ir_spec *s = &leaf->spec;
    switch (s->kind) {
    case IR_KIND_MATMUL:
    case IR_KIND_HEAD_MATMUL:
        snprintf(out + n, cap - n, "%s%s[%s,%s%s]", sep, ir_kind_name(s->kind), format_of(g, leaf->ins[1]),
                 words_of(g, leaf->ins[0]) ? (words_of(g, leaf->ins[0]) == 2 ? "i8x2" : "i8") : "f32",
                 (s->kind == IR_KIND_MATMUL ? s->u.matmul.m : s->u.head_matmul.m) > KERNELS_GEMV_ROWS ? ",gemm" : "");
        return;
    case IR_KIND_MOE: {
        const struct ir_moe *m = &s->u.moe;
        snprintf(out + n, cap - n, "%smoe[%s,%s%s%s%s%s]", sep, format_of(g, leaf->ins[2]),
                 words_of(g, leaf->ins[0]) ? (words_of(g, leaf->ins[0]) == 2 ? "i8x2" : "i8") : "f32",
                 m->act != IR_MOE_SWIGLU ? "," : "", m->act != IR_MOE_SWIGLU ? ir_moeact_name(m->act) : "",
                 m->bias ? ",bias" : "", m->topk_softmax ? ",topk_softmax" : "");
        return;
    }
    case IR_KIND_ATTENTION: {
        enum kernels_mode m = kernels_mode(p->acts);
        bool tiles = kernels_attention_in_tiles(m, s->u.attention.rows, s->u.attention.hd, s->u.attention.vd);
        snprintf(out + n, cap - n, "%sattention[%s]", sep, !tiles ? "f32" : m == KERNELS_MODE_I8X2 ? "i8x2-tiles"
                                                                                                 : "f16-tiles");
        return;
    }
    default:
        snprintf(out + n, cap - n, "%s%s", sep, ir_kind_name(s->kind));
        return;
    }
}

/* Every leaf of op, in order, appended. */
static void stages_of(const struct kernels_point *p, const struct ir_graph *g, const struct ir_op *op, char *out,
                      size_t cap)
{
    if (op->sym != IR_SYM_FUSED) {
        stage_name(p, g, op, out, cap);
        return;
    }
    for (int32_t k = 0; k < op->nparts; k++)
        stages_of(p, g, &op->parts[k], out, cap);
}

/* Whether op (or a leaf within it) is a primitive the host lane has no stage for. */
static bool lacks_stage(const struct ir_op *op)
{
    if (op->sym == IR_SYM_PRIM)
        return !kernels_lane_has_stage(op->spec.kind);
    for (int32_t k = 0; op->sym == IR_SYM_FUSED && k < op->nparts; k++)
        if (lacks_stage(&op->parts[k]))
            return true;
    return false;
}

bool kernels_launch_signature(const struct kernels_point *p, const struct ir_graph *g, int32_t op, char *out,
                              size_t cap)
{
    const struct ir_op *o = &g->ops[op];
    snprintf(out, cap, "%s:", kernels_launch_kernel(o));
    size_t n = strlen(out);
    char stages[1024] = "";
    stages_of(p, g, o, stages, sizeof stages);
    snprintf(out + n, cap - n, " %s", stages);
    return !lacks_stage(o);
}
