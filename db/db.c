/* db/db.c — opening results.db (pragmas, migrations), writing rows through prepared statements, the queries the
 * CLI reads, and merging the files of parallel shards. */
#include "db.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* The prepared statements, one per row kind: enum suffix and SQL. */
#define DB_STATEMENTS(X) \
    X(RUN_BEGIN, "INSERT INTO runs (kind, started, status, git_rev, host, version, command, optimizer_name, " \
                 "optimizer_version, optimizer_command, config) VALUES (?, ?, 'incomplete', ?, ?, ?, ?, ?, ?, ?, ?)") \
    X(RUN_FIXTURES, "UPDATE runs SET fixture_cases = ?, fixture_failures = ? WHERE id = ?") \
    X(RUN_END, "UPDATE runs SET ended = ?, status = ? WHERE id = ? AND status = 'incomplete'") \
    X(RUN_STATUS, "SELECT status FROM runs WHERE id = ?") \
    X(RUN_OPTIMIZER, "SELECT optimizer_name, optimizer_version, optimizer_command FROM runs WHERE id = ?") \
    X(GRAPH_GET, "SELECT id FROM graphs WHERE name = ? AND mode IS ? AND sha256 = ?") \
    X(GRAPH_PUT, "INSERT INTO graphs (name, family, mode, ops, sha256) VALUES (?, ?, ?, ?, ?)") \
    X(SHIM_GET, "SELECT id FROM shims WHERE name = ?") \
    X(SHIM_PUT, "INSERT INTO shims (name, knobs) VALUES (?, ?)") \
    X(STEP_PUT, "INSERT OR REPLACE INTO steps (run_id, seq, name) VALUES (?, ?, ?)") \
    X(SET_GET, "SELECT id FROM decision_sets WHERE digest = ?") \
    X(SET_PUT, "INSERT INTO decision_sets (digest, fired, refused, held) VALUES (?, ?, ?, ?)") \
    X(SET_RULE_PUT, "INSERT INTO set_rules (set_id, bucket, rule, decisions, fired, hash, keys) " \
                    "VALUES (?, ?, ?, ?, ?, ?, ?)") \
    X(SET_BUCKETS_PUT, "UPDATE decision_sets SET buckets = ? WHERE id = ?") \
    X(REPORT_PUT, "INSERT INTO reports (run_id, graph_id, shim_id, set_id, optimize_ms, rewritten) " \
                  "VALUES (?, ?, ?, ?, ?, ?)") \
    X(DECISION_PUT, "INSERT INTO set_decisions (set_id, seq, rule, class, covers, outcome, reason, line, code) " \
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)") \
    X(DECISIONS_PUT, "INSERT INTO set_decisions (set_id, seq, rule, class, covers, outcome, reason, line, code) " \
                     "VALUES " ROWS16("(?, ?, ?, ?, ?, ?, ?, ?, ?)")) \
    X(DIFF_PUT, "INSERT INTO diffs (run_id, graph_id, shim_id, identical, compared, tensor, first_index, lifted, " \
                "rewritten, kind, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)") \
    X(TSET_GET, "SELECT id FROM tolerance_sets WHERE digest = ?") \
    X(TSET_PUT, "INSERT INTO tolerance_sets (digest) VALUES (?)") \
    X(RUN_TOLERANCE_PUT, "INSERT INTO run_tolerances (run_id, graph_id, shim_id, set_id) VALUES (?, ?, ?, ?)") \
    X(TOLERANCE_PUT, "INSERT INTO set_tolerances (set_id, seq, backend, op, tensor, elements, max_abs, max_rel, " \
                     "nmse, bound, pass, ratio, worst, lane, reference, max_abs_bound) " \
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)") \
    X(TOLERANCE_STEP_PUT, "INSERT INTO set_tolerance_steps (set_id, seq, backend, step, tensor, rows, nmse, kl, " \
                          "top1_agree, max_abs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)") \
    X(PROOF_PUT, "INSERT INTO proofs (run_id, rule, obligation, bound, verdict, reason, ms, counterexample, " \
                 "solver, replay, replay_fired, ruleset) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)") \
    X(FUZZ_STAT_PUT, "INSERT INTO fuzz_stats (run_id, harness, executions, seconds, corpus, coverage) " \
                     "VALUES (?, ?, ?, ?, ?, ?)") \
    X(FAILURE_PUT, "INSERT INTO failures (run_id, graph, mode, shim, stage, reason) VALUES (?, ?, ?, ?, ?, ?)") \
    X(CODE_MUTANT_PUT, "INSERT INTO code_mutants (run_id, mutant, file, line, operator, original, mutated, " \
                       "outcome, killed_by, seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)") \
    X(CROSSCHECK_PUT, "INSERT INTO crosschecks (run_id, model, family, file_sha256, weights, mode, engine, " \
                      "position, token, max_abs, rel, nmse, bound, top1_fusecheck, top1_llama, pass) " \
                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)") \
    X(FINDING_SEEN, "UPDATE fuzz_findings SET last_run = ?, count = count + 1 WHERE harness = ? AND signature = ?") \
    X(FINDING_PUT, "INSERT INTO fuzz_findings (harness, signature, input_sha256, first_run, last_run, count) " \
                   "VALUES (?, ?, ?, ?, ?, 1)") \
    X(RUNS, "SELECT r.id, r.kind, r.started, r.ended, r.status, r.command, " \
            "(SELECT count(*) FROM reports rep WHERE rep.run_id = r.id) FROM runs r ORDER BY r.id") \
    X(RUN_EXISTS, "SELECT 1 FROM runs WHERE id = ?") \
    X(RUNS_COMMON, "SELECT count(*) FROM reports x JOIN reports y ON y.graph_id = x.graph_id " \
                   "AND y.shim_id = x.shim_id WHERE x.run_id = ? AND y.run_id = ?") \
    X(GRAPH_CHANGES, "SELECT graph, mode, ops_before, ops_after, sha256_before, sha256_after FROM graph_changes " \
                     "WHERE run_before = ? AND run_after = ? ORDER BY graph, mode, sha256_before, sha256_after") \
    X(CHANGES, "SELECT graph, mode, shim, rule, class, covers, outcome_before, outcome_after FROM decision_changes " \
               "WHERE run_before = ? AND run_after = ? ORDER BY graph, mode, shim, rule, covers") \
    X(GAPS, "SELECT what, graph, mode, shim FROM run_pair_gaps WHERE run_before = ? AND run_after = ? " \
            "ORDER BY what, graph, mode, shim")

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

/* One rule's decisions in a decision set, summed up (a set_rules row). */
struct rule_sum {
    char *rule;
    int64_t decisions, fired;
    uint64_t hash; /* the sum of the decisions' line hashes, mod 2^63 */
    uint64_t keys; /* the sum of their keys' hashes (rule, class, covers), mod 2^63 */
};

struct db {
    sqlite3 *conn;
    sqlite3_stmt *stmt[DB_STMT_COUNT];
    bool readonly;
    /* The decision set this transaction made and the summaries of its decisions so far, written to set_rules when
     * the next set is made or the transaction commits (0: none pending). */
    int64_t pending_set;
    struct rule_sum *sums;
    int nsums, capsums;
};

static void sql_decision_line(sqlite3_context *ctx, int argc, sqlite3_value **argv);
static void sql_rule_hash_step(sqlite3_context *ctx, int argc, sqlite3_value **argv);
static void sql_rule_hash_final(sqlite3_context *ctx);
static void sql_rule_bucket(sqlite3_context *ctx, int argc, sqlite3_value **argv);
static void sql_buckets_step(sqlite3_context *ctx, int argc, sqlite3_value **argv);
static void sql_buckets_final(sqlite3_context *ctx);
static void sql_key_line(sqlite3_context *ctx, int argc, sqlite3_value **argv);
static void sql_run_config(sqlite3_context *ctx, int argc, sqlite3_value **argv);
static void pending_clear(struct db *db);
static int pending_flush(struct db *db, char err[DB_ERR_LEN]);

