/* db/db.c — opening results.db (pragmas, migrations), writing rows through prepared statements, the queries the
 * CLI reads, and merging the files of parallel shards. */
#include "db.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The prepared statements, one per row kind: enum suffix and SQL. */
#define DB_STATEMENTS(X) \
    X(RUN_BEGIN, "INSERT INTO runs (kind, started, status, git_rev, host, version, command) " \
                 "VALUES (?, ?, 'incomplete', ?, ?, ?, ?)") \
    X(RUN_END, "UPDATE runs SET ended = ?, status = ? WHERE id = ?") \
    X(GRAPH_GET, "SELECT id FROM graphs WHERE name = ? AND mode IS ? AND sha256 = ?") \
    X(GRAPH_PUT, "INSERT INTO graphs (name, family, mode, ops, sha256) VALUES (?, ?, ?, ?, ?)") \
    X(SHIM_GET, "SELECT id FROM shims WHERE name = ?") \
    X(SHIM_PUT, "INSERT INTO shims (name, knobs) VALUES (?, ?)") \
    X(STEP_PUT, "INSERT OR REPLACE INTO steps (run_id, seq, name) VALUES (?, ?, ?)") \
    X(REPORT_PUT, "INSERT INTO reports (run_id, graph_id, shim_id, digest, fired, refused, held, optimize_ms, " \
                  "rewritten) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)") \
    X(DECISION_PUT, "INSERT INTO decisions (report_id, seq, rule, class, covers, outcome, reason) " \
                    "VALUES (?, ?, ?, ?, ?, ?, ?)") \
    X(DECISIONS_PUT, "INSERT INTO decisions (report_id, seq, rule, class, covers, outcome, reason) VALUES " \
                     ROWS16("(?, ?, ?, ?, ?, ?, ?)")) \
    X(DIFF_PUT, "INSERT INTO diffs (run_id, graph_id, shim_id, identical, compared, tensor, first_index, lifted, " \
                "rewritten, kind, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)") \
    X(TOLERANCE_PUT, "INSERT INTO tolerances (run_id, graph_id, shim_id, backend, op, tensor, elements, max_abs, " \
                     "max_rel, nmse, bound, pass, ratio, worst, lane, reference) " \
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)") \
    X(TOLERANCE_STEP_PUT, "INSERT INTO tolerance_steps (run_id, graph_id, shim_id, backend, step, tensor, rows, " \
                          "nmse, kl, top1_agree, max_abs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)") \
    X(PROOF_PUT, "INSERT INTO proofs (run_id, rule, obligation, bound, verdict, reason, ms, counterexample) " \
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?)") \
    X(FUZZ_STAT_PUT, "INSERT INTO fuzz_stats (run_id, harness, executions, seconds, corpus, coverage) " \
                     "VALUES (?, ?, ?, ?, ?, ?)") \
    X(FAILURE_PUT, "INSERT INTO failures (run_id, graph, mode, shim, stage, reason) VALUES (?, ?, ?, ?, ?, ?)") \
    X(CODE_MUTANT_PUT, "INSERT INTO code_mutants (run_id, mutant, file, line, operator, original, mutated, " \
                       "outcome, killed_by, seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)") \
    X(FINDING_SEEN, "UPDATE fuzz_findings SET last_run = ?, count = count + 1 WHERE harness = ? AND signature = ?") \
    X(FINDING_PUT, "INSERT INTO fuzz_findings (harness, signature, input_sha256, first_run, last_run, count) " \
                   "VALUES (?, ?, ?, ?, ?, 1)") \
    X(RUNS, "SELECT r.id, r.kind, r.started, r.ended, r.status, r.command, " \
            "(SELECT count(*) FROM reports rep WHERE rep.run_id = r.id) FROM runs r ORDER BY r.id") \
    X(RUN_EXISTS, "SELECT 1 FROM runs WHERE id = ?") \
    X(RUNS_COMMON, "SELECT count(*) FROM reports x JOIN reports y ON y.graph_id = x.graph_id " \
                   "AND y.shim_id = x.shim_id WHERE x.run_id = ? AND y.run_id = ?") \
    X(CHANGES, "SELECT graph, mode, shim, rule, class, covers, outcome_before, outcome_after FROM decision_changes " \
               "WHERE run_before = ? AND run_after = ? ORDER BY graph, mode, shim, rule, covers")

/* The same row 16 times, comma-separated: a statement that inserts DB_DECISION_BATCH decisions at once. */
#define ROWS2(r) r ", " r
#define ROWS16(r) ROWS2(ROWS2(ROWS2(ROWS2(r))))
#define DB_DECISION_BATCH 16

enum db_stmt {
#define X(e, sql) DB_STMT_##e,
    DB_STATEMENTS(X)
#undef X
    DB_STMT_COUNT
};

static const char *const statement_sql[] = {
#define X(e, sql) sql,
    DB_STATEMENTS(X)
#undef X
};

struct db {
    sqlite3 *conn;
    sqlite3_stmt *stmt[DB_STMT_COUNT];
    bool readonly;
};

/* Write SQLite's message for the connection, prefixed by what was being done. */
static int fail(struct db *db, const char *what, char err[DB_ERR_LEN])
{
    snprintf(err, DB_ERR_LEN, "%.250s: %.250s", what, db && db->conn ? sqlite3_errmsg(db->conn) : "no connection");
    return 1;
}

