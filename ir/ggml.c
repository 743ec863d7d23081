/* ir/ggml.c — GGML's block formats: the byte layout of checkpoint rows (f32, f16, bf16, q8_0, q4_0, q4_k, q6_k),
 * their quantizers and dequantizers, and the IEEE half / bfloat16 conversions.
 *
 * Byte layouts are GGML's, read and written byte by byte as little-endian, so the host's endianness never matters:
 *   q8_0  34 bytes / 32 values:  f16 d, 32 x int8 q;                         x = q * d
 *   q4_0  18 bytes / 32 values:  f16 d, 16 bytes: byte j = q[j] | q[j+16]<<4; x = (q - 8) * d
 *   q4_k 144 bytes / 256 values: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins for 8 sub-blocks of 32,
 *                                128 bytes of nibbles (each 64 values share 32 bytes: low nibbles the first 32
 *                                values, high nibbles the next 32);      x = d*sc*q - dmin*m
 *   q6_k 210 bytes / 256 values: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 int8 scales (one per 16
 *                                values), f16 d;                          x = d*sc*(q - 32)
 *
 * Quantizers follow GGML's reference quantizers (the ones that write model files), so on ordinary input they give
 * the same bytes. Dequantizers reproduce GGML's arithmetic (the same products in the same order, never fused).
 *
 * Out-of-range input is defined, never undefined behaviour:
 *   - f32, f16, bf16 keep IEEE meaning: f16 overflows to ±inf, NaN stays a quiet NaN (sign kept).
 *   - q8_0, q4_0, q4_k, q6_k: a NaN input is read as 0; a value (±inf included) larger in magnitude than the largest
 *     the format can hold (127*65504, 8*65504, 15*63*65504, 128*32*65504) is clipped to it; a block scale that would
 *     overflow f16 saturates at 65504. So every quantized block dequantizes to finite values.
 *   - Every float-to-integer conversion clamps first (NaN counts as 0), so no conversion is out of range.
 * Dequantizing any bytes is defined: a scale field holding inf or NaN simply yields inf or NaN values. */
#include "ir/ir.h"

#include <math.h>
#include <string.h>

/* Products and sums are rounded one by one, never fused into an fma, so every compiler gives the same bytes (gcc in
 * ISO C mode never contracts; clang is told here). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define F16_MAX 65504.0f
#define QK 32   /* values a q8_0 / q4_0 block */
#define QKK 256 /* values a q4_k / q6_k super-block */
#define ALL_ZERO_EPS 1e-15f

/* ── Bytes ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* The little-endian 16-bit word at p. */
static uint16_t get_le16(const unsigned char *p) { return (uint16_t)((unsigned)p[0] | ((unsigned)p[1] << 8)); }

/* Write v at p, little-endian. */
static void put_le16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v & 0xffu);
    p[1] = (unsigned char)(v >> 8);
}

/* The int8 stored in byte b (two's complement). */
static int get_i8(unsigned char b) { return (int)b - ((b & 0x80u) ? 256 : 0); }

/* The f16 at p as a float. */
static float get_f16(const unsigned char *p) { return ir_f16_to_f32(get_le16(p)); }

/* ── Scalar conversions ──────────────────────────────────────────────────────────────────────────────────── */

/* The bits of a float. */
static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* The float with bits u. */
static float f32_from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* v shifted right by s (1..31), rounded to nearest, ties to even. */
static uint32_t shift_round_even(uint32_t v, unsigned s)
{
    uint32_t q = v >> s, r = v & ((1u << s) - 1u), half = 1u << (s - 1u);
    if (r > half || (r == half && (q & 1u)))
        q++;
    return q;
}

