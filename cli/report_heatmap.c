/* cli/report_heatmap.c — the rule × graph heat map of a run's firings. */
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* The graphs (name and mode) a run reported on, in order. */
static const char heat_graphs_sql[] =
    "SELECT g.name, coalesce(g.mode, '') FROM reports rep JOIN graphs g ON g.id = rep.graph_id WHERE rep.run_id = ?1"
    " GROUP BY g.name, g.mode ORDER BY g.name, g.mode";

/* Every rule of the run (its steps in order, then any other rule its decisions name) by every graph: the firings
 * summed over the shims. */
static const char heat_cells_sql[] =
    "WITH gs AS (SELECT DISTINCT g.name, g.mode FROM reports rep JOIN graphs g ON g.id = rep.graph_id"
    "            WHERE rep.run_id = ?1),"
    " fired AS (SELECT g.name, g.mode, sr.rule, sum(sr.fired) AS n FROM reports rep"
    "           JOIN graphs g ON g.id = rep.graph_id JOIN set_rules sr ON sr.set_id = rep.set_id"
    "           WHERE rep.run_id = ?1 GROUP BY g.name, g.mode, sr.rule),"
    " rules AS (SELECT rule, min(seq) AS seq FROM (SELECT name AS rule, seq FROM steps WHERE run_id = ?1"
    "           UNION ALL SELECT sr.rule, 1000000 FROM reports rep JOIN set_rules sr ON sr.set_id = rep.set_id"
    "           WHERE rep.run_id = ?1) GROUP BY rule),"
    " earlier AS (SELECT g.name, g.mode, sr.rule, sum(sr.fired) AS n FROM reports rep"
    "           JOIN graphs g ON g.id = rep.graph_id JOIN set_rules sr ON sr.set_id = rep.set_id"
    "           WHERE rep.run_id = ?2 GROUP BY g.name, g.mode, sr.rule),"
    " earlier_graphs AS (SELECT DISTINCT g.name, g.mode FROM reports rep JOIN graphs g ON g.id = rep.graph_id"
    "           WHERE rep.run_id = ?2)"
    " SELECT r.rule, gs.name, coalesce(gs.mode, ''), coalesce(f.n, 0),"
    " CASE WHEN EXISTS (SELECT 1 FROM earlier_graphs bg WHERE bg.name = gs.name AND bg.mode IS gs.mode)"
    " THEN coalesce(b.n, 0) END FROM rules r CROSS JOIN gs"
    " LEFT JOIN fired f ON f.rule = r.rule AND f.name = gs.name AND f.mode IS gs.mode"
    " LEFT JOIN earlier b ON b.rule = r.rule AND b.name = gs.name AND b.mode IS gs.mode"
    " ORDER BY r.seq, r.rule, gs.name, gs.mode";

/* The shade of a count of firings: 0 for none, then one more for each doubling (1, 2-3, 4-7, ... 64 and more). */
static int heat_level(int64_t n)
{
    int level = 0;
    while (n > 0 && level < 7) {
        level++;
        n >>= 1;
    }
    return n > 0 ? 7 : level;
}

/* The heat map being written: the rule of the row open, its total so far. */
struct heat {
    struct cli_page *page;
    char *rule; /* NULL before the first row */
    int64_t total, rows, moved;
};

/* Close the heat map's open row with its total. */
static void heat_row_end(struct heat *h)
{
    if (h->rule)
        cli_page_putf(h->page, "<td class=\"total%s\">%lld</td></tr>\n", h->total ? "" : " never", (long long)h->total);
}

/* Write a heat map column heading: a graph and its mode. */
static void heat_head(const char *const *cols, int n, void *ctx)
{
    struct cli_page *p = ctx;
    (void)n;
    cli_page_put(p, "<th class=\"graph\"><span>");
    cli_page_esc(p, cols[0]);
    cli_page_put(p, " ");
    cli_page_esc(p, cols[1]);
    cli_page_put(p, "</span></th>");
}

/* Write one cell of the heat map (a row's heading first when a new rule starts). */
static void heat_cell(const char *const *cols, int n, void *ctx)
{
    struct heat *h = ctx;
    (void)n;
    if (!h->rule || strcmp(h->rule, cols[0]) != 0) {
        heat_row_end(h);
        free(h->rule);
        if (!(h->rule = strdup(cols[0])))
            abort();
        h->total = 0;
        h->rows++;
        cli_page_put(h->page, "<tr><th class=\"rule\">");
        cli_page_esc(h->page, cols[0]);
        cli_page_put(h->page, "</th>");
    }
    int64_t fired = cli_report_int(cols[3]);
    h->total += fired;
    bool moved = n > 4 && cols[4] && cli_report_int(cols[4]) != fired;
    cli_page_putf(h->page, "<td class=\"h%d%s\" title=\"", heat_level(fired), moved ? " moved" : "");
    cli_page_esc(h->page, cols[0]);
    cli_page_put(h->page, " on ");
    cli_page_esc(h->page, cols[1]);
    cli_page_put(h->page, " ");
    cli_page_esc(h->page, cols[2]);
    cli_page_putf(h->page, ": %lld fired", (long long)fired);
    if (moved)
        cli_page_putf(h->page, ", %lld in the compared run", (long long)cli_report_int(cols[4]));
    cli_page_putf(h->page, "\">%s</td>", fired ? cols[3] : "");
    h->moved += moved;
}

/* The rule × graph heat map of a run's firings (summed over its shims), with a legend and each rule's total. */
void cli_report_heatmap(struct cli_report *r, const struct cli_report_run *run)
{
    int64_t shims = cli_report_number(r, "SELECT count(DISTINCT shim_id) FROM reports WHERE run_id = ?1", run);
    cli_page_putf(&r->page,
                  "<p>Firings of each rule on each graph in run %lld, summed over its %lld shim%s; a rule with none "
                  "anywhere is marked.</p>\n<p class=\"legend\">",
                  (long long)run->id, (long long)shims, shims == 1 ? "" : "s");
    static const char *const legend[] = {"0", "1", "2–3", "4–7", "8–15", "16–31", "32–63", "64+"};
    for (int i = 0; i < 8; i++)
        cli_page_putf(&r->page, "<span class=\"h%d\">%s</span>", i, legend[i]);
    if (run->prev)
        cli_page_putf(&r->page,
                      " <span class=\"h0 moved\">n</span> a framed cell: its count changed since run "
                      "%lld, the compared run",
                      (long long)run->prev);
    cli_page_putf(&r->page,
                  "</p>\n<div class=\"scroll\"><table id=\"heatmap-%lld\" class=\"heat\"><thead><tr><th>rule</th>",
                  (long long)run->id);
    int64_t params[2] = {run->id, run->prev};
    cli_report_query(r, heat_graphs_sql, params, 1, heat_head, &r->page);
    cli_page_put(&r->page, "<th>total</th></tr></thead><tbody>\n");
    struct heat h = {&r->page, NULL, 0, 0, 0};
    cli_report_query(r, heat_cells_sql, params, 2, heat_cell, &h);
    heat_row_end(&h);
    free(h.rule);
    cli_page_put(&r->page, "</tbody></table></div>\n");
    if (run->prev)
        cli_page_putf(&r->page, "<p>%lld cell%s changed since run %lld.</p>\n", (long long)h.moved,
                      h.moved == 1 ? "" : "s", (long long)run->prev);
}
