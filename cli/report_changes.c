/* cli/report_changes.c — what changed since the compared run: decisions, digests, graphs, firings, partial results,
 * and disagreements with other optimizers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* A decision's outcome in a word: fired, held, refused (its reason left out), or "no decision". */
#define OUTCOME_WORD(x)                                                                                                \
    "coalesce(CASE WHEN instr(" x ", ':') > 0 THEN substr(" x ", 1, instr(" x ", ':') - 1) ELSE " x " END,"            \
    " 'no decision')"

/* A decision change in words: how its outcome moved. */
#define CHANGE_WORDS                                                                                                   \
    "CASE WHEN outcome_before = 'fired' THEN 'stopped firing (' || " OUTCOME_WORD(                                     \
        "outcome_after") " || ')'"                                                                                     \
                         " WHEN outcome_after = 'fired' THEN 'started firing (was ' || " OUTCOME_WORD(                 \
                             "outcome_before") " || ')'"                                                               \
                                               " ELSE " OUTCOME_WORD("outcome_before") " || ' → ' || " OUTCOME_WORD(   \
                                                   "outcome_after") " END"

/* The decision changes by rule and how they moved: decisions, graphs (name and mode) and shims. */
static const struct cli_report_table change_summary = {
    "change-summary",
    "SELECT rule, " CHANGE_WORDS ", count(*), count(DISTINCT graph || ' ' || coalesce(mode, '')), count(DISTINCT shim),"
    " 'changed' FROM changes_cache WHERE run_before = ?2 AND run_after = ?1"
    " GROUP BY rule, outcome_before, outcome_after ORDER BY count(*) DESC, rule, 2",
    {"rule", "change", "decisions", "graphs", "shims", NULL},
    "no decision changed.",
    0,
};

/* Each graph (name and mode) with the rules whose decisions moved on it, and how, each once, in order. */
static const char graph_changes_sql[] =
    "SELECT DISTINCT graph || ' ' || coalesce(mode, '') AS g, " CHANGE_WORDS " AS words, rule FROM changes_cache"
    " WHERE run_before = ?2 AND run_after = ?1 ORDER BY g, words NOT LIKE 'stopped%', words, rule";

/* Each decision made differently, or made by one run only, on a graph and shim both runs reported on: every row. */
static const char decision_rows_sql[] =
    "SELECT graph, coalesce(mode, ''), shim, rule, class, covers, coalesce(outcome_before, '(none)'),"
    " coalesce(outcome_after, '(none)') FROM changes_cache WHERE run_before = ?2 AND run_after = ?1"
    " ORDER BY graph, mode, shim, rule, covers, outcome_before, outcome_after";

/* The raw rows a page (a <details> block) holds, and the most rows the page shows. */
enum { RAW_PAGE = 100, RAW_MAX = 2000 };

/* ── By graph ────────────────────────────────────────────────────────────────────────────────────────────── */

/* A graph and what moved on it ("stopped firing (held): add_norm, shared_expert"). */
struct graph_moves {
    char *graph, *moves;
};

/* The graphs read; of the open graph, the rules of its current change words and those words. */
struct by_graph {
    struct graph_moves *g;
    int n, cap;
    char *rules, *words;
};

/* Append text to a heap string. */
static char *append(char *s, const char *a, const char *b)
{
    size_t n = (s ? strlen(s) : 0) + strlen(a) + strlen(b) + 1;
    char *grown = realloc(s, n);
    if (!grown)
        abort();
    if (!s)
        grown[0] = '\0';
    strcat(strcat(grown, a), b);
    return grown;
}

/* Close the open graph's current change words: "rule, rule words" joins what moved on it. */
static void flush_words(struct by_graph *b)
{
    if (!b->rules)
        return;
    struct graph_moves *g = &b->g[b->n - 1];
    g->moves = append(g->moves, g->moves ? "; " : "", b->rules);
    g->moves = append(g->moves, " ", b->words);
    free(b->rules);
    free(b->words);
    b->rules = b->words = NULL;
}

