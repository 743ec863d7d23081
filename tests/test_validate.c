/* tests/test_validate.c — the validator: a valid graph using every kind, views, quantize, fused blocks (kept
 * results, nesting, placements), row and unit destinations and state written in place passes; each invariant
 * broken once fails with the expected message naming the op (or tensor) and field. */
#include "check.h"
#include "ir/ir.h"

#include <math.h>
#include <stdlib.h>

/* ── Building by name ────────────────────────────────────────────────────────────────────────────────────── */

/* The id of tensor `name` in g. */
static ir_tid T(const struct ir_graph *g, const char *name)
{
    return ir_tensor_find(g, name, strlen(name));
}

/* A primitive op of kind k over the space-separated inputs `ins`, its result `out`. */
static struct ir_op P(const struct ir_graph *g, enum ir_kind k, const char *out, const char *ins)
{
    ir_tid ids[16];
    int32_t n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", ins);
    for (char *tok = strtok(buf, " "); tok && n < 16; tok = strtok(NULL, " "))
        ids[n++] = T(g, tok);
    return ir_op_prim(k, ids, n, T(g, out));
}

/* A fused op of class c over nparts parts (moved in), inputs by name, result out in its own buffer. */
static struct ir_op F(const struct ir_graph *g, enum ir_class c, const struct ir_op *parts, int32_t nparts,
                      const char *out, const char *ins)
{
    struct ir_op tmp = P(g, IR_KIND_SILU, out, ins);
    struct ir_op *owned = malloc(sizeof *owned * (size_t)(nparts ? nparts : 1));
    if (nparts)
        memcpy(owned, parts, sizeof *owned * (size_t)nparts);
    struct ir_op op = ir_op_fused(c, owned, nparts, tmp.ins, NULL, tmp.nins, tmp.out, ir_dst_own(tmp.out));
    ir_op_free(&tmp);
    return op;
}

/* A destination of rows of `buf` at the row param names, row_cols a row. */
static struct ir_dst row_param_dst(const struct ir_graph *g, const char *buf, const char *param, int64_t cols)
{
    struct ir_dst d = ir_dst_own(T(g, buf));
    d.row = IR_ROWSEL_PARAM;
    d.row_param = T(g, param);
    d.row_cols = cols;
    return d;
}

/* A destination of a unit part of every unit of `buf`. */
static struct ir_dst unit_dst(const struct ir_graph *g, const char *buf, int64_t pitch, int64_t offset, int64_t width)
{
    struct ir_dst d = ir_dst_own(T(g, buf));
    d.has_unit = true;
    d.unit = (struct ir_strided){pitch, offset, width};
    return d;
}

/* Land op's result at d, on the op and on the part that computes its result (as a rewrite does). */
static void set_dst(struct ir_op *op, struct ir_dst d)
{
    for (int32_t p = op->nparts - 1; p >= 0; p--)
        if (op->parts[p].out == op->out) {
            set_dst(&op->parts[p], d);
            break;
        }
    op->dst = d;
}

/* ── The valid graph ─────────────────────────────────────────────────────────────────────────────────────── */

/* The valid graph's ops, in order. */
enum {
    O_NORM, O_Q, O_K, O_QR, O_KR, O_SETK, O_SETV, O_ATT, O_R, O_HS, O_E, O_E2, O_EG, O_MO, O_DEC, O_GD, O_CC,
    O_SL, O_SG, O_GL, O_RL, O_SC, O_SW, O_HM, O_JN, O_L2, O_AM, O_SCP, O_VW, O_QZ, O_EBR, O_ADDNORM, O_SS, O_CHAIN,
    O_KR2, O_KVAPPEND, O_UA, O_UB, O_JR, O_NR, O_ATT2, O_HS2, O_COUNT
};

/* Declare the valid graph's tensors. */
static void add_tensors(struct ir_graph *g)
{
    static const struct {
        const char *name;
        enum ir_elem elem;
        int64_t rows, cols;
        enum ir_role role;
    } ts[] = {
        {"x", IR_ELEM_F32, 1, 8, IR_ROLE_INPUT},       {"xb", IR_ELEM_F32, 1, 32, IR_ROLE_INPUT},
        {"pos", IR_ELEM_I32, 1, 1, IR_ROLE_PARAM},     {"ids", IR_ELEM_I32, 1, 2, IR_ROLE_INPUT},
        {"bb", IR_ELEM_F32, 1, 2, IR_ROLE_INPUT},      {"aa", IR_ELEM_F32, 1, 2, IR_ROLE_INPUT},
        {"wq", IR_ELEM_F32, 8, 8, IR_ROLE_CONSTANT},   {"wk", IR_ELEM_F32, 8, 4, IR_ROLE_CONSTANT},
        {"normw", IR_ELEM_F32, 1, 8, IR_ROLE_CONSTANT}, {"cos", IR_ELEM_F32, 4, 2, IR_ROLE_CONSTANT},
        {"sin", IR_ELEM_F32, 4, 2, IR_ROLE_CONSTANT},  {"emb", IR_ELEM_F32, 16, 8, IR_ROLE_CONSTANT},
        {"router", IR_ELEM_F32, 8, 3, IR_ROLE_CONSTANT}, {"gate", IR_ELEM_F32, 8, 12, IR_ROLE_CONSTANT},
        {"up", IR_ELEM_F32, 8, 12, IR_ROLE_CONSTANT},  {"down", IR_ELEM_F32, 4, 24, IR_ROLE_CONSTANT},
        {"gw", IR_ELEM_F32, 1, 4, IR_ROLE_CONSTANT},   {"alog", IR_ELEM_F32, 1, 2, IR_ROLE_CONSTANT},
        {"dtb", IR_ELEM_F32, 1, 2, IR_ROLE_CONSTANT},  {"cw", IR_ELEM_F32, 8, 3, IR_ROLE_CONSTANT},
        {"hw", IR_ELEM_F32, 8, 3, IR_ROLE_CONSTANT},   {"sinks", IR_ELEM_F32, 1, 2, IR_ROLE_CONSTANT},
        {"wck", IR_ELEM_F32, 64, 32, IR_ROLE_CONSTANT},
        {"kc", IR_ELEM_F32, 4, 4, IR_ROLE_STATE},      {"vc", IR_ELEM_F32, 4, 4, IR_ROLE_STATE},
        {"st", IR_ELEM_F32, 4, 8, IR_ROLE_STATE},      {"ring", IR_ELEM_F32, 2, 8, IR_ROLE_STATE},
        {"n", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},  {"q", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},
        {"k", IR_ELEM_F32, 1, 4, IR_ROLE_ACTIVATION},  {"qr", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},
        {"kr", IR_ELEM_F32, 1, 4, IR_ROLE_ACTIVATION}, {"att", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},
        {"r", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},  {"hs", IR_ELEM_F32, 1, 4, IR_ROLE_ACTIVATION},
        {"e", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},  {"e2", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},
        {"eg", IR_ELEM_F32, 2, 8, IR_ROLE_ACTIVATION}, {"mo", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},
        {"dec", IR_ELEM_F32, 1, 2, IR_ROLE_ACTIVATION}, {"gd", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},
        {"cc", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION}, {"sl", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},
        {"sg", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION}, {"gl", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},
        {"rl", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION}, {"sc", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},
        {"sw", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION}, {"hm", IR_ELEM_F32, 1, 6, IR_ROLE_ACTIVATION},
        {"jn", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION}, {"l2", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},
        {"am", IR_ELEM_I32, 1, 1, IR_ROLE_ACTIVATION}, {"scp", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},
        {"vw", IR_ELEM_F32, 1, 4, IR_ROLE_ACTIVATION}, {"qz", IR_ELEM_F32, 1, 32, IR_ROLE_ACTIVATION},
        {"ebr", IR_ELEM_F32, 2, 8, IR_ROLE_ACTIVATION}, {"s", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},
        {"ns", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION}, {"ss", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},
        {"t1", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION}, {"t2", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},
        {"t3", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION}, {"kr2", IR_ELEM_F32, 1, 4, IR_ROLE_ACTIVATION},
        {"nk", IR_ELEM_F32, 1, 4, IR_ROLE_ACTIVATION}, {"rk", IR_ELEM_F32, 1, 4, IR_ROLE_ACTIVATION},
        {"ua", IR_ELEM_F32, 1, 4, IR_ROLE_ACTIVATION}, {"ub", IR_ELEM_F32, 1, 4, IR_ROLE_ACTIVATION},
        {"jy", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION}, {"jr", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},
        {"nr", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION}, {"att2", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION},
        {"hs2", IR_ELEM_F32, 1, 4, IR_ROLE_ACTIVATION},
    };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        ir_tensor_add(g, ts[i].name, ts[i].elem, ts[i].rows, ts[i].cols, ts[i].role);
    g->tensors[T(g, "wck")].checkpoint = true;
    g->tensors[T(g, "wck")].format = IR_FMT_Q8_0;
    g->tensors[T(g, "kc")].carried = g->tensors[T(g, "vc")].carried = true;
    g->tensors[T(g, "st")].carried = g->tensors[T(g, "ring")].carried = true;
    g->tensors[T(g, "jr")].observed = g->tensors[T(g, "am")].observed = true;
}