/* Run SQL with no results. */
static int exec(struct db *db, const char *sql, const char *what, char err[DB_ERR_LEN])
{
    char *msg = NULL;
    if (sqlite3_exec(db->conn, sql, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, DB_ERR_LEN, "%.250s: %.250s", what, msg ? msg : sqlite3_errmsg(db->conn));
        sqlite3_free(msg);
        return 1;
    }
    return 0;
}

/* The integer result of a one-value query, or -1. */
static int64_t query_int(struct db *db, const char *sql)
{
    sqlite3_stmt *st;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db->conn, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

int db_schema_version(struct db *db) { return (int)query_int(db, "PRAGMA user_version"); }

/* Bring the file's schema forward to this build's version, in one immediate transaction (so writers opening a new
 * file at once upgrade it once). */
static int migrate(struct db *db, char err[DB_ERR_LEN])
{
    const char *const *m;
    int target = db_schema_migrations(&m);
    if (exec(db, "BEGIN IMMEDIATE", "upgrading the schema", err))
        return 1;
    int64_t v = query_int(db, "PRAGMA user_version");
    int rc = 0;
    if (v < 0) {
        rc = fail(db, "reading the schema version", err);
    } else if (v > target) {
        snprintf(err, DB_ERR_LEN,
                 "the file has schema version %lld, newer than this fusecheck's %d: use a newer fusecheck",
                 (long long)v, target);
        rc = 1;
    }
    for (int k = (int)v; !rc && k < target; k++) {
        char set[64];
        snprintf(set, sizeof set, "PRAGMA user_version = %d", k + 1);
        rc = exec(db, m[k], "upgrading the schema", err) || exec(db, set, "upgrading the schema", err);
    }
    if (rc) {
        sqlite3_exec(db->conn, "ROLLBACK", NULL, NULL, NULL);
        return 1;
    }
    return exec(db, "COMMIT", "upgrading the schema", err);
}

/* Prepare every statement. A file opened for reading may be of an older schema (it is not upgraded): a statement
 * writing a table it lacks stays unprepared (NULL: SQLite answers any use of it with an error, and a read-only
 * file takes no writes anyway). */
static int prepare_all(struct db *db, char err[DB_ERR_LEN])
{
    for (int i = 0; i < DB_STMT_COUNT; i++)
        if (sqlite3_prepare_v3(db->conn, statement_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &db->stmt[i], NULL) !=
                SQLITE_OK &&
            !(db->readonly && db_schema_version(db) < DB_SCHEMA_VERSION))
            return fail(db, "preparing statements", err);
    return 0;
}

/* Open path with flags and configure the connection; migrate when writable. */
static int open_with(const char *path, int flags, bool readonly, struct db **out, char err[DB_ERR_LEN])
{
    *out = NULL;
    struct db *db = calloc(1, sizeof *db);
    if (!db)
        abort();
    db->readonly = readonly;
    if (sqlite3_open_v2(path, &db->conn, flags, NULL) != SQLITE_OK) {
        snprintf(err, DB_ERR_LEN, "%.250s: cannot open: %.200s", path, db->conn ? sqlite3_errmsg(db->conn) : "no memory");
        db_close(db);
        return 1;
    }
    sqlite3_busy_timeout(db->conn, 120000);
    sqlite3_extended_result_codes(db->conn, 1);
    char what[600];
    snprintf(what, sizeof what, "%.250s", path);
    /* Touch the file: a file that is not a database fails here, before anything is written. */
    if (query_int(db, "SELECT count(*) FROM sqlite_schema") < 0) {
        fail(db, what, err);
        db_close(db);
        return 1;
    }
    bool bad = exec(db, "PRAGMA foreign_keys = ON", what, err);
    if (!bad && !readonly)
        bad = exec(db, "PRAGMA journal_mode = WAL", what, err) || exec(db, "PRAGMA synchronous = NORMAL", what, err) ||
              migrate(db, err);
    if (!bad && readonly && db_schema_version(db) > DB_SCHEMA_VERSION) {
        snprintf(err, DB_ERR_LEN, "%.250s: schema version %d is newer than this fusecheck's %d", path,
                 db_schema_version(db), DB_SCHEMA_VERSION);
        bad = true;
    }
    if (!bad)
        bad = prepare_all(db, err);
    if (bad) {
        db_close(db);
        return 1;
    }
    *out = db;
    return 0;
}

int db_open(const char *path, struct db **out, char err[DB_ERR_LEN])
{
    return open_with(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, false, out, err);
}

int db_open_readonly(const char *path, struct db **out, char err[DB_ERR_LEN])
{
    if (access(path, F_OK) != 0) {
        snprintf(err, DB_ERR_LEN, "%.250s: no such file", path);
        return 1;
    }
    return open_with(path, SQLITE_OPEN_READONLY, true, out, err);
}

void db_close(struct db *db)
{
    if (!db)
        return;
    for (int i = 0; i < DB_STMT_COUNT; i++)
        sqlite3_finalize(db->stmt[i]);
    sqlite3_close(db->conn);
    free(db);
}

int db_begin(struct db *db, char err[DB_ERR_LEN]) { return exec(db, "BEGIN IMMEDIATE", "starting a transaction", err); }

int db_commit(struct db *db, char err[DB_ERR_LEN])
{
    if (exec(db, "COMMIT", "committing", err)) {
        db_rollback(db);
        return 1;
    }
    return 0;
}

void db_rollback(struct db *db)
{
    if (!sqlite3_get_autocommit(db->conn))
        sqlite3_exec(db->conn, "ROLLBACK", NULL, NULL, NULL);
}

/* ── Binding helpers ─────────────────────────────────────────────────────────────────────────────────────── */

/* A statement ready for new bindings (every caller binds every parameter). */
static sqlite3_stmt *use(struct db *db, enum db_stmt s)
{
    sqlite3_reset(db->stmt[s]);
    return db->stmt[s];
}

/* Bind text (NULL binds NULL). */
static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC); /* the caller's text outlives the statement's step */
    else
        sqlite3_bind_null(st, i);
}

