/* cli/report_tolerance.c — each launch class's worst error against its bound: an SVG plot and a table. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* The bound results.db keeps for a row's largest absolute error (NULL in rows written before schema 9). */
#define LARGEST_BOUND "max_abs_bound"

/* Per launch class (the kernel) and backend: comparisons, failures; the worst element (largest error over its
 * bound): its error over its bound and that bound; the largest absolute error, with its own bound where the file
 * keeps it, and the error over bound of its row's worst element (for a lower bound on its own bound where it does
 * not); and the compared run's worst error over its bound. */
static const char tolerance_sql[] =
    "WITH t AS (SELECT run_id, substr(op, instr(op, ' ') + 1) AS kernel, backend,"
    "           coalesce(ratio, CASE WHEN bound > 0 THEN max_abs / bound END, 0) AS r, max_abs, bound, pass,"
    "           " LARGEST_BOUND " AS largest_bound FROM tolerances WHERE run_id IN (?1, ?2)),"
    " worst AS (SELECT kernel, backend, count(*) AS n, sum(pass = 0) AS failed, max(r) AS r, bound"
    "           FROM t WHERE run_id = ?1 GROUP BY kernel, backend),"
    " largest AS (SELECT kernel, backend, max(max_abs) AS max_abs, largest_bound, r"
    "             FROM t WHERE run_id = ?1 GROUP BY kernel, backend),"
    " prev AS (SELECT kernel, backend, max(r) AS worst FROM t WHERE run_id = ?2 GROUP BY kernel, backend)"
    " SELECT w.kernel, w.backend, w.n, w.failed, w.r, w.bound, l.max_abs, l.largest_bound, l.r, p.worst FROM worst w"
    " JOIN largest l ON l.kernel = w.kernel AND l.backend = w.backend"
    " LEFT JOIN prev p ON p.kernel = w.kernel AND p.backend = w.backend ORDER BY w.kernel, w.backend";

/* One launch class's figures: the worst element's error over its bound and its bound; the largest error, its own
 * bound (NAN: not kept) and its row's worst error over bound; the compared run's worst error over bound. */
struct tol_class {
    char *kernel, *backend;
    int64_t n, failed;
    double worst, bound, max_abs, max_abs_bound, max_abs_row_ratio, prev;
    bool has_prev;
};

/* The launch classes read. */
struct tol_classes {
    struct tol_class *c;
    int n, cap;
};

/* Keep one launch class's row. */
static void keep_class(const char *const *cols, int n, void *ctx)
{
    struct tol_classes *t = ctx;
    (void)n;
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 32;
        t->c = realloc(t->c, sizeof *t->c * (size_t)t->cap);
        if (!t->c)
            abort();
    }
    struct tol_class *c = &t->c[t->n++];
    c->kernel = strdup(cols[0] ? cols[0] : "");
    c->backend = strdup(cols[1] ? cols[1] : "");
    if (!c->kernel || !c->backend)
        abort();
    c->n = cli_report_int(cols[2]);
    c->failed = cli_report_int(cols[3]);
    c->worst = cli_report_real(cols[4]);
    c->bound = cli_report_real(cols[5]);
    c->max_abs = cli_report_real(cols[6]);
    c->max_abs_bound = cols[7] ? cli_report_real(cols[7]) : NAN;
    c->max_abs_row_ratio = cli_report_real(cols[8]);
    c->has_prev = cols[9] != NULL;
    c->prev = cli_report_real(cols[9]);
}

/* The plot's frame: the labels' width, the axis's decades (10^LO to 10^HI), its pixels, a row's height. */
enum { PLOT_LABELS = 330, PLOT_LO = -9, PLOT_HI = 2, PLOT_WIDTH = 600, PLOT_ROW = 18, PLOT_TOP = 28 };

/* The x of an error over its bound on the plot's log axis (clamped to its ends). */
static double plot_x(double ratio)
{
    double d = ratio > 0 ? log10(ratio) : PLOT_LO;
    d = d < PLOT_LO ? PLOT_LO : d > PLOT_HI ? PLOT_HI : d;
    return PLOT_LABELS + (d - PLOT_LO) * PLOT_WIDTH / (PLOT_HI - PLOT_LO);
}

