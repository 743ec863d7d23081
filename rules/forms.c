/* rules/forms.c — what each op is, as the rules read it: norms, elementwise ops, products, rotations, slices,
 * convolutions, mixtures; the placements carried down to the parts; and the classes an op realizes. */
#include "rules.h"

#include <stdlib.h>
#include <string.h>

struct rules_weights rules_weights_of(const struct ir_graph *g, ir_tid w)
{
    struct rules_weights out = {RULES_W_NONE, IR_FMT_F32};
    if (w < 0 || w >= g->ntensors || g->tensors[w].role != IR_ROLE_CONSTANT)
        return out;
    out.kind = g->tensors[w].checkpoint ? RULES_W_ROWS : RULES_W_VALUES;
    out.format = g->tensors[w].checkpoint ? g->tensors[w].format : IR_FMT_F32;
    return out;
}

bool rules_weights_equal(struct rules_weights a, struct rules_weights b)
{
    return a.kind == b.kind && (a.kind != RULES_W_ROWS || a.format == b.format);
}

int rules_class(const struct ir_op *op) { return op->sym == IR_SYM_FUSED ? (int)op->cls : -1; }

const struct ir_spec *rules_prim(const struct ir_op *op) { return op->sym == IR_SYM_PRIM ? &op->spec : NULL; }

bool rules_is(const struct ir_op *op, enum ir_kind k) { return op->sym == IR_SYM_PRIM && op->spec.kind == k; }

/* Collect op's leaves into out (up to cap), counting all of them. */
static void collect_leaves(const struct ir_op *op, const struct ir_op **out, int32_t cap, int32_t *n)
{
    if (op->sym != IR_SYM_FUSED) {
        if (*n < cap)
            out[*n] = op;
        (*n)++;
        return;
    }
    for (int32_t i = 0; i < op->nparts; i++)
        collect_leaves(&op->parts[i], out, cap, n);
}

int32_t rules_leaves(const struct ir_op *op, const struct ir_op **out, int32_t cap)
{
    int32_t n = 0;
    collect_leaves(op, out, cap, &n);
    return n;
}

const struct ir_op *rules_first_leaf(const struct ir_op *op)
{
    while (op->sym == IR_SYM_FUSED && op->nparts > 0)
        op = &op->parts[0];
    return op->sym == IR_SYM_FUSED ? NULL : op;
}

const struct ir_op *rules_last_leaf(const struct ir_op *op)
{
    while (op->sym == IR_SYM_FUSED && op->nparts > 0)
        op = &op->parts[op->nparts - 1];
    return op->sym == IR_SYM_FUSED ? NULL : op;
}

/* The part an access describes, when strided. */
static void part_of(const struct ir_access *a, bool *has, struct ir_strided *part)
{
    *has = a->strided;
    if (a->strided)
        *part = a->s;
    else
        memset(part, 0, sizeof *part);
}

bool rules_plain_rms(const struct ir_op *op)
{
    return rules_is(op, IR_KIND_RMS_NORM) && op->spec.u.rms_norm.kind == IR_NORM_RMS && !op->spec.u.rms_norm.bias;
}

bool rules_norm(const struct ir_op *op, struct rules_norm_form *f)
{
    memset(f, 0, sizeof *f);
    const struct ir_op *spec_op = op;
    if (op->sym == IR_SYM_FUSED) {
        if (op->cls != IR_CLASS_ADD_NORM && op->cls != IR_CLASS_NORM_THEN_ADD)
            return false;
        spec_op = rules_last_leaf(op);
        if (!spec_op || !rules_plain_rms(spec_op) || op->nins < 2)
            return false;
    } else if (!rules_plain_rms(op)) {
        return false;
    }
    const struct ir_rms_norm *n = &spec_op->spec.u.rms_norm;
    f->out = op->out;
    f->own = ir_dst_is_own(&op->dst);
    f->rows = n->rows;
    f->cols = n->cols;
    f->eps = n->eps;
    part_of(&op->access[0], &f->has_part, &f->part);
    f->x = op->ins[0];
    if (op->sym == IR_SYM_FUSED) {
        /* An add-then-norm's two summands; a sandwich's kept side and its inner norm's input. */
        f->w = n->weight && spec_op->nins > 1 ? spec_op->ins[1] : IR_NONE;
        f->add = op->ins[1];
        f->pre = op->cls == IR_CLASS_NORM_THEN_ADD;
        f->sum = op->nkeeps > 0;
        return true;
    }
    int k = 1;
    f->w = IR_NONE;
    f->add = IR_NONE;
    if (n->weight && k < op->nins)
        f->w = op->ins[k++];
    if (n->residual && k < op->nins)
        f->add = op->ins[k];
    return true;
}

