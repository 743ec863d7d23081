/* kernels/devplan.c — what the device runner decides before it touches a device: the --device value, the backend
 * name results.db keeps its rows under, and the device memory a graph's launches take (checked against the device's
 * free memory before any launch). Plain functions of their arguments, so they are tested without a GPU. */
#include "kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arith.inc"
#include "operands.inc"

int kernels_device_parse(const char *s, int *index, char err[IR_ERR_LEN])
{
    *index = -1;
    if (strcmp(s, "host") == 0)
        return 0;
    if (strcmp(s, "sim") == 0) {
        *index = KERNELS_DEVICE_SIM;
        return 0;
    }
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
    snprintf(err, IR_ERR_LEN, "expected host, cuda or cuda:N (N a device index below 1024), or sim, got '%s'", s);
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

int64_t kernels_device_round(int64_t n)
{
    return n <= 0 ? 0 : (n + KERNELS_DEVICE_ALIGN - 1) / KERNELS_DEVICE_ALIGN * KERNELS_DEVICE_ALIGN;
}

/* Values every unit of a strided read of a tensor of len values gives (the evaluator's read of a table). */
static int64_t strided_all(const struct ir_strided *a, int64_t len)
{
    if (a->width <= 0 || a->offset < 0 || a->pitch < 0)
        return 0;
    int64_t first = a->offset + a->width;
    int64_t units = first > len ? 0 : a->pitch == 0 ? 1 : (len - first) / a->pitch + 1;
    return units * a->width;
}

/* The reads of a leaf: a primitive's plan (kernels/operands.inc), a view's table, a quantize's source. 0, or -1 when
 * the lane has none (nothing to size). */
static int leaf_plan(const struct ir_graph *g, const struct ir_op *op, struct ko_plan *p)
{
    char why[160];
    memset(p, 0, sizeof *p);
    if (op->sym == IR_SYM_VIEW) {
        ko_add(p, 0, KO_ALL, 0);
        return 0;
    }
    if (op->sym == IR_SYM_QUANT) {
        ko_add(p, 0, KO_ARG, op->out >= 0 && op->out < g->ntensors ? ir_tensor_len(g, op->out) : 0);
        return 0;
    }
    return ko_plan_of(op, p, why, sizeof why) == 0 ? 0 : -1;
}

/* The room a leaf's reads take on the device: a strided read's gather, and a checkpoint read as plain values
 * dequantized whole first (a matrix read whole in its block format takes none). */
static int64_t reads_scratch(const struct ir_graph *g, const struct ir_op *op)
{
    struct ko_plan p;
    int64_t bytes = 0;
    if (leaf_plan(g, op, &p))
        return 0;
    for (int k = 0; k < p.n; k++) {
        const struct ko_read *r = &p.at[k];
        if (r->use == KO_STATE || r->use == KO_ROW || r->i >= op->nins || op->ins[r->i] < 0 ||
            op->ins[r->i] >= g->ntensors)
            continue;
        const struct ir_tensor *T = &g->tensors[op->ins[r->i]];
        const struct ir_access *a = &op->access[r->i];
        int64_t len = ir_tensor_len(g, op->ins[r->i]);
        if (r->use == KO_MAT && !a->strided && T->checkpoint)
            continue;
        if (T->checkpoint)
            bytes += kernels_device_round(len * (int64_t)sizeof(float));
        if (a->strided)
            bytes += kernels_device_round((r->use == KO_ALL ? strided_all(&a->s, len) : r->n) * (int64_t)sizeof(float));
    }
    return bytes;
}

/* The room one leaf's kernels take beyond their operands and result (an attention's chunks, a mixture's routing). */
static int64_t kernel_scratch(const struct kernels_point *p, const struct ir_op *op)
{
    if (op->sym != IR_SYM_PRIM)
        return 0;
    const struct ir_spec *s = &op->spec;
    if (s->kind == IR_KIND_ATTENTION) { /* each head's chunks: their softmax states and accumulators */
        const struct ir_attention *a = &s->u.attention;
        int64_t blocks = a->rows * a->h * kernels_attention_chunks(p, a);
        return kernels_device_round(blocks * (int64_t)sizeof(struct ka_softmax)) +
               kernels_device_round(blocks * a->vd * (int64_t)sizeof(float));
    }
    if (s->kind == IR_KIND_MOE) { /* router outputs, the routing's room, the kept experts and weights, their hidden rows */
        const struct ir_moe *m = &s->u.moe;
        struct ka_routing rt = ko_routing(m, NULL);
        return kernels_device_round(m->experts * (int64_t)sizeof(float)) +
               kernels_device_round(ka_route_room(&rt) * (int64_t)sizeof(float)) +
               kernels_device_round(m->k * (int64_t)sizeof(int64_t)) + kernels_device_round(m->k * (int64_t)sizeof(float)) +
               kernels_device_round(m->k * m->dff * (int64_t)sizeof(float));
    }
    return 0;
}

/* The room a placement takes: a result placed into its own buffer is copied aside first. */
static int64_t place_scratch(const struct ir_graph *g, const struct ir_op *op)
{
    if (!ko_placed(op) || op->dst.buf != op->out || op->out < 0 || op->out >= g->ntensors)
        return 0;
    return kernels_device_round(ir_tensor_len(g, op->out) * (int64_t)sizeof(float));
}

/* The room of op's stages: a leaf's reads and kernels, then its placement (the room is reused: the stages run one
 * after another on one stream); a fused op's parts' largest and its own placement. */
static int64_t op_scratch(const struct kernels_point *p, const struct ir_graph *g, const struct ir_op *op)
{
    int64_t most = place_scratch(g, op);
    if (op->sym != IR_SYM_FUSED) {
        int64_t s = reads_scratch(g, op) + kernel_scratch(p, op);
        return s > most ? s : most;
    }
    if (ko_placed_by_part(op))
        most = 0;
    for (int32_t k = 0; k < op->nparts; k++) {
        int64_t s = op_scratch(p, g, &op->parts[k]);
        most = s > most ? s : most;
    }
    return most;
}

int64_t kernels_device_scratch(const struct kernels_point *p, const struct ir_graph *g, int32_t op)
{
    return op >= 0 && op < g->nops ? op_scratch(p, g, &g->ops[op]) : 0;
}

int64_t kernels_device_flags_bytes(const struct ir_graph *g)
{
    return kernels_device_round((g->nops > 0 ? g->nops : 1) * (int64_t)sizeof(int));
}

int64_t kernels_device_need(const struct kernels_point *p, const struct ir_graph *g)
{
    int64_t bytes = kernels_device_flags_bytes(g), scratch = 0;
    for (ir_tid t = 0; t < g->ntensors; t++)
        bytes += kernels_device_round(kernels_device_tensor_bytes(g, t)) +
                 kernels_device_round(kernels_device_words_bytes(g, t));
    for (int32_t i = 0; i < g->nops; i++) { /* the launches run in turn: the largest room is what they take */
        int64_t s = kernels_device_scratch(p, g, i);
        scratch = s > scratch ? s : scratch;
    }
    return bytes + scratch;
}

/* Whether tensor t's values are the host's to give (an input, a param, a constant), not computed in the step. */
static bool host_given(const struct ir_graph *g, ir_tid t)
{
    if (t < 0 || t >= g->ntensors)
        return false;
    enum ir_role r = g->tensors[t].role;
    return r == IR_ROLE_INPUT || r == IR_ROLE_PARAM || r == IR_ROLE_CONSTANT;
}

bool kernels_device_host_given(const struct ir_graph *g, ir_tid t) { return host_given(g, t); }
