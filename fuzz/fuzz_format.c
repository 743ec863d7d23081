/* fuzz/fuzz_format.c — libFuzzer target: any bytes → parse; when they parse, print → parse → print is the
 * identity and the validating parser agrees with the validator. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_harness_init("fuzz_format");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_harness_run("fuzz_format", fuzz_check_format, data, size);
}

#ifdef FUSECHECK_FUZZ_LIBFUZZER
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    return fuzz_mutate_format(data, size, max_size, seed, LLVMFuzzerMutate);
}
#endif
