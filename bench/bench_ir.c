/* bench/bench_ir.c — how fast the IR's text format, validator and facts are on a large graph.
 *
 * Builds a 20,000-op decoder-like graph through the ir.h API (norms, projections, ropes, cache row writes into
 * state, attention, residual adds, gated MLPs, and an add_norm fused block every fourth layer), prints it, then
 * times parse (which validates) + validate + print over several repetitions and prints the medians; then runs
 * 1,000,000 mixed facts queries on its slots and prints the average time a query. Targets: parse + validate +
 * print under 100 ms; queries under 1 µs on average. */
#include "ir/ir.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OPS 20000
#define REPS 9
#define QUERIES 1000000

enum { D = 64, H = 4, KV = 2, HD = 16, HALF = 8, L = 32, FF = 128 };

/* Seconds on a monotonic clock. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The id of tensor "<prefix><name>", adding it with the given shape and role when absent. */
static ir_tid tensor(struct ir_graph *g, int layer, const char *name, int64_t rows, int64_t cols, enum ir_role role)
{
    char full[64];
    if (layer >= 0)
        snprintf(full, sizeof full, "l%d.%s", layer, name);
    else
        snprintf(full, sizeof full, "%s", name);
    ir_tid t = ir_tensor_find(g, full, strlen(full));
    if (t == IR_NONE)
        t = ir_tensor_add(g, full, role == IR_ROLE_PARAM ? IR_ELEM_I32 : IR_ELEM_F32, rows, cols, role);
    return t;
}

/* A layer's activation of cols values. */
static ir_tid act(struct ir_graph *g, int layer, const char *name, int64_t cols)
{
    return tensor(g, layer, name, 1, cols, IR_ROLE_ACTIVATION);
}

/* A layer's constant weight. */
static ir_tid weight(struct ir_graph *g, int layer, const char *name, int64_t rows, int64_t cols)
{
    return tensor(g, layer, name, rows, cols, IR_ROLE_CONSTANT);
}

/* y = x · W (one row). */
static struct ir_op matmul(ir_tid x, ir_tid w, ir_tid y, int64_t k, int64_t n)
{
    ir_tid ins[2] = {x, w};
    struct ir_op op = ir_op_prim(IR_KIND_MATMUL, ins, 2, y);
    op.spec.u.matmul = (struct ir_matmul){1, k, n};
    return op;
}

/* y = norm(x [+ res]) · w over D values. */
static struct ir_op norm(ir_tid x, ir_tid w, ir_tid y)
{
    ir_tid ins[2] = {x, w};
    struct ir_op op = ir_op_prim(IR_KIND_RMS_NORM, ins, 2, y);
    op.spec.u.rms_norm = (struct ir_rms_norm){1, D, 1e-6, true, 0.0, false, IR_NORM_RMS, false};
    return op;
}

/* y = a + b over D values. */
static struct ir_op add(ir_tid a, ir_tid b, ir_tid y)
{
    ir_tid ins[2] = {a, b};
    struct ir_op op = ir_op_prim(IR_KIND_ELEMENTWISE, ins, 2, y);
    op.spec.u.elementwise = (struct ir_elementwise){IR_EW_ADD, D, 0};
    return op;
}

/* y = rope(x) of h heads at the named position. */
static struct ir_op rope(struct ir_graph *g, ir_tid x, ir_tid y, int64_t h)
{
    ir_tid ins[4] = {x, tensor(g, -1, "cos", L, HALF, IR_ROLE_CONSTANT), tensor(g, -1, "sin", L, HALF, IR_ROLE_CONSTANT),
                     tensor(g, -1, "pos", 1, 1, IR_ROLE_PARAM)};
    struct ir_op op = ir_op_prim(IR_KIND_ROPE, ins, 4, y);
    op.spec.u.rope = (struct ir_rope){h, HD, HALF, 1, {IR_RIDX_NAMED, 0}, {false, 0.0}, false, {0}};
    return op;
}

/* cache row at pos = src. */
static struct ir_op set_row(struct ir_graph *g, ir_tid cache, ir_tid src)
{
    ir_tid ins[3] = {cache, src, tensor(g, -1, "pos", 1, 1, IR_ROLE_PARAM)};
    struct ir_op op = ir_op_prim(IR_KIND_SET_ROW, ins, 3, cache);
    op.spec.u.set_row = (struct ir_set_row){L, KV * HD, 1, {IR_RIDX_NAMED, 0}};
    return op;
}