/* The directory that holds path, into dir: "." for a bare name, "/" for a file at the root. */
static void parent_dir(const char *path, char *dir, size_t size)
{
    snprintf(dir, size, "%.1000s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, size, ".");
    else
        slash[slash == dir] = '\0';
}

/* Whether the file at path (or, absent, the directory it would be made in) lies on a read-only file system. */
static bool on_read_only_fs(const char *path)
{
    struct statvfs fs;
    if (!path || !path[0])
        return false;
    if (statvfs(path, &fs) == 0)
        return (fs.f_flag & ST_RDONLY) != 0;
    char dir[1100];
    parent_dir(path, dir, sizeof dir);
    return statvfs(dir, &fs) == 0 && (fs.f_flag & ST_RDONLY) != 0;
}

/* SQLite's message for the connection's last error (msg when given), or what lies under it: a read-only file system
 * named as such, where SQLite says "unable to open database file" or "attempt to write a readonly database" (its
 * system errno is that of its last fallback, not EROFS). path: the file (NULL: the connection's). */
static const char *conn_message(sqlite3 *conn, const char *msg, const char *path)
{
    int code = sqlite3_extended_errcode(conn) & 0xff;
    bool refused = code == SQLITE_CANTOPEN || code == SQLITE_READONLY || code == SQLITE_IOERR;
    if (refused && on_read_only_fs(path ? path : sqlite3_db_filename(conn, "main")))
        return "on a read-only file system: it cannot be written";
    return msg ? msg : sqlite3_errmsg(conn);
}

/* Write SQLite's message for the connection, prefixed by what was being done. */
static int fail(struct db *db, const char *what, char err[DB_ERR_LEN])
{
    snprintf(err, DB_ERR_LEN, "%.250s: %.250s", what,
             db && db->conn ? conn_message(db->conn, NULL, NULL) : "no connection");
    return 1;
}

/* Run SQL with no results. */
static int exec(struct db *db, const char *sql, const char *what, char err[DB_ERR_LEN])
{
    char *msg = NULL;
    if (sqlite3_exec(db->conn, sql, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, DB_ERR_LEN, "%.250s: %.250s", what, conn_message(db->conn, msg, NULL));
        sqlite3_free(msg);
        return 1;
    }
    return 0;
}

/* How long a connection waits for a lock another holds. */
#define DB_BUSY_MS 120000

/* Run sql while the connection opens, waiting out a lock another process holds as it opens or writes the same file:
 * SQLite answers some of those at once rather than through the busy handler (a journal-mode change, a log being
 * recovered), so the wait is here, in steps of 10 ms, for at most DB_BUSY_MS. */
static int exec_at_open(struct db *db, const char *sql, const char *what, char err[DB_ERR_LEN])
{
    for (int waited = 0;; waited += 10) {
        int rc = sqlite3_exec(db->conn, sql, NULL, NULL, NULL);
        bool busy = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
        if (rc == SQLITE_OK || !busy || waited >= DB_BUSY_MS)
            return rc == SQLITE_OK ? 0 : exec(db, sql, what, err);
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
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

/* What an open file holds: nothing yet (a new or empty file, no table, view or index: the schema may be made in it),
 * fusecheck's results (a schema version and the runs table), or something else — another program's database, never
 * adopted. */
enum holding { HOLDS_NOTHING, HOLDS_RESULTS, HOLDS_FOREIGN };

/* The schema version, the count of schema objects and of tables named runs, read at once. */
static const char holding_sql[] =
    "SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_schema),"
    " (SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'runs')";

/* What the file holds and its schema version, waiting out a lock another writer holds as it opens the same file
 * (as exec_at_open). 0, or 1 with err. */
static int holding(struct db *db, enum holding *h, int *version, char err[DB_ERR_LEN])
{
    for (int waited = 0;; waited += 10) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db->conn, holding_sql, -1, &st, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            int64_t v = sqlite3_column_int64(st, 0), objects = sqlite3_column_int64(st, 1);
            int64_t runs = sqlite3_column_int64(st, 2);
            sqlite3_finalize(st);
            *version = v > INT32_MAX ? INT32_MAX : (int)v;
            *h = v == 0 && objects == 0 ? HOLDS_NOTHING : v >= 1 && runs == 1 ? HOLDS_RESULTS : HOLDS_FOREIGN;
            return 0;
        }
        sqlite3_finalize(st);
        bool busy = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
        if (!busy || waited >= DB_BUSY_MS)
            return fail(db, "reading the schema", err);
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
}

/* Refuse a file a fusecheck results file cannot be made of or read from (holding): another program's database, or
 * for a reader a file holding nothing yet; or one of a newer schema. Checked before anything is written. 0, or 1 with
 * err naming path. */
static int check_holding(struct db *db, const char *path, bool readonly, char err[DB_ERR_LEN])
{
    int version;
    enum holding h;
    if (holding(db, &h, &version, err))
        return 1;
    if (version > DB_SCHEMA_VERSION) {
        snprintf(err, DB_ERR_LEN,
                 "%.250s: the file has schema version %d, newer than this fusecheck's %d: use a newer fusecheck",
                 path, version, DB_SCHEMA_VERSION);
        return 1;
    }
    if (h == HOLDS_FOREIGN || (readonly && h == HOLDS_NOTHING)) {
        snprintf(err, DB_ERR_LEN, "%.250s holds no fusecheck results (%s)", path,
                 h == HOLDS_NOTHING ? "an empty file"
                 : version < 1     ? "no schema version: another program's database, left as it is"
                                   : "no runs table: another program's database, left as it is");
        return 1;
    }
    return 0;
}

/* migrate's transaction: every migration from the file's version on, or none. */
static int migrate_locked(struct db *db, char err[DB_ERR_LEN])
{
    const char *const *m;
    int target = db_schema_migrations(&m);
    if (exec(db, "BEGIN IMMEDIATE", "upgrading the schema", err))
        return 1;
    int64_t v = query_int(db, "PRAGMA user_version");
    int rc = 0, version;
    enum holding h = HOLDS_NOTHING;
    if (v < 0) {
        rc = fail(db, "reading the schema version", err);
    } else if (holding(db, &h, &version, err) || h == HOLDS_FOREIGN) { /* another program's since the open */
        if (h == HOLDS_FOREIGN)
            snprintf(err, DB_ERR_LEN, "the file holds no fusecheck results: another program's database, left as it is");
        rc = 1;
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

/* Bring the file's schema forward to this build's version, in one immediate transaction (so writers opening a new
 * file at once upgrade it once), with foreign keys off for its length: a migration that rebuilds a table others
 * refer to (runs, version 7) must not delete their rows in cascade. */
static int migrate(struct db *db, char err[DB_ERR_LEN])
{
    if (exec(db, "PRAGMA foreign_keys = OFF", "upgrading the schema", err))
        return 1;
    int rc = migrate_locked(db, err);
    return exec(db, "PRAGMA foreign_keys = ON", "upgrading the schema", err) || rc;
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

/* Open path (named `label` in messages) with flags and configure the connection; refuse what it must not be made
 * of or read from (check_holding); migrate when writable. */
static int open_with(const char *path, const char *label, int flags, bool readonly, struct db **out,
                     char err[DB_ERR_LEN])
{
    *out = NULL;
    struct db *db = calloc(1, sizeof *db);
    if (!db)
        abort();
    db->readonly = readonly;
    if (sqlite3_open_v2(path, &db->conn, flags, NULL) != SQLITE_OK) {
        snprintf(err, DB_ERR_LEN, "%.250s: cannot open: %.200s", path,
                 db->conn ? conn_message(db->conn, NULL, path) : "no memory");
        db_close(db);
        return 1;
    }
    sqlite3_busy_timeout(db->conn, DB_BUSY_MS);
    sqlite3_extended_result_codes(db->conn, 1);
    char what[600];
    snprintf(what, sizeof what, "%.250s", path);
    /* Touch the file: a file that is not a database fails here, before anything is written. */
    if (exec_at_open(db, "SELECT count(*) FROM sqlite_schema", what, err)) {
        db_close(db);
        return 1;
    }
    bool bad = exec(db, "PRAGMA foreign_keys = ON", what, err) ||
               sqlite3_create_function(db->conn, "fusecheck_decision_line", 5, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                       NULL, sql_decision_line, NULL, NULL) != SQLITE_OK ||
               sqlite3_create_function(db->conn, "fusecheck_rule_hash", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                       NULL, sql_rule_hash_step, sql_rule_hash_final) != SQLITE_OK ||
               sqlite3_create_function(db->conn, "fusecheck_rule_bucket", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                       sql_rule_bucket, NULL, NULL) != SQLITE_OK ||
               sqlite3_create_function(db->conn, "fusecheck_buckets", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, NULL,
                                       sql_buckets_step, sql_buckets_final) != SQLITE_OK ||
               sqlite3_create_function(db->conn, "fusecheck_key_line", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                       sql_key_line, NULL, NULL) != SQLITE_OK ||
               sqlite3_create_function(db->conn, "fusecheck_run_config", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                       sql_run_config, NULL, NULL) != SQLITE_OK;
    if (!bad)
        bad = check_holding(db, label, readonly, err);
    if (!bad && !readonly)
        bad = exec_at_open(db, "PRAGMA journal_mode = WAL", what, err) ||
              exec_at_open(db, "PRAGMA synchronous = NORMAL", what, err) || migrate(db, err);
    if (!bad)
        bad = prepare_all(db, err);
    if (bad) {
        db_close(db);
        return 1;
    }
    *out = db;
    return 0;
}

/* Refuse a directory given as a results file, with its name: SQLite would say only "disk I/O error". */
static int not_a_directory(const char *path, char err[DB_ERR_LEN])
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(err, DB_ERR_LEN, "%.250s: is a directory, not a results file", path);
        return 1;
    }
    return 0;
}

int db_open(const char *path, struct db **out, char err[DB_ERR_LEN])
{
    *out = NULL;
    if (not_a_directory(path, err))
        return 1;
    return open_with(path, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, false, out, err);
}

/* Whether path's write-ahead log is absent or empty: nothing but the file itself holds its content. */
static bool no_pending_log(const char *path)
{
    char wal[1100];
    snprintf(wal, sizeof wal, "%.1000s-wal", path);
    struct stat st;
    return stat(wal, &st) != 0 || st.st_size == 0;
}

/* Whether the directory holding path can be written (where SQLite makes a reader's shared-memory file). */
static bool dir_writable(const char *path)
{
    char dir[1100];
    parent_dir(path, dir, sizeof dir);
    return access(dir, W_OK) == 0;
}

/* Open path read-only as an immutable file (a URI, its special characters escaped): what a reader in a directory it
 * cannot write does, where SQLite cannot make the shared-memory file a WAL-mode reader needs. */
static int open_immutable(const char *path, struct db **out, char err[DB_ERR_LEN])
{
    size_t n = strlen(path);
    char *uri = malloc(3 * n + 32);
    if (!uri)
        abort();
    size_t k = (size_t)sprintf(uri, "file:");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)path[i];
        k += (size_t)(c == '%' || c == '?' || c == '#' || c < 0x20 ? sprintf(uri + k, "%%%02X", c)
                                                                   : sprintf(uri + k, "%c", c));
    }
    sprintf(uri + k, "?immutable=1");
    int rc = open_with(uri, path, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, true, out, err);
    free(uri);
    return rc;
}

int db_open_readonly(const char *path, struct db **out, char err[DB_ERR_LEN])
{
    *out = NULL;
    if (access(path, F_OK) != 0) {
        snprintf(err, DB_ERR_LEN, "%.250s: no such file", path);
        return 1;
    }
    if (not_a_directory(path, err))
        return 1;
    if (open_with(path, path, SQLITE_OPEN_READONLY, true, out, err)) {
        /* a file in a directory the reader cannot write, with no log pending: read as it stands */
        char first[DB_ERR_LEN];
        snprintf(first, sizeof first, "%s", err);
        if (dir_writable(path) || !no_pending_log(path) || open_immutable(path, out, err)) {
            snprintf(err, DB_ERR_LEN, "%s", first);
            return 1;
        }
    }
    return 0;
}

void db_close(struct db *db)
{
    if (!db)
        return;
    for (int i = 0; i < DB_STMT_COUNT; i++)
        sqlite3_finalize(db->stmt[i]);
    sqlite3_close(db->conn);
    pending_clear(db);
    free(db->sums);
    free(db);
}

int db_begin(struct db *db, char err[DB_ERR_LEN]) { return exec(db, "BEGIN IMMEDIATE", "starting a transaction", err); }

int db_commit(struct db *db, char err[DB_ERR_LEN])
{
    if ((db->pending_set && pending_flush(db, err)) || exec(db, "COMMIT", "committing", err)) {
        db_rollback(db);
        return 1;
    }
    return 0;
}

void db_rollback(struct db *db)
{
    pending_clear(db);
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
    /* fusecheck's own optimizer in process: named 'fusecheck', its version the run's, no command */
    bind_text(st, 7, info->optimizer_name ? info->optimizer_name : "fusecheck");
    bind_text(st, 8, info->optimizer_name ? info->optimizer_version : info->version);
    bind_text(st, 9, info->optimizer_name ? info->optimizer_command : NULL);
    char *config = db_run_config(info->command);
    bind_text(st, 10, config);
    int failed = done(db, st, "recording the run", err);
    free(config);
    if (failed) {
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
    if (sqlite3_changes(db->conn) != 1) {
        snprintf(err, DB_ERR_LEN, "run %lld is not in progress: it ended already, or there is none", (long long)run);
        db_rollback(db);
        return 1;
    }
    return db_commit(db, err);
}

int db_run_fixtures(struct db *db, int64_t run, int64_t cases, int64_t failed, char err[DB_ERR_LEN])
{
    if (db_begin(db, err))
        return 1;
    sqlite3_stmt *st = use(db, DB_STMT_RUN_FIXTURES);
    sqlite3_bind_int64(st, 1, cases);
    sqlite3_bind_int64(st, 2, failed);
    sqlite3_bind_int64(st, 3, run);
    if (done(db, st, "recording the run's fixture cases", err)) {
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

/* The id of the set named digest through the lookup statement `get`, made through `put` (digest bound first, then
 * what bind_rest adds) when new; *fresh says which. 0, or 1 with err. */
static int content_set(struct db *db, enum db_stmt get, enum db_stmt put, const char *digest,
                       void (*bind_rest)(sqlite3_stmt *st, const void *ctx), const void *ctx, int64_t *set,
                       bool *fresh, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, get);
    bind_text(st, 1, digest);
    *fresh = false;
    if ((*set = lookup_id(st)) != 0)
        return 0;
    st = use(db, put);
    bind_text(st, 1, digest);
    if (bind_rest)
        bind_rest(st, ctx);
    if (done(db, st, "recording a set of results", err))
        return 1;
    *set = sqlite3_last_insert_rowid(db->conn);
    *fresh = true;
    return 0;
}

/* Bind a decision set's counts after its digest. */
static void bind_counts(sqlite3_stmt *st, const void *ctx)
{
    const struct db_report *r = ctx;
    sqlite3_bind_int64(st, 2, r->fired);
    sqlite3_bind_int64(st, 3, r->refused);
    sqlite3_bind_int64(st, 4, r->held);
}

int db_report(struct db *db, const struct db_report *r, int64_t *set, bool *fresh, char err[DB_ERR_LEN])
{
    if (!r->digest || !*r->digest) {
        snprintf(err, DB_ERR_LEN, "recording a report: no digest names its decisions");
        return 1;
    }
    if (content_set(db, DB_STMT_SET_GET, DB_STMT_SET_PUT, r->digest, bind_counts, r, set, fresh, err))
        return 1;
    if (*fresh) { /* the set before it, if this transaction made one, is complete: its summaries go in */
        if (db->pending_set && pending_flush(db, err))
            return 1;
        db->pending_set = *set;
    }
    sqlite3_stmt *st = use(db, DB_STMT_REPORT_PUT);
    sqlite3_bind_int64(st, 1, r->run);
    sqlite3_bind_int64(st, 2, r->graph);
    sqlite3_bind_int64(st, 3, r->shim);
    sqlite3_bind_int64(st, 4, *set);
    sqlite3_bind_double(st, 5, r->optimize_ms);
    bind_text(st, 6, r->rewritten);
    return done(db, st, "recording a report", err);
}

int db_tolerance_set(struct db *db, int64_t run, int64_t graph, int64_t shim, const char *digest, int64_t *set,
                     bool *fresh, char err[DB_ERR_LEN])
{
    if (!digest || !*digest) {
        snprintf(err, DB_ERR_LEN, "recording tolerance results: no digest names them");
        return 1;
    }
    if (content_set(db, DB_STMT_TSET_GET, DB_STMT_TSET_PUT, digest, NULL, NULL, set, fresh, err))
        return 1;
    sqlite3_stmt *st = use(db, DB_STMT_RUN_TOLERANCE_PUT);
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int64(st, 2, graph);
    sqlite3_bind_int64(st, 3, shim);
    sqlite3_bind_int64(st, 4, *set);
    return done(db, st, "recording a tolerance run", err);
}


/* Add the text s and a separator (NULL: a byte no text has) to a 64-bit FNV-1a hash. */
static uint64_t hash_text(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3u;
    return (h ^ (s ? 0x00u : 0xffu)) * 0x100000001b3u;
}

/* A decision's line hash: of its rule, class, covers, outcome and reason (NULL apart from empty). */
static int64_t decision_line(const char *rule, const char *cls, const char *covers, const char *outcome,
                             const char *reason)
{
    uint64_t h = 0xcbf29ce484222325u;
    h = hash_text(hash_text(hash_text(hash_text(hash_text(h, rule), cls), covers), outcome), reason);
    return (int64_t)(h >> 1); /* non-negative: the same integer in every SQLite build */
}

/* A decision's key hash: of what it decides (its rule, class and covers), whatever the outcome. */
static int64_t key_line(const char *rule, const char *cls, const char *covers)
{
    uint64_t h = hash_text(hash_text(hash_text(0x84222325cbf29ce4u, rule), cls), covers);
    return (int64_t)(h >> 1);
}

/* key_line as an SQL function, for the migration that adds set_rules. */
static void sql_key_line(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *t[3];
    for (int i = 0; i < 3; i++)
        t[i] = (const char *)sqlite3_value_text(argv[i]);
    sqlite3_result_int64(ctx, key_line(t[0], t[1], t[2]));
}

/* db_run_config as an SQL function, for the migration that adds runs.config. */
static void sql_run_config(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *command = (const char *)sqlite3_value_text(argv[0]);
    if (!command) {
        sqlite3_result_null(ctx);
        return;
    }
    sqlite3_result_text(ctx, db_run_config(command), -1, free);
}

/* decision_line as an SQL function, for the migration that adds the column. */
static void sql_decision_line(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *t[5];
    for (int i = 0; i < 5; i++)
        t[i] = (const char *)sqlite3_value_text(argv[i]);
    sqlite3_result_int64(ctx, decision_line(t[0], t[1], t[2], t[3], t[4]));
}

/* The mask of a rule summary's hash: sums of line hashes are kept mod 2^63 (a non-negative SQLite integer). */
#define RULE_HASH_MASK 0x7fffffffffffffffu

/* fusecheck_rule_hash(line) as an SQL aggregate: the sum of a rule's line hashes mod 2^63, for the migration that
 * adds set_rules (the writer sums alike as it inserts). */
static void sql_rule_hash_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    uint64_t *acc = sqlite3_aggregate_context(ctx, sizeof *acc);
    if (acc)
        *acc = (*acc + (uint64_t)sqlite3_value_int64(argv[0])) & RULE_HASH_MASK;
}
static void sql_rule_hash_final(sqlite3_context *ctx)
{
    uint64_t *acc = sqlite3_aggregate_context(ctx, 0);
    sqlite3_result_int64(ctx, acc ? (int64_t)*acc : 0);
}

/* The rule buckets of a set's summary (rule_buckets), the bytes of each bucket's sum, and the sums a set keeps: each
 * bucket's rules' hashes, then each bucket's rules' names. */
#define RULE_BUCKETS 16
#define BUCKET_BYTES 8
#define BUCKET_SUMS (2 * RULE_BUCKETS)

/* The bucket of a rule's name: its FNV-1a hash mod RULE_BUCKETS. */
static int rule_bucket(const char *rule)
{
    return (int)(hash_text(0xcbf29ce484222325u, rule) % RULE_BUCKETS);
}

/* fusecheck_rule_bucket(rule) as an SQL function, for the migration that adds set_rules. */
static void sql_rule_bucket(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    sqlite3_result_int(ctx, rule_bucket((const char *)sqlite3_value_text(argv[0])));
}

/* Add rule (its summary's hash) to bucket b of a set's sums (mod 2^63): its hash, and its name's. */
static void bucket_add(uint64_t sums[BUCKET_SUMS], int64_t b, uint64_t hash, const char *rule)
{
    if (b < 0 || b >= RULE_BUCKETS)
        return;
    sums[b] = (sums[b] + hash) & RULE_HASH_MASK;
    sums[RULE_BUCKETS + b] = (sums[RULE_BUCKETS + b] + (hash_text(0xcbf29ce484222325u, rule) >> 1)) & RULE_HASH_MASK;
}

/* The sums as a blob: each big-endian in BUCKET_BYTES bytes. */
static void bucket_bytes(const uint64_t sums[BUCKET_SUMS], unsigned char out[BUCKET_SUMS * BUCKET_BYTES])
{
    for (int b = 0; b < BUCKET_SUMS; b++)
        for (int k = 0; k < BUCKET_BYTES; k++)
            out[b * BUCKET_BYTES + k] = (unsigned char)(sums[b] >> (8 * (BUCKET_BYTES - 1 - k)));
}

/* fusecheck_buckets(bucket, hash, rule) as an SQL aggregate: a set's bucket sums from its set_rules rows. */
static void sql_buckets_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    uint64_t *sums = sqlite3_aggregate_context(ctx, sizeof(uint64_t) * BUCKET_SUMS);
    if (sums)
        bucket_add(sums, sqlite3_value_int64(argv[0]), (uint64_t)sqlite3_value_int64(argv[1]),
                   (const char *)sqlite3_value_text(argv[2]));
}
static void sql_buckets_final(sqlite3_context *ctx)
{
    uint64_t zero[BUCKET_SUMS] = {0}, *sums = sqlite3_aggregate_context(ctx, 0);
    unsigned char bytes[BUCKET_SUMS * BUCKET_BYTES];
    bucket_bytes(sums ? sums : zero, bytes);
    sqlite3_result_blob(ctx, bytes, sizeof bytes, SQLITE_TRANSIENT);
}

/* Forget the pending set's summaries. */
static void pending_clear(struct db *db)
{
    for (int i = 0; i < db->nsums; i++)
        free(db->sums[i].rule);
    db->nsums = 0;
    db->pending_set = 0;
}

/* Add a decision of the pending set to its rule's summary. */
static void pending_add(struct db *db, const struct db_decision *d)
{
    if (!db->pending_set || d->set != db->pending_set || !d->rule)
        return;
    int i = 0;
    while (i < db->nsums && strcmp(db->sums[i].rule, d->rule) != 0)
        i++;
    if (i == db->nsums) {
        if (db->nsums == db->capsums) {
            db->capsums = db->capsums ? 2 * db->capsums : 64;
            db->sums = realloc(db->sums, sizeof *db->sums * (size_t)db->capsums);
            if (!db->sums)
                abort();
        }
        db->sums[i] = (struct rule_sum){strdup(d->rule), 0, 0, 0, 0};
        if (!db->sums[i].rule)
            abort();
        db->nsums++;
    }
    struct rule_sum *r = &db->sums[i];
    r->decisions++;
    r->fired += d->outcome && strcmp(d->outcome, "fired") == 0;
    r->hash = (r->hash + (uint64_t)decision_line(d->rule, d->cls, d->covers, d->outcome, d->reason)) & RULE_HASH_MASK;
    r->keys = (r->keys + (uint64_t)key_line(d->rule, d->cls, d->covers)) & RULE_HASH_MASK;
}

/* Write the pending set's summaries to set_rules and forget them. 0, or 1 with err. */
static int pending_flush(struct db *db, char err[DB_ERR_LEN])
{
    int rc = 0;
    uint64_t sums[BUCKET_SUMS] = {0};
    for (int i = 0; !rc && i < db->nsums; i++) {
        int b = rule_bucket(db->sums[i].rule);
        bucket_add(sums, b, db->sums[i].hash, db->sums[i].rule);
        sqlite3_stmt *st = use(db, DB_STMT_SET_RULE_PUT);
        sqlite3_bind_int64(st, 1, db->pending_set);
        sqlite3_bind_int(st, 2, b);
        bind_text(st, 3, db->sums[i].rule);
        sqlite3_bind_int64(st, 4, db->sums[i].decisions);
        sqlite3_bind_int64(st, 5, db->sums[i].fired);
        sqlite3_bind_int64(st, 6, (int64_t)db->sums[i].hash);
        sqlite3_bind_int64(st, 7, (int64_t)db->sums[i].keys);
        rc = done(db, st, "summing a decision set up", err);
    }
    unsigned char bytes[BUCKET_SUMS * BUCKET_BYTES];
    bucket_bytes(sums, bytes);
    sqlite3_stmt *st = use(db, DB_STMT_SET_BUCKETS_PUT);
    sqlite3_bind_blob(st, 1, bytes, sizeof bytes, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, db->pending_set);
    rc = rc || done(db, st, "summing a decision set up", err);
    pending_clear(db);
    return rc;
}

/* Bind one decision's nine values (its line hash, then its code) at parameter `base` + 1 onwards. */
static void bind_decision(sqlite3_stmt *st, int base, const struct db_decision *d, const char *code)
{
    sqlite3_bind_int64(st, base + 1, d->set);
    sqlite3_bind_int64(st, base + 2, d->seq);
    bind_text(st, base + 3, d->rule);
    bind_text(st, base + 4, d->cls);
    bind_text(st, base + 5, d->covers);
    bind_text(st, base + 6, d->outcome);
    bind_text(st, base + 7, d->reason);
    sqlite3_bind_int64(st, base + 8, decision_line(d->rule, d->cls, d->covers, d->outcome, d->reason));
    bind_text(st, base + 9, code);
}

/* One decision's row with its code. */
static int decision_coded(struct db *db, const struct db_decision *d, const char *code, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_DECISION_PUT);
    bind_decision(st, 0, d, code);
    if (done(db, st, "recording a decision", err))
        return 1;
    pending_add(db, d);
    return 0;
}

