/* ir/eval_values.c — the evaluator's values: their plan and storage (plain f32 values, or a constant's checkpoint
 * rows), the accessors of ir.h, and liveness: each activation freed after its last reader and given back, zeroed,
 * when the next evaluation starts. Seeding them is ir/eval_seed.c's. */
#include "eval_values.h"

#include <stdio.h>
#include <stdlib.h>

int64_t ir_values_plan_bytes(const struct ir_graph *g)
{
    int64_t total = 0;
    for (int32_t i = 0; i < g->ntensors; i++) {
        total = addc(total, tensor_bytes(&g->tensors[i]));
        if (total < 0)
            return -1;
    }
    return total;
}

void ir_values_quantize_activations(struct ir_values *v, bool on)
{
    v->q8_activations = on;
}

void ir_values_free_dead(struct ir_values *v, bool on)
{
    v->free_dead = on;
}

void ir_values_free(struct ir_values *v)
{
    if (!v)
        return;
    for (int32_t i = 0; i < v->n; i++) {
        if (!v->t[i].f_borrowed)
            free(v->t[i].f);
        if (!v->t[i].q.borrowed) {
            free(v->t[i].q.bytes);
            ir_eval_lazy_free(v->t[i].q.lazy);
        }
    }
    free(v->t);
    free(v);
}

float *ir_values_data(struct ir_values *v, ir_tid t)
{
    return v && t >= 0 && t < v->n ? v->t[t].f : NULL;
}

const float *ir_values_cdata(const struct ir_values *v, ir_tid t)
{
    return v && t >= 0 && t < v->n ? v->t[t].f : NULL;
}

size_t ir_values_bytes(const struct ir_values *v)
{
    return v ? v->bytes : 0;
}

bool ir_values_checkpoint(const struct ir_values *v, ir_tid t, struct ir_ckpt_rows *out)
{
    if (!v || t < 0 || t >= v->n || v->t[t].f)
        return false;
    const struct ckpt *q = &v->t[t].q;
    if (ir_eval_lazy_all(q))
        return false;
    *out = (struct ir_ckpt_rows){q->bytes, q->format, q->transposed, q->srows, q->slen, q->row_bytes};
    return true;
}

/* ── Liveness: an activation freed after its last reader ─────────────────────────────────────────────────── */

/* Note top-level op i as a user of every tensor op (and its parts) names. */
static void note_uses(const struct ir_graph *g, const struct ir_op *op, int32_t i, int32_t *last, int depth)
{
    const ir_tid named[3] = {op->out, op->dst.buf, op->dst.row == IR_ROWSEL_PARAM ? op->dst.row_param : IR_NONE};
    for (int k = 0; k < 3; k++)
        if (named[k] >= 0 && named[k] < g->ntensors)
            last[named[k]] = i;
    for (int32_t k = 0; k < op->nins; k++)
        if (op->ins && op->ins[k] >= 0 && op->ins[k] < g->ntensors)
            last[op->ins[k]] = i;
    for (int32_t p = 0; depth < IR_MAX_DEPTH && op->sym == IR_SYM_FUSED && p < op->nparts; p++)
        note_uses(g, &op->parts[p], i, last, depth + 1);
}

bool ir_eval_last_uses_of(const struct ir_graph *g, const struct ir_op *ops, int32_t n,
                          struct ir_eval_last_uses *u)
{
    int32_t *last = malloc(sizeof(int32_t) * (size_t)max64(g->ntensors, 1));
    u->first = malloc(sizeof(int32_t) * (size_t)max64(n, 1));
    u->next = malloc(sizeof(int32_t) * (size_t)max64(g->ntensors, 1));
    if (!last || !u->first || !u->next) {
        free(last);
        free(u->first);
        free(u->next);
        return false;
    }
    for (int32_t t = 0; t < g->ntensors; t++)
        last[t] = -1;
    for (int32_t i = 0; i < n; i++) {
        u->first[i] = -1;
        note_uses(g, &ops[i], i, last, 0);
    }
    for (int32_t t = g->ntensors - 1; t >= 0; t--) {
        u->next[t] = last[t] >= 0 ? u->first[last[t]] : -1;
        if (last[t] >= 0)
            u->first[last[t]] = t;
    }
    free(last);
    return true;
}

/* Whether tensor t's values may be freed once read for the last time: an activation the host neither reads after
 * the step (observed) nor keeps (carried), held in its own plain storage. */
static bool droppable(const struct ir_graph *g, const struct ir_values *v, ir_tid t)
{
    const struct ir_tensor *x = &g->tensors[t];
    return x->role == IR_ROLE_ACTIVATION && !x->observed && !x->carried && v->t[t].f && !v->t[t].f_borrowed;
}

void ir_eval_free_after(const struct ir_graph *g, struct ir_values *v, const struct ir_eval_last_uses *u,
                        int32_t i)
{
    for (int32_t t = u->first[i]; t >= 0; t = u->next[t])
        if (droppable(g, v, t)) {
            free(v->t[t].f);
            v->t[t].f = NULL;
            v->t[t].dead = true;
        }
}

int ir_eval_revive(const struct ir_graph *g, struct ir_values *v, char err[IR_ERR_LEN])
{
    for (int32_t t = 0; t < g->ntensors; t++) {
        if (!v->t[t].dead)
            continue;
        if (!(v->t[t].f = calloc((size_t)max64(v->t[t].len, 1), sizeof(float)))) {
            snprintf(err, IR_ERR_LEN, "tensor %s: out of memory for its values", g->tensors[t].name);
            return -1;
        }
        v->t[t].dead = false;
    }
    return 0;
}

