/* tests/test_facts.c — the facts over slots: reads and writes of hand-made ops (fused parts, keeps, placements,
 * state written in place), every predicate on a hand-made schedule with its expected answers, and the indexed
 * predicates agreeing with their scanning specification on 10,000 generated schedules under takes, puts and
 * replaces. */
#include "check.h"
#include "ir/ir.h"

#include <stdint.h>
#include <stdlib.h>

/* ── Building ops by tensor name ─────────────────────────────────────────────────────────────────────────── */

/* The id of tensor `name` in g. */
static ir_tid T(const struct ir_graph *g, const char *name)
{
    return ir_tensor_find(g, name, strlen(name));
}

/* A primitive op of kind k whose inputs are the space-separated names in ins, result out. */
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

/* A fused op of class c over parts (moved in), inputs by name, result out, landing in its own buffer. */
static struct ir_op F(const struct ir_graph *g, enum ir_class c, struct ir_op *parts, int32_t nparts,
                      const char *out, const char *ins)
{
    struct ir_op tmp = P(g, IR_KIND_SILU, out, ins);
    struct ir_op *owned = malloc(sizeof *owned * (size_t)nparts);
    memcpy(owned, parts, sizeof *owned * (size_t)nparts);
    struct ir_op op = ir_op_fused(c, owned, nparts, tmp.ins, NULL, tmp.nins, tmp.out, ir_dst_own(tmp.out));
    ir_op_free(&tmp);
    return op;
}

/* Whether out[0..n) equals the tensors named in `names` (space-separated), in that order. */
static bool same_tids(const struct ir_graph *g, const ir_tid *out, int n, const char *names)
{
    ir_tid want[32];
    int m = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", names);
    for (char *tok = strtok(buf, " "); tok && m < 32; tok = strtok(NULL, " "))
        want[m++] = T(g, tok);
    for (int a = 1; a < m; a++) /* sort the expectation: the facts answer in id order */
        for (int b = a; b > 0 && want[b] < want[b - 1]; b--) {
            ir_tid x = want[b];
            want[b] = want[b - 1];
            want[b - 1] = x;
        }
    if (m != n)
        return false;
    for (int i = 0; i < n; i++)
        if (out[i] != want[i])
            return false;
    return true;
}

/* Whether slots s[0..n) equal want[0..m). */
static bool same_slots(const int32_t *got, int32_t n, const int32_t *want, int32_t m)
{
    if (n != m)
        return false;
    for (int32_t i = 0; i < n; i++)
        if (got[i] != want[i])
            return false;
    return true;
}

/* ── The hand-made schedule ──────────────────────────────────────────────────────────────────────────────── */

/* Tensors of the hand-made schedule. */
static struct ir_graph *hand_graph(void)
{
    struct ir_graph *g = ir_graph_new();
    ir_tensor_add(g, "a", IR_ELEM_F32, 1, 8, IR_ROLE_INPUT);
    ir_tensor_add(g, "w", IR_ELEM_F32, 8, 8, IR_ROLE_CONSTANT);
    ir_tensor_add(g, "p", IR_ELEM_I32, 1, 1, IR_ROLE_PARAM);
    ir_tensor_add(g, "cos", IR_ELEM_F32, 4, 2, IR_ROLE_CONSTANT);
    ir_tensor_add(g, "sin", IR_ELEM_F32, 4, 2, IR_ROLE_CONSTANT);
    ir_tensor_add(g, "b", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION);
    ir_tensor_add(g, "c", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION);
    ir_tensor_add(g, "d", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION);
    ir_tensor_add(g, "e", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION);
    ir_tensor_add(g, "f", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION);
    ir_tensor_add(g, "o", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION);
    ir_tensor_add(g, "st", IR_ELEM_F32, 4, 8, IR_ROLE_STATE);
    ir_tensor_add(g, "u1", IR_ELEM_F32, 1, 4, IR_ROLE_ACTIVATION);
    ir_tensor_add(g, "u2", IR_ELEM_F32, 1, 4, IR_ROLE_ACTIVATION);
    ir_tensor_add(g, "jy", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION);
    ir_tensor_add(g, "j2", IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION);
    g->tensors[T(g, "o")].observed = true;
    g->tensors[T(g, "st")].carried = true;
    return g;
}

