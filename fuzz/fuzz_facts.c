/* fuzz/fuzz_facts.c — libFuzzer target: a generated graph's slots under takes, puts, replaces and clones the bytes
 * choose; every indexed fact equals its scanning specification after each. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_harness_init("fuzz_facts");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_harness_run("fuzz_facts", fuzz_check_facts, data, size);
}
