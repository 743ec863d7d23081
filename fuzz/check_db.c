/* fuzz/check_db.c — the results.db harness's checks: a run, a graph, a shim, a report with decisions, fuzz
 * statistics and findings, every text field taken from the input (any bytes but NUL: invalid UTF-8, quotes,
 * newlines, SQL), are written through db/db.h and read back with plain SQL unchanged; a rolled-back transaction
 * leaves nothing behind; a finding seen twice counts two.
 *
 * The db is a scratch file under $TMPDIR (or /tmp), named by the process id, started afresh every few hundred
 * inputs so it stays small, and removed by fuzz_db_cleanup. It is also merged into a second file over a stale
 * write-ahead log, checked, and opened read-only: after inputs 1, 2, 4, ... up to INPUTS_A_MERGE, then every
 * INPUTS_A_MERGE inputs (when the scratch db is full). A merge costs over a hundred inputs (a file made with its
 * schema, synced, renamed, checked): merged every 32 inputs the harness ran at a fifth of its speed (docs/fuzzing.md,
 * *Measured*), so the merge is checked early (a replay of one input merges once) and then seldom. */
#include "fuzz.h"

#include "db/db.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define INPUTS_A_FILE 256
#define INPUTS_A_MERGE 1024 /* past the powers of two below it, the scratch db is merged and checked this often */
#define MAX_FIELD 300
#define MAX_DECISIONS 16

/* The scratch db: its path, the writer (db/db.h) and a plain reader connection. */
static struct {
    char path[512];
    struct db *db;
    sqlite3 *conn;
    int uses;
    uint64_t serial; /* makes each input's unique keys unique */
    uint64_t inputs; /* inputs checked since fuzz_db_cleanup: the merge's schedule */
    struct {
        const char *sql;
        sqlite3_stmt *st;
    } reads[8]; /* the reader's statements, prepared once a scratch db rather than six times an input */
} scratch;

/* Remove the scratch file and its WAL companions. */
static void remove_files(void)
{
    if (!scratch.path[0])
        return;
    char side[600];
    remove(scratch.path);
    snprintf(side, sizeof side, "%s-wal", scratch.path);
    remove(side);
    snprintf(side, sizeof side, "%s-shm", scratch.path);
    remove(side);
}

/* Close the scratch db and remove its files. */
static void close_db(void)
{
    for (size_t i = 0; i < sizeof scratch.reads / sizeof scratch.reads[0]; i++) {
        sqlite3_finalize(scratch.reads[i].st);
        scratch.reads[i].sql = NULL;
        scratch.reads[i].st = NULL;
    }
    if (scratch.conn)
        sqlite3_close(scratch.conn);
    db_close(scratch.db);
    scratch.conn = NULL;
    scratch.db = NULL;
    remove_files();
    scratch.path[0] = '\0';
    scratch.uses = 0;
}

void fuzz_db_cleanup(void)
{
    close_db();
    scratch.inputs = 0;
}

/* Whether the n-th input since the cleanup (from 1) merges: 1, 2, 4, ... INPUTS_A_MERGE, then its multiples. */
static bool merge_due(uint64_t n)
{
    return n <= INPUTS_A_MERGE ? (n & (n - 1)) == 0 : n % INPUTS_A_MERGE == 0;
}

/* Open a fresh scratch db when there is none or the current one has served its inputs. 0 on success. */
static int ensure_db(char err[DB_ERR_LEN])
{
    if (scratch.db && scratch.uses++ < INPUTS_A_FILE)
        return 0;
    close_db();
    const char *dir = getenv("TMPDIR");
    snprintf(scratch.path, sizeof scratch.path, "%s/fusecheck-fuzz-db-%ld.db", dir && dir[0] ? dir : "/tmp",
             (long)getpid());
    remove_files();
    if (db_open(scratch.path, &scratch.db, err) != 0)
        return 1;
    if (sqlite3_open_v2(scratch.path, &scratch.conn, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(err, DB_ERR_LEN, "cannot open the scratch db to read it back");
        return 1;
    }
    scratch.uses = 1;
    return 0;
}

/* The next text field of the input: the bytes up to a NUL (at most MAX_FIELD), NUL-terminated in buf. */
static const char *field(struct fuzz_bytes *b, char buf[MAX_FIELD + 1])
{
    size_t n = 0;
    while (b->at < b->n && n < MAX_FIELD) {
        uint8_t c = b->p[b->at++];
        if (c == 0)
            break;
        buf[n++] = (char)c;
    }
    buf[n] = '\0';
    return buf;
}

/* Whether a column holds exactly the text want (NULL: SQL NULL). */
static bool column_is(sqlite3_stmt *st, int col, const char *want)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return want == NULL;
    if (!want)
        return false;
    const unsigned char *got = sqlite3_column_text(st, col);
    int n = sqlite3_column_bytes(st, col);
    return got && (size_t)n == strlen(want) && memcmp(got, want, (size_t)n) == 0;
}

