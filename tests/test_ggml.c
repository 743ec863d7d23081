/* tests/test_ggml.c — GGML block formats: row sizes, f16/bf16 conversions, hand-built blocks of every format decoded
 * exactly, round-trip error bounds on seeded rows, edge rows (zero, constant, one huge value, non-finite), invalid
 * lengths, and the exact bytes of a fixed input. */
#include "check.h"
#include "ir/ir.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

/* ── Helpers ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* A seeded splitmix64 generator. */
struct rng {
    uint64_t s;
};

/* The next 64 random bits. */
static uint64_t rng_next(struct rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A uniform float in [0, 1), exactly a multiple of 2^-24. */
static float rng_unit(struct rng *r) { return (float)(rng_next(r) >> 40) * (1.0f / 16777216.0f); }

/* A uniform float in [-1, 1). */
static float rng_sym(struct rng *r) { return 2.0f * rng_unit(r) - 1.0f; }

/* A standard normal draw (Box-Muller). */
static float rng_gauss(struct rng *r)
{
    float u = rng_unit(r) + 1e-7f, v = rng_unit(r);
    return sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * v);
}

/* The float with bits u. */
static float from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* The bits of x. */
static uint32_t to_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* Write h at p little-endian. */
static void put16(unsigned char *p, uint16_t h)
{
    p[0] = (unsigned char)(h & 0xffu);
    p[1] = (unsigned char)(h >> 8);
}

/* The byte holding the int8 v (two's complement). */
static unsigned char i8_byte(int v) { return (unsigned char)(v < 0 ? v + 256 : v); }

/* FNV-1a over n bytes. */
static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* Quantize then dequantize n values of x through format f into y; returns the quantize status. */
static int round_trip(enum ir_format f, const float *x, int64_t n, float *y)
{
    int64_t bytes = ir_ggml_row_bytes(f, n);
    unsigned char *q = malloc(bytes > 0 ? (size_t)bytes : 1);
    int rc = ir_ggml_quantize(f, x, n, q);
    ir_ggml_dequantize(f, q, n, y);
    free(q);
    return rc;
}

/* ── Row sizes ───────────────────────────────────────────────────────────────────────────────────────────── */

/* Every format's bytes for whole blocks, 0 for none, -1 for a partial block, a negative n, an unknown format or a
 * size past INT64_MAX. */
static void test_row_bytes(void)
{
    static const struct {
        enum ir_format f;
        int64_t values, bytes;
    } want[] = {{IR_FMT_F32, 1, 4},     {IR_FMT_F16, 1, 2},     {IR_FMT_BF16, 1, 2},   {IR_FMT_Q8_0, 32, 34},
                {IR_FMT_Q4_0, 32, 18},  {IR_FMT_Q4_K, 256, 144}, {IR_FMT_Q6_K, 256, 210}};
    CHECK(sizeof want / sizeof want[0] == IR_FMT_COUNT);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        enum ir_format f = want[i].f;
        const char *name = ir_format_name(f);
        CHECKF(ir_ggml_row_bytes(f, 0) == 0, "%s n=0", name);
        CHECKF(ir_ggml_row_bytes(f, want[i].values) == want[i].bytes, "%s one block", name);
        CHECKF(ir_ggml_row_bytes(f, 7 * want[i].values) == 7 * want[i].bytes, "%s seven blocks", name);
        CHECKF(ir_ggml_row_bytes(f, 4096) == 4096 / want[i].values * want[i].bytes, "%s 4096", name);
        CHECKF(ir_ggml_row_bytes(f, -want[i].values) == -1, "%s negative", name);
        /* the largest whole-block n: past INT64_MAX bytes where a block has more bytes than values */
        int64_t nmax = INT64_MAX - INT64_MAX % want[i].values;
        int64_t big = want[i].bytes > want[i].values ? -1 : nmax / want[i].values * want[i].bytes;
        CHECKF(ir_ggml_row_bytes(f, nmax) == big, "%s largest n", name);
        if (want[i].values > 1) {
            CHECKF(ir_ggml_row_bytes(f, want[i].values + 1) == -1, "%s partial block", name);
            CHECKF(ir_ggml_row_bytes(f, want[i].values - 1) == -1, "%s under a block", name);
            CHECKF(ir_ggml_row_bytes(f, 1) == -1, "%s n=1", name);
        }
    }
    CHECK(ir_ggml_row_bytes(IR_FMT_F32, 5) == 20);
    CHECK(ir_ggml_row_bytes(IR_FMT_Q8_0, 48) == -1);
    CHECK(ir_ggml_row_bytes(IR_FMT_Q4_K, 128) == -1);
    CHECK(ir_ggml_row_bytes(IR_FMT_Q6_K, 384) == -1);
    CHECK(ir_ggml_row_bytes((enum ir_format)IR_FMT_COUNT, 32) == -1);
    CHECK(ir_ggml_row_bytes((enum ir_format)-1, 32) == -1);
}

/* ── f16 and bf16 ────────────────────────────────────────────────────────────────────────────────────────── */

