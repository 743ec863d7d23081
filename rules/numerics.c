/* rules/numerics.c — the numerics fold (fused_quant): quantize ops inserted where the shim says a product reads
 * its activation quantized, folded into the producer's epilogue where the chip links that class.
 * PLACEHOLDER: no shim shipped yet quantizes its activations (the CUDA lane, which does, comes with its issue), so
 * the fold inserts nothing yet. */
#include "rules.h"

void rules_numerics_fold(struct rules_rewriter *r, bool fold)
{
    (void)r;
    (void)fold;
}
