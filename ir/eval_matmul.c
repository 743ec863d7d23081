/* ir/eval_matmul.c — the evaluator's matrix products: y = x · W[r0.., c0..], every output's sum from 0 in increasing
 * index order, one rounding for each product and one for each addition (docs/semantics.md).
 *
 * The order is per output, so outputs are computed side by side: sixteen outputs share a SIMD register, each lane
 * adding its own products in the sequential order, and a tile holds a few rows × a few such registers. The matrix is
 * read as panels P[t][l] (t < kdim, l < 64 outputs): a plain matrix in place, a checkpoint's rows dequantized into a
 * panel block by block (the same floats the scalar loop reads). AVX-512, AVX2 or portable vector code is chosen at
 * run time; the file is built with -ffp-contract=off (and the pragma below), so no product is fused into its sum and
 * every path gives the scalar loop's bits. Outputs are split among threads by panel, each output in one thread. */
#include "eval_values.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define MM_LANES 16                /* outputs a vector holds */
#define MM_GROUP 64                /* outputs a panel holds: four vectors */
#define MM_THREAD_WORK (1L << 20) /* multiply-adds below which a product stays on one thread */
#define MM_MAX_THREADS 64

typedef float mm_v16 __attribute__((vector_size(64)));

/* ── Checkpoint rows ─────────────────────────────────────────────────────────────────────────────────────── */

const float *ir_eval_ck_slice(const struct ckpt *q, int64_t s, int64_t from, int64_t n, float *buf)
{
    int64_t blk = ir_format_block_values(q->format), bb = ir_format_block_bytes(q->format);
    int64_t b0 = from / blk, b1 = (from + n + blk - 1) / blk;
    ir_ggml_dequantize(q->format, q->bytes + s * q->row_bytes + b0 * bb, (b1 - b0) * blk, buf);
    return buf + (from - b0 * blk);
}

void ir_eval_wts_row(const struct wts *w, int64_t r, float *dst)
{
    if (w->plain) {
        memcpy(dst, w->plain + r * w->cols, sizeof(float) * (size_t)w->cols);
    } else if (!w->q->transposed) {
        memcpy(dst, ir_eval_ck_slice(w->q, r, 0, w->cols, w->buf), sizeof(float) * (size_t)w->cols);
    } else {
        for (int64_t c = 0; c < w->cols; c++)
            dst[c] = ir_eval_ck_slice(w->q, c, r, 1, w->buf)[0];
    }
}

/* ── The scalar loops (the order every path keeps) ───────────────────────────────────────────────────────── */

/* The product with q8_0 activations, as llama.cpp's CPU backend computes it: each row of x quantized to q8_0 blocks,
 * each output its stored row's block sums. Whether it applied (the contracted run whole blocks of the stored rows). */
static bool mm_q8(const struct wts *w, int64_t r0, int64_t kdim, int64_t c0, int64_t nc, const float *x, int64_t m,
                  int64_t xs, float *y, int64_t ys)
{
    if (!w->acts || r0 % 32 != 0 || kdim % 32 != 0)
        return false;
    const struct ckpt *q = w->q;
    int64_t block_bytes = ir_format_block_bytes(q->format);
    for (int64_t i = 0; i < m; i++) {
        ir_ggml_q8_activations(x + i * xs, kdim, w->acts);
        for (int64_t j = 0; j < nc; j++) {
            const unsigned char *row = q->bytes + (c0 + j) * q->row_bytes + r0 / 32 * block_bytes;
            ir_ggml_dot_q8_activations(q->format, row, w->acts, kdim, &y[i * ys + j]);
        }
    }
    return true;
}

/* The scalar product: each output's sum a plain loop (buf: room for a stored row). */
static void mm_scalar(const struct wts *w, int64_t r0, int64_t kdim, int64_t c0, int64_t nc, const float *x,
                      int64_t m, int64_t xs, float *y, int64_t ys, float *buf)
{
    if (w->q && w->q->transposed) {
        for (int64_t j = 0; j < nc; j++) {
            const float *col = ir_eval_ck_slice(w->q, c0 + j, r0, kdim, buf);
            for (int64_t i = 0; i < m; i++) {
                float acc = 0.0f;
                for (int64_t t = 0; t < kdim; t++) {
                    float p = x[i * xs + t] * col[t];
                    acc += p;
                }
                y[i * ys + j] = acc;
            }
        }
        return;
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < nc; j++)
            y[i * ys + j] = 0.0f;
    for (int64_t t = 0; t < kdim; t++) {
        const float *row = w->plain ? w->plain + (r0 + t) * w->cols + c0 : ir_eval_ck_slice(w->q, r0 + t, c0, nc, buf);
        for (int64_t i = 0; i < m; i++) {
            float xv = x[i * xs + t];
            float *yr = y + i * ys;
            for (int64_t j = 0; j < nc; j++) {
                float p = xv * row[j];
                yr[j] += p;
            }
        }
    }
}