int rules_activation(const struct ir_op *op)
{
    static const enum ir_kind acts[] = {IR_KIND_SILU, IR_KIND_SIGMOID, IR_KIND_GELU};
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
        if (rules_is(op, acts[i]))
            return (int)acts[i];
    return -1;
}

bool rules_binary(const struct ir_op *op, struct rules_binary_form *f)
{
    memset(f, 0, sizeof *f);
    if (!ir_dst_is_own(&op->dst) || op->nins < 2)
        return false;
    const struct ir_op *ew = op;
    if (op->sym == IR_SYM_FUSED) {
        if (op->cls != IR_CLASS_GLU_ACT_MUL)
            return false;
        const struct ir_op *first = rules_first_leaf(op);
        int act = first ? rules_activation(first) : -1;
        ew = rules_last_leaf(op);
        if (act < 0 || !ew || !rules_is(ew, IR_KIND_ELEMENTWISE))
            return false;
        f->gated = true;
        f->gate = (enum ir_kind)act;
    } else if (!rules_is(op, IR_KIND_ELEMENTWISE)) {
        return false;
    }
    f->op = ew->spec.u.elementwise.op;
    f->row = ew->spec.u.elementwise.row;
    f->n = ew->spec.u.elementwise.n;
    f->a = op->ins[0];
    f->b = op->ins[1];
    f->out = op->out;
    return true;
}

bool rules_gemv(const struct ir_op *op, const struct ir_graph *g, struct rules_gemv_form *f)
{
    memset(f, 0, sizeof *f);
    const struct ir_op *mm = op;
    f->bias = IR_NONE;
    if (op->sym == IR_SYM_FUSED) {
        if (op->cls != IR_CLASS_GEMM_BIAS || op->nins < 3)
            return false;
        mm = rules_first_leaf(op);
        f->bias = op->ins[2];
    }
    if (!mm || !rules_is(mm, IR_KIND_MATMUL) || op->nins < 2)
        return false;
    f->x = op->ins[0];
    f->w = op->ins[1];
    f->weights = rules_weights_of(g, f->w);
    if (f->weights.kind == RULES_W_NONE)
        return false;
    f->dst = op->dst;
    f->k = mm->spec.u.matmul.k;
    f->n = mm->spec.u.matmul.n;
    f->m = mm->spec.u.matmul.m;
    return true;
}

bool rules_rope(const struct ir_op *op, struct rules_rope_form *f)
{
    memset(f, 0, sizeof *f);
    const struct ir_op *ro = op;
    int at = 0;
    f->norm_w = IR_NONE;
    if (op->sym == IR_SYM_FUSED) {
        if (op->cls != IR_CLASS_QK_NORM_ROPE)
            return false;
        const struct ir_op *n = rules_first_leaf(op);
        ro = rules_last_leaf(op);
        if (!n || !rules_plain_rms(n) || !ro || op->nins < 2)
            return false;
        f->normed = true;
        f->norm_w = op->ins[1];
        f->norm_eps = n->spec.u.rms_norm.eps;
        at = 1;
    }
    if (!ro || !rules_is(ro, IR_KIND_ROPE) || op->nins < at + 3)
        return false;
    const struct ir_rope *s = &ro->spec.u.rope;
    f->x = op->ins[0];
    part_of(&op->access[0], &f->has_part, &f->part);
    f->cos = op->ins[at + 1];
    f->sin = op->ins[at + 2];
    f->pos = s->pos.kind == IR_RIDX_NAMED && op->nins > at + 3 ? op->ins[at + 3] : IR_NONE;
    f->dst = op->dst;
    f->heads = s->h;
    f->per_row = s->h / (s->rows > 0 ? s->rows : 1);
    f->hd = s->hd;
    f->half = s->half;
    f->adjacent = s->adjacent;
    f->theta = ir_rope_theta(s);
    return true;
}

bool rules_slice(const struct ir_op *op, struct rules_slice_form *f)
{
    memset(f, 0, sizeof *f);
    if (!ir_dst_is_own(&op->dst) || op->nins < 1)
        return false;
    if (rules_is(op, IR_KIND_HEAD_SLICE)) {
        const struct ir_head_slice *h = &op->spec.u.head_slice;
        if (h->every <= 0)
            return false;
        *f = (struct rules_slice_form){op->ins[0], op->out, h->n / h->every, h->every, h->from, h->width};
        return true;
    }
    if (rules_is(op, IR_KIND_ROW_GATHER) && op->spec.u.row_gather.index.kind == IR_RIDX_LITERAL) {
        const struct ir_row_gather *r = &op->spec.u.row_gather;
        *f = (struct rules_slice_form){op->ins[0], op->out, 1, r->rows * r->cols, (r->index.literal - 1) * r->cols,
                                       r->cols};
        return true;
    }
    return false;
}

