/* cli/report.h — what the files of `fusecheck report` share (cli/report_*.c; internal to cli/): the page as it grows,
 * the runs it covers, queries read into it, tables written from queries, and each section's writer. */
#ifndef FUSECHECK_CLI_REPORT_H
#define FUSECHECK_CLI_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "db/db.h"

/* The most runs one page covers, and the most rows a table of changes or findings shows. */
#define CLI_REPORT_MAX_RUNS 16
#define CLI_REPORT_ROWS 200
/* The most runs of one configuration a trend shows. */
#define CLI_REPORT_TREND 30

/* The page as it grows. */
struct cli_page {
    char *s;
    size_t len, cap;
};

/* A run the page covers: its id and kind; prev, the run it is compared with: the newest ended run before it of the
 * same kind and configuration (0: none); latest, the newest ended run of the kind before it whatever its
 * configuration (0: none), with the settings this run has and it lacks (differs) and those it has and this run lacks
 * (lacks); the runs of this configuration up to this one, oldest first (this run last). */
struct cli_report_run {
    int64_t id, prev, latest;
    char kind[32];
    char differs[512], lacks[512];
    int64_t history[CLI_REPORT_TREND];
    int nhistory;
};

/* The report being made: the file read, the runs covered, the page, the first error met. */
struct cli_report {
    struct db *db;
    struct cli_report_run runs[CLI_REPORT_MAX_RUNS];
    int nruns;
    struct cli_page page;
    int failed;
    char err[DB_ERR_LEN];
};

/* ── Markup (cli/report_markup.c) ────────────────────────────────────────────────────────────────────────── */

