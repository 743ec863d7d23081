/* cli/report_page.c — the page's layout: its head, style, table of contents and sections, each run's part. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* A section of the page: its anchor and title, how many rows a run has for it (?1 the run), what its absence means
 * (completed by the runs it covers), and how one run's part is written. */
struct section {
    const char *id, *title, *count_sql, *empty;
    void (*render)(struct cli_report *r, const struct cli_report_run *run);
};

/* The page's sections, in order. */
static const struct section sections[] = {
    {"trends", "Trends", "SELECT 1", "", cli_report_trends},
    {"run", "The runs", "SELECT 1", "", cli_report_identity},
    {"heatmap", "Rule × graph firings", "SELECT count(*) FROM reports WHERE run_id = ?1",
     "no decision reports were recorded in %s", cli_report_heatmap},
    {"changes", "Decision and digest changes", "SELECT count(*) FROM reports WHERE run_id = ?1",
     "no decision reports were recorded in %s: nothing to compare", cli_report_changes},
    {"checks", "Comparisons and failures", CLI_REPORT_CHECKS_SQL, "no comparisons were recorded in %s",
     cli_report_checks},
    {"proofs", "Proofs", "SELECT count(*) FROM proofs WHERE run_id = ?1", "no proofs were recorded in %s",
     cli_report_proofs},
    {"fuzz", "Fuzzing", CLI_REPORT_FUZZ_SQL, "no fuzz figures or findings were recorded in %s", cli_report_fuzz},
    {"tolerance", "Tolerance per launch class", "SELECT count(*) FROM run_tolerances WHERE run_id = ?1",
     "no tolerance results were recorded in %s", cli_report_tolerance},
    {"crosscheck", "The evaluator against llama.cpp", "SELECT count(*) FROM crosschecks WHERE run_id = ?1",
     "no crosscheck was recorded in %s", cli_report_crosscheck},
};
#define NSECTIONS (sizeof sections / sizeof sections[0])

/* The runs a page covers, in words: "run 7 (check)" or "runs 7 (check) and 8 (prove)". */
static void runs_text(const struct cli_report *r, char *out, size_t cap)
{
    size_t k = (size_t)snprintf(out, cap, "run%s ", r->nruns > 1 ? "s" : "");
    for (int i = 0; i < r->nruns && k < cap; i++)
        k += (size_t)snprintf(out + k, cap - k, "%s%lld (a %s run)",
                              i == 0              ? ""
                              : i == r->nruns - 1 ? " and "
                                                  : ", ",
                              (long long)r->runs[i].id, r->runs[i].kind);
}

/* A run's part of a section: its heading, and what the section's render writes. */
static void section_run(struct cli_report *r, const struct section *s, const struct cli_report_run *run)
{
    cli_page_putf(&r->page, "<h3 id=\"part-%s-%lld\">", s->id, (long long)run->id);
    cli_page_escf(&r->page, "run %lld (%s)", (long long)run->id, run->kind);
    if (run->prev)
        cli_page_putf(&r->page, " against run %lld", (long long)run->prev);
    else if (run->latest)
        cli_page_put(&r->page, " against none: no earlier run of its configuration");
    cli_page_put(&r->page, "</h3>\n");
    s->render(r, run);
}

/* One section: each run's part that has rows for it, or a sentence saying there is none in any. */
static void write_section(struct cli_report *r, const struct section *s)
{
    cli_page_putf(&r->page, "<section id=\"%s\"><h2>%s</h2>\n", s->id, s->title);
    int shown = 0;
    for (int i = 0; i < r->nruns; i++)
        if (cli_report_number(r, s->count_sql, &r->runs[i]) > 0) {
            section_run(r, s, &r->runs[i]);
            shown++;
        }
    if (!shown) {
        char runs[1024], why[1200];
        runs_text(r, runs, sizeof runs);
        snprintf(why, sizeof why, s->empty, runs);
        cli_page_put(&r->page, "<p class=\"empty\">");
        cli_page_esc(&r->page, why);
        cli_page_put(&r->page, ".</p>\n");
    }
    cli_page_put(&r->page, "</section>\n");
}