/* Known halves: exact values both ways, then the rounding of values between halves. */
static void test_f16_known(void)
{
    static const struct {
        float x;
        uint16_t h;
    } exact[] = {
        {1.0f, 0x3c00},   {-2.0f, 0xc000},          {0.5f, 0x3800},         {65504.0f, 0x7bff},
        {-65504.0f, 0xfbff}, {0x1p-24f, 0x0001}, /* smallest subnormal */ {0x1p-14f, 0x0400}, /* smallest normal */
        {0x3ffp-24f, 0x03ff}, /* largest subnormal */ {0.0f, 0x0000}, {1.5f, 0x3e00},     {-0x1p-24f, 0x8001},
        {0.333251953125f, 0x3555},
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        CHECKF(ir_f32_to_f16(exact[i].x) == exact[i].h, "f16(%g) = %04x", (double)exact[i].x,
               ir_f32_to_f16(exact[i].x));
        CHECKF(ir_f16_to_f32(exact[i].h) == exact[i].x, "f32(%04x)", exact[i].h);
    }
    /* -0, inf, NaN */
    CHECK(ir_f32_to_f16(-0.0f) == 0x8000);
    CHECK(ir_f16_to_f32(0x8000) == 0.0f && signbit(ir_f16_to_f32(0x8000)));
    CHECK(ir_f32_to_f16(INFINITY) == 0x7c00);
    CHECK(ir_f32_to_f16(-INFINITY) == 0xfc00);
    CHECK(isinf(ir_f16_to_f32(0x7c00)) && ir_f16_to_f32(0x7c00) > 0);
    CHECK(isinf(ir_f16_to_f32(0xfc00)) && ir_f16_to_f32(0xfc00) < 0);
    CHECK(ir_f32_to_f16(NAN) == 0x7e00);
    CHECK(ir_f32_to_f16(-NAN) == 0xfe00);
    CHECK(ir_f32_to_f16(from_bits(0x7f800001u)) == 0x7e00); /* a signalling NaN comes out quiet */
    CHECK(isnan(ir_f16_to_f32(0x7c01)) && isnan(ir_f16_to_f32(0xfe00)));
    /* rounding: ties to even, overflow at 65520, subnormal ties, underflow */
    const struct {
        float x;
        uint16_t h;
    } rounded[] = {
        {1.0f + 0x1p-11f, 0x3c00},             /* tie, down to even */
        {1.0f + 3 * 0x1p-11f, 0x3c02},         /* tie, up to even */
        {1.0f + 0x1p-11f + 0x1p-20f, 0x3c01},  /* past the tie */
        {1.0f + 0x1p-11f - 0x1p-23f, 0x3c00},  /* under the tie */
        {65519.0f, 0x7bff},
        {65520.0f, 0x7c00}, /* tie between 65504 and 65536: to even, which is inf */
        {1e10f, 0x7c00},
        {FLT_MAX, 0x7c00},
        {0x1p-25f, 0x0000},       /* half the smallest subnormal: tie, to even 0 */
        {0x1.8p-25f, 0x0001},     /* above the tie */
        {3 * 0x1p-25f, 0x0002},   /* 1.5 units: tie, to even 2 */
        {5 * 0x1p-25f, 0x0002},   /* 2.5 units: tie, to even 2 */
        {0x1p-26f, 0x0000},
        {-0x1p-25f, 0x8000},
        {1e-30f, 0x0000},
        {from_bits(1), 0x0000}, /* f32 subnormal */
        {0x1p-14f - 0x1p-26f, 0x0400}, /* rounds up into the normals */
        {0.1f, 0x2e66},
    };
    for (size_t i = 0; i < sizeof rounded / sizeof rounded[0]; i++)
        CHECKF(ir_f32_to_f16(rounded[i].x) == rounded[i].h, "f16(%a) = %04x, want %04x", (double)rounded[i].x,
               ir_f32_to_f16(rounded[i].x), rounded[i].h);
}

/* Every half converts to a float and back to itself (NaNs stay NaN), and the floats increase with the bits. */
static void test_f16_all(void)
{
    int bad = 0, nan_bad = 0, order_bad = 0;
    float prev = -INFINITY;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        float x = ir_f16_to_f32((uint16_t)h);
        bool is_nan = ((h & 0x7c00u) == 0x7c00u) && (h & 0x3ffu);
        if (is_nan) {
            nan_bad += !isnan(x) || (ir_f32_to_f16(x) & 0x7e00u) != 0x7e00u;
            continue;
        }
        bad += ir_f32_to_f16(x) != h;
        if (h >= 0x0001u && h <= 0x7c00u) { /* positive halves increase */
            order_bad += !(x > prev);
            prev = x;
        }
    }
    CHECKF(bad == 0, "%d halves do not round-trip", bad);
    CHECKF(nan_bad == 0, "%d NaN halves", nan_bad);
    CHECKF(order_bad == 0, "%d halves out of order", order_bad);
}