/* One decoder layer reading h, writing its output activation; returns it. */
static ir_tid layer(struct ir_graph *g, int i, ir_tid h)
{
    ir_tid pos = tensor(g, -1, "pos", 1, 1, IR_ROLE_PARAM);
    ir_tid kc = tensor(g, i, "kc", L, KV * HD, IR_ROLE_STATE), vc = tensor(g, i, "vc", L, KV * HD, IR_ROLE_STATE);
    g->tensors[kc].carried = g->tensors[vc].carried = true;
    ir_tid n1 = act(g, i, "n1", D), q = act(g, i, "q", D), k = act(g, i, "k", KV * HD), v = act(g, i, "v", KV * HD);
    ir_tid qr = act(g, i, "qr", D), kr = act(g, i, "kr", KV * HD), att = act(g, i, "att", D), o = act(g, i, "o", D);
    ir_tid r1 = act(g, i, "r1", D), n2 = act(g, i, "n2", D), gt = act(g, i, "g", FF), up = act(g, i, "u", FF);
    ir_tid sw = act(g, i, "sw", FF), dn = act(g, i, "dn", D), r2 = act(g, i, "r2", D);
    ir_graph_push(g, norm(h, weight(g, i, "n1w", 1, D), n1));
    ir_graph_push(g, matmul(n1, weight(g, i, "wq", D, D), q, D, D));
    ir_graph_push(g, matmul(n1, weight(g, i, "wk", D, KV * HD), k, D, KV * HD));
    ir_graph_push(g, matmul(n1, weight(g, i, "wv", D, KV * HD), v, D, KV * HD));
    ir_graph_push(g, rope(g, q, qr, H));
    ir_graph_push(g, rope(g, k, kr, KV));
    ir_graph_push(g, set_row(g, kc, kr));
    ir_graph_push(g, set_row(g, vc, v));
    ir_tid ains[4] = {qr, kc, vc, pos};
    struct ir_op a = ir_op_prim(IR_KIND_ATTENTION, ains, 4, att);
    a.spec.u.attention = (struct ir_attention){H, KV, HD, HD, L, 1, {IR_RIDX_NAMED, 0}, {false, 0}, {false, 0}, false, 0};
    ir_graph_push(g, a);
    ir_graph_push(g, matmul(att, weight(g, i, "wo", D, D), o, D, D));
    ir_tid n2w = weight(g, i, "n2w", 1, D);
    if (i % 4 == 3) { /* the residual add and the norm of the sum as one add_norm block keeping the sum */
        struct ir_op *parts = malloc(2 * sizeof *parts);
        parts[0] = add(h, o, r1);
        parts[1] = norm(r1, n2w, n2);
        ir_tid ins[3] = {h, o, n2w};
        struct ir_op f = ir_op_fused(IR_CLASS_ADD_NORM, parts, 2, ins, NULL, 3, n2, ir_dst_own(n2));
        ir_op_set_keeps(&f, &r1, 1);
        ir_graph_push(g, f);
    } else {
        ir_graph_push(g, add(h, o, r1));
        ir_graph_push(g, norm(r1, n2w, n2));
    }
    ir_graph_push(g, matmul(n2, weight(g, i, "wg", D, FF), gt, D, FF));
    ir_graph_push(g, matmul(n2, weight(g, i, "wu", D, FF), up, D, FF));
    ir_tid sins[2] = {gt, up};
    struct ir_op s = ir_op_prim(IR_KIND_SWIGLU, sins, 2, sw);
    s.spec.u.swiglu.total = FF;
    ir_graph_push(g, s);
    ir_graph_push(g, matmul(sw, weight(g, i, "wd", FF, D), dn, FF, D));
    ir_graph_push(g, add(r1, dn, r2));
    return r2;
}

/* A graph of exactly OPS ops: layers until the next would not fit, then scales of the last output. */
static struct ir_graph *build(void)
{
    struct ir_graph *g = ir_graph_new();
    ir_graph_set_meta(g, "bench", "llama", "decode");
    ir_tid h = tensor(g, -1, "x", 1, D, IR_ROLE_INPUT);
    int i = 0;
    while (g->nops + 17 <= OPS)
        h = layer(g, i++, h);
    for (int k = 0; g->nops < OPS; k++) {
        char name[32];
        snprintf(name, sizeof name, "tail%d", k);
        ir_tid y = act(g, -1, name, D);
        struct ir_op op = ir_op_prim(IR_KIND_SCALE, &h, 1, y);
        op.spec.u.scale = (struct ir_scale){D, 0.5};
        ir_graph_push(g, op);
        h = y;
    }
    g->tensors[h].observed = true;
    return g;
}

