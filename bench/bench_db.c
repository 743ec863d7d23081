/* bench/bench_db.c — results.db over years of nightlies.
 *
 * Two figures. First, how fast decisions go in: rows a second inserted in one transaction through the prepared
 * statements (db_decisions, as `fusecheck check` logs a new decision set; target: at least 200,000), median of
 * several rounds. Second, a history of nightly runs shaped like the nightly check's (ci/nightly: 40 graph × mode
 * pairs under 92 shims, about 400 decisions a report; 1.66 diff rows a report; 1,440 tolerance runs of 100 rows and
 * one step each; 70 steps), where every 30th night one graph's decisions change under every shim and another graph's
 * content changes (five of its decisions flip; a graph's decisions change every 40 × 30 nights). It prints how much the file grows on a night that changes nothing (target: under 1 MB; median
 * over the unchanged nights of the last 30), and how long `decision_changes` between two runs (the first and the
 * last; two neighbours), `rules_never_fired` of the last run and the views by kind (`latest_check_pair`,
 * `latest_check_changes`, `latest_check_gaps`, `previous_runs`: every night is one command, one configuration) take
 * (target: under 100 ms; median of 5).
 *
 * Usage: bench_db [NIGHTS] (default 365). BENCH_DB_SHIMS=N reports each night under N shims only (a quick look);
 * BENCH_DB_KEEP=1 keeps the file and prints its path. */
#include "bench/bench.h"
#include "db/db.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { GRAPHS = 40, SHIMS = 92, DECISIONS = 400, TOL_RUNS = 1440, TOL_ROWS = 100, STEPS = 70, CHANGE_EVERY = 30 };

/* Seconds on the monotonic clock. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The median of n figures (sorted in place). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], bench_cmp_double);
    return v[n / 2];
}

/* Stop the bench with the db's message. */
_Noreturn static void die(const char *what, const char *err)
{
    fprintf(stderr, "bench_db: %s: %s\n", what, err);
    exit(2);
}

/* Remove a db file and its sidecars. */
static void remove_db(const char *path)
{
    char side[300];
    remove(path);
    snprintf(side, sizeof side, "%s-wal", path);
    remove(side);
    snprintf(side, sizeof side, "%s-shm", path);
    remove(side);
}

/* Rows a second of db_decisions into new decision sets, median of five rounds of 200,000. */
static void insert_rate(const char *path)
{
    char err[DB_ERR_LEN];
    struct db *db;
    if (db_open(path, &db, err))
        die("open", err);
    const struct db_run_info info = {.kind = "bench", .command = "bench_db", .git_rev = NULL,
                                     .host = NULL, .version = "bench"};
    int64_t run, graph, shim, set;
    bool fresh;
    if (db_run_begin(db, &info, &run, err) || db_begin(db, err) ||
        db_graph(db, "g", "f", "decode", 1, "s", &graph, err) || db_shim(db, "reference", "", &shim, err) ||
        db_commit(db, err))
        die("setup", err);
    enum { ROWS = 200000, ROUNDS = 5 };
    double rates[ROUNDS];
    struct db_decision *rows = malloc(sizeof *rows * ROWS);
    if (!rows)
        abort();
    for (int k = 0; k < ROUNDS; k++) {
        char digest[32];
        snprintf(digest, sizeof digest, "round-%d", k);
        struct db_report r = {run, graph, shim, digest, 0, 0, 0, 0, NULL};
        double t0 = now();
        if (db_begin(db, err) || db_report(db, &r, &set, &fresh, err))
            die("report", err);
        for (int i = 0; i < ROWS; i++)
            rows[i] = (struct db_decision){set, i, "add_norm", "add_norm", "[12, 13]", i % 3 ? "fired" : "refused",
                                           i % 3 ? NULL : "the chip runs `add_norm` as its parts"};
        if (db_decisions(db, rows, ROWS, err) || db_commit(db, err))
            die("decisions", err);
        rates[k] = ROWS / (now() - t0);
    }
    double lo = rates[0], hi = rates[0];
    for (int k = 1; k < ROUNDS; k++) {
        lo = rates[k] < lo ? rates[k] : lo;
        hi = rates[k] > hi ? rates[k] : hi;
    }
    printf("db: decisions inserted: median %.0f rows/s over %d rounds of %d (min %.0f, max %.0f); target >= 200000\n",
           median(rates, ROUNDS), ROUNDS, ROWS, lo, hi);
    free(rows);
    db_close(db);
    remove_db(path);
}