/* ── Panels ──────────────────────────────────────────────────────────────────────────────────────────────── */

/* One product's operands and its split into panels of MM_GROUP outputs. */
struct mm_job {
    const struct wts *w;
    int64_t r0, kdim, c0, nc, m, xs, ys;
    const float *x;
    float *y;
    int nthreads;
};

/* A thread's room: a panel (kdim × MM_GROUP) and a stored row. */
struct mm_room {
    float *panel, *row;
};

/* The q8_0 panel of stored rows s0.. (n of them) over values [r0, r0 + kdim), r0 a whole block: each value q·d as
 * the block format's dequantizer computes it, written a value of every row at a time (the panel's own order). */
static void mm_panel_q8(const struct ckpt *q, int64_t s0, int64_t n, int64_t r0, int64_t kdim, float *p)
{
    const unsigned char *rows[MM_GROUP];
    float d[MM_GROUP];
    for (int64_t l = 0; l < n; l++)
        rows[l] = q->bytes + (s0 + l) * q->row_bytes + r0 / 32 * 34;
    for (int64_t b = 0; b * 32 < kdim; b++) {
        for (int64_t l = 0; l < n; l++) {
            const unsigned char *blk = rows[l] + b * 34;
            d[l] = ir_f16_to_f32((uint16_t)(blk[0] | blk[1] << 8));
        }
        int64_t tn = kdim - b * 32 < 32 ? kdim - b * 32 : 32;
        for (int64_t tt = 0; tt < tn; tt++) {
            float *pr = p + (b * 32 + tt) * MM_GROUP;
            for (int64_t l = 0; l < n; l++)
                pr[l] = (float)(signed char)rows[l][b * 34 + 2 + tt] * d[l];
        }
    }
}

/* The panel of outputs [c, c + n) (n ≤ MM_GROUP): P[t·*ps + l] = W[r0 + t][c0 + c + l], zero past n. A plain matrix
 * with a whole panel is read in place. */
static const float *mm_panel(const struct mm_job *j, int64_t c, int64_t n, struct mm_room *r, int64_t *ps)
{
    const struct wts *w = j->w;
    if (w->plain && n == MM_GROUP) {
        *ps = w->cols;
        return w->plain + j->r0 * w->cols + j->c0 + c;
    }
    *ps = MM_GROUP;
    float *p = r->panel;
    if (n < MM_GROUP)
        memset(p, 0, sizeof(float) * (size_t)(j->kdim * MM_GROUP));
    if (w->plain) {
        for (int64_t t = 0; t < j->kdim; t++)
            memcpy(p + t * MM_GROUP, w->plain + (j->r0 + t) * w->cols + j->c0 + c, sizeof(float) * (size_t)n);
    } else if (!w->q->transposed) {
        for (int64_t t = 0; t < j->kdim; t++)
            memcpy(p + t * MM_GROUP, ir_eval_ck_slice(w->q, j->r0 + t, j->c0 + c, n, r->row),
                   sizeof(float) * (size_t)n);
    } else if (w->q->format == IR_FMT_Q8_0 && j->r0 % 32 == 0) {
        mm_panel_q8(w->q, j->c0 + c, n, j->r0, j->kdim, p);
    } else {
        for (int64_t l = 0; l < n; l++) {
            const float *s = ir_eval_ck_slice(w->q, j->c0 + c + l, j->r0, j->kdim, r->row);
            for (int64_t t = 0; t < j->kdim; t++)
                p[t * MM_GROUP + l] = s[t];
        }
    }
    return p;
}

/* ── Tiles: R rows × V vectors of outputs, each lane's sum in increasing t ───────────────────────────────── */

/* A tile: y[i·ys + l] for i < R, l < min(n, V·16) from x's R rows (pitch xs) and panel p (pitch ps). */
typedef void (*mm_tile_fn)(const float *x, int64_t xs, const float *p, int64_t ps, int64_t kdim, float *y,
                           int64_t ys, int64_t n);