int db_decision(struct db *db, const struct db_decision *d, char err[DB_ERR_LEN])
{
    return decision_coded(db, d, NULL, err);
}

int db_decisions_coded(struct db *db, const struct db_decision *d, const char *const *codes, int64_t n,
                       char err[DB_ERR_LEN])
{
    int64_t i = 0;
    for (; i + DB_DECISION_BATCH <= n; i += DB_DECISION_BATCH) {
        sqlite3_stmt *st = use(db, DB_STMT_DECISIONS_PUT);
        for (int k = 0; k < DB_DECISION_BATCH; k++)
            bind_decision(st, 9 * k, &d[i + k], codes ? codes[i + k] : NULL);
        if (done(db, st, "recording decisions", err))
            return 1;
        for (int k = 0; k < DB_DECISION_BATCH; k++)
            pending_add(db, &d[i + k]);
    }
    for (; i < n; i++)
        if (decision_coded(db, &d[i], codes ? codes[i] : NULL, err))
            return 1;
    return 0;
}

int db_decisions(struct db *db, const struct db_decision *d, int64_t n, char err[DB_ERR_LEN])
{
    return db_decisions_coded(db, d, NULL, n, err);
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
    sqlite3_bind_int64(st, 1, t->set);
    sqlite3_bind_int64(st, 2, t->seq);
    bind_text(st, 3, t->backend);
    bind_text(st, 4, t->op);
    bind_text(st, 5, t->tensor);
    sqlite3_bind_int64(st, 6, t->elements);
    sqlite3_bind_double(st, 7, t->max_abs);
    sqlite3_bind_double(st, 8, t->max_rel);
    sqlite3_bind_double(st, 9, t->nmse);
    sqlite3_bind_double(st, 10, t->bound);
    sqlite3_bind_int(st, 11, t->pass);
    sqlite3_bind_double(st, 12, t->ratio);
    sqlite3_bind_int64(st, 13, t->worst);
    sqlite3_bind_double(st, 14, t->lane);
    sqlite3_bind_double(st, 15, t->reference);
    sqlite3_bind_double(st, 16, t->max_abs_bound);
    return done(db, st, "recording a tolerance result", err);
}

