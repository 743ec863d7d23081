/* cli/report_verdict.c — the page's first screen: for each run, the run it is compared with (or a warning that no
 * earlier run has its configuration), then one line per stage, green or red, each a link to the first thing to look
 * at: the failing rows when there are any, else the run's part of the section. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* One line of the verdict: the kinds of run it is for ("check tolerance"), the query that says whether the run has
 * it (a count over ?1 the run), the query of its figures (a, b, and how many are bad; over ?1 the run and ?2 the
 * compared one), the sentence (printf of a and b), whether it needs a compared run (the sentence then ends "since
 * run P"), the table the bad rows are in and the section the run's part is in. */
struct verdict_line {
    const char *kinds, *has_sql, *sql, *text;
    bool compared;
    const char *bad_table, *section;
};

/* The stages' lines, in the order they show. */
static const struct verdict_line lines[] = {
    {"check tolerance", CLI_REPORT_CHECKS_SQL,
     "SELECT coalesce(sum(identical = 0), 0), count(*), coalesce(sum(identical = 0), 0) FROM diffs WHERE run_id = ?1",
     "%lld mismatches in %lld comparisons", false, "mismatches", "checks"},
    {"check", CLI_REPORT_CHECKS_SQL,
     "SELECT count(*), 0, count(*) FROM failures WHERE run_id = ?1 AND stage <> 'fixture'",
     "%lld other failures (lift, optimize, report, tolerance)", false, "failures", "checks"},
    {"check", CLI_REPORT_FIXTURES_SQL, CLI_REPORT_FIXTURE_FIGURES_SQL, CLI_REPORT_FIXTURE_TEXT, false, "failures",
     "checks"},
    {"check", CLI_REPORT_OLD_FIXTURES_SQL, CLI_REPORT_OLD_FIXTURE_FIGURES_SQL, CLI_REPORT_OLD_FIXTURE_TEXT, false,
     "failures", "checks"},
    {"check tolerance", "SELECT count(*) FROM run_tolerances WHERE run_id = ?1",
     "SELECT coalesce(sum(pass = 0), 0), count(*), coalesce(sum(pass = 0), 0) FROM tolerances WHERE run_id = ?1",
     "%lld tolerance rows outside their bound, of %lld", false, "tolerance", "tolerance"},
    {"check", "SELECT count(*) FROM reports WHERE run_id = ?1",
     "SELECT count(*), count(DISTINCT rule), count(*) FROM changes_cache WHERE run_before = ?2 AND run_after = ?1",
     "%lld decision changes in %lld rules", true, "change-summary", "changes"},
    {"prove", "SELECT count(*) FROM proofs WHERE run_id = ?1",
     "SELECT coalesce(sum(verdict = 'proved'), 0), count(*), coalesce(sum(verdict <> 'proved'), 0) FROM proofs"
     " WHERE run_id = ?1 AND solver = 'z3' AND obligation NOT LIKE '% without %'",
     "proved %lld/%lld", false, "proofs", "proofs"},
    {"prove", "SELECT count(*) FROM proofs WHERE run_id = ?1 AND obligation LIKE '% without %'",
     "SELECT coalesce(sum(verdict <> 'proved'), 0), count(*), coalesce(sum(verdict = 'proved'), 0) FROM proofs"
     " WHERE run_id = ?1 AND solver = 'z3' AND obligation LIKE '% without %'",
     "%lld/%lld guard atoms needed", false, "proofs", "proofs"},
    {"prove", "SELECT count(*) FROM proofs WHERE run_id = ?1 AND solver <> 'z3'",
     "SELECT count(*), 0, count(*) FROM proof_disagreements WHERE run = ?1", "%lld disagreements between the solvers",
     false, "proofs", "proofs"},
    {"prove", "SELECT count(*) FROM proofs WHERE run_id = ?1", CLI_REPORT_PROOF_CHANGES_SQL,
     "%lld proof verdicts or replays changed", true, "proofs", "proofs"},
    {"fuzz", CLI_REPORT_FUZZ_SQL, "SELECT count(*), 0, count(*) FROM fuzz_findings WHERE first_run = ?1",
     "%lld new fuzz findings", false, "fuzz-findings", "fuzz"},
    {"crosscheck", "SELECT count(*) FROM crosschecks WHERE run_id = ?1",
     "SELECT coalesce(sum(pass = 0), 0), count(*), coalesce(sum(pass = 0), 0) FROM crosschecks WHERE run_id = ?1",
     "%lld positions off their bound, of %lld", false, "crosscheck-off", "crosscheck"},
};

/* A query's three numbers. */
struct figures {
    int64_t a, b, bad;
};