/* The page's style: inline, nothing fetched. */
static const char page_style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}"
    "h1{font-size:1.5em}h2{border-bottom:2px solid #446;padding-top:.6em}h3{font-size:1.05em;color:#446}"
    "h4{font-size:.95em;margin:1em 0 .3em}"
    "table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ccd;padding:2px 6px;text-align:left;"
    "vertical-align:top}thead th{background:#eef}tr.bad td{background:#fdd}tr.changed td{background:#ffd}"
    "table.run th{background:#eef}p.empty{color:#666;font-style:italic}p.more{color:#666}"
    "nav a{margin-right:1em}.scroll{overflow-x:auto}"
    "table.heat td{width:1.6em;min-width:1.6em;text-align:center;font-size:11px;padding:1px}"
    "table.heat th.graph{vertical-align:bottom;font-weight:normal;font-size:11px;padding:2px}"
    "table.heat th.graph span{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap}"
    "table.heat th.rule{font-weight:normal;white-space:nowrap;position:sticky;left:0;background:#fff}"
    "td.total{font-weight:bold}td.never{background:#fcc}"
    ".legend span{display:inline-block;min-width:3em;text-align:center;border:1px solid #ccd;margin-right:2px}"
    ".h0{background:#f6f6f8}.h1{background:#dbe7f5}.h2{background:#bcd3ee}.h3{background:#93b7e3}"
    ".h4{background:#6b9bd6;color:#fff}.h5{background:#447fc8;color:#fff}.h6{background:#2a62a8;color:#fff}"
    ".h7{background:#174480;color:#fff}"
    "svg.plot{display:block;margin:.5em 0}svg .label{font-size:11px;text-anchor:end}"
    "svg .axis{font-size:10px;text-anchor:middle;fill:#555}svg .tick{stroke:#ddd}"
    "svg .bound{stroke:#c33;stroke-dasharray:4 3}svg .within{fill:#4a8}svg .beyond{fill:#c33}"
    "svg .prev{fill:none;stroke:#222;stroke-width:1.5}"
    "h1{margin:.2em 0}h1+p{margin:.2em 0 .6em;color:#555}#verdict h2{margin-top:0;padding-top:0}"
    "p.against{margin:.5em 0 .1em}ul.verdict{margin:0 0 .4em;padding-left:1.2em;list-style:none}"
    "ul.verdict li{margin:1px 0;padding-left:.3em;border-left:6px solid}ul.verdict li a{color:inherit}"
    "ul.verdict li.ok{border-color:#2a8a4a;color:#1d6b36}ul.verdict li.bad{border-color:#c33;color:#a11;"
    "font-weight:bold}ul.verdict li.warn{border-color:#d90;color:#850;font-weight:bold}ul.verdict "
    "li.first{border-color:#99a;color:#555}strong.warning,p.warning{color:#a60;font-weight:bold}"
    "div.trends{display:flex;flex-wrap:wrap;gap:.6em}figure.trend{margin:0;padding:.3em;border:1px solid #ccd}"
    "figure.trend figcaption{font-size:12px}svg.spark .line{fill:none;stroke:#446;stroke-width:1.5}"
    "svg.spark .dot{fill:#446}svg.spark .last{fill:#c60}svg.spark text{font-size:10px;fill:#555}"
    "td.moved{outline:2px solid #e80;outline-offset:-2px}.legend span.moved{outline:2px solid #e80;"
    "outline-offset:-2px}details{margin:.2em 0}summary{cursor:pointer;color:#446}"
    "main,section{max-width:100%}";

/* The page's head, title and table of contents. */
static void page_open(struct cli_report *r)
{
    char runs[1024];
    runs_text(r, runs, sizeof runs);
    cli_page_put(&r->page, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                           "style-src 'unsafe-inline'\">\n<title>fusecheck report: ");
    cli_page_esc(&r->page, runs);
    cli_page_put(&r->page, "</title>\n<style>");
    cli_page_put(&r->page, page_style);
    cli_page_put(&r->page, "</style></head>\n<body>\n<h1>fusecheck report: ");
    cli_page_esc(&r->page, runs);
    cli_page_put(&r->page,
                 "</h1>\n<p>Each run against the newest ended run before it of the same kind and "
                 "configuration (its options but where results go, and its optimizer), from results.db.</p>\n");
}

/* The table of contents. */
static void page_nav(struct cli_report *r)
{
    cli_page_put(&r->page, "<nav>");
    for (size_t i = 0; i < NSECTIONS; i++)
        cli_page_putf(&r->page, "<a href=\"#%s\">%s</a>", sections[i].id, sections[i].title);
    cli_page_put(&r->page, "</nav>\n");
}

/* The whole page. */
void cli_report_write_page(struct cli_report *r)
{
    page_open(r);
    cli_report_verdict(r);
    page_nav(r);
    for (size_t i = 0; i < NSECTIONS; i++)
        write_section(r, &sections[i]);
    cli_page_put(&r->page, "</body></html>\n");
}