/* Known bfloat16 values and GGML's rounding: ties to even, NaN quiet, overflow to inf, subnormals kept. */
static void test_bf16_known(void)
{
    static const struct {
        uint32_t f;
        uint16_t h;
    } cases[] = {
        {0x3f800000u, 0x3f80}, /* 1.0 */
        {0xbf800000u, 0xbf80}, /* -1.0 */
        {0x3f808000u, 0x3f80}, /* tie, down to even */
        {0x3f818000u, 0x3f82}, /* tie, up to even */
        {0x3f808001u, 0x3f81}, /* past the tie */
        {0x3f807fffu, 0x3f80}, /* under the tie */
        {0x7f800000u, 0x7f80}, /* inf */
        {0xff800000u, 0xff80}, /* -inf */
        {0x7f7fffffu, 0x7f80}, /* FLT_MAX rounds to inf */
        {0x7f800001u, 0x7fc0}, /* signalling NaN comes out quiet */
        {0xffa00000u, 0xffe0}, /* negative NaN keeps sign and payload top bits */
        {0x7fc00000u, 0x7fc0}, /* quiet NaN */
        {0x00018000u, 0x0002}, /* subnormal tie, up to even */
        {0x00008000u, 0x0000}, /* subnormal tie, down to even */
        {0x80000000u, 0x8000}, /* -0 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECKF(ir_f32_to_bf16(from_bits(cases[i].f)) == cases[i].h, "bf16(%08x) = %04x, want %04x",
               (unsigned)cases[i].f, ir_f32_to_bf16(from_bits(cases[i].f)), cases[i].h);
    CHECK(ir_bf16_to_f32(0x3f80) == 1.0f);
    CHECK(ir_bf16_to_f32(0xc040) == -3.0f);
    CHECK(isnan(ir_bf16_to_f32(0x7fc0)));
    CHECK(isinf(ir_bf16_to_f32(0x7f80)));
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        float x = ir_bf16_to_f32((uint16_t)h);
        if (isnan(x))
            bad += ir_f32_to_bf16(x) != (h | 0x40u);
        else
            bad += ir_f32_to_bf16(x) != h || to_bits(x) != h << 16;
    }
    CHECKF(bad == 0, "%d bf16 values do not round-trip", bad);
}

/* Relative error of a conversion round trip on random normal-range values: f16 <= 2^-11, bf16 <= 2^-8. */
static void test_half_relative_error(void)
{
    struct rng r = {11};
    double worst16 = 0, worst_bf = 0;
    for (int i = 0; i < 200000; i++) {
        /* log-uniform magnitude across f16's normal range [2^-14, 65504) and a random sign */
        float mag = ldexpf(1.0f + rng_unit(&r), -14 + (int)(rng_next(&r) % 30));
        float x = (rng_next(&r) & 1) ? -mag : mag;
        if (fabsf(x) > 65504.0f)
            continue;
        double e16 = fabs((double)ir_f16_to_f32(ir_f32_to_f16(x)) - x) / fabs(x);
        double ebf = fabs((double)ir_bf16_to_f32(ir_f32_to_bf16(x)) - x) / fabs(x);
        worst16 = e16 > worst16 ? e16 : worst16;
        worst_bf = ebf > worst_bf ? ebf : worst_bf;
    }
    CHECKF(worst16 <= 0x1p-11 && worst16 > 0x1p-13, "f16 relative error %g", worst16);
    CHECKF(worst_bf <= 0x1p-8 && worst_bf > 0x1p-10, "bf16 relative error %g", worst_bf);
    /* f32 is exact, bit for bit */
    float xs[64], ys[64];
    for (int i = 0; i < 64; i++)
        xs[i] = rng_gauss(&r) * 1e3f;
    xs[0] = -0.0f;
    xs[1] = from_bits(1);
    CHECK(round_trip(IR_FMT_F32, xs, 64, ys) == 0 && memcmp(xs, ys, sizeof xs) == 0);
}

/* f32, f16 and bf16 rows are little-endian words. */
static void test_scalar_layouts(void)
{
    const float x[2] = {1.0f, -2.0f};
    unsigned char b[8];
    static const unsigned char f32[8] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0};
    static const unsigned char f16[4] = {0x00, 0x3c, 0x00, 0xc0};
    static const unsigned char bf16[4] = {0x80, 0x3f, 0x00, 0xc0};
    CHECK(ir_ggml_quantize(IR_FMT_F32, x, 2, b) == 0 && memcmp(b, f32, 8) == 0);
    CHECK(ir_ggml_quantize(IR_FMT_F16, x, 2, b) == 0 && memcmp(b, f16, 4) == 0);
    CHECK(ir_ggml_quantize(IR_FMT_BF16, x, 2, b) == 0 && memcmp(b, bf16, 4) == 0);
    float y[2];
    ir_ggml_dequantize(IR_FMT_F32, f32, 2, y);
    CHECK(y[0] == 1.0f && y[1] == -2.0f);
    ir_ggml_dequantize(IR_FMT_F16, f16, 2, y);
    CHECK(y[0] == 1.0f && y[1] == -2.0f);
    ir_ggml_dequantize(IR_FMT_BF16, bf16, 2, y);
    CHECK(y[0] == 1.0f && y[1] == -2.0f);
}

/* ── Hand-built blocks ───────────────────────────────────────────────────────────────────────────────────── */

/* q8_0: f16 d, then 32 int8 codes; x = q*d. */
static void test_q8_0_hand(void)
{
    unsigned char b[2 * 34];
    float y[64];
    put16(b, 0x3800); /* d = 0.5 */
    for (int j = 0; j < 32; j++)
        b[2 + j] = i8_byte(8 * j - 128); /* -128, -120, ..., 120 */
    put16(b + 34, 0xc400); /* d = -4 */
    for (int j = 0; j < 32; j++)
        b[36 + j] = i8_byte(j == 0 ? 127 : j - 16);
    ir_ggml_dequantize(IR_FMT_Q8_0, b, 64, y);
    int bad = 0;
    for (int j = 0; j < 32; j++) {
        bad += y[j] != (float)(8 * j - 128) * 0.5f;
        bad += y[32 + j] != (float)(j == 0 ? 127 : j - 16) * -4.0f;
    }
    CHECKF(bad == 0, "%d q8_0 values wrong", bad);
    CHECK(y[0] == -64.0f && y[31] == 60.0f && y[32] == -508.0f);
}

/* q4_0: f16 d, then 16 bytes, byte j = element j (low nibble) | element j+16 (high nibble); x = (q-8)*d. */
static void test_q4_0_hand(void)
{
    unsigned char b[18];
    float y[32];
    put16(b, 0x3800); /* d = 0.5 */
    for (int j = 0; j < 16; j++)
        b[2 + j] = (unsigned char)(j | ((15 - j) << 4));
    ir_ggml_dequantize(IR_FMT_Q4_0, b, 32, y);
    int bad = 0;
    for (int j = 0; j < 16; j++) {
        bad += y[j] != (float)(j - 8) * 0.5f;
        bad += y[j + 16] != (float)(7 - j) * 0.5f;
    }
    CHECKF(bad == 0, "%d q4_0 values wrong", bad);
    CHECK(y[0] == -4.0f && y[15] == 3.5f && y[16] == 3.5f && y[31] == -4.0f);
    put16(b, 0xb400); /* d = -0.25 */
    b[2] = 0xf0;       /* element 0 code 0, element 16 code 15 */
    ir_ggml_dequantize(IR_FMT_Q4_0, b, 32, y);
    CHECK(y[0] == 2.0f && y[16] == -1.75f);
}

/* q4_k: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, 128 bytes of nibbles; x = d*sc*q - dmin*m. */
static void test_q4_k_hand(void)
{
    static const int sc[8] = {1, 2, 3, 4, 17, 33, 50, 63}, m[8] = {0, 5, 10, 15, 20, 40, 60, 63};
    /* packed by hand: bytes 0-3 scale j | (scale j+4 >> 4) << 6; bytes 4-7 min j | (min j+4 >> 4) << 6;
     * bytes 8-11 (scale j+4 & 15) | (min j+4 & 15) << 4 */
    static const unsigned char scales[12] = {0x41, 0x82, 0xc3, 0xc4, 0x40, 0x85, 0xca, 0xcf, 0x41, 0x81, 0xc2, 0xff};
    unsigned char b[144];
    put16(b, 0x3c00);     /* d = 1 */
    put16(b + 2, 0x3800); /* dmin = 0.5 */
    memcpy(b + 4, scales, 12);
    /* element e's code (e*5+3) mod 16; chunk c of 64 elements keeps 32 bytes: low nibbles elements 64c..64c+31,
     * high nibbles 64c+32..64c+63 */
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            int lo = (64 * c + l) * 5 + 3, hi = (64 * c + 32 + l) * 5 + 3;
            b[16 + 32 * c + l] = (unsigned char)((lo % 16) | ((hi % 16) << 4));
        }
    float y[256];
    ir_ggml_dequantize(IR_FMT_Q4_K, b, 256, y);
    int bad = 0;
    for (int e = 0; e < 256; e++) {
        float want = (float)(sc[e / 32] * ((e * 5 + 3) % 16)) - 0.5f * (float)m[e / 32];
        bad += y[e] != want;
    }
    CHECKF(bad == 0, "%d q4_k values wrong", bad);
    CHECK(y[0] == 3.0f);                   /* sub-block 0: 1*3 - 0 */
    CHECK(y[32] == 2.0f * 3 - 2.5f);       /* sub-block 1: code (160+3)%16 = 3 */
    CHECK(y[255] == 63.0f * 14 - 31.5f);   /* sub-block 7: code (1275+3)%16 = 14 */
}

