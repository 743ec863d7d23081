/* fuzz/fuzz_optimize.c — libFuzzer target: a case (eight control bytes choosing the shim, its knobs, the holds, the
 * prefix checked and the evaluator's seed; then a graph's text, or bytes the generator decodes into one) →
 * optimize → the result validates, diffs bit-identical, repeats, passes the decision validator and the prefix-hold
 * check. The structure-aware mutator and crossover work on the graph's text. */
#include "harness.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    harness_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return harness_run("fuzz_optimize", fuzz_check_optimize, data, size);
}

#ifdef FUSECHECK_FUZZ_LIBFUZZER
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    return fuzz_mutate_case(data, size, max_size, seed, LLVMFuzzerMutate);
}

size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1, const uint8_t *data2, size_t size2, uint8_t *out,
                                 size_t max_out_size, unsigned int seed)
{
    return fuzz_cross_case(data1, size1, data2, size2, out, max_out_size, seed);
}
#endif
