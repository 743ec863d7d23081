/* tests/test_eval_scale.c — the evaluator's fast paths keep its bits: every product path (scalar, portable vector
 * code, AVX2, AVX-512, those this CPU runs) and every thread count gives the scalar single-thread values bit for bit,
 * on odd sizes (tails of a vector, of a panel, of a q8_0 block) and on zoo graphs of every kind of op; a prefill's
 * mixtures batched per expert give each op's own bits and the dense formula's (unchosen experts weighed 0); freeing
 * each activation after its last reader changes no observed or carried bit, step after step; seeding gives the same
 * bytes on every thread count, lazily (a gathered table's rows when gathered) or eagerly, and pinned bytes. */
#include "ir/eval_values.h"
#include "models/models.h"
#include "rules/rules.h"
#include "shim/shim.h"
#include "check.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The dense formula here keeps each product and sum separately rounded, as the evaluator does. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* The paths in the order they are tried; each is held to the first. */
static const enum ir_eval_path paths[] = {IR_EVAL_PATH_SCALAR, IR_EVAL_PATH_PORTABLE, IR_EVAL_PATH_AVX2,
                                          IR_EVAL_PATH_AVX512};
static const int thread_counts[] = {1, 2, 3, 5};

/* Every plain tensor's values of g after one evaluation from seed 1 (its f32 values concatenated, malloc'd; *n
 * their count), or NULL when it fails. */
static float *evaluate(const struct ir_graph *g, int64_t *n)
{
    char err[IR_ERR_LEN] = "";
    struct ir_values *v = ir_values_new(g, 1, err);
    CHECKF(v != NULL, "%s", err);
    int rc = v ? ir_eval(g, v, err) : -1;
    CHECKF(rc == 0, "%s", err);
    int64_t total = 0;
    for (ir_tid t = 0; rc == 0 && t < g->ntensors; t++)
        total += ir_values_cdata(v, t) ? g->tensors[t].rows * g->tensors[t].cols : 0;
    float *all = rc == 0 ? malloc(sizeof(float) * (size_t)(total + 1)) : NULL;
    int64_t at = 0;
    for (ir_tid t = 0; all && t < g->ntensors; t++) {
        const float *d = ir_values_cdata(v, t);
        int64_t len = d ? g->tensors[t].rows * g->tensors[t].cols : 0;
        if (len)
            memcpy(all + at, d, sizeof(float) * (size_t)len);
        at += len;
    }
    ir_values_free(v);
    *n = at;
    return all;
}

/* Whether g evaluates to the same bits under every path and thread count as under the scalar path alone; what
 * names it in a failure. */
static void same_everywhere(const struct ir_graph *g, const char *what)
{
    ir_eval_use_path(IR_EVAL_PATH_SCALAR);
    ir_eval_set_threads(1);
    int64_t n = 0, m = 0;
    float *want = evaluate(g, &n);
    bool nonzero = false;
    for (int64_t i = 0; want && i < n && !nonzero; i++)
        nonzero = want[i] != 0.0f;
    CHECKF(nonzero, "%s: the reference values are all zero", what);
    for (size_t p = 1; want && p < sizeof paths / sizeof paths[0]; p++) {
        if (ir_eval_use_path(paths[p]) != paths[p])
            continue; /* this CPU does not run it */
        for (size_t k = 0; k < sizeof thread_counts / sizeof thread_counts[0]; k++) {
            ir_eval_set_threads(thread_counts[k]);
            float *got = evaluate(g, &m);
            CHECKF(got && m == n && memcmp(got, want, sizeof(float) * (size_t)n) == 0,
                   "%s: path %d, %d threads: other bits than the scalar path's", what, (int)paths[p],
                   thread_counts[k]);
            free(got);
        }
    }
    free(want);
    ir_eval_use_path(IR_EVAL_PATH_AUTO);
    ir_eval_set_threads(1);
}