/* IEEE half nearest to x (ties to even); overflow gives ±inf, NaN a quiet NaN (0x7e00 with x's sign). */
uint16_t ir_f32_to_f16(float x)
{
    uint32_t u = f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN */
        return (uint16_t)(sign | 0x7e00u);
    if (a >= 0x477ff000u) /* >= 65520: rounds past 65504, and inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) { /* normal half: rebias exponent 127 -> 15, round away 13 mantissa bits */
        uint32_t h = (a >> 13) - (112u << 10), r = a & 0x1fffu;
        if (r > 0x1000u || (r == 0x1000u && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    /* below 2^-14: a subnormal half, counting units of 2^-24 */
    int e = (int)(a >> 23) - 127; /* value = mant * 2^(e-23), for mant with its implicit bit */
    int s = -e - 1;               /* units of 2^-24 = mant >> s */
    if (s > 24)
        return sign; /* under 2^-25: rounds to zero (f32 zeros and subnormals land here) */
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    return (uint16_t)(sign | shift_round_even(mant, (unsigned)s));
}

/* The float an IEEE half stands for (exact). */
float ir_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu) /* inf, NaN (payload kept) */
        return f32_from_bits(sign | 0x7f800000u | (m << 13));
    if (e != 0)
        return f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
    if (m == 0)
        return f32_from_bits(sign);
    /* subnormal: m * 2^-24, normalised */
    int shift = 0;
    while (!(m & 0x400u)) {
        m <<= 1;
        shift++;
    }
    return f32_from_bits(sign | ((uint32_t)(113 - shift) << 23) | ((m & 0x3ffu) << 13));
}