int db_tolerance_step(struct db *db, const struct db_tolerance_step *t, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_TOLERANCE_STEP_PUT);
    sqlite3_bind_int64(st, 1, t->set);
    sqlite3_bind_int64(st, 2, t->seq);
    bind_text(st, 3, t->backend);
    sqlite3_bind_int64(st, 4, t->step);
    bind_text(st, 5, t->tensor);
    sqlite3_bind_int64(st, 6, t->rows);
    sqlite3_bind_double(st, 7, t->nmse);
    sqlite3_bind_double(st, 8, t->kl);
    sqlite3_bind_int64(st, 9, t->top1_agree);
    sqlite3_bind_double(st, 10, t->max_abs);
    return done(db, st, "recording a tolerance step", err);
}

int db_crosscheck(struct db *db, const struct db_crosscheck *c, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_CROSSCHECK_PUT);
    sqlite3_bind_int64(st, 1, c->run);
    bind_text(st, 2, c->model);
    bind_text(st, 3, c->family);
    bind_text(st, 4, c->file_sha256);
    bind_text(st, 5, c->weights);
    bind_text(st, 6, c->mode);
    bind_text(st, 7, c->engine);
    sqlite3_bind_int64(st, 8, c->position);
    sqlite3_bind_int64(st, 9, c->token);
    sqlite3_bind_double(st, 10, c->max_abs);
    sqlite3_bind_double(st, 11, c->rel);
    sqlite3_bind_double(st, 12, c->nmse);
    sqlite3_bind_double(st, 13, c->bound);
    sqlite3_bind_int64(st, 14, c->top1_fusecheck);
    sqlite3_bind_int64(st, 15, c->top1_llama);
    sqlite3_bind_int(st, 16, c->pass);
    return done(db, st, "recording a crosscheck position", err);
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
    bind_text(st, 9, p->solver ? p->solver : "z3");
    bind_text(st, 10, p->replay);
    if (p->replay && strcmp(p->replay, "unbuilt") != 0)
        sqlite3_bind_int(st, 11, p->replay_fired);
    else
        sqlite3_bind_null(st, 11);
    bind_text(st, 12, p->seed_rules ? "seed" : "fusecheck");
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