/* An f32 tensor of g. */
static ir_tid F(struct ir_graph *g, const char *name, int64_t rows, int64_t cols, enum ir_role role)
{
    ir_tid t = ir_tensor_add(g, name, IR_ELEM_F32, rows, cols, role);
    CHECKF(t != IR_NONE, "tensor %s", name);
    return t;
}

/* Push y = x · w (m × k times k × n) onto g: w plain, or q8_0 checkpoint rows (transposed: a stored row an output). */
static void push_matmul(struct ir_graph *g, const char *tag, int64_t m, int64_t k, int64_t n, bool q8,
                        bool transposed)
{
    char xn[32], wn[32], yn[32];
    snprintf(xn, sizeof xn, "x_%s", tag);
    snprintf(wn, sizeof wn, "w_%s", tag);
    snprintf(yn, sizeof yn, "y_%s", tag);
    ir_tid x = F(g, xn, m, k, IR_ROLE_INPUT), w = F(g, wn, k, n, IR_ROLE_CONSTANT);
    ir_tid y = F(g, yn, m, n, IR_ROLE_ACTIVATION);
    g->tensors[w].checkpoint = q8;
    g->tensors[w].format = q8 ? IR_FMT_Q8_0 : IR_FMT_F32;
    g->tensors[w].transposed = transposed;
    g->tensors[y].observed = true;
    struct ir_op op = ir_op_prim(IR_KIND_MATMUL, (ir_tid[]){x, w}, 2, y);
    op.spec.u.matmul = (struct ir_matmul){m, k, n};
    ir_graph_push(g, op);
}

/* Products of odd sizes: a vector's tail (n not a multiple of 16), a panel's (of 64), rows not a multiple of a
 * tile's, q8_0 rows stored either way, and products large enough to be split among threads. */
static void test_odd_products(void)
{
    struct ir_graph *g = ir_graph_new();
    push_matmul(g, "plain_small", 5, 37, 83, false, false);
    push_matmul(g, "plain_one", 1, 19, 17, false, false);
    push_matmul(g, "plain_wide", 9, 257, 700, false, false);
    push_matmul(g, "q8_cols", 3, 96, 70, true, true);
    push_matmul(g, "q8_rows", 7, 64, 96, true, false);
    push_matmul(g, "q8_big", 4, 512, 601, true, true);
    push_matmul(g, "q8_one", 1, 1024, 1100, true, true);
    same_everywhere(g, "odd products");
    ir_graph_free(g);
}

/* g's values evaluated one op at a time (a call an op: no mixture batched with another) and all at once (the rows'
 * mixtures batched per expert): the same bits. */
static void test_batched_equals_alone(const struct ir_graph *g, const char *what)
{
    char err[IR_ERR_LEN] = "";
    struct ir_values *a = ir_values_new(g, 1, err), *b = ir_values_new(g, 1, err);
    CHECKF(a && b, "%s", err);
    int rc = a && b ? ir_eval(g, a, err) : -1;
    for (int32_t i = 0; rc == 0 && i < g->nops; i++)
        rc = ir_eval_ops(g, &g->ops[i], 1, b, err);
    CHECKF(rc == 0, "%s: %s", what, err);
    bool same = rc == 0;
    for (ir_tid t = 0; same && t < g->ntensors; t++) {
        const float *x = ir_values_cdata(a, t), *y = ir_values_cdata(b, t);
        same = !x || memcmp(x, y, sizeof(float) * (size_t)(g->tensors[t].rows * g->tensors[t].cols)) == 0;
    }
    CHECKF(same, "%s: batched mixtures give other bits than one op at a time", what);
    ir_values_free(a);
    ir_values_free(b);
}

/* The mixture of a prefill: each of `rows` rows gathered from x, mixed (softmax renormalised top-k SwiGLU experts),
 * set into the table; returns the table's id. */
