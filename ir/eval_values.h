/* ir/eval_values.h — the evaluator's own header (not part of ir.h): checked sizes and tensor shapes, how values are
 * stored, liveness (ir/eval_values.c), seeding's lazy tables and stop question (ir/eval_seed.c), the matrix products
 * (ir/eval_matmul.c), and the interpreter's context and helpers its files share (ir/eval.c, ir/eval_ops.c,
 * ir/eval_attention.c, ir/eval_moe.c). */
#ifndef FUSECHECK_IR_EVAL_VALUES_H
#define FUSECHECK_IR_EVAL_VALUES_H

#include "ir.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* A product and the sum it feeds stay two roundings, in every file of the evaluator and the inline functions here:
 * never contract them into one fused multiply-add. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* ── Checked sizes ───────────────────────────────────────────────────────────────────────────────────────── */

/* a·b, or -1 when either is negative or the product overflows. */
static inline int64_t mulc(int64_t a, int64_t b)
{
    if (a < 0 || b < 0 || (a && b > INT64_MAX / a))
        return -1;
    return a * b;
}

/* a+b, or -1 when either is negative or the sum overflows. */
static inline int64_t addc(int64_t a, int64_t b)
{
    if (a < 0 || b < 0 || b > INT64_MAX - a)
        return -1;
    return a + b;
}

/* The smaller of two sizes. */
static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The larger of two sizes. */
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* ── Shapes ──────────────────────────────────────────────────────────────────────────────────────────────── */

/* Whether tensor t of g is kept as checkpoint rows. */
static inline bool is_ckpt(const struct ir_tensor *t)
{
    return t->role == IR_ROLE_CONSTANT && t->checkpoint;
}

/* The values length of a tensor of g (rows × cols), or -1 when its shape is invalid. */
static inline int64_t shape_len(const struct ir_tensor *t)
{
    if (t->rows > IR_MAX_DIM || t->cols > IR_MAX_DIM)
        return -1;
    int64_t n = mulc(t->rows, t->cols);
    return n > IR_MAX_ELEMS ? -1 : n;
}

/* The stored shape of a checkpoint tensor: *srows rows of *slen values; their bytes a row, or -1. */
static inline int64_t ckpt_shape(const struct ir_tensor *t, int64_t *srows, int64_t *slen)
{
    *srows = t->transposed ? t->cols : t->rows;
    *slen = t->transposed ? t->rows : t->cols;
    if ((int)t->format < 0 || t->format >= IR_FMT_COUNT)
        return -1;
    return ir_ggml_row_bytes(t->format, *slen);
}

/* The bytes tensor t's values take, or -1 when its shape or block format is invalid. */
static inline int64_t tensor_bytes(const struct ir_tensor *t)
{
    int64_t len = shape_len(t);
    if (len < 0)
        return -1;
    if (!is_ckpt(t))
        return mulc(len, (int64_t)sizeof(float));
    int64_t srows, slen, rb = ckpt_shape(t, &srows, &slen);
    return rb < 0 ? -1 : mulc(srows, rb);
}

/* A constant kept as checkpoint rows: `srows` stored rows of `slen` values each, `row_bytes` bytes a row. */
struct ckpt {
    enum ir_format format;
    bool transposed;
    int64_t srows, slen, row_bytes;
    unsigned char *bytes;
    bool borrowed; /* bytes lie in a mapped GGUF file or another values instance: read, never freed here */
    struct ir_eval_lazy *lazy; /* a table read only by row gathers: its rows drawn when first read (else NULL) */
};

/* One tensor's values: plain f32 values, or (f == NULL) a checkpoint constant's quantized rows. */
struct tval {
    float *f;
    bool f_borrowed; /* f lies in another values instance (a donor's constant): read, never written or freed */
    bool dead;       /* an activation freed after its last reader (f NULL until the next evaluation) */
    int64_t len;
    int64_t rows, cols;
    struct ckpt q;
};

struct ir_values {
    int32_t n;
    struct tval *t;
    size_t bytes;
    bool q8_activations; /* products by q8_0/q4_0 rows take q8_0 activations (ir_values_quantize_activations) */
    bool free_dead;      /* evaluations free each activation after its last reader (ir_values_free_dead) */
};

/* A rows × cols matrix operand: plain row-major values, or a checkpoint constant's quantized rows. */
struct wts {
    const float *plain;
    const struct ckpt *q;
    int64_t rows, cols;
    float *buf;  /* a stored row's room, for a checkpoint */
    float *acts; /* room for one row of q8_0 activation blocks, when products take them (else NULL) */
};

/* ── Liveness (ir/eval_values.c) ─────────────────────────────────────────────────────────────────────────── */

/* The tensors each top-level op of ops names last: first[i] the first of op i's, next[t] the one after t (-1 ends
 * a list). */
struct ir_eval_last_uses {
    int32_t *first, *next;
};

/* Each tensor's last user among ops into u (the caller frees first and next); whether memory held it (else nothing
 * is freed). */
bool ir_eval_last_uses_of(const struct ir_graph *g, const struct ir_op *ops, int32_t n,
                          struct ir_eval_last_uses *u);