int db_run_status(struct db *db, int64_t run, char status[16], char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_RUN_STATUS);
    sqlite3_bind_int64(st, 1, run);
    int rc = sqlite3_step(st);
    snprintf(status, 16, "%s", rc == SQLITE_ROW && col_text(st, 0) ? col_text(st, 0) : "");
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : fail(db, "looking up a run", err);
}

int db_run_optimizer(struct db *db, int64_t run, struct db_optimizer *o, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_RUN_OPTIMIZER);
    sqlite3_bind_int64(st, 1, run);
    int rc = sqlite3_step(st);
    bool row = rc == SQLITE_ROW;
    snprintf(o->name, sizeof o->name, "%s", row && col_text(st, 0) ? col_text(st, 0) : "");
    snprintf(o->version, sizeof o->version, "%s", row && col_text(st, 1) ? col_text(st, 1) : "");
    snprintf(o->command, sizeof o->command, "%s", row && col_text(st, 2) ? col_text(st, 2) : "");
    o->in_process = !row || !col_text(st, 2);
    sqlite3_reset(st);
    return row || rc == SQLITE_DONE ? 0 : fail(db, "looking up a run's optimizer", err);
}

bool db_same_optimizer(const struct db_optimizer *a, const struct db_optimizer *b)
{
    return strcmp(a->name, b->name) == 0 && a->in_process == b->in_process && strcmp(a->command, b->command) == 0;
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

int db_graph_changes(struct db *db, int64_t a, int64_t b, db_graph_change_fn fn, void *ctx, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_GRAPH_CHANGES);
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        fn(col_text(st, 0), col_text(st, 1), sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
           col_text(st, 4), col_text(st, 5), ctx);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : fail(db, "comparing two runs' graphs", err);
}