/* The reader's statement for sql, prepared on its first use with this scratch db; NULL when it does not prepare. */
static sqlite3_stmt *reader(const char *sql)
{
    size_t n = sizeof scratch.reads / sizeof scratch.reads[0], i = 0;
    while (i < n && scratch.reads[i].sql && strcmp(scratch.reads[i].sql, sql) != 0)
        i++;
    if (i < n && scratch.reads[i].sql)
        return scratch.reads[i].st;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v3(scratch.conn, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK || i == n) {
        sqlite3_finalize(st);
        return NULL;
    }
    scratch.reads[i].sql = sql;
    scratch.reads[i].st = st;
    return st;
}

/* Done with a reader's statement: reset, its bindings cleared (NULL: nothing to do). */
static void done(sqlite3_stmt *st)
{
    if (!st)
        return;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

/* The reader's statement for sql, id bound as parameter 1 (when id ≥ 0), stepped to its first row; NULL when there
 * is none. */
static sqlite3_stmt *first_row(const char *sql, int64_t id)
{
    sqlite3_stmt *st = reader(sql);
    if (!st)
        return NULL;
    if (id >= 0)
        sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        done(st);
        return NULL;
    }
    return st;
}

/* What one input writes. */
struct rows {
    char command[MAX_FIELD + 1], gname[MAX_FIELD + 1], family[MAX_FIELD + 1], mode[MAX_FIELD + 1];
    char shim[MAX_FIELD + 64], knobs[MAX_FIELD + 1], harness[MAX_FIELD + 64], signature[MAX_FIELD + 1];
    char sha[65];
    struct {
        char rule[MAX_FIELD + 1], cls[MAX_FIELD + 1], covers[MAX_FIELD + 1], reason[MAX_FIELD + 1];
        int outcome;
    } d[MAX_DECISIONS];
    int nd;
    int64_t run, graph, shimid, set;
};

static const char *const outcomes[] = {"fired", "refused", "held"};

/* Decode the input's fields. */
static void decode(struct fuzz_bytes *b, struct rows *w)
{
    char tmp[MAX_FIELD + 1];
    field(b, w->command);
    field(b, w->gname);
    field(b, w->family);
    field(b, w->mode);
    snprintf(w->shim, sizeof w->shim, "%s#%llu", field(b, tmp), (unsigned long long)scratch.serial);
    field(b, w->knobs);
    snprintf(w->harness, sizeof w->harness, "%s#%llu", field(b, tmp), (unsigned long long)scratch.serial);
    field(b, w->signature);
    snprintf(w->sha, sizeof w->sha, "%064llx", (unsigned long long)scratch.serial);
    w->nd = 0;
    while (!fuzz_bytes_done(b) && w->nd < MAX_DECISIONS) {
        w->d[w->nd].outcome = fuzz_byte(b) % 3;
        field(b, w->d[w->nd].rule);
        field(b, w->d[w->nd].cls);
        field(b, w->d[w->nd].covers);
        field(b, w->d[w->nd].reason);
        w->nd++;
    }
}