/* The history being built: the db, its shims and step names, and the current version of every graph. */
struct history {
    struct db *db;
    int64_t shim[SHIMS];
    int shims; /* how many of them a night reports on (SHIMS, or fewer for a quick look: BENCH_DB_SHIMS) */
    int graph_version[GRAPHS];    /* bumped when a graph's content changes */
    int decision_version[GRAPHS]; /* bumped when a graph's decisions change */
    struct db_decision *rows;
    char (*covers)[24];
};

/* The rule names of a night's table. */
static void step_name(int i, char buf[32]) { snprintf(buf, 32, "rule_%02d", i); }

/* One report's decisions: the graph's version of them; rules 0..59 fire somewhere, 60..69 never. */
static void fill_decisions(struct history *h, int g, int s, int64_t set)
{
    static char rules[STEPS - 10][32];
    if (!rules[0][0])
        for (int i = 0; i < STEPS - 10; i++)
            step_name(i, rules[i]);
    for (int i = 0; i < DECISIONS; i++) {
        /* a change of the graph's decisions flips five of them */
        bool fires = (i + g + s) % 3 == 0;
        if (h->decision_version[g] && i % 80 == h->decision_version[g] % 80)
            fires = !fires;
        snprintf(h->covers[i], sizeof h->covers[i], "[%d, %d]", 3 * i, 3 * i + 1);
        h->rows[i] = (struct db_decision){set, i, rules[i % (STEPS - 10)], "add_norm", h->covers[i],
                                          fires ? "fired" : "refused", fires ? NULL : "the chip refuses it here"};
    }
}

/* One graph's report under one shim, with its diff rows, in one transaction (as `fusecheck check` logs it). */
static void log_report(struct history *h, int64_t run, int g, int s)
{
    char err[DB_ERR_LEN], name[32], sha[65], digest[65], rewritten[65];
    snprintf(name, sizeof name, "model-%02d", g / 4);
    snprintf(sha, sizeof sha, "%056d%08d", g, h->graph_version[g]);
    int64_t graph, set;
    bool fresh;
    snprintf(digest, sizeof digest, "%048d%08d%08d", g, s, h->decision_version[g]);
    snprintf(rewritten, sizeof rewritten, "%048d%08d%08d", g, s, h->decision_version[g] + h->graph_version[g]);
    static const char *const modes[4] = {"decode", "prefill:8", "prefill:16", "batch:4"};
    if (db_begin(h->db, err) || db_graph(h->db, name, "llama", modes[g % 4], 276, sha, &graph, err))
        die("graph", err);
    struct db_report r = {run, graph, h->shim[s], digest, DECISIONS / 3, DECISIONS - DECISIONS / 3, 0,
                          0.5 + 0.001 * (double)(rand() % 1000), rewritten};
    if (db_report(h->db, &r, &set, &fresh, err))
        die("report", err);
    if (fresh) {
        fill_decisions(h, g, s, set);
        if (db_decisions(h->db, h->rows, DECISIONS, err))
            die("decisions", err);
    }
    /* every report a valid row; two in five a values row; one in four an unquantized row */
    struct db_diff d = {run, graph, h->shim[s], true, 276, NULL, 0, 0, 0, "valid", NULL};
    int rc = db_diff(h->db, &d, err);
    d.kind = "values";
    d.compared = 3;
    if (!rc && (g + s) % 5 < 2)
        rc = db_diff(h->db, &d, err);
    d.kind = "unquantized";
    d.compared = 65536;
    if (!rc && (g + s) % 4 == 0)
        rc = db_diff(h->db, &d, err);
    if (rc || db_commit(h->db, err))
        die("diffs", err);
}