/* The packed q6_k position of element e: its ql byte and nibble, its qh byte and bit shift. */
static void q6_position(int e, int *ql, int *high_nibble, int *qh, int *shift)
{
    int h = e / 128, r = e % 128, k = r / 32, l = r % 32;
    *ql = 64 * h + l + 32 * (k & 1);
    *high_nibble = k >> 1;
    *qh = 128 + 32 * h + l;
    *shift = 2 * k;
}

/* q6_k: ql (low 4 bits), qh (high 2 bits), 16 int8 scales, f16 d; x = d*sc*(q-32). */
static void test_q6_k_hand(void)
{
    /* literal bytes: ql[0] = 0x21, ql[32] = 0x00, qh[0] = 0xe4 (bits 0-1: 0, 2-3: 1, 4-5: 2, 6-7: 3) */
    unsigned char b[210];
    memset(b, 0, sizeof b);
    b[0] = 0x21;
    b[128] = 0xe4;
    b[192 + 0] = 1;
    b[192 + 2] = 1;
    b[192 + 4] = 1;
    b[192 + 6] = i8_byte(-2);
    put16(b + 208, 0x3c00); /* d = 1 */
    float y[256];
    ir_ggml_dequantize(IR_FMT_Q6_K, b, 256, y);
    CHECK(y[0] == -31.0f);       /* code 1 */
    CHECK(y[32] == -16.0f);      /* code 16 */
    CHECK(y[64] == 2.0f);        /* code 2 | 2<<4 = 34 */
    CHECK(y[96] == -2.0f * 16);  /* code 48, scale -2 */
    CHECK(y[1] == -32.0f);       /* code 0, scale 1 */
    CHECK(y[16] == 0.0f);        /* scale 0 */
    CHECK(y[128] == 0.0f);       /* second half: scale 8 is 0 */

    /* every element: code (e*7+1) mod 64, scales of both signs up to -128 */
    static const int s[16] = {1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6, -6, 7, -7, 127, -128};
    memset(b, 0, sizeof b);
    for (int e = 0; e < 256; e++) {
        int code = (e * 7 + 1) % 64, ql, hn, qh, shift;
        q6_position(e, &ql, &hn, &qh, &shift);
        b[ql] |= (unsigned char)((code & 15) << (4 * hn));
        b[qh] |= (unsigned char)((code >> 4) << shift);
    }
    for (int i = 0; i < 16; i++)
        b[192 + i] = i8_byte(s[i]);
    put16(b + 208, 0x3400); /* d = 0.25 */
    ir_ggml_dequantize(IR_FMT_Q6_K, b, 256, y);
    int bad = 0;
    for (int e = 0; e < 256; e++)
        bad += y[e] != 0.25f * (float)s[e / 16] * (float)((e * 7 + 1) % 64 - 32);
    CHECKF(bad == 0, "%d q6_k values wrong", bad);
    CHECK(y[255] == 0.25f * -128.0f * (float)((255 * 7 + 1) % 64 - 32));
}

/* q8_0 and q4_0 quantize to known bytes: q8_0 rounds half away from zero, q4_0 takes trunc(x/d + 8.5), with the
 * block's largest value on code 0 and clipping at 15. */
static void test_quantize_hand(void)
{
    float x[32] = {0};
    unsigned char b[34];
    x[0] = 127.0f; /* d = 1 */
    x[1] = 2.5f;
    x[2] = -2.5f;
    x[3] = 0.5f;
    x[4] = -126.5f;
    x[5] = 3.49f;
    CHECK(ir_ggml_quantize(IR_FMT_Q8_0, x, 32, b) == 0);
    CHECK(b[0] == 0x00 && b[1] == 0x3c);
    CHECK(b[2] == 127 && b[3] == 3 && b[4] == i8_byte(-3) && b[5] == 1 && b[6] == i8_byte(-127) && b[7] == 3);
    CHECK(b[8] == 0 && b[33] == 0);

    float z[32] = {0};
    z[2] = -8.0f;  /* the largest magnitude: d = -8 / -8 = 1, so code = trunc(x + 8.5); this one 0 */
    z[0] = 0.5f;   /* trunc(9.0) = 9 */
    z[1] = -0.5f;  /* trunc(8.0) = 8 */
    z[16] = 7.6f;  /* trunc(16.1) clips to 15 */
    z[17] = -1.2f; /* trunc(7.3) = 7 */
    z[18] = 2.5f;  /* trunc(11.0) = 11 */
    z[19] = -7.9f; /* trunc(0.6) = 0 */
    CHECK(ir_ggml_quantize(IR_FMT_Q4_0, z, 32, b) == 0);
    CHECK(b[0] == 0x00 && b[1] == 0x3c);
    CHECK(b[2] == (9 | 15 << 4)); /* elements 0 and 16 */
    CHECK(b[3] == (8 | 7 << 4));  /* elements 1 and 17 */
    CHECK(b[4] == (0 | 11 << 4)); /* elements 2 and 18 */
    CHECK(b[5] == (8 | 0 << 4));  /* elements 3 and 19 */
    CHECK(b[6] == (8 | 8 << 4));   /* zeros: code 8 */
}

/* ── Round-trip error bounds ─────────────────────────────────────────────────────────────────────────────── */

