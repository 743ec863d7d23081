/* fuzz/fuzz_optimize.c — libFuzzer target: a case (eight control bytes choosing the shim, its knobs, the holds, the
 * prefix checked and the evaluator's seed; then a graph's text, or bytes the generator decodes into one) →
 * optimize → the result validates, diffs bit-identical, still writes what the host reads, repeats, passes the
 * prefix-hold check and, with FUSECHECK_FUZZ_ORACLE=N (one case in N), the oracle's translation validation of every
 * firing. The structure-aware mutator and crossover work on the graph's text.
 *
 * With --optimizer=CMD (or FUSECHECK_OPTIMIZER) the optimizer checked is that command, run as its own process and
 * spoken to by the optimizer protocol, one process for the whole run (fuzz/external.c): every check above but the
 * oracle's run validation (it compiles with fusecheck's own rewriter), and its crash, hang (--optimizer-timeout=MS,
 * default 2000, per answer), malformed answer or broken protocol is a finding external:<fault>. */
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
    fuzz_harness_init("fuzz_optimize");
    /* --optimizer=CMD (libFuzzer passes over flags that start with "--") or FUSECHECK_OPTIMIZER: check that
     * command, run as its own process, instead of fusecheck's own optimizer */
    char err[IR_ERR_LEN];
    int external = fuzz_external_from_args(*argc, *argv, err);
    if (external < 0 || (external > 0 && getenv("FUSECHECK_FUZZ_MUTANT") && getenv("FUSECHECK_FUZZ_MUTANT")[0])) {
        fprintf(stderr, "fuzz_optimize: %s\n",
                external < 0 ? err
                             : "FUSECHECK_FUZZ_MUTANT drops an atom of the optimizer in process, not of --optimizer");
        exit(2);
    }
    /* FUSECHECK_PLANT plants an optimizer bug in the optimizer checked in process (the harness's self-test); with
     * --optimizer the harness stays faithful and the variable reaches only the command's environment */
    const char *plant = getenv("FUSECHECK_PLANT");
    if (!external && plant && plant[0] && rules_plant(plant) != 0) {
        fprintf(stderr, "fuzz_optimize: FUSECHECK_PLANT: no optimizer bug '%s' (fusecheck help lists them)\n", plant);
        exit(2);
    }
    if (external > 0)
        fprintf(stderr, "fuzz_optimize: checking the optimizer '%s' (%s %s), run as its own process\n",
                fuzz_external_command(), fuzz_external_name(), fuzz_external_version());
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
