/* shim/quantized.c — the reference a quantizing chip's rewritten graph is held to, built from the chip's own
 * `activation` answers on the lifted graph alone.
 *
 * The optimizer's numerics fold inserts (and folds) the quantize ops a chip's products read; a reference built by
 * that same pass would change with it, so a fold quantizing in the wrong number of words, or the wrong operand,
 * would pass `diff`. This builder shares no code with the fold: for every lifted op and every operand the chip says
 * it reads quantized, one quantize of exactly what the op reads goes just before it, and the op reads that. */
#include "shim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many values op reads at operand k: a whole read takes its tensor; a strided read what the spec needs there
 * (a product's m rows of k, a mixture's one row of d), or -1 when that is not known. */
static int64_t read_len(const struct ir_graph *g, const struct ir_op *op, int k)
{
    if (!op->access[k].strided)
        return ir_tensor_len(g, op->ins[k]);
    if (op->sym != IR_SYM_PRIM || k != 0)
        return -1;
    if (op->spec.kind == IR_KIND_MATMUL)
        return op->spec.u.matmul.m * op->spec.u.matmul.k;
    if (op->spec.kind == IR_KIND_MOE)
        return op->spec.u.moe.d;
    return -1;
}

/* A fresh activation of n values (one row) for x quantized in `words` words, named after x; IR_NONE when no name is
 * free. */
static ir_tid quantized_tensor(struct ir_graph *g, ir_tid x, int words, int64_t n)
{
    char name[IR_MAX_NAME + 1];
    int keep = (int)strlen(g->tensors[x].name);
    if (keep > IR_MAX_NAME - 24)
        keep = IR_MAX_NAME - 24;
    for (int k = 1; k < 1000; k++) {
        snprintf(name, sizeof name, "%.*s.ref%d.w%d", keep, g->tensors[x].name, k, words);
        if (ir_tensor_find(g, name, strlen(name)) == IR_NONE)
            return ir_tensor_add(g, name, IR_ELEM_F32, 1, n, IR_ROLE_ACTIVATION);
    }
    return IR_NONE;
}

/* Push q = quantize(x read as op reads operand k) in `words` words, covering what op covers. */
static void push_quantize(struct ir_graph *g, const struct ir_op *op, int k, ir_tid q, int words)
{
    struct ir_op qz = ir_op_prim(IR_KIND_MATMUL, &op->ins[k], 1, q);
    memset(&qz.spec, 0, sizeof qz.spec);
    qz.sym = IR_SYM_QUANT;
    qz.quant_words = words;
    qz.access[0] = op->access[k];
    ir_op_set_covers(&qz, op->covers, op->ncovers);
    ir_graph_push(g, qz);
}

/* Quantize what lifted op i reads where the shim says so, then push the op reading the quantized values. 0, or 1
 * with err. */
static int quantize_reads(struct ir_graph *c, const struct ir_graph *g, int32_t i, const struct shim *shim,
                          char err[IR_ERR_LEN])
{
    const struct ir_op *op = &g->ops[i];
    struct ir_op copy = ir_op_clone(op);
    for (int32_t k = 0; k < op->nins; k++) {
        int words = shim->activation(shim, op, (int)k, g);
        if (words == 0)
            continue;
        int64_t n = read_len(g, op, (int)k);
        if (words != 1 && words != 2) {
            snprintf(err, IR_ERR_LEN, "op %d: the chip reads operand %d in %d words (1 or 2)", (int)i, (int)k, words);
        } else if (op->sym != IR_SYM_PRIM) {
            snprintf(err, IR_ERR_LEN, "op %d: the graph is not lifted (a %s op)", (int)i,
                     op->sym == IR_SYM_FUSED ? "fused" : "view or quantize");
        } else if (n <= 0 || n % 32 != 0) {
            snprintf(err, IR_ERR_LEN, "op %d: the chip reads operand %d ('%s') quantized, but it is not whole "
                     "32-value blocks", (int)i, (int)k, g->tensors[op->ins[k]].name);
        } else {
            ir_tid q = quantized_tensor(c, op->ins[k], words, n);
            if (q != IR_NONE) {
                push_quantize(c, op, (int)k, q, words);
                copy.ins[k] = q;
                copy.access[k] = (struct ir_access){0};
                continue;
            }
            snprintf(err, IR_ERR_LEN, "op %d: no free name for a quantized '%s'", (int)i, g->tensors[op->ins[k]].name);
        }
        ir_op_free(&copy);
        return 1;
    }
    ir_graph_push(c, copy);
    return 0;
}

