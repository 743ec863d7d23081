/* cli/cmd_report.c — `fusecheck report`: one self-contained HTML page of runs in results.db, each against the run
 * before it of its kind. The page holds the runs' identities, a rule × graph heat map of firings, the decision,
 * digest and graph changes since the previous run, the comparisons that failed, the proofs with their verdicts and
 * times, the fuzz figures and the findings first seen, and each launch class's worst error against its bound as an
 * SVG plot. Inline CSS and SVG only: no script, nothing fetched, so it renders offline. Every section that has
 * nothing says why. The bytes depend on the file's content alone (every time shown is one the file holds). The file
 * is only read. */
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "db/db.h"

/* The most runs one page covers, and the most rows a table of changes or findings shows. */
#define REPORT_MAX_RUNS 16
#define REPORT_ROWS 200

/* The page as it grows. */
struct page {
    char *s;
    size_t len, cap;
};

/* A run the page covers: its id, kind, and the newest ended run of that kind before it (0: none). */
struct run {
    int64_t id, prev;
    char kind[32];
};

/* The report being made: the file read, the runs covered, the page, the first error met. */
struct report {
    struct db *db;
    struct run runs[REPORT_MAX_RUNS];
    int nruns;
    struct page page;
    int failed;
    char err[DB_ERR_LEN];
};

/* Append len bytes to the page. */
static void put_n(struct page *p, const char *s, size_t len)
{
    if (p->len + len + 1 > p->cap) {
        size_t cap = p->cap ? p->cap : 1 << 16;
        while (cap < p->len + len + 1)
            cap *= 2;
        char *grown = realloc(p->s, cap);
        if (!grown)
            abort();
        p->s = grown;
        p->cap = cap;
    }
    memcpy(p->s + p->len, s, len);
    p->len += len;
    p->s[p->len] = '\0';
}

/* Append text to the page as it is (markup). */
static void put(struct page *p, const char *s) { put_n(p, s, strlen(s)); }

/* Append formatted markup to the page (every value in it a number or a fixed word: nothing to escape). */
static void putf(struct page *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct page *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    char *buf = malloc((size_t)n + 1);
    if (!buf)
        abort();
    va_start(ap, fmt);
    vsnprintf(buf, (size_t)n + 1, fmt, ap);
    va_end(ap);
    put_n(p, buf, (size_t)n);
    free(buf);
}

/* Append text to the page escaped for HTML (and SVG): NULL appends nothing. */
static void esc(struct page *p, const char *s)
{
    static const struct {
        char c;
        const char *entity;
    } entities[] = {{'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"}, {'\'', "&#39;"}};
    for (; s && *s; s++) {
        size_t i = 0;
        while (i < sizeof entities / sizeof entities[0] && entities[i].c != *s)
            i++;
        if (i < sizeof entities / sizeof entities[0])
            put(p, entities[i].entity);
        else
            put_n(p, s, 1);
    }
}

/* Append formatted text to the page escaped for HTML (a sentence whose values come from the file). */
static void escf(struct page *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void escf(struct page *p, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    esc(p, buf);
}

/* Run a read query with the given parameters, each row to fn; the first error is kept. */
static void query(struct report *r, const char *sql, const int64_t *params, int n, db_row_fn fn, void *ctx)
{
    char err[DB_ERR_LEN];
    if (!r->failed && db_select(r->db, sql, params, n, fn, ctx, err)) {
        r->failed = 1;
        snprintf(r->err, sizeof r->err, "%s", err);
    }
}

/* A column as an integer (NULL: 0). */
static int64_t col_int(const char *v) { return v ? strtoll(v, NULL, 10) : 0; }

/* A column as a real (NULL: 0). */
static double col_real(const char *v) { return v ? strtod(v, NULL) : 0; }

/* Keep a one-value query's answer as a number (NULL: 0). */
static void take_number(const char *const *cols, int n, void *ctx)
{
    *(int64_t *)ctx = n > 0 ? col_int(cols[0]) : 0;
}

/* The integer a one-value query answers for one run and its previous one (0 when none or NULL). */
static int64_t number(struct report *r, const char *sql, const struct run *run)
{
    int64_t params[2] = {run->id, run->prev}, v = 0;
    query(r, sql, params, 2, take_number, &v);
    return v;
}

/* ── Tables from queries ─────────────────────────────────────────────────────────────────────────────────── */

/* A table read from one query over (?1 this run, ?2 the previous one): its id (the run's id is added to it), the
 * columns' headings (NULL-ended; a query column past them names the row's CSS class), what to say when it has no
 * rows, and the rows shown (0: every one; past that they are counted). */
struct table {
    const char *id;
    const char *sql;
    const char *heads[DB_SELECT_COLUMNS];
    const char *none;
    int cap;
};

/* A table being written: its spec, the run it is of (its id suffixes the table's), rows seen, the page. */
struct table_state {
    const struct table *t;
    int64_t run, rows;
    struct page *page;
};

/* The number of headings of a table. */
static int heads_of(const struct table *t)
{
    int n = 0;
    while (n < DB_SELECT_COLUMNS && t->heads[n])
        n++;
    return n;
}

/* Write one row of a table (its opening first), or only count it past the cap. */
static void table_row(const char *const *cols, int n, void *ctx)
{
    struct table_state *s = ctx;
    int shown = heads_of(s->t);
    if (s->rows++ == 0) {
        putf(s->page, "<table id=\"%s-%lld\"><thead><tr>", s->t->id, (long long)s->run);
        for (int i = 0; i < shown; i++) {
            put(s->page, "<th>");
            esc(s->page, s->t->heads[i]);
            put(s->page, "</th>");
        }
        put(s->page, "</tr></thead><tbody>\n");
    }
    if (s->t->cap && s->rows > s->t->cap)
        return;
    put(s->page, "<tr");
    if (n > shown && cols[shown]) {
        put(s->page, " class=\"");
        esc(s->page, cols[shown]);
        put(s->page, "\"");
    }
    put(s->page, ">");
    for (int i = 0; i < shown && i < n; i++) {
        put(s->page, "<td>");
        esc(s->page, cols[i]);
        put(s->page, "</td>");
    }
    put(s->page, "</tr>\n");
}

/* Write a table over this run and its previous one, or the sentence saying it has no rows. Its row count. */
static int64_t table(struct report *r, const struct table *t, const struct run *run)
{
    struct table_state s = {t, run->id, 0, &r->page};
    int64_t params[2] = {run->id, run->prev};
    query(r, t->sql, params, 2, table_row, &s);
    if (s.rows == 0) {
        put(&r->page, "<p class=\"empty\">");
        esc(&r->page, t->none);
        put(&r->page, "</p>\n");
        return 0;
    }
    put(&r->page, "</tbody></table>\n");
    if (t->cap && s.rows > t->cap)
        putf(&r->page, "<p class=\"more\">… and %lld more rows (the query in docs/results-db.md lists them all)</p>\n",
             (long long)(s.rows - t->cap));
    return s.rows;
}

/* ── The run's identity ──────────────────────────────────────────────────────────────────────────────────── */

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
    {"merged from", "origin"},
    {"reports", "(SELECT count(*) FROM reports x WHERE x.run_id = r.id)"},
    {"comparisons", "(SELECT count(*) FROM diffs x WHERE x.run_id = r.id)"},
    {"proof verdicts", "(SELECT count(*) FROM proofs x WHERE x.run_id = r.id)"},
    {"fuzz harnesses", "(SELECT count(*) FROM fuzz_stats x WHERE x.run_id = r.id)"},
    {"tolerance sets", "(SELECT count(*) FROM run_tolerances x WHERE x.run_id = r.id)"},
};
#define NRUN_FIELDS (sizeof run_fields / sizeof run_fields[0])

