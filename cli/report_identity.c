/* cli/report_identity.c — a run's identity on the page, field by field beside the run it is compared with. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* What the runs table says of a run, one field a row: its label and its column. */
static const struct {
    const char *label, *sql;
} run_fields[] = {
    {"run", "id"},
    {"kind", "kind"},
    {"status", "status"},
    {"started", "started"},
    {"ended", "ended"},
    {"git revision", "git_rev"},
    {"host", "host"},
    {"fusecheck", "version"},
    {"optimizer", "optimizer_name || ' ' || coalesce(optimizer_version, '?') || CASE WHEN optimizer_command IS NULL"
                  " THEN ' (in process)' ELSE ' (' || optimizer_command || ')' END"},
    {"command", "command"},
    {"configuration", "config"},
    {"merged from", "origin"},
    {"reports", "(SELECT count(*) FROM reports x WHERE x.run_id = r.id)"},
    {"comparisons", "(SELECT count(*) FROM diffs x WHERE x.run_id = r.id)"},
    {"proof verdicts", "(SELECT count(*) FROM proofs x WHERE x.run_id = r.id)"},
    {"fuzz harnesses", "(SELECT count(*) FROM fuzz_stats x WHERE x.run_id = r.id)"},
    {"fixture cases (failed)", "fixture_cases || ' (' || fixture_failures || ')'"},
    {"tolerance sets", "(SELECT count(*) FROM run_tolerances x WHERE x.run_id = r.id)"},
};
#define NRUN_FIELDS (sizeof run_fields / sizeof run_fields[0])

/* A field of a run, as a table cell. */
static void run_cell(struct cli_page *p, const char *v)
{
    cli_page_put(p, "<td>");
    cli_page_esc(p, v ? v : "—");
    cli_page_put(p, "</td>");
}

/* One run's fields as copies (slot 0: this run, 1: the previous one). */
struct run_rows {
    char *v[2][NRUN_FIELDS];
    int64_t id;
};

/* Keep a runs row in its slot. */
static void keep_run_row(const char *const *cols, int n, void *ctx)
{
    struct run_rows *rr = ctx;
    int slot = cli_report_int(cols[0]) == rr->id ? 0 : 1;
    for (int i = 0; i < n && i < (int)NRUN_FIELDS; i++)
        rr->v[slot][i] = cols[i] ? strdup(cols[i]) : NULL;
}

/* The run's identity beside the previous run's, field by field. */
void cli_report_identity(struct cli_report *r, const struct cli_report_run *run)
{
    char sql[2048] = "SELECT ";
    for (size_t i = 0; i < NRUN_FIELDS; i++)
        snprintf(sql + strlen(sql), sizeof sql - strlen(sql), "%s%s", i ? ", " : "", run_fields[i].sql);
    snprintf(sql + strlen(sql), sizeof sql - strlen(sql), " FROM runs r WHERE r.id IN (?1, ?2) ORDER BY r.id");
    struct run_rows rr = {{{NULL}}, run->id};
    int64_t params[2] = {run->id, run->prev};
    cli_report_query(r, sql, params, 2, keep_run_row, &rr);
    if (!run->latest) {
        cli_page_put(&r->page, "<p>");
        cli_page_escf(&r->page, "No %s run ended before run %lld in this file.", run->kind, (long long)run->id);
        cli_page_put(&r->page, "</p>\n");
    } else if (!run->prev) {
        cli_page_put(&r->page, "<p class=\"warning\">");
        cli_page_escf(&r->page,
                      "No %s run of this configuration ended before run %lld in this file (run %lld, the "
                      "newest %s run, ran another).",
                      run->kind, (long long)run->id, (long long)run->latest, run->kind);
        cli_page_put(&r->page, "</p>\n");
    }
    cli_page_putf(&r->page, "<table id=\"run-%lld\" class=\"run\"><thead><tr><th></th><th>this run</th>",
                  (long long)run->id);
    if (run->prev) {
        cli_page_put(&r->page, "<th>");
        cli_page_escf(&r->page, "compared run: %lld", (long long)run->prev);
        cli_page_put(&r->page, "</th>");
    }
    cli_page_put(&r->page, "</tr></thead><tbody>\n");
    for (size_t i = 0; i < NRUN_FIELDS; i++) {
        cli_page_putf(&r->page, "<tr><th>%s</th>", run_fields[i].label);
        for (int s = 0; s < (run->prev ? 2 : 1); s++)
            run_cell(&r->page, rr.v[s][i]);
        cli_page_put(&r->page, "</tr>\n");
    }
    cli_page_put(&r->page, "</tbody></table>\n");
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < NRUN_FIELDS; i++)
            free(rr.v[s][i]);
}