enum { H_MATMUL, H_SILU, H_ADDNORM, H_SETROW, H_ROPEROW, H_ADD, H_U1, H_U2, H_JR, H_COUNT };

/* The hand-made schedule's ops, in slot order. */
static struct ir_op *hand_ops(const struct ir_graph *g)
{
    struct ir_op *ops = calloc(H_COUNT, sizeof *ops);
    ops[H_MATMUL] = P(g, IR_KIND_MATMUL, "b", "a w");
    ops[H_SILU] = P(g, IR_KIND_SILU, "c", "b");
    struct ir_op parts[2] = {P(g, IR_KIND_ELEMENTWISE, "d", "b c"), P(g, IR_KIND_RMS_NORM, "e", "d")};
    ops[H_ADDNORM] = F(g, IR_CLASS_ADD_NORM, parts, 2, "e", "b c");
    ir_tid keep = T(g, "d");
    ir_op_set_keeps(&ops[H_ADDNORM], &keep, 1);
    ops[H_SETROW] = P(g, IR_KIND_SET_ROW, "st", "st e p");
    ops[H_ROPEROW] = P(g, IR_KIND_ROPE, "f", "c cos sin");
    ops[H_ROPEROW].dst.buf = T(g, "st");
    ops[H_ROPEROW].dst.row = IR_ROWSEL_PARAM;
    ops[H_ROPEROW].dst.row_param = T(g, "p");
    ops[H_ROPEROW].dst.row_cols = 8;
    ops[H_ADD] = P(g, IR_KIND_ELEMENTWISE, "o", "d e");
    ops[H_U1] = P(g, IR_KIND_SILU, "u1", "a");
    ops[H_U1].dst.buf = T(g, "jy");
    ops[H_U1].dst.has_unit = true;
    ops[H_U1].dst.unit = (struct ir_strided){8, 0, 4};
    ops[H_U2] = P(g, IR_KIND_RELU, "u2", "a");
    ops[H_U2].dst.buf = T(g, "jy");
    ops[H_U2].dst.has_unit = true;
    ops[H_U2].dst.unit = (struct ir_strided){8, 4, 4};
    ops[H_JR] = P(g, IR_KIND_SILU, "j2", "jy");
    return ops;
}

/* Reads and writes of single ops: inputs, internal results, row params, keeps, placements, state in place. */
static void test_reads_writes(void)
{
    struct ir_graph *g = hand_graph();
    struct ir_op *ops = hand_ops(g);
    ir_tid out[16];
    int n = ir_op_reads(&ops[H_ADDNORM], out, 16);
    CHECKF(same_tids(g, out, n, "b c d"), "add_norm reads its inputs and the sum its norm reads (%d)", n);
    n = ir_op_writes(&ops[H_ADDNORM], out, 16);
    CHECKF(same_tids(g, out, n, "e d"), "add_norm writes its result and its kept sum (%d)", n);
    n = ir_op_reads(&ops[H_SETROW], out, 16);
    CHECK(same_tids(g, out, n, "st e p"));
    n = ir_op_writes(&ops[H_SETROW], out, 16);
    CHECK(same_tids(g, out, n, "st"));
    n = ir_op_reads(&ops[H_ROPEROW], out, 16);
    CHECKF(same_tids(g, out, n, "c cos sin p"), "a row destination's param is read");
    n = ir_op_writes(&ops[H_ROPEROW], out, 16);
    CHECKF(same_tids(g, out, n, "st"), "a row-placed result writes the table, not itself");
    n = ir_op_writes(&ops[H_U1], out, 16);
    CHECK(same_tids(g, out, n, "jy"));
    /* cap: the count is the whole set even when fewer are written */
    ir_tid two[2] = {IR_NONE, IR_NONE};
    CHECK(ir_op_reads(&ops[H_SETROW], two, 1) == 3 && two[0] == T(g, "p") && two[1] == IR_NONE);
    CHECK(ir_op_reads(&ops[H_SETROW], NULL, 0) == 3);

    /* a fused op whose part lands in a table's rows and whose other part writes state in place */
    struct ir_op inner[2] = {P(g, IR_KIND_ROPE, "f", "c cos sin"), P(g, IR_KIND_SET_ROW, "st", "st e p")};
    inner[0].dst.buf = T(g, "st");
    inner[0].dst.row = IR_ROWSEL_FIXED;
    inner[0].dst.row_fixed = 2;
    inner[0].dst.row_cols = 8;
    struct ir_op nested = F(g, IR_CLASS_ROPE_KV_APPEND, inner, 2, "st", "c cos sin e p");
    struct ir_op outer_parts[2] = {P(g, IR_KIND_SILU, "c", "b"), nested};
    struct ir_op outer = F(g, IR_CLASS_CROSS_LAYER_LAUNCH, outer_parts, 2, "st", "b cos sin e p");
    n = ir_op_writes(&outer, out, 16);
    CHECKF(same_tids(g, out, n, "st"), "internal silu result is not written; the table is");
    n = ir_op_reads(&outer, out, 16);
    CHECKF(same_tids(g, out, n, "b c cos sin e p st"), "reads inside nested parts count (%d)", n);
    ir_op_free(&outer);
    for (int i = 0; i < H_COUNT; i++)
        ir_op_free(&ops[i]);
    free(ops);
    ir_graph_free(g);
}

