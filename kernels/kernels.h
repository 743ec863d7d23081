/* kernels/kernels.h — the CUDA lane's launch geometry: the chips it targets and the facts about its kernels that the
 * lane's shim reads (how many rows a GEMV takes, how a projection's block is shaped, how an attention is cut into
 * blocks). The kernels themselves come later; they must then agree with every value here, so each constant and
 * function states the kernel fact it stands for.
 *
 * Everything here is a plain function of its arguments: no state, no allocation. */
#ifndef FUSECHECK_KERNELS_H
#define FUSECHECK_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"

/* ── Kernel constants ────────────────────────────────────────────────────────────────────────────────────── */

/* The most activation rows one GEMV launch takes. The GEMV keeps a partial sum per activation row and per output row
 * of its warp in registers; at eight rows (times four output rows a warp) that is 32 accumulators a lane, the most it
 * keeps without spilling. Past eight rows each weight is reused enough that the tensor-core GEMM wins. */
#define KERNELS_GEMV_ROWS 8

/* Values in one quantization block: one int8 word a value shares a scale with 31 others. A warp's 32 lanes hold one
 * block, and its scale is one warp max-reduction. Checkpoint q8_0 rows use the same block. */
#define KERNELS_QBLOCK 32

/* The most products one launch takes as parts (a GEMM or a GEMV over outputs side by side). The launch's parameter
 * block carries one weight pointer and one output pointer a part: a layer's query, key, value and gate. */
#define KERNELS_GEMM_PARTS 4

/* Output columns in one tile of the tensor-core GEMM: four warps of 32 columns each. A part of a GEMM in parts must be
 * whole tiles, so that no tile straddles two parts' weights. */
#define KERNELS_GEMM_TILE_N 128

/* The widest head the rotation epilogue turns: a warp takes one head, each lane four pairs (one value from each half
 * of the rotated width per pair), so 32 lanes x 4 pairs x 2 values = 256. */
#define KERNELS_ROPE_HEAD 256

/* The most values one thread of a norm holds in registers while its block sums their squares and scales them. */
#define KERNELS_NORM_VALUES_A_THREAD 8

/* The cached rows an attention block stages in shared memory at a time (one tile of keys and of values). */
#define KERNELS_ATTN_TILE_ROWS 64

/* The most key/value heads one attention block takes (its warps are split among them). */
#define KERNELS_ATTN_MAX_HEADS 4

/* The fewest cached rows one chunk of a split attention takes: shorter chunks cost more in the merge of their partial
 * softmaxes than they win in parallelism. */
#define KERNELS_ATTN_SPLIT_ROWS 256

/* A GEMV takes four output rows a warp only for products at least this wide (fewer warps must still fill the chip)
 * and at most this deep (each lane keeps the four rows' block scales of its slice of the row in registers). */
#define KERNELS_ROWS_A_WARP_MIN_N 4096
#define KERNELS_ROWS_A_WARP_MAX_K 8192

/* Output values one block of the decode mixture's down projection writes. */
#define KERNELS_MOE_DOWN_OUTS 32

/* ── Chips ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* A chip the lane targets: its short name (as shim names spell it), its label, its streaming multiprocessors, the
 * most shared memory one block may use (KiB, the opt-in limit), and its memory bandwidth (GB/s). */
struct kernels_chip {
    const char *name;
    const char *label;
    int32_t sms;
    int32_t smem_kib;
    int32_t bandwidth_gbs;
};

/* Number of chips in the table, the i-th (NULL out of range), and the one named `name` (NULL when unknown). */
int kernels_chip_count(void);
const struct kernels_chip *kernels_chip_get(int i);
const struct kernels_chip *kernels_chip_find(const char *name);

/* ── Activations and their numerics ──────────────────────────────────────────────────────────────────────── */

/* How the lane's products take their activations: enum suffix, knob name, int8 words a value (0: dequantized
 * weights times f32 activations). */
#define KERNELS_ACTS(X) \
    X(DEQUANT, "dequant", 0) \
    X(INT8, "int8", 1) \
    X(INT8X2, "int8x2", 2)

enum kernels_acts {
#define X(e, s, w) KERNELS_ACTS_##e,
    KERNELS_ACTS(X)
#undef X
    KERNELS_ACTS_COUNT
};