struct ir_graph *shim_quantized_reference(const struct ir_graph *g, const struct shim *shim, char err[IR_ERR_LEN])
{
    struct ir_graph *c = ir_graph_clone_tensors(g);
    if (!c) {
        snprintf(err, IR_ERR_LEN, "out of memory");
        return NULL;
    }
    for (int32_t i = 0; i < g->nops; i++)
        if (quantize_reads(c, g, i, shim, err)) {
            ir_graph_free(c);
            return NULL;
        }
    return c;
}

/* ── Quantized values against the mode's bound ───────────────────────────────────────────────────────────── */

/* The largest magnitude among n values. */
static double block_max(const float *x, int64_t n)
{
    double a = 0.0;
    for (int64_t i = 0; i < n; i++)
        a = fmax(a, fabs((double)x[i]));
    return a;
}

/* The values each quantize op read when it ran (its source may be written again later: a table's next rows). */
struct snapshot {
    const struct ir_op *q;
    float *x;
    int64_t n;
};
struct snapshots {
    struct snapshot *s;
    int32_t n, cap;
};

/* Evaluator hook: before a quantize op runs, keep a copy of the values it reads; every leaf is still the
 * evaluator's to compute. */
static int snap_quantize(void *ctx, struct ir_leaf *l)
{
    const struct ir_op *q = ir_leaf_op(l);
    if (q->sym != IR_SYM_QUANT || q->nins != 1)
        return 1;
    struct snapshots *ss = ctx;
    int64_t n = ir_tensor_len(ir_leaf_graph(l), q->out);
    const float *x = ir_leaf_arg(l, 0, n);
    if (!x)
        return -1;
    if (ss->n == ss->cap) {
        ss->cap = ss->cap ? 2 * ss->cap : 16;
        struct snapshot *grown = realloc(ss->s, sizeof *grown * (size_t)ss->cap);
        if (!grown)
            return ir_leaf_fail(l, "out of memory keeping a quantize's input");
        ss->s = grown;
    }
    float *copy = malloc(sizeof *copy * (size_t)(n ? n : 1));
    if (!copy)
        return ir_leaf_fail(l, "out of memory keeping a quantize's input");
    memcpy(copy, x, sizeof *copy * (size_t)n);
    ss->s[ss->n++] = (struct snapshot){q, copy, n};
    return 1;
}

/* Hold one quantize's values y to the bound of the n values x it read, block by block; the first excess to *e.
 * False when one is out of bound. */
static bool quantize_within(const struct snapshot *sn, const float *y, double denom, int64_t *compared,
                            struct shim_quant_excess *e)
{
    for (int64_t b = 0; b < sn->n; b += 32) {
        int64_t m = sn->n - b < 32 ? sn->n - b : 32;
        const float *x = sn->x + b;
        double a = block_max(x, m);
        for (int64_t i = 0; i < m; i++) {
            /* the mode's bound, and the f32 roundings of the scale, the product and (two words) the sum */
            double bound = a / denom + a * 0x1p-21 + fabs((double)x[i]) * 0x1p-23;
            (*compared)++;
            if (fabs((double)y[b + i] - (double)x[i]) > bound) {
                *e = (struct shim_quant_excess){sn->q->out, b + i, x[i], y[b + i], bound};
                return false;
            }
        }
    }
    return true;
}

int shim_quantized_eval(const struct ir_graph *g, struct ir_values *v, int words, bool *within,
                        struct shim_quant_excess *excess, int64_t *compared, char err[IR_ERR_LEN])
{
    struct snapshots ss = {0};
    struct ir_eval_hooks hooks = {snap_quantize, NULL, &ss};
    int rc = ir_eval_ops_hooked(g, g->ops, g->nops, v, words ? &hooks : NULL, err);
    double denom = words == 2 ? 254.0 * 254.0 : 254.0;
    int64_t count = 0;
    *within = true;
    for (int32_t i = 0; rc == 0 && *within && i < ss.n; i++) {
        const float *y = ir_values_cdata(v, ss.s[i].q->out);
        *within = !y || quantize_within(&ss.s[i], y, denom, &count, excess);
    }
    for (int32_t i = 0; i < ss.n; i++)
        free(ss.s[i].x);
    free(ss.s);
    if (compared)
        *compared = count;
    return rc;
}