/* Run a statement that returns no rows. */
static int done(struct db *db, sqlite3_stmt *st, const char *what, char err[DB_ERR_LEN])
{
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) {
        fail(db, what, err);
        sqlite3_reset(st);
        return 1;
    }
    sqlite3_reset(st);
    return 0;
}

/* The current UTC time as ISO 8601. */
static void now_iso(char buf[32])
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ── Writes ──────────────────────────────────────────────────────────────────────────────────────────────── */

int db_run_begin(struct db *db, const struct db_run_info *info, int64_t *run, char err[DB_ERR_LEN])
{
    char started[32];
    now_iso(started);
    if (db_begin(db, err))
        return 1;
    sqlite3_stmt *st = use(db, DB_STMT_RUN_BEGIN);
    bind_text(st, 1, info->kind);
    bind_text(st, 2, started);
    bind_text(st, 3, info->git_rev);
    bind_text(st, 4, info->host);
    bind_text(st, 5, info->version);
    bind_text(st, 6, info->command);
    if (done(db, st, "recording the run", err)) {
        db_rollback(db);
        return 1;
    }
    *run = sqlite3_last_insert_rowid(db->conn);
    return db_commit(db, err);
}

int db_run_end(struct db *db, int64_t run, const char *status, char err[DB_ERR_LEN])
{
    char ended[32];
    now_iso(ended);
    if (db_begin(db, err))
        return 1;
    sqlite3_stmt *st = use(db, DB_STMT_RUN_END);
    bind_text(st, 1, ended);
    bind_text(st, 2, status);
    sqlite3_bind_int64(st, 3, run);
    if (done(db, st, "ending the run", err)) {
        db_rollback(db);
        return 1;
    }
    return db_commit(db, err);
}

/* The id a lookup statement (already bound) returns, or 0 when none. */
static int64_t lookup_id(sqlite3_stmt *st)
{
    int64_t id = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    return id;
}

int db_graph(struct db *db, const char *name, const char *family, const char *mode, int64_t ops, const char *sha256,
             int64_t *id, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_GRAPH_GET);
    bind_text(st, 1, name);
    bind_text(st, 2, mode);
    bind_text(st, 3, sha256);
    if ((*id = lookup_id(st)) != 0)
        return 0;
    st = use(db, DB_STMT_GRAPH_PUT);
    bind_text(st, 1, name);
    bind_text(st, 2, family);
    bind_text(st, 3, mode);
    sqlite3_bind_int64(st, 4, ops);
    bind_text(st, 5, sha256);
    if (done(db, st, "recording a graph", err))
        return 1;
    *id = sqlite3_last_insert_rowid(db->conn);
    return 0;
}

int db_shim(struct db *db, const char *name, const char *knobs, int64_t *id, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_SHIM_GET);
    bind_text(st, 1, name);
    if ((*id = lookup_id(st)) != 0)
        return 0;
    st = use(db, DB_STMT_SHIM_PUT);
    bind_text(st, 1, name);
    bind_text(st, 2, knobs ? knobs : "");
    if (done(db, st, "recording a shim", err))
        return 1;
    *id = sqlite3_last_insert_rowid(db->conn);
    return 0;
}

int db_step(struct db *db, int64_t run, int seq, const char *name, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_STEP_PUT);
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int(st, 2, seq);
    bind_text(st, 3, name);
    return done(db, st, "recording a step", err);
}

int db_report(struct db *db, const struct db_report *r, int64_t *id, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_REPORT_PUT);
    sqlite3_bind_int64(st, 1, r->run);
    sqlite3_bind_int64(st, 2, r->graph);
    sqlite3_bind_int64(st, 3, r->shim);
    bind_text(st, 4, r->digest);
    sqlite3_bind_int64(st, 5, r->fired);
    sqlite3_bind_int64(st, 6, r->refused);
    sqlite3_bind_int64(st, 7, r->held);
    sqlite3_bind_double(st, 8, r->optimize_ms);
    bind_text(st, 9, r->rewritten);
    if (done(db, st, "recording a report", err))
        return 1;
    *id = sqlite3_last_insert_rowid(db->conn);
    return 0;
}


/* Bind one decision's seven values at parameter `base` + 1 onwards. */
static void bind_decision(sqlite3_stmt *st, int base, const struct db_decision *d)
{
    sqlite3_bind_int64(st, base + 1, d->report);
    sqlite3_bind_int64(st, base + 2, d->seq);
    bind_text(st, base + 3, d->rule);
    bind_text(st, base + 4, d->cls);
    bind_text(st, base + 5, d->covers);
    bind_text(st, base + 6, d->outcome);
    bind_text(st, base + 7, d->reason);
}

int db_decision(struct db *db, const struct db_decision *d, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_DECISION_PUT);
    bind_decision(st, 0, d);
    return done(db, st, "recording a decision", err);
}