/* Readers of t as an array, for comparing. */
static int32_t readers(const struct ir_slots *s, const struct ir_graph *g, const char *t, int32_t *out)
{
    return ir_facts_readers(s, T(g, t), out, 16);
}

/* Every predicate on the hand-made schedule, then again after takes, puts and replaces. */
static void test_hand_schedule(void)
{
    struct ir_graph *g = hand_graph();
    struct ir_slots *s = ir_slots_new(g, hand_ops(g), H_COUNT);
    int32_t r[16];
    CHECK(ir_slots_len(s) == H_COUNT);
    CHECK(ir_slots_get(s, H_SILU) != NULL && ir_slots_get(s, -1) == NULL && ir_slots_get(s, H_COUNT) == NULL);

    CHECK(ir_facts_producer(s, T(g, "b")) == H_MATMUL);
    CHECK(ir_facts_producer(s, T(g, "e")) == H_ADDNORM);
    CHECKF(ir_facts_producer(s, T(g, "d")) == -1, "a kept part result has no producer");
    CHECK(ir_facts_maker(s, T(g, "d")) == H_ADDNORM);
    CHECKF(ir_facts_producer(s, T(g, "f")) == H_ROPEROW, "the row-placed result's op still has it as out");
    CHECK(ir_facts_producer(s, T(g, "st")) == H_SETROW);
    CHECK(ir_facts_producer(s, T(g, "a")) == -1 && ir_facts_maker(s, T(g, "a")) == -1);
    CHECK(ir_facts_producer(s, 9999) == -1 && ir_facts_producer(s, -1) == -1);

    int32_t rb[] = {H_SILU, H_ADDNORM};
    CHECK(same_slots(r, readers(s, g, "b", r), rb, 2));
    int32_t rd[] = {H_ADDNORM, H_ADD};
    CHECKF(same_slots(r, readers(s, g, "d", r), rd, 2), "the fused op reads its internal sum");
    int32_t rp[] = {H_SETROW, H_ROPEROW};
    CHECK(same_slots(r, readers(s, g, "p", r), rp, 2));
    int32_t rst[] = {H_SETROW};
    CHECK(same_slots(r, readers(s, g, "st", r), rst, 1));
    int32_t rjy[] = {H_JR};
    CHECK(same_slots(r, readers(s, g, "jy", r), rjy, 1));
    CHECK(readers(s, g, "o", r) == 0);
    CHECK(ir_facts_readers(s, T(g, "b"), r, 1) == 2 && r[0] == H_SILU);

    CHECK(ir_facts_observed(s, T(g, "o")) && !ir_facts_carried(s, T(g, "o")));
    CHECK(ir_facts_observed(s, T(g, "st")) && ir_facts_carried(s, T(g, "st")));
    CHECK(!ir_facts_observed(s, T(g, "b")) && !ir_facts_observed(s, -3));

    /* untouched */
    CHECK(!ir_facts_untouched(s, T(g, "st"), H_ADDNORM, H_ADD, false, NULL, 0));
    CHECK(ir_facts_untouched(s, T(g, "st"), H_ROPEROW, H_ADD, false, NULL, 0));
    int32_t both[] = {H_SETROW, H_ROPEROW};
    CHECK(ir_facts_untouched(s, T(g, "st"), H_ADDNORM, H_ADD, false, both, 2));
    CHECK(ir_facts_untouched(s, T(g, "c"), H_SILU, H_ADD, false, NULL, 0));
    CHECK(!ir_facts_untouched(s, T(g, "c"), H_MATMUL, H_ADD, false, NULL, 0));
    CHECK(!ir_facts_untouched(s, T(g, "c"), H_SILU, H_ADD, true, NULL, 0));
    CHECKF(ir_facts_untouched(s, T(g, "c"), H_SILU, H_ADDNORM, true, NULL, 0), "the range is strict");
    CHECK(ir_facts_untouched(s, T(g, "c"), H_ADD, H_MATMUL, true, NULL, 0));
    CHECK(!ir_facts_untouched(s, T(g, "jy"), H_MATMUL, H_JR, false, NULL, 0));

    /* crosses: moving j up to i */
    CHECKF(ir_facts_crosses(s, H_MATMUL, H_ADD, NULL, 0), "the add reads what the fused op writes");
    CHECK(!ir_facts_crosses(s, H_ADDNORM, H_ADD, NULL, 0));
    CHECKF(ir_facts_crosses(s, H_ADDNORM, H_ROPEROW, NULL, 0), "the row write crosses the set_row on st");
    int32_t g3[] = {H_SETROW};
    CHECK(!ir_facts_crosses(s, H_ADDNORM, H_ROPEROW, g3, 1));
    CHECKF(ir_facts_crosses(s, H_ADD, H_U2, NULL, 0), "both units write jy");
    CHECK(!ir_facts_crosses(s, H_U1, H_U2, NULL, 0));
    CHECK(ir_facts_crosses(s, H_MATMUL, H_JR, NULL, 0));

    /* sinks past: moving i down to j */
    CHECK(ir_facts_sinks_past(s, H_MATMUL, H_SETROW, NULL, 0));
    int32_t m2[] = {H_ADDNORM};
    CHECK(!ir_facts_sinks_past(s, H_SILU, H_SETROW, m2, 1));
    CHECK(ir_facts_sinks_past(s, H_SILU, H_SETROW, NULL, 0));
    CHECK(ir_facts_sinks_past(s, H_SETROW, H_ADD, NULL, 0));
    CHECK(!ir_facts_sinks_past(s, H_ROPEROW, H_ADD, NULL, 0));

    /* read only within */
    int32_t w12[] = {H_SILU, H_ADDNORM};
    CHECK(ir_facts_read_only_within(s, H_MATMUL, w12, 2));
    CHECK(!ir_facts_read_only_within(s, H_MATMUL, w12, 1));
    int32_t w5[] = {H_ADD};
    CHECK(!ir_facts_read_only_within(s, H_ADDNORM, w5, 1));
    int32_t w35[] = {H_SETROW, H_ADD};
    CHECKF(!ir_facts_read_only_within(s, H_ADDNORM, w35, 2), "the fused op reads its own kept sum");
    int32_t w235[] = {H_ADDNORM, H_SETROW, H_ADD};
    CHECK(ir_facts_read_only_within(s, H_ADDNORM, w235, 3));
    CHECKF(!ir_facts_read_only_within(s, H_ADD, NULL, 0), "o is observed");
    CHECKF(!ir_facts_read_only_within(s, H_SETROW, w35, 2), "st is carried");

    /* take the fused op: its results lose their maker and its reads their reader */
    struct ir_op taken = ir_slots_take(s, H_ADDNORM);
    CHECK(ir_slots_get(s, H_ADDNORM) == NULL);
    CHECK(ir_facts_producer(s, T(g, "e")) == -1 && ir_facts_maker(s, T(g, "d")) == -1);
    int32_t rb1[] = {H_SILU};
    CHECK(same_slots(r, readers(s, g, "b", r), rb1, 1));
    CHECK(ir_facts_untouched(s, T(g, "d"), H_MATMUL, H_ADD, true, NULL, 0));
    CHECK(!ir_facts_crosses(s, H_MATMUL, H_ADD, NULL, 0));
    /* put it back one slot later (where the set_row was taken) */
    struct ir_op set = ir_slots_take(s, H_SETROW);
    ir_slots_put(s, H_SETROW, taken);
    ir_slots_put(s, H_ADDNORM, set);
    CHECK(ir_facts_producer(s, T(g, "e")) == H_SETROW && ir_facts_producer(s, T(g, "st")) == H_ADDNORM);
    int32_t rb2[] = {H_SILU, H_SETROW};
    CHECK(same_slots(r, readers(s, g, "b", r), rb2, 2));
    /* replace the silu by a relu of a: b loses a reader */
    struct ir_op relu = P(g, IR_KIND_RELU, "c", "a");
    ir_slots_replace(s, H_SILU, relu);
    int32_t rb3[] = {H_SETROW};
    CHECK(same_slots(r, readers(s, g, "b", r), rb3, 1));
    CHECK(ir_facts_producer(s, T(g, "c")) == H_SILU);

    /* a clone answers alike and is independent */
    struct ir_slots *c = ir_slots_clone(s);
    CHECK(ir_facts_producer(c, T(g, "e")) == H_SETROW);
    struct ir_op gone = ir_slots_take(c, H_SETROW);
    ir_op_free(&gone);
    CHECK(ir_facts_producer(c, T(g, "e")) == -1 && ir_facts_producer(s, T(g, "e")) == H_SETROW);
    ir_slots_free(c);

    /* into ops: the live ops in order; taken slots skipped */
    struct ir_op t0 = ir_slots_take(s, H_MATMUL);
    ir_op_free(&t0);
    int32_t n = 0;
    struct ir_op *ops = ir_slots_into_ops(s, &n);
    CHECK(n == H_COUNT - 1);
    CHECK(n > 2 && ops[0].out == T(g, "c") && ops[1].out == T(g, "st") && ops[2].out == T(g, "e"));
    CHECK(ir_slots_get(s, H_SILU) == NULL && ir_facts_producer(s, T(g, "c")) == -1);
    for (int32_t i = 0; i < n; i++)
        ir_op_free(&ops[i]);
    free(ops);
    ir_slots_free(s);
    ir_graph_free(g);
}