/* One tolerance run (graph g, shim s): its set of 100 rows and a step, stored once per content. */
static void log_tolerance(struct history *h, int64_t run, int g, int s)
{
    char err[DB_ERR_LEN], name[32], sha[65], digest[65];
    snprintf(name, sizeof name, "model-%02d", g / 4);
    snprintf(sha, sizeof sha, "%056d%08d", g, h->graph_version[g]);
    snprintf(digest, sizeof digest, "t%047d%08d%08d", g, s, h->decision_version[g]);
    int64_t graph, set;
    bool fresh;
    static const char *const modes[4] = {"decode", "prefill:8", "prefill:16", "batch:4"};
    if (db_begin(h->db, err) || db_graph(h->db, name, "llama", modes[g % 4], 276, sha, &graph, err) ||
        db_tolerance_set(h->db, run, graph, h->shim[s], digest, &set, &fresh, err))
        die("tolerance set", err);
    for (int i = 0; fresh && i < TOL_ROWS; i++) {
        char op[32];
        snprintf(op, sizeof op, "%d merged_qkv", i);
        struct db_tolerance t = {set, i, "host", op, "blk.0.q", 4096, 1e-3, 1e-2, 1e-6, 0.05, true, 0.2, 17, 0.5,
                                 0.5001, 0.05};
        if (db_tolerance(h->db, &t, err))
            die("tolerance", err);
    }
    struct db_tolerance_step st = {set, 0, "host", "logits", 0, 4, 4, 1e-6, 1e-7, 0.01};
    if ((fresh && db_tolerance_step(h->db, &st, err)) || db_commit(h->db, err))
        die("tolerance step", err);
}

/* One nightly run: its steps, every report, every tolerance run. */
static int64_t night(struct history *h, int n)
{
    char err[DB_ERR_LEN];
    (void)n; /* every night one command: one configuration, which the views by kind pair */
    const struct db_run_info info = {.kind = "check", .command = "bench_db night", .git_rev = NULL,
                                     .host = NULL, .version = "bench"};
    int64_t run;
    if (db_run_begin(h->db, &info, &run, err) || db_begin(h->db, err))
        die("run", err);
    for (int i = 0; i < STEPS; i++) {
        char name[32];
        step_name(i, name);
        if (db_step(h->db, run, i, name, err))
            die("step", err);
    }
    if (db_commit(h->db, err))
        die("steps", err);
    for (int g = 0; g < GRAPHS; g++)
        for (int s = 0; s < h->shims; s++)
            log_report(h, run, g, s);
    for (int k = 0; k < TOL_RUNS && h->shims == SHIMS; k++)
        log_tolerance(h, run, k % 16, 2 + k / 16);
    if (db_run_end(h->db, run, "complete", err))
        die("run end", err);
    return run;
}