/* How many ops the builder pushed at another index than their enum names. */
static int misplaced;

/* Push op, counting it when it does not land at the index the enum names. */
static void push(struct ir_graph *g, struct ir_op op, int at)
{
    misplaced += ir_graph_push(g, op) != at;
}

/* A rope of h heads of 4 (rotating 2 pairs) at the named position. */
static struct ir_op rope(const struct ir_graph *g, const char *out, const char *x, int64_t h)
{
    char ins[64];
    snprintf(ins, sizeof ins, "%s cos sin pos", x);
    struct ir_op op = P(g, IR_KIND_ROPE, out, ins);
    op.spec.u.rope = (struct ir_rope){h, 4, 2, 1, {IR_RIDX_NAMED, 0}, {false, 0.0}, false, {0}};
    return op;
}

/* A unary op of kind k over n values. */
static struct ir_op unary(const struct ir_graph *g, enum ir_kind k, const char *out, const char *x, int64_t n)
{
    struct ir_op op = P(g, k, out, x);
    op.spec.u.unary.n = n;
    return op;
}

/* An elementwise op over n values (a row broadcast when row > 0). */
static struct ir_op ew(const struct ir_graph *g, enum ir_ewop o, const char *out, const char *ins, int64_t n,
                       int64_t row)
{
    struct ir_op op = P(g, IR_KIND_ELEMENTWISE, out, ins);
    op.spec.u.elementwise = (struct ir_elementwise){o, n, row};
    return op;
}

/* An RMS norm of rows × cols, with a weight and a residual as the inputs say. */
static struct ir_op norm(const struct ir_graph *g, const char *out, const char *ins, int64_t cols, bool w, bool res)
{
    struct ir_op op = P(g, IR_KIND_RMS_NORM, out, ins);
    op.spec.u.rms_norm = (struct ir_rms_norm){1, cols, 1e-5, w, 0.0, res, IR_NORM_RMS, false};
    return op;
}

/* The first half of the valid graph: projections, ropes, caches, attention and the gathers. */
static void build_front(struct ir_graph *g)
{
    push(g, norm(g, "n", "x normw", 8, true, false), O_NORM);
    struct ir_op op = P(g, IR_KIND_MATMUL, "q", "n wq");
    op.spec.u.matmul = (struct ir_matmul){1, 8, 8};
    push(g, op, O_Q);
    op = P(g, IR_KIND_MATMUL, "k", "n wk");
    op.spec.u.matmul = (struct ir_matmul){1, 8, 4};
    push(g, op, O_K);
    push(g, rope(g, "qr", "q", 2), O_QR);
    push(g, rope(g, "kr", "k", 1), O_KR);
    op = P(g, IR_KIND_SET_ROW, "kc", "kc kr pos");
    op.spec.u.set_row = (struct ir_set_row){4, 4, 1, {IR_RIDX_NAMED, 0}};
    push(g, op, O_SETK);
    op = P(g, IR_KIND_SET_ROW, "vc", "vc k pos");
    op.spec.u.set_row = (struct ir_set_row){4, 4, 1, {IR_RIDX_NAMED, 0}};
    push(g, op, O_SETV);
    op = P(g, IR_KIND_ATTENTION, "att", "qr kc vc pos");
    op.spec.u.attention = (struct ir_attention){2, 1, 4, 4, 4, 1, {IR_RIDX_NAMED, 0}, {false, 0}, {false, 0},
                                                false, 0};
    push(g, op, O_ATT);
    push(g, ew(g, IR_EW_ADD, "r", "x att", 8, 0), O_R);
    op = P(g, IR_KIND_HEAD_SLICE, "hs", "r");
    op.spec.u.head_slice = (struct ir_head_slice){8, 4, 1, 2};
    push(g, op, O_HS);
    op = P(g, IR_KIND_ROW_GATHER, "e", "emb pos");
    op.spec.u.row_gather = (struct ir_row_gather){16, 8, {IR_RIDX_NAMED, 0}};
    push(g, op, O_E);
    op = P(g, IR_KIND_ROW_GATHER, "e2", "emb");
    op.spec.u.row_gather = (struct ir_row_gather){16, 8, {IR_RIDX_LITERAL, 3}};
    push(g, op, O_E2);
    op = P(g, IR_KIND_ROWS_GATHER, "eg", "emb ids");
    op.spec.u.rows_gather = (struct ir_rows_gather){16, 8, 2};
    push(g, op, O_EG);
    op = P(g, IR_KIND_MOE, "mo", "x router gate up down");
    op.spec.u.moe = (struct ir_moe){.d = 8, .k = 2, .dff = 4, .experts = 3, .act = IR_MOE_SWIGLU};
    push(g, op, O_MO);
    op = P(g, IR_KIND_DECAY, "dec", "aa alog dtb");
    op.spec.u.decay = (struct ir_decay){2, 1};
    push(g, op, O_DEC);
    op = P(g, IR_KIND_GATED_DELTA, "gd", "q qr r n bb dec st gw");
    op.spec.u.gated_delta = (struct ir_gated_delta){2, 4, 4, 1, IR_GATE_SILU, 1e-6, 0};
    push(g, op, O_GD);
    op = P(g, IR_KIND_CAUSAL_CONV, "cc", "x cw ring");
    op.spec.u.causal_conv = (struct ir_causal_conv){8, 3, 1};
    push(g, op, O_CC);
}