static ir_tid push_mixture_rows(struct ir_graph *g, int64_t rows, const struct ir_moe *s, ir_tid *x, ir_tid *w)
{
    *x = F(g, "x", rows, s->d, IR_ROLE_INPUT);
    w[0] = F(g, "router", s->d, s->experts, IR_ROLE_CONSTANT);
    w[1] = F(g, "gate", s->d, s->experts * s->dff, IR_ROLE_CONSTANT);
    w[2] = F(g, "up", s->d, s->experts * s->dff, IR_ROLE_CONSTANT);
    w[3] = F(g, "down", s->dff, s->experts * s->d, IR_ROLE_CONSTANT);
    ir_tid table = F(g, "table", rows, s->d, IR_ROLE_STATE);
    g->tensors[table].observed = true;
    for (int64_t r = 0; r < rows; r++) {
        char xn[32], mn[32];
        snprintf(xn, sizeof xn, "x_%lld", (long long)r);
        snprintf(mn, sizeof mn, "moe_%lld", (long long)r);
        ir_tid xr = F(g, xn, 1, s->d, IR_ROLE_ACTIVATION), m = F(g, mn, 1, s->d, IR_ROLE_ACTIVATION);
        struct ir_op op = ir_op_prim(IR_KIND_ROW_GATHER, (ir_tid[]){*x}, 1, xr);
        op.spec.u.row_gather = (struct ir_row_gather){rows, s->d, {IR_RIDX_LITERAL, r + 1}};
        ir_graph_push(g, op);
        op = ir_op_prim(IR_KIND_MOE, (ir_tid[]){xr, w[0], w[1], w[2], w[3]}, 5, m);
        op.spec.u.moe = *s;
        ir_graph_push(g, op);
        op = ir_op_prim(IR_KIND_SET_ROW, (ir_tid[]){table, m}, 2, table);
        op.spec.u.set_row = (struct ir_set_row){rows, s->d, 1, {IR_RIDX_LITERAL, r + 1}};
        ir_graph_push(g, op);
    }
    return table;
}

/* Σ_{t<k} a[t·as] · b[t·bs], from 0 in increasing t. */
static float dot(const float *a, int64_t as, const float *b, int64_t bs, int64_t k)
{
    float acc = 0.0f;
    for (int64_t t = 0; t < k; t++) {
        float p = a[t * as] * b[t * bs];
        acc += p;
    }
    return acc;
}

/* The dense formula of one row: every expert's output, weighted 0 unless chosen, added in rank order (the k chosen
 * first, then the rest), the routing as docs/semantics.md states it (softmax, the k best, renormalised). */
static void dense_row(const struct ir_moe *s, const float *x, const float *R, const float *G, const float *U,
                      const float *D, float *y)
{
    float lg[16], w[16], h[64];
    int64_t order[16];
    float m = -INFINITY, sum = 0.0f;
    for (int64_t e = 0; e < s->experts; e++) {
        lg[e] = dot(x, 1, R + e, s->experts, s->d);
        m = lg[e] > m ? lg[e] : m;
    }
    for (int64_t e = 0; e < s->experts; e++) {
        lg[e] = expf(lg[e] - m);
        sum += lg[e];
    }
    for (int64_t e = 0; e < s->experts; e++) {
        lg[e] = lg[e] / sum;
        order[e] = e;
    }
    for (int64_t a = 0; a < s->experts; a++) /* rank order: larger first, ties to the lower index */
        for (int64_t b = a + 1; b < s->experts; b++)
            if (lg[order[b]] > lg[order[a]]) {
                int64_t t = order[a];
                order[a] = order[b];
                order[b] = t;
            }
    float wsum = 0.0f;
    for (int64_t r = 0; r < s->k; r++)
        wsum += lg[order[r]];
    for (int64_t r = 0; r < s->experts; r++)
        w[r] = r < s->k ? lg[order[r]] / wsum : 0.0f;
    for (int64_t i = 0; i < s->d; i++)
        y[i] = 0.0f;
    for (int64_t r = 0; r < s->experts; r++) {
        int64_t e = order[r];
        for (int64_t j = 0; j < s->dff; j++) {
            float g = dot(x, 1, G + e * s->dff + j, s->experts * s->dff, s->d);
            float u = dot(x, 1, U + e * s->dff + j, s->experts * s->dff, s->d);
            float sg = 1.0f + expf(-g);
            h[j] = g * (1.0f / sg) * u;
        }
        for (int64_t i = 0; i < s->d; i++) {
            float o = dot(h, 1, D + e * s->d + i, s->experts * s->d, s->dff);
            float t = w[r] * o;
            y[i] += t;
        }
    }
}