/* A field of a run, as a table cell. */
static void run_cell(struct page *p, const char *v)
{
    put(p, "<td>");
    esc(p, v ? v : "—");
    put(p, "</td>");
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
    int slot = col_int(cols[0]) == rr->id ? 0 : 1;
    for (int i = 0; i < n && i < (int)NRUN_FIELDS; i++)
        rr->v[slot][i] = cols[i] ? strdup(cols[i]) : NULL;
}

/* The run's identity beside the previous run's, field by field. */
static void render_run(struct report *r, const struct run *run)
{
    char sql[2048] = "SELECT ";
    for (size_t i = 0; i < NRUN_FIELDS; i++)
        snprintf(sql + strlen(sql), sizeof sql - strlen(sql), "%s%s", i ? ", " : "", run_fields[i].sql);
    snprintf(sql + strlen(sql), sizeof sql - strlen(sql), " FROM runs r WHERE r.id IN (?1, ?2) ORDER BY r.id");
    struct run_rows rr = {{{NULL}}, run->id};
    int64_t params[2] = {run->id, run->prev};
    query(r, sql, params, 2, keep_run_row, &rr);
    if (!run->prev) {
        put(&r->page, "<p>");
        escf(&r->page, "No %s run ended before run %lld in this file.", run->kind, (long long)run->id);
        put(&r->page, "</p>\n");
    }
    putf(&r->page, "<table id=\"run-%lld\" class=\"run\"><thead><tr><th></th><th>this run</th>", (long long)run->id);
    if (run->prev) {
        put(&r->page, "<th>");
        escf(&r->page, "previous %s run", run->kind);
        put(&r->page, "</th>");
    }
    put(&r->page, "</tr></thead><tbody>\n");
    for (size_t i = 0; i < NRUN_FIELDS; i++) {
        putf(&r->page, "<tr><th>%s</th>", run_fields[i].label);
        for (int s = 0; s < (run->prev ? 2 : 1); s++)
            run_cell(&r->page, rr.v[s][i]);
        put(&r->page, "</tr>\n");
    }
    put(&r->page, "</tbody></table>\n");
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < NRUN_FIELDS; i++)
            free(rr.v[s][i]);
}

/* ── The heat map ────────────────────────────────────────────────────────────────────────────────────────── */

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
    "           WHERE rep.run_id = ?1) GROUP BY rule)"
    " SELECT r.rule, gs.name, coalesce(gs.mode, ''), coalesce(f.n, 0) FROM rules r CROSS JOIN gs"
    " LEFT JOIN fired f ON f.rule = r.rule AND f.name = gs.name AND f.mode IS gs.mode"
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
    struct page *page;
    char *rule; /* NULL before the first row */
    int64_t total, rows;
};

/* Close the heat map's open row with its total. */
static void heat_row_end(struct heat *h)
{
    if (h->rule)
        putf(h->page, "<td class=\"total%s\">%lld</td></tr>\n", h->total ? "" : " never", (long long)h->total);
}

/* Write a heat map column heading: a graph and its mode. */
static void heat_head(const char *const *cols, int n, void *ctx)
{
    struct page *p = ctx;
    (void)n;
    put(p, "<th class=\"graph\"><span>");
    esc(p, cols[0]);
    put(p, " ");
    esc(p, cols[1]);
    put(p, "</span></th>");
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
        put(h->page, "<tr><th class=\"rule\">");
        esc(h->page, cols[0]);
        put(h->page, "</th>");
    }
    int64_t fired = col_int(cols[3]);
    h->total += fired;
    putf(h->page, "<td class=\"h%d\" title=\"", heat_level(fired));
    esc(h->page, cols[0]);
    put(h->page, " on ");
    esc(h->page, cols[1]);
    put(h->page, " ");
    esc(h->page, cols[2]);
    putf(h->page, ": %lld fired\">%s</td>", (long long)fired, fired ? cols[3] : "");
}