int db_decisions(struct db *db, const struct db_decision *d, int64_t n, char err[DB_ERR_LEN])
{
    int64_t i = 0;
    for (; i + DB_DECISION_BATCH <= n; i += DB_DECISION_BATCH) {
        sqlite3_stmt *st = use(db, DB_STMT_DECISIONS_PUT);
        for (int k = 0; k < DB_DECISION_BATCH; k++)
            bind_decision(st, 7 * k, &d[i + k]);
        if (done(db, st, "recording decisions", err))
            return 1;
    }
    for (; i < n; i++)
        if (db_decision(db, &d[i], err))
            return 1;
    return 0;
}

int db_failure(struct db *db, const struct db_failure *f, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_FAILURE_PUT);
    sqlite3_bind_int64(st, 1, f->run);
    bind_text(st, 2, f->graph);
    bind_text(st, 3, f->mode);
    bind_text(st, 4, f->shim);
    bind_text(st, 5, f->stage);
    bind_text(st, 6, f->reason);
    return done(db, st, "recording a failure", err);
}

int db_diff(struct db *db, const struct db_diff *d, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_DIFF_PUT);
    sqlite3_bind_int64(st, 1, d->run);
    sqlite3_bind_int64(st, 2, d->graph);
    sqlite3_bind_int64(st, 3, d->shim);
    sqlite3_bind_int(st, 4, d->identical);
    sqlite3_bind_int64(st, 5, d->compared);
    bind_text(st, 6, d->identical ? NULL : d->tensor);
    for (int i = 7; i <= 9; i++)
        sqlite3_bind_null(st, i);
    if (!d->identical && d->tensor) {
        sqlite3_bind_int64(st, 7, d->index);
        sqlite3_bind_double(st, 8, d->lifted);
        sqlite3_bind_double(st, 9, d->rewritten);
    }
    bind_text(st, 10, d->kind ? d->kind : "values");
    bind_text(st, 11, d->identical ? NULL : d->reason);
    return done(db, st, "recording a diff", err);
}

int db_tolerance(struct db *db, const struct db_tolerance *t, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_TOLERANCE_PUT);
    sqlite3_bind_int64(st, 1, t->run);
    sqlite3_bind_int64(st, 2, t->graph);
    sqlite3_bind_int64(st, 3, t->shim);
    bind_text(st, 4, t->backend);
    bind_text(st, 5, t->op);
    bind_text(st, 6, t->tensor);
    sqlite3_bind_int64(st, 7, t->elements);
    sqlite3_bind_double(st, 8, t->max_abs);
    sqlite3_bind_double(st, 9, t->max_rel);
    sqlite3_bind_double(st, 10, t->nmse);
    sqlite3_bind_double(st, 11, t->bound);
    sqlite3_bind_int(st, 12, t->pass);
    sqlite3_bind_double(st, 13, t->ratio);
    sqlite3_bind_int64(st, 14, t->worst);
    sqlite3_bind_double(st, 15, t->lane);
    sqlite3_bind_double(st, 16, t->reference);
    return done(db, st, "recording a tolerance result", err);
}

int db_tolerance_step(struct db *db, const struct db_tolerance_step *t, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_TOLERANCE_STEP_PUT);
    sqlite3_bind_int64(st, 1, t->run);
    sqlite3_bind_int64(st, 2, t->graph);
    sqlite3_bind_int64(st, 3, t->shim);
    bind_text(st, 4, t->backend);
    sqlite3_bind_int64(st, 5, t->step);
    bind_text(st, 6, t->tensor);
    sqlite3_bind_int64(st, 7, t->rows);
    sqlite3_bind_double(st, 8, t->nmse);
    sqlite3_bind_double(st, 9, t->kl);
    sqlite3_bind_int64(st, 10, t->top1_agree);
    sqlite3_bind_double(st, 11, t->max_abs);
    return done(db, st, "recording a tolerance step", err);
}

int db_proof(struct db *db, const struct db_proof *p, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_PROOF_PUT);
    sqlite3_bind_int64(st, 1, p->run);
    bind_text(st, 2, p->rule);
    bind_text(st, 3, p->obligation);
    sqlite3_bind_int64(st, 4, p->bound);
    bind_text(st, 5, p->verdict);
    bind_text(st, 6, p->reason);
    sqlite3_bind_double(st, 7, p->ms);
    bind_text(st, 8, p->counterexample);
    return done(db, st, "recording a proof", err);
}

int db_fuzz_stat(struct db *db, const struct db_fuzz_stat *s, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_FUZZ_STAT_PUT);
    sqlite3_bind_int64(st, 1, s->run);
    bind_text(st, 2, s->harness);
    sqlite3_bind_int64(st, 3, s->executions);
    sqlite3_bind_double(st, 4, s->seconds);
    sqlite3_bind_int64(st, 5, s->corpus);
    sqlite3_bind_int64(st, 6, s->coverage);
    return done(db, st, "recording fuzz statistics", err);
}

int db_fuzz_finding(struct db *db, int64_t run, const char *harness, const char *signature, const char *input_sha256,
                    char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_FINDING_SEEN);
    sqlite3_bind_int64(st, 1, run);
    bind_text(st, 2, harness);
    bind_text(st, 3, signature);
    if (done(db, st, "recording a finding", err))
        return 1;
    if (sqlite3_changes(db->conn) > 0)
        return 0;
    st = use(db, DB_STMT_FINDING_PUT);
    bind_text(st, 1, harness);
    bind_text(st, 2, signature);
    bind_text(st, 3, input_sha256);
    sqlite3_bind_int64(st, 4, run);
    sqlite3_bind_int64(st, 5, run);
    return done(db, st, "recording a finding", err);
}

