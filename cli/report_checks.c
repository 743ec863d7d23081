/* cli/report_checks.c — the comparisons a run made, those that failed, and what could not be checked. */
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* The comparisons of each kind the run made, and how many failed. */
static const struct cli_report_table comparison_counts = {
    "comparisons",
    "SELECT kind, count(*), sum(identical = 0), CASE WHEN sum(identical = 0) > 0 THEN 'bad' END FROM diffs"
    " WHERE run_id = ?1 GROUP BY kind"
    " UNION ALL SELECT 'the rules'' fixture cases', fixture_cases, fixture_failures,"
    " CASE WHEN fixture_failures > 0 THEN 'bad' END FROM runs WHERE id = ?1 AND fixture_cases IS NOT NULL ORDER BY 1",
    {"comparison", "made", "failed", NULL},
    "no comparison was made.",
    0,
};

/* Each comparison that failed: where, and why. */
static const struct cli_report_table mismatches = {
    "mismatches",
    "SELECT graph, coalesce(mode, ''), shim, kind, coalesce(tensor, ''), coalesce(first_index, ''),"
    " coalesce(reason, '') FROM diff_mismatches WHERE run = ?1 ORDER BY graph, mode, shim, kind",
    {"graph", "mode", "shim", "comparison", "tensor", "index", "reason", NULL},
    "every comparison passed.",
    CLI_REPORT_ROWS,
};

/* Each part of the run that could not be checked, and why. */
static const struct cli_report_table failures = {
    "failures",
    "SELECT coalesce(graph, ''), coalesce(mode, ''), coalesce(shim, ''), stage, reason FROM failures"
    " WHERE run_id = ?1 ORDER BY id",
    {"graph", "mode", "shim", "stage", "reason", NULL},
    "every graph could be checked.",
    CLI_REPORT_ROWS,
};

/* The comparisons the run made, those that failed, and what could not be checked. */
void cli_report_checks(struct cli_report *r, const struct cli_report_run *run)
{
    cli_report_table(r, &comparison_counts, run);
    cli_page_put(&r->page, "<h4>Comparisons that failed</h4>\n");
    cli_report_table(r, &mismatches, run);
    cli_page_put(&r->page, "<h4>What could not be checked</h4>\n");
    cli_report_table(r, &failures, run);
}