/* A prefill's mixtures, batched per expert, give each row the bits of the dense formula, where every expert is
 * evaluated and an unchosen one weighs 0; and the same bits as each op alone. */
static void test_sparse_equals_dense(void)
{
    const struct ir_moe s = {.d = 40, .k = 2, .dff = 24, .experts = 6, .act = IR_MOE_SWIGLU};
    const int64_t rows = 7;
    struct ir_graph *g = ir_graph_new();
    ir_tid x, w[4];
    ir_tid table = push_mixture_rows(g, rows, &s, &x, w);
    test_batched_equals_alone(g, "mixture rows");
    char err[IR_ERR_LEN] = "";
    struct ir_values *v = ir_values_new(g, 1, err);
    int rc = v ? ir_eval(g, v, err) : -1;
    CHECKF(rc == 0, "%s", err);
    if (rc == 0) {
        const float *X = ir_values_cdata(v, x), *T = ir_values_cdata(v, table);
        int differ = 0, nonzero = 0;
        for (int64_t r = 0; r < rows; r++) {
            float y[40];
            dense_row(&s, X + r * s.d, ir_values_cdata(v, w[0]), ir_values_cdata(v, w[1]), ir_values_cdata(v, w[2]),
                      ir_values_cdata(v, w[3]), y);
            differ += memcmp(y, T + r * s.d, sizeof y) != 0;
            for (int64_t i = 0; i < s.d; i++)
                nonzero += y[i] != 0.0f;
        }
        CHECKF(differ == 0 && nonzero > 0, "%d of %lld rows differ from the dense formula", differ, (long long)rows);
    }
    ir_values_free(v);
    ir_graph_free(g);
}

/* g evaluated twice over the same values (a step, then the next) with each activation freed after its last reader,
 * and twice keeping every value: the same observed and carried bits after each step. */
static void test_liveness(const struct ir_graph *g, const char *what)
{
    char err[IR_ERR_LEN] = "";
    struct ir_values *a = ir_values_new(g, 1, err), *b = ir_values_new(g, 1, err);
    CHECKF(a && b, "%s", err);
    if (!a || !b) {
        ir_values_free(a);
        ir_values_free(b);
        return;
    }
    ir_values_free_dead(a, true);
    int freed = 0, differ = 0;
    for (int step = 0; step < 2; step++) {
        int rc = ir_eval(g, a, err);
        CHECKF(rc == 0, "%s: %s", what, err);
        rc = rc || ir_eval(g, b, err);
        for (ir_tid t = 0; rc == 0 && t < g->ntensors; t++) {
            const struct ir_tensor *x = &g->tensors[t];
            const float *p = ir_values_cdata(a, t), *q = ir_values_cdata(b, t);
            freed += x->role == IR_ROLE_ACTIVATION && !p;
            if ((x->observed || x->carried) && q)
                differ += !p || memcmp(p, q, sizeof(float) * (size_t)(x->rows * x->cols)) != 0;
        }
    }
    CHECKF(differ == 0 && freed > 0, "%s: %d tensors differ with liveness, %d freed", what, differ, freed);
    ir_values_free(a);
    ir_values_free(b);
}