/* Keep a query's three numbers. */
static void keep_figures(const char *const *cols, int n, void *ctx)
{
    struct figures *f = ctx;
    f->a = n > 0 ? cli_report_int(cols[0]) : 0;
    f->b = n > 1 ? cli_report_int(cols[1]) : 0;
    f->bad = n > 2 ? cli_report_int(cols[2]) : 0;
}

/* One line of the verdict: a mark, the link, the sentence. */
static void verdict_item(struct cli_page *p, const char *cls, const char *anchor, int64_t run, const char *text)
{
    cli_page_putf(p, "<li class=\"%s\"><a href=\"#%s-%lld\">", cls, anchor, (long long)run);
    cli_page_esc(p, text);
    cli_page_put(p, "</a></li>\n");
}

/* A stage's line for a run, if the run has it. */
static void verdict_line(struct cli_report *r, const struct cli_report_run *run, const struct verdict_line *l)
{
    if (!cli_report_kind_in(run->kind, l->kinds) || cli_report_number(r, l->has_sql, run) == 0)
        return;
    char text[256], part[64];
    snprintf(part, sizeof part, "part-%s", l->section);
    if (l->compared && !run->prev) {
        snprintf(text, sizeof text, "%s",
                 run->latest ? "not compared: no earlier run of this configuration"
                             : "not compared: the first run of its kind in this file");
        verdict_item(&r->page, run->latest ? "warn" : "first", part, run->id, text);
        return;
    }
    struct figures f = {0, 0, 0};
    int64_t params[2] = {run->id, run->prev};
    cli_report_query(r, l->sql, params, 2, keep_figures, &f);
    int k = snprintf(text, sizeof text, l->text, (long long)f.a, (long long)f.b);
    if (l->compared && k > 0 && (size_t)k < sizeof text)
        snprintf(text + k, sizeof text - (size_t)k, " since run %lld", (long long)run->prev);
    verdict_item(&r->page, f.bad ? "bad" : "ok", f.bad ? l->bad_table : part, run->id, text);
}

/* The run a run is compared with, in words: which, or a warning that none of its configuration ran before. */
static void compared_with(struct cli_report *r, const struct cli_report_run *run)
{
    struct cli_page *p = &r->page;
    if (run->prev && run->prev == run->latest)
        cli_page_escf(p, "compared with run %lld, the previous %s run, of the same configuration", (long long)run->prev,
                      run->kind);
    else if (run->prev)
        cli_page_escf(p,
                      "compared with run %lld, the previous %s run of the same configuration (run %lld, newer, ran "
                      "another)",
                      (long long)run->prev, run->kind, (long long)run->latest);
    else if (!run->latest)
        cli_page_escf(p, "the first %s run in this file: nothing to compare it with", run->kind);
    else {
        cli_page_put(p, "<strong class=\"warning\">");
        cli_page_escf(p, "no earlier %s run has this configuration, so nothing is compared: the newest, run %lld, ",
                      run->kind, (long long)run->latest);
        if (run->lacks[0])
            cli_page_escf(p, "had %s", run->lacks);
        if (run->lacks[0] && run->differs[0])
            cli_page_put(p, " and ");
        if (run->differs[0])
            cli_page_escf(p, "lacked %s", run->differs);
        cli_page_put(p, "</strong>");
    }
}

/* Whether a run ended anything but complete, and how it ended. */
static void keep_status(const char *const *cols, int n, void *ctx)
{
    snprintf(ctx, 32, "%s", n > 0 && cols[0] ? cols[0] : "");
}

/* The verdict: each run's comparison and its stages' lines. */
void cli_report_verdict(struct cli_report *r)
{
    cli_page_put(&r->page, "<section id=\"verdict\"><h2>Verdict</h2>\n");
    for (int i = 0; i < r->nruns; i++) {
        const struct cli_report_run *run = &r->runs[i];
        cli_page_putf(&r->page, "<p class=\"against\"><a href=\"#run-%lld\">", (long long)run->id);
        cli_page_escf(&r->page, "%s run %lld", run->kind, (long long)run->id);
        cli_page_put(&r->page, "</a>: ");
        compared_with(r, run);
        cli_page_put(&r->page, "</p>\n<ul class=\"verdict\">\n");
        char status[32] = "";
        cli_report_query(r, "SELECT status FROM runs WHERE id = ?1", &run->id, 1, keep_status, status);
        if (strcmp(status, "complete") != 0) {
            char text[96];
            snprintf(text, sizeof text, "the run ended %s", status);
            verdict_item(&r->page, "bad", "run", run->id, text);
        }
        for (size_t k = 0; k < sizeof lines / sizeof lines[0]; k++)
            verdict_line(r, run, &lines[k]);
        cli_page_put(&r->page, "</ul>\n");
    }
    cli_page_put(&r->page, "</section>\n");
}