bool rules_unit_input(const struct ir_op *op, ir_tid *x, int64_t *units, int64_t *width)
{
    struct rules_norm_form n;
    struct rules_rope_form ro;
    if (rules_norm(op, &n)) {
        *x = n.x;
        *units = n.rows;
        *width = n.cols;
        return !n.has_part && n.add != n.x;
    }
    if (rules_rope(op, &ro)) {
        *x = ro.x;
        *units = ro.heads;
        *width = ro.hd;
        return !ro.has_part;
    }
    if (rules_is(op, IR_KIND_HEAD_MATMUL) && !op->access[0].strided) {
        const struct ir_head_matmul *m = &op->spec.u.head_matmul;
        *x = op->ins[0];
        *units = m->m * m->heads;
        *width = m->a;
        return true;
    }
    return false;
}

bool rules_unit_output(const struct ir_op *op, int64_t *units, int64_t *width)
{
    struct rules_norm_form n;
    struct rules_rope_form ro;
    if (rules_norm(op, &n)) {
        *units = n.rows;
        *width = n.cols;
        return true;
    }
    if (rules_rope(op, &ro)) {
        *units = ro.heads;
        *width = ro.hd;
        return true;
    }
    if (rules_is(op, IR_KIND_HEAD_MATMUL)) {
        *units = op->spec.u.head_matmul.m * op->spec.u.head_matmul.heads;
        *width = op->spec.u.head_matmul.b;
        return true;
    }
    return false;
}

bool rules_written(const struct ir_op *op, const struct ir_graph *g, int64_t *elems, int64_t *row)
{
    struct rules_gemv_form p;
    struct rules_rope_form ro;
    struct rules_norm_form n;
    if (rules_gemv(op, g, &p)) {
        *elems = p.n * p.m;
        *row = p.n;
    } else if (rules_rope(op, &ro)) {
        *elems = ro.heads * ro.hd;
        *row = ro.per_row * ro.hd;
    } else if (rules_norm(op, &n)) {
        *elems = n.rows * n.cols;
        *row = n.cols;
    } else if (rules_is(op, IR_KIND_MOE)) {
        *elems = *row = op->spec.u.moe.d;
    } else if (rules_is(op, IR_KIND_JOIN)) {
        const struct ir_join *j = &op->spec.u.join;
        *elems = j->rows * (j->wa + j->wb);
        *row = j->wa + j->wb;
    } else if (rules_is(op, IR_KIND_HEAD_MATMUL)) {
        const struct ir_head_matmul *m = &op->spec.u.head_matmul;
        *elems = m->m * m->heads * m->b;
        *row = m->heads * m->b;
    } else if (rules_class(op) == IR_CLASS_SHARED_EXPERT_FUSION || rules_class(op) == IR_CLASS_MOE_TOKEN_SORT) {
        *elems = ir_tensor_len(g, op->out);
        *row = g->tensors[op->out].cols;
    } else {
        return false;
    }
    return true;
}

bool rules_conv(const struct ir_op *op, struct rules_conv_form *f)
{
    memset(f, 0, sizeof *f);
    const struct ir_op *c = op;
    if (op->sym == IR_SYM_FUSED) {
        if (op->cls != IR_CLASS_CONV_BIAS_SILU && op->cls != IR_CLASS_CONV_SILU_L2NORM)
            return false;
        c = rules_first_leaf(op);
        f->silu = true;
        if (op->cls == IR_CLASS_CONV_SILU_L2NORM) {
            const struct ir_op *l = rules_last_leaf(op);
            if (!l || !rules_is(l, IR_KIND_L2_NORM))
                return false;
            f->l2 = true;
            f->l2_cols = l->spec.u.l2_norm.cols;
            f->l2_eps = l->spec.u.l2_norm.eps;
        }
    }
    if (!c || !rules_is(c, IR_KIND_CAUSAL_CONV) || op->nins < 3)
        return false;
    f->x = op->ins[0];
    f->w = op->ins[1];
    f->ring = op->ins[2];
    f->y = op->out;
    f->chan = c->spec.u.causal_conv.chan;
    f->taps = c->spec.u.causal_conv.taps;
    f->rows = c->spec.u.causal_conv.rows;
    return true;
}