/* The second half: the pointwise kinds, views, quantize, fused blocks and placements. */
static void build_back(struct ir_graph *g)
{
    push(g, unary(g, IR_KIND_SILU, "sl", "r", 8), O_SL);
    push(g, unary(g, IR_KIND_SIGMOID, "sg", "r", 8), O_SG);
    push(g, unary(g, IR_KIND_GELU, "gl", "r", 8), O_GL);
    push(g, unary(g, IR_KIND_RELU, "rl", "r", 8), O_RL);
    struct ir_op op = P(g, IR_KIND_SCALE, "sc", "r");
    op.spec.u.scale = (struct ir_scale){8, 0.5};
    push(g, op, O_SC);
    op = P(g, IR_KIND_SWIGLU, "sw", "r n");
    op.spec.u.swiglu.total = 8;
    push(g, op, O_SW);
    op = P(g, IR_KIND_HEAD_MATMUL, "hm", "r hw");
    op.spec.u.head_matmul = (struct ir_head_matmul){1, 2, 4, 3};
    push(g, op, O_HM);
    op = P(g, IR_KIND_JOIN, "jn", "k kr");
    op.spec.u.join = (struct ir_join){1, 1, 4, 4};
    push(g, op, O_JN);
    op = P(g, IR_KIND_L2_NORM, "l2", "r");
    op.spec.u.l2_norm = (struct ir_l2_norm){1, 8, 1e-6};
    push(g, op, O_L2);
    op = P(g, IR_KIND_ARGMAX, "am", "r");
    op.spec.u.argmax = (struct ir_argmax){1, 8};
    push(g, op, O_AM);
    op = P(g, IR_KIND_SOFTCAP, "scp", "r");
    op.spec.u.softcap = (struct ir_softcap){8, 30.0};
    push(g, op, O_SCP);
    op = P(g, IR_KIND_SILU, "vw", "kc");
    op.sym = IR_SYM_VIEW;
    op.view_offset = 4;
    push(g, op, O_VW);
    op = P(g, IR_KIND_SILU, "qz", "xb");
    op.sym = IR_SYM_QUANT;
    op.quant_words = 2;
    push(g, op, O_QZ);
    push(g, ew(g, IR_EW_MUL, "ebr", "eg normw", 16, 8), O_EBR);

    /* add_norm keeping its sum, which a later op reads */
    struct ir_op an[2] = {ew(g, IR_EW_ADD, "s", "x att", 8, 0), norm(g, "ns", "s normw", 8, true, false)};
    op = F(g, IR_CLASS_ADD_NORM, an, 2, "ns", "x att normw");
    ir_tid keep = T(g, "s");
    ir_op_set_keeps(&op, &keep, 1);
    push(g, op, O_ADDNORM);
    push(g, unary(g, IR_KIND_SILU, "ss", "s", 8), O_SS);

    /* a block nested two deep */
    struct ir_op glu[2] = {unary(g, IR_KIND_SILU, "t1", "r", 8), ew(g, IR_EW_MUL, "t2", "t1 n", 8, 0)};
    struct ir_op chain[2] = {F(g, IR_CLASS_GLU_ACT_MUL, glu, 2, "t2", "r n"), P(g, IR_KIND_SCALE, "t3", "t2")};
    chain[1].spec.u.scale = (struct ir_scale){8, 2.0};
    push(g, F(g, IR_CLASS_ELEMENTWISE_CHAINS, chain, 2, "t3", "r n"), O_CHAIN);

    /* a rope written straight into the key cache's row */
    op = rope(g, "kr2", "k", 1);
    op.dst = row_param_dst(g, "kc", "pos", 4);
    push(g, op, O_KR2);
    /* a fused norm and rope appending to the value cache */
    struct ir_op kv[2] = {norm(g, "nk", "k", 4, false, false), rope(g, "rk", "nk", 1)};
    op = F(g, IR_CLASS_QK_NORM_ROPE_KV_APPEND, kv, 2, "rk", "k cos sin pos");
    set_dst(&op, row_param_dst(g, "vc", "pos", 4));
    push(g, op, O_KVAPPEND);

    /* two halves written into their parts of every unit of jy (one fused, its part placed alike) */
    op = unary(g, IR_KIND_SILU, "ua", "k", 4);
    op.dst = unit_dst(g, "jy", 8, 0, 4);
    push(g, op, O_UA);
    struct ir_op half = unary(g, IR_KIND_RELU, "ub", "kr", 4);
    op = F(g, IR_CLASS_JOIN_IN_PLACE, &half, 1, "ub", "kr");
    set_dst(&op, unit_dst(g, "jy", 8, 4, 4));
    push(g, op, O_UB);
    push(g, unary(g, IR_KIND_SILU, "jr", "jy", 8), O_JR);

    push(g, norm(g, "nr", "x normw att", 8, true, true), O_NR);
    op = P(g, IR_KIND_ATTENTION, "att2", "qr kc vc sinks");
    op.spec.u.attention = (struct ir_attention){2, 1, 4, 4, 4, 1, {IR_RIDX_LITERAL, 2}, {true, 0.125}, {true, 50.0},
                                                true, 2};
    push(g, op, O_ATT2);
    op = unary(g, IR_KIND_SILU, "hs2", "r", 4);
    op.access[0] = (struct ir_access){true, {4, 0, 2}};
    push(g, op, O_HS2);
}

/* The valid graph. */
static struct ir_graph *build(void)
{
    struct ir_graph *g = ir_graph_new();
    add_tensors(g);
    build_front(g);
    build_back(g);
    return g;
}

/* Record the kinds a node and its parts use. */
static void note_kinds(const struct ir_op *op, bool *seen)
{
    if (op->sym == IR_SYM_PRIM)
        seen[op->spec.kind] = true;
    for (int32_t p = 0; p < op->nparts; p++)
        note_kinds(&op->parts[p], seen);
}

/* The valid graph passes, uses every kind, and its clone passes. */
static void test_valid(void)
{
    struct ir_graph *g = build();
    char err[IR_ERR_LEN];
    int32_t op = 123;
    ir_tid t = 456;
    CHECKF(ir_validate_where(g, &op, &t, err) == 0, "valid graph: %s", err);
    CHECK(op == -1 && t == IR_NONE);
    CHECK(g->nops == O_COUNT && misplaced == 0);
    bool seen[IR_KIND_COUNT] = {false};
    for (int32_t i = 0; i < g->nops; i++)
        note_kinds(&g->ops[i], seen);
    for (int k = 0; k < IR_KIND_COUNT; k++)
        CHECKF(seen[k], "the valid graph uses %s", ir_kind_name((enum ir_kind)k));
    struct ir_graph *c = ir_graph_clone(g);
    CHECKF(ir_validate(c, err) == 0, "clone: %s", err);
    ir_graph_free(c);
    ir_graph_free(g);
}

/* ── The violations ──────────────────────────────────────────────────────────────────────────────────────── */

#define OP(i) (&g->ops[(i)])

static void m_bad_id(struct ir_graph *g) { OP(O_Q)->ins[1] = 999; }
static void m_no_covers(struct ir_graph *g) { ir_op_set_covers(OP(O_SL), NULL, 0); }
static void m_covers_order(struct ir_graph *g)
{
    int32_t c[2] = {5, 3};
    ir_op_set_covers(OP(O_SL), c, 2);
}
static void m_read_early(struct ir_graph *g) { OP(O_Q)->ins[0] = T(g, "att"); }
static void m_part_reads_later(struct ir_graph *g) { OP(O_ADDNORM)->parts[0].ins[0] = T(g, "ns"); }
static void m_internal_not_kept(struct ir_graph *g) { OP(O_JR)->ins[0] = T(g, "t2"); }
/* a fused op's operand list names another tensor where its part reads 'att' (the router of another row, say) */
static void m_operand_wrong(struct ir_graph *g) { OP(O_ADDNORM)->ins[1] = T(g, "r"); }
/* an operand no part reads */
static void m_operand_unread(struct ir_graph *g) { OP(O_ADDNORM)->parts[0].ins[1] = T(g, "x"); }
/* an operand read strided where its part reads it whole */
static void m_operand_access(struct ir_graph *g)
{
    OP(O_ADDNORM)->access[0] = (struct ir_access){true, {8, 0, 4}};
}
/* an inner result the host reads, not kept */
static void m_observed_not_kept(struct ir_graph *g)
{
    ir_op_set_keeps(OP(O_ADDNORM), NULL, 0);
    OP(O_SS)->ins[0] = T(g, "x");
    g->tensors[T(g, "s")].observed = true;
}
static void m_row_placed_undefined(struct ir_graph *g) { OP(O_UA)->ins[0] = T(g, "kr2"); }
static void m_unit_placed_undefined(struct ir_graph *g) { OP(O_UB)->parts[0].ins[0] = T(g, "ua"); }
static void m_writes_input(struct ir_graph *g)
{
    OP(O_SL)->out = T(g, "x");
    OP(O_SL)->dst = ir_dst_own(T(g, "x"));
}
static void m_unit_into_constant(struct ir_graph *g) { OP(O_UA)->dst.buf = T(g, "wq"); }
static void m_two_writers(struct ir_graph *g)
{
    OP(O_SG)->out = T(g, "sl");
    OP(O_SG)->dst = ir_dst_own(T(g, "sl"));
}
static void m_keep_written(struct ir_graph *g)
{
    OP(O_SL)->out = T(g, "s");
    OP(O_SL)->dst = ir_dst_own(T(g, "s"));
}
static void m_unit_overlap(struct ir_graph *g) { set_dst(OP(O_UB), unit_dst(g, "jy", 8, 2, 4)); }
static void m_unit_gap(struct ir_graph *g) { set_dst(OP(O_UB), ir_dst_own(T(g, "ub"))); }
static void m_unit_pitch(struct ir_graph *g) { set_dst(OP(O_UB), unit_dst(g, "jy", 9, 4, 4)); }
static void m_whole_and_units(struct ir_graph *g)
{
    OP(O_GL)->out = T(g, "jy");
    OP(O_GL)->dst = ir_dst_own(T(g, "jy"));
}
static void m_inplace_not_state(struct ir_graph *g) { OP(O_CC)->ins[2] = T(g, "eg"); }
static void m_rows_not_state(struct ir_graph *g) { OP(O_KR2)->dst.buf = T(g, "eg"); }
static void m_read_and_write(struct ir_graph *g)
{
    OP(O_R)->out = T(g, "att");
    OP(O_R)->dst = ir_dst_own(T(g, "att"));
}
static void m_flag_count(struct ir_graph *g) { OP(O_NORM)->spec.u.rms_norm.weight = false; }
static void m_sinks_missing(struct ir_graph *g) { OP(O_ATT)->spec.u.attention.sinks = true; }
static void m_named_missing(struct ir_graph *g) { OP(O_E2)->spec.u.row_gather.index.kind = IR_RIDX_NAMED; }
static void m_operand_len(struct ir_graph *g) { OP(O_Q)->spec.u.matmul.k = 4; }
static void m_weight_shape(struct ir_graph *g) { OP(O_K)->ins[1] = T(g, "router"); }
static void m_strided_geometry(struct ir_graph *g) { OP(O_HS2)->access[0].s.offset = 3; }
static void m_strided_span(struct ir_graph *g) { OP(O_HS2)->access[0].s.pitch = 8; }
static void m_result_len(struct ir_graph *g) { OP(O_HS)->spec.u.head_slice.width = 1; }
static void m_index_f32(struct ir_graph *g) { OP(O_EG)->ins[1] = T(g, "bb"); }
static void m_rope_half(struct ir_graph *g) { OP(O_QR)->spec.u.rope.half = 3; }
static void m_rope_rows(struct ir_graph *g) { OP(O_QR)->spec.u.rope.rows = 3; }
static void m_rope_table(struct ir_graph *g)
{
    OP(O_QR)->spec.u.rope.pos = (struct ir_rowidx){IR_RIDX_LITERAL, 5};
    ir_tid ins[3] = {T(g, "q"), T(g, "cos"), T(g, "sin")};
    ir_op_set_ins(OP(O_QR), ins, NULL, 3);
}
static void m_rope_theta(struct ir_graph *g) { OP(O_QR)->spec.u.rope.theta = (struct ir_optf){true, -5}; }
static void m_rope_bases(struct ir_graph *g) { OP(O_KR)->spec.u.rope.theta = (struct ir_optf){true, 1e6}; }
static void m_rope_default_base(struct ir_graph *g) { OP(O_KR)->spec.u.rope.theta = (struct ir_optf){true, 1e4}; }
static void m_rope_widths(struct ir_graph *g)
{
    OP(O_KR)->spec.u.rope.half = 1;
    for (int k = 1; k <= 2; k++)
        OP(O_KR)->access[k] = (struct ir_access){true, {2, 0, 1}};
}
/* A llama3 band (factor 8 over 256, low 1, high 4), and YaRN (factor 4 over 16, truncated, attention factor m). */
#define LLAMA3_BAND {.kind = IR_ROPESCALE_LLAMA3, .factor = {true, 8}, .orig = 256, .low_freq = {true, 1}, \
                     .high_freq = {true, 4}}
