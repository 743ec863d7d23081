/* tests/test_db.c — results.db: schema and migrations, every row kind, the regression views, merging, and the
 * reliability promises (a killed writer, four writers at once, a file that is not a db, a newer schema, a missing
 * directory, a read-only file, a full disk); the code mutants' table. */
#include "check.h"
#include "db/db.h"

#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[256];

/* A path inside the test's scratch directory. */
static const char *path_in(const char *name)
{
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* One integer from a query on a plain connection to path (-1 on error). */
static long long sql_int(const char *path, const char *sql)
{
    sqlite3 *c;
    sqlite3_stmt *st;
    long long v = -1;
    if (sqlite3_open_v2(path, &c, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(c, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(c);
    return v;
}

/* One text value from a query (copied into out; "" on error). */
static void sql_text(const char *path, const char *sql, char *out, size_t cap)
{
    sqlite3 *c;
    sqlite3_stmt *st;
    out[0] = '\0';
    if (sqlite3_open_v2(path, &c, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(c, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    sqlite3_close(c);
}

static const struct db_run_info info = {.kind = "check", .command = "fusecheck check", .git_rev = "abc123",
                                        .host = "host", .version = "0.1.0"};

/* Write one run with a report of the given outcomes for graph `g` under shim `s`. Returns the run id. */
static int64_t write_run(struct db *db, const char *g, const char *outcome_a, const char *outcome_b,
                         const char *digest)
{
    char err[DB_ERR_LEN];
    int64_t run, graph, shim, report, tset;
    bool fresh, tfresh;
    CHECK(db_run_begin(db, &info, &run, err) == 0);
    CHECK(db_begin(db, err) == 0);
    CHECK(db_graph(db, g, "llama", "decode", 10, "aa", &graph, err) == 0);
    CHECK(db_shim(db, "reference", "", &shim, err) == 0);
    CHECK(db_step(db, run, 0, "add_norm", err) == 0);
    CHECK(db_step(db, run, 1, "glu_pair", err) == 0);
    CHECK(db_step(db, run, 2, "dual_norm", err) == 0);
    struct db_report r = {run, graph, shim, digest, 2, 0, 0, 1.5, strcmp(digest, "d2") == 0 ? "rw2" : "rw1"};
    CHECKF(db_report(db, &r, &report, &fresh, err) == 0, "%s", err);
    struct db_decision d1 = {report, 0, "add_norm", "add_norm", "[1, 2]", outcome_a, NULL};
    struct db_decision d2 = {report, 1, "glu_pair", "gemv_gate_up_glu", "[3, 4, 5]", outcome_b,
                             strcmp(outcome_b, "refused") == 0 ? "too wide" : NULL};
    CHECK(!fresh || db_decision(db, &d1, err) == 0);
    CHECK(!fresh || db_decision(db, &d2, err) == 0);
    struct db_diff diff = {run, graph, shim, strcmp(digest, "d2") != 0, 3, "x", 4, 1.0, 2.0, NULL, "differs"};
    CHECK(db_diff(db, &diff, err) == 0);
    /* the rewritten graph's validity: no one value to blame, the validator's message */
    struct db_diff valid = {run, graph, shim, strcmp(digest, "d2") != 0, 9, NULL, 0, 0, 0, "valid",
                            "op 3 (add_norm): ins[1]: no part reads 'r' whole"};
    CHECK(db_diff(db, &valid, err) == 0);
    struct db_failure fl = {run, "tiny-llama", "decode", NULL, "lift", "too large"};
    CHECK(db_failure(db, &fl, err) == 0);
    CHECK(db_tolerance_set(db, run, graph, shim, strcmp(digest, "d2") == 0 ? "t2" : "t1", &tset, &tfresh, err) == 0);
    struct db_tolerance t = {tset, 0, "host-lane", "matmul", "y", 64, 0.1, 0.01,
                             strcmp(digest, "d2") == 0 ? 0.5 : 0.1, 0.3, strcmp(digest, "d2") != 0,
                             strcmp(digest, "d2") == 0 ? 1.5 : 0.2, 7, 1.25, 1.0, 0.25};
    CHECK(!tfresh || db_tolerance(db, &t, err) == 0);
    struct db_tolerance_step ts = {tset, 0, "host", "logits", 0, 4, strcmp(digest, "d2") == 0 ? 3 : 4,
                                   1e-4, strcmp(digest, "d2") == 0 ? 2e-5 : 1e-5, 0.03};
    CHECK(!tfresh || db_tolerance_step(db, &ts, err) == 0);
    struct db_proof p = {run,     "add_norm", "motion", 8, strcmp(digest, "d2") == 0 ? "unknown" : "proved",
                         "timeout", NULL,     3.0,      NULL, NULL, 0, false};
    CHECK(db_proof(db, &p, err) == 0);
    /* a second solver's verdict on the same obligation: refuted where z3 proved is a disagreement */
    struct db_proof q = {run, "add_norm", "motion", 8, "refuted", NULL, NULL, 2.0, "cvc5", NULL, 0, false};
    CHECK(db_proof(db, &q, err) == 0);
    struct db_fuzz_stat fs = {run, "fuzz_format", 1000, 1.0, 10, 200};
    CHECK(db_fuzz_stat(db, &fs, err) == 0);
    CHECK(db_fuzz_finding(db, run, "fuzz_optimize", "diff:add_norm", "ff", err) == 0);
    /* A batch of decisions (more than one statement's worth, and a remainder) lands row for row. */
    struct db_decision batch[37];
    char texts[37][16];
    for (int i = 0; i < 37; i++) {
        snprintf(texts[i], sizeof texts[i], "[%d]", 100 + i);
        batch[i] = (struct db_decision){report, 2 + i, "dual_norm", "dual_norm", texts[i],
                                        i % 2 ? "held" : "refused", i % 2 ? NULL : "a reason"};
    }
    CHECK(!fresh || db_decisions(db, batch, 37, err) == 0);
    CHECK(db_commit(db, err) == 0);
    CHECK(db_run_end(db, run, "complete", err) == 0);
    return run;
}

/* Collected decision changes. */
struct changes {
    int n;
    char last[512];
};
static void on_change(const char *graph, const char *mode, const char *shim, const char *rule, const char *cls,
                      const char *covers, const char *before, const char *after, void *ctx)
{
    struct changes *c = ctx;
    c->n++;
    snprintf(c->last, sizeof c->last, "%s %s %s %s %s %s %s -> %s", graph, mode, shim, rule, cls, covers,
             before ? before : "(none)", after ? after : "(none)");
}

/* Rows a read query gave: how many, and the last one's columns joined by '|' (NULL as "~"). */
struct selected {
    int n;
    char last[256];
};
static void on_row(const char *const *cols, int n, void *ctx)
{
    struct selected *s = ctx;
    s->n++;
    s->last[0] = '\0';
    for (int i = 0; i < n; i++)
        snprintf(s->last + strlen(s->last), sizeof s->last - strlen(s->last), "%s%s", i ? "|" : "",
                 cols[i] ? cols[i] : "~");
}

/* db_changes_cache(after, before): changes_cache holds the view's rows of the pair, each once however often asked,
 * and nothing of another pair; a read-only connection caches too, leaving the file as it was. */
static void test_changes_cache(struct db *db, const char *path, int64_t after, int64_t before)
{
    char err[DB_ERR_LEN];
    const char *count = "SELECT count(*) FROM changes_cache WHERE run_after = ?1 AND run_before = ?2";
    const char *rows = "SELECT count(*) FROM (SELECT * FROM changes_cache WHERE run_after = ?1 AND run_before = ?2"
                       " EXCEPT SELECT * FROM decision_changes WHERE run_after = ?1 AND run_before = ?2)";
    int64_t params[2] = {after, before}, back[2] = {before, after};
    char pair[160];
    snprintf(pair, sizeof pair, "SELECT count(*) FROM decision_changes WHERE run_after = %lld AND run_before = %lld",
             (long long)after, (long long)before);
    long long want = sql_int(path, pair);
    struct db *ro = NULL;
    CHECKF(db_open_readonly(path, &ro, err) == 0, "%s", err);
    struct db *conns[2] = {db, ro};
    for (int c = 0; c < 2 && conns[c]; c++) {
        long long before_bytes = sql_int(path, "PRAGMA page_count");
        for (int k = 0; k < 3; k++)
            CHECKF(db_changes_cache(conns[c], after, before, err) == 0, "%s", err);
        CHECK(db_changes_cache(conns[c], before, after, err) == 0);
        struct selected s = {0, ""};
        CHECK(db_select(conns[c], count, params, 2, on_row, &s, err) == 0 && s.n == 1);
        long long n = strtoll(s.last, NULL, 10);
        CHECKF(n > 0 && n == want, "cached %lld changes of %lld", n, want);
        s.n = 0;
        CHECK(db_select(conns[c], rows, params, 2, on_row, &s, err) == 0 && strcmp(s.last, "0") == 0);
        s.n = 0;
        CHECK(db_select(conns[c], count, back, 2, on_row, &s, err) == 0 && strcmp(s.last, "0") == 0);
        CHECK(sql_int(path, "PRAGMA page_count") == before_bytes);
        CHECK(sql_int(path, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'changes_cache%'") == 0);
    }
    db_close(ro);
}

/* db_select: numbered parameters, NULLs, and a statement that would write refused (the file unchanged). */
static void test_select(struct db *db, const char *path, int64_t r1, int64_t r2)
{
    char err[DB_ERR_LEN];
    struct selected s = {0, ""};
    int64_t params[2] = {r2, r1};
    CHECK(db_select(db, "SELECT id, kind, ?2, NULL FROM runs WHERE id >= ?2 AND id <= ?1 ORDER BY id", params, 2,
                    on_row, &s, err) == 0);
    CHECK(s.n == 2);
    char want[64];
    snprintf(want, sizeof want, "%lld|check|%lld|~", (long long)r2, (long long)r1);
    CHECK_STR(s.last, want);
    long long runs = sql_int(path, "SELECT count(*) FROM runs");
    s.n = 0;
    CHECK(db_select(db, "DELETE FROM runs", NULL, 0, on_row, &s, err) != 0 && strstr(err, "only read"));
    CHECK(db_select(db, "SELECT nothing FROM nowhere", NULL, 0, on_row, &s, err) != 0);
    CHECK(s.n == 0 && sql_int(path, "SELECT count(*) FROM runs") == runs);
}

/* The schema, the writes and the views. */
static void test_views(void)
{
    char err[DB_ERR_LEN];
    struct db *db;
    const char *p = path_in("views.db");
    CHECK(db_open(p, &db, err) == 0);
    CHECK(db_schema_version(db) == DB_SCHEMA_VERSION);
    int64_t r1 = write_run(db, "tiny-llama", "fired", "fired", "d1");
    int64_t r2 = write_run(db, "tiny-llama", "fired", "refused", "d2");
    struct changes c = {0};
    CHECK(db_decision_changes(db, r1, r2, on_change, &c, err) == 0);
    CHECK(c.n == 1);
    CHECK_STR(c.last, "tiny-llama decode reference glu_pair gemv_gate_up_glu [3, 4, 5] fired -> refused: too wide");
    CHECK(sql_int(p, "SELECT count(*) FROM decisions WHERE rule = 'dual_norm'") == 74);
    CHECK(sql_int(p, "SELECT count(*) FROM decisions WHERE covers = '[136]' AND seq = 38 AND reason = 'a reason'") == 2);
    bool exists;
    CHECK(db_run_exists(db, r2, &exists, err) == 0 && exists);
    CHECK(db_run_exists(db, 999, &exists, err) == 0 && !exists);
    CHECK(db_run_end(db, r1, "failed", err) != 0 && strstr(err, "not in progress")); /* a status never flips */
    char status[16];
    CHECK(db_run_status(db, r1, status, err) == 0 && strcmp(status, "complete") == 0);
    CHECK(db_run_status(db, 999, status, err) == 0 && status[0] == '\0');
    test_select(db, p, r1, r2);
    db_close(db);
    CHECK(sql_int(p, "SELECT count(*) FROM latest_reports") == 1);
    CHECK(sql_int(p, "SELECT run FROM latest_reports") == r2);
    CHECK(sql_int(p, "SELECT count(*) FROM decision_changes WHERE run_before = 1 AND run_after = 2") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM digest_changes WHERE run_before = 1 AND run_after = 2") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM rewritten_changes WHERE run_before = 1 AND run_after = 2 AND "
                     "rewritten_before = 'rw1' AND rewritten_after = 'rw2' AND same_decisions = 0") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM rules_never_fired WHERE run = 2") == 2);
    char rule[64];
    sql_text(p, "SELECT group_concat(rule) FROM (SELECT rule FROM rules_never_fired WHERE run = 2 ORDER BY seq)", rule, sizeof rule);
    CHECK_STR(rule, "glu_pair,dual_norm");
    CHECK(sql_int(p, "SELECT count(*) FROM diff_mismatches") == 2);
    CHECK(sql_int(p, "SELECT count(*) FROM diff_mismatches WHERE kind = 'values' AND tensor = 'x' AND "
                     "first_index = 4 AND reason = 'differs'") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM diff_mismatches WHERE kind = 'valid' AND tensor IS NULL AND "
                     "first_index IS NULL AND reason LIKE '%no part reads%'") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM diffs WHERE identical = 1 AND reason IS NULL") == 2);
    CHECK(sql_int(p, "SELECT count(*) FROM tolerance_regressions WHERE run = 2") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM tolerance_step_regressions WHERE run = 2 AND top1_after = 3 AND "
                     "top1_before = 4 AND kl_after > kl_before") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM tolerance_step_regressions WHERE run = 1") == 0);
    CHECK(sql_int(p, "SELECT count(*) FROM proofs_not_proved") == 1); /* z3's verdicts only */
    CHECK(sql_int(p, "SELECT count(*) FROM proof_disagreements WHERE z3 = 'proved' AND solver = 'cvc5' AND "
                     "other = 'refuted'") == 1); /* run 1; run 2's z3 said unknown: no disagreement */
    CHECK(sql_int(p, "SELECT count(*) FROM proofs WHERE solver = 'z3'") == 2);
    CHECK(sql_int(p, "SELECT count(*) FROM fuzz_new_findings WHERE run = 1") == 1);
    CHECK(sql_int(p, "SELECT count FROM fuzz_findings") == 2);
    CHECK(sql_int(p, "PRAGMA foreign_key_check") == -1);
    char mode[16];
    sql_text(p, "PRAGMA journal_mode", mode, sizeof mode);
    CHECK_STR(mode, "wal");
}

/* One report of graph (name g, content sha) under shim "reference" in a run of its own, its decisions the given
 * outcomes of three fixed candidates (written only when its digest is new); returns the run, sets *fresh. */
static int64_t content_run(struct db *db, const char *g, const char *sha, const char *digest, const char *outcomes[3],
                           bool *fresh)
{
    char err[DB_ERR_LEN];
    int64_t run, graph, shim, set;
    CHECK(db_run_begin(db, &info, &run, err) == 0);
    CHECK(db_begin(db, err) == 0);
    CHECK(db_graph(db, g, "llama", "decode", 10, sha, &graph, err) == 0);
    CHECK(db_shim(db, "reference", "", &shim, err) == 0);
    struct db_report r = {run, graph, shim, digest, 3, 0, 0, 1.0, NULL};
    CHECKF(db_report(db, &r, &set, fresh, err) == 0, "%s", err);
    static const char *const covers[3] = {"[1, 2]", "[3, 4]", "[5]"};
    for (int i = 0; *fresh && i < 3; i++) {
        struct db_decision d = {set, i, "add_norm", "add_norm", covers[i], outcomes[i],
                                strcmp(outcomes[i], "refused") == 0 ? "too wide" : NULL};
        CHECK(db_decision(db, &d, err) == 0);
    }
    CHECK(db_commit(db, err) == 0);
    CHECK(db_run_end(db, run, "complete", err) == 0);
    return run;
}

/* Count graph changes. */
static void on_graph_change(const char *graph, const char *mode, int64_t ops_before, int64_t ops_after,
                            const char *sha_before, const char *sha_after, void *ctx)
{
    (void)graph, (void)mode, (void)ops_before, (void)ops_after, (void)sha_before, (void)sha_after;
    ++*(int *)ctx;
}

/* Reports stored by content: an identical report adds a report row and no decisions; reports pair by graph content,
 * a graph whose content changed is reported as such; tolerance results likewise stored once. */
static void test_content(void)
{
    char err[DB_ERR_LEN];
    struct db *db;
    const char *p = path_in("content.db");
    CHECK(db_open(p, &db, err) == 0);
    const char *all_fired[3] = {"fired", "fired", "fired"}, *one_refused[3] = {"fired", "refused", "fired"};
    bool fresh;
    int64_t r1 = content_run(db, "m", "aa", "dA", all_fired, &fresh);
    CHECK(fresh);
    int64_t r2 = content_run(db, "m", "aa", "dA", all_fired, &fresh);
    CHECK(!fresh); /* the same digest: the set stored already */
    CHECK(sql_int(p, "SELECT count(*) FROM decision_sets") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM set_decisions") == 3);
    CHECK(sql_int(p, "SELECT count(*) FROM decisions") == 6);
    CHECK(sql_int(p, "SELECT count(*) FROM decision_rows WHERE run = 2 AND outcome = 'fired'") == 3);
    CHECK(sql_int(p, "SELECT count(*) FROM report_rows WHERE digest = 'dA' AND fired = 3") == 2);
    struct changes c = {0};
    int64_t common = -1;
    CHECK(db_decision_changes(db, r1, r2, on_change, &c, err) == 0 && c.n == 0);
    CHECK(db_runs_common(db, r1, r2, &common, err) == 0 && common == 1);
    /* the graph's content changes: its reports are not paired, the change is reported */
    int64_t r3 = content_run(db, "m", "bb", "dB", one_refused, &fresh);
    CHECK(fresh);
    int graphs = 0;
    CHECK(db_decision_changes(db, r2, r3, on_change, &c, err) == 0 && c.n == 0);
    CHECK(db_runs_common(db, r2, r3, &common, err) == 0 && common == 0);
    CHECK(db_graph_changes(db, r2, r3, on_graph_change, &graphs, err) == 0 && graphs == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM graph_changes WHERE run_before = 2 AND run_after = 3 AND "
                     "sha256_before = 'aa' AND sha256_after = 'bb'") == 1);
    /* the same content, decisions changed: one decision change */
    int64_t r4 = content_run(db, "m", "bb", "dC", all_fired, &fresh);
    graphs = 0;
    CHECK(db_decision_changes(db, r3, r4, on_change, &c, err) == 0 && c.n == 1);
    CHECK_STR(c.last, "m decode reference add_norm add_norm [3, 4] refused: too wide -> fired");
    CHECK(db_graph_changes(db, r3, r4, on_graph_change, &graphs, err) == 0 && graphs == 0);
    CHECK(sql_int(p, "SELECT count(*) FROM rules_never_fired") == 0);
    /* a set that decides more — another covers of the same rule, and a rule of its own — and one decision less:
     * each shows, the new ones with no outcome before, the gone one with none after */
    int64_t r5 = 0, g5 = 0, s5 = 0, set5 = 0;
    CHECK(db_run_begin(db, &info, &r5, err) == 0 && db_begin(db, err) == 0);
    CHECK(db_graph(db, "m", "llama", "decode", 10, "bb", &g5, err) == 0 && db_shim(db, "reference", "", &s5, err) == 0);
    struct db_report r5r = {r5, g5, s5, "dD", 4, 0, 0, 1.0, NULL};
    CHECK(db_report(db, &r5r, &set5, &fresh, err) == 0 && fresh);
    struct db_decision d5[4] = {{set5, 0, "add_norm", "add_norm", "[1, 2]", "fired", NULL},
                                {set5, 1, "add_norm", "add_norm", "[3, 4]", "fired", NULL},
                                {set5, 2, "add_norm", "add_norm", "[9]", "fired", NULL},
                                {set5, 3, "glu_pair", "gemv_gate_up_glu", "[6, 7]", "fired", NULL}};
    CHECK(db_decisions(db, d5, 4, err) == 0 && db_commit(db, err) == 0 && db_run_end(db, r5, "complete", err) == 0);
    c.n = 0;
    CHECK(db_decision_changes(db, r4, r5, on_change, &c, err) == 0 && c.n == 3);
    CHECK(sql_int(p, "SELECT count(*) FROM decision_changes WHERE run_before = 4 AND run_after = 5 AND "
                     "outcome_before IS NULL AND outcome_after = 'fired' AND covers IN ('[9]', '[6, 7]')") == 2);
    CHECK(sql_int(p, "SELECT count(*) FROM decision_changes WHERE run_before = 4 AND run_after = 5 AND "
                     "covers = '[5]' AND outcome_before = 'fired' AND outcome_after IS NULL") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM decision_changes WHERE run_before = 5 AND run_after = 4") == 0);
    CHECK(sql_int(p, "SELECT count(*) FROM decision_changes WHERE run_before = 4 AND run_after = 5 AND "
                     "rule = 'glu_pair'") == 1);
    /* the cache of a pair's changes holds the view's rows, once however often asked; on a read-only connection
     * too, the file unchanged */
    test_changes_cache(db, p, r5, r4);
    /* each set's per-rule summaries count its decisions and firings */
    CHECK(sql_int(p, "SELECT count(*) FROM set_rules") == 5);
    CHECK(sql_int(p, "SELECT count(*) FROM set_rules r WHERE decisions <> (SELECT count(*) FROM set_decisions d "
                     "WHERE d.set_id = r.set_id AND d.rule = r.rule) OR fired <> (SELECT count(*) FROM set_decisions d "
                     "WHERE d.set_id = r.set_id AND d.rule = r.rule AND d.outcome = 'fired')") == 0);
    /* tolerance results: the same digest twice is one set, read back under both runs */
    int64_t graph, shim, set;
    bool tf;
    CHECK(db_graph(db, "m", "llama", "decode", 10, "bb", &graph, err) == 0 && db_shim(db, "reference", "", &shim, err) == 0);
    for (int k = 0; k < 2; k++) {
        CHECK(db_begin(db, err) == 0);
        CHECK(db_tolerance_set(db, k ? r4 : r3, graph, shim, "t-same", &set, &tf, err) == 0 && tf == (k == 0));
        struct db_tolerance t = {set, 0, "host", "0 matmul", "y", 4, 0, 0, 0, 1, true, 0, 0, 0, 0, 1};
        CHECK(!tf || db_tolerance(db, &t, err) == 0);
        CHECK(db_commit(db, err) == 0);
    }
    CHECK(sql_int(p, "SELECT count(*) FROM tolerance_sets") == 1 && sql_int(p, "SELECT count(*) FROM tolerances") == 2);
    CHECK(sql_int(p, "SELECT count(*) FROM tolerance_regressions") == 0);
    struct db_report bad = {r4, graph, shim, "", 0, 0, 0, 0, NULL};
    CHECK(db_begin(db, err) == 0);
    CHECK(db_report(db, &bad, &set, &fresh, err) != 0 && strstr(err, "digest")); /* a report names its decisions */
    db_rollback(db);
    db_close(db);
}

/* A version-3 file upgraded to content storage keeps every row: decisions by their first report of each digest,
 * tolerance rows in sets of their own (no digest), and the views read what they read before. */
static void test_migrate_v3(void)
{
    char err[DB_ERR_LEN];
    const char *p = path_in("v3.db");
    const char *const *m;
    CHECK(db_schema_migrations(&m) == DB_SCHEMA_VERSION && DB_SCHEMA_VERSION >= 7);
    sqlite3 *c;
    CHECK(sqlite3_open(p, &c) == SQLITE_OK);
    for (int k = 0; k < 3; k++)
        CHECK(sqlite3_exec(c, m[k], NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(
              c,
              "PRAGMA user_version = 3;"
              "INSERT INTO runs (kind, started, status, version, command) VALUES ('check', 'a', 'complete', '0', 'c');"
              "INSERT INTO runs (kind, started, status, version, command) VALUES ('check', 'b', 'complete', '0', 'c');"
              "INSERT INTO graphs (name, mode, ops, sha256) VALUES ('g', 'decode', 3, 'aa');"
              "INSERT INTO shims (name) VALUES ('reference'), ('none');"
              "INSERT INTO reports (run_id, graph_id, shim_id, digest, fired, refused, held, optimize_ms, rewritten)"
              "  VALUES (1, 1, 1, 'x1', 2, 0, 0, 1, 'w1'), (1, 1, 2, 'x2', 1, 1, 0, 1, 'w2'),"
              "         (2, 1, 1, 'x1', 2, 0, 0, 2, 'w1'), (2, 1, 2, 'x3', 2, 0, 0, 2, 'w3');"
              "INSERT INTO decisions VALUES (1, 0, 'r', 'c', '[1]', 'fired', NULL), (1, 1, 'q', 'c', '[2]', 'fired', NULL),"
              "  (2, 0, 'r', 'c', '[1]', 'fired', NULL), (2, 1, 'q', 'c', '[2]', 'refused', 'no'),"
              "  (3, 0, 'r', 'c', '[1]', 'fired', NULL), (3, 1, 'q', 'c', '[2]', 'fired', NULL),"
              "  (4, 0, 'r', 'c', '[1]', 'fired', NULL), (4, 1, 'q', 'c', '[2]', 'fired', NULL);"
              "INSERT INTO tolerances (run_id, graph_id, shim_id, backend, op, tensor, elements, max_abs, max_rel, nmse,"
              "  bound, pass) VALUES (1, 1, 2, 'host', '0 m', 'y', 4, 0, 0, 0.1, 1, 1), (1, 1, 2, 'host', '1 m', 'z', 4,"
              "  0, 0, 0, 1, 1), (2, 1, 2, 'host', '0 m', 'y', 4, 0, 0, 0.2, 1, 1), (2, 1, 2, 'host', '1 m', 'z', 4, 0,"
              "  0, 0, 1, 1);"
              "INSERT INTO tolerance_steps (run_id, graph_id, shim_id, backend, step, tensor, rows, nmse, kl,"
              "  top1_agree, max_abs) VALUES (2, 1, 2, 'host', 0, 'logits', 1, 0, 0, 1, 0);",
              NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(c);
    struct db *db;
    CHECKF(db_open(p, &db, err) == 0, "%s", err);
    CHECK(db_schema_version(db) == DB_SCHEMA_VERSION);
    struct changes ch = {0};
    CHECK(db_decision_changes(db, 1, 2, on_change, &ch, err) == 0 && ch.n == 1);
    CHECK_STR(ch.last, "g decode none q c [2] refused: no -> fired");
    db_close(db);
    CHECK(sql_int(p, "SELECT count(*) FROM decision_sets") == 3);
    CHECK(sql_int(p, "SELECT count(*) FROM set_decisions") == 6);
    CHECK(sql_int(p, "SELECT count(*) FROM decisions") == 8);
    CHECK(sql_int(p, "SELECT count(*) FROM report_rows WHERE digest = 'x1'") == 2);
    CHECK(sql_int(p, "SELECT count(*) FROM report_rows WHERE report = 4 AND digest = 'x3' AND rewritten = 'w3'") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM decisions WHERE report_id = 2 AND seq = 1 AND reason = 'no'") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM tolerances") == 4 && sql_int(p, "SELECT count(*) FROM tolerance_steps") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM tolerance_sets WHERE digest IS NULL") == 2);
    CHECK(sql_int(p, "SELECT count(*) FROM tolerance_regressions WHERE run = 2 AND op = '0 m'") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM set_decisions WHERE line = 0") == 0);
    char ok[16] = "";
    sql_text(p, "PRAGMA integrity_check", ok, sizeof ok);
    CHECK_STR(ok, "ok");
    CHECK(sql_int(p, "PRAGMA foreign_key_check") == -1);
    /* a decision written now hashes as the migration hashed the carried ones */
    CHECK(db_open(p, &db, err) == 0);
    bool fresh;
    int64_t run, set;
    CHECK(db_run_begin(db, &info, &run, err) == 0 && db_begin(db, err) == 0);
    struct db_report r = {run, 1, 2, "x4", 2, 0, 0, 1, NULL};
    CHECK(db_report(db, &r, &set, &fresh, err) == 0 && fresh);
    struct db_decision d[2] = {{set, 0, "r", "c", "[1]", "fired", NULL}, {set, 1, "q", "c", "[2]", "refused", "no"}};
    CHECK(db_decisions(db, d, 2, err) == 0 && db_commit(db, err) == 0);
    db_close(db);
    CHECK(sql_int(p, "SELECT count(*) FROM decision_changes WHERE run_before = 1 AND run_after = 3") == 0);
}

/* One z3 proof row of run with the given verdict and replay (NULL: none tried), of the seed's rules or not. */
static void put_proof(struct db *db, int64_t run, const char *obligation, const char *verdict, const char *replay,
                      int fired, bool seed)
{
    char err[DB_ERR_LEN];
    struct db_proof p = {run, "add_norm", obligation, 8, verdict, NULL, NULL, 1.0, "z3", replay, fired, seed};
    CHECKF(db_proof(db, &p, err) == 0, "%s", err);
}

/* proof_changes: an obligation whose verdict, replay outcome or replay firings differ from the previous run that
 * asked it of the same solver and rules; an older file's proofs upgrade with no replay and the shipped rules. (The
 * file is made at version 3: migration 4 needs the functions db_open registers.) */
static void test_proof_changes(void)
{
    char err[DB_ERR_LEN];
    const char *p = path_in("proofs-v3.db");
    const char *const *m;
    CHECK(db_schema_migrations(&m) == DB_SCHEMA_VERSION);
    sqlite3 *c;
    CHECK(sqlite3_open(p, &c) == SQLITE_OK);
    for (int k = 0; k < 3; k++)
        CHECK(sqlite3_exec(c, m[k], NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(c,
                       "PRAGMA user_version = 3;"
                       "INSERT INTO runs (kind, started, status, version, command) VALUES ('prove', 'a', 'complete', "
                       "'0', 'fusecheck prove');"
                       "INSERT INTO proofs (run_id, rule, obligation, bound, verdict, ms) VALUES (1, 'add_norm', "
                       "'old', 0, 'proved', 1);",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(c);
    struct db *db;
    CHECKF(db_open(p, &db, err) == 0, "%s", err);
    CHECK(db_schema_version(db) == DB_SCHEMA_VERSION);
    static const struct db_run_info prove = {.kind = "prove", .command = "fusecheck prove --mutants", .git_rev = NULL,
                                             .host = "host", .version = "0.1.0"};
    int64_t r[3];
    for (int i = 0; i < 3; i++) {
        CHECK(db_run_begin(db, &prove, &r[i], err) == 0 && db_begin(db, err) == 0);
        put_proof(db, r[i], "old", i == 2 ? "unknown" : "proved", NULL, 0, false); /* run 3: a verdict change */
        put_proof(db, r[i], "A2 without x", "refuted", i == 0 ? "fails" : "passes", i == 0 ? 1 : 0, false);
        put_proof(db, r[i], "A2 without x", "refuted", "fails", 1, true); /* the seed's rules: steady */
        put_proof(db, r[i], "A3 without y", "refuted", i == 1 ? NULL : "fails", 2, false); /* not replayed in run 2 */
        CHECK(db_commit(db, err) == 0 && db_run_end(db, r[i], "complete", err) == 0);
    }
    struct db_proof bad = {r[0], "add_norm", "z", 0, "proved", NULL, NULL, 1.0, "z3", "maybe", 0, false};
    CHECK(db_proof(db, &bad, err) != 0); /* a replay outcome the schema does not know */
    db_close(db);
    CHECK(sql_int(p, "SELECT count(*) FROM proofs WHERE run_id = 1 AND replay IS NULL AND replay_fired IS NULL AND "
                     "ruleset = 'fusecheck'") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM proof_changes") == 2);
    CHECK(sql_int(p, "SELECT count(*) FROM proof_changes WHERE run = 3 AND previous_run = 2 AND "
                     "obligation = 'A2 without x' AND replay_before = 'fails' AND replay_after = 'passes' AND "
                     "fired_before = 1 AND fired_after = 0 AND ruleset = 'fusecheck'") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM proof_changes WHERE run = 4 AND previous_run = 3 AND obligation = 'old' "
                     "AND verdict_before = 'proved' AND verdict_after = 'unknown'") == 1);
}

/* The whole content of the file at path (malloc'd, *len bytes), or NULL when it cannot be read. */
static unsigned char *file_bytes(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    *len = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (*len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)*len + 1)) != NULL && fread(buf, 1, (size_t)*len, f) != (size_t)*len) {
        free(buf);
        buf = NULL;
    }
    if (f)
        fclose(f);
    return buf;
}

/* Whether the file at path holds exactly the len bytes of want, and nothing lies beside it (no -wal, -shm or
 * -journal file was made). */
static bool file_is(const char *path, const unsigned char *want, long len)
{
    long n;
    unsigned char *got = file_bytes(path, &n);
    bool same = got && want && n == len && memcmp(got, want, (size_t)len) == 0;
    free(got);
    char side[600];
    static const char *const sides[] = {"-wal", "-shm", "-journal"};
    for (int i = 0; i < 3; i++) {
        snprintf(side, sizeof side, "%s%s", path, sides[i]);
        same = same && access(side, F_OK) != 0;
    }
    return same;
}

/* Make an SQLite file at path by running sql on a plain connection (rollback journal, as another program has it). */
static void make_foreign(const char *path, const char *sql)
{
    sqlite3 *c;
    remove(path);
    CHECK(sqlite3_open(path, &c) == SQLITE_OK);
    CHECK(sqlite3_exec(c, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(c);
}

/* A writer adopts only a new or empty file: another program's database (its own tables, no fusecheck schema; or a
 * schema version and no runs table) is refused, named as holding no fusecheck results, and left byte for byte as it
 * was — by db_open, by a merge into it (--append, --force) and by a reader. A file of no tables is adopted. */
static void test_foreign(void)
{
    char err[DB_ERR_LEN];
    struct db *db = NULL;
    static const char *const kinds[] = {"CREATE TABLE t (x); INSERT INTO t VALUES (1);",
                                        "CREATE TABLE legacy (x); PRAGMA user_version = 0;",
                                        "CREATE TABLE t (x); PRAGMA user_version = 3;",
                                        "CREATE VIEW v AS SELECT 1;"};
    char shard[512];
    snprintf(shard, sizeof shard, "%s", path_in("foreign-shard.db")); /* path_in's buffers are reused */
    CHECK(db_open(shard, &db, err) == 0);
    write_run(db, "tiny-llama", "fired", "fired", "d1");
    db_close(db);
    const char *in[1] = {shard};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        const char *p = path_in("foreign.db");
        make_foreign(p, kinds[k]);
        long len;
        unsigned char *before = file_bytes(p, &len);
        CHECK(before && len > 0);
        db = NULL;
        CHECKF(db_open(p, &db, err) != 0 && db == NULL, "%s", kinds[k]);
        CHECKF(strstr(err, "foreign.db holds no fusecheck results") != NULL, "%s", err);
        CHECKF(file_is(p, before, len), "%s: the file changed", kinds[k]);
        CHECK(db_open_readonly(p, &db, err) != 0 && strstr(err, "holds no fusecheck results"));
        CHECK(db_merge(in, 1, p, DB_MERGE_APPEND, NULL, err) != 0 && strstr(err, "holds no fusecheck results"));
        CHECKF(db_merge(in, 1, p, DB_MERGE_FORCE, NULL, err) != 0 && strstr(err, "holds no fusecheck results"),
               "%s", err);
        CHECKF(file_is(p, before, len), "%s: a merge changed the file", kinds[k]);
        free(before);
    }
    /* a new file, an empty one and an SQLite file of no tables take the schema */
    const char *fresh = path_in("fresh.db"), *empty = path_in("empty.db"), *bare = path_in("bare.db");
    remove(fresh);
    FILE *f = fopen(empty, "wb");
    if (f)
        fclose(f);
    make_foreign(bare, "PRAGMA page_size = 1024; VACUUM;");
    const char *ours[3] = {fresh, empty, bare};
    for (int i = 0; i < 3; i++) {
        CHECKF(db_open(ours[i], &db, err) == 0, "%s: %s", ours[i], err);
        CHECK(db && db_schema_version(db) == DB_SCHEMA_VERSION);
        db_close(db);
        db = NULL;
    }
    /* --force still replaces a results file, and a file that is not a database at all */
    CHECKF(db_merge(in, 1, fresh, DB_MERGE_FORCE, NULL, err) == 0, "%s", err);
    const char *text = path_in("notes.txt");
    f = fopen(text, "wb");
    if (f) {
        fputs("not a database, some notes long enough to be a header ...........................................", f);
        fclose(f);
    }
    CHECKF(db_merge(in, 1, text, DB_MERGE_FORCE, NULL, err) == 0, "%s", err);
    CHECK(sql_int(text, "SELECT count(*) FROM runs") == 1);
}

/* A stand-in for the SQL functions db_open registers, so a plain connection can run the migrations that name them
 * (over tables still empty: never called with a row). */
static void stub_scalar(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc, (void)argv;
    sqlite3_result_int(ctx, 0);
}
static void stub_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) { (void)ctx, (void)argc, (void)argv; }
static void stub_final(sqlite3_context *ctx) { sqlite3_result_int(ctx, 0); }

/* A file at schema version `version` made on a plain connection, then `rows` run in it. */
static void make_version(const char *path, int version, const char *rows)
{
    const char *const *m;
    CHECK(db_schema_migrations(&m) >= version);
    sqlite3 *c;
    remove(path);
    CHECK(sqlite3_open(path, &c) == SQLITE_OK);
    sqlite3_create_function(c, "fusecheck_decision_line", 5, SQLITE_UTF8, NULL, stub_scalar, NULL, NULL);
    sqlite3_create_function(c, "fusecheck_key_line", 3, SQLITE_UTF8, NULL, stub_scalar, NULL, NULL);
    sqlite3_create_function(c, "fusecheck_rule_bucket", 1, SQLITE_UTF8, NULL, stub_scalar, NULL, NULL);
    sqlite3_create_function(c, "fusecheck_rule_hash", 1, SQLITE_UTF8, NULL, NULL, stub_step, stub_final);
    sqlite3_create_function(c, "fusecheck_buckets", 3, SQLITE_UTF8, NULL, NULL, stub_step, stub_final);
    sqlite3_create_function(c, "fusecheck_run_config", 1, SQLITE_UTF8, NULL, stub_scalar, NULL, NULL);
    for (int k = 0; k < version; k++)
        CHECKF(sqlite3_exec(c, m[k], NULL, NULL, NULL) == SQLITE_OK, "migration %d: %s", k + 1, sqlite3_errmsg(c));
    char set[64];
    snprintf(set, sizeof set, "PRAGMA user_version = %d;", version);
    CHECK(sqlite3_exec(c, set, NULL, NULL, NULL) == SQLITE_OK);
    CHECKF(sqlite3_exec(c, rows, NULL, NULL, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(c));
    sqlite3_close(c);
}

/* Version 6 → 7: runs take the status `interrupted`; every row of a version-6 file is kept — its runs under their
 * ids and statuses, and every row that refers to them (the runs table is rebuilt with foreign keys off: none is
 * deleted in cascade). */
static void test_migrate_v6(void)
{
    char err[DB_ERR_LEN];
    const char *p = path_in("v6.db");
    make_version(p, 6,
                 "INSERT INTO runs (id, kind, started, ended, status, git_rev, host, version, command, origin) VALUES"
                 "  (1, 'check', 'a', 'b', 'complete', 'r1', 'h', '0', 'c1', NULL),"
                 "  (2, 'check', 'c', NULL, 'incomplete', NULL, 'h', '0', 'c2', 'x.db#4'),"
                 "  (5, 'prove', 'd', 'e', 'failed', 'r2', NULL, '0', 'c3', NULL);"
                 "INSERT INTO graphs (name, mode, ops, sha256) VALUES ('g', 'decode', 3, 'aa');"
                 "INSERT INTO shims (name) VALUES ('reference');"
                 "INSERT INTO decision_sets (digest, fired, refused, held) VALUES ('x1', 1, 0, 0);"
                 "INSERT INTO reports (run_id, graph_id, shim_id, set_id, optimize_ms) VALUES (1, 1, 1, 1, 1),"
                 "  (2, 1, 1, 1, 1);"
                 "INSERT INTO steps VALUES (1, 0, 'add_norm'), (2, 0, 'add_norm');"
                 "INSERT INTO diffs (run_id, graph_id, shim_id, identical, compared) VALUES (1, 1, 1, 1, 3);"
                 "INSERT INTO proofs (run_id, rule, obligation, bound, verdict, ms)"
                 "  VALUES (5, 'r', 'o', 0, 'proved', 1);"
                 "INSERT INTO failures (run_id, stage, reason) VALUES (2, 'lift', 'why');"
                 "INSERT INTO fuzz_findings (harness, signature, input_sha256, first_run, last_run, count)"
                 "  VALUES ('h', 's', 'ff', 1, 5, 2);");
    sqlite3 *c;
    CHECK(sqlite3_open(p, &c) == SQLITE_OK);
    CHECK(sqlite3_exec(c, "UPDATE runs SET status = 'interrupted' WHERE id = 2", NULL, NULL, NULL) != SQLITE_OK);
    sqlite3_close(c);
    struct db *db;
    CHECKF(db_open(p, &db, err) == 0, "%s", err);
    CHECK(db_schema_version(db) == DB_SCHEMA_VERSION);
    char status[16];
    CHECK(db_run_status(db, 2, status, err) == 0 && strcmp(status, "incomplete") == 0);
    CHECKF(db_run_end(db, 2, "interrupted", err) == 0, "%s", err);
    CHECK(db_run_status(db, 2, status, err) == 0 && strcmp(status, "interrupted") == 0);
    int64_t run;
    CHECK(db_run_begin(db, &info, &run, err) == 0 && run == 6); /* ids go on from the file's */
    CHECK(db_run_end(db, run, "no such status", err) != 0);
    db_close(db);
    CHECK(sql_int(p, "SELECT count(*) FROM runs") == 4);
    CHECK(sql_int(p, "SELECT count(*) FROM runs WHERE id = 1 AND status = 'complete' AND git_rev = 'r1' AND "
                     "ended = 'b' AND command = 'c1' AND origin IS NULL") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM runs WHERE id = 2 AND origin = 'x.db#4' AND git_rev IS NULL") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM runs WHERE id = 5 AND status = 'failed' AND host IS NULL") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM reports") == 2 && sql_int(p, "SELECT count(*) FROM steps") == 2);
    CHECK(sql_int(p, "SELECT count(*) FROM diffs") == 1 && sql_int(p, "SELECT count(*) FROM proofs") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM failures") == 1 && sql_int(p, "SELECT count(*) FROM fuzz_findings") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM run_pairs WHERE run_before = 1 AND run_after = 5") == 1);
    char ok[16] = "";
    sql_text(p, "PRAGMA integrity_check", ok, sizeof ok);
    CHECK_STR(ok, "ok");
    CHECK(sql_int(p, "PRAGMA foreign_key_check") == -1);
    /* the runs table keeps its foreign keys' meaning: a run deleted takes its rows with it */
    CHECK(sqlite3_open(p, &c) == SQLITE_OK);
    CHECK(sqlite3_exec(c, "PRAGMA foreign_keys = ON; DELETE FROM runs WHERE id = 2;", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(c);
    CHECK(sql_int(p, "SELECT count(*) FROM reports") == 1 && sql_int(p, "SELECT count(*) FROM failures") == 0);
    CHECK(sql_int(p, "SELECT count(*) FROM steps") == 1 && sql_int(p, "SELECT count(*) FROM diffs") == 1);
}

/* A run's gaps beside another's. */
struct gaps {
    int n;
    char all[512];
};
static void on_gap(const char *what, const char *graph, const char *mode, const char *shim, void *ctx)
{
    struct gaps *g = ctx;
    g->n++;
    size_t at = strlen(g->all);
    snprintf(g->all + at, sizeof g->all - at, "%s%s %s %s %s", at ? "; " : "", what, graph ? graph : "-",
             mode ? mode : "-", shim ? shim : "-");
}

/* One report of graph g (mode decode) under shim s in run. */
static void put_report(struct db *db, int64_t run, const char *g, const char *s)
{
    char err[DB_ERR_LEN];
    int64_t graph = 0, shim = 0, set = 0;
    bool fresh = false;
    CHECK(db_begin(db, err) == 0 && db_graph(db, g, "llama", "decode", 3, g, &graph, err) == 0);
    CHECK(db_shim(db, s, "", &shim, err) == 0);
    struct db_report r = {run, graph, shim, "d-gaps", 0, 0, 0, 1.0, NULL};
    CHECK(db_report(db, &r, &set, &fresh, err) == 0 && db_commit(db, err) == 0);
}

/* An interrupted run: its status its own, final, merged as it is; the views say when a run of a pair is not
 * complete and what the later run lacks of the earlier one's graphs and shims. */
static void test_interrupted(void)
{
    char err[DB_ERR_LEN];
    struct db *db;
    const char *p = path_in("interrupted.db");
    CHECK(db_open(p, &db, err) == 0);
    int64_t r1, r2, r3;
    CHECK(db_run_begin(db, &info, &r1, err) == 0);
    put_report(db, r1, "a", "reference");
    put_report(db, r1, "b", "reference");
    put_report(db, r1, "a", "none");
    CHECK(db_run_end(db, r1, "complete", err) == 0);
    CHECK(db_run_begin(db, &info, &r2, err) == 0);
    put_report(db, r2, "a", "reference");
    CHECKF(db_run_end(db, r2, "interrupted", err) == 0, "%s", err);
    CHECK(db_run_end(db, r2, "complete", err) != 0 && strstr(err, "not in progress")); /* final */
    CHECK(db_run_begin(db, &info, &r3, err) == 0); /* still running: incomplete */
    put_report(db, r3, "a", "reference");
    put_report(db, r3, "b", "reference");
    put_report(db, r3, "a", "none");
    char status[16];
    CHECK(db_run_status(db, r2, status, err) == 0 && strcmp(status, "interrupted") == 0);
    struct gaps g = {0, ""};
    CHECKF(db_run_gaps(db, r1, r2, on_gap, &g, err) == 0, "%s", err);
    CHECK(g.n == 2);
    CHECK_STR(g.all, "graph b decode -; shim - - none");
    g = (struct gaps){0, ""};
    CHECK(db_run_gaps(db, r1, r3, on_gap, &g, err) == 0 && g.n == 0);
    CHECK(db_run_gaps(db, r2, r1, on_gap, &g, err) == 0 && g.n == 0); /* the later run holds more: no gap */
    db_close(db);
    CHECK(sql_int(p, "SELECT count(*) FROM run_pair_status WHERE run_before = 1 AND run_after = 2 AND "
                     "status_before = 'complete' AND status_after = 'interrupted' AND NOT both_complete") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM run_pair_status WHERE run_before = 2 AND run_after = 3 AND "
                     "status_after = 'incomplete' AND NOT both_complete") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM run_pair_gaps WHERE run_before = 1 AND run_after = 2") == 2);
    CHECK(sql_int(p, "SELECT count(*) FROM run_pair_gaps WHERE run_before = 1 AND run_after = 3") == 0);
    /* a merge copies the status as it is */
    const char *in[1] = {p}, *out = path_in("interrupted-merged.db");
    remove(out);
    CHECKF(db_merge(in, 1, out, DB_MERGE_NEW, NULL, err) == 0, "%s", err);
    CHECK(sql_int(out, "SELECT count(*) FROM runs WHERE status = 'interrupted'") == 1);
    CHECK(sql_int(out, "SELECT count(*) FROM runs WHERE status = 'incomplete'") == 1);
}

/* Opening: a newer file is refused; garbage and missing directories error. */
static void test_open_errors(void)
{
    char err[DB_ERR_LEN];
    struct db *db;
    sqlite3 *c;
    const char *newer = path_in("newer.db");
    sqlite3_open(newer, &c);
    sqlite3_exec(c, "PRAGMA user_version = 99;", NULL, NULL, NULL);
    sqlite3_close(c);
    CHECK(db_open(newer, &db, err) != 0);
    CHECKF(strstr(err, "newer") != NULL, "%s", err);
    const char *junk = path_in("junk.db");
    FILE *f = fopen(junk, "wb");
    fputs("this is not a database, just some text that is long enough to be read as a header ......", f);
    fclose(f);
    CHECK(db_open(junk, &db, err) != 0);
    CHECKF(strstr(err, "not a database") != NULL, "%s", err);
    CHECK(db_open(path_in("missing/dir/results.db"), &db, err) != 0);
    CHECKF(strstr(err, "cannot open") != NULL, "%s", err);
    CHECK(db_open_readonly(path_in("absent.db"), &db, err) != 0);
}

/* A writer killed with SIGKILL mid-run leaves a sound file, its committed rows, and the run incomplete. */
static void test_kill(void)
{
    const char *p = path_in("kill.db");
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        char err[DB_ERR_LEN];
        struct db *db;
        int64_t run, graph, shim, report;
        bool fresh;
        if (db_open(p, &db, err) || db_run_begin(db, &info, &run, err))
            _exit(3);
        for (int i = 0;; i++) {
            db_begin(db, err);
            db_graph(db, "g", "f", "decode", 1, "s", &graph, err);
            db_shim(db, "reference", "", &shim, err);
            char digest[32]; /* a new decision set each time: every transaction writes decisions */
            snprintf(digest, sizeof digest, "d%d", i);
            struct db_report r = {run, graph, shim, digest, 1, 0, 0, 0.1, NULL};
            db_report(db, &r, &report, &fresh, err);
            for (int k = 0; k < 50 && fresh; k++) {
                struct db_decision d = {report, k, "add_norm", "add_norm", "[1]", "fired", NULL};
                db_decision(db, &d, err);
            }
            db_commit(db, err);
            if (i == 20 && write(fds[1], "x", 1) != 1)
                _exit(4);
        }
    }
    char x;
    close(fds[1]);
    CHECK(read(fds[0], &x, 1) == 1);
    close(fds[0]);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    char ok[32];
    sql_text(p, "PRAGMA integrity_check", ok, sizeof ok);
    CHECK_STR(ok, "ok");
    long long reports = sql_int(p, "SELECT count(*) FROM reports");
    CHECK(reports >= 21);
    CHECK(sql_int(p, "SELECT count(*) FROM decisions") == reports * 50);
    char status[32];
    sql_text(p, "SELECT status FROM runs", status, sizeof status);
    CHECK_STR(status, "incomplete");
}

/* Four processes writing runs into one file at once all finish without a busy error. */
static void test_parallel(void)
{
    const char *p = path_in("parallel.db");
    pid_t pids[4];
    for (int w = 0; w < 4; w++) {
        pids[w] = fork();
        if (pids[w] == 0) {
            check_failed = 0; /* the worker's own checks decide its exit, not the parent's earlier ones */
            char err[DB_ERR_LEN];
            struct db *db;
            if (db_open(p, &db, err)) {
                fprintf(stderr, "worker: %s\n", err);
                _exit(3);
            }
            for (int i = 0; i < 5; i++)
                write_run(db, "tiny-qwen3", "fired", "fired", "d1");
            db_close(db);
            _exit(check_failed ? 4 : 0);
        }
    }
    for (int w = 0; w < 4; w++) {
        int st = -1;
        waitpid(pids[w], &st, 0);
        CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker %d status %d", w, st);
    }
    CHECK(sql_int(p, "SELECT count(*) FROM runs WHERE status = 'complete'") == 20);
    CHECK(sql_int(p, "SELECT count(*) FROM decisions") == 20 * (2 + 37));
}

/* A read-only file (as an unprivileged user) and a full disk (a file size limit): a clear error, nothing half
 * written. */
static void test_readonly_full(void)
{
    const char *p = path_in("ro.db");
    char err[DB_ERR_LEN];
    struct db *db;
    CHECK(db_open(p, &db, err) == 0);
    write_run(db, "g", "fired", "fired", "d1");
    db_close(db);
    pid_t pid = fork();
    if (pid == 0) {
        chmod(p, 0444);
        chmod(dir, 0755);
        if (geteuid() == 0 && setuid(65534) != 0)
            _exit(5);
        int64_t run;
        if (db_open(p, &db, err) == 0) {
            int rc = db_run_begin(db, &info, &run, err);
            db_close(db);
            _exit(rc != 0 && strstr(err, "readonly") ? 0 : 6);
        }
        _exit(strstr(err, "readonly") || strstr(err, "read-only") ? 0 : 7);
    }
    int st = -1;
    waitpid(pid, &st, 0);
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "read-only child status %d", st);
    chmod(p, 0644);
    CHECK(sql_int(p, "SELECT count(*) FROM runs") == 1);

    const char *full = path_in("full.db");
    CHECK(db_open(full, &db, err) == 0);
    db_close(db);
    pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {256 * 1024, 256 * 1024};
        setrlimit(RLIMIT_FSIZE, &rl);
        if (db_open(full, &db, err))
            _exit(8);
        int64_t run, graph, shim, report;
        bool fresh = false;
        if (db_run_begin(db, &info, &run, err))
            _exit(9);
        for (int i = 0; i < 10000; i++) {
            if (db_begin(db, err)) {
                db_close(db);
                _exit(0);
            }
            int rc = db_graph(db, "g", "f", "decode", 1, "s", &graph, err) || db_shim(db, "s", "", &shim, err);
            char digest[32]; /* a new decision set each time: the disk fills */
            snprintf(digest, sizeof digest, "d%d", i);
            struct db_report r = {run, graph, shim, digest, 1, 0, 0, 0.1, NULL};
            rc = rc || db_report(db, &r, &report, &fresh, err);
            for (int k = 0; k < 100 && !rc && fresh; k++) {
                struct db_decision d = {report, k, "a_long_rule_name_to_fill_the_disk", "add_norm",
                                        "[1, 2, 3, 4, 5, 6, 7, 8]", "fired", NULL};
                rc = db_decision(db, &d, err);
            }
            if (rc || db_commit(db, err)) {
                db_rollback(db);
                db_close(db);
                _exit(strstr(err, "full") || strstr(err, "disk") || strstr(err, "I/O") ? 0 : 10);
            }
        }
        _exit(11);
    }
    waitpid(pid, &st, 0);
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "full-disk child status %d", st);
    char ok[32];
    sql_text(full, "PRAGMA integrity_check", ok, sizeof ok);
    CHECK_STR(ok, "ok");
    long long reports = sql_int(full, "SELECT count(*) FROM reports");
    CHECK(sql_int(full, "SELECT count(*) FROM decisions") == reports * 100);
}

/* What a merge does to its output: an existing one is refused unless --append (its runs kept, the inputs' added,
 * a run it holds already skipped) or --force; a stale `-wal` beside the output never pairs with the new file; the
 * result passes the integrity check; a damaged input is refused with the output untouched. */
static void test_merge_output(const char *shard_a, const char *shard_b)
{
    char err[DB_ERR_LEN], a[512], b[512], out[512], junk[512];
    snprintf(a, sizeof a, "%s", shard_a); /* path_in's buffers are reused */
    snprintf(b, sizeof b, "%s", shard_b);
    snprintf(out, sizeof out, "%s", path_in("out.db"));
    snprintf(junk, sizeof junk, "%s", path_in("damaged.db"));
    const char *one[1] = {a}, *two[2] = {a, b};
    struct db_merge_result r;
    CHECKF(db_merge(one, 1, out, DB_MERGE_NEW, &r, err) == 0 && r.runs == 1 && r.skipped == 0, "%s", err);
    CHECK(db_merge(one, 1, out, DB_MERGE_NEW, &r, err) != 0 && strstr(err, "exists; --append"));
    /* appending the same shard again adds nothing; appending another adds its runs */
    CHECKF(db_merge(two, 2, out, DB_MERGE_APPEND, &r, err) == 0 && r.runs == 2 && r.skipped == 1, "%s", err);
    CHECK(sql_int(out, "SELECT count(*) FROM runs") == 3);
    CHECK(sql_int(out, "SELECT count(DISTINCT origin) FROM runs") == 3);
    /* a leftover log from a killed writer beside the output (a valid log of the old file, kept aside while a writer
     * had it open): replaced with --force, the new file is sound, the old log not applied to it */
    char wal[600], kept[600];
    snprintf(wal, sizeof wal, "%s-wal", out);
    snprintf(kept, sizeof kept, "%s-kept", out);
    sqlite3 *c;
    CHECK(sqlite3_open(out, &c) == SQLITE_OK);
    CHECK(sqlite3_exec(c, "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;"
                          "INSERT INTO runs (kind, started, status, version, command) VALUES ('check', 'x', "
                          "'complete', '0', 'c'); INSERT INTO runs (kind, started, status, version, command) "
                          "SELECT kind, started, status, version, command FROM runs;",
                       NULL, NULL, NULL) == SQLITE_OK);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", wal, kept);
    CHECK(system(cmd) == 0);
    sqlite3_close(c);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", kept, wal);
    CHECK(system(cmd) == 0 && access(wal, F_OK) == 0);
    FILE *f;
    CHECKF(db_merge(one, 1, out, DB_MERGE_FORCE, &r, err) == 0 && r.runs == 1, "%s", err);
    CHECK(sql_int(out, "SELECT count(*) FROM runs") == 1);
    char ok[16] = "";
    sql_text(out, "PRAGMA integrity_check", ok, sizeof ok);
    CHECK_STR(ok, "ok");
    /* a damaged input is refused; the output stays as it was */
    f = fopen(junk, "wb");
    if (f) {
        FILE *src = fopen(b, "rb");
        for (int ch, i = 0; src && (ch = fgetc(src)) != EOF; i++)
            fputc(i >= 4096 && i < 8192 ? 0x5a : ch, f);
        if (src)
            fclose(src);
        fclose(f);
    }
    const char *bad[1] = {junk};
    CHECK(db_merge(bad, 1, out, DB_MERGE_APPEND, &r, err) != 0);
    CHECK(sql_int(out, "SELECT count(*) FROM runs") == 1);
    /* anything but a regular file at the output is refused */
    CHECK(db_merge(one, 1, dir, DB_MERGE_FORCE, &r, err) != 0 && strstr(err, "not a regular file"));
}

/* Merging shards keeps every run distinct, remaps ids, and writes the output whole. */
static void test_merge(void)
{
    char err[DB_ERR_LEN];
    struct db *db;
    const char *a = path_in("shard_a.db"), *b = path_in("shard_b.db"), *out = path_in("merged.db");
    CHECK(db_open(a, &db, err) == 0);
    write_run(db, "tiny-llama", "fired", "fired", "d1");
    db_close(db);
    CHECK(db_open(b, &db, err) == 0);
    write_run(db, "tiny-llama", "fired", "refused", "d2");
    write_run(db, "tiny-qwen3", "fired", "fired", "d1");
    db_close(db);
    const char *inputs[2] = {a, b};
    CHECKF(db_merge(inputs, 2, out, DB_MERGE_NEW, NULL, err) == 0, "%s", err);
    CHECK(sql_int(out, "SELECT count(*) FROM runs") == 3);
    CHECK(sql_int(out, "SELECT count(*) FROM reports") == 3);
    CHECK(sql_int(out, "SELECT count(*) FROM decisions") == 6 + 3 * 37);
    CHECK(sql_int(out, "SELECT count(*) FROM graphs") == 2);
    CHECK(sql_int(out, "SELECT count(*) FROM runs WHERE origin IS NOT NULL") == 3);
    CHECK(sql_int(out, "SELECT count FROM fuzz_findings") == 3);
    CHECK(sql_int(out, "SELECT count(*) FROM tolerance_steps") == 3);
    CHECK(sql_int(out, "SELECT count(*) FROM tolerances WHERE worst = 7 AND ratio > 0 AND lane = 1.25") == 3);
    CHECK(sql_int(out, "SELECT count(*) FROM decision_changes WHERE run_before = 1 AND run_after = 2") == 1);
    CHECK(sql_int(out, "SELECT count(*) FROM diffs WHERE kind = 'valid'") == 3);
    CHECK(sql_int(out, "SELECT count(*) FROM reports WHERE rewritten IN ('rw1', 'rw2')") == 3);
    CHECK(sql_int(out, "SELECT count(*) FROM run_failures WHERE stage = 'lift' AND shim IS NULL") == 3);
    CHECK(sql_int(out, "SELECT count(*) FROM diff_mismatches WHERE kind = 'valid' AND reason LIKE 'op 3%'") == 1);
    /* a shard made at schema version 1 merges as it is (its tolerance rows without worst elements), and opening it
     * for writing upgrades it with its rows kept */
    const char *old = path_in("shard_v1.db");
    const char *const *m;
    CHECK(db_schema_migrations(&m) == DB_SCHEMA_VERSION);
    sqlite3 *c;
    CHECK(sqlite3_open(old, &c) == SQLITE_OK);
    CHECK(sqlite3_exec(c, m[0], NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(c, "PRAGMA user_version = 1;"
                          "INSERT INTO runs (kind, started, status, version, command) VALUES ('tolerance', 'now', "
                          "'complete', '0.1', 'fusecheck tolerance');"
                          "INSERT INTO graphs (name, ops, sha256) VALUES ('g', 1, 'aa');"
                          "INSERT INTO shims (name) VALUES ('cuda-lane:h200:int8');"
                          "INSERT INTO tolerances (run_id, graph_id, shim_id, backend, op, tensor, elements, max_abs,"
                          "  max_rel, nmse, bound, pass) VALUES (1, 1, 1, 'host', '0 matmul', 'y', 4, 0, 0, 0, 1, 1);"
                          "INSERT INTO diffs (run_id, graph_id, shim_id, identical, compared, tensor, first_index,"
                          "  lifted, rewritten) VALUES (1, 1, 1, 0, 5, 'y', 2, 1.0, 3.0);",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(c);
    const char *with_old[2] = {out, old};
    const char *out2 = path_in("merged2.db");
    CHECKF(db_merge(with_old, 2, out2, DB_MERGE_NEW, NULL, err) == 0, "%s", err);
    CHECK(sql_int(out2, "SELECT count(*) FROM runs") == 4 && sql_int(out2, "SELECT count(*) FROM tolerance_steps") == 3);
    CHECK(sql_int(out2, "SELECT count(*) FROM tolerances") == 4 &&
          sql_int(out2, "SELECT count(*) FROM tolerances WHERE ratio IS NULL") == 1);
    CHECK(sql_int(out2, "SELECT count(*) FROM diff_mismatches WHERE kind = 'values' AND tensor = 'y' AND "
                        "reason IS NULL") == 1);
    CHECK(sql_int(old, "PRAGMA user_version") == 1); /* merging read it, did not upgrade it */
    CHECK(db_open(old, &db, err) == 0 && db_schema_version(db) == DB_SCHEMA_VERSION);
    db_close(db);
    CHECK(sql_int(old, "SELECT count(*) FROM tolerances WHERE ratio IS NULL AND elements = 4") == 1);
    CHECK(sql_int(old, "SELECT count(*) FROM tolerance_steps") == 0);
    CHECK(sql_int(old, "SELECT count(*) FROM diff_mismatches WHERE kind = 'values' AND tensor = 'y'") == 1);
    const char *bad[2] = {a, path_in("junk.db")};
    CHECK(db_merge(bad, 2, path_in("never.db"), DB_MERGE_NEW, NULL, err) != 0);
    CHECK(access(path_in("never.db"), F_OK) != 0);
    test_merge_output(a, b);
}

/* A merge killed with SIGKILL at any moment leaves its output as it was or as merged, never between: it passes the
 * integrity check and holds either its old runs or all of them; a later merge into it succeeds. */
static void test_merge_killed(void)
{
    char err[DB_ERR_LEN], big[512], out[512];
    snprintf(big, sizeof big, "%s", path_in("kill_big.db"));
    snprintf(out, sizeof out, "%s", path_in("kill_out.db"));
    struct db *db;
    CHECK(db_open(big, &db, err) == 0);
    int64_t run, graph, shim, set;
    bool fresh;
    CHECK(db_run_begin(db, &info, &run, err) == 0 && db_begin(db, err) == 0);
    CHECK(db_graph(db, "g", "f", "decode", 1, "s", &graph, err) == 0 && db_shim(db, "s", "", &shim, err) == 0);
    bool written = true;
    for (int i = 0; i < 3000 && written; i++) { /* 3,000 decision sets of 40: a merge that takes a while */
        char digest[32];
        snprintf(digest, sizeof digest, "k%d", i);
        struct db_report r = {run, graph, shim, digest, 40, 0, 0, 0.1, NULL};
        written = db_report(db, &r, &set, &fresh, err) == 0 && fresh;
        struct db_decision d[40];
        for (int k = 0; k < 40; k++)
            d[k] = (struct db_decision){set, k, "add_norm", "add_norm", "[1, 2, 3]", "fired", NULL};
        written = written && db_decisions(db, d, 40, err) == 0;
    }
    CHECKF(written, "%s", err);
    CHECK(db_commit(db, err) == 0 && db_run_end(db, run, "complete", err) == 0);
    db_close(db);
    const char *first[1] = {path_in("shard_a.db")}, *in[1] = {big};
    CHECKF(db_merge(first, 1, out, DB_MERGE_NEW, NULL, err) == 0, "%s", err);
    static const int delays_us[] = {2000, 20000, 60000, 150000, 400000};
    int killed = 0;
    for (size_t k = 0; k < sizeof delays_us / sizeof delays_us[0]; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            char e[DB_ERR_LEN];
            _exit(db_merge(in, 1, out, DB_MERGE_APPEND, NULL, e) ? 3 : 0);
        }
        struct timespec wait = {0, delays_us[k] * 1000L};
        nanosleep(&wait, NULL);
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        killed += WIFSIGNALED(st);
        char ok[16] = "";
        sql_text(out, "PRAGMA integrity_check", ok, sizeof ok);
        CHECK_STR(ok, "ok");
        long long runs = sql_int(out, "SELECT count(*) FROM runs");
        CHECKF(runs == 1 || runs == 2, "runs after a killed merge: %lld", runs);
        if (runs == 2) /* the merge finished before the kill: all of it is there */
            CHECK(sql_int(out, "SELECT count(*) FROM decisions") == 3000 * 40 + 39);
    }
    CHECK(killed > 0); /* at least one kill landed mid-merge */
    CHECKF(db_merge(in, 1, out, DB_MERGE_APPEND, NULL, err) == 0, "%s", err);
    CHECK(sql_int(out, "SELECT count(*) FROM runs") == 2);
    char ok[16] = "";
    sql_text(out, "PRAGMA integrity_check", ok, sizeof ok);
    CHECK_STR(ok, "ok");
}

/* Log one code mutant of run; 0 on success. */
static int put_mutant(struct db *db, int64_t run, const char *id, const char *outcome, const char *by, double secs)
{
    char err[DB_ERR_LEN];
    struct db_code_mutant m = {run, id, "rules/guards.c", 42, "ror-le", "if (i < n)", "if (i <= n)", outcome, by,
                               secs};
    if (db_begin(db, err))
        return 1;
    if (db_code_mutant(db, &m, err)) {
        db_rollback(db);
        return 1;
    }
    return db_commit(db, err);
}

/* Code mutants: rows in, the survivors' view, an outcome the schema refuses, merging (with a version-2 shard, which
 * has no code_mutants table), and a version-2 file upgraded with its rows kept. */
static void test_code_mutants(void)
{
    char err[DB_ERR_LEN];
    struct db *db;
    const char *a = path_in("cm_a.db"), *v2 = path_in("cm_v2.db"), *out = path_in("cm_merged.db");
    CHECK(db_open(a, &db, err) == 0);
    int64_t run = write_run(db, "tiny-llama", "fired", "fired", "d1");
    CHECK(put_mutant(db, run, "rules/guards.c:42:9:ror-le", "killed", "check:digest", 1.5) == 0);
    CHECK(put_mutant(db, run, "rules/guards.c:43:9:lit-inc", "survived", NULL, 70) == 0);
    CHECK(put_mutant(db, run, "rules/guards.c:44:9:swap-args", "stillborn", NULL, 0) == 0);
    CHECK(put_mutant(db, run, "rules/guards.c:45:9:drop-call", "timeout", "prove", 300) == 0);
    CHECK(put_mutant(db, run, "rules/guards.c:46:9:drop-call", "maimed", NULL, 0) != 0); /* the CHECK refuses it */
    CHECK(put_mutant(db, run, "rules/guards.c:42:9:ror-le", "killed", "prove", 1) != 0);  /* once a run */
    db_close(db);
    CHECK(sql_int(a, "SELECT count(*) FROM code_mutants") == 4);
    CHECK(sql_int(a, "SELECT count(*) FROM code_mutant_survivors") == 1);
    char text[256];
    sql_text(a, "SELECT mutant || ' ' || mutated FROM code_mutant_survivors", text, sizeof text);
    CHECKF(strcmp(text, "rules/guards.c:43:9:lit-inc if (i <= n)") == 0, "%s", text);
    /* a version-2 shard: migrations 1 and 2 only, one run */
    const char *const *m;
    CHECK(db_schema_migrations(&m) == DB_SCHEMA_VERSION && DB_SCHEMA_VERSION >= 3);
    sqlite3 *c;
    CHECK(sqlite3_open(v2, &c) == SQLITE_OK);
    CHECK(sqlite3_exec(c, m[0], NULL, NULL, NULL) == SQLITE_OK && sqlite3_exec(c, m[1], NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(c, "PRAGMA user_version = 2;"
                          "INSERT INTO runs (kind, started, status, version, command) VALUES ('fuzz', 'now', "
                          "'complete', '0.1', 'fuzz/campaign');",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(c);
    const char *inputs[2] = {v2, a};
    CHECKF(db_merge(inputs, 2, out, DB_MERGE_NEW, NULL, err) == 0, "%s", err);
    CHECK(sql_int(out, "SELECT count(*) FROM runs") == 2);
    CHECK(sql_int(out, "SELECT count(*) FROM code_mutants") == 4);
    CHECK(sql_int(out, "SELECT count(*) FROM code_mutants c JOIN runs r ON r.id = c.run_id WHERE r.id = 2") == 4);
    CHECK(sql_int(out, "SELECT count(*) FROM code_mutant_survivors WHERE run = 2") == 1);
    CHECK(sql_int(out, "SELECT count(*) FROM code_mutants WHERE killed_by = 'check:digest' AND seconds = 1.5") == 1);
    CHECK(sql_int(v2, "PRAGMA user_version") == 2); /* merging read it, did not upgrade it */
    CHECK(db_open(v2, &db, err) == 0 && db_schema_version(db) == DB_SCHEMA_VERSION);
    CHECK(put_mutant(db, 1, "shim/lane.c:1:1:lcr-or", "survived", NULL, 2) == 0);
    db_close(db);
    CHECK(sql_int(v2, "SELECT count(*) FROM runs") == 1 && sql_int(v2, "SELECT count(*) FROM code_mutants") == 1);
    /* deleting a run deletes its mutants */
    CHECK(sqlite3_open(out, &c) == SQLITE_OK);
    CHECK(sqlite3_exec(c, "PRAGMA foreign_keys = ON; DELETE FROM fuzz_findings; DELETE FROM runs WHERE id = 2;", NULL,
                       NULL, NULL) == SQLITE_OK);
    sqlite3_close(c);
    CHECK(sql_int(out, "SELECT count(*) FROM code_mutants") == 0);
}

/* A merge that cannot write its output names the output in its message, never the temporary file it writes first. */
static void test_merge_names_output(void)
{
    char err[DB_ERR_LEN] = "", out[600];
    snprintf(out, sizeof out, "%s/no-such-folder/m.db", dir);
    const char *in[1] = {path_in("shard_a.db")};
    CHECK(db_merge(in, 1, out, DB_MERGE_NEW, NULL, err) != 0);
    CHECKF(strncmp(err, out, strlen(out)) == 0 && strstr(err, ".merge.") == NULL, "%s", err);
}

/* A version-7 file upgrades to 8 with every row kept, each run then fusecheck's own optimizer in process (its
 * version the run's, no command); a run of another optimizer pairs with it in optimizer_disagreements, by rule,
 * class, covers, outcome and refusal code (not the reason's words); a newer file is still refused. */
static void test_migrate_v7(void)
{
    char err[DB_ERR_LEN];
    const char *p = path_in("v7.db");
    make_version(p, 7,
                 "INSERT INTO runs (id, kind, started, ended, status, host, version, command) VALUES"
                 "  (1, 'check', 'a', 'b', 'complete', 'h', '0.0.9', 'c1');"
                 "INSERT INTO graphs (name, mode, ops, sha256) VALUES ('g', 'decode', 3, 'aa');"
                 "INSERT INTO shims (name) VALUES ('reference');"
                 "INSERT INTO decision_sets (digest, fired, refused, held) VALUES ('x1', 1, 1, 0);"
                 "INSERT INTO set_decisions (set_id, rule, line, seq, class, covers, outcome, reason) VALUES"
                 "  (1, 'add_norm', 11, 0, 'add_rms_norm', '[1, 2]', 'fired', NULL),"
                 "  (1, 'glu_pair', 12, 1, 'glu', '[3]', 'refused', 'the chip says no');"
                 "INSERT INTO reports (run_id, graph_id, shim_id, set_id, optimize_ms) VALUES (1, 1, 1, 1, 1);");
    struct db *db;
    CHECKF(db_open(p, &db, err) == 0, "%s", err);
    CHECK(db_schema_version(db) == DB_SCHEMA_VERSION);
    /* another optimizer's run: the same graph and shim, glu_pair refused with another code and other words, and a
     * decision the first run never made */
    struct db_run_info other = info;
    other.optimizer_name = "rustfuse";
    other.optimizer_version = "1.2";
    other.optimizer_command = "rustfuse --serve";
    int64_t run, set;
    bool fresh;
    CHECK(db_run_begin(db, &other, &run, err) == 0 && run == 2 && db_begin(db, err) == 0);
    struct db_report r = {run, 1, 1, "x2", 1, 1, 0, 1, NULL};
    CHECK(db_report(db, &r, &set, &fresh, err) == 0 && fresh);
    struct db_decision d[3] = {{set, 0, "add_norm", "add_rms_norm", "[1, 2]", "fired", NULL},
                               {set, 1, "glu_pair", "glu", "[3]", "refused", "not on this chip"},
                               {set, 2, "gates", "gates", "[4]", "held", NULL}};
    const char *codes[3] = {NULL, "supports.parts", NULL};
    CHECK(db_decisions_coded(db, d, codes, 3, err) == 0 && db_commit(db, err) == 0);
    CHECK(db_run_begin(db, &info, &run, err) == 0 && run == 3); /* fusecheck's own again */
    db_close(db);
    CHECK(sql_int(p, "SELECT count(*) FROM runs WHERE id = 1 AND optimizer_name = 'fusecheck' AND "
                     "optimizer_version = '0.0.9' AND optimizer_command IS NULL AND command = 'c1'") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM runs WHERE id = 3 AND optimizer_name = 'fusecheck' AND "
                     "optimizer_version = '0.1.0' AND optimizer_command IS NULL") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM runs WHERE id = 2 AND optimizer_name = 'rustfuse' AND "
                     "optimizer_version = '1.2' AND optimizer_command = 'rustfuse --serve'") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM set_decisions WHERE set_id = 1 AND code IS NULL") == 2);
    CHECK(sql_int(p, "SELECT count(*) FROM decisions") == 5);
    CHECK(sql_int(p, "SELECT count(*) FROM optimizer_pairs") == 2); /* 1-2 and 2-3; not 1-3 */
    CHECK(sql_int(p, "SELECT count(*) FROM optimizer_disagreements") == 2);
    CHECK(sql_int(p, "SELECT count(*) FROM optimizer_disagreements WHERE run_before = 1 AND run_after = 2 AND "
                     "optimizer_before = 'fusecheck' AND optimizer_after = 'rustfuse' AND graph = 'g' AND "
                     "rule = 'glu_pair' AND decision_before = 'refused' AND "
                     "decision_after = 'refused {supports.parts}'") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM optimizer_disagreements WHERE rule = 'gates' AND "
                     "decision_before IS NULL AND decision_after = 'held'") == 1);
    char ok[16] = "";
    sql_text(p, "PRAGMA integrity_check", ok, sizeof ok);
    CHECK_STR(ok, "ok");
    /* a file of a newer schema is refused as before */
    sqlite3 *c;
    CHECK(sqlite3_open(p, &c) == SQLITE_OK);
    CHECK(sqlite3_exec(c, "PRAGMA user_version = 99", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(c);
    db = NULL;
    CHECK(db_open(p, &db, err) != 0 && db == NULL && strstr(err, "newer than this fusecheck"));
}

/* A version-8 file upgrades to 9 with every row kept: each run's configuration read from its command (without the
 * program, --db FILE and --progress), fixture counts and max_abs_bound NULL; then the views that pick runs by kind
 * answer: the previous run of one configuration (an ad-hoc --hold run between two nightlies is not it), the latest
 * run per kind, the latest complete check pair of one configuration, its decision changes and its gaps. */
static void test_migrate_v8(void)
{
    char err[DB_ERR_LEN];
    const char *p = path_in("v8.db");
    make_version(p, 8,
                 "INSERT INTO runs (id, kind, started, ended, status, host, version, command) VALUES"
                 "  (1, 'check', 'a', 'b', 'complete', 'h', '0.1.0',"
                 "   'fusecheck check --db /tmp/one.db --model tiny-llama --shim reference --progress'),"
                 "  (2, 'prove', 'a', 'b', 'complete', 'h', '0.1.0', 'fusecheck prove --db=results.db'),"
                 "  (3, 'check', 'a', 'b', 'complete', 'h', '0.1.0',"
                 "   'fusecheck check --model tiny-llama --shim reference --hold add_norm --db results.db');"
                 "INSERT INTO graphs (name, mode, ops, sha256) VALUES ('g', 'decode', 3, 'aa'), ('h', 'decode', 2, 'bb');"
                 "INSERT INTO shims (name) VALUES ('reference');"
                 "INSERT INTO decision_sets (digest, fired, refused, held) VALUES ('x1', 1, 0, 0);"
                 "INSERT INTO set_decisions (set_id, rule, line, seq, class, covers, outcome, reason) VALUES"
                 "  (1, 'add_norm', 11, 0, 'add_rms_norm', '[1, 2]', 'fired', NULL);"
                 "INSERT INTO reports (run_id, graph_id, shim_id, set_id, optimize_ms) VALUES (1, 1, 1, 1, 1),"
                 "  (1, 2, 1, 1, 1), (3, 1, 1, 1, 1);"
                 "INSERT INTO tolerance_sets (digest) VALUES ('t');"
                 "INSERT INTO run_tolerances (run_id, graph_id, shim_id, set_id) VALUES (1, 1, 1, 1);"
                 "INSERT INTO set_tolerances (set_id, seq, backend, op, tensor, elements, max_abs, max_rel, nmse,"
                 "  bound, pass) VALUES (1, 0, 'host', '0 matmul', 'y', 4, 0.5, 0.1, 0.01, 1, 1);");
    struct db *db;
    CHECKF(db_open(p, &db, err) == 0, "%s", err);
    CHECK(db_schema_version(db) == DB_SCHEMA_VERSION);
    /* the next nightly: the first run's configuration (another results file), one graph fewer, a decision changed */
    struct db_run_info night = info;
    night.command = "fusecheck check --model tiny-llama --shim reference --db results.db";
    int64_t run, set;
    bool fresh;
    CHECK(db_run_begin(db, &night, &run, err) == 0 && run == 4 && db_begin(db, err) == 0);
    struct db_report r = {run, 1, 1, "x2", 0, 1, 0, 1, NULL};
    CHECK(db_report(db, &r, &set, &fresh, err) == 0 && fresh);
    struct db_decision d = {set, 0, "add_norm", "add_rms_norm", "[1, 2]", "refused", "not here"};
    CHECK(db_decisions(db, &d, 1, err) == 0 && db_commit(db, err) == 0);
    CHECK(db_run_fixtures(db, run, 47, 2, err) == 0);
    CHECK(db_run_end(db, run, "complete", err) == 0);
    /* an incomplete check of the same configuration after it: not the latest pair's */
    CHECK(db_run_begin(db, &night, &run, err) == 0 && run == 5);
    db_close(db);
    CHECK(sql_int(p, "SELECT count(*) FROM runs WHERE config = 'check --model tiny-llama --shim reference'") == 3);
    CHECK(sql_int(p, "SELECT count(*) FROM runs WHERE id = 2 AND config = 'prove'") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM runs WHERE id = 3 AND config = "
                     "'check --model tiny-llama --shim reference --hold add_norm'") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM runs WHERE fixture_cases IS NULL AND fixture_failures IS NULL") == 4);
    CHECK(sql_int(p, "SELECT count(*) FROM runs WHERE id = 4 AND fixture_cases = 47 AND fixture_failures = 2") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM tolerances WHERE max_abs = 0.5 AND max_abs_bound IS NULL") == 1);
    CHECK(sql_int(p, "SELECT previous_run FROM previous_runs WHERE run = 4") == 1);  /* not the --hold run */
    CHECK(sql_int(p, "SELECT count(*) FROM previous_runs WHERE run = 3 AND previous_run IS NULL") == 1);
    CHECK(sql_int(p, "SELECT previous_run FROM previous_runs WHERE run = 5") == 4);
    CHECK(sql_int(p, "SELECT latest_complete FROM latest_runs WHERE kind = 'check'") == 4);
    CHECK(sql_int(p, "SELECT run FROM latest_runs WHERE kind = 'check'") == 5);
    CHECK(sql_int(p, "SELECT run FROM latest_runs WHERE kind = 'prove'") == 2);
    CHECK(sql_int(p, "SELECT count(*) FROM latest_pairs") == 1); /* prove has one run: no pair */
    CHECK(sql_int(p, "SELECT count(*) FROM latest_check_pair WHERE run_before = 1 AND run_after = 4") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM latest_check_changes WHERE rule = 'add_norm' AND "
                     "outcome_before = 'fired' AND outcome_after = 'refused: not here'") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM latest_check_changes") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM latest_check_gaps WHERE what = 'graph' AND graph = 'h'") == 1);
    CHECK(sql_int(p, "SELECT count(*) FROM latest_check_gaps") == 1);
    char ok[16] = "";
    sql_text(p, "PRAGMA integrity_check", ok, sizeof ok);
    CHECK_STR(ok, "ok");
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/fusecheck-test-db-%ld", (long)getpid());
    mkdir(dir, 0777);
    test_views();
    test_content();
    test_migrate_v3();
    test_proof_changes();
    test_open_errors();
    test_foreign();
    test_migrate_v6();
    test_migrate_v7();
    test_migrate_v8();
    test_interrupted();
    test_kill();
    test_parallel();
    test_readonly_full();
    test_merge();
    test_merge_killed();
    test_merge_names_output();
    test_code_mutants();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return check_done("db");
}