/* Take one (graph, change words, rule) row: a new graph opens an entry; a rule joins its words' list. */
static void keep_graph_move(const char *const *cols, int n, void *ctx)
{
    struct by_graph *b = ctx;
    (void)n;
    const char *graph = cols[0] ? cols[0] : "", *words = cols[1] ? cols[1] : "", *rule = cols[2] ? cols[2] : "";
    if (b->n == 0 || strcmp(b->g[b->n - 1].graph, graph) != 0) {
        flush_words(b);
        if (b->n == b->cap) {
            b->cap = b->cap ? 2 * b->cap : 64;
            if (!(b->g = realloc(b->g, sizeof *b->g * (size_t)b->cap)))
                abort();
        }
        b->g[b->n].graph = strdup(graph);
        b->g[b->n].moves = NULL;
        if (!b->g[b->n++].graph)
            abort();
    }
    if (b->words && strcmp(b->words, words) != 0)
        flush_words(b);
    b->rules = append(b->rules, b->rules ? ", " : "", rule);
    if (!b->words && !(b->words = strdup(words)))
        abort();
}

/* qsort's order on graphs: by what moved, then by name. */
static int by_moves(const void *a, const void *b)
{
    const struct graph_moves *x = a, *y = b;
    int c = strcmp(x->moves, y->moves);
    return c ? c : strcmp(x->graph, y->graph);
}

/* The most graphs a line of the summary names. */
enum { NAMED_GRAPHS = 8 };

/* One line: what moved, and on how many graphs (the first named). */
static void graph_line(struct cli_page *p, const struct graph_moves *g, int n)
{
    cli_page_put(p, "<li>");
    cli_page_esc(p, g[0].moves);
    cli_page_putf(p, " on <b>%d graph%s</b>: ", n, n == 1 ? "" : "s");
    for (int i = 0; i < n && i < NAMED_GRAPHS; i++) {
        cli_page_put(p, i ? ", " : "");
        cli_page_esc(p, g[i].graph);
    }
    if (n > NAMED_GRAPHS)
        cli_page_putf(p, " and %d more", n - NAMED_GRAPHS);
    cli_page_put(p, "</li>\n");
}

/* The changes by graph: graphs on which the same rules moved the same way, one line each, most graphs first. */
static void changes_by_graph(struct cli_report *r, const struct cli_report_run *run)
{
    struct by_graph b = {NULL, 0, 0, NULL, NULL};
    int64_t params[2] = {run->id, run->prev};
    cli_report_query(r, graph_changes_sql, params, 2, keep_graph_move, &b);
    flush_words(&b);
    qsort(b.g, (size_t)b.n, sizeof *b.g, by_moves);
    int *starts = malloc(sizeof *starts * (size_t)(b.n + 1)), ngroups = 0;
    if (!starts)
        abort();
    for (int i = 0; i < b.n; i++)
        if (i == 0 || strcmp(b.g[i - 1].moves, b.g[i].moves) != 0)
            starts[ngroups++] = i;
    starts[ngroups] = b.n;
    /* most graphs first (a stable pass over the group counts, largest first) */
    int largest = 0;
    for (int k = 0; k < ngroups; k++)
        largest = starts[k + 1] - starts[k] > largest ? starts[k + 1] - starts[k] : largest;
    cli_page_putf(&r->page, "<ul id=\"change-graphs-%lld\" class=\"moves\">\n", (long long)run->id);
    for (int size = largest; size > 0; size--)
        for (int k = 0; k < ngroups; k++)
            if (starts[k + 1] - starts[k] == size)
                graph_line(&r->page, &b.g[starts[k]], size);
    cli_page_put(&r->page, "</ul>\n");
    for (int i = 0; i < b.n; i++) {
        free(b.g[i].graph);
        free(b.g[i].moves);
    }
    free(b.g);
    free(starts);
}

/* ── Every row, paged ────────────────────────────────────────────────────────────────────────────────────── */

/* The raw rows being written: the page, the run, rows seen. */
struct raw_rows {
    struct cli_page *page;
    int64_t run, rows, total;
};