/* bfloat16 nearest to x (ties to even, subnormals kept, overflow to ±inf); NaN stays NaN with its quiet bit set. */
uint16_t ir_f32_to_bf16(float x)
{
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* The float a bfloat16 stands for (exact). */
float ir_bf16_to_f32(uint16_t h) { return f32_from_bits((uint32_t)h << 16); }

/* Store a block scale as f16, saturating at ±65504 so it never becomes inf; returns the value stored. */
static float put_scale(unsigned char *p, float v)
{
    if (v > F16_MAX)
        v = F16_MAX;
    if (v < -F16_MAX)
        v = -F16_MAX;
    uint16_t h = ir_f32_to_f16(v);
    put_le16(p, h);
    return ir_f16_to_f32(h);
}

/* ── Float to integer, always in range ───────────────────────────────────────────────────────────────────── */

/* v within [lo, hi], NaN counted as 0: what every float-to-integer conversion below starts from. */
static float clamped(float v, int lo, int hi)
{
    if (v != v)
        return 0.0f;
    return v <= (float)lo ? (float)lo : v >= (float)hi ? (float)hi : v;
}

/* The integer nearest v (ties to even), clamped to [lo, hi]; NaN counts as 0. */
static int round_even_in(float v, int lo, int hi) { return (int)nearbyintf(clamped(v, lo, hi)); }

/* v truncated toward zero, clamped to [lo, hi]; NaN counts as 0. */
static int trunc_in(float v, int lo, int hi) { return (int)clamped(v, lo, hi); }

/* Copy n inputs into buf, NaN read as 0 and magnitudes clipped to `limit`: the values a quantizer actually sees. */
static void load_block(const float *x, int n, float limit, float *buf)
{
    for (int i = 0; i < n; i++) {
        float v = x[i];
        if (v != v)
            v = 0.0f;
        buf[i] = v > limit ? limit : v < -limit ? -limit : v;
    }
}

/* ── f32, f16, bf16: one value a block ───────────────────────────────────────────────────────────────────── */

/* Store x as 4 little-endian bytes. */
static void quant_F32(const float *x, unsigned char *out)
{
    uint32_t u = f32_bits(x[0]);
    for (int i = 0; i < 4; i++)
        out[i] = (unsigned char)((u >> (8 * i)) & 0xffu);
}

/* Read 4 little-endian bytes as a float. */
static void dequant_F32(const unsigned char *in, float *y)
{
    uint32_t u = (uint32_t)in[0] | ((uint32_t)in[1] << 8) | ((uint32_t)in[2] << 16) | ((uint32_t)in[3] << 24);
    y[0] = f32_from_bits(u);
}

/* Store x as an IEEE half. */
static void quant_F16(const float *x, unsigned char *out) { put_le16(out, ir_f32_to_f16(x[0])); }

/* Read an IEEE half. */
static void dequant_F16(const unsigned char *in, float *y) { y[0] = get_f16(in); }

/* Store x as a bfloat16. */
static void quant_BF16(const float *x, unsigned char *out) { put_le16(out, ir_f32_to_bf16(x[0])); }

/* Read a bfloat16. */
static void dequant_BF16(const unsigned char *in, float *y) { y[0] = ir_bf16_to_f32(get_le16(in)); }

/* ── q8_0 ────────────────────────────────────────────────────────────────────────────────────────────────── */

#define Q8_0_LIMIT (127.0f * F16_MAX)

typedef float q8_vf __attribute__((vector_size(16)));
typedef int32_t q8_vi __attribute__((vector_size(16)));

/* The q8_0 codes of x[j]·id for the 32 values of a block into out, four at a time: NaN as 0, clamped to ±127,
 * rounded half away from zero (roundf's integer: truncation, then a step when the exactly computed fraction reaches
 * one half), in vector code on every target. */
static void q8_codes(const float *x, float id, unsigned char *out)
{
    const q8_vf lo = {-127.0f, -127.0f, -127.0f, -127.0f}, hi = {127.0f, 127.0f, 127.0f, 127.0f};
    const q8_vf half = {0.5f, 0.5f, 0.5f, 0.5f};
    for (int j = 0; j < QK; j += 4) {
        q8_vf v;
        memcpy(&v, x + j, sizeof v);
        v = v * id;
        q8_vi nan = v != v, below = v <= lo, above = v >= hi;
        q8_vi b = (q8_vi)v & ~nan;                  /* NaN as +0 */
        b = (b & ~below) | ((q8_vi)lo & below);     /* at most -127 */
        b = (b & ~above) | ((q8_vi)hi & above);     /* at least 127 */
        v = (q8_vf)b;
        q8_vi i = __builtin_convertvector(v, q8_vi); /* truncation toward zero */
        q8_vf frac = v - __builtin_convertvector(i, q8_vf);
        i = i - (frac >= half) + (frac <= -half); /* a comparison's true is -1 */
        for (int k = 0; k < 4; k++)
            out[j + k] = (unsigned char)i[k];
    }
}

/* load_block's values of a q8_0 block (NaN read as 0, magnitudes clipped) into x, four at a time; their largest
 * magnitude (no NaN is left, and a maximum is the same in any order). */
static float q8_load(const float *src, float *x)
{
    const q8_vf lim = {Q8_0_LIMIT, Q8_0_LIMIT, Q8_0_LIMIT, Q8_0_LIMIT};
    const q8_vi magnitude = {0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff};
    q8_vf m = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int j = 0; j < QK; j += 4) {
        q8_vf v;
        memcpy(&v, src + j, sizeof v);
        q8_vi nan = v != v, above = v > lim, below = v < -lim;
        q8_vi b = (q8_vi)v & ~nan;
        b = (b & ~above) | ((q8_vi)lim & above);
        b = (b & ~below) | ((q8_vi)(-lim) & below);
        memcpy(x + j, &b, sizeof b);
        q8_vf a = (q8_vf)(b & magnitude);
        q8_vi larger = a > m;
        m = (q8_vf)(((q8_vi)a & larger) | ((q8_vi)m & ~larger));
    }
    float amax = 0.0f;
    for (int k = 0; k < 4; k++)
        amax = m[k] > amax ? m[k] : amax;
    return amax;
}

/* 32 values as d = max|x|/127 and round(x/d), rounding half away from zero. */
static void quant_Q8_0(const float *src, unsigned char *out)
{
    float x[QK];
    float amax = q8_load(src, x);
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_scale(out, d);
    q8_codes(x, id, out + 2);
}