#define YARN_BY(m) {.kind = IR_ROPESCALE_YARN, .factor = {true, 4}, .orig = 16, .truncate = true, .magnitude = {true, m}}
/* Every rope in op (its parts' too) scaled as s. */
static void scale_ropes(struct ir_op *op, struct ir_rope_scaling s)
{
    if (op->sym == IR_SYM_PRIM && op->spec.kind == IR_KIND_ROPE)
        op->spec.u.rope.scaling = s;
    for (int32_t i = 0; op->sym == IR_SYM_FUSED && i < op->nparts; i++)
        scale_ropes(&op->parts[i], s);
}

/* The query rope's scaling set to s. */
static void set_scaling(struct ir_graph *g, struct ir_rope_scaling s) { OP(O_QR)->spec.u.rope.scaling = s; }
static void m_scale_none_factor(struct ir_graph *g) { set_scaling(g, (struct ir_rope_scaling){.factor = {true, 2}}); }
static void m_scale_none_orig(struct ir_graph *g) { set_scaling(g, (struct ir_rope_scaling){.orig = 4096}); }
static void m_scale_linear(struct ir_graph *g) { set_scaling(g, (struct ir_rope_scaling){.kind = IR_ROPESCALE_LINEAR}); }
static void m_scale_linear_truncate(struct ir_graph *g)
{
    set_scaling(g, (struct ir_rope_scaling){.kind = IR_ROPESCALE_LINEAR, .factor = {true, 2}, .truncate = true});
}
static void m_scale_factor_inf(struct ir_graph *g)
{
    set_scaling(g, (struct ir_rope_scaling){.kind = IR_ROPESCALE_LINEAR, .factor = {true, INFINITY}});
}
static void m_scale_llama3_orig(struct ir_graph *g)
{
    struct ir_rope_scaling s = LLAMA3_BAND;
    s.orig = 0;
    set_scaling(g, s);
}
static void m_scale_llama3_low(struct ir_graph *g)
{
    struct ir_rope_scaling s = LLAMA3_BAND;
    s.low_freq.has = false;
    set_scaling(g, s);
}
static void m_scale_llama3_high(struct ir_graph *g)
{
    struct ir_rope_scaling s = LLAMA3_BAND;
    s.high_freq.has = false;
    set_scaling(g, s);
}
static void m_scale_llama3_band(struct ir_graph *g)
{
    struct ir_rope_scaling s = LLAMA3_BAND;
    s.high_freq.v = 1;
    set_scaling(g, s);
}
static void m_scale_llama3_beta(struct ir_graph *g)
{
    struct ir_rope_scaling s = LLAMA3_BAND;
    s.beta_fast = (struct ir_optf){true, 32};
    set_scaling(g, s);
}
static void m_scale_yarn_factor(struct ir_graph *g)
{
    struct ir_rope_scaling s = YARN_BY(1.1);
    s.factor.has = false;
    set_scaling(g, s);
}
static void m_scale_yarn_orig(struct ir_graph *g)
{
    struct ir_rope_scaling s = YARN_BY(1.1);
    s.orig = 0;
    set_scaling(g, s);
}
static void m_scale_yarn_band(struct ir_graph *g)
{
    struct ir_rope_scaling s = YARN_BY(1.1);
    s.low_freq = (struct ir_optf){true, 1};
    set_scaling(g, s);
}
static void m_scale_yarn_beta(struct ir_graph *g)
{
    struct ir_rope_scaling s = YARN_BY(1.1);
    s.beta_slow = (struct ir_optf){true, 0};
    set_scaling(g, s);
}
static void m_scale_magnitude(struct ir_graph *g) { set_scaling(g, (struct ir_rope_scaling)YARN_BY(-1.1)); }
static void m_scale_kind(struct ir_graph *g) { set_scaling(g, (struct ir_rope_scaling){.kind = IR_ROPESCALE_COUNT}); }
/* The key rope, reading the query rope's tables, scaled (the query's not). */
static void m_scale_tables(struct ir_graph *g) { OP(O_KR)->spec.u.rope.scaling = (struct ir_rope_scaling)YARN_BY(1.1); }
/* Both ropes YaRN alike but for the attention factor. */
static void m_scale_magnitudes(struct ir_graph *g)
{
    set_scaling(g, (struct ir_rope_scaling)YARN_BY(1.1));
    OP(O_KR)->spec.u.rope.scaling = (struct ir_rope_scaling)YARN_BY(1.2);
}
static void m_norm_bias(struct ir_graph *g) { OP(O_NORM)->spec.u.rms_norm.bias = true; }
static void m_norm_kind(struct ir_graph *g) { OP(O_NORM)->spec.u.rms_norm.kind = (enum ir_normkind)7; }

/* What the rope and norm checks accept: ropes agreeing on a table's base (given or the default) and on its scaling
 * (each kind with its fields, an attention factor alone), and a layer norm with its weight and bias. */