#define MM_TILE(NAME, R, V, ATTR)                                                                                    \
    ATTR static void NAME(const float *x, int64_t xs, const float *p, int64_t ps, int64_t kdim, float *y,            \
                          int64_t ys, int64_t n)                                                                     \
    {                                                                                                                \
        mm_v16 acc[R][V];                                                                                            \
        for (int r = 0; r < R; r++)                                                                                  \
            for (int v = 0; v < V; v++)                                                                              \
                acc[r][v] = (mm_v16){0};                                                                             \
        for (int64_t t = 0; t < kdim; t++) {                                                                         \
            mm_v16 wv[V];                                                                                            \
            for (int v = 0; v < V; v++)                                                                              \
                memcpy(&wv[v], p + t * ps + v * MM_LANES, sizeof wv[v]);                                             \
            for (int r = 0; r < R; r++) {                                                                            \
                float xv = x[r * xs + t];                                                                            \
                for (int v = 0; v < V; v++) {                                                                        \
                    mm_v16 prod = xv * wv[v];                                                                        \
                    acc[r][v] = acc[r][v] + prod;                                                                    \
                }                                                                                                    \
            }                                                                                                        \
        }                                                                                                            \
        for (int r = 0; r < R; r++)                                                                                  \
            for (int v = 0; v < V && v * MM_LANES < n; v++) {                                                        \
                int64_t k = n - v * MM_LANES < MM_LANES ? n - v * MM_LANES : MM_LANES;                               \
                memcpy(y + r * ys + v * MM_LANES, &acc[r][v], sizeof(float) * (size_t)k);                           \
            }                                                                                                        \
    }

#define MM_ATTR_AVX512 __attribute__((target("avx512f")))
#define MM_ATTR_AVX2 __attribute__((target("avx2")))
#define MM_ATTR_PORTABLE

MM_TILE(tile_avx512_rows, 4, 2, MM_ATTR_AVX512)
MM_TILE(tile_avx512_row, 1, 2, MM_ATTR_AVX512)
MM_TILE(tile_avx512_wide, 1, 4, MM_ATTR_AVX512)
MM_TILE(tile_avx2_rows, 2, 2, MM_ATTR_AVX2)
MM_TILE(tile_avx2_row, 1, 2, MM_ATTR_AVX2)
MM_TILE(tile_avx2_wide, 1, 4, MM_ATTR_AVX2)
MM_TILE(tile_portable_rows, 2, 2, MM_ATTR_PORTABLE)
MM_TILE(tile_portable_row, 1, 2, MM_ATTR_PORTABLE)
MM_TILE(tile_portable_wide, 1, 4, MM_ATTR_PORTABLE)

/* A path's tiles: `rows` rows × 2 vectors, 1 row × 2 vectors, and 1 row × 4 vectors (a whole panel). */
struct mm_tiles {
    mm_tile_fn rows_fn, row_fn, wide_fn;
    int rows;
};

static const struct mm_tiles mm_paths[IR_EVAL_PATH_AUTO] = {
    [IR_EVAL_PATH_PORTABLE] = {tile_portable_rows, tile_portable_row, tile_portable_wide, 2},
    [IR_EVAL_PATH_AVX2] = {tile_avx2_rows, tile_avx2_row, tile_avx2_wide, 2},
    [IR_EVAL_PATH_AVX512] = {tile_avx512_rows, tile_avx512_row, tile_avx512_wide, 4},
};

/* ── Paths and threads ───────────────────────────────────────────────────────────────────────────────────── */

static enum ir_eval_path mm_path = IR_EVAL_PATH_AUTO; /* AUTO until first used or set */
static int mm_threads = 1;

/* The widest path this CPU runs. */
static enum ir_eval_path mm_best(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return IR_EVAL_PATH_AVX512;
    if (__builtin_cpu_supports("avx2"))
        return IR_EVAL_PATH_AVX2;
#endif
    return IR_EVAL_PATH_PORTABLE;
}

enum ir_eval_path ir_eval_use_path(enum ir_eval_path p)
{
    enum ir_eval_path best = mm_best();
    bool runs = p == IR_EVAL_PATH_SCALAR || p == IR_EVAL_PATH_PORTABLE || (p <= best && p != IR_EVAL_PATH_AUTO);
    mm_path = runs ? p : best;
    return mm_path;
}