/* Row distributions, each drawn by one function; `tiny` ones put the block scales among f16's subnormals. */
static float draw_uniform(struct rng *r) { return rng_sym(r); }
static float draw_gauss(struct rng *r) { return rng_gauss(r); }
static float draw_positive(struct rng *r) { return 3.0f * rng_unit(r); }
static float draw_heavy(struct rng *r) { return rng_gauss(r) * rng_gauss(r) * rng_gauss(r); }
static float draw_negative(struct rng *r) { return -300.0f * rng_unit(r) - 1.0f; }
static float draw_outliers(struct rng *r) { return rng_next(r) % 50 == 0 ? 1000.0f * rng_gauss(r) : rng_gauss(r); }
static float draw_signs(struct rng *r) { return (rng_next(r) & 1) ? -1.5f : 1.5f; }
static float draw_tiny(struct rng *r) { return 1e-3f * rng_sym(r); }

/* `smooth` ones have continuous values, so rounding noise is uniform and the RMS bounds apply (two-valued rows
 * put half their values on q4_0's clipped side). */
static const struct dist {
    const char *name;
    float (*draw)(struct rng *r);
    bool tiny, smooth;
} dists[] = {
    {"uniform", draw_uniform, false, true},   {"gauss", draw_gauss, false, true},
    {"positive", draw_positive, false, true}, {"heavy", draw_heavy, false, true},
    {"negative", draw_negative, false, true}, {"outliers", draw_outliers, false, true},
    {"signs", draw_signs, false, false},      {"tiny", draw_tiny, true, true},
};

/* Bounds on |x - dq(q(x))| as a fraction of the block's max |x| = A (block: 32 values for q8_0/q4_0, the super-block
 * of 256 for q4_k/q6_k), derived for blocks whose f16 scales are normal numbers:
 *   q8_0  A/254 (half a step of d = A/127) + A*2^-11 (the f16 rounding of d, times |q| <= 127).
 *   q4_0  A/8 + A*2^-11: d = A/8 and codes run -8..7, so the largest value sits on code -8 exactly but its opposite
 *         (x/d near +8) clips to 7 and errs by up to a whole step; every value with x/d <= 7.5 is within A/16 +
 *         A*2^-11 (checked separately).
 *   q4_k  A/7: a sub-block spans at most 2A, its grid of 15 steps may be stretched by the fit to 14 (rmin = -1), so
 *         a step is at most 2A/14; a value errs by at most one step (half from rounding, the rest from the fit
 *         clipping an extreme and the 6-bit rounding of the sub-block's scale and min).
 *   q6_k  A/32: the 6-bit symmetric grid puts the sub-block's largest value at -32 steps, so a step is at most
 *         about A/32; a value errs by half a step from rounding, the rest (clipping the opposite extreme at 31
 *         and the 8-bit rounding of the scale) keeps it within one step. 4.5x tighter than q4_k.
 * RMS of the same fractions, from uniform rounding noise (step/sqrt(12)) with the step above:
 *   q8_0 1.15/(127 sqrt12), q4_0 1.25/(8 sqrt12) (the clipped extremes add to it), q4_k 2/(15 sqrt12) (worst-case
 *   span 2A), q6_k 1/(31 sqrt12).
 * When a block's scale is an f16 subnormal (A small), the scale carries an absolute error up to 2^-25, which costs
 * up to (largest code x largest sub-scale) x 2^-25 more: `abs` below. Float arithmetic adds `slack` x A. */
static const struct bound {
    enum ir_format f;
    int block;
    double max_rel, rms_rel, abs;
} bounds[] = {
    {IR_FMT_Q8_0, 32, 1.0 / 254 + 0x1p-11, 1.15 / (127 * 3.4641016), 127 * 0x1p-25},
    {IR_FMT_Q4_0, 32, 1.0 / 8 + 0x1p-11, 1.25 / (8 * 3.4641016), 8 * 0x1p-25},
    {IR_FMT_Q4_K, 256, 1.0 / 7, 2.0 / (15 * 3.4641016), (15 * 63 + 63) * 0x1p-25},
    {IR_FMT_Q6_K, 256, 1.0 / 32, 1.0 / (31 * 3.4641016), 32 * 128 * 0x1p-25},
};
static const double slack = 1e-6;

/* Max and RMS of |x - y| / (block max |x|) over n values in blocks of `block`; blocks of zeros are skipped. */
static void block_errors(const float *x, const float *y, int n, int block, double *max_rel, double *rms_rel,
                         double *max_excess, double abs_term, double bound)
{
    double worst = 0, sum2 = 0, excess = 0;
    long count = 0;
    for (int b = 0; b < n; b += block) {
        float A = 0;
        for (int i = 0; i < block; i++)
            A = fmaxf(A, fabsf(x[b + i]));
        if (A == 0)
            continue;
        for (int i = 0; i < block; i++) {
            double e = fabs((double)x[b + i] - (double)y[b + i]);
            double rel = e / A;
            worst = rel > worst ? rel : worst;
            sum2 += rel * rel;
            count++;
            double over = e - (bound * (1 + slack) * A + abs_term);
            excess = over > excess ? over : excess;
        }
    }
    *max_rel = worst;
    *rms_rel = count ? sqrt(sum2 / (double)count) : 0;
    *max_excess = excess;
}

/* Every quantized format on every distribution stays within its max and RMS bounds; q6_k beats q4_k. */
static void test_round_trip_bounds(void)
{
    enum { ROWS = 24, N = 1024 };
    float *x = malloc(sizeof(float) * ROWS * N), *y = malloc(sizeof(float) * ROWS * N);
    double rms_q4k = 0, rms_q6k = 0, max_q4k = 0, max_q6k = 0;
    for (size_t di = 0; di < sizeof dists / sizeof dists[0]; di++) {
        struct rng r = {1000 + di};
        for (int i = 0; i < ROWS * N; i++)
            x[i] = dists[di].draw(&r);
        for (size_t bi = 0; bi < sizeof bounds / sizeof bounds[0]; bi++) {
            const struct bound *B = &bounds[bi];
            const char *fname = ir_format_name(B->f);
            CHECKF(round_trip(B->f, x, ROWS * N, y) == 0, "%s quantize", fname);
            double max_rel, rms_rel, excess;
            /* normal-scale rows meet the relative bound alone; tiny ones get the subnormal-scale term */
            block_errors(x, y, ROWS * N, B->block, &max_rel, &rms_rel, &excess, dists[di].tiny ? B->abs : 0,
                         B->max_rel);
            CHECKF(excess <= 0, "%s %s: max error %.5f of block max over bound %.5f (by %g)", fname, dists[di].name,
                   max_rel, B->max_rel, excess);
            if (dists[di].smooth && !dists[di].tiny)
                CHECKF(rms_rel <= B->rms_rel, "%s %s: rms %.5f over %.5f", fname, dists[di].name, rms_rel,
                       B->rms_rel);
            if (B->f == IR_FMT_Q4_K && !dists[di].tiny) {
                rms_q4k = rms_rel > rms_q4k ? rms_rel : rms_q4k;
                max_q4k = max_rel > max_q4k ? max_rel : max_q4k;
            }
            if (B->f == IR_FMT_Q6_K && !dists[di].tiny) {
                rms_q6k = rms_rel > rms_q6k ? rms_rel : rms_q6k;
                max_q6k = max_rel > max_q6k ? max_rel : max_q6k;
            }
        }
    }
    CHECKF(rms_q6k * 3 < rms_q4k && max_q6k * 3 < max_q4k, "q6_k (max %.4f rms %.4f) vs q4_k (max %.4f rms %.4f)",
           max_q6k, rms_q6k, max_q4k, rms_q4k);
    free(x);
    free(y);
}