static void test_rope_norm_accepted(void)
{
    struct ir_graph *g = build();
    char err[IR_ERR_LEN] = "";
    m_rope_default_base(g);
    CHECKF(ir_validate(g, err) == 0, "an explicit default base: %s", err);
    ir_graph_free(g);
    const struct ir_rope_scaling scalings[] = {
        {.kind = IR_ROPESCALE_LINEAR, .factor = {true, 2}},
        LLAMA3_BAND,
        YARN_BY(1.1),
        {.kind = IR_ROPESCALE_YARN, .factor = {true, 32}, .orig = 4096, .beta_fast = {true, 32},
         .beta_slow = {true, 1}},
        {.magnitude = {true, 0.5}},
    };
    for (size_t i = 0; i < sizeof scalings / sizeof scalings[0]; i++) {
        g = build();
        int ropes = 0;
        for (int32_t k = 0; k < g->nops; k++) {
            scale_ropes(OP(k), scalings[i]);
            ropes += OP(k)->sym == IR_SYM_PRIM && OP(k)->spec.kind == IR_KIND_ROPE;
        }
        CHECKF(ropes >= 3 && ir_validate(g, err) == 0, "%d ropes sharing tables, all %s: %s", ropes,
               ir_ropescale_name(scalings[i].kind), err);
        ir_graph_free(g);
    }
    g = build();
    OP(O_NORM)->spec.u.rms_norm.kind = IR_NORM_LAYER;
    OP(O_NORM)->spec.u.rms_norm.bias = true;
    ir_op_append_in(OP(O_NORM), T(g, "normw"));
    CHECKF(ir_validate(g, err) == 0, "a layer norm with a bias: %s", err);
    ir_graph_free(g);
}

static void m_attention_kv(struct ir_graph *g) { OP(O_ATT)->spec.u.attention.kv = 3; }
static void m_attention_rows(struct ir_graph *g) { OP(O_ATT2)->spec.u.attention.pos.literal = 4, OP(O_ATT2)->spec.u.attention.rows = 2; }
static void m_slice(struct ir_graph *g) { OP(O_HS)->spec.u.head_slice.from = 3; }
static void m_moe_k(struct ir_graph *g) { OP(O_MO)->spec.u.moe.k = 4; }
static void m_moe_alpha(struct ir_graph *g) { OP(O_MO)->spec.u.moe.alpha = (struct ir_optf){true, 1.702}; }
static void m_moe_clamped(struct ir_graph *g)
{
    OP(O_MO)->spec.u.moe.act = IR_MOE_CLAMPED_SWIGLU;
    OP(O_MO)->spec.u.moe.alpha = (struct ir_optf){true, 1.702};
}
static void m_moe_limit(struct ir_graph *g)
{
    m_moe_clamped(g);
    OP(O_MO)->spec.u.moe.limit = (struct ir_optf){true, -7};
}
static void m_moe_bias(struct ir_graph *g) { OP(O_MO)->spec.u.moe.bias = true; }
static void m_literal_row(struct ir_graph *g) { OP(O_E2)->spec.u.row_gather.index.literal = 17; }
static void m_set_row_literal(struct ir_graph *g)
{
    OP(O_SETK)->spec.u.set_row.index = (struct ir_rowidx){IR_RIDX_LITERAL, 5};
}
static void m_set_row_out(struct ir_graph *g)
{
    OP(O_SETK)->out = T(g, "vc");
    OP(O_SETK)->dst = ir_dst_own(T(g, "vc"));
}
static void m_view_offset(struct ir_graph *g) { OP(O_VW)->view_offset = 13; }
static void m_quant_words(struct ir_graph *g) { OP(O_QZ)->quant_words = 3; }
static void m_quant_len(struct ir_graph *g)
{
    OP(O_QZ)->out = T(g, "ss");
    OP(O_QZ)->dst = ir_dst_own(T(g, "ss"));
}
static void m_fused_empty(struct ir_graph *g)
{
    struct ir_op op = F(g, IR_CLASS_ELEMENTWISE_CHAINS, NULL, 0, "t3", "r n");
    ir_op_set_covers(&op, OP(O_CHAIN)->covers, OP(O_CHAIN)->ncovers);
    ir_op_free(OP(O_CHAIN));
    *OP(O_CHAIN) = op;
}
static void m_fused_out(struct ir_graph *g)
{
    OP(O_ADDNORM)->out = T(g, "r");
    OP(O_ADDNORM)->dst = ir_dst_own(T(g, "r"));
}
static void m_keep_foreign(struct ir_graph *g)
{
    ir_tid x = T(g, "x");
    ir_op_set_keeps(OP(O_ADDNORM), &x, 1);
}
static void m_keeps_unfused(struct ir_graph *g)
{
    ir_tid x = T(g, "sl");
    ir_op_set_keeps(OP(O_SL), &x, 1);
}
static void m_tensor_dim(struct ir_graph *g) { g->tensors[T(g, "x")].rows = 0; }
static void m_tensor_size(struct ir_graph *g)
{
    g->tensors[T(g, "xb")].rows = IR_MAX_DIM;
    g->tensors[T(g, "xb")].cols = IR_MAX_DIM;
}
static void m_spec_overflow(struct ir_graph *g)
{
    OP(O_Q)->spec.u.matmul.m = IR_MAX_DIM;
    OP(O_Q)->spec.u.matmul.k = IR_MAX_DIM;
}
static void m_spec_dim(struct ir_graph *g) { OP(O_SL)->spec.u.unary.n = IR_MAX_DIM + 1; }
static void m_spec_zero(struct ir_graph *g) { OP(O_SL)->spec.u.unary.n = 0; }
static void m_dst_not_own(struct ir_graph *g) { OP(O_SC)->dst.buf = T(g, "sl"); }
static void m_dst_row_fixed(struct ir_graph *g)
{
    OP(O_KR2)->dst.row = IR_ROWSEL_FIXED;
    OP(O_KR2)->dst.row_fixed = 5;
}
static void m_dst_row_param(struct ir_graph *g) { OP(O_KR2)->dst.row_param = T(g, "bb"); }
static void m_dst_rows_pass(struct ir_graph *g)
{
    OP(O_KR2)->dst.row = IR_ROWSEL_FIXED;
    OP(O_KR2)->dst.row_fixed = 4;
    OP(O_KR2)->dst.row_cols = 2;
}
static void m_dst_row_cols(struct ir_graph *g) { OP(O_KR2)->dst.row_cols = 5; }
static void m_unit_span(struct ir_graph *g) { OP(O_UA)->dst.unit = (struct ir_strided){7, 0, 2}; }
static void m_argmax_f32(struct ir_graph *g) { g->tensors[T(g, "am")].elem = IR_ELEM_F32; }
static void m_checkpoint_role(struct ir_graph *g)
{
    g->tensors[T(g, "x")].checkpoint = true;
    g->tensors[T(g, "x")].format = IR_FMT_Q8_0;
}
static void m_checkpoint_block(struct ir_graph *g)
{
    g->tensors[T(g, "wck")].transposed = true;
    g->tensors[T(g, "wck")].format = IR_FMT_Q4_K;
}
static void m_unknown_kind(struct ir_graph *g) { OP(O_SL)->spec.kind = (enum ir_kind)99; }
static void m_taps(struct ir_graph *g) { OP(O_CC)->spec.u.causal_conv.taps = 1; }
static void m_eps(struct ir_graph *g) { OP(O_NORM)->spec.u.rms_norm.eps = INFINITY; }
static void m_row_broadcast(struct ir_graph *g) { OP(O_EBR)->spec.u.elementwise.row = 3; }
static void m_join_heads(struct ir_graph *g) { OP(O_JN)->spec.u.join.heads = 3; }
static void m_decay_rows(struct ir_graph *g) { OP(O_DEC)->spec.u.decay.rows = 3; }
static void m_key_heads(struct ir_graph *g) { OP(O_GD)->spec.u.gated_delta.kh = 3; }
static void m_softcap(struct ir_graph *g) { OP(O_SCP)->spec.u.softcap.cap = 0.0; }
static void m_gated_state(struct ir_graph *g) { OP(O_GD)->ins[6] = T(g, "xb"); }
static void m_part_id(struct ir_graph *g) { OP(O_CHAIN)->parts[0].parts[1].ins[1] = -7; }

/* One broken invariant: how to break it, the message substring expected, and the op (or tensor) reported. */
struct violation {
    const char *name;
    void (*mutate)(struct ir_graph *g);
    const char *want;
    int op;             /* -1: a tensor-level problem */
    const char *tensor; /* the tensor reported then */
};