/* Write one raw row, opening a page (a <details> block of RAW_PAGE rows) where one starts; past RAW_MAX, count. */
static void raw_row(const char *const *cols, int n, void *ctx)
{
    struct raw_rows *w = ctx;
    static const char *const heads[] = {"graph", "mode", "shim", "rule", "class", "covers", "before", "after"};
    if (w->rows >= RAW_MAX) {
        w->rows++;
        return;
    }
    if (w->rows % RAW_PAGE == 0) {
        if (w->rows)
            cli_page_put(w->page, "</tbody></table></details>\n");
        int64_t last = w->rows + RAW_PAGE < w->total ? w->rows + RAW_PAGE : w->total;
        cli_page_putf(w->page,
                      "<details><summary>rows %lld to %lld of %lld</summary><table id=\"decision-changes-"
                      "%lld-%lld\"><thead><tr>",
                      (long long)w->rows + 1, (long long)(last < RAW_MAX ? last : RAW_MAX), (long long)w->total,
                      (long long)w->run, (long long)(w->rows / RAW_PAGE + 1));
        for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
            cli_page_putf(w->page, "<th>%s</th>", heads[i]);
        cli_page_put(w->page, "</tr></thead><tbody>\n");
    }
    w->rows++;
    cli_page_put(w->page, "<tr>");
    for (int i = 0; i < n && i < (int)(sizeof heads / sizeof heads[0]); i++) {
        cli_page_put(w->page, "<td>");
        cli_page_esc(w->page, cols[i]);
        cli_page_put(w->page, "</td>");
    }
    cli_page_put(w->page, "</tr>\n");
}

/* Every decision change, RAW_PAGE rows a <details> block, RAW_MAX rows at most (db diff lists the rest). */
static void changes_raw(struct cli_report *r, const struct cli_report_run *run, int64_t total)
{
    struct raw_rows w = {&r->page, run->id, 0, total};
    int64_t params[2] = {run->id, run->prev};
    cli_report_query(r, decision_rows_sql, params, 2, raw_row, &w);
    if (w.rows)
        cli_page_put(&r->page, "</tbody></table></details>\n");
    if (w.rows > RAW_MAX)
        cli_page_putf(&r->page,
                      "<p class=\"more\">… and %lld more rows: <code>fusecheck db diff %lld %lld</code> "
                      "lists them all.</p>\n",
                      (long long)(w.rows - RAW_MAX), (long long)run->prev, (long long)run->id);
}

/* ── The other changes ───────────────────────────────────────────────────────────────────────────────────── */

/* Each report whose decisions' digest changed. */
static const struct cli_report_table digest_changes = {
    "digest-changes",
    "SELECT graph, coalesce(mode, ''), shim, substr(digest_before, 1, 16), substr(digest_after, 1, 16)"
    " FROM digest_changes WHERE run_before = ?2 AND run_after = ?1 ORDER BY graph, mode, shim",
    {"graph", "mode", "shim", "digest before", "digest after", NULL},
    "no report's digest changed.",
    CLI_REPORT_ROWS,
};

/* Each graph (name and mode) whose content changed: its reports are not paired. */
static const struct cli_report_table graph_changes = {
    "graph-changes",
    "SELECT graph, coalesce(mode, ''), ops_before, ops_after, substr(sha256_before, 1, 16), substr(sha256_after, 1, 16)"
    " FROM graph_changes WHERE run_before = ?2 AND run_after = ?1 ORDER BY graph, mode, sha256_before, sha256_after",
    {"graph", "mode", "ops before", "ops after", "sha256 before", "sha256 after", NULL},
    "no graph's content changed.",
    CLI_REPORT_ROWS,
};