int db_run_gaps(struct db *db, int64_t a, int64_t b, db_gap_fn fn, void *ctx, char err[DB_ERR_LEN])
{
    sqlite3_stmt *st = use(db, DB_STMT_GAPS);
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        fn(col_text(st, 0), col_text(st, 1), col_text(st, 2), col_text(st, 3), ctx);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : fail(db, "comparing what two runs reported on", err);
}

int db_select(struct db *db, const char *sql, const int64_t *params, int nparams, db_row_fn fn, void *ctx,
              char err[DB_ERR_LEN])
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->conn, sql, -1, &st, NULL) != SQLITE_OK)
        return fail(db, "preparing a query", err);
    int n = sqlite3_column_count(st);
    if (!sqlite3_stmt_readonly(st) || n > DB_SELECT_COLUMNS) {
        snprintf(err, DB_ERR_LEN, "a query must only read, at most %d columns", DB_SELECT_COLUMNS);
        sqlite3_finalize(st);
        return 1;
    }
    for (int i = 0; i < nparams; i++)
        sqlite3_bind_int64(st, i + 1, params[i]);
    const char *cols[DB_SELECT_COLUMNS];
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        for (int i = 0; i < n; i++)
            cols[i] = col_text(st, i);
        fn(cols, n, ctx);
    }
    rc = rc == SQLITE_DONE ? 0 : fail(db, "reading results", err);
    sqlite3_finalize(st);
    return rc;
}

/* The cache of decision changes and the pairs it holds, made once a connection. */
static const char changes_cache_sql[] =
    "CREATE TEMP TABLE IF NOT EXISTS changes_cache AS SELECT * FROM decision_changes WHERE 0;"
    "CREATE INDEX IF NOT EXISTS temp.changes_cache_pair ON changes_cache (run_after, run_before);"
    "CREATE TEMP TABLE IF NOT EXISTS changes_cached (run_after INTEGER, run_before INTEGER,"
    " PRIMARY KEY (run_after, run_before));";

/* Run one statement over the pair (?1 after, ?2 before): SQLITE_ROW with its first column's value in *v, or
 * SQLITE_DONE, or an error code. */
static int pair_step(struct db *db, const char *sql, int64_t after, int64_t before, int64_t *v)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->conn, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_int64(st, 1, after);
    sqlite3_bind_int64(st, 2, before);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && v)
        *v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc;
}

int db_changes_cache(struct db *db, int64_t after, int64_t before, char err[DB_ERR_LEN])
{
    if (exec(db, changes_cache_sql, "making the cache of decision changes", err))
        return 1;
    int64_t held = 0;
    if (pair_step(db, "SELECT count(*) FROM changes_cached WHERE run_after = ?1 AND run_before = ?2", after, before,
                  &held) != SQLITE_ROW)
        return fail(db, "reading the cache of decision changes", err);
    if (held)
        return 0;
    /* the rows and their mark together, or neither */
    if (exec(db, "SAVEPOINT changes_cache", "caching decision changes", err))
        return 1;
    if (pair_step(db, "INSERT INTO changes_cache SELECT * FROM decision_changes WHERE run_after = ?1 AND run_before = ?2",
                  after, before, NULL) != SQLITE_DONE ||
        pair_step(db, "INSERT INTO changes_cached VALUES (?1, ?2)", after, before, NULL) != SQLITE_DONE) {
        fail(db, "caching decision changes", err);
        sqlite3_exec(db->conn, "ROLLBACK TO changes_cache; RELEASE changes_cache", NULL, NULL, NULL);
        return 1;
    }
    return exec(db, "RELEASE changes_cache", "caching decision changes", err);
}

/* ── Merge ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* Copy every run of the attached file `src` (named `label` in origins) into the main file, ids remapped through
 * temporary maps. Runs in one transaction with the rest of the merge. */
