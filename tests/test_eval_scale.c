/* tests/test_eval_scale.c — the evaluator's fast paths keep its bits: every product path (scalar, portable vector
 * code, AVX2, AVX-512, those this CPU runs) and every thread count gives the scalar single-thread values bit for bit,
 * on odd sizes (tails of a vector, of a panel, of a q8_0 block) and on zoo graphs of every kind of op. */
#include "ir/eval_values.h"
#include "models/models.h"
#include "check.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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
            ir_graph_free(g);
        }
    }
}

int main(void)
{
    test_odd_products();
    test_zoo();
    return check_done("test_eval_scale");
}