/* Zoo graphs at q8_0 (every op of their families: attention, mixtures, norms, gated delta, heads): the same bits. */
static void test_zoo(void)
{
    static const char *const names[] = {"tiny-llama",   "tiny-qwen3-moe", "tiny-gemma2", "tiny-qwen3-next",
                                        "tiny-deepseek", "tiny-gpt-oss",   "tiny-olmo2"};
    static const struct models_mode modes[] = {{MODELS_DECODE, 1}, {MODELS_PREFILL, 5}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const struct models_config *c = models_find(names[i]);
        CHECKF(c != NULL, "no zoo model %s", names[i]);
        for (size_t k = 0; c && k < sizeof modes / sizeof modes[0]; k++) {
            struct models_options o = models_default_options();
            o.mode = modes[k];
            char err[IR_ERR_LEN] = "", what[96];
            struct ir_graph *g = models_lift(c, &o, err);
            CHECKF(g != NULL, "%s: %s", names[i], err);
            snprintf(what, sizeof what, "%s %s", names[i], k ? "prefill:5" : "decode");
            if (g)
                same_everywhere(g, what);
            if (g && k)
                test_batched_equals_alone(g, what);
            if (g)
                test_liveness(g, what);
            ir_graph_free(g);
        }
    }
}

/* ── Seeding: the same bytes on any thread count, lazily or eagerly, and the bytes pinned ─────────────────── */

/* FNV-1a (64 bits) of n bytes, continuing h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

/* Every seeded constant and input of g from seed 1 under `threads` (checkpoint bytes whole, plain values) in one
 * FNV-1a digest. */
static uint64_t seeded_digest(const struct ir_graph *g, int threads)
{
    char err[IR_ERR_LEN] = "";
    ir_eval_set_threads(threads);
    struct ir_values *v = ir_values_new(g, 1, err);
    ir_eval_set_threads(1);
    CHECKF(v != NULL, "%s", err);
    uint64_t h = 14695981039346656037ull;
    for (ir_tid t = 0; v && t < g->ntensors; t++) {
        struct ir_ckpt_rows ck;
        const float *f = ir_values_cdata(v, t);
        if (ir_values_checkpoint(v, t, &ck))
            h = fnv(h, ck.bytes, (size_t)(ck.srows * ck.row_bytes));
        else if (f)
            h = fnv(h, f, sizeof(float) * (size_t)ir_tensor_len(g, t));
    }
    ir_values_free(v);
    return h;
}

/* A table of rows × cols q8_0 rows (a stored row a logical row) and an index input, gathered into y by count rows;
 * with `also_read`, the table is read whole by a scaling too (so it is seeded eagerly). */
static struct ir_graph *gather_graph(int64_t rows, int64_t cols, int64_t count, bool also_read)
{
    struct ir_graph *g = ir_graph_new();
    ir_tid t = F(g, "table", rows, cols, IR_ROLE_CONSTANT), ix = F(g, "ix", 1, count, IR_ROLE_INPUT);
    ir_tid y = F(g, "y", count, cols, IR_ROLE_ACTIVATION);
    g->tensors[t].checkpoint = true;
    g->tensors[t].format = IR_FMT_Q8_0;
    g->tensors[y].observed = true;
    struct ir_op op = ir_op_prim(IR_KIND_ROWS_GATHER, (ir_tid[]){t, ix}, 2, y);
    op.spec.u.rows_gather = (struct ir_rows_gather){rows, cols, count};
    ir_graph_push(g, op);
    if (also_read) { /* read whole by a scaling, which asks no particular values of it */
        ir_tid p = F(g, "p", rows, cols, IR_ROLE_ACTIVATION);
        g->tensors[p].observed = true;
        op = ir_op_prim(IR_KIND_SCALE, (ir_tid[]){t}, 1, p);
        op.spec.u.scale = (struct ir_scale){rows * cols, 2.0};
        ir_graph_push(g, op);
    }
    return g;
}

/* A large graph's seeded values (checkpoints stored either way, plain constants, integer inputs) are the same bits on
 * 1, 2, 3 and 5 threads. */