/* y = q * d. */
static void dequant_Q8_0(const unsigned char *in, float *y)
{
    const float d = get_f16(in);
    for (int j = 0; j < QK; j++)
        y[j] = (float)get_i8(in[2 + j]) * d;
}

/* ── q4_0 ────────────────────────────────────────────────────────────────────────────────────────────────── */

#define Q4_0_LIMIT (8.0f * F16_MAX)

/* 32 values as d = (the signed value of largest magnitude)/-8 and codes min(15, trunc(x/d + 8.5)); the largest
 * value maps to code 0 exactly, its opposite clips at code 15 (7*d). */
static void quant_Q4_0(const float *src, unsigned char *out)
{
    float x[QK], amax = 0.0f, max = 0.0f;
    load_block(src, QK, Q4_0_LIMIT, x);
    for (int j = 0; j < QK; j++) {
        if (fabsf(x[j]) > amax) { /* the first of equal magnitudes wins */
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_scale(out, d);
    for (int j = 0; j < QK / 2; j++) {
        int lo = trunc_in(x[j] * id + 8.5f, 0, 15);
        int hi = trunc_in(x[j + QK / 2] * id + 8.5f, 0, 15);
        out[2 + j] = (unsigned char)(lo | (hi << 4));
    }
}

/* y = (q - 8) * d. */
static void dequant_Q4_0(const unsigned char *in, float *y)
{
    const float d = get_f16(in);
    for (int j = 0; j < QK / 2; j++) {
        y[j] = (float)((int)(in[2 + j] & 0x0fu) - 8) * d;
        y[j + QK / 2] = (float)((int)(in[2 + j] >> 4) - 8) * d;
    }
}

/* ── q4_k ────────────────────────────────────────────────────────────────────────────────────────────────── */

#define Q4_K_LIMIT (15.0f * 63.0f * F16_MAX)

/* Byte offsets inside a q4_k super-block. */
enum { Q4K_D = 0, Q4K_DMIN = 2, Q4K_SCALES = 4, Q4K_QS = 16 };

/* Sub-block j's 6-bit scale and min out of the 12 packed bytes q: sub-blocks 0-3 keep theirs in the low 6 bits
 * of bytes j (scale) and j+4 (min); sub-blocks 4-7 keep their low 4 bits in byte j+4 (scale low nibble, min high
 * nibble) and their top 2 bits in the top bits of bytes j-4 (scale) and j (min). */
static void k4_scale_min(int j, const unsigned char *q, int *sc, int *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* Pack sub-block j's 6-bit scale and min into q (the inverse of k4_scale_min; q zeroed beforehand). */
static void k4_put_scale_min(int j, unsigned char *q, int sc, int m)
{
    if (j < 4) {
        q[j] |= (unsigned char)sc;
        q[j + 4] |= (unsigned char)m;
    } else {
        q[j + 4] = (unsigned char)((sc & 0x0f) | ((m & 0x0f) << 4));
        q[j - 4] |= (unsigned char)((sc >> 4) << 6);
        q[j] |= (unsigned char)((m >> 4) << 6);
    }
}

/* The weighted squared error of reconstructing x as scale*L + min. */
static float fit_error(int n, const float *x, const float *w, const unsigned char *L, float scale, float min)
{
    float err = 0.0f;
    for (int i = 0; i < n; i++) {
        float diff = scale * (float)L[i] + min - x[i];
        diff = diff * diff;
        err += w[i] * diff;
    }
    return err;
}

/* Fit n values x as scale*L + min with codes L in 0..nmax and min <= 0, minimising the w-weighted squared error:
 * start from the grid spanning [min(x,0), max(x)], then try nstep+1 grids of (nmax + rmin + rdelta*is) steps over
 * that span, each refit by weighted least squares, keeping the best (GGML's make_qkx2_quants). Returns the scale and
 * stores -min (>= 0) in *neg_min. */
static float fit_scale_min(int n, int nmax, const float *x, const float *w, unsigned char *L, float *neg_min,
                           float rmin, float rdelta, int nstep)
{
    unsigned char Laux[QKK];
    float min = x[0], max = x[0], sum_w = w[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min)
            min = x[i];
        if (x[i] > max)
            max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0.0f)
        min = 0.0f;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1.0f / iscale;
    for (int i = 0; i < n; i++)
        L[i] = (unsigned char)round_even_in(iscale * (x[i] - min), 0, nmax);
    float best = fit_error(n, x, w, L, scale, min);
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = round_even_in(iscale * (x[i] - min), 0, nmax);
            Laux[i] = (unsigned char)l;
            sum_l += w[i] * (float)l;
            sum_l2 += w[i] * (float)l * (float)l;
            sum_xl += w[i] * (float)l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (!(D > 0.0f))
            continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (this_min > 0.0f) {
            this_min = 0.0f;
            this_scale = sum_xl / sum_l2;
        }
        float err = fit_error(n, x, w, Laux, this_scale, this_min);
        if (err < best) {
            memcpy(L, Laux, (size_t)n);
            best = err;
            scale = this_scale;
            min = this_min;
        }
    }
    *neg_min = -min;
    return scale;
}

/* 256 values: each sub-block of 32 fitted as scale*q - min (q in 0..15), the 8 scales and 8 mins quantized to 6 bits
 * against d = max scale/63 and dmin = max min/63, then every value re-coded against its stored scale and min. */
static void quant_Q4_K(const float *src, unsigned char *out)
{
    float x[QKK], w[32], scales[8], mins[8], max_scale = 0.0f, max_min = 0.0f;
    unsigned char L[QKK];
    load_block(src, QKK, Q4_K_LIMIT, x);
    for (int j = 0; j < 8; j++) {
        const float *xs = x + 32 * j;
        float sum_x2 = 0.0f;
        for (int l = 0; l < 32; l++)
            sum_x2 += xs[l] * xs[l];
        const float av_x = sqrtf(sum_x2 / 32.0f);
        for (int l = 0; l < 32; l++)
            w[l] = av_x + fabsf(xs[l]);
        scales[j] = fit_scale_min(32, 15, xs, w, L + 32 * j, &mins[j], -1.0f, 0.1f, 20);
        if (scales[j] > max_scale)
            max_scale = scales[j];
        if (mins[j] > max_min)
            max_min = mins[j];
    }
    const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
    unsigned char *packed = out + Q4K_SCALES;
    memset(packed, 0, 12);
    for (int j = 0; j < 8; j++)
        k4_put_scale_min(j, packed, round_even_in(inv_scale * scales[j], 0, 63),
                         round_even_in(inv_min * mins[j], 0, 63));
    const float d = put_scale(out + Q4K_D, max_scale / 63.0f);
    const float dmin = put_scale(out + Q4K_DMIN, max_min / 63.0f);
    for (int j = 0; j < 8; j++) {
        int sc, m;
        k4_scale_min(j, packed, &sc, &m);
        const float ds = d * (float)sc;
        if (ds == 0.0f)
            continue; /* keeps the codes of the fit */
        const float dm = dmin * (float)m;
        for (int i = 0; i < 32; i++)
            L[32 * j + i] = (unsigned char)round_even_in((x[32 * j + i] + dm) / ds, 0, 15);
    }
    unsigned char *q = out + Q4K_QS;
    for (int c = 0; c < QKK; c += 64, q += 32)
        for (int l = 0; l < 32; l++)
            q[l] = (unsigned char)(L[c + l] | (L[c + l + 32] << 4));
}

/* y = d*sc*q - dmin*m, per sub-block of 32. */
static void dequant_Q4_K(const unsigned char *in, float *y)
{
    const float d = get_f16(in + Q4K_D), dmin = get_f16(in + Q4K_DMIN);
    const unsigned char *q = in + Q4K_QS;
    for (int c = 0; c < 4; c++, q += 32, y += 64) {
        int sc0, m0, sc1, m1;
        k4_scale_min(2 * c, in + Q4K_SCALES, &sc0, &m0);
        k4_scale_min(2 * c + 1, in + Q4K_SCALES, &sc1, &m1);
        const float d0 = d * (float)sc0, min0 = dmin * (float)m0;
        const float d1 = d * (float)sc1, min1 = dmin * (float)m1;
        for (int l = 0; l < 32; l++) {
            const float p = d0 * (float)(q[l] & 0x0fu); /* separate statements: never fused into an fma */
            y[l] = p - min0;
        }
        for (int l = 0; l < 32; l++) {
            const float p = d1 * (float)(q[l] >> 4);
            y[l + 32] = p - min1;
        }
    }
}

/* ── q6_k ────────────────────────────────────────────────────────────────────────────────────────────────── */

#define Q6_K_LIMIT (128.0f * 32.0f * F16_MAX)

/* Byte offsets inside a q6_k super-block. */
enum { Q6K_QL = 0, Q6K_QH = 128, Q6K_SCALES = 192, Q6K_D = 208 };

/* The x^2-weighted correlations of x with the symmetric codes round(iscale*x) clamped to [-nmax, nmax-1]. */
static void sym_sums(int n, int nmax, const float *x, float iscale, float *sumlx, float *suml2)
{
    float slx = 0.0f, sl2 = 0.0f;
    for (int i = 0; i < n; i++) {
        const float l = (float)round_even_in(iscale * x[i], -nmax, nmax - 1);
        const float w = x[i] * x[i];
        slx += w * x[i] * l;
        sl2 += w * l * l;
    }
    *sumlx = slx;
    *suml2 = sl2;
}

/* Store codes nmax + round(iscale*x) (clamped to 0..2*nmax-1) in L. */
static void sym_codes(int n, int nmax, const float *x, float iscale, unsigned char *L)
{
    for (int i = 0; i < n; i++)
        L[i] = (unsigned char)(nmax + round_even_in(iscale * x[i], -nmax, nmax - 1));
}

/* Fit n values x as scale*(L - nmax) with L in 0..2*nmax-1, maximising the x^2-weighted fit over 19 grids that put
 * the largest-magnitude value at -(nmax + 0.1*is) steps (GGML's make_qx_quants, weights x^2). Returns the scale (0
 * and codes 0 for an all-zero block). */
static float fit_symmetric(int n, int nmax, const float *x, unsigned char *L)
{
    float max = 0.0f, amax = 0.0f;
    for (int i = 0; i < n; i++) {
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            max = x[i];
        }
    }
    if (amax < ALL_ZERO_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = -(float)nmax / max, sumlx, suml2;
    sym_sums(n, nmax, x, iscale, &sumlx, &suml2);
    sym_codes(n, nmax, x, iscale, L);
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0)
            continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sym_sums(n, nmax, x, iscale, &sumlx, &suml2);
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            sym_codes(n, nmax, x, iscale, L);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* 256 values: each sub-block of 16 fitted as scale*(q - 32) (q in 0..63), the 16 scales quantized to int8 against
 * d = -(the signed scale of largest magnitude)/128, then every value re-coded against its stored scale. */
static void quant_Q6_K(const float *src, unsigned char *out)
{
    float x[QKK], scales[16], max_scale = 0.0f, max_abs = 0.0f;
    unsigned char L[QKK];
    load_block(src, QKK, Q6_K_LIMIT, x);
    for (int ib = 0; ib < 16; ib++) {
        scales[ib] = fit_symmetric(16, 32, x + 16 * ib, L + 16 * ib);
        if (fabsf(scales[ib]) > max_abs) {
            max_abs = fabsf(scales[ib]);
            max_scale = scales[ib];
        }
    }
    memset(out, 0, 210);
    if (max_abs < ALL_ZERO_EPS)
        return; /* all zero: every byte 0 */
    const float iscale = -128.0f / max_scale;
    const float d = put_scale(out + Q6K_D, 1.0f / iscale);
    int sc[16];
    for (int ib = 0; ib < 16; ib++) {
        sc[ib] = round_even_in(iscale * scales[ib], -128, 127);
        out[Q6K_SCALES + ib] = (unsigned char)sc[ib]; /* two's complement byte */
    }
    for (int ib = 0; ib < 16; ib++) {
        const float ds = d * (float)sc[ib];
        if (ds == 0.0f)
            continue; /* keeps the codes of the fit */
        for (int i = 0; i < 16; i++)
            L[16 * ib + i] = (unsigned char)(32 + round_even_in(x[16 * ib + i] / ds, -32, 31));
    }
    /* each half of 128 values: ql bytes l and l+32 hold values l, l+64 and l+32, l+96 (low nibble, high nibble);
     * qh byte l holds the top 2 bits of values l, l+32, l+64, l+96 at bits 0, 2, 4, 6 */
    unsigned char *ql = out + Q6K_QL, *qh = out + Q6K_QH;
    for (int h = 0; h < QKK; h += 128, ql += 64, qh += 32) {
        const unsigned char *Lh = L + h;
        for (int l = 0; l < 32; l++) {
            ql[l] = (unsigned char)((Lh[l] & 0x0f) | ((Lh[l + 64] & 0x0f) << 4));
            ql[l + 32] = (unsigned char)((Lh[l + 32] & 0x0f) | ((Lh[l + 96] & 0x0f) << 4));
            qh[l] = (unsigned char)((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                                    ((Lh[l + 96] >> 4) << 6));
        }
    }
}

/* y = d*sc*(q - 32), one int8 scale per 16 values. */
static void dequant_Q6_K(const unsigned char *in, float *y)
{
    const float d = get_f16(in + Q6K_D);
    const unsigned char *ql = in + Q6K_QL, *qh = in + Q6K_QH, *sc = in + Q6K_SCALES;
    for (int h = 0; h < 2; h++, ql += 64, qh += 32, sc += 8, y += 128) {
        for (int l = 0; l < 32; l++) {
            const int is = l / 16;
            const int q1 = (int)((ql[l] & 0x0fu) | (((qh[l] >> 0) & 3u) << 4)) - 32;
            const int q2 = (int)((ql[l + 32] & 0x0fu) | (((qh[l] >> 2) & 3u) << 4)) - 32;
            const int q3 = (int)((ql[l] >> 4) | (((qh[l] >> 4) & 3u) << 4)) - 32;
            const int q4 = (int)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3u) << 4)) - 32;
            y[l] = d * (float)get_i8(sc[is]) * (float)q1;
            y[l + 32] = d * (float)get_i8(sc[is + 2]) * (float)q2;
            y[l + 64] = d * (float)get_i8(sc[is + 4]) * (float)q3;
            y[l + 96] = d * (float)get_i8(sc[is + 6]) * (float)q4;
        }
    }
}

