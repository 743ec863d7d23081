/* tests/test_kernels.c — the lane's launch geometry: the chip table, the activation modes and their accumulators, and
 * every geometry function on both sides of each of its boundaries. */
#include "check.h"
#include "kernels/kernels.h"

#include <string.h>

/* The chip table: five chips, found by name, with sane sizes; unknown names and out-of-range indices give NULL. */
static void test_chips(void)
{
    static const char *const names[] = {"h100", "h200", "a100", "l40s", "rtx4090"};
    CHECK(kernels_chip_count() == 5);
    for (int i = 0; i < 5; i++) {
        const struct kernels_chip *c = kernels_chip_find(names[i]);
        CHECKF(c != NULL, "%s", names[i]);
        if (!c)
            continue;
        CHECK(c == kernels_chip_get(i));
        CHECK(c->sms >= 100 && c->sms <= 200);
        CHECK(c->smem_kib >= 99 && c->smem_kib <= 228);
        CHECK(c->bandwidth_gbs > 500);
        CHECK(c->label && c->label[0]);
    }
    CHECK(kernels_chip_find("h300") == NULL);
    CHECK(kernels_chip_find(NULL) == NULL);
    CHECK(kernels_chip_get(-1) == NULL);
    CHECK(kernels_chip_get(5) == NULL);
    CHECK(kernels_chip_find("h100")->smem_kib == 227 && kernels_chip_find("a100")->smem_kib == 163);
    CHECK(kernels_chip_find("l40s")->smem_kib == 99 && kernels_chip_find("rtx4090")->sms == 128);
}

/* The activation modes: names, lookups, words, multiply modes and their accumulators. */
static void test_acts(void)
{
    CHECK_STR(kernels_acts_name(KERNELS_ACTS_DEQUANT), "dequant");
    CHECK_STR(kernels_acts_name(KERNELS_ACTS_INT8), "int8");
    CHECK_STR(kernels_acts_name(KERNELS_ACTS_INT8X2), "int8x2");
    CHECK(kernels_acts_lookup("int8x2") == KERNELS_ACTS_INT8X2);
    CHECK(kernels_acts_lookup("int4") == -1);
    CHECK(kernels_acts_lookup(NULL) == -1);
    CHECK(kernels_acts_words(KERNELS_ACTS_DEQUANT) == 0);
    CHECK(kernels_acts_words(KERNELS_ACTS_INT8) == 1);
    CHECK(kernels_acts_words(KERNELS_ACTS_INT8X2) == 2);
    CHECK(kernels_mode(KERNELS_ACTS_DEQUANT) == KERNELS_MODE_F32);
    CHECK(kernels_mode(KERNELS_ACTS_INT8) == KERNELS_MODE_I8);
    CHECK(kernels_mode(KERNELS_ACTS_INT8X2) == KERNELS_MODE_I8X2);
    struct kernels_accumulator f = kernels_accumulator(KERNELS_MODE_F32);
    struct kernels_accumulator i = kernels_accumulator(KERNELS_MODE_I8);
    CHECK(f.bits == 32 && !f.integer && f.stage_bytes == 4);
    CHECK(i.bits == 32 && i.integer && i.stage_bytes == 2);
    /* The most int8 products an i32 sums: the next one could overflow. */
    CHECK(i.terms == 133144);
    CHECK(i.terms * 127 * 127 <= 2147483647LL && (i.terms + 1) * 127 * 127 > 2147483647LL);
    CHECK(kernels_accumulator(KERNELS_MODE_I8X2).terms == i.terms);
}

/* Which formats the GEMV decodes, and rows a warp on both sides of each bound. */
static void test_gemv(void)
{
    CHECK(kernels_decodes(IR_FMT_Q4_0) && kernels_decodes(IR_FMT_Q4_K) && kernels_decodes(IR_FMT_Q6_K));
    CHECK(!kernels_decodes(IR_FMT_Q8_0) && !kernels_decodes(IR_FMT_F32) && !kernels_decodes(IR_FMT_F16));
    CHECK(!kernels_decodes(IR_FMT_BF16));
    CHECK(kernels_rows_a_warp(IR_FMT_Q8_0, 4096, 8192, 1) == 4);
    CHECK(kernels_rows_a_warp(IR_FMT_Q8_0, 4095, 8192, 1) == 1);
    CHECK(kernels_rows_a_warp(IR_FMT_Q8_0, 4096, 8193, 1) == 1);
    CHECK(kernels_rows_a_warp(IR_FMT_Q4_K, 4096, 256, 8) == 4);
    CHECK(kernels_rows_a_warp(IR_FMT_Q4_K, 4096, 256, 9) == 1);
    CHECK(kernels_rows_a_warp(IR_FMT_Q8_0, 4096, 256, 0) == 1);
    CHECK(kernels_rows_a_warp(IR_FMT_F16, 4096, 256, 1) == 1);
    CHECK(kernels_rows_a_warp(IR_FMT_F32, 4096, 256, 1) == 1);
}