/* Slots stay right when the graph gains tensors while being rewritten. */
static void test_graph_grows(void)
{
    struct ir_graph *g = hand_graph();
    struct ir_slots *s = ir_slots_new(g, hand_ops(g), H_COUNT);
    for (int i = 0; i < 100; i++) {
        char name[16];
        snprintf(name, sizeof name, "new%d", i);
        ir_tensor_add(g, name, IR_ELEM_F32, 1, 8, IR_ROLE_ACTIVATION);
    }
    ir_slots_replace(s, H_ADD, P(g, IR_KIND_ELEMENTWISE, "new99", "d new50"));
    CHECK(ir_facts_producer(s, T(g, "new99")) == H_ADD);
    int32_t r[4];
    CHECK(ir_facts_readers(s, T(g, "new50"), r, 4) == 1 && r[0] == H_ADD);
    CHECK(ir_facts_readers(s, T(g, "new7"), r, 4) == 0);
    ir_slots_free(s);
    ir_graph_free(g);
}

/* ── Agreement with the specification on generated schedules ─────────────────────────────────────────────── */

/* A small deterministic PRNG (splitmix64). */
static uint64_t rng_state;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A uniform integer in [0, n). */
static int32_t below(int32_t n)
{
    return n > 0 ? (int32_t)(rnd() % (uint64_t)n) : 0;
}