static const char merge_sql[] =
    "CREATE TEMP TABLE IF NOT EXISTS map_run (old INTEGER PRIMARY KEY, new INTEGER);"
    "CREATE TEMP TABLE IF NOT EXISTS map_graph (old INTEGER PRIMARY KEY, new INTEGER);"
    "CREATE TEMP TABLE IF NOT EXISTS map_shim (old INTEGER PRIMARY KEY, new INTEGER);"
    "CREATE TEMP TABLE IF NOT EXISTS map_set (old INTEGER PRIMARY KEY, new INTEGER);"
    "CREATE TEMP TABLE IF NOT EXISTS map_tset (old INTEGER PRIMARY KEY, new INTEGER);"
    "DELETE FROM map_run; DELETE FROM map_graph; DELETE FROM map_shim; DELETE FROM map_set; DELETE FROM map_tset;"
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
                           "SELECT id, kind, started, ended, status, git_rev, host, version, command, origin, "
                           "optimizer_name, optimizer_version, optimizer_command, config, fixture_cases, "
                           "fixture_failures FROM src.runs ORDER BY id",
                           -1, &sel, NULL) != SQLITE_OK)
        return fail(out, "merging runs", err);
    sqlite3_prepare_v2(out->conn,
                       "INSERT INTO main.runs (kind, started, ended, status, git_rev, host, version, command, origin, "
                       "optimizer_name, optimizer_version, optimizer_command, config, fixture_cases, fixture_failures) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        for (int i = 10; i <= 15; i++) /* its optimizer, configuration and fixture cases */
            sqlite3_bind_value(ins, i, sqlite3_column_value(sel, i));
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

/* The rest of a source's rows, remapped (the source is at this build's schema version: merge_one brings an older one
 * forward first). */
static const char merge_rows_sql[] =
    "INSERT INTO main.steps (run_id, seq, name) SELECT r.new, s.seq, s.name FROM src.steps s"
    "  JOIN map_run r ON r.old = s.run_id;"
    "INSERT INTO main.reports (run_id, graph_id, shim_id, set_id, optimize_ms, rewritten)"
    "  SELECT r.new, g.new, sh.new, m.new, p.optimize_ms, p.rewritten FROM src.reports p"
    "  JOIN map_run r ON r.old = p.run_id JOIN map_graph g ON g.old = p.graph_id JOIN map_shim sh ON sh.old = p.shim_id"
    "  JOIN map_set m ON m.old = p.set_id ORDER BY p.id;"
    "INSERT INTO main.run_tolerances (run_id, graph_id, shim_id, set_id)"
    "  SELECT r.new, g.new, sh.new, m.new FROM src.run_tolerances t"
    "  JOIN map_run r ON r.old = t.run_id JOIN map_graph g ON g.old = t.graph_id JOIN map_shim sh ON sh.old = t.shim_id"
    "  JOIN map_tset m ON m.old = t.set_id ORDER BY t.id;"
    "INSERT INTO main.diffs (run_id, graph_id, shim_id, identical, compared, tensor, first_index, lifted, rewritten,"
    "  kind, reason)"
    "  SELECT r.new, g.new, sh.new, d.identical, d.compared, d.tensor, d.first_index, d.lifted, d.rewritten, d.kind,"
    "  d.reason FROM src.diffs d JOIN map_run r ON r.old = d.run_id JOIN map_graph g ON g.old = d.graph_id"
    "  JOIN map_shim sh ON sh.old = d.shim_id ORDER BY d.id;"
    "INSERT INTO main.proofs (run_id, rule, obligation, bound, verdict, reason, ms, counterexample, solver, replay,"
    "  replay_fired, ruleset)"
    "  SELECT r.new, p.rule, p.obligation, p.bound, p.verdict, p.reason, p.ms, p.counterexample, p.solver, p.replay,"
    "  p.replay_fired, p.ruleset FROM src.proofs p JOIN map_run r ON r.old = p.run_id ORDER BY p.id;"
    "INSERT INTO main.fuzz_stats (run_id, harness, executions, seconds, corpus, coverage)"
    "  SELECT r.new, f.harness, f.executions, f.seconds, f.corpus, f.coverage"
    "  FROM src.fuzz_stats f JOIN map_run r ON r.old = f.run_id ORDER BY f.id;"
    "INSERT INTO main.fuzz_findings (harness, signature, input_sha256, first_run, last_run, count)"
    "  SELECT f.harness, f.signature, f.input_sha256, a.new, b.new, f.count FROM src.fuzz_findings f"
    "  JOIN map_run a ON a.old = f.first_run JOIN map_run b ON b.old = f.last_run WHERE true"
    "  ON CONFLICT (harness, signature) DO UPDATE SET count = count + excluded.count,"
    "  first_run = min(first_run, excluded.first_run), last_run = max(last_run, excluded.last_run);"
    "INSERT INTO main.code_mutants (run_id, mutant, file, line, operator, original, mutated, outcome, killed_by,"
    "  seconds)"
    "  SELECT r.new, c.mutant, c.file, c.line, c.operator, c.original, c.mutated, c.outcome, c.killed_by, c.seconds"
    "  FROM src.code_mutants c JOIN map_run r ON r.old = c.run_id ORDER BY c.id;"
    "INSERT INTO main.failures (run_id, graph, mode, shim, stage, reason)"
    "  SELECT r.new, f.graph, f.mode, f.shim, f.stage, f.reason FROM src.failures f"
    "  JOIN map_run r ON r.old = f.run_id ORDER BY f.id;"
    "INSERT INTO main.crosschecks (run_id, model, family, file_sha256, weights, mode, engine, position, token,"
    "  max_abs, rel, nmse, bound, top1_fusecheck, top1_llama, pass)"
    "  SELECT r.new, c.model, c.family, c.file_sha256, c.weights, c.mode, c.engine, c.position, c.token, c.max_abs,"
    "  c.rel, c.nmse, c.bound, c.top1_fusecheck, c.top1_llama, c.pass FROM src.crosschecks c"
    "  JOIN map_run r ON r.old = c.run_id ORDER BY c.id;";

/* How one kind of content-stored set is merged: the source's sets the merged runs use (id, digest, then `extra`
 * more columns), the output's set of a digest, a new set (digest and the extra columns), the map of ids, and the
 * statements copying a new set's rows (bound: new id, old id). */
struct merge_set_kind {
    const char *what, *select, *find, *insert, *map;
    int extra;
    const char *rows[3];
};

static const struct merge_set_kind merge_set_kinds[] = {
    {"merging decision sets",
     "SELECT id, digest, fired, refused, held, buckets FROM src.decision_sets WHERE id IN"
     " (SELECT p.set_id FROM src.reports p JOIN map_run r ON r.old = p.run_id) ORDER BY id",
     "SELECT id FROM main.decision_sets WHERE digest = ?",
     "INSERT INTO main.decision_sets (digest, fired, refused, held, buckets) VALUES (?, ?, ?, ?, ?)",
     "INSERT INTO map_set VALUES (?, ?)", 4,
     {"INSERT INTO main.set_decisions (set_id, seq, rule, class, covers, outcome, reason, line, code)"
      " SELECT ?, seq, rule, class, covers, outcome, reason, line, code FROM src.set_decisions WHERE set_id = ?"
      " ORDER BY seq",
      "INSERT INTO main.set_rules (set_id, bucket, rule, decisions, fired, hash, keys)"
      " SELECT ?, bucket, rule, decisions, fired, hash, keys FROM src.set_rules WHERE set_id = ? ORDER BY bucket, rule",
      NULL}},
    {"merging tolerance sets",
     "SELECT id, digest FROM src.tolerance_sets WHERE id IN"
     " (SELECT t.set_id FROM src.run_tolerances t JOIN map_run r ON r.old = t.run_id) ORDER BY id",
     "SELECT id FROM main.tolerance_sets WHERE digest = ?", /* a set without a digest is never found: copied */
     "INSERT INTO main.tolerance_sets (digest) VALUES (?)", "INSERT INTO map_tset VALUES (?, ?)", 0,
     {"INSERT INTO main.set_tolerances (set_id, seq, backend, op, tensor, elements, max_abs, max_rel, nmse, bound,"
      " pass, ratio, worst, lane, reference, max_abs_bound) SELECT ?, seq, backend, op, tensor, elements, max_abs,"
      " max_rel, nmse, bound, pass, ratio, worst, lane, reference, max_abs_bound FROM src.set_tolerances"
      " WHERE set_id = ? ORDER BY seq",
      "INSERT INTO main.set_tolerance_steps (set_id, seq, backend, step, tensor, rows, nmse, kl, top1_agree, max_abs)"
      " SELECT ?, seq, backend, step, tensor, rows, nmse, kl, top1_agree, max_abs FROM src.set_tolerance_steps"
      " WHERE set_id = ? ORDER BY seq",
      NULL}},
};

/* Step a statement with two integers bound; true when it ran to completion. */
static bool step_pair(sqlite3_stmt *st, int64_t a, int64_t b)
{
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    bool ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_reset(st);
    return ok;
}

/* Map each set the merged runs use to the output's set of the same digest, copying the set and its rows when the
 * output has none. */
static int merge_sets(struct db *out, const struct merge_set_kind *k, char err[DB_ERR_LEN])
{
    sqlite3_stmt *sel = NULL, *find = NULL, *ins = NULL, *map = NULL, *rows[3] = {NULL, NULL, NULL};
    int rc = sqlite3_prepare_v2(out->conn, k->select, -1, &sel, NULL) != SQLITE_OK ||
             sqlite3_prepare_v2(out->conn, k->find, -1, &find, NULL) != SQLITE_OK ||
             sqlite3_prepare_v2(out->conn, k->insert, -1, &ins, NULL) != SQLITE_OK ||
             sqlite3_prepare_v2(out->conn, k->map, -1, &map, NULL) != SQLITE_OK;
    for (int i = 0; i < 3 && !rc && k->rows[i]; i++)
        rc = sqlite3_prepare_v2(out->conn, k->rows[i], -1, &rows[i], NULL) != SQLITE_OK;
    while (!rc && sqlite3_step(sel) == SQLITE_ROW) {
        sqlite3_bind_value(find, 1, sqlite3_column_value(sel, 1));
        int64_t id = lookup_id(find);
        if (id == 0) {
            for (int i = 0; i <= k->extra; i++)
                sqlite3_bind_value(ins, i + 1, sqlite3_column_value(sel, i + 1));
            rc = sqlite3_step(ins) != SQLITE_DONE;
            sqlite3_reset(ins);
            id = sqlite3_last_insert_rowid(out->conn);
            for (int i = 0; i < 3 && !rc && rows[i]; i++)
                rc = !step_pair(rows[i], id, sqlite3_column_int64(sel, 0));
        }
        rc = rc || !step_pair(map, sqlite3_column_int64(sel, 0), id);
    }
    sqlite3_finalize(sel);
    sqlite3_finalize(find);
    sqlite3_finalize(ins);
    sqlite3_finalize(map);
    for (int i = 0; i < 3; i++)
        sqlite3_finalize(rows[i]);
    return rc ? fail(out, k->what, err) : 0;
}

/* Whether the file at path passes SQLite's quick check, and its schema version. 0, or 1 with err. */
static int probe_input(const char *path, int *version, char err[DB_ERR_LEN])
{
    struct db *probe;
    if (db_open_readonly(path, &probe, err))
        return 1;
    sqlite3_stmt *q;
    bool sound = sqlite3_prepare_v2(probe->conn, "PRAGMA quick_check", -1, &q, NULL) == SQLITE_OK &&
                 sqlite3_step(q) == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(q, 0), "ok") == 0;
    sqlite3_finalize(q);
    *version = db_schema_version(probe);
    db_close(probe);
    if (!sound) {
        snprintf(err, DB_ERR_LEN, "%.250s: fails its integrity check; not merged", path);
        return 1;
    }
    return 0;
}