/* The rule × graph heat map of a run's firings (summed over its shims), with a legend and each rule's total. */
static void render_heatmap(struct report *r, const struct run *run)
{
    int64_t shims = number(r, "SELECT count(DISTINCT shim_id) FROM reports WHERE run_id = ?1", run);
    putf(&r->page, "<p>Firings of each rule on each graph in run %lld, summed over its %lld shim%s; a rule with none "
                   "anywhere is marked.</p>\n<p class=\"legend\">",
         (long long)run->id, (long long)shims, shims == 1 ? "" : "s");
    static const char *const legend[] = {"0", "1", "2–3", "4–7", "8–15", "16–31", "32–63", "64+"};
    for (int i = 0; i < 8; i++)
        putf(&r->page, "<span class=\"h%d\">%s</span>", i, legend[i]);
    putf(&r->page, "</p>\n<div class=\"scroll\"><table id=\"heatmap-%lld\" class=\"heat\"><thead><tr><th>rule</th>",
         (long long)run->id);
    int64_t params[1] = {run->id};
    query(r, heat_graphs_sql, params, 1, heat_head, &r->page);
    put(&r->page, "<th>total</th></tr></thead><tbody>\n");
    struct heat h = {&r->page, NULL, 0, 0};
    query(r, heat_cells_sql, params, 1, heat_cell, &h);
    heat_row_end(&h);
    free(h.rule);
    put(&r->page, "</tbody></table></div>\n");
}

/* ── Changes against the previous run ────────────────────────────────────────────────────────────────────── */

/* Each decision made differently, or made by one run only, on a graph and shim both runs reported on. */
static const struct table decision_changes = {
    "decision-changes",
    "SELECT graph, coalesce(mode, ''), shim, rule, class, covers, coalesce(outcome_before, '(none)'),"
    " coalesce(outcome_after, '(none)') FROM decision_changes WHERE run_before = ?2 AND run_after = ?1"
    " ORDER BY graph, mode, shim, rule, covers, outcome_before, outcome_after",
    {"graph", "mode", "shim", "rule", "class", "covers", "before", "after", NULL},
    "no decision changed.",
    REPORT_ROWS,
};

/* Each report whose decisions' digest changed. */
static const struct table digest_changes = {
    "digest-changes",
    "SELECT graph, coalesce(mode, ''), shim, substr(digest_before, 1, 16), substr(digest_after, 1, 16)"
    " FROM digest_changes WHERE run_before = ?2 AND run_after = ?1 ORDER BY graph, mode, shim",
    {"graph", "mode", "shim", "digest before", "digest after", NULL},
    "no report's digest changed.",
    REPORT_ROWS,
};

/* Each graph (name and mode) whose content changed: its reports are not paired. */
static const struct table graph_changes = {
    "graph-changes",
    "SELECT graph, coalesce(mode, ''), ops_before, ops_after, substr(sha256_before, 1, 16), substr(sha256_after, 1, 16)"
    " FROM graph_changes WHERE run_before = ?2 AND run_after = ?1 ORDER BY graph, mode, sha256_before, sha256_after",
    {"graph", "mode", "ops before", "ops after", "sha256 before", "sha256 after", NULL},
    "no graph's content changed.",
    REPORT_ROWS,
};

/* Each step of both runs' tables that fired somewhere in one run and nowhere in the other. */
static const struct table firing_changes = {
    "firing-changes",
    "SELECT rule, 'stopped firing' FROM rules_never_fired WHERE run = ?1"
    " AND rule NOT IN (SELECT rule FROM rules_never_fired WHERE run = ?2)"
    " AND rule IN (SELECT name FROM steps WHERE run_id = ?2)"
    " UNION ALL SELECT rule, 'started firing' FROM rules_never_fired WHERE run = ?2"
    " AND rule NOT IN (SELECT rule FROM rules_never_fired WHERE run = ?1) AND rule IN (SELECT name FROM steps"
    " WHERE run_id = ?1) ORDER BY 2, 1",
    {"rule", "change", NULL},
    "no rule stopped or started firing.",
    0,
};

/* What makes the comparison one of partial results (as `db diff` says it): either run not complete, and each graph
 * and shim the previous run reported on and this one did not (run_pair_status, run_pair_gaps). */
static const struct table partial_pair = {
    "partial",
    "SELECT 'run ' || run_before || ' (the previous)', 'is ' || status_before, 'bad' FROM run_pair_status"
    " WHERE run_before = ?2 AND run_after = ?1 AND status_before <> 'complete'"
    " UNION ALL SELECT 'run ' || run_after || ' (this one)', 'is ' || status_after, 'bad' FROM run_pair_status"
    " WHERE run_before = ?2 AND run_after = ?1 AND status_after <> 'complete'"
    " UNION ALL SELECT what || ' ' || coalesce(graph || ' ' || coalesce(mode, ''), shim),"
    " 'not reported on by this run', 'bad' FROM run_pair_gaps WHERE run_before = ?2 AND run_after = ?1",
    {"what", "partial", NULL},
    "both runs are complete, and this one reported on every graph and shim the previous one did.",
    REPORT_ROWS,
};

/* The decision, digest and graph changes from the previous run of the kind to this one. */
/* This run against the latest run of each other optimizer (another name or command) that reported on something:
 * their disagreements (optimizer_disagreements: rule, class, covers, outcome and code, on the same graph by content
 * and shim) counted per rule. */