/* The plot's axis: a tick a decade, and the bound (error over bound = 1) as a dashed line. */
static void plot_axis(struct cli_page *p, int height)
{
    for (int d = PLOT_LO; d <= PLOT_HI; d++) {
        double x = plot_x(pow(10, d));
        cli_page_putf(p, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" class=\"tick\"/>", x, PLOT_TOP - 4, x,
                      height - 16);
        cli_page_putf(p, "<text x=\"%.1f\" y=\"%d\" class=\"axis\">1e%d</text>\n", x, height - 4, d);
    }
    double one = plot_x(1);
    cli_page_putf(p, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" class=\"bound\"/>", one, PLOT_TOP - 14, one,
                  height - 16);
    cli_page_putf(p, "<text x=\"%.1f\" y=\"%d\" class=\"axis\">bound</text>\n", one, PLOT_TOP - 16);
}

/* One launch class on the plot: its label, a bar to its worst error over its bound, a ring at the previous run's. */
static void plot_class(struct cli_page *p, const struct tol_class *c, int i)
{
    int y = PLOT_TOP + i * PLOT_ROW;
    cli_page_putf(p, "<g><title>");
    cli_page_esc(p, c->kernel);
    cli_page_put(p, " (");
    cli_page_esc(p, c->backend);
    cli_page_putf(p, "): the worst element's error %.3g against its own bound %.3g (%.3g of it) over %lld comparisons",
                  c->worst * c->bound, c->bound, c->worst, (long long)c->n);
    if (c->has_prev)
        cli_page_putf(p, "; the compared run's worst %.3g of its bound", c->prev);
    cli_page_putf(p, "</title><text x=\"%d\" y=\"%d\" class=\"label\">", PLOT_LABELS - 6, y + 11);
    cli_page_esc(p, c->kernel);
    cli_page_put(p, " · ");
    cli_page_esc(p, c->backend);
    double width = plot_x(c->worst) - PLOT_LABELS;
    cli_page_putf(p, "</text><rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"12\" class=\"%s\"/>", PLOT_LABELS, y + 2,
                  width < 2 ? 2 : width, c->worst <= 1 ? "within" : "beyond"); /* an exact class keeps a sliver */
    if (c->has_prev)
        cli_page_putf(p, "<circle cx=\"%.1f\" cy=\"%d\" r=\"4\" class=\"prev\"/>", plot_x(c->prev), y + 8);
    cli_page_put(p, "</g>\n");
}

/* Every launch class's worst error over its bound as an SVG plot, then as a table. */
static void tolerance_plot(struct cli_report *r, const struct cli_report_run *run, const struct tol_classes *t)
{
    int height = PLOT_TOP + t->n * PLOT_ROW + 24;
    cli_page_putf(&r->page,
                  "<svg id=\"tolerance-plot-%lld\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                  "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n",
                  (long long)run->id, PLOT_LABELS + PLOT_WIDTH + 30, height, PLOT_LABELS + PLOT_WIDTH + 30, height);
    cli_page_putf(&r->page, "<title>Worst error over its bound per launch class in run %lld</title>\n",
                  (long long)run->id);
    plot_axis(&r->page, height);
    for (int i = 0; i < t->n; i++)
        plot_class(&r->page, &t->c[i], i);
    cli_page_put(&r->page, "</svg>\n");
}

/* The largest error's own bound as a cell: the bound results.db keeps, or where it keeps none (rows before schema
 * 9) the least it can be, labelled: the largest error over its row's worst error over bound. */