/* A random destination for result out over nt tensors: own, a row (fixed or param), a unit, or both. */
static struct ir_dst random_dst(ir_tid out, int32_t nt)
{
    struct ir_dst d = ir_dst_own(out);
    switch (below(5)) {
    case 0:
        d.buf = below(nt);
        d.row = IR_ROWSEL_FIXED;
        d.row_fixed = 1;
        d.row_cols = 4;
        break;
    case 1:
        d.buf = below(nt);
        d.row = IR_ROWSEL_PARAM;
        d.row_param = below(nt);
        d.row_cols = 4;
        break;
    case 2:
        d.buf = below(nt);
        d.has_unit = true;
        d.unit = (struct ir_strided){8, 0, 4};
        break;
    default:
        break;
    }
    return d;
}

/* A random op over nt tensors, nested at most `depth` fused levels. */
static struct ir_op random_op(int32_t nt, int depth)
{
    static const enum ir_kind kinds[] = {IR_KIND_SILU,        IR_KIND_ELEMENTWISE, IR_KIND_MATMUL,
                                         IR_KIND_SET_ROW,     IR_KIND_CAUSAL_CONV, IR_KIND_GATED_DELTA,
                                         IR_KIND_ROW_GATHER};
    ir_tid ins[8];
    int32_t nins = below(9);
    for (int32_t k = 0; k < nins; k++)
        ins[k] = below(nt);
    ir_tid out = below(nt);
    if (depth > 0 && below(4) == 0) {
        int32_t nparts = 1 + below(3);
        struct ir_op *parts = malloc(sizeof *parts * (size_t)nparts);
        for (int32_t p = 0; p < nparts; p++)
            parts[p] = random_op(nt, depth - 1);
        struct ir_op op = ir_op_fused(IR_CLASS_ELEMENTWISE_CHAINS, parts, nparts, ins, NULL, nins, parts[0].out,
                                      random_dst(parts[0].out, nt));
        ir_tid keeps[3];
        int32_t nkeeps = below(3);
        for (int32_t k = 0; k < nkeeps; k++)
            keeps[k] = below(2) ? parts[below(nparts)].out : below(nt);
        ir_op_set_keeps(&op, keeps, nkeeps);
        return op;
    }
    struct ir_op op;
    if (below(8) == 0) {
        op = ir_op_prim(IR_KIND_SILU, ins, nins > 1 ? 1 : nins, out);
        op.sym = below(2) ? IR_SYM_VIEW : IR_SYM_QUANT;
    } else {
        op = ir_op_prim(kinds[below((int32_t)(sizeof kinds / sizeof kinds[0]))], ins, nins, out);
    }
    op.dst = random_dst(out, nt);
    return op;
}

