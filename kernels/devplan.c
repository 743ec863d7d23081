/* kernels/devplan.c — what the device runner decides before it touches a device: the --device value, the backend
 * name results.db keeps its rows under, and the device memory a graph's launches take (checked against the device's
 * free memory before any launch). Plain functions of their arguments, so they are tested without a GPU. */
#include "kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arith.inc"

int kernels_device_parse(const char *s, int *index, char err[IR_ERR_LEN])
{
    *index = -1;
    if (strcmp(s, "host") == 0)
        return 0;
    if (strcmp(s, "cuda") == 0) {
        *index = 0;
        return 0;
    }
    if (strncmp(s, "cuda:", 5) == 0 && s[5] >= '0' && s[5] <= '9') {
        char *end;
        long n = strtol(s + 5, &end, 10);
        if (!*end && n >= 0 && n < 1024) {
            *index = (int)n;
            return 0;
        }
    }
    snprintf(err, IR_ERR_LEN, "expected host, cuda or cuda:N (N a device index below 1024), got '%s'", s);
    return -1;
}

void kernels_device_backend_name(const char *name, int major, int minor, char *out, size_t cap)
{
    snprintf(out, cap, "cuda:%s:sm_%d%d", name, major, minor);
}

int64_t kernels_device_tensor_bytes(const struct ir_graph *g, ir_tid t)
{
    const struct ir_tensor *T = &g->tensors[t];
    if (T->checkpoint) {
        int64_t srows = T->transposed ? T->cols : T->rows, slen = T->transposed ? T->rows : T->cols;
        int64_t rb = ir_ggml_row_bytes(T->format, slen);
        if (rb > 0)
            return srows * rb;
    }
    return ir_tensor_len(g, t) * (int64_t)sizeof(float);
}

/* Whether op (or one of its parts) is a quantize writing tensor t. */
static bool quantizes(const struct ir_op *op, ir_tid t)
{
    if (op->sym == IR_SYM_QUANT)
        return op->out == t;
    for (int32_t k = 0; op->sym == IR_SYM_FUSED && k < op->nparts; k++)
        if (quantizes(&op->parts[k], t))
            return true;
    return false;
}

int64_t kernels_device_words_bytes(const struct ir_graph *g, ir_tid t)
{
    for (int32_t i = 0; i < g->nops; i++)
        if (quantizes(&g->ops[i], t))
            return (ir_tensor_len(g, t) + KA_QBLOCK - 1) / KA_QBLOCK * (int64_t)sizeof(struct ka_qblock);
    return 0;
}

/* The scratch one leaf (a primitive of a launch) takes on the device, beyond its operands and its result. */
static int64_t leaf_scratch(const struct kernels_point *p, const struct ir_op *op)
{
    if (op->sym != IR_SYM_PRIM)
        return 0;
    const struct ir_spec *s = &op->spec;
    switch (s->kind) {
    case IR_KIND_ATTENTION: { /* each head's chunks: their softmax states and accumulators */
        const struct ir_attention *a = &s->u.attention;
        return a->rows * a->h * kernels_attention_chunks(p, a) *
               ((int64_t)sizeof(struct ka_softmax) + a->vd * (int64_t)sizeof(float));
    }
    case IR_KIND_MOE: { /* router outputs, the kept experts and weights, their hidden rows */
        const struct ir_moe *m = &s->u.moe;
        return m->experts * (int64_t)sizeof(float) + m->k * (int64_t)(sizeof(int64_t) + sizeof(float)) +
               m->k * m->dff * (int64_t)sizeof(float);
    }
    case IR_KIND_ROWS_GATHER: return (int64_t)sizeof(int);
    default: return 0;
    }
}

/* The scratch of op's stages: its own as a leaf, or the largest of its parts' (a fused launch's stages run one
 * after another, each with its own scratch; parts may be fused ops themselves). */
static int64_t op_scratch(const struct kernels_point *p, const struct ir_op *op)
{
    if (op->sym != IR_SYM_FUSED)
        return leaf_scratch(p, op);
    int64_t most = 0;
    for (int32_t k = 0; k < op->nparts; k++) {
        int64_t s = op_scratch(p, &op->parts[k]);
        most = s > most ? s : most;
    }
    return most;
}

int64_t kernels_device_scratch(const struct kernels_point *p, const struct ir_graph *g, int32_t op)
{
    return op >= 0 && op < g->nops ? op_scratch(p, &g->ops[op]) : 0;
}

int64_t kernels_device_need(const struct kernels_point *p, const struct ir_graph *g)
{
    int64_t bytes = 0, scratch = 0;
    for (ir_tid t = 0; t < g->ntensors; t++)
        bytes += kernels_device_tensor_bytes(g, t) + kernels_device_words_bytes(g, t);
    for (int32_t i = 0; i < g->nops; i++) { /* the launches run in turn: the largest scratch is what it takes */
        int64_t s = kernels_device_scratch(p, g, i);
        scratch = s > scratch ? s : scratch;
    }
    return bytes + scratch;
}