bool rules_moe(const struct ir_op *op, struct rules_moe_form *f)
{
    memset(f, 0, sizeof *f);
    const struct ir_op *m = NULL;
    f->rows = 1;
    if (rules_is(op, IR_KIND_MOE)) {
        m = op;
    } else if (rules_class(op) == IR_CLASS_SHARED_EXPERT_FUSION || rules_class(op) == IR_CLASS_MOE_TOKEN_SORT) {
        int32_t n = rules_leaves(op, NULL, 0), moes = 0;
        const struct ir_op **leaves = rules_xmalloc(sizeof *leaves * (size_t)(n ? n : 1));
        rules_leaves(op, leaves, n);
        for (int32_t i = 0; i < n; i++) /* every leaf: a chunk's rows can be thousands */
            if (rules_is(leaves[i], IR_KIND_MOE)) {
                if (!m)
                    m = leaves[i];
                moes++;
            }
        free(leaves);
        f->shared = op->cls == IR_CLASS_SHARED_EXPERT_FUSION;
        f->rows = f->shared ? 1 : moes;
    }
    if (!m || op->nins < 1)
        return false;
    f->x = op->ins[0];
    f->dst = op->dst;
    f->d = m->spec.u.moe.d;
    f->k = m->spec.u.moe.k;
    f->dff = m->spec.u.moe.dff;
    f->act = m->spec.u.moe.act;
    return true;
}

void rules_set_dst(struct ir_op *op, struct ir_dst dst)
{
    if (op->sym == IR_SYM_FUSED)
        for (int32_t i = op->nparts - 1; i >= 0; i--)
            if (op->parts[i].out == op->out) {
                rules_set_dst(&op->parts[i], dst);
                break;
            }
    op->dst = dst;
}

void rules_read_in_place(struct ir_op *op, ir_tid from, ir_tid to, struct ir_access access)
{
    for (int32_t i = 0; i < op->nparts; i++)
        rules_read_in_place(&op->parts[i], from, to, access);
    for (int32_t k = 0; k < op->nins; k++)
        if (op->ins[k] == from) {
            op->ins[k] = to;
            op->access[k] = access;
        }
}

/* Whether a fused op's products are two of one width (a gate and an up side by side). */
static bool two_of_one_width(const struct ir_op *op, const struct ir_graph *g)
{
    int64_t widths[3];
    int n = 0;
    for (int32_t i = 0; i < op->nparts && n < 3; i++) {
        struct rules_gemv_form p;
        if (rules_gemv(&op->parts[i], g, &p))
            widths[n++] = p.n;
    }
    return n == 2 && widths[0] == widths[1];
}

void rules_realizes(const struct ir_op *op, const struct ir_graph *g, bool out[IR_CLASS_COUNT])
{
    if (op->sym == IR_SYM_FUSED) {
        out[op->cls] = true;
        for (int32_t i = 0; i < op->nparts; i++)
            rules_realizes(&op->parts[i], g, out);
        if (op->cls == IR_CLASS_MOE_TOKEN_SORT)
            out[IR_CLASS_MOE_GATHER_IN_OPERAND] = true;
        if (op->cls == IR_CLASS_SHARED_EXPERT_FUSION)
            out[IR_CLASS_ROUTER_SHARED_GATE_MERGE] = true;
        if ((op->cls == IR_CLASS_MERGED_QKV && two_of_one_width(op, g)) || op->cls == IR_CLASS_GEMV_GATE_UP_GLU)
            out[IR_CLASS_MERGED_GATE_UP] = true;
    }
    for (int32_t k = 0; k < op->nins; k++)
        if (op->access[k].strided)
            out[rules_is(op, IR_KIND_ATTENTION) && k == 2 ? IR_CLASS_STRIDED_VALUES : IR_CLASS_STRIDED_READ] = true;
    if (op->dst.row != IR_ROWSEL_NONE) {
        struct rules_rope_form ro;
        out[IR_CLASS_ROW_WRITE] = true;
        if (rules_rope(op, &ro))
            out[ro.normed ? IR_CLASS_QK_NORM_ROPE_KV_APPEND : IR_CLASS_ROPE_KV_APPEND] = true;
    }
    if (op->dst.has_unit)
        out[IR_CLASS_JOIN_IN_PLACE] = true;
    if (rules_is(op, IR_KIND_GATED_DELTA))
        out[IR_CLASS_GATED_NORM] = true;
}
