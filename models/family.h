/* models/family.h — the family table shared by the zoo's files (not part of the public API).
 *
 * A family row is a name and the hooks that build what the family adds to the common decoder block (models/lift.c
 * builds the block; every hook may be NULL, meaning the family adds nothing there). */
#ifndef FUSECHECK_MODELS_FAMILY_H
#define FUSECHECK_MODELS_FAMILY_H

#include "models/models.h"

struct models_lift; /* the graph being built (models/lift.c) */

struct models_family {
    const char *name;
    /* Added to every norm weight: 1 for (1+w) weights, else 0. */
    double norm_offset;
    /* The gathered embedding rows x (rows × hidden) as the first layer reads them. */
    ir_tid (*embed)(struct models_lift *l, ir_tid x);
    /* A query or key t (`which` is "q" or "k"; `heads` heads a row; seq the batch's sequence, or -1) before its
     * rotation. */
    ir_tid (*head)(struct models_lift *l, int layer, ir_tid t, int64_t heads, const char *which, int64_t seq);
    /* A branch's output t (the attention's or the FFN's projection, `tag` names it) before its residual add. */
    ir_tid (*post)(struct models_lift *l, int layer, ir_tid t, const char *tag);
    /* The FFN of the normed rows x: its output (rows × hidden). Required. */
    ir_tid (*ffn)(struct models_lift *l, int layer, ir_tid x);
    /* The LM head's logits before the arg-max. */
    ir_tid (*logits)(struct models_lift *l, ir_tid t);
    /* The sliding window of a layer (0: attends the whole context). */
    int64_t (*window)(const struct models_config *c, int layer);
    /* Parameters a layer holds beyond the common block (its attention projections and two norms), -1 on overflow.
     * Required. */
    int64_t (*layer_params)(const struct models_config *c);
};

/* a · b for sizes: -1 when either is negative (an earlier overflow) or the product overflows. */
static inline int64_t models_size_mul(int64_t a, int64_t b)
{
    if (a < 0 || b < 0 || (b && a > INT64_MAX / b))
        return -1;
    return a * b;
}

/* a + b for sizes: -1 when either is negative or the sum overflows. */
static inline int64_t models_size_add(int64_t a, int64_t b)
{
    if (a < 0 || b < 0 || a > INT64_MAX - b)
        return -1;
    return a + b;
}

/* The family named `name`, or NULL. */
const struct models_family *models_family_find(const char *name);
/* The i-th family, or NULL. */
const struct models_family *models_family_at(int i);

#endif
