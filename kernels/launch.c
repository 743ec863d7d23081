/* kernels/launch.c — the lane's launch geometry: how many rows a warp takes, how wide a block is, whether a block
 * holds its norm, how the decode mixture's down projection and an attention are cut into blocks. */
#include "kernels.h"

/* ceil(a / b) for a ≥ 0, b > 0. */
static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* The smaller and the larger of two sizes. */
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Which formats the GEMV unpacks in registers, indexed by format: q8_0 is read as it is stored (int8 values and a
 * scale), plain f32/f16/bf16 rows are loaded as floats; the 4-bit and k-quant blocks are unpacked. */
static const bool decoded[IR_FMT_COUNT] = {
    [IR_FMT_Q4_0] = true,
    [IR_FMT_Q4_K] = true,
    [IR_FMT_Q6_K] = true,
};

bool kernels_decodes(enum ir_format f) { return (unsigned)f < IR_FMT_COUNT && decoded[f]; }

/* A block format stores blocks of several values under one scale (q8_0, q4_0, q4_k, q6_k). */
static bool block_format(enum ir_format f)
{
    return (unsigned)f < IR_FMT_COUNT && ir_format_block_values(f) > 1;
}

int kernels_rows_a_warp(enum ir_format f, int64_t n, int64_t k, int64_t m)
{
    bool wide = n >= KERNELS_ROWS_A_WARP_MIN_N && k > 0 && k <= KERNELS_ROWS_A_WARP_MAX_K;
    return block_format(f) && wide && m >= 1 && m <= KERNELS_GEMV_ROWS ? 4 : 1;
}

int64_t kernels_norm_threads(int64_t cols)
{
    int64_t need = ceil_div(max64(cols, 1), KERNELS_NORM_VALUES_A_THREAD);
    return min64(ceil_div(need, 32) * 32, 1024);
}

int64_t kernels_gdn_threads(int64_t dv) { return min64(ceil_div(max64(dv, 1), 32) * 32, 1024); }

int64_t kernels_gemv_blk_norm_threads(int per_warp) { return per_warp == 4 ? 4 * 32 : 8 * 32; }

bool kernels_block_holds_its_norm(int64_t threads, int64_t cols)
{
    return threads > 0 && cols >= 0 && cols <= threads * KERNELS_NORM_VALUES_A_THREAD;
}

struct kernels_moe_down kernels_moe_down_launch(int64_t d, int64_t dff, int64_t k, int64_t sdff)
{
    struct kernels_moe_down l;
    int64_t warps = max64(k, 0) + (sdff > 0);
    l.blocks = ceil_div(max64(d, 0), KERNELS_MOE_DOWN_OUTS);
    l.threads = 32 * warps;
    l.smem_bytes = 4 * (max64(k, 0) * max64(dff, 0) + max64(sdff, 0));
    return l;
}

int64_t kernels_attended_span(int64_t len, int64_t window)
{
    return window > 0 && window < len ? window : len;
}

int64_t kernels_attn_heads_per_block(int64_t group, int64_t hd, int64_t vd, int64_t span, int64_t smem_bytes,
                                     int stage_bytes)
{
    if (group < 1 || hd < 1 || vd < 1 || span < 1 || stage_bytes < 1 || smem_bytes < 1)
        return 0;
    int64_t tile = min64(span, KERNELS_ATTN_TILE_ROWS);
    int64_t per_head = tile * (hd + vd) * stage_bytes + group * (hd + vd) * 4;
    return min64(smem_bytes / per_head, KERNELS_ATTN_MAX_HEADS);
}

int64_t kernels_attn_smem(int64_t rows, int64_t hd, int64_t vd)
{
    return 4 * (hd + vd + rows * (max64(hd, vd) + vd));
}

int64_t kernels_attn_tile_rows(int64_t smem_bytes, int64_t hd, int64_t vd)
{
    int64_t rows = KERNELS_ATTN_TILE_ROWS;
    while (rows > 1 && kernels_attn_smem(rows, hd, vd) + KERNELS_ATTN_STATIC_SMEM > smem_bytes)
        rows /= 2;
    return rows;
}

int64_t kernels_attn_splits(int64_t head_blocks, int64_t span, int32_t sms)
{
    if (head_blocks < 1 || span < 1 || sms < 1)
        return 1;
    int64_t wanted = ceil_div(2 * (int64_t)sms, head_blocks);
    int64_t most = max64(span / KERNELS_ATTN_SPLIT_ROWS, 1);
    return max64(min64(wanted, most), 1);
}

bool kernels_head_gemm_in_tiles(enum kernels_mode mode, int64_t m, int64_t a, int64_t b)
{
    return mode != KERNELS_MODE_F32 && m > KERNELS_GEMV_ROWS && a > 0 && a % KERNELS_QBLOCK == 0 && b > 0 &&
           b % 16 == 0;
}

bool kernels_attention_in_tiles(enum kernels_mode mode, int64_t rows, int64_t hd, int64_t vd)
{
    return mode != KERNELS_MODE_F32 && rows > KERNELS_GEMV_ROWS && hd > 0 && hd % 16 == 0 && vd > 0 && vd % 16 == 0;
}
