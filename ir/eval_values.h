/* ir/eval_values.h — the evaluator's own header (not part of ir.h): checked sizes and tensor shapes, how values are
 * stored, liveness (ir/eval_values.c), seeding's lazy tables and stop question (ir/eval_seed.c), and the matrix
 * products (ir/eval_matmul.c) the ops of ir/eval.c call. */
#ifndef FUSECHECK_IR_EVAL_VALUES_H
#define FUSECHECK_IR_EVAL_VALUES_H

#include "ir.h"

#include <stdbool.h>
#include <stdint.h>

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

#endif