int db_code_mutant(struct db *db, const struct db_code_mutant *m, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_CODE_MUTANT_PUT);
    sqlite3_bind_int64(st, 1, m->run);
    bind_text(st, 2, m->mutant);
    bind_text(st, 3, m->file);
    sqlite3_bind_int64(st, 4, m->line);
    bind_text(st, 5, m->op);
    bind_text(st, 6, m->original);
    bind_text(st, 7, m->mutated);
    bind_text(st, 8, m->outcome);
    bind_text(st, 9, m->killed_by);
    sqlite3_bind_double(st, 10, m->seconds);
    return done(db, st, "recording a code mutant", err);
}

/* ── Queries ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* Column i as text (NULL stays NULL). */
static const char *col_text(sqlite3_stmt *st, int i) { return (const char *)sqlite3_column_text(st, i); }

int db_runs(struct db *db, db_run_fn fn, void *ctx, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_RUNS);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        fn(sqlite3_column_int64(st, 0), col_text(st, 1), col_text(st, 2), col_text(st, 3), col_text(st, 4),
           col_text(st, 5), sqlite3_column_int64(st, 6), ctx);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : fail(db, "listing runs", err);
}

int db_run_exists(struct db *db, int64_t run, bool *exists, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_RUN_EXISTS);
    sqlite3_bind_int64(st, 1, run);
    int rc = sqlite3_step(st);
    *exists = rc == SQLITE_ROW;
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : fail(db, "looking up a run", err);
}

int db_runs_common(struct db *db, int64_t a, int64_t b, int64_t *n, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_RUNS_COMMON);
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    int rc = sqlite3_step(st);
    *n = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 0 : fail(db, "pairing two runs' reports", err);
}

int db_decision_changes(struct db *db, int64_t a, int64_t b, db_change_fn fn, void *ctx, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_CHANGES);
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        fn(col_text(st, 0), col_text(st, 1), col_text(st, 2), col_text(st, 3), col_text(st, 4), col_text(st, 5),
           col_text(st, 6), col_text(st, 7), ctx);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : fail(db, "comparing runs", err);
}

/* ── Merge ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* Copy every run of the attached file `src` (named `label` in origins) into the main file, ids remapped through
 * temporary maps. Runs in one transaction with the rest of the merge. */
static const char merge_sql[] =
    "CREATE TEMP TABLE IF NOT EXISTS map_run (old INTEGER PRIMARY KEY, new INTEGER);"
    "CREATE TEMP TABLE IF NOT EXISTS map_graph (old INTEGER PRIMARY KEY, new INTEGER);"
    "CREATE TEMP TABLE IF NOT EXISTS map_shim (old INTEGER PRIMARY KEY, new INTEGER);"
    "CREATE TEMP TABLE IF NOT EXISTS map_report (old INTEGER PRIMARY KEY, new INTEGER);"
    "DELETE FROM map_run; DELETE FROM map_graph; DELETE FROM map_shim; DELETE FROM map_report;"
    "INSERT OR IGNORE INTO main.graphs (name, family, mode, ops, sha256)"
    "  SELECT name, family, mode, ops, sha256 FROM src.graphs;"
    "INSERT INTO map_graph SELECT s.id, m.id FROM src.graphs s JOIN main.graphs m"
    "  ON m.name = s.name AND m.mode IS s.mode AND m.sha256 = s.sha256;"
    "INSERT OR IGNORE INTO main.shims (name, knobs) SELECT name, knobs FROM src.shims;"
    "INSERT INTO map_shim SELECT s.id, m.id FROM src.shims s JOIN main.shims m ON m.name = s.name;";

/* Copy runs one at a time so each new id is known; a run the output holds already (the same origin) is skipped, and
 * so are its rows (they join on map_run). */