/* The knob name of an activation mode, its lookup (-1 when unknown), and its int8 words a value. */
const char *kernels_acts_name(enum kernels_acts a);
int kernels_acts_lookup(const char *s);
int kernels_acts_words(enum kernels_acts a);

/* How a launch multiplies: f32 fused multiply-adds over dequantized weights, or int8 dot products of one or two
 * words a value. */
enum kernels_mode { KERNELS_MODE_F32, KERNELS_MODE_I8, KERNELS_MODE_I8X2 };

/* The multiply mode of an activation mode. */
enum kernels_mode kernels_mode(enum kernels_acts a);

/* A mode's accumulators: their width, whether they are integers, the most products one sums without overflow
 * (INT64_MAX when it cannot overflow), and the bytes a cached key or value takes staged in shared memory. */
struct kernels_accumulator {
    int bits;
    bool integer;
    int64_t terms;
    int stage_bytes;
};
struct kernels_accumulator kernels_accumulator(enum kernels_mode m);

/* ── Geometry ────────────────────────────────────────────────────────────────────────────────────────────── */

/* Whether the GEMV unpacks checkpoint rows of format f in registers (the 4-bit and k-quant block formats). */
bool kernels_decodes(enum ir_format f);

/* Output rows one warp of a GEMV takes for an m-row product (k in, n out) by checkpoint rows of format f: four for a
 * wide, shallow product in a block format within the GEMV's rows, one otherwise. */
int kernels_rows_a_warp(enum ir_format f, int64_t n, int64_t k, int64_t m);

/* Threads of the norm kernel's block for rows of `cols` values: enough for the row at KERNELS_NORM_VALUES_A_THREAD
 * values a thread, whole warps, one warp at least and 1024 at most. */
int64_t kernels_norm_threads(int64_t cols);

/* Threads of a block-format GEMV's block: eight warps of one output row each, or four warps of four. */
int64_t kernels_gemv_blk_norm_threads(int per_warp);

/* Whether a block of `threads` threads holds a norm of `cols` values in its registers (the last block of a projection
 * norms the whole row it wrote). */
bool kernels_block_holds_its_norm(int64_t threads, int64_t cols);

/* The decode mixture's down projection: its blocks, threads a block (a warp for each kept expert and one for a folded
 * shared expert) and the shared memory staging the experts' hidden rows. */
struct kernels_moe_down {
    int64_t blocks;
    int64_t threads;
    int64_t smem_bytes;
};
/* The launch for a mixture of width d whose k kept experts are dff wide, with a shared expert sdff wide (0: none). */
struct kernels_moe_down kernels_moe_down_launch(int64_t d, int64_t dff, int64_t k, int64_t sdff);

/* The cached rows an attention over `len` rows attends: the last `window` of them (0: every row). */
int64_t kernels_attended_span(int64_t len, int64_t window);

/* Key/value heads one attention block takes: as many as the block's shared memory (smem_bytes) stages — per head a
 * tile of cached keys (hd) and values (vd) at stage_bytes a value, and each of its `group` query heads' query and
 * output rows in f32 — at most KERNELS_ATTN_MAX_HEADS; 0 when not even one head fits. */
int64_t kernels_attn_heads_per_block(int64_t group, int64_t hd, int64_t vd, int64_t span, int64_t smem_bytes,
                                     int stage_bytes);

/* Chunks an attention's span is cut into so that `head_blocks` blocks of heads fill a chip of `sms` multiprocessors
 * (two blocks each), no chunk shorter than KERNELS_ATTN_SPLIT_ROWS: 1 when the heads alone fill it. */
int64_t kernels_attn_splits(int64_t head_blocks, int64_t span, int32_t sms);

/* Whether a per-head product of m rows (a in, b out a head) runs in tensor-core tiles in mode `mode`. */
bool kernels_head_gemm_in_tiles(enum kernels_mode mode, int64_t m, int64_t a, int64_t b);

/* Whether an attention of `rows` query rows, heads hd wide and values vd wide, runs in tensor-core tiles. */
bool kernels_attention_in_tiles(enum kernels_mode mode, int64_t rows, int64_t hd, int64_t vd);

#endif
