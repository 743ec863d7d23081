/* kernels/chips.c — the chips the CUDA lane targets, and its activation modes with the numerics each implies. */
#include "kernels.h"

#include <string.h>

/* The chip table. Shared memory is the most one block may opt into (Hopper 227 KiB, Ampere A100 163 KiB, Ada 99 KiB);
 * bandwidth is the memory system's peak (HBM on the data-centre parts, GDDR on the Ada parts). */
static const struct kernels_chip chips[] = {
    {"h100", "H100 SXM", 132, 227, 3350},
    {"h200", "H200", 132, 227, 4800},
    {"a100", "A100", 108, 163, 2039},
    {"l40s", "L40S", 142, 99, 864},
    {"rtx4090", "RTX 4090", 128, 99, 1008},
};

int kernels_chip_count(void) { return (int)(sizeof chips / sizeof chips[0]); }

const struct kernels_chip *kernels_chip_get(int i)
{
    return i >= 0 && i < kernels_chip_count() ? &chips[i] : NULL;
}

const struct kernels_chip *kernels_chip_find(const char *name)
{
    for (int i = 0; name && i < kernels_chip_count(); i++)
        if (strcmp(chips[i].name, name) == 0)
            return &chips[i];
    return NULL;
}

/* The activation modes' names and words, from the table. */
static const char *const acts_names[] = {
#define X(e, s, w) s,
    KERNELS_ACTS(X)
#undef X
};
static const int acts_words[] = {
#define X(e, s, w) w,
    KERNELS_ACTS(X)
#undef X
};

const char *kernels_acts_name(enum kernels_acts a)
{
    return (unsigned)a < KERNELS_ACTS_COUNT ? acts_names[a] : "?";
}

int kernels_acts_lookup(const char *s)
{
    for (int i = 0; s && i < KERNELS_ACTS_COUNT; i++)
        if (strcmp(acts_names[i], s) == 0)
            return i;
    return -1;
}

int kernels_acts_words(enum kernels_acts a) { return (unsigned)a < KERNELS_ACTS_COUNT ? acts_words[a] : 0; }

/* The multiply mode of each activation mode, indexed by it. */
static const enum kernels_mode acts_modes[KERNELS_ACTS_COUNT] = {
    [KERNELS_ACTS_DEQUANT] = KERNELS_MODE_F32,
    [KERNELS_ACTS_INT8] = KERNELS_MODE_I8,
    [KERNELS_ACTS_INT8X2] = KERNELS_MODE_I8X2,
};

enum kernels_mode kernels_mode(enum kernels_acts a)
{
    return (unsigned)a < KERNELS_ACTS_COUNT ? acts_modes[a] : KERNELS_MODE_F32;
}

/* The most int8 products (each at most 127·127 in magnitude) a signed 32-bit integer sums without overflow. */
#define I8_TERMS ((int64_t)INT32_MAX / (127 * 127))

/* Each mode's accumulators, indexed by mode. f32 accumulators never overflow on finite values; int8 dot products
 * accumulate in i32 (one word or each of two words apart). A wide chunk's attention stages its keys and values as
 * f32 under the dequantized numerics, and as 16-bit values (f16, or two int8 words) under the quantized ones. */
static const struct kernels_accumulator accumulators[] = {
    [KERNELS_MODE_F32] = {32, false, INT64_MAX, 4},
    [KERNELS_MODE_I8] = {32, true, I8_TERMS, 2},
    [KERNELS_MODE_I8X2] = {32, true, I8_TERMS, 2},
};

struct kernels_accumulator kernels_accumulator(enum kernels_mode m)
{
    return (unsigned)m <= KERNELS_MODE_I8X2 ? accumulators[m] : accumulators[KERNELS_MODE_F32];
}
