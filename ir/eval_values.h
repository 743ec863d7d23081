/* ir/eval_values.h — the evaluator's own header (not part of ir.h): how values are stored, and the matrix products
 * (ir/eval_matmul.c) the ops of ir/eval.c call. */
#ifndef FUSECHECK_IR_EVAL_VALUES_H
#define FUSECHECK_IR_EVAL_VALUES_H

#include "ir.h"

#include <stdbool.h>
#include <stdint.h>

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