/* A random set of up to 3 slots below n. */
static int32_t random_group(int32_t n, int32_t *group)
{
    int32_t m = below(4);
    for (int32_t k = 0; k < m; k++)
        group[k] = below(n + 1) - 1;
    return m;
}

/* Whether the writers of t, and the quantified and group questions (none_sinks_past, all_read_only_within,
 * readers_within) over a random set of up to 12 slots (repeats and slots out of range among them), disagree with
 * the specification asked slot by slot; the disagreement into note. */
static bool quantified_disagree(const struct ir_slots *s, int32_t nt, char *note, size_t cap)
{
    int32_t n = ir_slots_len(s), set[12], group[12], w[64], spec = 0;
    ir_tid t = below(nt + 2) - 1;
    for (int32_t k = 0; k < n; k++) {
        const struct ir_op *op = ir_slots_get(s, k);
        ir_tid wr[64];
        int nw = op && t >= 0 && t < nt ? ir_op_writes(op, wr, 64) : 0;
        bool writes = false;
        for (int x = 0; x < nw && x < 64; x++)
            writes = writes || wr[x] == t;
        if (writes)
            w[spec++] = k;
    }
    int32_t got[64], ngot = ir_facts_writers(s, t, got, 64);
    if (!same_slots(got, ngot, w, spec))
        return snprintf(note, cap, "writers of %d", (int)t), true;
    int32_t nset = below(13), ngroup = below(13), j = below(n + 2) - 1;
    for (int32_t k = 0; k < nset; k++)
        set[k] = below(n + 2) - 1;
    for (int32_t k = 0; k < ngroup; k++)
        group[k] = below(n + 2) - 1;
    bool none_past = true, all_within = true, readers_in = true;
    for (int32_t k = 0; k < nset; k++) {
        none_past = none_past && !ir_facts_spec_sinks_past(s, set[k], j, group, ngroup);
        all_within = all_within && ir_facts_spec_read_only_within(s, set[k], group, ngroup);
    }
    int32_t rd[64], nrd = ir_facts_spec_readers(s, t, rd, 64);
    for (int32_t x = 0; x < nrd && x < 64; x++) {
        bool in = false;
        for (int32_t k = 0; k < ngroup; k++)
            in = in || group[k] == rd[x];
        readers_in = readers_in && in;
    }
    if (ir_facts_none_sinks_past(s, set, nset, j, group, ngroup) != none_past)
        return snprintf(note, cap, "none_sinks_past(%d movers, %d)", (int)nset, (int)j), true;
    if (ir_facts_all_read_only_within(s, set, nset, group, ngroup) != all_within)
        return snprintf(note, cap, "all_read_only_within(%d slots)", (int)nset), true;
    if (ir_facts_readers_within(s, t, group, ngroup) != readers_in)
        return snprintf(note, cap, "readers_within(%d)", (int)t), true;
    return false;
}