static const struct violation violations[] = {
    /* 1: ids valid, covers present */
    {"bad id", m_bad_id, "(matmul): ins[1]: tensor id 999 is not in the graph", O_Q, NULL},
    {"part id", m_part_id, "(elementwise_chains): part 0 (glu_act_mul): part 1 (elementwise): ins[1]: tensor id -7",
     O_CHAIN, NULL},
    {"no covers", m_no_covers, "(silu): covers: a top-level op must cover at least one lifted op", O_SL, NULL},
    {"covers order", m_covers_order, "covers: must be non-negative and ascending", O_SL, NULL},
    {"unknown kind", m_unknown_kind, "kind: unknown kind 99", O_SL, NULL},
    {"keeps unfused", m_keeps_unfused, "keeps: only a fused op keeps internal results", O_SL, NULL},
    /* 2: defined before read */
    {"read early", m_read_early, "(matmul): x: reads 'att' before it is written", O_Q, NULL},
    {"part reads later part", m_part_reads_later, "part 0 (elementwise): a: reads 'ns' before it is written",
     O_ADDNORM, NULL},
    {"internal not kept", m_internal_not_kept, "x: reads 't2' before it is written", O_JR, NULL},
    {"operand wrong", m_operand_wrong, "(add_norm): ins[1]: no part reads 'r' whole", O_ADDNORM, NULL},
    {"operand unread", m_operand_unread, "(add_norm): ins[1]: no part reads 'att' whole", O_ADDNORM, NULL},
    {"operand access", m_operand_access,
     "(add_norm): ins[0]: no part reads 'x' strided pitch 8 offset 0 width 4", O_ADDNORM, NULL},
    {"observed not kept", m_observed_not_kept,
     "observed: the host reads 's' after the step, but no op writes it", -1, "s"},
    {"row-placed result", m_row_placed_undefined, "x: reads 'kr2' before it is written", O_UA, NULL},
    {"unit-placed result", m_unit_placed_undefined, "part 0 (relu): x: reads 'ua' before it is written", O_UB,
     NULL},
    /* 3: one writer */
    {"writes input", m_writes_input, "out: the result 'x' is input, which only the host sets", O_SL, NULL},
    {"unit into constant", m_unit_into_constant, "dst: writes constant 'wq', which only the host sets", O_UA, NULL},
    {"two writers", m_two_writers, "(sigmoid): dst: 'sl' is already written by op 17", O_SG, NULL},
    {"keep written", m_keep_written, "(add_norm): keeps: 's' is already written by op 17", O_ADDNORM, NULL},
    {"whole and units", m_whole_and_units, "(silu): dst: 'jy' is already written by op 19", O_UA, NULL},
    {"unit overlap", m_unit_overlap, "dst: unit part of 'jy' at offset 2 overlaps another below 4", O_UB, NULL},
    {"unit pitch", m_unit_pitch, "dst: 'jy' is written in units of pitch 9 and 8", O_UB, NULL},
    {"unit gap", m_unit_gap, "tensor 'jy': units: no op writes values from 4 of each unit of pitch 8", -1, "jy"},
    /* 4: only state in place */
    {"in place not state", m_inplace_not_state, "(causal_conv): ring: writes 'eg' in place, but it is activation",
     O_CC, NULL},
    {"rows not state", m_rows_not_state, "(rope): dst: writes rows of 'eg', but it is activation, not state", O_KR2,
     NULL},
    {"read and write", m_read_and_write, "dst: writes 'att', which it also reads, but it is not state", O_R, NULL},
    {"gated state", m_gated_state, "state: writes input 'xb', which only the host sets", O_GD, NULL},
    /* 5: shapes */
    {"flag count", m_flag_count, "(rms_norm): ins: 2 operands, expected 1 (x)", O_NORM, NULL},
    {"sinks missing", m_sinks_missing, "ins: 4 operands, expected 5 (q, kcache, vcache, pos, sinks)", O_ATT, NULL},
    {"named missing", m_named_missing, "ins: 1 operands, expected 2 (table, idx)", O_E2, NULL},
    {"operand length", m_operand_len, "x: tensor 'n' has 8 values, expected 4", O_Q, NULL},
    {"weight shape", m_weight_shape, "W: tensor 'router' is 8x3, expected 8x4", O_K, NULL},
    {"strided geometry", m_strided_geometry, "x: strided (4:3:2) needs 0 <= offset", O_HS2, NULL},
    {"strided span", m_strided_span, "x: 2 strided units span past tensor 'r' of 8 values", O_HS2, NULL},
    {"result length", m_result_len, "out: tensor 'hs' has 4 values, the result has 2", O_HS, NULL},
    {"index f32", m_index_f32, "idx: index tensor 'bb' must be i32, not f32", O_EG, NULL},
    {"rope half", m_rope_half, "(rope): half: 2*half = 6 exceeds hd = 4", O_QR, NULL},
    {"rope rows", m_rope_rows, "rows: h = 2 is not a multiple of rows = 3", O_QR, NULL},
    {"rope table", m_rope_table, "cos: tensor 'cos' has 4 rows, needs at least 5", O_QR, NULL},
    {"rope theta", m_rope_theta, "(rope): theta: the rotary base -5 must be positive", O_QR, NULL},
    {"rope bases", m_rope_bases, "(rope): theta: rotary table 'cos' is read with base 1000000 here, 10000 by op 3",
     O_KR, NULL},
    {"rope widths", m_rope_widths, "(rope): half: rotary table 'cos' is read 1 wide here, 2 wide by op 3", O_KR, NULL},
    {"scaling none factor", m_scale_none_factor, "(rope): factor: given without a rotary scaling", O_QR, NULL},
    {"scaling none orig", m_scale_none_orig, "(rope): orig: given without a rotary scaling", O_QR, NULL},
    {"scaling linear", m_scale_linear, "(rope): factor: required by this rotary scaling", O_QR, NULL},
    {"scaling linear truncate", m_scale_linear_truncate, "(rope): truncate: not a field of this rotary scaling", O_QR,
     NULL},
    {"scaling factor inf", m_scale_factor_inf, "(rope): factor: must be finite", O_QR, NULL},
    {"scaling llama3 orig", m_scale_llama3_orig, "(rope): orig: required by this rotary scaling", O_QR, NULL},
    {"scaling llama3 low", m_scale_llama3_low, "(rope): low_freq: required by this rotary scaling", O_QR, NULL},
    {"scaling llama3 high", m_scale_llama3_high, "(rope): high_freq: required by this rotary scaling", O_QR, NULL},
    {"scaling llama3 band", m_scale_llama3_band, "(rope): high_freq: must exceed low_freq", O_QR, NULL},
    {"scaling llama3 beta", m_scale_llama3_beta, "(rope): beta_fast: not a field of this rotary scaling", O_QR, NULL},
    {"scaling yarn factor", m_scale_yarn_factor, "(rope): factor: required by this rotary scaling", O_QR, NULL},
    {"scaling yarn orig", m_scale_yarn_orig, "(rope): orig: required by this rotary scaling", O_QR, NULL},
    {"scaling yarn band", m_scale_yarn_band, "(rope): low_freq: not a field of this rotary scaling", O_QR, NULL},
    {"scaling yarn beta", m_scale_yarn_beta, "(rope): beta_slow: must be positive", O_QR, NULL},
    {"scaling magnitude", m_scale_magnitude, "(rope): magnitude: must be positive", O_QR, NULL},
    {"scaling kind", m_scale_kind, "(rope): scaling: unknown", O_QR, NULL},
    {"scaling tables", m_scale_tables,
     "(rope): scaling: rotary table 'cos' is read with another rotary scaling here than by op 3", O_KR, NULL},
    {"scaling magnitudes", m_scale_magnitudes,
     "(rope): scaling: rotary table 'cos' is read with another rotary scaling here than by op 3", O_KR, NULL},
    {"norm bias", m_norm_bias, "(rms_norm): ins: 2 operands, expected 3 (x, w, b)", O_NORM, NULL},
    {"norm kind", m_norm_kind, "(rms_norm): kind: unknown value 7", O_NORM, NULL},
    {"attention kv", m_attention_kv, "kv: h = 2 is not a multiple of kv = 3", O_ATT, NULL},
    {"attention rows", m_attention_rows, "rows: 2 query rows from row 4 pass l = 4", O_ATT2, NULL},
    {"head slice", m_slice, "width: from + width = 5 exceeds every = 4", O_HS, NULL},
    {"moe k", m_moe_k, "k: k = 4 exceeds experts = 3", O_MO, NULL},
    {"moe alpha", m_moe_alpha, "alpha: only the clamped SwiGLU takes it", O_MO, NULL},
    {"moe clamped", m_moe_clamped, "limit: the clamped SwiGLU needs alpha and limit", O_MO, NULL},
    {"moe limit", m_moe_limit, "limit: must be positive", O_MO, NULL},
    {"moe bias", m_moe_bias, "ins: 5 operands, expected 9", O_MO, NULL},
    {"literal row", m_literal_row, "index: row 17 is outside 1..16", O_E2, NULL},
    {"set_row literal", m_set_row_literal, "index: rows 5..5 are outside 1..4", O_SETK, NULL},
    {"set_row out", m_set_row_out, "out: must be the table 'kc' it writes in place", O_SETK, NULL},
    {"taps", m_taps, "taps: must be at least 2", O_CC, NULL},
    {"eps", m_eps, "eps: must be finite", O_NORM, NULL},
    {"row broadcast", m_row_broadcast, "row: n = 16 is not a multiple of row = 3", O_EBR, NULL},
    {"join heads", m_join_heads, "wa: wa = 4 is not a multiple of heads = 3", O_JN, NULL},
    {"decay rows", m_decay_rows, "rows: n = 2 is not a multiple of rows = 3", O_DEC, NULL},
    {"key heads", m_key_heads, "kh: h = 2 is not a multiple of kh = 3", O_GD, NULL},
    {"softcap", m_softcap, "cap: must be positive", O_SCP, NULL},
    {"argmax f32", m_argmax_f32, "out: tensor 'am' must be i32", O_AM, NULL},
    {"view offset", m_view_offset, "(view): offset: offset + len(out) = 17 passes tensor 'kc' of 16 values", O_VW,
     NULL},
    {"quant words", m_quant_words, "(quantize): words: 3, expected 1 or 2", O_QZ, NULL},
    {"quant length", m_quant_len, "out: 8 values are not a multiple of 32", O_QZ, NULL},
    {"fused empty", m_fused_empty, "parts: a fused op needs at least one part", O_CHAIN, NULL},
    {"fused out", m_fused_out, "out: 'r' is no part's result", O_ADDNORM, NULL},
    {"keep foreign", m_keep_foreign, "keeps: 'x' is no part's result", O_ADDNORM, NULL},
    {"dst not own", m_dst_not_own, "dst: without a row or unit, the result lands in its own buffer", O_SC, NULL},
    {"dst row fixed", m_dst_row_fixed, "dst: row 5 is outside 1..4", O_KR2, NULL},
    {"dst row param", m_dst_row_param, "dst.row: 'bb' must be one i32 value", O_KR2, NULL},
    {"dst rows pass", m_dst_rows_pass, "dst: the result's rows of 2 values pass the 4 rows of 'kc'", O_KR2, NULL},
    {"dst row cols", m_dst_row_cols, "dst: row width 5 is outside 1..4", O_KR2, NULL},
    {"unit span", m_unit_span, "dst: 2 units pass tensor 'jy' of 8 values", O_UA, NULL},
    /* 6: sizes */
    {"tensor dim", m_tensor_dim, "tensor 'x': rows: 0 is outside 1..1099511627776", -1, "x"},
    {"tensor size", m_tensor_size, "tensor 'xb': size: 1099511627776x1099511627776 exceeds", -1, "xb"},
    {"spec overflow", m_spec_overflow, "(matmul): x: its size overflows", O_Q, NULL},
    {"spec dim", m_spec_dim, "n: 1099511627777 is outside 1..1099511627776", O_SL, NULL},
    {"spec zero", m_spec_zero, "n: 0 is outside 1..", O_SL, NULL},
    {"checkpoint role", m_checkpoint_role, "tensor 'x': format: only a constant is stored as checkpoint rows", -1,
     "x"},
    {"checkpoint block", m_checkpoint_block, "tensor 'wck': format: q4_k rows of 64 values are not a multiple", -1,
     "wck"},
};