static const struct table optimizer_disagreements = {
    "optimizer-disagreements",
    "WITH me AS (SELECT optimizer_name AS name, optimizer_command AS command FROM runs WHERE id = ?1),"
    " other AS (SELECT max(r.id) AS id FROM runs r, me WHERE r.id <> ?1"
    "           AND (r.optimizer_name <> me.name OR r.optimizer_command IS NOT me.command)"
    "           AND EXISTS (SELECT 1 FROM reports x WHERE x.run_id = r.id)"
    "           GROUP BY r.optimizer_name, r.optimizer_command),"
    " d AS (SELECT * FROM optimizer_disagreements WHERE run_after = ?1 AND run_before IN (SELECT id FROM other)"
    "       UNION ALL"
    "       SELECT * FROM optimizer_disagreements WHERE run_before = ?1 AND run_after IN (SELECT id FROM other))"
    " SELECT optimizer_before || ' (run ' || run_before || ')', optimizer_after || ' (run ' || run_after || ')', rule,"
    " count(*), 'bad' FROM d GROUP BY run_before, run_after, rule ORDER BY run_before, run_after, rule",
    {"optimizer", "other optimizer", "rule", "decisions that differ", NULL},
    "no disagreement with the latest run of another optimizer (or no other optimizer's run in this file).",
    0,
};

/* Whether the file holds runs of more than one optimizer. */
static bool several_optimizers(struct report *r, const struct run *run)
{
    return number(r, "SELECT count(*) FROM (SELECT DISTINCT optimizer_name, coalesce(optimizer_command, '') FROM runs)",
                  run) > 1;
}

static void render_changes(struct report *r, const struct run *run)
{
    if (several_optimizers(r, run)) {
        put(&r->page, "<h4>Disagreements with other optimizers (per rule)</h4>\n");
        table(r, &optimizer_disagreements, run);
    }
    if (!run->prev) {
        put(&r->page, "<p class=\"empty\">");
        escf(&r->page, "run %lld is the first %s run in this file: there is no earlier one to compare it with.",
             (long long)run->id, run->kind);
        put(&r->page, "</p>\n");
        return;
    }
    int64_t common = 0;
    char err[DB_ERR_LEN];
    if (!r->failed && db_runs_common(r->db, run->id, run->prev, &common, err)) {
        r->failed = 1;
        snprintf(r->err, sizeof r->err, "%s", err);
    }
    putf(&r->page, "<p>From run %lld to run %lld: %lld report%s of the same graph (by content) and shim in both.</p>\n",
         (long long)run->prev, (long long)run->id, (long long)common, common == 1 ? "" : "s");
    put(&r->page, "<h4>Partial results (a run not complete, or graphs and shims this run lacks)</h4>\n");
    table(r, &partial_pair, run);
    put(&r->page, "<h4>Graphs whose content changed (their reports are not compared)</h4>\n");
    table(r, &graph_changes, run);
    if (common == 0) {
        putf(&r->page, "<p class=\"empty\">runs %lld and %lld share no graph and shim: their decisions are not "
                       "compared.</p>\n",
             (long long)run->prev, (long long)run->id);
        return;
    }
    put(&r->page, "<h4>Decision changes</h4>\n");
    table(r, &decision_changes, run);
    put(&r->page, "<h4>Digest changes</h4>\n");
    table(r, &digest_changes, run);
    put(&r->page, "<h4>Rules that stopped or started firing</h4>\n");
    table(r, &firing_changes, run);
}

/* ── Comparisons and failures ────────────────────────────────────────────────────────────────────────────── */

/* The comparisons of each kind the run made, and how many failed. */
static const struct table comparison_counts = {
    "comparisons",
    "SELECT kind, count(*), sum(identical = 0), CASE WHEN sum(identical = 0) > 0 THEN 'bad' END FROM diffs"
    " WHERE run_id = ?1 GROUP BY kind ORDER BY kind",
    {"comparison", "made", "failed", NULL},
    "no comparison was made.",
    0,
};

/* Each comparison that failed: where, and why. */
static const struct table mismatches = {
    "mismatches",
    "SELECT graph, coalesce(mode, ''), shim, kind, coalesce(tensor, ''), coalesce(first_index, ''),"
    " coalesce(reason, '') FROM diff_mismatches WHERE run = ?1 ORDER BY graph, mode, shim, kind",
    {"graph", "mode", "shim", "comparison", "tensor", "index", "reason", NULL},
    "every comparison passed.",
    REPORT_ROWS,
};

/* Each part of the run that could not be checked, and why. */
static const struct table failures = {
    "failures",
    "SELECT coalesce(graph, ''), coalesce(mode, ''), coalesce(shim, ''), stage, reason FROM failures"
    " WHERE run_id = ?1 ORDER BY id",
    {"graph", "mode", "shim", "stage", "reason", NULL},
    "every graph could be checked.",
    REPORT_ROWS,
};

/* The comparisons the run made, those that failed, and what could not be checked. */
static void render_checks(struct report *r, const struct run *run)
{
    table(r, &comparison_counts, run);
    put(&r->page, "<h4>Comparisons that failed</h4>\n");
    table(r, &mismatches, run);
    put(&r->page, "<h4>What could not be checked</h4>\n");
    table(r, &failures, run);
}

/* ── Proofs ──────────────────────────────────────────────────────────────────────────────────────────────── */

/* The run's verdicts by solver: how many, and their time. */
static const struct table proof_counts = {
    "proof-counts",
    "SELECT solver, verdict, count(*), printf('%.1f', sum(ms)), CASE WHEN verdict <> 'proved' THEN 'bad' END"
    " FROM proofs WHERE run_id = ?1 GROUP BY solver, verdict ORDER BY solver, verdict",
    {"solver", "verdict", "obligations", "ms in all", NULL},
    "no verdict was recorded.",
    0,
};