/* Compare every indexed predicate with its specification over many queries; count and note disagreements. */
static int agree(const struct ir_slots *s, int32_t nt, char *note, size_t cap)
{
    int32_t n = ir_slots_len(s), a[64], b[64];
    for (ir_tid t = -1; t <= nt; t++) {
        if (ir_facts_producer(s, t) != ir_facts_spec_producer(s, t) ||
            ir_facts_maker(s, t) != ir_facts_spec_maker(s, t)) {
            snprintf(note, cap, "producer/maker of %d", (int)t);
            return 1;
        }
        int32_t na = ir_facts_readers(s, t, a, 64), nb = ir_facts_spec_readers(s, t, b, 64);
        if (!same_slots(a, na, b, nb)) {
            snprintf(note, cap, "readers of %d", (int)t);
            return 1;
        }
    }
    for (int q = 0; q < 8; q++) {
        int32_t i = below(n + 2) - 1, j = below(n + 2) - 1, group[4], ng = random_group(n, group);
        ir_tid t = below(nt);
        bool reads = below(2);
        if (ir_facts_untouched(s, t, i, j, reads, group, ng) != ir_facts_spec_untouched(s, t, i, j, reads, group, ng))
            return snprintf(note, cap, "untouched(%d, %d, %d, %d)", (int)t, (int)i, (int)j, reads), 1;
        if (ir_facts_crosses(s, i, j, group, ng) != ir_facts_spec_crosses(s, i, j, group, ng))
            return snprintf(note, cap, "crosses(%d, %d)", (int)i, (int)j), 1;
        if (ir_facts_sinks_past(s, i, j, group, ng) != ir_facts_spec_sinks_past(s, i, j, group, ng))
            return snprintf(note, cap, "sinks_past(%d, %d)", (int)i, (int)j), 1;
        if (ir_facts_read_only_within(s, i, group, ng) != ir_facts_spec_read_only_within(s, i, group, ng))
            return snprintf(note, cap, "read_only_within(%d)", (int)i), 1;
        if (quantified_disagree(s, nt, note, cap))
            return 1;
    }
    return 0;
}

/* 10,000 generated schedules: random ops over a few tensors, then rounds of takes, puts and replaces, every
 * predicate compared with its specification after each round. */
static void test_agreement(void)
{
    int failures = 0;
    long queries = 0;
    char note[128] = "";
    rng_state = 0x5eedfac7ull;
    for (int round = 0; round < 10000; round++) {
        struct ir_graph *g = ir_graph_new();
        int32_t nt = 3 + below(6);
        for (int32_t t = 0; t < nt; t++) {
            char name[8];
            snprintf(name, sizeof name, "t%d", (int)t);
            ir_tid id = ir_tensor_add(g, name, IR_ELEM_F32, 1, 8, (enum ir_role)below(IR_ROLE_COUNT));
            g->tensors[id].observed = below(4) == 0;
            g->tensors[id].carried = below(6) == 0;
        }
        int32_t n = 1 + below(10);
        struct ir_op *ops = calloc((size_t)n, sizeof *ops);
        for (int32_t i = 0; i < n; i++)
            ops[i] = random_op(nt, 2);
        struct ir_slots *s = ir_slots_new(g, ops, n);
        struct ir_op held[8];
        int nheld = 0;
        for (int step = 0; step < 3 && !failures; step++) {
            failures += agree(s, nt, note, sizeof note);
            queries++;
            for (int m = 0; m < 3; m++) {
                int32_t i = below(n);
                bool live = ir_slots_get(s, i) != NULL;
                int what = below(3);
                if (live && what == 0 && nheld < 4)
                    held[nheld++] = ir_slots_take(s, i);
                else if (!live && nheld > 0)
                    ir_slots_put(s, i, held[--nheld]);
                else if (live && what == 1)
                    ir_slots_replace(s, i, random_op(nt, 2));
                else if (!live)
                    ir_slots_put(s, i, random_op(nt, 2));
            }
            if (step == 1) { /* continue on a clone, freeing the original */
                struct ir_slots *c = ir_slots_clone(s);
                ir_slots_free(s);
                s = c;
            }
        }
        while (nheld > 0)
            ir_op_free(&held[--nheld]);
        ir_slots_free(s);
        ir_graph_free(g);
        if (failures) {
            fprintf(stderr, "schedule %d disagrees: %s\n", round, note);
            break;
        }
    }
    CHECKF(failures == 0, "indexed facts agree with the specification (%s)", note);
    CHECK(queries >= 10000 * 3);
}