/* Each step of both runs' tables that fired somewhere in one run and nowhere in the other. */
static const struct cli_report_table firing_changes = {
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
static const struct cli_report_table partial_pair = {
    "partial",
    "SELECT 'run ' || run_before || ' (the previous)', 'is ' || status_before, 'bad' FROM run_pair_status"
    " WHERE run_before = ?2 AND run_after = ?1 AND status_before <> 'complete'"
    " UNION ALL SELECT 'run ' || run_after || ' (this one)', 'is ' || status_after, 'bad' FROM run_pair_status"
    " WHERE run_before = ?2 AND run_after = ?1 AND status_after <> 'complete'"
    " UNION ALL SELECT what || ' ' || coalesce(graph || ' ' || coalesce(mode, ''), shim),"
    " 'not reported on by this run', 'bad' FROM run_pair_gaps WHERE run_before = ?2 AND run_after = ?1",
    {"what", "partial", NULL},
    "both runs are complete, and this one reported on every graph and shim the previous one did.",
    CLI_REPORT_ROWS,
};

/* The decision, digest and graph changes from the previous run of the kind to this one. */
/* This run against the latest run of each other optimizer (another name or command) that reported on something:
 * their disagreements (optimizer_disagreements: rule, class, covers, outcome and code, on the same graph by content
 * and shim) counted per rule. */
static const struct cli_report_table optimizer_disagreements = {
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
static bool several_optimizers(struct cli_report *r, const struct cli_report_run *run)
{
    return cli_report_number(
               r, "SELECT count(*) FROM (SELECT DISTINCT optimizer_name, coalesce(optimizer_command, '') FROM runs)",
               run) > 1;
}

void cli_report_changes(struct cli_report *r, const struct cli_report_run *run)
{
    if (several_optimizers(r, run)) {
        cli_page_put(&r->page, "<h4>Disagreements with other optimizers (per rule)</h4>\n");
        cli_report_table(r, &optimizer_disagreements, run);
    }
    if (!run->prev) {
        cli_page_put(&r->page, run->latest ? "<p class=\"warning\">" : "<p class=\"empty\">");
        if (run->latest)
            cli_page_escf(&r->page,
                          "no earlier %s run has run %lld's configuration: its decisions are not compared "
                          "(run %lld, the newest %s run, ran another).",
                          run->kind, (long long)run->id, (long long)run->latest, run->kind);
        else
            cli_page_escf(&r->page,
                          "run %lld is the first %s run in this file: there is no earlier one to compare it "
                          "with.",
                          (long long)run->id, run->kind);
        cli_page_put(&r->page, "</p>\n");
        return;
    }
    int64_t common = 0;
    char err[DB_ERR_LEN];
    if (!r->failed && db_runs_common(r->db, run->id, run->prev, &common, err)) {
        r->failed = 1;
        snprintf(r->err, sizeof r->err, "%s", err);
    }
    cli_page_putf(&r->page,
                  "<p>From run %lld to run %lld: %lld report%s of the same graph (by content) and shim in both.</p>\n",
                  (long long)run->prev, (long long)run->id, (long long)common, common == 1 ? "" : "s");
    cli_page_put(&r->page, "<h4>Partial results (a run not complete, or graphs and shims this run lacks)</h4>\n");
    cli_report_table(r, &partial_pair, run);
    cli_page_put(&r->page, "<h4>Graphs whose content changed (their reports are not compared)</h4>\n");
    cli_report_table(r, &graph_changes, run);
    if (common == 0) {
        cli_page_putf(&r->page,
                      "<p class=\"empty\">runs %lld and %lld share no graph and shim: their decisions are not "
                      "compared.</p>\n",
                      (long long)run->prev, (long long)run->id);
        return;
    }
    int64_t changes = cli_report_number(r,
                                        "SELECT count(*) FROM changes_cache WHERE run_before = ?2"
                                        " AND run_after = ?1",
                                        run);
    cli_page_putf(&r->page, "<h4>Decision changes by rule (%lld in all)</h4>\n", (long long)changes);
    cli_report_table(r, &change_summary, run);
    if (changes) {
        cli_page_put(&r->page, "<h4>Decision changes by graph</h4>\n");
        changes_by_graph(r, run);
    }
    cli_page_put(&r->page, "<h4>Rules that stopped or started firing on every graph</h4>\n");
    cli_report_table(r, &firing_changes, run);
    cli_page_put(&r->page, "<h4>Digest changes</h4>\n");
    cli_report_table(r, &digest_changes, run);
    if (changes) {
        cli_page_putf(&r->page, "<h4>Every decision change, %d a page</h4>\n", RAW_PAGE);
        changes_raw(r, run, changes);
    }
}