/* The file's size with its write-ahead log folded in. */
static long long file_size(const char *path)
{
    sqlite3 *c;
    if (sqlite3_open(path, &c) == SQLITE_OK)
        sqlite3_exec(c, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
    sqlite3_close(c);
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Milliseconds of one query counting its rows (median of 5), and that count. */
static double time_query(sqlite3 *c, const char *sql, long long *rows)
{
    double t[5];
    for (int k = 0; k < 5; k++) {
        sqlite3_stmt *st;
        double t0 = now();
        if (sqlite3_prepare_v2(c, sql, -1, &st, NULL) != SQLITE_OK)
            die("query", sqlite3_errmsg(c));
        *rows = 0;
        while (sqlite3_step(st) == SQLITE_ROW)
            ++*rows;
        sqlite3_finalize(st);
        t[k] = (now() - t0) * 1e3;
    }
    return median(t, 5);
}

int main(int argc, char **argv)
{
    int nights = argc > 1 ? atoi(argv[1]) : 365;
    if (nights < 2 * CHANGE_EVERY + 2) {
        fprintf(stderr, "bench_db: at least %d nights\n", 2 * CHANGE_EVERY + 2);
        return 2;
    }
    char path[128], err[DB_ERR_LEN];
    snprintf(path, sizeof path, "/tmp/fusecheck-bench-db-%ld.db", (long)getpid());
    insert_rate(path);
    struct history h = {0};
    h.rows = malloc(sizeof *h.rows * DECISIONS);
    h.covers = malloc(sizeof *h.covers * DECISIONS);
    if (!h.rows || !h.covers)
        abort();
    if (db_open(path, &h.db, err) || db_begin(h.db, err))
        die("open", err);
    const char *few = getenv("BENCH_DB_SHIMS");
    h.shims = few && atoi(few) > 0 && atoi(few) < SHIMS ? atoi(few) : SHIMS;
    for (int s = 0; s < SHIMS; s++) {
        char name[48];
        snprintf(name, sizeof name, "cuda-lane:shim-%02d", s);
        if (db_shim(h.db, name, "", &h.shim[s], err))
            die("shim", err);
    }
    if (db_commit(h.db, err))
        die("shims", err);
    srand(1);
    double t0 = now();
    long long prev = file_size(path), first_night = 0;
    double growth[CHANGE_EVERY];
    int ngrowth = 0;
    int64_t first = 0, last = 0, before_last = 0;
    for (int n = 1; n <= nights; n++) {
        bool changes = n > 1 && n % CHANGE_EVERY == 0;
        if (changes) {
            h.decision_version[(n / CHANGE_EVERY) % GRAPHS]++;
            h.graph_version[(n / CHANGE_EVERY + 7) % GRAPHS]++;
        }
        before_last = last;
        last = night(&h, n);
        first = first ? first : last;
        long long size = file_size(path);
        if (n == 1)
            first_night = size - prev;
        if (!changes && n > 1 && n > nights - CHANGE_EVERY && ngrowth < CHANGE_EVERY)
            growth[ngrowth++] = (double)(size - prev);
        prev = size;
    }
    double build = now() - t0;
    db_close(h.db);
    long long total = file_size(path);
    printf("db: %d nights of %d reports (%d decisions each), %d tolerance runs, built in %.1f s; file %.1f MB\n",
           nights, GRAPHS * SHIMS, DECISIONS, TOL_RUNS, build, (double)total / 1e6);
    printf("db: growth: first night %.2f MB; a night that changes nothing: median %.3f MB over %d nights; "
           "target < 1 MB\n",
           (double)first_night / 1e6, median(growth, ngrowth) / 1e6, ngrowth);
    sqlite3 *c;
    if (sqlite3_open_v2(path, &c, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        die("reopen", sqlite3_errmsg(c));
    char sql[400];
    long long rows;
    snprintf(sql, sizeof sql, "SELECT * FROM decision_changes WHERE run_before = %lld AND run_after = %lld",
             (long long)first, (long long)last);
    double ms = time_query(c, sql, &rows);
    printf("db: decision_changes, run %lld to %lld: %lld rows in %.1f ms (median of 5); target < 100 ms\n",
           (long long)first, (long long)last, rows, ms);
    snprintf(sql, sizeof sql, "SELECT * FROM decision_changes WHERE run_before = %lld AND run_after = %lld",
             (long long)before_last, (long long)last);
    ms = time_query(c, sql, &rows);
    printf("db: decision_changes, run %lld to %lld: %lld rows in %.1f ms (median of 5); target < 100 ms\n",
           (long long)before_last, (long long)last, rows, ms);
    snprintf(sql, sizeof sql, "SELECT * FROM rules_never_fired WHERE run = %lld", (long long)last);
    ms = time_query(c, sql, &rows);
    printf("db: rules_never_fired, run %lld: %lld rows in %.1f ms (median of 5); target < 100 ms\n", (long long)last,
           rows, ms);
    snprintf(sql, sizeof sql, "SELECT * FROM graph_changes WHERE run_before = %lld AND run_after = %lld",
             (long long)first, (long long)last);
    ms = time_query(c, sql, &rows);
    printf("db: graph_changes, run %lld to %lld: %lld rows in %.1f ms (median of 5)\n", (long long)first,
           (long long)last, rows, ms);
    static const char *const by_kind[] = {"latest_check_pair", "latest_check_changes", "latest_check_gaps",
                                          "previous_runs"};
    for (size_t i = 0; i < sizeof by_kind / sizeof by_kind[0]; i++) {
        snprintf(sql, sizeof sql, "SELECT * FROM %s", by_kind[i]);
        ms = time_query(c, sql, &rows);
        printf("db: %s (the last two nights, %lld and %lld): %lld rows in %.1f ms (median of 5); target < 100 ms\n",
               by_kind[i], (long long)before_last, (long long)last, rows, ms);
    }
    sqlite3_close(c);
    free(h.rows);
    free(h.covers);
    if (getenv("BENCH_DB_KEEP"))
        printf("db: kept %s\n", path);
    else
        remove_db(path);
    return 0;
}