/* Whether two slots hold the same ops in the same slots, and their indexes answer alike. */
static bool same_state(const struct ir_slots *a, const struct ir_slots *b, int32_t nt)
{
    int32_t n = ir_slots_len(a), ra[64], rb[64];
    if (n != ir_slots_len(b))
        return false;
    for (int32_t i = 0; i < n; i++) {
        const struct ir_op *x = ir_slots_get(a, i), *y = ir_slots_get(b, i);
        if ((x == NULL) != (y == NULL) || (x && !ir_op_equal(x, y)))
            return false;
    }
    for (ir_tid t = 0; t < nt; t++) {
        int32_t na = ir_facts_readers(a, t, ra, 64), nb = ir_facts_readers(b, t, rb, 64);
        if (ir_facts_producer(a, t) != ir_facts_producer(b, t) || ir_facts_maker(a, t) != ir_facts_maker(b, t) ||
            !same_slots(ra, na, rb, nb))
            return false;
    }
    return true;
}

/* 2,000 generated schedules: the slots journal a round of takes, puts and replaces (the facts still agreeing with
 * their specification mid-journal), roll back, and are then equal to a copy taken before, ops and index alike; a
 * journal with no change rolls back to the same slots too. */
static void test_journal(void)
{
    int failures = 0, changed = 0;
    char note[128] = "";
    rng_state = 0x70117acull;
    for (int round = 0; round < 2000 && !failures; round++) {
        struct ir_graph *g = ir_graph_new();
        int32_t nt = 3 + below(6);
        for (int32_t t = 0; t < nt; t++) {
            char name[8];
            snprintf(name, sizeof name, "t%d", (int)t);
            ir_tensor_add(g, name, IR_ELEM_F32, 1, 8, (enum ir_role)below(IR_ROLE_COUNT));
        }
        int32_t n = 1 + below(10);
        struct ir_op *ops = calloc((size_t)n, sizeof *ops);
        for (int32_t i = 0; i < n; i++)
            ops[i] = random_op(nt, 2);
        struct ir_slots *s = ir_slots_new(g, ops, n);
        struct ir_slots *before = ir_slots_clone(s);
        struct ir_op held[8];
        int nheld = 0;
        ir_slots_journal(s);
        int moves = below(8);
        for (int m = 0; m < moves; m++) {
            int32_t i = below(n);
            bool live = ir_slots_get(s, i) != NULL;
            if (live && below(2) == 0 && nheld < 8)
                held[nheld++] = ir_slots_take(s, i);
            else if (live)
                ir_slots_replace(s, i, random_op(nt, 2));
            else if (nheld > 0 && below(2) == 0)
                ir_slots_put(s, i, held[--nheld]);
            else
                ir_slots_put(s, i, random_op(nt, 2));
        }
        changed += moves > 0 && !same_state(s, before, nt);
        if (agree(s, nt, note, sizeof note))
            failures++;
        ir_slots_rollback(s);
        if (!failures && !same_state(s, before, nt)) {
            snprintf(note, sizeof note, "schedule %d: the rollback left other slots", round);
            failures++;
        }
        if (!failures && agree(s, nt, note, sizeof note))
            failures++;
        while (nheld > 0)
            ir_op_free(&held[--nheld]);
        ir_slots_free(before);
        ir_slots_free(s);
        ir_graph_free(g);
    }
    CHECKF(failures == 0, "journaled changes roll back to the slots before them (%s)", note);
    CHECKF(changed > 1000, "the schedules changed the slots (%d of 2000)", changed);
}

int main(void)
{
    test_reads_writes();
    test_hand_schedule();
    test_graph_grows();
    test_agreement();
    test_journal();
    return check_done("facts");
}
