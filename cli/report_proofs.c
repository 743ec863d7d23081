/* cli/report_proofs.c — a run's proof verdicts, beside the compared run's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* The run's verdicts by solver: how many, and their time. */
static const struct cli_report_table proof_counts = {
    "proof-counts",
    "SELECT solver, verdict, count(*), printf('%.1f', sum(ms)), CASE WHEN verdict <> 'proved' THEN 'bad' END"
    " FROM proofs WHERE run_id = ?1 GROUP BY solver, verdict ORDER BY solver, verdict",
    {"solver", "verdict", "obligations", "ms in all", NULL},
    "no verdict was recorded.",
    0,
};

/* An obligation that is not what it should be: a shipped rule's not proved, or a mutant's ("… without ATOM") proved,
 * its atom not needed. */
#define PROOF_BAD "((p.obligation LIKE '% without %') = (p.verdict = 'proved'))"

/* Each obligation that is bad or changed since the compared run (its verdict, or the replay both runs made), with
 * the compared run's verdict, replay and time for the same rule, obligation, bound and solver (a replay reads "fails
 * ×2": the counterexample failed diff, the rule firing twice). */
static const struct cli_report_table proofs = {
    "proofs",
    "SELECT p.rule, p.obligation, p.bound, p.solver, p.verdict,"
    " coalesce(p.replay || coalesce(' ×' || p.replay_fired, ''), '—'), printf('%.1f', p.ms),"
    " coalesce(q.verdict, '—'), coalesce(q.replay || coalesce(' ×' || q.replay_fired, ''), '—'),"
    " CASE WHEN q.id IS NULL THEN '—' ELSE printf('%.1f', q.ms) END,"
    " coalesce(p.reason, ''),"
    " CASE WHEN " PROOF_BAD " THEN 'bad' WHEN " CLI_REPORT_PROOF_CHANGED " THEN 'changed' END"
    " FROM " CLI_REPORT_PROOF_PAIR " WHERE p.run_id = ?1 AND (" PROOF_BAD " OR coalesce(" CLI_REPORT_PROOF_CHANGED
    ", 0)) ORDER BY p.id",
    {"rule", "obligation", "bound", "solver", "verdict", "replay", "ms", "verdict before", "replay before", "ms before",
     "reason", NULL},
    "none: every obligation is what it should be, and none changed.",
    0,
};

/* The obligations neither bad nor changed, counted. */
static const char proofs_as_before_sql[] =
    "SELECT count(*) FROM " CLI_REPORT_PROOF_PAIR " WHERE p.run_id = ?1 AND NOT (" PROOF_BAD
    " OR coalesce(" CLI_REPORT_PROOF_CHANGED ", 0))";

/* The run's proof verdicts by solver, then the obligations that are bad or changed; the rest counted. */
void cli_report_proofs(struct cli_report *r, const struct cli_report_run *run)
{
    cli_report_table(r, &proof_counts, run);
    cli_page_put(&r->page, "<h4>Obligations not as they should be, or changed</h4>\n");
    cli_report_table(r, &proofs, run);
    int64_t rest = cli_report_number(r, proofs_as_before_sql, run);
    cli_page_put(&r->page, "<p>");
    if (run->prev)
        cli_page_escf(&r->page, "%lld other obligation%s: as they should be, and as in run %lld.", (long long)rest,
                      rest == 1 ? "" : "s", (long long)run->prev);
    else
        cli_page_escf(&r->page, "%lld other obligation%s: as they should be (no earlier run to compare them with).",
                      (long long)rest, rest == 1 ? "" : "s");
    cli_page_put(&r->page, "</p>\n");
}