/* Append len bytes, a string, or formatted markup (every value in it a number or a fixed word) to the page. */
void cli_page_put_n(struct cli_page *p, const char *s, size_t len);
void cli_page_put(struct cli_page *p, const char *s);
void cli_page_putf(struct cli_page *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append text escaped for HTML and SVG (NULL appends nothing), or a formatted sentence escaped. */
void cli_page_esc(struct cli_page *p, const char *s);
void cli_page_escf(struct cli_page *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Run a read query with the given parameters, each row to fn; the first error is kept in r. */
void cli_report_query(struct cli_report *r, const char *sql, const int64_t *params, int n, db_row_fn fn, void *ctx);
/* A column as an integer or a real (NULL: 0). */
int64_t cli_report_int(const char *v);
double cli_report_real(const char *v);
/* A db_row_fn keeping a one-value query's answer as an int64_t (NULL: 0). */
void cli_report_take_number(const char *const *cols, int n, void *ctx);
/* The integer a one-value query answers over (?1 the run, ?2 the run it is compared with); 0 when none or NULL. */
int64_t cli_report_number(struct cli_report *r, const char *sql, const struct cli_report_run *run);

/* Whether a run's kind is one of a space-separated list's ("check tolerance"; NULL: every kind). */
bool cli_report_kind_in(const char *kind, const char *list);

/* A table read from one query over (?1 this run, ?2 the compared one): its id (the run's id is added to it), the
 * columns' headings (NULL-ended; a query column past them names the row's CSS class), what to say when it has no
 * rows, and the rows shown (0: every one; past that they are counted). */
struct cli_report_table {
    const char *id;
    const char *sql;
    const char *heads[DB_SELECT_COLUMNS];
    const char *none;
    int cap;
};
/* Write a table over a run and its compared one, or the sentence saying it has no rows. Its row count. */
int64_t cli_report_table(struct cli_report *r, const struct cli_report_table *t, const struct cli_report_run *run);

/* ── The sections, each one run's part (cli/report_<section>.c) ──────────────────────────────────────────── */

void cli_report_identity(struct cli_report *r, const struct cli_report_run *run);
void cli_report_heatmap(struct cli_report *r, const struct cli_report_run *run);
void cli_report_changes(struct cli_report *r, const struct cli_report_run *run);
void cli_report_checks(struct cli_report *r, const struct cli_report_run *run);
void cli_report_proofs(struct cli_report *r, const struct cli_report_run *run);
void cli_report_fuzz(struct cli_report *r, const struct cli_report_run *run);
void cli_report_tolerance(struct cli_report *r, const struct cli_report_run *run);
void cli_report_crosscheck(struct cli_report *r, const struct cli_report_run *run);

/* The first screen: each run's comparison and its stages' lines (cli/report_verdict.c). */
void cli_report_verdict(struct cli_report *r);
/* A run's headline figures over the last runs of its configuration (cli/report_trends.c). */
void cli_report_trends(struct cli_report *r, const struct cli_report_run *run);

/* ── The queries the verdict and the sections share (each over ?1 the run, ?2 the compared one) ─────────────── */

/* How many rows a run has for "comparisons and failures", and for "fuzzing". */
#define CLI_REPORT_CHECKS_SQL                                                                                          \
    "SELECT (SELECT count(*) FROM diffs WHERE run_id = ?1) + (SELECT count(*) FROM failures WHERE run_id = ?1)"
#define CLI_REPORT_FUZZ_SQL                                                                                            \
    "SELECT (SELECT count(*) FROM fuzz_stats WHERE run_id = ?1) +"                                                     \
    " (SELECT count(*) FROM fuzz_findings WHERE first_run = ?1 OR last_run = ?1)"
/* Whether a run held the rules' fixture cases (check --fixtures) and counted them (schema 9); their figures: held,
 * run, failed. A run before schema 9 that held them: its fixture failures. */
#define CLI_REPORT_FIXTURES_SQL "SELECT count(*) FROM runs WHERE id = ?1 AND fixture_cases IS NOT NULL"
#define CLI_REPORT_FIXTURE_FIGURES_SQL                                                                                 \
    "SELECT fixture_cases - fixture_failures, fixture_cases, fixture_failures FROM runs WHERE id = ?1"
#define CLI_REPORT_FIXTURE_TEXT "%lld/%lld fixture cases held"
#define CLI_REPORT_OLD_FIXTURES_SQL                                                                                    \
    "SELECT count(*) FROM runs WHERE id = ?1 AND fixture_cases IS NULL AND command LIKE '% --fixtures%'"
#define CLI_REPORT_OLD_FIXTURE_FIGURES_SQL                                                                             \
    "SELECT count(*), 0, count(*) FROM failures WHERE run_id = ?1 AND stage = 'fixture'"
#define CLI_REPORT_OLD_FIXTURE_TEXT "%lld fixture cases failed"
/* The obligations whose verdict, or whose replay both runs made, changed since the compared run. */
#define CLI_REPORT_PROOF_CHANGED                                                                                       \
    "(q.verdict <> p.verdict OR (p.replay IS NOT NULL AND q.replay IS NOT NULL AND (p.replay <> q.replay"              \
    " OR p.replay_fired IS NOT q.replay_fired)))"
#define CLI_REPORT_PROOF_PAIR                                                                                          \
    "proofs p LEFT JOIN proofs q ON q.id = (SELECT x.id FROM proofs x WHERE x.run_id = ?2 AND x.rule = p.rule"         \
    " AND x.obligation = p.obligation AND x.bound = p.bound AND x.solver = p.solver ORDER BY x.id LIMIT 1)"
#define CLI_REPORT_PROOF_CHANGES_SQL                                                                                   \
    "SELECT count(*), 0, count(*) FROM " CLI_REPORT_PROOF_PAIR " WHERE p.run_id = ?1 AND " CLI_REPORT_PROOF_CHANGED

/* ── The runs and the page (cli/report_runs.c, cli/report_page.c) ────────────────────────────────────────── */

/* The runs asked for, each once and in order (none asked: the newest ended run), each with the run it is compared
 * with. 0, or 1 said on stderr. */
int cli_report_pick_runs(struct cli_report *r, const int64_t *asked, int nasked, const char *path);
/* The whole page. */
void cli_report_write_page(struct cli_report *r);

#endif