/* Write everything through db/db.h. 0 on success. */
static int write_rows(struct rows *w, char err[DB_ERR_LEN])
{
    struct db *db = scratch.db;
    /* a run of another optimizer when the signature field is not empty (its fields reused: the inputs' layout stays) */
    bool external = w->signature[0] != '\0';
    struct db_run_info info = {.kind = "fuzz", .command = w->command, .git_rev = w->family[0] ? w->family : NULL,
                               .host = NULL, .version = "fuzz", .optimizer_name = external ? w->signature : NULL,
                               .optimizer_version = external ? w->knobs : NULL,
                               .optimizer_command = external ? w->gname : NULL};
    if (db_run_begin(db, &info, &w->run, err) || db_begin(db, err))
        return 1;
    int rc = db_graph(db, w->gname, w->family[0] ? w->family : NULL, w->mode, (int64_t)w->nd, w->sha, &w->graph, err) ||
             db_shim(db, w->shim, w->knobs, &w->shimid, err);
    /* the report twice: the first makes its decision set, the second (same digest) adds a report row only */
    struct db_report rep = {w->run, w->graph, w->shimid, w->sha, w->nd, 0, 0, 1.5, w->sha};
    bool fresh = false, again = true;
    int64_t set2 = 0;
    if (!rc)
        rc = db_report(db, &rep, &w->set, &fresh, err);
    if (!rc && !fresh) {
        snprintf(err, DB_ERR_LEN, "a new digest did not make a new decision set");
        rc = 1;
    }
    for (int i = 0; !rc && i < w->nd; i++) {
        struct db_decision d = {w->set,
                                i,
                                w->d[i].rule,
                                w->d[i].cls,
                                w->d[i].covers,
                                outcomes[w->d[i].outcome],
                                w->d[i].outcome == RULES_REFUSED ? w->d[i].reason : NULL};
        const char *code = w->d[i].outcome == RULES_REFUSED ? w->d[i].cls : NULL; /* any text as a code */
        rc = db_decisions_coded(db, &d, &code, 1, err);
    }
    if (!rc)
        rc = db_report(db, &rep, &set2, &again, err);
    if (!rc && (again || set2 != w->set)) {
        snprintf(err, DB_ERR_LEN, "a digest stored already made another decision set");
        rc = 1;
    }
    struct db_fuzz_stat stat = {w->run, w->harness, 7, 0.25, 3, 11};
    if (!rc)
        rc = db_fuzz_stat(db, &stat, err) || db_fuzz_finding(db, w->run, w->harness, w->signature, w->sha, err) ||
             db_fuzz_finding(db, w->run, w->harness, w->signature, w->sha, err);
    if (rc) {
        db_rollback(db);
        return 1;
    }
    if (db_commit(db, err))
        return 1;
    /* A transaction rolled back leaves nothing: a decision past the last, then rolled back. */
    struct db_decision extra = {w->set, w->nd, "rolled-back", "x", "[]", "held", NULL};
    if (db_begin(db, err) || db_decision(db, &extra, err))
        return 1;
    db_rollback(db);
    return db_run_end(db, w->run, "complete", err);
}

/* Read every row back and compare; 0 when all match. */
static int read_back(const struct rows *w, struct fuzz_finding *f)
{
    sqlite3_stmt *st = first_row("SELECT kind, command, status, git_rev FROM runs WHERE id = ?", w->run);
    bool ok = st && column_is(st, 0, "fuzz") && column_is(st, 1, w->command) && column_is(st, 2, "complete") &&
              column_is(st, 3, w->family[0] ? w->family : NULL);
    done(st);
    if (!ok)
        return fuzz_fail(f, "db", "run", "the run's row does not read back as written");
    bool external = w->signature[0] != '\0';
    st = first_row("SELECT optimizer_name, optimizer_version, optimizer_command FROM runs WHERE id = ?", w->run);
    ok = st && column_is(st, 0, external ? w->signature : "fusecheck") &&
         column_is(st, 1, external ? w->knobs : "fuzz") && column_is(st, 2, external ? w->gname : NULL);
    done(st);
    if (!ok)
        return fuzz_fail(f, "db", "optimizer", "the run's optimizer does not read back as written");
    st = first_row("SELECT name, family, mode, ops, sha256 FROM graphs WHERE id = ?", w->graph);
    ok = st && column_is(st, 0, w->gname) && column_is(st, 1, w->family[0] ? w->family : NULL) &&
         column_is(st, 2, w->mode) && sqlite3_column_int64(st, 3) == w->nd && column_is(st, 4, w->sha);
    done(st);
    if (!ok)
        return fuzz_fail(f, "db", "graph", "the graph's row does not read back as written");
    st = first_row("SELECT name, knobs FROM shims WHERE id = ?", w->shimid);
    ok = st && column_is(st, 0, w->shim) && column_is(st, 1, w->knobs);
    done(st);
    if (!ok)
        return fuzz_fail(f, "db", "shim", "the shim's row does not read back as written");
    st = reader("SELECT d.seq, d.rule, d.class, d.covers, d.outcome, d.reason, d.code FROM set_decisions d "
                "JOIN reports r ON r.set_id = d.set_id WHERE r.run_id = ? ORDER BY r.id, d.seq");
    if (!st)
        return fuzz_fail(f, "db", "prepare", "cannot read the decisions back");
    sqlite3_bind_int64(st, 1, w->run);
    int n = 0;
    ok = true;
    /* both reports read back the same decisions, in order */
    while (ok && sqlite3_step(st) == SQLITE_ROW) {
        int k = w->nd ? n % w->nd : 0;
        ok = n < 2 * w->nd && sqlite3_column_int64(st, 0) == k && column_is(st, 1, w->d[k].rule) &&
             column_is(st, 2, w->d[k].cls) && column_is(st, 3, w->d[k].covers) &&
             column_is(st, 4, outcomes[w->d[k].outcome]) &&
             column_is(st, 5, w->d[k].outcome == RULES_REFUSED ? w->d[k].reason : NULL) &&
             column_is(st, 6, w->d[k].outcome == RULES_REFUSED ? w->d[k].cls : NULL);
        n++;
    }
    done(st);
    if (!ok || n != 2 * w->nd)
        return fuzz_fail(f, "db", "decision", "decision %d of %d does not read back as written", n - 1, w->nd);
    sqlite3_stmt *q = reader("SELECT count, first_run, last_run, input_sha256 FROM fuzz_findings "
                             "WHERE harness = ? AND signature = ?");
    ok = q != NULL;
    if (ok) {
        sqlite3_bind_text(q, 1, w->harness, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, w->signature, -1, SQLITE_STATIC);
        ok = sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int64(q, 0) == 2 && sqlite3_column_int64(q, 1) == w->run &&
             sqlite3_column_int64(q, 2) == w->run && column_is(q, 3, w->sha);
    }
    done(q);
    if (!ok)
        return fuzz_fail(f, "db", "finding", "a finding seen twice does not read back with count 2");
    st = first_row("SELECT executions, corpus, coverage FROM fuzz_stats WHERE run_id = ?", w->run);
    ok =
        st && sqlite3_column_int64(st, 0) == 7 && sqlite3_column_int64(st, 1) == 3 && sqlite3_column_int64(st, 2) == 11;
    done(st);
    if (!ok)
        return fuzz_fail(f, "db", "stat", "the fuzz statistics do not read back as written");
    return 0;
}