/* Free every tensor whose last user is op i and whose values may go once read for the last time: an activation the
 * host neither reads after the step (observed) nor keeps (carried), held in its own plain storage. */
void ir_eval_free_after(const struct ir_graph *g, struct ir_values *v, const struct ir_eval_last_uses *u,
                        int32_t i);

/* Give every activation a previous evaluation freed its storage again (zeroed, as ir_values_new leaves it); 0, or
 * -1 with err. */
int ir_eval_revive(const struct ir_graph *g, struct ir_values *v, char err[IR_ERR_LEN]);

/* ── Seeding (ir/eval_seed.c) ────────────────────────────────────────────────────────────────────────────── */

/* Whether the caller asked seeding and evaluating to stop (ir_eval_set_stop). */
bool ir_eval_stop_now(void);

/* Free a lazily seeded table's bookkeeping (its owner's; NULL is nothing). */
void ir_eval_lazy_free(struct ir_eval_lazy *z);

/* Draw stored rows [s0, s0 + n) of a lazily seeded checkpoint (q->lazy) that are not drawn yet: the bytes eager
 * seeding gives. 0 (also for a checkpoint seeded whole), or -1 when a row does not quantize. */
int ir_eval_lazy_rows(const struct ckpt *q, int64_t s0, int64_t n);

/* Draw every row of a lazily seeded checkpoint not drawn yet (ir_eval_lazy_rows over all of them). */
int ir_eval_lazy_all(const struct ckpt *q);

/* Dequantize a stored row's values [from, from+n) of checkpoint q: the returned pointer holds them (buf holds room
 * for the row's slen values). */
const float *ir_eval_ck_slice(const struct ckpt *q, int64_t s, int64_t from, int64_t n, float *buf);

/* Logical row r of a matrix into dst (cols values). */
void ir_eval_wts_row(const struct wts *w, int64_t r, float *dst);

/* y[i·ys + j] = Σ_{t<kdim} x[i·xs + t] · W[r0 + t][c0 + j] for i < m, j < nc, each sum from 0 in increasing t
 * (docs/semantics.md): several outputs at once in SIMD lanes, each lane its own output's sequential sum, on up to
 * ir_eval_threads() threads, each output in one thread. The bits are the scalar loop's. */
void ir_eval_wts_matmul(const struct wts *w, int64_t r0, int64_t kdim, int64_t c0, int64_t nc, const float *x,
                        int64_t m, int64_t xs, float *y, int64_t ys);

/* The products' code paths: the plain scalar loops, the portable vector code, AVX2, AVX-512. */
enum ir_eval_path { IR_EVAL_PATH_SCALAR, IR_EVAL_PATH_PORTABLE, IR_EVAL_PATH_AVX2, IR_EVAL_PATH_AVX512,
                    IR_EVAL_PATH_AUTO };

/* Use path p for the products from now on (AUTO: the widest this CPU runs); the path now in use (a path this CPU
 * cannot run falls back to AUTO's). For tests that hold every path to the scalar one's bits. */
enum ir_eval_path ir_eval_use_path(enum ir_eval_path p);


/* ── The interpreter ──────────────────────────────────────────────────────────────────────────────────────── */

/* ir/eval.c: the context, weights, placement, fused ops and the run; ir/eval_ops.c the primitive ops;
 * ir/eval_attention.c attention; ir/eval_moe.c the mixtures. */

#define EV_SCRATCH 16
#define EV_SCRATCH_SLACK ((int64_t)64 << 20) /* bytes of working buffers any graph may use beyond its values' */

/* One op being evaluated: the graph, the values, the op (a leaf, or a fused op while its result is placed), its
 * top-level index, the error buffer, and the scratch buffers it holds until it is done. */
struct ev {
    const struct ir_graph *g;
    struct ir_values *v;
    const struct ir_op *op;
    int32_t top;
    char *err;
    const struct ir_eval_hooks *hooks; /* another executor's leaves and placements, or NULL */
    const struct ir_op *scope;         /* the innermost fused op being run: its parts read only what it gives them */
    float *scratch[EV_SCRATCH];
    int nscratch;
    int64_t scratch_bytes, scratch_cap;
    bool *done; /* top-level ops already computed with an earlier one (mixtures batched per expert), or NULL */
};

/* The handle a leaf hook gets: the evaluation context of the leaf being computed. */
struct ir_leaf {
    struct ev *e;
};

/* ── Scalar functions (inline: the ops and the mixtures call them) ───────────────────────────────────────────────── */

/* The logistic function 1 / (1 + e^-x). */
static inline float sigmoidf(float x)
{
    float d = 1.0f + expf(-x);
    return 1.0f / d;
}

/* SiLU: x · σ(x). */
static inline float siluf(float x)
{
    return x * sigmoidf(x);
}

/* GELU, tanh approximation: x/2 · (1 + tanh(√(2/π) · (x + 0.044715·x³))). */
static inline float geluf(float x)
{
    float x3 = x * x;
    x3 = x3 * x;
    float inner = 0.044715f * x3;
    inner = x + inner;
    inner = 0.7978845608f * inner;
    float t = 1.0f + tanhf(inner);
    float h = 0.5f * x;
    return h * t;
}