/* Each obligation with the previous run's verdict, replay and time for the same rule, obligation, bound and solver
 * (a replay reads "fails ×2": the counterexample failed diff, the rule firing twice). Bad: a shipped rule's
 * obligation not proved, or a mutant's ("… without ATOM") proved, its atom not needed. */
static const struct table proofs = {
    "proofs",
    "SELECT p.rule, p.obligation, p.bound, p.solver, p.verdict,"
    " coalesce(p.replay || coalesce(' ×' || p.replay_fired, ''), '—'), printf('%.1f', p.ms),"
    " coalesce(q.verdict, '—'), coalesce(q.replay || coalesce(' ×' || q.replay_fired, ''), '—'),"
    " CASE WHEN q.id IS NULL THEN '—' ELSE printf('%.1f', q.ms) END,"
    " coalesce(p.reason, ''),"
    " CASE WHEN (p.obligation LIKE '% without %') = (p.verdict = 'proved') THEN 'bad'" /* an atom not needed */
    " WHEN q.verdict <> p.verdict OR (p.replay IS NOT NULL AND q.replay IS NOT NULL AND (p.replay <> q.replay"
    " OR p.replay_fired IS NOT q.replay_fired)) THEN 'changed' END"
    " FROM proofs p LEFT JOIN proofs q ON q.id = (SELECT x.id FROM proofs x WHERE x.run_id = ?2 AND x.rule = p.rule"
    " AND x.obligation = p.obligation AND x.bound = p.bound AND x.solver = p.solver ORDER BY x.id LIMIT 1)"
    " WHERE p.run_id = ?1 ORDER BY p.id",
    {"rule", "obligation", "bound", "solver", "verdict", "replay", "ms", "verdict before", "replay before", "ms before",
     "reason", NULL},
    "no verdict was recorded.",
    0,
};

/* The run's proof verdicts by solver, then each obligation with its time beside the previous run's. */
static void render_proofs(struct report *r, const struct run *run)
{
    table(r, &proof_counts, run);
    put(&r->page, "<h4>Obligations</h4>\n");
    table(r, &proofs, run);
}