/* One value of a query on the file at path (opened read-only by plain SQLite), or -1. */
static long long count_in(const char *path, const char *sql)
{
    sqlite3 *c;
    sqlite3_stmt *st = NULL;
    long long v = -1;
    if (sqlite3_open_v2(path, &c, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(c, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_type(st, 0) == SQLITE_TEXT
                ? strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0
                : sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(c);
    return v;
}

/* The scratch db merged into a second file, over a stale write-ahead log of garbage left beside it: the result
 * passes the integrity check and holds every run and decision the scratch db does; opened read-only it reads and
 * refuses a write. 0, or a finding. */
static int check_merge(struct fuzz_finding *f)
{
    char out[600], wal[620], err[DB_ERR_LEN];
    snprintf(out, sizeof out, "%s.merged", scratch.path);
    snprintf(wal, sizeof wal, "%s-wal", out);
    FILE *w = fopen(wal, "wb");
    if (w) {
        for (int i = 0; i < 4096; i++)
            fputc((i * 131) & 0xff, w);
        fclose(w);
    }
    const char *in[1] = {scratch.path};
    int bad = 0;
    if (db_merge(in, 1, out, DB_MERGE_FORCE, NULL, err))
        bad = fuzz_fail(f, "db", "merge", "merging the scratch db failed: %s", err);
    else if (count_in(out, "PRAGMA integrity_check") != 1)
        bad = fuzz_fail(f, "db", "merge", "a merged file fails its integrity check");
    else if (count_in(out, "SELECT count(*) FROM runs") != count_in(scratch.path, "SELECT count(*) FROM runs") ||
             count_in(out, "SELECT count(*) FROM decisions") != count_in(scratch.path, "SELECT count(*) FROM decisions"))
        bad = fuzz_fail(f, "db", "merge", "a merge lost or added runs or decisions");
    struct db *ro;
    if (!bad && db_open_readonly(out, &ro, err) == 0) {
        int64_t run;
        const struct db_run_info info = {.kind = "fuzz", .command = "read-only", .git_rev = NULL,
                                         .host = NULL, .version = "fuzz"};
        bool wrote = db_run_begin(ro, &info, &run, err) == 0;
        db_close(ro);
        if (wrote)
            bad = fuzz_fail(f, "db", "readonly", "a file opened read-only took a write");
    } else if (!bad) {
        bad = fuzz_fail(f, "db", "readonly", "a merged file does not open read-only: %s", err);
    }
    remove(out);
    remove(wal);
    snprintf(wal, sizeof wal, "%s-shm", out);
    remove(wal);
    return bad;
}

int fuzz_check_db(const uint8_t *data, size_t size, struct fuzz_finding *f)
{
    char err[DB_ERR_LEN];
    if (ensure_db(err) != 0)
        return fuzz_fail(f, "db", "open", "the scratch db does not open: %s", err);
    scratch.serial++;
    scratch.inputs++;
    static struct rows w; /* 20 KiB, not allocated an input: ASan's allocator is the harness's largest cost */
    struct fuzz_bytes b = {data, size, 0};
    decode(&b, &w);
    int bad = write_rows(&w, err) ? fuzz_fail(f, "db", "write", "writing failed: %s", err) : read_back(&w, f);
    if (!bad && merge_due(scratch.inputs))
        bad = check_merge(f);
    return bad;
}