void ir_eval_set_threads(int n)
{
    mm_threads = n < 1 ? 1 : n > MM_MAX_THREADS ? MM_MAX_THREADS : n;
}

int ir_eval_threads(void) { return mm_threads; }

/* Panel c's outputs for every row of x, with path t's tiles. */
static void mm_group(const struct mm_job *j, const struct mm_tiles *t, int64_t c, struct mm_room *r)
{
    int64_t n = j->nc - c < MM_GROUP ? j->nc - c : MM_GROUP, ps;
    const float *p = mm_panel(j, c, n, r, &ps);
    int64_t i = 0;
    if (j->m < t->rows) {
        for (; i < j->m; i++)
            t->wide_fn(j->x + i * j->xs, j->xs, p, ps, j->kdim, j->y + i * j->ys + c, j->ys, n);
        return;
    }
    for (int64_t v = 0; v < MM_GROUP && v < n; v += 2 * MM_LANES) {
        for (i = 0; i + t->rows <= j->m; i += t->rows)
            t->rows_fn(j->x + i * j->xs, j->xs, p + v, ps, j->kdim, j->y + i * j->ys + c + v, j->ys, n - v);
        for (; i < j->m; i++)
            t->row_fn(j->x + i * j->xs, j->xs, p + v, ps, j->kdim, j->y + i * j->ys + c + v, j->ys, n - v);
    }
}

/* One thread's share: panels k, k + nthreads, ...; its room allocated here. */
struct mm_share {
    const struct mm_job *j;
    int k;
    bool failed;
};

/* Run one thread's panels; whether it could (its room allocated). */
static void *mm_share_run(void *arg)
{
    struct mm_share *s = arg;
    const struct mm_job *j = s->j;
    struct mm_room r;
    r.panel = malloc(sizeof(float) * (size_t)(j->kdim * MM_GROUP + 1));
    r.row = malloc(sizeof(float) * (size_t)((j->w->q ? j->w->q->slen : 0) + 1));
    s->failed = !r.panel || !r.row;
    const struct mm_tiles *t = &mm_paths[mm_path];
    int64_t groups = (j->nc + MM_GROUP - 1) / MM_GROUP;
    for (int64_t g = s->k; !s->failed && g < groups; g += j->nthreads)
        mm_group(j, t, g * MM_GROUP, &r);
    free(r.panel);
    free(r.row);
    return NULL;
}

/* Run the job's panels on its threads (the calling thread one of them); whether every share ran. */
static bool mm_run(struct mm_job *j)
{
    struct mm_share shares[MM_MAX_THREADS];
    pthread_t tids[MM_MAX_THREADS];
    bool started[MM_MAX_THREADS] = {false};
    for (int k = 0; k < j->nthreads; k++)
        shares[k] = (struct mm_share){j, k, false};
    for (int k = 1; k < j->nthreads; k++)
        started[k] = pthread_create(&tids[k], NULL, mm_share_run, &shares[k]) == 0;
    mm_share_run(&shares[0]);
    bool ok = !shares[0].failed;
    for (int k = 1; k < j->nthreads; k++) {
        if (started[k])
            pthread_join(tids[k], NULL);
        else
            mm_share_run(&shares[k]); /* no thread: the calling one runs its share */
        ok = ok && !shares[k].failed;
    }
    return ok;
}

void ir_eval_wts_matmul(const struct wts *w, int64_t r0, int64_t kdim, int64_t c0, int64_t nc, const float *x,
                        int64_t m, int64_t xs, float *y, int64_t ys)
{
    if (m == 0 || nc == 0)
        return; /* an empty result: no loop over kdim, however long */
    if (mm_q8(w, r0, kdim, c0, nc, x, m, xs, y, ys))
        return;
    if (mm_path == IR_EVAL_PATH_AUTO)
        mm_path = mm_best();
    if (mm_path != IR_EVAL_PATH_SCALAR && kdim > 0) {
        int64_t groups = (nc + MM_GROUP - 1) / MM_GROUP, work = m * kdim * nc;
        int n = work < MM_THREAD_WORK ? 1 : mm_threads < groups ? mm_threads : (int)groups;
        struct mm_job j = {w, r0, kdim, c0, nc, m, xs, ys, x, y, n};
        if (mm_run(&j))
            return;
    }
    mm_scalar(w, r0, kdim, c0, nc, x, m, xs, y, ys, w->buf);
}