/* ── The table and the row functions ─────────────────────────────────────────────────────────────────────── */

/* One format's block shape and codecs, from the IR_FORMATS table. */
struct codec {
    int values, bytes;
    void (*quant)(const float *x, unsigned char *out);
    void (*dequant)(const unsigned char *in, float *y);
};

static const struct codec codecs[IR_FMT_COUNT] = {
#define X(e, s, n, b) {n, b, quant_##e, dequant_##e},
    IR_FORMATS(X)
#undef X
};

/* The codec of f, or NULL for a value outside the table. */
static const struct codec *codec_of(enum ir_format f)
{
    return (int)f >= 0 && (int)f < IR_FMT_COUNT ? &codecs[f] : NULL;
}

/* Bytes that n values take in format f: -1 for an unknown format, a negative n, n not a multiple of the block, or
 * a size past INT64_MAX. */
int64_t ir_ggml_row_bytes(enum ir_format f, int64_t n)
{
    const struct codec *c = codec_of(f);
    if (!c || n < 0 || n % c->values != 0)
        return -1;
    int64_t blocks = n / c->values;
    if (blocks > INT64_MAX / c->bytes)
        return -1;
    return blocks * c->bytes;
}

/* Quantize n values into dst in f's byte layout; -1 (dst untouched) when ir_ggml_row_bytes(f, n) is -1 or a
 * pointer is NULL with n > 0. */