static int merge_runs(struct db *out, const char *label, struct db_merge_result *res, char err[DB_ERR_LEN])
{
    sqlite3_stmt *sel, *ins, *map, *held;
    if (sqlite3_prepare_v2(out->conn,
                           "SELECT id, kind, started, ended, status, git_rev, host, version, command, origin "
                           "FROM src.runs ORDER BY id",
                           -1, &sel, NULL) != SQLITE_OK)
        return fail(out, "merging runs", err);
    sqlite3_prepare_v2(out->conn,
                       "INSERT INTO main.runs (kind, started, ended, status, git_rev, host, version, command, origin) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       -1, &ins, NULL);
    sqlite3_prepare_v2(out->conn, "INSERT INTO map_run VALUES (?, ?)", -1, &map, NULL);
    sqlite3_prepare_v2(out->conn, "SELECT count(*) FROM main.runs WHERE origin = ?", -1, &held, NULL);
    int rc = !ins || !map || !held;
    while (!rc && sqlite3_step(sel) == SQLITE_ROW) {
        char origin[1024];
        const char *prior = col_text(sel, 9);
        if (prior)
            snprintf(origin, sizeof origin, "%.1000s", prior);
        else
            snprintf(origin, sizeof origin, "%.900s#%lld", label, (long long)sqlite3_column_int64(sel, 0));
        bind_text(held, 1, origin);
        bool have = sqlite3_step(held) == SQLITE_ROW && sqlite3_column_int(held, 0) > 0;
        sqlite3_reset(held);
        if (have) {
            res->skipped++;
            continue;
        }
        res->runs++;
        for (int i = 1; i <= 8; i++)
            sqlite3_bind_value(ins, i, sqlite3_column_value(sel, i));
        bind_text(ins, 9, origin);
        rc = sqlite3_step(ins) != SQLITE_DONE;
        sqlite3_reset(ins);
        sqlite3_bind_int64(map, 1, sqlite3_column_int64(sel, 0));
        sqlite3_bind_int64(map, 2, sqlite3_last_insert_rowid(out->conn));
        rc = rc || sqlite3_step(map) != SQLITE_DONE;
        sqlite3_reset(map);
    }
    sqlite3_finalize(sel);
    sqlite3_finalize(ins);
    sqlite3_finalize(map);
    sqlite3_finalize(held);
    return rc ? fail(out, "merging runs", err) : 0;
}

/* The rest of a source's rows, remapped. Reports are copied one at a time to learn their new ids. */
static const char merge_rows_sql[] =
    "INSERT INTO main.steps (run_id, seq, name) SELECT r.new, s.seq, s.name FROM src.steps s"
    "  JOIN map_run r ON r.old = s.run_id;"
    "INSERT INTO main.proofs (run_id, rule, obligation, bound, verdict, reason, ms, counterexample)"
    "  SELECT r.new, p.rule, p.obligation, p.bound, p.verdict, p.reason, p.ms, p.counterexample"
    "  FROM src.proofs p JOIN map_run r ON r.old = p.run_id ORDER BY p.id;"
    "INSERT INTO main.fuzz_stats (run_id, harness, executions, seconds, corpus, coverage)"
    "  SELECT r.new, f.harness, f.executions, f.seconds, f.corpus, f.coverage"
    "  FROM src.fuzz_stats f JOIN map_run r ON r.old = f.run_id ORDER BY f.id;"
    "INSERT INTO main.fuzz_findings (harness, signature, input_sha256, first_run, last_run, count)"
    "  SELECT f.harness, f.signature, f.input_sha256, a.new, b.new, f.count FROM src.fuzz_findings f"
    "  JOIN map_run a ON a.old = f.first_run JOIN map_run b ON b.old = f.last_run WHERE true"
    "  ON CONFLICT (harness, signature) DO UPDATE SET count = count + excluded.count,"
    "  first_run = min(first_run, excluded.first_run), last_run = max(last_run, excluded.last_run);";

/* Whether the attached source's table has the column (a file from before the schema version that added it has
 * not). */
static bool src_has_column(struct db *out, const char *table, const char *column)
{
    sqlite3_stmt *q;
    char sql[160]; /* the names are this file's own constants */
    snprintf(sql, sizeof sql, "SELECT count(*) FROM pragma_table_info('%s', 'src') WHERE name = '%s'", table, column);
    if (sqlite3_prepare_v2(out->conn, sql, -1, &q, NULL) != SQLITE_OK)
        return false;
    bool has = sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) > 0;
    sqlite3_finalize(q);
    return has;
}

/* A source's diff rows: from a file before version 3 (each a comparison of values, without a reason), or after. */
static const char merge_diffs_v2_sql[] =
    "INSERT INTO main.diffs (run_id, graph_id, shim_id, identical, compared, tensor, first_index, lifted, rewritten)"
    "  SELECT r.new, g.new, sh.new, d.identical, d.compared, d.tensor, d.first_index, d.lifted, d.rewritten"
    "  FROM src.diffs d JOIN map_run r ON r.old = d.run_id JOIN map_graph g ON g.old = d.graph_id"
    "  JOIN map_shim sh ON sh.old = d.shim_id ORDER BY d.id;";
static const char merge_diffs_v3_sql[] =
    "INSERT INTO main.diffs (run_id, graph_id, shim_id, identical, compared, tensor, first_index, lifted, rewritten,"
    "  kind, reason)"
    "  SELECT r.new, g.new, sh.new, d.identical, d.compared, d.tensor, d.first_index, d.lifted, d.rewritten, d.kind,"
    "  d.reason FROM src.diffs d JOIN map_run r ON r.old = d.run_id JOIN map_graph g ON g.old = d.graph_id"
    "  JOIN map_shim sh ON sh.old = d.shim_id ORDER BY d.id;";

/* Copy the source's diff rows, with their kinds and reasons when it has them (version 3). */
static int merge_diffs(struct db *out, char err[DB_ERR_LEN])
{
    bool v3 = src_has_column(out, "diffs", "kind");
    if (sqlite3_exec(out->conn, v3 ? merge_diffs_v3_sql : merge_diffs_v2_sql, NULL, NULL, NULL) != SQLITE_OK)
        return fail(out, "merging diffs", err);
    return 0;
}

/* A source's tolerance rows: from a version-1 file (without their worst elements), or from a version-2 one. */
static const char merge_tolerances_v1_sql[] =
    "INSERT INTO main.tolerances (run_id, graph_id, shim_id, backend, op, tensor, elements, max_abs, max_rel, nmse,"
    "  bound, pass)"
    "  SELECT r.new, g.new, sh.new, t.backend, t.op, t.tensor, t.elements, t.max_abs, t.max_rel, t.nmse, t.bound,"
    "  t.pass FROM src.tolerances t JOIN map_run r ON r.old = t.run_id JOIN map_graph g ON g.old = t.graph_id"
    "  JOIN map_shim sh ON sh.old = t.shim_id ORDER BY t.id;";