static void test_threaded_seeding(void)
{
    struct ir_graph *g = ir_graph_new();
    push_matmul(g, "seed_cols", 2, 1024, 700, true, true);
    push_matmul(g, "seed_rows", 2, 700, 1024, true, false);
    push_matmul(g, "seed_plain", 2, 600, 530, false, false);
    uint64_t want = seeded_digest(g, 1);
    for (size_t k = 1; k < sizeof thread_counts / sizeof thread_counts[0]; k++) {
        uint64_t got = seeded_digest(g, thread_counts[k]);
        CHECKF(got == want, "seeding on %d threads: digest 0x%016llx, on one 0x%016llx", thread_counts[k],
               (unsigned long long)got, (unsigned long long)want);
    }
    ir_graph_free(g);
}

/* A table read only by a gather is drawn a row at a time when gathered: rows never gathered stay unwritten until
 * its bytes are asked for whole, and every row then holds the bytes eager seeding gives it (the same table also read
 * by a product is seeded eagerly). */
static void test_lazy_rows(void)
{
    struct ir_graph *lazy = gather_graph(4096, 256, 7, false), *eager = gather_graph(4096, 256, 7, true);
    char err[IR_ERR_LEN] = "";
    struct ir_values *a = ir_values_new(lazy, 1, err), *b = ir_values_new(eager, 1, err);
    CHECKF(a && b, "%s", err);
    int rc = a && b ? ir_eval(lazy, a, err) | ir_eval(eager, b, err) : -1;
    CHECKF(rc == 0, "%s", err);
    if (rc == 0) {
        ir_tid t = ir_tensor_find(lazy, "table", 5), y = ir_tensor_find(lazy, "y", 1);
        const struct ckpt *qa = &a->t[t].q, *qb = &b->t[ir_tensor_find(eager, "table", 5)].q;
        CHECK(qa->lazy != NULL && qb->lazy == NULL);
        int64_t untouched = 0, drawn = 0;
        for (int64_t s = 0; s < qa->srows; s++) {
            const unsigned char *ra = qa->bytes + s * qa->row_bytes, *rb = qb->bytes + s * qb->row_bytes;
            bool zero = true;
            for (int64_t i = 0; i < qa->row_bytes && zero; i++)
                zero = ra[i] == 0;
            untouched += zero;
            drawn += !zero && memcmp(ra, rb, (size_t)qa->row_bytes) == 0;
        }
        CHECKF(drawn >= 1 && drawn <= 7 && drawn + untouched == qa->srows,
               "lazy table: %lld rows drawn (each the eager bytes), %lld unwritten of %lld", (long long)drawn,
               (long long)untouched, (long long)qa->srows);
        CHECK(memcmp(ir_values_cdata(a, y), ir_values_cdata(b, ir_tensor_find(eager, "y", 1)),
                     sizeof(float) * 7 * 256) == 0);
        struct ir_ckpt_rows ca, cb;
        CHECK(ir_values_checkpoint(a, t, &ca) && ir_values_checkpoint(b, ir_tensor_find(eager, "table", 5), &cb) &&
              memcmp(ca.bytes, cb.bytes, (size_t)(ca.srows * ca.row_bytes)) == 0);
    }
    ir_values_free(a);
    ir_values_free(b);
    ir_graph_free(lazy);
    ir_graph_free(eager);
}

/* The seeded bytes of zoo graphs (every weight, table, norm and input, q8_0 and q4_k) are pinned: the filling and the
 * quantizers may get faster, never other bytes (the goldens and digests rest on them). The digests are those of the
 * per-value filling and quantizers this seeding replaced. */
static void test_seeded_bytes_pinned(void)
{
    static const struct {
        const char *model;
        enum ir_format weights;
        uint64_t digest;
    } pins[] = {
        {"tiny-qwen3", IR_FMT_Q8_0, 0xc78a58f270e70640ull},
        {"tiny-qwen3-next", IR_FMT_Q4_K, 0x1558437767204f2dull},
        {"tiny-gpt-oss", IR_FMT_Q8_0, 0x9e39c6f071067001ull},
    };
    for (size_t i = 0; i < sizeof pins / sizeof pins[0]; i++) {
        struct models_options o = models_default_options();
        o.weights = pins[i].weights;
        o.mode = (struct models_mode){MODELS_PREFILL, 3};
        char err[IR_ERR_LEN] = "";
        struct ir_graph *g = models_lift(models_find(pins[i].model), &o, err);
        CHECKF(g != NULL, "%s: %s", pins[i].model, err);
        uint64_t d = g ? seeded_digest(g, 2) : 0;
        CHECKF(d == pins[i].digest, "%s: seeded bytes digest 0x%016llx, pinned 0x%016llx", pins[i].model,
               (unsigned long long)d, (unsigned long long)pins[i].digest);
        ir_graph_free(g);
    }
}

