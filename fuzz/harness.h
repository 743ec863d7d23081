/* fuzz/harness.h — what every libFuzzer harness of fusecheck shares: reading the mutant to run from the
 * environment, and turning a failed check into a reported crash. Included by each fuzz/fuzz_*.c only. */
#ifndef FUSECHECK_FUZZ_HARNESS_H
#define FUSECHECK_FUZZ_HARNESS_H

#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>

/* libFuzzer's entry points (the replay driver calls the same ones). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The guard atom this run drops (FUSECHECK_FUZZ_MUTANT=rule:atom, the run-time mutant hook, so one build serves
 * every mutant), or NULL in a faithful run. */
static const char *harness_mutant;

/* Set up a harness: read the mutant to run, and drop its atom for the whole run. */
static inline void harness_init(void)
{
    const char *m = getenv("FUSECHECK_FUZZ_MUTANT");
    harness_mutant = m && m[0] ? m : NULL;
    if (harness_mutant)
        rules_drop_atom(harness_mutant);
}

/* A harness's check over one input. */
typedef int (*harness_check)(const uint8_t *data, size_t size, struct fuzz_finding *f);

/* Run one input through a check. A failure is reported and crashes, so libFuzzer saves the input and the replay
 * driver fails (with FUSECHECK_FUZZ_KEEP_GOING set it is reported and the run goes on: a survey). Under a mutant,
 * only a failure the faithful optimizer does not share kills it: the input is checked again with the atom back. */
static inline int harness_run(const char *harness, harness_check check, const uint8_t *data, size_t size)
{
    struct fuzz_finding f;
    if (!check(data, size, &f))
        return 0;
    if (harness_mutant) {
        struct fuzz_finding again;
        rules_drop_atom(NULL);
        int shared = check(data, size, &again);
        rules_drop_atom(harness_mutant);
        if (shared)
            return 0;
        char detail[sizeof f.detail];
        snprintf(detail, sizeof detail, "%s", f.detail);
        snprintf(f.detail, sizeof f.detail, "%.60s@%.60s", detail, harness_mutant);
        snprintf(f.check, sizeof f.check, "%s", "mutant-killed");
    }
    fuzz_report(harness, &f);
    const char *keep = getenv("FUSECHECK_FUZZ_KEEP_GOING");
    if (!keep || !keep[0])
        abort();
    return 0;
}

#ifdef FUSECHECK_FUZZ_LIBFUZZER
/* libFuzzer's own byte mutator, for the inputs the structural mutators leave to it. */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1, const uint8_t *data2, size_t size2, uint8_t *out,
                                 size_t max_out_size, unsigned int seed);
#endif

#endif