/* A state a part writes in place is computed inside the fused op, so naming it an operand is refused; without it the
 * op is valid. */
static void test_operand_in_place(void)
{
    const char *text = "tensor tab f32 2x32 state\ntensor src f32 1x32 input\ntensor tq f32 2x32 activation observed\n"
                       "fused row_write_quant tq = (%s) {\n"
                       "    op tab = set_row(tab, src) rows=2 cols=32 count=1 index=1\n"
                       "    op tq = quantize(tab) words=1\n}\n";
    char buf[512], err[IR_ERR_LEN];
    snprintf(buf, sizeof buf, text, "tab, src");
    struct ir_graph *g = ir_parse(buf, strlen(buf), "in-place", err);
    CHECKF(!g && strstr(err, "ins[0]: 'tab' is computed inside the op, so it is no operand"), "got %s", err);
    ir_graph_free(g);
    snprintf(buf, sizeof buf, text, "src");
    g = ir_parse(buf, strlen(buf), "in-place", err);
    CHECKF(g != NULL, "%s", err);
    ir_graph_free(g);
}

/* A fused op's result may be a state table its parts fill whole, one fixed row each (a block's mixtures run as one):
 * both rows written is valid; one row written twice, or the table an activation, is refused. */
static void test_table_result(void)
{
    const char *text = "tensor a f32 1x4 input\ntensor b f32 1x4 input\ntensor pa f32 1x4 activation\n"
                       "tensor pb f32 1x4 activation\ntensor tab f32 2x4 %s observed\n"
                       "fused moe_token_sort tab = (a, b) {\n"
                       "    op pa = scale(a) n=4 factor=2 -> tab row(1, 4)\n"
                       "    op pb = scale(b) n=4 factor=2 -> tab row(%d, 4)\n}\n";
    const struct {
        const char *role;
        int row;
        bool valid;
    } cases[] = {{"state", 2, true}, {"state", 1, false}, {"activation", 2, false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[640], err[IR_ERR_LEN];
        snprintf(buf, sizeof buf, text, cases[i].role, cases[i].row);
        struct ir_graph *g = ir_parse(buf, strlen(buf), "table", err);
        if (cases[i].valid)
            CHECKF(g != NULL, "case %zu: %s", i, err);
        else
            CHECKF(!g && strstr(err, "out: 'tab' is no part's result, nor a state table its parts fill whole"),
                   "case %zu: got %s", i, g ? "valid" : err);
        ir_graph_free(g);
    }
}

/* A top-level op's covers may name a lifted op more than once — a fold of two ops that each recompute it covers it
 * once a copy — but stay ascending: 3, 3, 4 is valid, 4, 3 is not. */
static void test_repeated_covers(void)
{
    const char *text = "tensor x f32 1x4 input\ntensor y f32 1x4 activation observed\n"
                       "op y = silu(x) n=4 covers %s\n";
    const struct {
        const char *covers;
        bool valid;
    } cases[] = {{"3, 3, 4", true}, {"3, 4, 4", true}, {"4, 3", false}, {"3, 4, 3", false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[256], err[IR_ERR_LEN];
        snprintf(buf, sizeof buf, text, cases[i].covers);
        struct ir_graph *g = ir_parse(buf, strlen(buf), "covers", err);
        if (cases[i].valid)
            CHECKF(g != NULL, "covers %s: %s", cases[i].covers, err);
        else
            CHECKF(!g && strstr(err, "covers: must be non-negative and ascending"), "covers %s: got %s",
                   cases[i].covers, g ? "valid" : err);
        ir_graph_free(g);
    }
}

/* A carried activation, like an observed one, must be written by some op: a fused op that computes one inside and
 * does not keep it leaves the host nothing to keep (a graph fuzz_optimize made, which a rewrite then folded into a
 * class whose kernel does not write it). Kept, it is valid. */
static void test_carried_written(void)
{
    const char *text = "tensor a f32 1x4 input\ntensor g f32 1x4 input\ntensor sg f32 1x4 activation carried\n"
                       "tensor y f32 1x4 activation observed\n"
                       "fused glu_act_mul y = (a, g)%s {\n"
                       "    op sg = silu(g) n=4\n"
                       "    op y = elementwise(a, sg) op=mul n=4\n}\n";
    char buf[512], err[IR_ERR_LEN];
    snprintf(buf, sizeof buf, text, "");
    struct ir_graph *g = ir_parse(buf, strlen(buf), "carried", err);
    CHECKF(!g && strstr(err, "carried: the host keeps 'sg' across steps, but no op writes it"), "got %s",
           g ? "valid" : err);
    ir_graph_free(g);
    snprintf(buf, sizeof buf, text, " keep sg");
    g = ir_parse(buf, strlen(buf), "carried", err);
    CHECKF(g != NULL, "%s", err);
    ir_graph_free(g);
}

/* An activation written in unit parts by several ops is read only once every part is written: a read between the
 * parts is refused at the part written after it (a graph the fuzzer's mutator made, on which a later rewrite read a
 * tensor before it was written). In order, the same ops are valid. */
static void test_unit_parts_before_read(void)
{
    const char *head = "tensor a f32 1x2 input\ntensor b f32 1x2 input\ntensor p1 f32 1x2 activation\n"
                       "tensor p2 f32 1x2 activation\ntensor q f32 1x4 activation\n"
                       "tensor y f32 1x4 activation observed\n";
    const char *w1 = "op p1 = scale(a) n=2 factor=2 -> q unit(4:0:2)\n";
    const char *w2 = "op p2 = scale(b) n=2 factor=2 -> q unit(4:2:2)\n";
    const char *rd = "op y = scale(q) n=4 factor=1\n";
    char buf[640], err[IR_ERR_LEN];
    snprintf(buf, sizeof buf, "%s%s%s%s", head, w1, rd, w2);
    struct ir_graph *g = ir_parse(buf, strlen(buf), "units", err);
    CHECKF(!g && strstr(err, "op 2 (scale): dst: writes a unit part of 'q', which op 1 read before"), "got %s",
           g ? "valid" : err);
    ir_graph_free(g);
    snprintf(buf, sizeof buf, "%s%s%s%s", head, w1, w2, rd);
    g = ir_parse(buf, strlen(buf), "units", err);
    CHECKF(g != NULL, "%s", err);
    ir_graph_free(g);
}

/* Each violation fails with its message, naming the op or tensor; the plain entry point says the same. */
static void test_violations(void)
{
    size_t count = sizeof violations / sizeof violations[0];
    CHECK(count >= 30);
    for (size_t i = 0; i < count; i++) {
        const struct violation *c = &violations[i];
        struct ir_graph *g = build();
        c->mutate(g);
        char err[IR_ERR_LEN], plain[IR_ERR_LEN];
        int32_t op = 123;
        ir_tid t = 456;
        int rc = ir_validate_where(g, &op, &t, err);
        CHECKF(rc != 0 && strstr(err, c->want), "%s: got \"%s\", want \"%s\"", c->name, rc ? err : "valid",
               c->want);
        CHECKF(op == c->op, "%s: op %d, want %d", c->name, (int)op, c->op);
        ir_tid want_t = c->tensor ? T(g, c->tensor) : IR_NONE;
        CHECKF(t == want_t, "%s: tensor %d, want %d", c->name, (int)t, (int)want_t);
        if (c->op >= 0) {
            char prefix[32];
            snprintf(prefix, sizeof prefix, "op %d (", c->op);
            CHECKF(strncmp(err, prefix, strlen(prefix)) == 0, "%s: message starts \"%s\": %s", c->name, prefix, err);
        }
        CHECK(ir_validate(g, plain) != 0 && strcmp(plain, err) == 0);
        ir_graph_free(g);
    }
}

/* A product with its bias folded in, keeping the product p; `cls` the class, p's flags and another op reading p
 * or not. */
static char *contract_graph(const char *cls, const char *flags, bool read_after)
{
    static char text[1024];
    snprintf(text, sizeof text,
             "graph contract\n"
             "tensor x f32 1x8 input\ntensor w f32 8x4 constant\ntensor b f32 1x4 constant\n"
             "tensor p f32 1x4 activation%s\ntensor y f32 1x4 activation observed\n"
             "tensor z f32 1x4 activation observed\n"
             "fused %s y = (x, w, b) keep p {\n"
             "    op p = matmul(x, w) m=1 k=8 n=4\n"
             "    op y = elementwise(p, b) op=add n=4\n"
             "}\n"
             "op z = elementwise(%s, b) op=mul n=4\n",
             flags, cls, read_after ? "p" : "y");
    return text;
}

/* Whether the contract graph validates; the message into err. */
static bool contract_valid(const char *cls, const char *flags, bool read_after, char err[IR_ERR_LEN])
{
    char *text = contract_graph(cls, flags, read_after);
    struct ir_graph *g = ir_parse_unchecked(text, strlen(text), "contract.fc", err);
    if (!g)
        return false;
    bool ok = ir_validate(g, err) == 0;
    ir_graph_free(g);
    return ok;
}

/* The kernel contract: a fused op keeps an inner result only for needs its class's kernel serves — a gemm_bias
 * kernel stores its product for the host (observed, carried) but never for another op; an elementwise_chains kernel
 * never into memory kept across steps; an add_norm kernel for anything. The rejection names the op and tensor. */
static void test_kernel_contract(void)
{
    char err[IR_ERR_LEN];
    CHECK(!contract_valid("gemm_bias", "", true, err));
    CHECK(strstr(err, "op 0 (gemm_bias): keeps: 'p' is an inner result the gemm_bias kernel does not write for "
                      "another op") != NULL);
    CHECK(contract_valid("gemm_bias", "", false, err)); /* a keep nothing needs harms nothing */
    CHECK(contract_valid("gemm_bias", " observed", false, err));
    CHECK(contract_valid("gemm_bias", " carried", false, err));
    CHECK(!contract_valid("elementwise_chains", " carried", false, err));
    CHECK(strstr(err, "'p' is an inner result the elementwise_chains kernel does not write for the host") != NULL);
    CHECK(contract_valid("elementwise_chains", " observed", false, err));
    CHECK(contract_valid("add_norm", "", true, err));
    CHECK(contract_valid("add_norm", " carried", false, err));
    CHECK(ir_class_writes(IR_CLASS_ADD_NORM) == IR_WRITES_ALL);
    CHECK(ir_class_writes(IR_CLASS_GEMM_BIAS) == (IR_WRITES_OBSERVED | IR_WRITES_CARRIED));
}

/* A chain of `levels` fused blocks, each the only part of the one above, around a silu of r. */
static struct ir_op nest(const struct ir_graph *g, int levels)
{
    struct ir_op op = unary(g, IR_KIND_SILU, "sl", "r", 8);
    for (int d = 0; d < levels; d++)
        op = F(g, IR_CLASS_ELEMENTWISE_CHAINS, &op, 1, "sl", "r");
    return op;
}

/* Nesting IR_MAX_DEPTH fused blocks deep is valid; one more is not. */
static void test_depth(void)
{
    for (int extra = 0; extra <= 1; extra++) {
        struct ir_graph *g = build();
        struct ir_op deep = nest(g, IR_MAX_DEPTH + extra);
        ir_op_set_covers(&deep, OP(O_SL)->covers, OP(O_SL)->ncovers);
        ir_op_free(OP(O_SL));
        *OP(O_SL) = deep;
        char err[IR_ERR_LEN];
        int32_t op;
        ir_tid t;
        int rc = ir_validate_where(g, &op, &t, err);
        if (extra)
            CHECKF(rc != 0 && op == O_SL &&
                       strstr(err, "op 17 (elementwise_chains): part 0 (elementwise_chains): (29 more parts): part 0 "
                                   "(elementwise_chains): part 0 (elementwise_chains): parts: fused blocks nest "
                                   "deeper than 32"),
                   "%s", err);
        else
            CHECKF(rc == 0, "32 levels: %s", err);
        ir_graph_free(g);
    }
}

/* An empty graph is valid; a graph of many layers built like the valid one is valid. */
static void test_sizes(void)
{
    struct ir_graph *g = ir_graph_new();
    char err[IR_ERR_LEN];
    CHECK(ir_validate(g, err) == 0);
    ir_graph_free(g);
    /* many writers of one state tensor, many readers of one activation */
    g = build();
    for (int i = 0; i < 500; i++) {
        struct ir_op op = P(g, IR_KIND_SET_ROW, "kc", "kc kr pos");
        op.spec.u.set_row = (struct ir_set_row){4, 4, 1, {IR_RIDX_NAMED, 0}};
        ir_graph_push(g, op);
    }
    CHECKF(ir_validate(g, err) == 0, "many state writers: %s", err);
    ir_graph_free(g);
}

int main(void)
{
    test_valid();
    test_violations();
    test_rope_norm_accepted();
    test_operand_in_place();
    test_table_result();
    test_carried_written();
    test_repeated_covers();
    test_unit_parts_before_read();
    test_kernel_contract();
    test_depth();
    test_sizes();
    return check_done("validate");
}