static const char merge_tolerances_v2_sql[] =
    "INSERT INTO main.tolerances (run_id, graph_id, shim_id, backend, op, tensor, elements, max_abs, max_rel, nmse,"
    "  bound, pass, ratio, worst, lane, reference)"
    "  SELECT r.new, g.new, sh.new, t.backend, t.op, t.tensor, t.elements, t.max_abs, t.max_rel, t.nmse, t.bound,"
    "  t.pass, t.ratio, t.worst, t.lane, t.reference"
    "  FROM src.tolerances t JOIN map_run r ON r.old = t.run_id JOIN map_graph g ON g.old = t.graph_id"
    "  JOIN map_shim sh ON sh.old = t.shim_id ORDER BY t.id;";

/* The end-to-end tolerance steps of a source that has them (a file from before schema version 2 has none). */
static const char merge_steps_sql[] =
    "INSERT INTO main.tolerance_steps (run_id, graph_id, shim_id, backend, step, tensor, rows, nmse, kl, top1_agree,"
    "  max_abs)"
    "  SELECT r.new, g.new, sh.new, t.backend, t.step, t.tensor, t.rows, t.nmse, t.kl, t.top1_agree, t.max_abs"
    "  FROM src.tolerance_steps t JOIN map_run r ON r.old = t.run_id JOIN map_graph g ON g.old = t.graph_id"
    "  JOIN map_shim sh ON sh.old = t.shim_id ORDER BY t.id;";

/* The code mutants of a source that has them (a file from before schema version 3 has none). */
static const char merge_code_mutants_sql[] =
    "INSERT INTO main.code_mutants (run_id, mutant, file, line, operator, original, mutated, outcome, killed_by,"
    "  seconds)"
    "  SELECT r.new, c.mutant, c.file, c.line, c.operator, c.original, c.mutated, c.outcome, c.killed_by, c.seconds"
    "  FROM src.code_mutants c JOIN map_run r ON r.old = c.run_id ORDER BY c.id;";

/* Whether the attached source has the table `name`: 1 yes, 0 no, -1 on error (in err). */
static int src_has(struct db *out, const char *name, char err[DB_ERR_LEN])
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(out->conn, "SELECT count(*) FROM src.sqlite_master WHERE type = 'table' AND name = ?", -1,
                           &q, NULL) != SQLITE_OK) {
        fail(out, "reading a merged file's tables", err);
        return -1;
    }
    bind_text(q, 1, name);
    int has = sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) > 0;
    sqlite3_finalize(q);
    return has;
}

/* Copy the source's tolerance rows, and its tolerance steps when it has them (version 2). */
static int merge_tolerances(struct db *out, const char *input, char err[DB_ERR_LEN])
{
    int v2 = src_has(out, "tolerance_steps", err);
    if (v2 < 0)
        return 1;
    if (!v2)
        return exec(out, merge_tolerances_v1_sql, input, err);
    return exec(out, merge_tolerances_v2_sql, input, err) || exec(out, merge_steps_sql, input, err);
}

/* Copy the source's code mutants when it has them (version 3). */
/* A source's failure rows (a file from before version 3 has none). */
static const char merge_failures_sql[] =
    "INSERT INTO main.failures (run_id, graph, mode, shim, stage, reason)"
    "  SELECT r.new, f.graph, f.mode, f.shim, f.stage, f.reason FROM src.failures f"
    "  JOIN map_run r ON r.old = f.run_id ORDER BY f.id;";

/* Copy the source's failures when it has them. */
static int merge_failures(struct db *out, const char *input, char err[DB_ERR_LEN])
{
    int has = src_has(out, "failures", err);
    return has < 0 ? 1 : has ? exec(out, merge_failures_sql, input, err) : 0;
}

static int merge_code_mutants(struct db *out, const char *input, char err[DB_ERR_LEN])
{
    int v3 = src_has(out, "code_mutants", err);
    return v3 < 0 ? 1 : v3 ? exec(out, merge_code_mutants_sql, input, err) : 0;
}