/* Order doubles ascending. */
static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of n samples (sorted in place). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, dbl_cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Time parse + validate + print of text REPS times; print the medians. 0 on success. */
static int bench_text(const char *text, size_t len)
{
    double parse[REPS], valid[REPS], print[REPS], total[REPS];
    char err[IR_ERR_LEN];
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        struct ir_graph *g = ir_parse(text, len, "bench.fc", err);
        double t1 = now();
        if (!g) {
            fprintf(stderr, "bench_ir: parse failed: %s\n", err);
            return 1;
        }
        int bad = ir_validate(g, err);
        double t2 = now();
        size_t n = 0;
        char *again = ir_print(g, &n);
        double t3 = now();
        if (bad || !again || n != len || memcmp(again, text, len) != 0) {
            fprintf(stderr, "bench_ir: %s\n", bad ? err : "print of the parsed graph differs");
            free(again);
            ir_graph_free(g);
            return 1;
        }
        free(again);
        ir_graph_free(g);
        parse[r] = (t1 - t0) * 1e3, valid[r] = (t2 - t1) * 1e3, print[r] = (t3 - t2) * 1e3, total[r] = (t3 - t0) * 1e3;
    }
    printf("parse (validating): %8.2f ms median of %d\n", median(parse, REPS), REPS);
    printf("validate:           %8.2f ms\n", median(valid, REPS));
    printf("print:              %8.2f ms\n", median(print, REPS));
    printf("parse+validate+print: %6.2f ms (target < 100 ms)\n", median(total, REPS));
    return 0;
}

/* A small deterministic PRNG (xorshift64*). */
static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 0x2545f4914f6cdd1dull) >> 32) % n;
}

/* Time QUERIES mixed facts queries on the graph's slots; print the average. */
static void bench_facts(const struct ir_graph *g)
{
    struct ir_op *ops = malloc(sizeof *ops * (size_t)g->nops);
    for (int32_t i = 0; i < g->nops; i++)
        ops[i] = ir_op_clone(&g->ops[i]);
    double t0 = now();
    struct ir_slots *s = ir_slots_new(g, ops, g->nops);
    double t1 = now();
    printf("slots index:        %8.2f ms for %d ops\n", (t1 - t0) * 1e3, (int)g->nops);
    int32_t out[64], n = g->nops;
    long sink = 0;
    t0 = now();
    for (int q = 0; q < QUERIES; q++) {
        ir_tid t = (ir_tid)rnd((uint32_t)g->ntensors);
        int32_t i = (int32_t)rnd((uint32_t)n), j = i + 1 + (int32_t)rnd(40), group[2] = {i + 1, i + 2};
        switch (q % 5) {
        case 0: sink += ir_facts_producer(s, t); break;
        case 1: sink += ir_facts_readers(s, t, out, 64); break;
        case 2: sink += ir_facts_untouched(s, t, i, j, q & 8, group, 2); break;
        case 3: sink += ir_facts_crosses(s, i, j, group, 2); break;
        case 4: sink += ir_facts_sinks_past(s, i, j, group, 2); break;
        }
    }
    t1 = now();
    printf("facts queries:      %8.1f ns/query average over %d (target < 1000 ns) [%ld]\n",
           (t1 - t0) * 1e9 / QUERIES, QUERIES, sink % 10);
    ir_slots_free(s);
}

int main(void)
{
    struct ir_graph *g = build();
    char err[IR_ERR_LEN];
    if (ir_validate(g, err) != 0) {
        fprintf(stderr, "bench_ir: generated graph invalid: %s\n", err);
        ir_graph_free(g);
        return 1;
    }
    size_t len = 0;
    char *text = ir_print(g, &len);
    if (!text) {
        fprintf(stderr, "bench_ir: print failed\n");
        ir_graph_free(g);
        return 1;
    }
    printf("graph: %d ops, %d tensors, %zu bytes of text\n", (int)g->nops, (int)g->ntensors, len);
    int rc = bench_text(text, len);
    if (rc == 0)
        bench_facts(g);
    free(text);
    ir_graph_free(g);
    return rc;
}