/* q4_0 errs by at most half a step except where a value opposite the block's largest clips at code 7: that value
 * comes back as 7/8 of the largest, one whole step off. */
static void test_q4_0_clip(void)
{
    enum { N = 32 * 512 };
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
    struct rng r = {77};
    for (int i = 0; i < N; i++)
        x[i] = rng_sym(&r);
    CHECK(round_trip(IR_FMT_Q4_0, x, N, y) == 0);
    double worst = 0;
    int clipped = 0;
    for (int b = 0; b < N; b += 32) {
        float amax = 0, max = 0;
        for (int i = 0; i < 32; i++)
            if (fabsf(x[b + i]) > amax) {
                amax = fabsf(x[b + i]);
                max = x[b + i];
            }
        float d = max / -8.0f;
        for (int i = 0; i < 32; i++) {
            if (x[b + i] / d > 7.5f) {
                clipped++;
                continue;
            }
            double rel = fabs((double)x[b + i] - y[b + i]) / amax;
            worst = rel > worst ? rel : worst;
        }
    }
    CHECKF(worst <= (1.0 / 16 + 0x1p-11) * (1 + slack), "q4_0 unclipped error %.5f of block max", worst);
    CHECKF(clipped > 0, "some values clip (%d)", clipped);
    free(x);
    free(y);

    float a[32] = {0}, b[32];
    a[3] = 1.0f;  /* the largest: d = -1/8, code 0 */
    a[9] = -1.0f; /* its opposite: x/d = 8, clips to code 15 */
    a[20] = 0.5f;
    CHECK(round_trip(IR_FMT_Q4_0, a, 32, b) == 0);
    CHECK(b[3] == 1.0f && b[9] == -0.875f && b[20] == 0.5f && b[0] == 0.0f);
}

/* q8_0 and q4_0 are idempotent: quantizing a dequantized row gives back the same bytes. */
static void test_idempotent(void)
{
    enum { N = 32 * 64 };
    static const enum ir_format fs[] = {IR_FMT_Q8_0, IR_FMT_Q4_0};
    float x[N], y[N];
    unsigned char q1[34 * N / 32], q2[34 * N / 32];
    struct rng r = {5};
    for (int i = 0; i < N; i++)
        x[i] = rng_gauss(&r) * 10.0f;
    for (size_t k = 0; k < sizeof fs / sizeof fs[0]; k++) {
        size_t bytes = (size_t)ir_ggml_row_bytes(fs[k], N);
        CHECK(ir_ggml_quantize(fs[k], x, N, q1) == 0);
        ir_ggml_dequantize(fs[k], q1, N, y);
        CHECK(ir_ggml_quantize(fs[k], y, N, q2) == 0);
        CHECKF(memcmp(q1, q2, bytes) == 0, "%s re-quantizes to other bytes", ir_format_name(fs[k]));
    }
}

/* ── Edge rows ───────────────────────────────────────────────────────────────────────────────────────────── */

/* A zero row comes back exactly zero in every format; a constant row comes back within 2^-10 relative (bf16:
 * 2^-8): every format puts the constant on an extreme code, so only the f16 rounding of the scale is left. The
 * constants keep every scale a normal f16 (q6_k's d is |c|/4096: |c| >= 0.25). */
static void test_zero_and_constant_rows(void)
{
    enum { N = 512 };
    float x[N], y[N];
    for (int f = 0; f < IR_FMT_COUNT; f++) {
        const char *name = ir_format_name((enum ir_format)f);
        memset(x, 0, sizeof x);
        for (int i = 0; i < N; i++)
            y[i] = 1.0f;
        CHECKF(round_trip((enum ir_format)f, x, N, y) == 0, "%s zeros", name);
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += y[i] != 0.0f;
        CHECKF(bad == 0, "%s: %d zeros come back nonzero", name, bad);

        static const float constants[] = {0.37f, -2.5f, 1000.0f, -0.3f};
        for (size_t c = 0; c < sizeof constants / sizeof constants[0]; c++) {
            for (int i = 0; i < N; i++)
                x[i] = constants[c];
            CHECK(round_trip((enum ir_format)f, x, N, y) == 0);
            double worst = 0;
            for (int i = 0; i < N; i++) {
                double rel = fabs((double)y[i] - x[i]) / fabs(x[i]);
                worst = rel > worst ? rel : worst;
            }
            double bound = f == IR_FMT_BF16 ? 0x1p-8 : 0x1p-10;
            CHECKF(worst <= bound, "%s constant %g: relative error %g", name, (double)constants[c], worst);
        }
    }
}

/* One huge value among ordinary ones: it comes back within 1% in every format, its block stays within the block
 * bound, and the other blocks are untouched by it. */
