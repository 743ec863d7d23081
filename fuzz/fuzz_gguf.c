/* fuzz/fuzz_gguf.c — libFuzzer target: any bytes → the GGUF reader; a refusal names its byte, a file that reads keeps
 * its tensors inside its bytes and lifts (when small) with values from them. */
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_harness_init("fuzz_gguf");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_harness_run("fuzz_gguf", fuzz_check_gguf, data, size);
}
