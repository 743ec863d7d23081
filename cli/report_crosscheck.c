/* cli/report_crosscheck.c — the evaluator against llama.cpp: each check and the positions off. */
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* Each check of the run (a model, a format, a mode): its positions, those off, the worst NMSE and its bound, the
 * top-1 agreements, and the same check's worst NMSE in the previous crosscheck run. Bad: a position off; changed:
 * the worst NMSE grew tenfold or more. */
static const struct cli_report_table crosschecks = {
    "crosschecks",
    "SELECT c.model, c.family, c.weights, c.mode, count(*), sum(c.pass = 0), printf('%.3g', max(c.nmse)),"
    " printf('%.3g', max(c.bound)), sum(c.top1_fusecheck = c.top1_llama),"
    " coalesce((SELECT printf('%.3g', max(p.nmse)) FROM crosschecks p WHERE p.run_id = ?2 AND p.model = c.model"
    "  AND p.weights = c.weights AND p.mode = c.mode), '—'),"
    " CASE WHEN sum(c.pass = 0) > 0 THEN 'bad' WHEN max(c.nmse) >= 10 * (SELECT max(p.nmse) FROM crosschecks p"
    "  WHERE p.run_id = ?2 AND p.model = c.model AND p.weights = c.weights AND p.mode = c.mode) THEN 'changed' END"
    " FROM crosschecks c WHERE c.run_id = ?1 GROUP BY c.model, c.family, c.weights, c.mode"
    " ORDER BY c.model, c.weights, c.mode",
    {"model", "family", "weights", "mode", "positions", "off", "worst NMSE", "bound", "top-1 agreeing",
     "worst NMSE before", NULL},
    "no crosscheck was recorded.",
    0,
};

/* A crosscheck run's part: every check, then the positions off. */
static const struct cli_report_table crosscheck_off = {
    "crosscheck-off",
    "SELECT model, weights, mode, position, token, printf('%.3g', nmse), printf('%.3g', bound), top1_fusecheck,"
    " top1_llama, 'bad' FROM crosscheck_failures WHERE run = ?1 ORDER BY model, weights, mode, position",
    {"model", "weights", "mode", "position", "token", "NMSE", "bound", "top-1", "llama.cpp's top-1", NULL},
    "every position within its bound.",
    40,
};

void cli_report_crosscheck(struct cli_report *r, const struct cli_report_run *run)
{
    cli_report_table(r, &crosschecks, run);
    cli_page_put(&r->page, "<h4>Positions off</h4>\n");
    cli_report_table(r, &crosscheck_off, run);
}