static void test_huge_value(void)
{
    enum { N = 1024, AT = 300 };
    float x[N], y[N], y_plain[N];
    struct rng r = {99};
    for (int i = 0; i < N; i++)
        x[i] = rng_sym(&r);
    for (size_t bi = 0; bi < sizeof bounds / sizeof bounds[0]; bi++) {
        const struct bound *B = &bounds[bi];
        const char *name = ir_format_name(B->f);
        CHECK(round_trip(B->f, x, N, y_plain) == 0);
        float keep = x[AT];
        x[AT] = 3.0e4f;
        CHECK(round_trip(B->f, x, N, y) == 0);
        CHECKF(fabsf(y[AT] - x[AT]) <= 0.01f * x[AT], "%s huge value %g -> %g", name, (double)x[AT], (double)y[AT]);
        double max_rel, rms_rel, excess;
        block_errors(x, y, N, B->block, &max_rel, &rms_rel, &excess, 0, B->max_rel);
        CHECKF(excess <= 0, "%s with a huge value: %.5f of block max", name, max_rel);
        int changed = 0, block0 = AT / B->block * B->block;
        for (int i = 0; i < N; i++)
            if (i < block0 || i >= block0 + B->block)
                changed += y[i] != y_plain[i];
        CHECKF(changed == 0, "%s: %d values outside the huge value's block changed", name, changed);
        x[AT] = keep;
    }
}

/* NaN reads as 0 and magnitudes past the format's range (inf included) clip: every block dequantizes finite. */
static void test_nonfinite_inputs(void)
{
    enum { N = 512 };
    float x[N], y[N];
    struct rng r = {123};
    for (size_t bi = 0; bi < sizeof bounds / sizeof bounds[0]; bi++) {
        const struct bound *B = &bounds[bi];
        const char *name = ir_format_name(B->f);
        for (int i = 0; i < N; i++)
            x[i] = rng_gauss(&r);
        x[1] = NAN;
        x[40] = INFINITY;
        x[300] = -INFINITY;
        x[301] = 1e30f;
        x[400] = -FLT_MAX;
        x[450] = NAN;
        CHECKF(round_trip(B->f, x, N, y) == 0, "%s", name);
        int nonfinite = 0;
        for (int i = 0; i < N; i++)
            nonfinite += !isfinite(y[i]);
        CHECKF(nonfinite == 0, "%s: %d non-finite outputs", name, nonfinite);
        CHECKF(y[40] > 1e5f && y[300] < -1e5f && y[301] > 1e5f && y[400] < -1e5f, "%s: extremes %g %g %g %g", name,
               (double)y[40], (double)y[300], (double)y[301], (double)y[400]);
        /* a block of NaN only is a block of zeros */
        for (int i = 0; i < B->block; i++)
            x[i] = NAN;
        CHECK(round_trip(B->f, x, B->block, y) == 0);
        int nonzero = 0;
        for (int i = 0; i < B->block; i++)
            nonzero += y[i] != 0.0f;
        CHECKF(nonzero == 0, "%s: NaN block gives %d nonzero values", name, nonzero);
    }
    /* q8_0 and q4_0 clip at exactly their largest representable magnitude */
    float a[32] = {0}, b[32];
    a[0] = INFINITY;
    a[1] = NAN;
    a[2] = -INFINITY;
    CHECK(round_trip(IR_FMT_Q8_0, a, 32, b) == 0);
    CHECK(b[0] == 127.0f * 65504.0f && b[1] == 0.0f && b[2] == -127.0f * 65504.0f);
    CHECK(round_trip(IR_FMT_Q4_0, a, 32, b) == 0);
    CHECK(b[0] == 8.0f * 65504.0f && b[1] == 0.0f && b[2] == -7.0f * 65504.0f);
    /* the plain float formats keep IEEE meaning */
    float z[4] = {NAN, INFINITY, 1e30f, -1e30f}, w[4];
    CHECK(round_trip(IR_FMT_F16, z, 4, w) == 0);
    CHECK(isnan(w[0]) && isinf(w[1]) && isinf(w[2]) && w[3] < 0 && isinf(w[3]));
    CHECK(round_trip(IR_FMT_BF16, z, 4, w) == 0);
    CHECK(isnan(w[0]) && isinf(w[1]) && isfinite(w[2]) && fabsf(w[2] - 1e30f) <= 1e30f * 0x1p-8f);
}

/* Bad lengths: quantize refuses without writing, dequantize zero-fills its n outputs and reads nothing. */
static void test_invalid_lengths(void)
{
    float x[64] = {1.0f}, y[64];
    unsigned char q[256];
    memset(q, 0xab, sizeof q);
    for (int f = 0; f < IR_FMT_COUNT; f++) {
        const char *name = ir_format_name((enum ir_format)f);
        int values = ir_format_block_values((enum ir_format)f);
        CHECKF(ir_ggml_quantize((enum ir_format)f, x, -1, q) != 0, "%s n=-1", name);
        CHECKF(ir_ggml_quantize((enum ir_format)f, x, 0, q) == 0, "%s n=0", name);
        CHECKF(ir_ggml_quantize((enum ir_format)f, NULL, values, q) != 0, "%s NULL src", name);
        CHECKF(ir_ggml_quantize((enum ir_format)f, x, values, NULL) != 0, "%s NULL dst", name);
        if (values > 1) {
            CHECKF(ir_ggml_quantize((enum ir_format)f, x, values + 1, q) != 0, "%s partial", name);
            for (int i = 0; i < 33; i++)
                y[i] = 7.0f;
            ir_ggml_dequantize((enum ir_format)f, q, 33, y);
            int nonzero = 0;
            for (int i = 0; i < 33; i++)
                nonzero += y[i] != 0.0f;
            CHECKF(nonzero == 0, "%s dequantize of a partial block leaves %d values", name, nonzero);
        }
    }
    int untouched = 0;
    for (size_t i = 0; i < sizeof q; i++)
        untouched += q[i] == 0xab;
    CHECK(untouched == (int)sizeof q);
    CHECK(ir_ggml_quantize((enum ir_format)IR_FMT_COUNT, x, 32, q) != 0);
    y[0] = 5.0f;
    ir_ggml_dequantize(IR_FMT_Q8_0, q, -32, y);
    CHECK(y[0] == 5.0f);
    ir_ggml_dequantize((enum ir_format)IR_FMT_COUNT, q, 1, y);
    CHECK(y[0] == 0.0f);
}

/* ── Exact bytes ─────────────────────────────────────────────────────────────────────────────────────────── */

/* Quantizing a fixed input gives fixed bytes, the same from every compiler: these hashes are of the bytes GGML's
 * reference quantizers (quantize_row_*_ref) write for the same input. */