int ir_ggml_quantize(enum ir_format f, const float *src, int64_t n, void *dst)
{
    if (ir_ggml_row_bytes(f, n) < 0 || (n > 0 && (!src || !dst)))
        return -1;
    const struct codec *c = codec_of(f);
    unsigned char *out = dst;
    for (int64_t b = 0, blocks = n / c->values; b < blocks; b++)
        c->quant(src + b * c->values, out + b * c->bytes);
    return 0;
}

/* Dequantize n values of format f from src into dst. When n is not a valid row length for f (see
 * ir_ggml_row_bytes), dst's n values are set to 0 if n > 0, and nothing is read. */
void ir_ggml_dequantize(enum ir_format f, const void *src, int64_t n, float *dst)
{
    if (n <= 0 || !dst)
        return;
    if (ir_ggml_row_bytes(f, n) < 0 || !src) {
        for (int64_t i = 0; i < n; i++)
            dst[i] = 0.0f;
        return;
    }
    const struct codec *c = codec_of(f);
    const unsigned char *in = src;
    for (int64_t b = 0, blocks = n / c->values; b < blocks; b++)
        c->dequant(in + b * c->bytes, dst + b * c->values);
}

/* ── Products with q8_0 activations, as llama.cpp's CPU backend computes q8_0 and q4_0 products ─────────── */