/* Copy reports and their decisions. */
static int merge_reports(struct db *out, char err[DB_ERR_LEN])
{
    sqlite3_stmt *sel, *ins, *dec;
    sqlite3_prepare_v2(out->conn,
                       src_has_column(out, "reports", "rewritten")
                           ? "SELECT p.id, r.new, g.new, s.new, p.digest, p.fired, p.refused, p.held, p.optimize_ms, "
                             "p.rewritten FROM src.reports p JOIN map_run r ON r.old = p.run_id "
                             "JOIN map_graph g ON g.old = p.graph_id JOIN map_shim s ON s.old = p.shim_id ORDER BY p.id"
                           : "SELECT p.id, r.new, g.new, s.new, p.digest, p.fired, p.refused, p.held, p.optimize_ms, "
                             "NULL FROM src.reports p JOIN map_run r ON r.old = p.run_id "
                             "JOIN map_graph g ON g.old = p.graph_id JOIN map_shim s ON s.old = p.shim_id ORDER BY p.id",
                       -1, &sel, NULL);
    sqlite3_prepare_v2(out->conn,
                       "INSERT INTO main.reports (run_id, graph_id, shim_id, digest, fired, refused, held, "
                       "optimize_ms, rewritten) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       -1, &ins, NULL);
    sqlite3_prepare_v2(out->conn,
                       "INSERT INTO main.decisions (report_id, seq, rule, class, covers, outcome, reason) "
                       "SELECT ?, seq, rule, class, covers, outcome, reason FROM src.decisions WHERE report_id = ? "
                       "ORDER BY seq",
                       -1, &dec, NULL);
    int rc = !sel || !ins || !dec;
    while (!rc && sqlite3_step(sel) == SQLITE_ROW) {
        for (int i = 1; i <= 9; i++)
            sqlite3_bind_value(ins, i, sqlite3_column_value(sel, i));
        rc = sqlite3_step(ins) != SQLITE_DONE;
        sqlite3_reset(ins);
        sqlite3_bind_int64(dec, 1, sqlite3_last_insert_rowid(out->conn));
        sqlite3_bind_int64(dec, 2, sqlite3_column_int64(sel, 0));
        rc = rc || sqlite3_step(dec) != SQLITE_DONE;
        sqlite3_reset(dec);
    }
    sqlite3_finalize(sel);
    sqlite3_finalize(ins);
    sqlite3_finalize(dec);
    return rc ? fail(out, "merging reports", err) : 0;
}

/* Merge one input file into out. */
static int merge_one(struct db *out, const char *input, struct db_merge_result *res, char err[DB_ERR_LEN])
{
    struct db *probe;
    if (db_open_readonly(input, &probe, err))
        return 1;
    /* an input whose pages are damaged is refused before anything of it is copied */
    sqlite3_stmt *q;
    bool sound = sqlite3_prepare_v2(probe->conn, "PRAGMA quick_check", -1, &q, NULL) == SQLITE_OK &&
                 sqlite3_step(q) == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(q, 0), "ok") == 0;
    sqlite3_finalize(q);
    db_close(probe);
    if (!sound) {
        snprintf(err, DB_ERR_LEN, "%.250s: fails its integrity check; not merged", input);
        return 1;
    }
    sqlite3_stmt *att;
    sqlite3_prepare_v2(out->conn, "ATTACH DATABASE ? AS src", -1, &att, NULL);
    bind_text(att, 1, input);
    int rc = sqlite3_step(att) != SQLITE_DONE;
    sqlite3_finalize(att);
    if (rc) {
        snprintf(err, DB_ERR_LEN, "%.250s: cannot attach: %.200s", input, sqlite3_errmsg(out->conn));
        return 1;
    }
    rc = db_begin(out, err) || exec(out, merge_sql, input, err) || merge_runs(out, input, res, err) ||
         merge_reports(out, err) || exec(out, merge_rows_sql, input, err) || merge_diffs(out, err) ||
         merge_tolerances(out, input, err) || merge_code_mutants(out, input, err) ||
         merge_failures(out, input, err);
    if (rc)
        db_rollback(out);
    else
        rc = db_commit(out, err);
    sqlite3_exec(out->conn, "DETACH DATABASE src", NULL, NULL, NULL);
    return rc;
}

/* Remove path's stale sidecars (`-wal`, `-shm`), so no later open pairs them with a new file at path. */
static void remove_sidecars(const char *path)
{
    char side[1100];
    snprintf(side, sizeof side, "%.1000s-wal", path);
    remove(side);
    snprintf(side, sizeof side, "%.1000s-shm", path);
    remove(side);
}

/* Copy the database at path (with what its write-ahead log holds) into db through SQLite's backup. 0, or 1 with err. */
static int copy_existing(struct db *db, const char *path, char err[DB_ERR_LEN])
{
    struct db *src;
    if (db_open(path, &src, err)) /* brings an older schema forward */
        return 1;
    sqlite3_backup *b = sqlite3_backup_init(db->conn, "main", src->conn, "main");
    int rc = !b || sqlite3_backup_step(b, -1) != SQLITE_DONE;
    if (b)
        sqlite3_backup_finish(b);
    if (rc)
        snprintf(err, DB_ERR_LEN, "%.250s: cannot copy: %.200s", path, sqlite3_errmsg(db->conn));
    db_close(src);
    return rc;
}

/* Whether the merge may write out under mode: an absent path, or (FORCE, APPEND) a regular file. 0, or 1 with err. */
static int check_output(const char *out, enum db_merge_mode mode, bool *exists, char err[DB_ERR_LEN])
{
    struct stat st;
    *exists = lstat(out, &st) == 0;
    if (!*exists)
        return 0;
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, DB_ERR_LEN, "%.250s: not a regular file; a merge writes only a results.db file", out);
        return 1;
    }
    if (mode == DB_MERGE_NEW) {
        snprintf(err, DB_ERR_LEN, "%.250s: exists; --append adds to it, --force replaces it", out);
        return 1;
    }
    return 0;
}

int db_merge(const char *const *inputs, int ninputs, const char *out, enum db_merge_mode mode,
             struct db_merge_result *result, char err[DB_ERR_LEN])
{
    struct db_merge_result res = {0, 0};
    bool exists;
    if (check_output(out, mode, &exists, err))
        return 1;
    size_t n = strlen(out) + 32;
    char *tmp = malloc(n);
    if (!tmp)
        abort();
    snprintf(tmp, n, "%s.merge.%ld", out, (long)getpid());
    remove(tmp);
    remove_sidecars(tmp);
    struct db *db;
    int rc = db_open(tmp, &db, err);
    if (!rc && mode == DB_MERGE_APPEND && exists)
        rc = copy_existing(db, out, err);
    for (int i = 0; !rc && i < ninputs; i++)
        rc = merge_one(db, inputs[i], &res, err);
    if (!rc)
        rc = exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", "finishing the merge", err);
    db_close(db);
    if (!rc) {
        remove_sidecars(out); /* a killed writer's log must not pair with the new file */
        if (rename(tmp, out) != 0) {
            snprintf(err, DB_ERR_LEN, "%.250s: cannot write: %.100s", out, strerror(errno));
            rc = 1;
        }
    }
    if (rc)
        remove(tmp);
    remove_sidecars(tmp);
    free(tmp);
    if (result)
        *result = res;
    return rc;
}