/* ── Fuzzing ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* Each harness's figures beside its exec/s in the previous run. */
static const struct table fuzz_stats = {
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
static const struct table fuzz_new = {
    "fuzz-findings",
    "SELECT harness, signature, substr(input_sha256, 1, 16), count, last_run, 'bad' FROM fuzz_findings"
    " WHERE first_run = ?1 ORDER BY harness, signature",
    {"harness", "signature", "input sha256", "seen", "last seen in run", NULL},
    "no finding was new in this run.",
    REPORT_ROWS,
};

/* The run's harness figures beside the previous run's, and the findings first seen in it. */
static void render_fuzz(struct report *r, const struct run *run)
{
    int64_t execs = number(r, "SELECT coalesce(sum(executions), 0) FROM fuzz_stats WHERE run_id = ?1", run);
    int64_t again = number(r, "SELECT count(*) FROM fuzz_findings WHERE last_run = ?1 AND first_run < ?1", run);
    putf(&r->page, "<p>%lld executions in all; %lld finding%s first seen in an earlier run %s last seen in this "
                   "one.</p>\n",
         (long long)execs, (long long)again, again == 1 ? "" : "s", again == 1 ? "was" : "were");
    table(r, &fuzz_stats, run);
    put(&r->page, "<h4>Findings first seen in this run</h4>\n");
    table(r, &fuzz_new, run);
}

/* ── Tolerance ───────────────────────────────────────────────────────────────────────────────────────────── */

/* Per launch class (the kernel) and backend: comparisons, failures, the worst error over its bound with that row's
 * error and bound, and the previous run's worst. */
static const char tolerance_sql[] =
    "WITH t AS (SELECT run_id, substr(op, instr(op, ' ') + 1) AS kernel, backend,"
    "           coalesce(ratio, CASE WHEN bound > 0 THEN max_abs / bound END, 0) AS r, max_abs, bound, pass"
    "           FROM tolerances WHERE run_id IN (?1, ?2)),"
    " cur AS (SELECT kernel, backend, count(*) AS n, sum(pass = 0) AS failed, max(r) AS worst, max_abs, bound"
    "         FROM t WHERE run_id = ?1 GROUP BY kernel, backend),"
    " prev AS (SELECT kernel, backend, max(r) AS worst FROM t WHERE run_id = ?2 GROUP BY kernel, backend)"
    " SELECT c.kernel, c.backend, c.n, c.failed, c.worst, c.max_abs, c.bound, p.worst FROM cur c"
    " LEFT JOIN prev p ON p.kernel = c.kernel AND p.backend = c.backend ORDER BY c.kernel, c.backend";

/* One launch class's figures. */
struct tol_class {
    char *kernel, *backend;
    int64_t n, failed;
    double worst, max_abs, bound, prev;
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
    c->n = col_int(cols[2]);
    c->failed = col_int(cols[3]);
    c->worst = col_real(cols[4]);
    c->max_abs = col_real(cols[5]);
    c->bound = col_real(cols[6]);
    c->has_prev = cols[7] != NULL;
    c->prev = col_real(cols[7]);
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
static void plot_axis(struct page *p, int height)
{
    for (int d = PLOT_LO; d <= PLOT_HI; d++) {
        double x = plot_x(pow(10, d));
        putf(p, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" class=\"tick\"/>", x, PLOT_TOP - 4, x, height - 16);
        putf(p, "<text x=\"%.1f\" y=\"%d\" class=\"axis\">1e%d</text>\n", x, height - 4, d);
    }
    double one = plot_x(1);
    putf(p, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" class=\"bound\"/>", one, PLOT_TOP - 14, one, height - 16);
    putf(p, "<text x=\"%.1f\" y=\"%d\" class=\"axis\">bound</text>\n", one, PLOT_TOP - 16);
}

/* One launch class on the plot: its label, a bar to its worst error over its bound, a ring at the previous run's. */
static void plot_class(struct page *p, const struct tol_class *c, int i)
{
    int y = PLOT_TOP + i * PLOT_ROW;
    putf(p, "<g><title>");
    esc(p, c->kernel);
    put(p, " (");
    esc(p, c->backend);
    putf(p, "): worst error %.3g against its bound %.3g (%.3g of it) over %lld comparisons", c->max_abs, c->bound,
         c->worst, (long long)c->n);
    if (c->has_prev)
        putf(p, "; the previous run's worst %.3g of its bound", c->prev);
    putf(p, "</title><text x=\"%d\" y=\"%d\" class=\"label\">", PLOT_LABELS - 6, y + 11);
    esc(p, c->kernel);
    put(p, " · ");
    esc(p, c->backend);
    double width = plot_x(c->worst) - PLOT_LABELS;
    putf(p, "</text><rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"12\" class=\"%s\"/>", PLOT_LABELS, y + 2,
         width < 2 ? 2 : width, c->worst <= 1 ? "within" : "beyond"); /* an exact class keeps a sliver */
    if (c->has_prev)
        putf(p, "<circle cx=\"%.1f\" cy=\"%d\" r=\"4\" class=\"prev\"/>", plot_x(c->prev), y + 8);
    put(p, "</g>\n");
}

/* Every launch class's worst error over its bound as an SVG plot, then as a table. */
static void tolerance_plot(struct report *r, const struct run *run, const struct tol_classes *t)
{
    int height = PLOT_TOP + t->n * PLOT_ROW + 24;
    putf(&r->page, "<svg id=\"tolerance-plot-%lld\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                   "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n",
         (long long)run->id, PLOT_LABELS + PLOT_WIDTH + 30, height, PLOT_LABELS + PLOT_WIDTH + 30, height);
    putf(&r->page, "<title>Worst error over its bound per launch class in run %lld</title>\n", (long long)run->id);
    plot_axis(&r->page, height);
    for (int i = 0; i < t->n; i++)
        plot_class(&r->page, &t->c[i], i);
    put(&r->page, "</svg>\n");
}

/* The launch classes as a table: the plot's figures in numbers. */
static void tolerance_table(struct report *r, const struct run *run, const struct tol_classes *t)
{
    putf(&r->page, "<table id=\"tolerance-%lld\"><thead><tr><th>launch class</th><th>backend</th><th>comparisons</th>"
                   "<th>outside bound</th><th>worst error</th><th>its bound</th><th>error / bound</th>"
                   "<th>before</th></tr></thead><tbody>\n",
         (long long)run->id);
    for (int i = 0; i < t->n; i++) {
        const struct tol_class *c = &t->c[i];
        put(&r->page, c->failed ? "<tr class=\"bad\"><td>" : "<tr><td>");
        esc(&r->page, c->kernel);
        put(&r->page, "</td><td>");
        esc(&r->page, c->backend);
        putf(&r->page, "</td><td>%lld</td><td>%lld</td><td>%.3g</td><td>%.3g</td><td>%.3g</td>", (long long)c->n,
             (long long)c->failed, c->max_abs, c->bound, c->worst);
        if (c->has_prev)
            putf(&r->page, "<td>%.3g</td></tr>\n", c->prev);
        else
            put(&r->page, "<td>—</td></tr>\n");
    }
    put(&r->page, "</tbody></table>\n");
}

/* The run's tolerance results per launch class against their bounds (plot and table), and its end-to-end steps. */
static void render_tolerance(struct report *r, const struct run *run)
{
    struct tol_classes t = {NULL, 0, 0};
    int64_t params[2] = {run->id, run->prev};
    query(r, tolerance_sql, params, 2, keep_class, &t);
    int64_t steps = number(r, "SELECT count(*) FROM tolerance_steps WHERE run_id = ?1", run);
    int64_t agree = number(r, "SELECT coalesce(sum(top1_agree), 0) FROM tolerance_steps WHERE run_id = ?1", run);
    int64_t rows = number(r, "SELECT coalesce(sum(rows), 0) FROM tolerance_steps WHERE run_id = ?1", run);
    putf(&r->page, "<p>Each bar reaches a launch class's worst error over its bound in run %lld (the dashed line is "
                   "the bound; a ring marks run %lld's worst). End to end: %lld step%s, the top-1 token agreeing on "
                   "%lld of %lld rows.</p>\n",
         (long long)run->id, (long long)run->prev, (long long)steps, steps == 1 ? "" : "s", (long long)agree,
         (long long)rows);
    if (t.n == 0)
        putf(&r->page, "<p class=\"empty\">run %lld held no launch to a bound.</p>\n", (long long)run->id);
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

/* ── The evaluator against llama.cpp ─────────────────────────────────────────────────────────────────────── */

/* Each check of the run (a model, a format, a mode): its positions, those off, the worst NMSE and its bound, the
 * top-1 agreements, and the same check's worst NMSE in the previous crosscheck run. Bad: a position off; changed:
 * the worst NMSE grew tenfold or more. */
static const struct table crosschecks = {
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
static const struct table crosscheck_off = {
    "crosscheck-off",
    "SELECT model, weights, mode, position, token, printf('%.3g', nmse), printf('%.3g', bound), top1_fusecheck,"
    " top1_llama, 'bad' FROM crosscheck_failures WHERE run = ?1 ORDER BY model, weights, mode, position",
    {"model", "weights", "mode", "position", "token", "NMSE", "bound", "top-1", "llama.cpp's top-1", NULL},
    "every position within its bound.",
    40,
};

static void render_crosscheck(struct report *r, const struct run *run)
{
    table(r, &crosschecks, run);
    put(&r->page, "<h4>Positions off</h4>\n");
    table(r, &crosscheck_off, run);
}

/* ── The page ────────────────────────────────────────────────────────────────────────────────────────────── */

/* A section of the page: its anchor and title, how many rows a run has for it (?1 the run), what its absence means
 * (completed by the runs it covers), and how one run's part is written. */
struct section {
    const char *id, *title, *count_sql, *empty;
    void (*render)(struct report *r, const struct run *run);
};

/* The page's sections, in order. */
static const struct section sections[] = {
    {"run", "The run", "SELECT 1", "", render_run},
    {"heatmap", "Rule × graph firings", "SELECT count(*) FROM reports WHERE run_id = ?1",
     "no decision reports were recorded in %s", render_heatmap},
    {"changes", "Decision and digest changes", "SELECT count(*) FROM reports WHERE run_id = ?1",
     "no decision reports were recorded in %s: nothing to compare", render_changes},
    {"checks", "Comparisons and failures",
     "SELECT (SELECT count(*) FROM diffs WHERE run_id = ?1) + (SELECT count(*) FROM failures WHERE run_id = ?1)",
     "no comparisons were recorded in %s", render_checks},
    {"proofs", "Proofs", "SELECT count(*) FROM proofs WHERE run_id = ?1", "no proofs were recorded in %s",
     render_proofs},
    {"fuzz", "Fuzzing",
     "SELECT (SELECT count(*) FROM fuzz_stats WHERE run_id = ?1) +"
     " (SELECT count(*) FROM fuzz_findings WHERE first_run = ?1 OR last_run = ?1)",
     "no fuzz figures or findings were recorded in %s", render_fuzz},
    {"tolerance", "Tolerance per launch class", "SELECT count(*) FROM run_tolerances WHERE run_id = ?1",
     "no tolerance results were recorded in %s", render_tolerance},
    {"crosscheck", "The evaluator against llama.cpp", "SELECT count(*) FROM crosschecks WHERE run_id = ?1",
     "no crosscheck was recorded in %s", render_crosscheck},
};
#define NSECTIONS (sizeof sections / sizeof sections[0])

/* The runs a page covers, in words: "run 7 (check)" or "runs 7 (check) and 8 (prove)". */
static void runs_text(const struct report *r, char *out, size_t cap)
{
    size_t k = (size_t)snprintf(out, cap, "run%s ", r->nruns > 1 ? "s" : "");
    for (int i = 0; i < r->nruns && k < cap; i++)
        k += (size_t)snprintf(out + k, cap - k, "%s%lld (a %s run)",
                              i == 0                ? ""
                              : i == r->nruns - 1   ? " and "
                                                    : ", ",
                              (long long)r->runs[i].id, r->runs[i].kind);
}

/* A run's part of a section: its heading, and what the section's render writes. */
static void section_run(struct report *r, const struct section *s, const struct run *run)
{
    put(&r->page, "<h3>");
    escf(&r->page, "run %lld (%s)", (long long)run->id, run->kind);
    if (run->prev)
        putf(&r->page, " against run %lld", (long long)run->prev);
    put(&r->page, "</h3>\n");
    s->render(r, run);
}

/* One section: each run's part that has rows for it, or a sentence saying there is none in any. */
static void write_section(struct report *r, const struct section *s)
{
    putf(&r->page, "<section id=\"%s\"><h2>%s</h2>\n", s->id, s->title);
    int shown = 0;
    for (int i = 0; i < r->nruns; i++)
        if (number(r, s->count_sql, &r->runs[i]) > 0) {
            section_run(r, s, &r->runs[i]);
            shown++;
        }
    if (!shown) {
        char runs[1024], why[1200];
        runs_text(r, runs, sizeof runs);
        snprintf(why, sizeof why, s->empty, runs);
        put(&r->page, "<p class=\"empty\">");
        esc(&r->page, why);
        put(&r->page, ".</p>\n");
    }
    put(&r->page, "</section>\n");
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
    "svg .prev{fill:none;stroke:#222;stroke-width:1.5}";

/* The page's head, title and table of contents. */
static void page_open(struct report *r)
{
    char runs[1024];
    runs_text(r, runs, sizeof runs);
    put(&r->page, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                  "style-src 'unsafe-inline'\">\n<title>fusecheck report: ");
    esc(&r->page, runs);
    put(&r->page, "</title>\n<style>");
    put(&r->page, page_style);
    put(&r->page, "</style></head>\n<body>\n<h1>fusecheck report: ");
    esc(&r->page, runs);
    put(&r->page, "</h1>\n<p>Each run against the newest ended run of its kind before it, from results.db.</p>\n<nav>");
    for (size_t i = 0; i < NSECTIONS; i++)
        putf(&r->page, "<a href=\"#%s\">%s</a>", sections[i].id, sections[i].title);
    put(&r->page, "</nav>\n");
}

/* The whole page. */
static void write_page(struct report *r)
{
    page_open(r);
    for (size_t i = 0; i < NSECTIONS; i++)
        write_section(r, &sections[i]);
    put(&r->page, "</body></html>\n");
}

/* ── The command ─────────────────────────────────────────────────────────────────────────────────────────── */

/* A run being looked up, and whether the file has it. */
struct run_lookup {
    struct run *run;
    bool found;
};

/* Keep a run's kind and the previous ended run of that kind. */
static void keep_lookup(const char *const *cols, int n, void *ctx)
{
    struct run_lookup *l = ctx;
    (void)n;
    l->found = true;
    snprintf(l->run->kind, sizeof l->run->kind, "%s", cols[0] ? cols[0] : "");
    l->run->prev = col_int(cols[1]);
}
/* Fill a run's kind and its previous run of that kind; 1 (a message on stderr) when the file has no such run. */
static int lookup_run(struct report *r, struct run *run, const char *path)
{
    struct run_lookup l = {run, false};
    query(r,
          "SELECT r.kind, (SELECT max(p.id) FROM runs p WHERE p.kind = r.kind AND p.id < r.id AND p.ended IS NOT NULL)"
          " FROM runs r WHERE r.id = ?1",
          &run->id, 1, keep_lookup, &l);
    if (!r->failed && !l.found) {
        fprintf(stderr, "fusecheck: report: no run %lld in %s (fusecheck db runs lists them)\n", (long long)run->id,
                path);
        return 1;
    }
    return r->failed;
}

/* The runs asked for, each once and in order; with none asked, the newest ended run. 0, or 1 said on stderr. */
static int pick_runs(struct report *r, const int64_t *asked, int nasked, const char *path)
{
    int64_t newest = 0;
    if (nasked == 0) {
        query(r, "SELECT max(id) FROM runs WHERE ended IS NOT NULL", NULL, 0, take_number, &newest);
        if (!r->failed && newest == 0) {
            fprintf(stderr, "fusecheck: report: %s holds no ended run (fusecheck db runs lists them)\n", path);
            return 1;
        }
        asked = &newest;
        nasked = 1;
    }
    for (int i = 0; i < nasked; i++) {
        int at = r->nruns;
        while (at > 0 && r->runs[at - 1].id > asked[i])
            at--;
        if (at > 0 && r->runs[at - 1].id == asked[i])
            continue;
        memmove(&r->runs[at + 1], &r->runs[at], sizeof r->runs[0] * (size_t)(r->nruns - at));
        r->runs[at].id = asked[i];
        r->nruns++;
    }
    for (int i = 0; i < r->nruns; i++)
        if (lookup_run(r, &r->runs[i], path))
            return 1;
    return 0;
}

/* Refuse an output that is there and is not a regular file (a link, a directory, a device): only a regular file is
 * replaced. 0, or 1 said on stderr. */
static int check_output(const char *out)
{
    struct stat st;
    if (strcmp(out, "-") == 0 || lstat(out, &st) != 0 || S_ISREG(st.st_mode))
        return 0;
    fprintf(stderr, "fusecheck: report: %s is %s, not a regular file: not replaced\n", out,
            S_ISLNK(st.st_mode)   ? "a symbolic link"
            : S_ISDIR(st.st_mode) ? "a directory"
                                  : "a device or a FIFO");
    return 1;
}

/* Open the results file for reading and check it holds this fusecheck's schema. 0, or 1 said on stderr. */
static int open_results(const char *path, struct db **db)
{
    char err[DB_ERR_LEN];
    if (db_open_readonly(path, db, err)) {
        fprintf(stderr, "fusecheck: report: %s\n", err);
        return 1;
    }
    int v = db_schema_version(*db);
    if (v == DB_SCHEMA_VERSION)
        return 0;
    fprintf(stderr, "fusecheck: report: %s: schema version %d, not %d: fusecheck db merge %s -o NEW.db brings a copy "
                    "forward\n",
            path, v, DB_SCHEMA_VERSION, path);
    db_close(*db);
    *db = NULL;
    return 1;
}

/* Parse the command line: --db FILE, --run N (repeatable), -o OUT. 0, or CLI_USAGE said on stderr. */
static int parse_args(int argc, char **argv, const char **path, const char **out, int64_t *runs, int *nruns)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'}, {"run", required_argument, NULL, 'r'}, {0, 0, 0, 0}};
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "o:", opts, NULL)) != -1;) {
        char *end;
        if (c == 'd')
            *path = optarg;
        else if (c == 'o')
            *out = optarg;
        else if (c != 'r')
            return cli_option_error("report", opts, "o:", argv);
        else if (*nruns == REPORT_MAX_RUNS)
            return cli_usage_error("report", "at most %d runs a page", REPORT_MAX_RUNS);
        else if ((runs[*nruns] = strtoll(optarg, &end, 10)) < 1 || end == optarg || *end)
            return cli_usage_error("report", "--run expects a run id (a positive number), got '%s'", optarg);
        else
            (*nruns)++;
    }
    if (optind != argc)
        return cli_usage_error("report", "unexpected argument '%s'", argv[optind]);
    if (!*out)
        return cli_usage_error("report", "expected -o FILE (or -o - for standard output)");
    return 0;
}

/* `fusecheck report [--db FILE] [--run N]... -o FILE|-`. */
int cli_cmd_report(int argc, char **argv)
{
    const char *path = "results.db", *out = NULL;
    int64_t asked[REPORT_MAX_RUNS];
    int nasked = 0;
    if (parse_args(argc, argv, &path, &out, asked, &nasked))
        return CLI_USAGE;
    if (check_output(out))
        return CLI_USAGE;
    struct report r;
    memset(&r, 0, sizeof r);
    if (open_results(path, &r.db))
        return CLI_USAGE;
    int rc = pick_runs(&r, asked, nasked, path);
    if (!rc)
        write_page(&r);
    if (r.failed)
        fprintf(stderr, "fusecheck: report: %s: %s\n", path, r.err);
    db_close(r.db);
    rc = rc || r.failed || cli_write(out, r.page.s, r.page.len);
    free(r.page.s);
    return rc ? CLI_USAGE : CLI_OK;
}
