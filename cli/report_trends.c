/* cli/report_trends.c — the trends: each headline figure of a run over the last runs of its configuration (at most
 * CLI_REPORT_TREND, oldest first), as a small inline SVG chart with the figure's latest value, least and most. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* A headline figure: the kinds of run it is for (NULL: every kind), its name, the query of its value (one real, NULL
 * when the run has none; over ?1 a run, ?2 the run of the configuration before it, 0 for the first), and whether it
 * needs that earlier run (a change). */
struct figure {
    const char *kinds, *name, *sql;
    bool compared;
};

/* The figures, in the order they show. */
static const struct figure figures[] = {
    {"check", "decisions fired",
     "SELECT sum(ds.fired) FROM reports rep JOIN decision_sets ds ON ds.id = rep.set_id WHERE rep.run_id = ?1", false},
    {"check", "decision changes", "SELECT count(*) FROM changes_cache WHERE run_before = ?2 AND run_after = ?1",
     true},
    {"prove", "obligations proved",
     "SELECT sum(verdict = 'proved') FROM proofs WHERE run_id = ?1 AND solver = 'z3'"
     " AND obligation NOT LIKE '% without %'",
     false},
    {"prove", "guard atoms needed",
     "SELECT sum(verdict <> 'proved') FROM proofs WHERE run_id = ?1 AND solver = 'z3' AND obligation LIKE '% without "
     "%'",
     false},
    {"fuzz", "exec/s",
     "SELECT sum(executions) / sum(seconds) FROM fuzz_stats WHERE run_id = ?1 HAVING sum(seconds) > 0", false},
    {"check tolerance", "worst error / bound", "SELECT max(ratio) FROM tolerances WHERE run_id = ?1", false},
    {"crosscheck", "worst NMSE", "SELECT max(nmse) FROM crosschecks WHERE run_id = ?1", false},
    {NULL, "run time (s)", "SELECT (julianday(ended) - julianday(started)) * 86400 FROM runs WHERE id = ?1", false},
};

/* The chart's size and inner margins, in pixels. */
enum { SPARK_W = 220, SPARK_H = 56, SPARK_LEFT = 4, SPARK_RIGHT = 8, SPARK_TOP = 12, SPARK_BOTTOM = 6 };

/* Keep a one-value query's answer as a real (NULL: NAN). */
static void keep_real(const char *const *cols, int n, void *ctx)
{
    *(double *)ctx = n > 0 && cols[0] ? cli_report_real(cols[0]) : NAN;
}

/* A value as the page shows it: an integer as such, else three significant digits. */
static void value_text(double v, char *out, size_t cap)
{
    if (isnan(v))
        snprintf(out, cap, "—");
    else if (v == floor(v) && fabs(v) < 1e15)
        snprintf(out, cap, "%.0f", v);
    else
        snprintf(out, cap, "%.3g", v);
}

/* The chart's y of a value between the least and the most. */
static double spark_y(double v, double lo, double hi)
{
    double inner = SPARK_H - SPARK_TOP - SPARK_BOTTOM;
    return hi > lo ? SPARK_TOP + (hi - v) / (hi - lo) * inner : SPARK_TOP + inner / 2;
}

/* The chart's x of the i-th of n runs. */
static double spark_x(int i, int n)
{
    double inner = SPARK_W - SPARK_LEFT - SPARK_RIGHT;
    return n > 1 ? SPARK_LEFT + i * inner / (n - 1) : SPARK_LEFT + inner / 2;
}

/* One figure's chart: a line through its values (a run without one leaves a gap), a dot a run, the latest marked. */
static void spark(struct cli_page *p, const struct figure *f, const struct cli_report_run *run, const double *v)
{
    int n = run->nhistory;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++)
        if (!isnan(v[i])) {
            lo = v[i] < lo ? v[i] : lo;
            hi = v[i] > hi ? v[i] : hi;
        }
    char last[32], least[32], most[32];
    value_text(v[n - 1], last, sizeof last);
    value_text(lo, least, sizeof least);
    value_text(hi, most, sizeof most);
    cli_page_put(p, "<figure class=\"trend\"><figcaption>");
    cli_page_esc(p, f->name);
    cli_page_putf(p, ": <b>%s</b> in run %lld</figcaption>\n", last, (long long)run->id);
    cli_page_putf(p,
                  "<svg class=\"spark\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                  "viewBox=\"0 0 %d %d\" role=\"img\"><title>",
                  SPARK_W, SPARK_H, SPARK_W, SPARK_H);
    cli_page_esc(p, f->name);
    cli_page_putf(p, " over runs %lld to %lld: least %s, most %s</title>", (long long)run->history[0],
                  (long long)run->id, least, most);
    cli_page_putf(p, "<text x=\"%d\" y=\"9\">%s … %s</text><polyline class=\"line\" points=\"", SPARK_LEFT, least,
                  most);
    for (int i = 0; i < n; i++)
        if (!isnan(v[i]))
            cli_page_putf(p, "%s%.1f,%.1f", i ? " " : "", spark_x(i, n), spark_y(v[i], lo, hi));
    cli_page_put(p, "\"/>");
    for (int i = 0; i < n; i++)
        if (!isnan(v[i])) {
            char t[32];
            value_text(v[i], t, sizeof t);
            cli_page_putf(p,
                          "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%d\"><title>run %lld: %s</title></circle>",
                          i == n - 1 ? "last" : "dot", spark_x(i, n), spark_y(v[i], lo, hi), i == n - 1 ? 3 : 2,
                          (long long)run->history[i], t);
        }
    cli_page_put(p, "</svg></figure>\n");
}

/* A figure's values over the run's history; false when no run has one. */
static bool figure_values(struct cli_report *r, const struct figure *f, const struct cli_report_run *run, double *v)
{
    bool any = false;
    for (int i = 0; i < run->nhistory; i++) {
        v[i] = NAN;
        int64_t params[2] = {run->history[i], i > 0 ? run->history[i - 1] : 0};
        if (!f->compared || i > 0)
            cli_report_query(r, f->sql, params, 2, keep_real, &v[i]);
        any = any || !isnan(v[i]);
    }
    return any;
}

void cli_report_trends(struct cli_report *r, const struct cli_report_run *run)
{
    if (run->nhistory == 1)
        cli_page_putf(&r->page, "<p>Run %lld is the first of its configuration: a point a figure.</p>\n",
                      (long long)run->id);
    else
        cli_page_putf(&r->page, "<p>The last %d runs of this configuration: runs %lld to %lld, the latest dot orange.</p>\n",
                      run->nhistory, (long long)run->history[0], (long long)run->id);
    cli_page_put(&r->page, "<div class=\"trends\">\n");
    for (size_t k = 0; k < sizeof figures / sizeof figures[0]; k++) {
        double v[CLI_REPORT_TREND];
        if (cli_report_kind_in(run->kind, figures[k].kinds) && figure_values(r, &figures[k], run, v))
            spark(&r->page, &figures[k], run, v);
    }
    cli_page_put(&r->page, "</div>\n");
}
