/* fuzz/harness.c — what every libFuzzer harness of fusecheck shares: reading the mutant to run from the environment,
 * passing over known findings, and turning a failed check into a reported crash. */
#include "fuzz.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The guard atom this run drops (FUSECHECK_FUZZ_MUTANT=rule:atom, the run-time mutant hook, so one build serves
 * every mutant), or NULL in a faithful run. */
static const char *harness_mutant;

/* The known findings of harness h (fuzz/known-findings under the working directory: "harness pattern # what"
 * lines) as FUSECHECK_FUZZ_IGNORE, unless the environment already sets it: so the replays ctest runs pass over
 * bugs reported and not fixed yet, and fail on any other. */
static void harness_known(const char *h)
{
    if (getenv("FUSECHECK_FUZZ_IGNORE"))
        return;
    FILE *f = fopen("fuzz/known-findings", "r");
    if (!f)
        return;
    char line[512], list[4096] = "";
    size_t n = 0;
    while (fgets(line, sizeof line, f)) {
        char who[128], pat[256];
        if (line[0] != '#' && sscanf(line, "%127s %255s", who, pat) == 2 && strcmp(who, h) == 0 &&
            n + strlen(pat) + 2 < sizeof list)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? "," : "", pat);
    }
    fclose(f);
    setenv("FUSECHECK_FUZZ_IGNORE", list, 0);
}

/* Set up harness h: its known findings, and the mutant to run (its atom dropped for the whole run). */
void fuzz_harness_init(const char *h)
{
    harness_known(h);
    const char *m = getenv("FUSECHECK_FUZZ_MUTANT");
    harness_mutant = m && m[0] ? m : NULL;
    if (harness_mutant)
        rules_drop_atom(harness_mutant);
}

/* Whether the signature check:detail is one the run was told to pass over (FUSECHECK_FUZZ_IGNORE: shell patterns
 * separated by commas, e.g. "invalid:*.covers") — known, reported bugs a campaign fuzzes past. */
static bool harness_ignored(const struct fuzz_finding *f)
{
    const char *list = getenv("FUSECHECK_FUZZ_IGNORE");
    char sig[sizeof f->check + sizeof f->detail + 2], pat[256];
    snprintf(sig, sizeof sig, "%s:%s", f->check, f->detail);
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, ",");
        snprintf(pat, sizeof pat, "%.*s", (int)(n < sizeof pat - 1 ? n : sizeof pat - 1), p);
        if (pat[0] && fnmatch(pat, sig, 0) == 0)
            return true;
        p += n + (p[n] == ',');
    }
    return false;
}

/* Write an external optimizer's stderr tail between marker lines after its finding (the campaign keeps it beside
 * the input). */
static void report_stderr(const char *tail)
{
    size_t n = strlen(tail);
    fprintf(stderr, "fusecheck-optimizer-stderr-begin\n%s%sfusecheck-optimizer-stderr-end\n", tail,
            n && tail[n - 1] != '\n' ? "\n" : "");
}

/* Run one input through a check. A failure is reported and crashes, so libFuzzer saves the input and the replay
 * driver fails (with FUSECHECK_FUZZ_KEEP_GOING set it is reported and the run goes on: a survey). Under a mutant,
 * only a failure the faithful optimizer does not share kills it: the input is checked again with the atom back. */
int fuzz_harness_run(const char *harness, fuzz_harness_check check, const uint8_t *data, size_t size)
{
    struct fuzz_finding f;
    if (!check(data, size, &f) || (!harness_mutant && harness_ignored(&f)))
        return 0; /* under a mutant, the faithful re-check below tells a known bug from a kill */
    if (harness_mutant) {
        struct fuzz_finding again;
        rules_drop_atom(NULL);
        int shared = check(data, size, &again);
        rules_drop_atom(harness_mutant);
        if (shared)
            return 0;
        char detail[sizeof f.detail];
        snprintf(detail, sizeof detail, "%.20s:%.50s@%.50s", f.check, f.detail, harness_mutant);
        snprintf(f.detail, sizeof f.detail, "%s", detail);
        snprintf(f.check, sizeof f.check, "%s", "mutant-killed");
    }
    fuzz_report(harness, &f);
    if (fuzz_external_on() && strcmp(f.check, "external") == 0)
        report_stderr(fuzz_external_fault_stderr());
    const char *keep = getenv("FUSECHECK_FUZZ_KEEP_GOING");
    if (!keep || !keep[0])
        abort();
    return 0;
}

