/* cli/report_fuzz.c — a fuzz run's harness figures and its new findings. */
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* Each harness's figures beside its exec/s in the previous run. */
static const struct cli_report_table fuzz_stats = {
    "fuzz-stats",
    "SELECT f.harness, f.executions, printf('%.1f', f.seconds),"
    " CASE WHEN f.seconds > 0 THEN printf('%.0f', f.executions / f.seconds) ELSE '—' END, f.corpus, f.coverage,"
    " coalesce((SELECT CASE WHEN q.seconds > 0 THEN printf('%.0f', q.executions / q.seconds) END FROM fuzz_stats q"
    " WHERE q.run_id = ?2 AND q.harness = f.harness ORDER BY q.id LIMIT 1), '—')"
    " FROM fuzz_stats f WHERE f.run_id = ?1 ORDER BY f.harness, f.id",
    {"harness", "executions", "seconds", "exec/s", "corpus", "coverage", "exec/s before", NULL},
    "no harness statistics were recorded.",
    0,
};

/* The findings first seen in the run. */
static const struct cli_report_table fuzz_new = {
    "fuzz-findings",
    "SELECT harness, signature, substr(input_sha256, 1, 16), count, last_run, 'bad' FROM fuzz_findings"
    " WHERE first_run = ?1 ORDER BY harness, signature",
    {"harness", "signature", "input sha256", "seen", "last seen in run", NULL},
    "no finding was new in this run.",
    CLI_REPORT_ROWS,
};

/* The run's harness figures beside the previous run's, and the findings first seen in it. */
void cli_report_fuzz(struct cli_report *r, const struct cli_report_run *run)
{
    int64_t execs = cli_report_number(r, "SELECT coalesce(sum(executions), 0) FROM fuzz_stats WHERE run_id = ?1", run);
    int64_t again =
        cli_report_number(r, "SELECT count(*) FROM fuzz_findings WHERE last_run = ?1 AND first_run < ?1", run);
    cli_page_putf(&r->page,
                  "<p>%lld executions in all; %lld finding%s first seen in an earlier run %s last seen in this "
                  "one.</p>\n",
                  (long long)execs, (long long)again, again == 1 ? "" : "s", again == 1 ? "was" : "were");
    cli_report_table(r, &fuzz_stats, run);
    cli_page_put(&r->page, "<h4>Findings first seen in this run</h4>\n");
    cli_report_table(r, &fuzz_new, run);
}