/* The integer codes of one stored q8_0 or q4_0 block (codes[32]) and its scale; -1 for another format. */
static int block_codes(enum ir_format f, const unsigned char *in, int *codes, float *d)
{
    if (f != IR_FMT_Q8_0 && f != IR_FMT_Q4_0)
        return -1;
    *d = get_f16(in);
    for (int j = 0; j < QK / 2 && f == IR_FMT_Q4_0; j++) {
        codes[j] = (int)(in[2 + j] & 0x0fu) - 8;
        codes[j + QK / 2] = (int)(in[2 + j] >> 4) - 8;
    }
    for (int j = 0; j < QK && f == IR_FMT_Q8_0; j++)
        codes[j] = get_i8(in[2 + j]);
    return 0;
}

void ir_ggml_q8_activations(const float *x, int64_t n, float *blocks)
{
    for (int64_t b = 0; b < n / QK; b++) {
        const float *v = x + b * QK;
        float *out = blocks + b * IR_GGML_Q8_ACT_FLOATS, amax = 0.0f;
        for (int j = 0; j < QK; j++)
            amax = fmaxf(amax, fabsf(v[j]));
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        out[0] = ir_f16_to_f32(ir_f32_to_f16(amax / 127.0f));
        for (int j = 0; j < QK; j++)
            out[1 + j] = nearbyintf(v[j] * id);
    }
}

int ir_ggml_dot_q8_activations(enum ir_format f, const void *row, const float *blocks, int64_t n, float *out)
{
    int64_t bytes = ir_ggml_row_bytes(f, QK);
    const unsigned char *in = row;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / QK; b++) {
        int codes[QK];
        float dw;
        if (block_codes(f, in + b * bytes, codes, &dw) != 0)
            return -1;
        const float *a = blocks + b * IR_GGML_Q8_ACT_FLOATS;
        int32_t sumi = 0;
        for (int j = 0; j < QK; j++)
            sumi += codes[j] * (int32_t)a[1 + j];
        float scale = dw * a[0];
        sum += (float)sumi * scale;
    }
    *out = sum;
    return 0;
}