static void largest_bound_cell(struct cli_page *p, const struct tol_class *c)
{
    if (!isnan(c->max_abs_bound))
        cli_page_putf(p, "<td>%.3g</td>", c->max_abs_bound);
    else if (c->max_abs_row_ratio > 0)
        cli_page_putf(p,
                      "<td title=\"not kept in this results file (before schema 9): at least the largest error over "
                      "its row's worst error / bound\">≥ %.3g (not kept)</td>",
                      c->max_abs / c->max_abs_row_ratio);
    else
        cli_page_put(p, "<td>—</td>");
}

/* The launch classes as a table: the worst element's error beside its own bound, and the largest error beside its
 * own bound, each labelled. */
static void tolerance_table(struct cli_report *r, const struct cli_report_run *run, const struct tol_classes *t)
{
    cli_page_putf(&r->page,
                  "<table id=\"tolerance-%lld\"><thead><tr><th rowspan=\"2\">launch class</th>"
                  "<th rowspan=\"2\">backend</th><th rowspan=\"2\">comparisons</th>"
                  "<th rowspan=\"2\">outside bound</th><th colspan=\"3\">the worst element (error / bound)"
                  "</th><th colspan=\"2\">the largest error</th><th rowspan=\"2\">error / bound before"
                  "</th></tr>\n<tr><th>its error</th><th>its own bound</th><th>error / bound</th>"
                  "<th>error</th><th>its own bound</th></tr></thead><tbody>\n",
                  (long long)run->id);
    for (int i = 0; i < t->n; i++) {
        const struct tol_class *c = &t->c[i];
        cli_page_put(&r->page, c->failed ? "<tr class=\"bad\"><td>" : "<tr><td>");
        cli_page_esc(&r->page, c->kernel);
        cli_page_put(&r->page, "</td><td>");
        cli_page_esc(&r->page, c->backend);
        cli_page_putf(&r->page, "</td><td>%lld</td><td>%lld</td><td>%.3g</td><td>%.3g</td><td>%.3g</td><td>%.3g</td>",
                      (long long)c->n, (long long)c->failed, c->worst * c->bound, c->bound, c->worst, c->max_abs);
        largest_bound_cell(&r->page, c);
        if (c->has_prev)
            cli_page_putf(&r->page, "<td>%.3g</td></tr>\n", c->prev);
        else
            cli_page_put(&r->page, "<td>—</td></tr>\n");
    }
    cli_page_put(&r->page, "</tbody></table>\n");
}

/* The run's tolerance results per launch class against their bounds (plot and table), and its end-to-end steps. */
void cli_report_tolerance(struct cli_report *r, const struct cli_report_run *run)
{
    struct tol_classes t = {NULL, 0, 0};
    int64_t params[2] = {run->id, run->prev};
    cli_report_query(r, tolerance_sql, params, 2, keep_class, &t);
    int64_t steps = cli_report_number(r, "SELECT count(*) FROM tolerance_steps WHERE run_id = ?1", run);
    int64_t agree =
        cli_report_number(r, "SELECT coalesce(sum(top1_agree), 0) FROM tolerance_steps WHERE run_id = ?1", run);
    int64_t rows = cli_report_number(r, "SELECT coalesce(sum(rows), 0) FROM tolerance_steps WHERE run_id = ?1", run);
    cli_page_putf(&r->page,
                  "<p>Each bar reaches a launch class's worst error over its own bound in run %lld (the dashed "
                  "line is the bound",
                  (long long)run->id);
    if (run->prev)
        cli_page_putf(&r->page, "; a ring marks the worst in run %lld, the compared run", (long long)run->prev);
    cli_page_putf(&r->page, "). End to end: %lld step%s, the top-1 token agreeing on %lld of %lld rows.</p>\n",
                  (long long)steps, steps == 1 ? "" : "s", (long long)agree, (long long)rows);
    if (t.n == 0)
        cli_page_putf(&r->page, "<p class=\"empty\">run %lld held no launch to a bound.</p>\n", (long long)run->id);
    else {
        tolerance_plot(r, run, &t);
        tolerance_table(r, run, &t);
    }
    for (int i = 0; i < t.n; i++) {
        free(t.c[i].kernel);
        free(t.c[i].backend);
    }
    free(t.c);
}