/* Norm blocks: threads for a row, the GEMV's blocks, and whether a block holds its norm. */
static void test_norms(void)
{
    CHECK(kernels_norm_threads(256) == 32);
    CHECK(kernels_norm_threads(1) == 32);
    CHECK(kernels_norm_threads(0) == 32);
    CHECK(kernels_norm_threads(264) == 64);
    CHECK(kernels_norm_threads(8192) == 1024);
    CHECK(kernels_norm_threads(8200) == 1024);
    CHECK(kernels_gemv_blk_norm_threads(1) == 256);
    CHECK(kernels_gemv_blk_norm_threads(4) == 128);
    CHECK(kernels_block_holds_its_norm(256, 2048));
    CHECK(!kernels_block_holds_its_norm(256, 2049));
    CHECK(kernels_block_holds_its_norm(1024, 8192));
    CHECK(!kernels_block_holds_its_norm(kernels_norm_threads(8200), 8200));
    CHECK(!kernels_block_holds_its_norm(0, 1));
}

/* The decode mixture's down launch: a warp per kept expert and one for a shared expert. */
static void test_moe_down(void)
{
    struct kernels_moe_down a = kernels_moe_down_launch(256, 256, 2, 0);
    CHECK(a.threads == 64 && a.blocks == 8 && a.smem_bytes == 4 * 512);
    struct kernels_moe_down b = kernels_moe_down_launch(2048, 768, 8, 512);
    CHECK(b.threads == 9 * 32 && b.blocks == 64 && b.smem_bytes == 4 * (8 * 768 + 512));
    CHECK(kernels_moe_down_launch(33, 1, 1, 0).blocks == 2);
}

/* Attention: the span, heads a block on both sides of the shared-memory bound, splits, and tiles. */
static void test_attention(void)
{
    CHECK(kernels_attended_span(64, 0) == 64);
    CHECK(kernels_attended_span(64, 16) == 16);
    CHECK(kernels_attended_span(64, 64) == 64);
    CHECK(kernels_attended_span(64, 100) == 64);
    /* One latent head of 576 keys and 512 values at 2 bytes: 64·1088·2 + 1088·4 = 143616 bytes. */
    int64_t per_head = 64 * 1088 * 2 + 1088 * 4;
    CHECK(kernels_attn_heads_per_block(1, 576, 512, 4096, per_head, 2) == 1);
    CHECK(kernels_attn_heads_per_block(1, 576, 512, 4096, per_head - 1, 2) == 0);
    CHECK(kernels_attn_heads_per_block(1, 576, 512, 4096, 227 * 1024, 2) == 1);
    CHECK(kernels_attn_heads_per_block(1, 576, 512, 4096, 99 * 1024, 2) == 0);
    CHECK(kernels_attn_heads_per_block(1, 576, 512, 4096, 163 * 1024, 2) == 1);
    /* Small heads: at most four a block; a short span stages fewer rows. */
    CHECK(kernels_attn_heads_per_block(4, 64, 64, 4096, 227 * 1024, 2) == 4);
    CHECK(kernels_attn_heads_per_block(1, 576, 512, 16, 99 * 1024, 2) == 2);
    CHECK(kernels_attn_heads_per_block(0, 64, 64, 64, 1 << 20, 2) == 0);
    CHECK(kernels_attn_splits(4, 4096, 132) == 16);
    CHECK(kernels_attn_splits(264, 4096, 132) == 1);
    CHECK(kernels_attn_splits(4, 100, 132) == 1);
    CHECK(kernels_attn_splits(4, 1024, 132) == 4);
    CHECK(kernels_attn_splits(0, 4096, 132) == 1);
    CHECK(kernels_head_gemm_in_tiles(KERNELS_MODE_I8, 9, 32, 16));
    CHECK(!kernels_head_gemm_in_tiles(KERNELS_MODE_I8, 8, 32, 16));
    CHECK(!kernels_head_gemm_in_tiles(KERNELS_MODE_I8, 9, 48, 16));
    CHECK(!kernels_head_gemm_in_tiles(KERNELS_MODE_I8, 9, 32, 24));
    CHECK(!kernels_head_gemm_in_tiles(KERNELS_MODE_F32, 64, 32, 16));
    CHECK(kernels_attention_in_tiles(KERNELS_MODE_I8X2, 9, 48, 32));
    CHECK(!kernels_attention_in_tiles(KERNELS_MODE_I8X2, 8, 48, 32));
    CHECK(!kernels_attention_in_tiles(KERNELS_MODE_I8X2, 9, 40, 32));
    CHECK(!kernels_attention_in_tiles(KERNELS_MODE_F32, 64, 48, 32));
}

int main(void)
{
    test_chips();
    test_acts();
    test_gemv();
    test_norms();
    test_moe_down();
    test_attention();
    return check_done("test_kernels");
}