/* ReLU: x when x > 0, else 0 (NaN gives 0). */
static inline float reluf(float x)
{
    return x > 0.0f ? x : 0.0f;
}

/* softplus: log(1 + e^x), x itself past 20. */
static inline float softplusf(float x)
{
    return x > 20.0f ? x : log1pf(expf(x));
}

/* A value rounded half away from zero and clamped to ±127, kept as a float (NaN stays NaN). */
static inline float q127(float x)
{
    float q = roundf(x);
    if (q > 127.0f)
        q = 127.0f;
    else if (q < -127.0f)
        q = -127.0f;
    return q;
}

/* Write "op N (name): message" to the error buffer; returns -1. */
int ir_ev_fail(struct ev *e, const char *fmt, ...);

/* A zeroed scratch buffer of n floats held until the op is done, or NULL with err. */
float *ir_ev_scratch(struct ev *e, int64_t n);

/* Release every scratch buffer the op held. */
void ir_ev_scratch_free(struct ev *e);

/* The name of tensor t (which must be valid). */
const char *ir_ev_tname(const struct ev *e, ir_tid t);

/* The tensor at operand i of the op, or IR_NONE with err. */
ir_tid ir_ev_operand(struct ev *e, int i);

/* The first `need` values operand i reads: the tensor's own values when read whole, else the gather of units
 * u = 0.. of `width` values at u·pitch + offset; NULL with err when the tensor does not hold them. */
const float *ir_ev_arg(struct ev *e, int i, int64_t need);

/* Every value operand i can read (a table): the whole tensor, or as many whole units as it holds; *len receives
 * their count. */
const float *ir_ev_arg_all(struct ev *e, int i, int64_t *len);

/* Operand i as a state tensor written in place: read whole, plain, holding at least need values. */
float *ir_ev_state_arg(struct ev *e, int i, int64_t need);

/* The op's result tensor's values, which must hold exactly len values; NULL with err. */
float *ir_ev_result(struct ev *e, int64_t len);

/* Read x as an integral index in [lo, hi] into *out; -1 with err (naming `what`) when it is not one. */
int ir_ev_index_of(struct ev *e, float x, int64_t lo, int64_t hi, const char *what, int64_t *out);

/* The 0-based row a row index names (absent: 0; literal: 1-based; named: operand `at`'s value), in [0, hi]. */
int ir_ev_row_index(struct ev *e, const struct ir_rowidx *ri, int at, int64_t hi, const char *what, int64_t *r);

/* Operand i as a rows × cols matrix, a lazily seeded table drawn whole unless the op reads it by rows (and draws
 * the rows it reads: ir_eval_lazy_rows); 0, or -1 with err. */
int ir_ev_wts_take(struct ev *e, int i, int64_t rows, int64_t cols, bool by_rows, struct wts *w);

/* Operand i as a rows × cols matrix read whole; 0, or -1 with err. */
int ir_ev_wts_get(struct ev *e, int i, int64_t rows, int64_t cols, struct wts *w);

/* Logical row r of a matrix taken by rows (wts_take) into dst, its row drawn first when lazily seeded; 0, or -1. */
int ir_ev_gather_row(struct ev *e, const struct wts *w, int64_t r, float *dst);

/* Whether every size is non-negative; else -1 with err. */
int ir_ev_sizes_ok(struct ev *e, const int64_t *s, int n);

/* The 0-based position a rope or attention's row 0 sits at (pos absent: 0; literal: 1-based; named: operand at). */
int ir_ev_position(struct ev *e, const struct ir_rowidx *pos, int at, int64_t *p);

/* Place the op's materialised result where its destination says: rows of a buffer and/or a part of every unit. */
int ir_ev_place(struct ev *e);

/* Check a part of the innermost fused op reads only what that op gives it: a kernel reads its operands, so an operand
 * list that misses or misnames a tensor the parts read fails here, naming both. */
int ir_ev_check_scope(struct ev *e, const struct ir_op *op);

/* Evaluate op (its parts in order when fused) and place its result. */
int ir_ev_eval_op(struct ev *e, const struct ir_op *op, int depth);

/* attention: each query row r at position p + r attends cache rows j ≤ p + r (and > p + r − window). */
int ir_ev_attention(struct ev *e);

/* moe: the router's choice, then Σ_rank w · (act(x·G_e [+ b]) ⊙ (x·U_e [+ b])) · D_e [+ b]. */
int ir_ev_moe(struct ev *e);

/* Evaluate top-level op i with the mixtures after it that can be batched with it; 1 when it is no such op (or
 * batching it would change nothing), else 0 or -1 with err. */
int ir_ev_moe_batched(struct ev *e, const struct ir_op *ops, int32_t n, int32_t i);

/* Compute the primitive op e->op by its kind's meaning (ir/eval_ops.c); 0, or -1 with err. */
int ir_ev_prim(struct ev *e);

#endif