static void test_golden_bytes(void)
{
    enum { N = 2048 };
    static const struct {
        enum ir_format f;
        uint64_t hash;
    } golden[] = {
        {IR_FMT_F32, 0x4aa27bdbac22d01bull},  {IR_FMT_F16, 0x7dc0391f13c3545full},
        {IR_FMT_BF16, 0x7e751a0ef11e2c45ull}, {IR_FMT_Q8_0, 0x19f87c379ae32df2ull},
        {IR_FMT_Q4_0, 0xbbcdc8b12f40e66aull}, {IR_FMT_Q4_K, 0xb2c0e92021ad2bc5ull},
        {IR_FMT_Q6_K, 0x8eada1b7a0b63eb2ull},
    };
    float x[N];
    static unsigned char q[4 * N];
    struct rng r = {2024};
    /* a sum of four uniforms (near normal), scaled per 256 values: exact arithmetic, no libm */
    for (int i = 0; i < N; i++)
        x[i] = (rng_sym(&r) + rng_sym(&r) + rng_sym(&r) + rng_sym(&r)) * (float)(1 + i / 256);
    for (size_t k = 0; k < sizeof golden / sizeof golden[0]; k++) {
        int64_t bytes = ir_ggml_row_bytes(golden[k].f, N);
        CHECK(ir_ggml_quantize(golden[k].f, x, N, q) == 0);
        uint64_t h = fnv1a(q, (size_t)bytes);
        CHECKF(h == golden[k].hash, "%s bytes hash %016llx", ir_format_name(golden[k].f), (unsigned long long)h);
    }
}

/* q8_0 activations as llama.cpp's CPU backend makes them: scale max|x|/127 rounded to f16, codes x·(127/max|x|)
 * rounded half to even (2.5 → 2, 3.5 → 4, -2.5 → -2); an all-zero block has scale 0 and codes 0. */
static void test_q8_activations(void)
{
    float x[64] = {0}, blocks[2 * IR_GGML_Q8_ACT_FLOATS];
    x[0] = 127.0f; /* max: 127/max = 1 exactly */
    x[1] = 2.5f;
    x[2] = 3.5f;
    x[3] = -2.5f;
    x[4] = -127.0f;
    x[5] = 0.49f;
    ir_ggml_q8_activations(x, 64, blocks);
    CHECK(blocks[0] == 1.0f);
    CHECK(blocks[1] == 127.0f && blocks[2] == 2.0f && blocks[3] == 4.0f && blocks[4] == -2.0f);
    CHECK(blocks[5] == -127.0f && blocks[6] == 0.0f);
    CHECK(blocks[IR_GGML_Q8_ACT_FLOATS] == 0.0f && blocks[IR_GGML_Q8_ACT_FLOATS + 1] == 0.0f);
    x[32] = 1.0f; /* scale 1/127, not an f16 value: kept rounded to f16 */
    ir_ggml_q8_activations(x, 64, blocks);
    CHECK(blocks[IR_GGML_Q8_ACT_FLOATS] == ir_f16_to_f32(ir_f32_to_f16(1.0f / 127.0f)));
    CHECK(blocks[IR_GGML_Q8_ACT_FLOATS] != 1.0f / 127.0f);
}

/* A q8_0 or q4_0 row times q8_0 activations: per block the integer sum of code products times both scales, the
 * blocks summed in order; another format is refused. Checked against the sums written out by hand. */
static void test_q8_activation_dot(void)
{
    unsigned char w8[2 * 34], w4[2 * 18];
    float x[64], blocks[2 * IR_GGML_Q8_ACT_FLOATS], out = 0.0f;
    put16(w8, 0x3800);      /* d = 0.5 */
    put16(w8 + 34, 0xc400); /* d = -4 */
    put16(w4, 0x3800);
    put16(w4 + 18, 0xb400); /* d = -0.25 */
    for (int j = 0; j < 32; j++) {
        w8[2 + j] = i8_byte(j - 16);
        w8[36 + j] = i8_byte(j % 3 - 1);
    }
    for (int j = 0; j < 16; j++)
        w4[2 + j] = w4[20 + j] = (unsigned char)(j | ((15 - j) << 4));
    for (int j = 0; j < 64; j++)
        x[j] = (float)((j * 7) % 255 - 127); /* codes equal to the values: max 127 in each block */
    x[0] = x[32] = 127.0f;
    ir_ggml_q8_activations(x, 64, blocks);
    int32_t s0 = 0, s1 = 0, t0 = 0, t1 = 0;
    for (int j = 0; j < 32; j++) {
        s0 += (int32_t)x[j] * (j - 16);
        s1 += (int32_t)x[32 + j] * (j % 3 - 1);
        int c = j < 16 ? j - 8 : (15 - (j - 16)) - 8;
        t0 += (int32_t)x[j] * c;
        t1 += (int32_t)x[32 + j] * c;
    }
    CHECK(ir_ggml_dot_q8_activations(IR_FMT_Q8_0, w8, blocks, 64, &out) == 0);
    CHECKF(out == (float)s0 * 0.5f + (float)s1 * -4.0f, "q8_0: %g, not %g", (double)out,
           (double)((float)s0 * 0.5f + (float)s1 * -4.0f));
    CHECK(ir_ggml_dot_q8_activations(IR_FMT_Q4_0, w4, blocks, 64, &out) == 0);
    CHECKF(out == (float)t0 * 0.5f + (float)t1 * -0.25f, "q4_0: %g", (double)out);
    CHECK(ir_ggml_dot_q8_activations(IR_FMT_Q4_K, w8, blocks, 64, &out) == -1);
}

int main(void)
{
    test_row_bytes();
    test_f16_known();
    test_f16_all();
    test_bf16_known();
    test_half_relative_error();
    test_scalar_layouts();
    test_q8_0_hand();
    test_q4_0_hand();
    test_q4_k_hand();
    test_q6_k_hand();
    test_quantize_hand();
    test_round_trip_bounds();
    test_q4_0_clip();
    test_idempotent();
    test_zero_and_constant_rows();
    test_huge_value();
    test_nonfinite_inputs();
    test_invalid_lengths();
    test_golden_bytes();
    test_q8_activations();
    test_q8_activation_dot();
    return check_done("test_ggml");
}
