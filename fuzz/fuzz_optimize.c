/* fuzz/fuzz_optimize.c — libFuzzer target: a case (eight control bytes choosing the shim, its knobs, the holds, the
 * prefix checked and the evaluator's seed; then a graph's text, or bytes the generator decodes into one) →
 * optimize → the result validates, diffs bit-identical, still writes what the host reads, repeats, passes the
 * prefix-hold check and, with FUSECHECK_FUZZ_ORACLE=N (one case in N), the oracle's translation validation of every
 * firing. The structure-aware mutator and crossover work on the graph's text. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FUSECHECK_FUZZ_ORACLE
#include "oracle/oracle.h"

#include <stdio.h>
#include <string.h>

/* Translation validation by the oracle (FUSECHECK_FUZZ_ORACLE=N: one case in N, the first of a run always). */
static unsigned long oracle_every, oracle_count;

/* What the oracle's checks of one run found: the first failing firing. */
struct oracle_seen {
    bool failed;
    char rule[64], why[IR_ERR_LEN];
};

/* Note the first check that fails. */
static void on_validated(const struct oracle_check *c, void *ctx)
{
    struct oracle_seen *s = ctx;
    if (s->failed || (c->atoms && c->premises && c->legal && c->admitted && c->positions))
        return;
    s->failed = true;
    snprintf(s->rule, sizeof s->rule, "%s", c->rule);
    snprintf(s->why, sizeof s->why, "%s at slot %d: %.400s", ir_class_name(c->cls), (int)c->at, c->why);
}

/* The run validator: the oracle re-checks every firing of lifted's compile under shim. */
static int oracle_validator(const struct ir_graph *lifted, const struct shim *shim, char rule[64], char why[IR_ERR_LEN])
{
    if (oracle_count++ % oracle_every != 0)
        return 0;
    struct oracle_options opt = oracle_defaults();
    opt.timeout_ms = 2000;
    struct oracle_seen seen = {false, "", ""};
    struct oracle_validation v;
    char err[IR_ERR_LEN];
    if (oracle_validate_run(lifted, shim, &opt, on_validated, &seen, &v, err) != 0)
        return 0; /* the oracle could not run (an error, not a finding) */
    if (seen.failed) {
        snprintf(rule, 64, "%s", seen.rule);
        snprintf(why, IR_ERR_LEN, "%s", seen.why);
    }
    return seen.failed;
}

/* Release Z3's state at exit. */
static void oracle_done(void) { oracle_shutdown(); }
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_harness_init("fuzz_optimize");
#ifdef FUSECHECK_FUZZ_ORACLE
    const char *every = getenv("FUSECHECK_FUZZ_ORACLE");
    if (every && atol(every) > 0) {
        oracle_every = (unsigned long)atol(every);
        fuzz_set_run_validator(oracle_validator);
        atexit(oracle_done);
    }
#endif
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_harness_run("fuzz_optimize", fuzz_check_optimize, data, size);
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