/* A leaf hook that takes no leaf: the evaluation runs as plain, but with hooks no mixture is batched. */
static int decline_leaf(void *ctx, struct ir_leaf *leaf)
{
    (void)ctx;
    (void)leaf;
    return 1;
}

/* The mixtures inside fused op op (at any depth). */
static int fused_mixtures(const struct ir_op *op)
{
    int n = op->sym == IR_SYM_PRIM && op->spec.kind == IR_KIND_MOE;
    for (int32_t i = 0; op->sym == IR_SYM_FUSED && i < op->nparts; i++)
        n += fused_mixtures(&op->parts[i]);
    return n;
}

/* An optimized prefill whose mixtures are parts of a fused op (each row a view of the normed rows, each result
 * placed in the layer's table): batched per expert inside the fused op, they give the bits of each part alone (no
 * batching, under a hook) and of the lifted graph. */
static void test_fused_mixtures_batched(void)
{
    struct models_options o = models_default_options();
    o.mode = (struct models_mode){MODELS_PREFILL, 6};
    char err[IR_ERR_LEN] = "";
    struct ir_graph *g = models_lift(models_find("tiny-qwen3-moe"), &o, err);
    struct rules_optimized opt = {NULL, {0}};
    struct shim *sh = shim_reference();
    int rc = g && sh ? rules_optimize(g, sh, NULL, 0, &opt, err) : -1;
    CHECKF(rc == 0, "%s", err);
    if (rc) {
        shim_free(sh);
        ir_graph_free(g);
        return;
    }
    int inside = 0;
    for (int32_t i = 0; i < opt.graph->nops; i++)
        inside += opt.graph->ops[i].sym == IR_SYM_FUSED ? fused_mixtures(&opt.graph->ops[i]) : 0;
    CHECKF(inside >= 6, "the optimized graph's fused ops hold %d mixtures", inside);
    struct ir_values *lifted = ir_values_new(g, 1, err);
    struct ir_values *batched = ir_values_new_like(opt.graph, 1, g, err);
    struct ir_values *alone = ir_values_new_like(opt.graph, 1, g, err);
    struct ir_eval_hooks hooks = {decline_leaf, NULL, NULL};
    rc = lifted && batched && alone ? ir_eval(g, lifted, err) : -1;
    rc = rc ? rc : ir_eval(opt.graph, batched, err);
    rc = rc ? rc : ir_eval_ops_hooked(opt.graph, opt.graph->ops, opt.graph->nops, alone, &hooks, err);
    CHECKF(rc == 0, "%s", err);
    if (rc == 0) {
        struct ir_compare c = ir_values_compare(opt.graph, alone, opt.graph, batched);
        CHECKF(c.identical && c.compared > 0, "batched fused mixtures differ from each alone at tensor %d [%lld]",
               (int)c.tensor, (long long)c.index);
        c = ir_values_compare(g, lifted, opt.graph, batched);
        CHECKF(c.identical && c.compared > 0, "batched fused mixtures differ from the lifted graph at tensor %d",
               (int)c.tensor);
    }
    ir_values_free(lifted);
    ir_values_free(batched);
    ir_values_free(alone);
    rules_optimized_free(&opt);
    shim_free(sh);
    ir_graph_free(g);
}

int main(void)
{
    test_fused_mixtures_batched();
    test_threaded_seeding();
    test_lazy_rows();
    test_seeded_bytes_pinned();
    test_odd_products();
    test_sparse_equals_dense();
    test_zoo();
    return check_done("test_eval_scale");
}