static int copy_forward(const char *path, const char *copy, char err[DB_ERR_LEN]);
static void remove_sidecars(const char *path);

/* Merge one input file into out: checked, brought forward in a copy when older, attached, copied in one
 * transaction. */
static int merge_one(struct db *out, const char *input, struct db_merge_result *res, char err[DB_ERR_LEN])
{
    int version;
    if (probe_input(input, &version, err))
        return 1;
    char upgraded[1100] = "";
    if (version < DB_SCHEMA_VERSION) {
        snprintf(upgraded, sizeof upgraded, "%.1000s.upgrade.%ld", input, (long)getpid());
        if (copy_forward(input, upgraded, err)) {
            remove(upgraded);
            remove_sidecars(upgraded);
            return 1;
        }
    }
    sqlite3_stmt *att;
    sqlite3_prepare_v2(out->conn, "ATTACH DATABASE ? AS src", -1, &att, NULL);
    bind_text(att, 1, *upgraded ? upgraded : input);
    int rc = sqlite3_step(att) != SQLITE_DONE;
    sqlite3_finalize(att);
    if (rc) {
        snprintf(err, DB_ERR_LEN, "%.250s: cannot attach: %.200s", input, sqlite3_errmsg(out->conn));
    } else {
        rc = db_begin(out, err) || exec(out, merge_sql, input, err) || merge_runs(out, input, res, err) ||
             merge_sets(out, &merge_set_kinds[0], err) || merge_sets(out, &merge_set_kinds[1], err) ||
             exec(out, merge_rows_sql, input, err);
        if (rc)
            db_rollback(out);
        else
            rc = db_commit(out, err);
        sqlite3_exec(out->conn, "DETACH DATABASE src", NULL, NULL, NULL);
    }
    if (*upgraded) {
        remove(upgraded);
        remove_sidecars(upgraded);
    }
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

/* Copy the database at path (with what its write-ahead log holds, read only) to the new file `copy` through SQLite's
 * backup, then bring the copy's schema forward. 0, or 1 with err. */
static int copy_forward(const char *path, const char *copy, char err[DB_ERR_LEN])
{
    struct db *src, *dst;
    if (db_open_readonly(path, &src, err))
        return 1;
    if (db_open(copy, &dst, err)) {
        db_close(src);
        return 1;
    }
    sqlite3_backup *b = sqlite3_backup_init(dst->conn, "main", src->conn, "main");
    int rc = !b || sqlite3_backup_step(b, -1) != SQLITE_DONE;
    if (b)
        sqlite3_backup_finish(b);
    if (rc)
        snprintf(err, DB_ERR_LEN, "%.250s: cannot copy: %.200s", path, sqlite3_errmsg(dst->conn));
    db_close(dst);
    db_close(src);
    if (!rc && !(rc = db_open(copy, &dst, err))) /* the copy has the source's version: upgraded on this open */
        db_close(dst);
    return rc;
}

/* Whether the file at path is another program's SQLite database (check_holding's refusal), opened read-only and
 * left as it is; err says so. A file that is no database at all is not. */
static bool foreign_database(const char *path, char err[DB_ERR_LEN])
{
    struct db *db = calloc(1, sizeof *db);
    if (!db)
        abort();
    db->readonly = true;
    bool foreign = false;
    enum holding h;
    int version;
    if (sqlite3_open_v2(path, &db->conn, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        holding(db, &h, &version, err) == 0 && h == HOLDS_FOREIGN && version <= DB_SCHEMA_VERSION)
        foreign = check_holding(db, path, false, err) != 0;
    db_close(db);
    return foreign;
}

/* Whether the merge may write out under mode: an absent path, or (FORCE, APPEND) a regular file, never another
 * program's database. 0, or 1 with err. */
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
    char why[DB_ERR_LEN];
    if (mode == DB_MERGE_FORCE && foreign_database(out, why)) {
        snprintf(err, DB_ERR_LEN, "%.400s; --force replaces only a results file", why);
        return 1;
    }
    return 0;
}

/* A merge's message names its output, never the temporary file it writes first: each `tmp` in err becomes `out`. */
static void name_output(char err[DB_ERR_LEN], const char *tmp, const char *out)
{
    char named[DB_ERR_LEN];
    size_t k = 0, n = strlen(tmp);
    for (const char *p = err; *p && k + 1 < sizeof named;) {
        bool at = strncmp(p, tmp, n) == 0;
        const char *put = at ? out : p;
        size_t len = at ? strlen(out) : 1;
        for (size_t i = 0; i < len && k + 1 < sizeof named; i++)
            named[k++] = put[i];
        p += at ? n : 1;
    }
    named[k] = '\0';
    snprintf(err, DB_ERR_LEN, "%s", named);
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
    struct db *db = NULL;
    int rc = mode == DB_MERGE_APPEND && exists ? copy_forward(out, tmp, err) : 0;
    rc = rc || db_open(tmp, &db, err);
    for (int i = 0; !rc && i < ninputs; i++)
        rc = merge_one(db, inputs[i], &res, err);
    if (!rc)
        rc = exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", "finishing the merge", err);
    if (db)
        db_close(db);
    if (!rc) {
        remove_sidecars(out); /* a killed writer's log must not pair with the new file */
        if (rename(tmp, out) != 0) {
            snprintf(err, DB_ERR_LEN, "%.250s: cannot write: %.100s", out, strerror(errno));
            rc = 1;
        }
    }
    if (rc) {
        remove(tmp);
        name_output(err, tmp, out);
    }
    remove_sidecars(tmp);
    free(tmp);
    if (result)
        *result = res;
    return rc;
}
