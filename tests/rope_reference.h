/* tests/rope_reference.h — the published rotary scalings (Transformers' modeling_rope_utils: linear, llama3, YaRN)
 * as plain C apart from the IR's ir_rope_frequency, for the suites that check rotary tables and rotations against
 * them: pair i's inverse frequency of a rotation of 2·half values at a base, scaled as a struct ir_rope_scaling says,
 * and the attention factor cos and sin are multiplied by. */
#ifndef FUSECHECK_TESTS_ROPE_REFERENCE_H
#define FUSECHECK_TESTS_ROPE_REFERENCE_H

#include "ir/ir.h"

#include <math.h>

/* A full turn in radians. */
#define REF_TURN 6.283185307179586

/* Pair i's unscaled inverse frequency in a rotation of dim values at base b: 1 / b^(2i/dim). */
static inline double ref_inv_freq(double base, double dim, int i) { return 1.0 / pow(base, 2.0 * i / dim); }

/* llama3's inverse frequency of one pair of unscaled inverse frequency inv (its wavelength 2π/inv): past the long
 * edge orig/low_freq divided by factor, short of the short edge orig/high_freq as it was, and between the two the
 * divided and the kept mixed by how far orig/wavelength lies from low_freq towards high_freq. */
static inline double ref_llama3(const struct ir_rope_scaling *s, double inv)
{
    double orig = (double)s->orig, wavelen = REF_TURN / inv;
    double long_edge = orig / s->low_freq.v, short_edge = orig / s->high_freq.v;
    double out = wavelen > long_edge ? inv / s->factor.v : inv;
    if (wavelen >= short_edge && wavelen <= long_edge) {
        double smooth = (orig / wavelen - s->low_freq.v) / (s->high_freq.v - s->low_freq.v);
        out = smooth * out + (1.0 - smooth) * out / s->factor.v;
    }
    return out;
}

/* YaRN's pair index, in a rotation of dim values at base b, where `turns` whole rotations span orig positions. */
static inline double ref_yarn_index(double turns, double dim, double base, double orig)
{
    return dim * log(orig / (turns * REF_TURN)) / (2.0 * log(base));
}

/* YaRN's inverse frequency of pair i in a rotation of dim values at base b: the interpolated 1/(factor·b^(2i/dim))
 * weighted by a ramp over the pairs, rising from 0 at the beta_fast index to 1 at the beta_slow index (floored and
 * ceiled first when truncate, then held inside [0, dim − 1]), the extrapolated 1/b^(2i/dim) by what the ramp
 * leaves. */
static inline double ref_yarn(const struct ir_rope_scaling *s, double base, double dim, int i)
{
    double fast = s->beta_fast.has ? s->beta_fast.v : 32.0, slow = s->beta_slow.has ? s->beta_slow.v : 1.0;
    double orig = (double)s->orig;
    double lo = ref_yarn_index(fast, dim, base, orig), hi = ref_yarn_index(slow, dim, base, orig);
    if (s->truncate) {
        lo = floor(lo);
        hi = ceil(hi);
    }
    lo = fmax(lo, 0.0);
    hi = fmin(hi, dim - 1.0);
    if (hi == lo)
        hi += 0.001;
    double ramp = fmin(fmax(((double)i - lo) / (hi - lo), 0.0), 1.0), extrapolated = 1.0 - ramp;
    double pos_freq = pow(base, 2.0 * i / dim);
    return 1.0 / (s->factor.v * pos_freq) * (1.0 - extrapolated) + 1.0 / pos_freq * extrapolated;
}

/* Pair i's inverse frequency of a rotation of `half` pairs at base b scaled as s says (none, linear, llama3, YaRN). */
static inline double ref_scaled_freq(const struct ir_rope_scaling *s, double base, int half, int i)
{
    double dim = 2.0 * half, inv = ref_inv_freq(base, dim, i);
    switch (s->kind) {
    case IR_ROPESCALE_LINEAR: return inv / s->factor.v;
    case IR_ROPESCALE_LLAMA3: return ref_llama3(s, inv);
    case IR_ROPESCALE_YARN: return ref_yarn(s, base, dim, i);
    default: return inv;
    }
}

/* The factor the published tables multiply cos and sin by (YaRN's attention factor where given, else 1). */
static inline double ref_attention_factor(const struct ir_rope_scaling *s)
{
    return s->magnitude.has ? s->magnitude.v : 1.0;
}

#endif
