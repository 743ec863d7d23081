/* db/db.h — results.db: one SQLite file of every run, decision report, diff, tolerance result, proof and fuzz
 * finding fusecheck computes, ready for `sqlite3 results.db` regression queries.
 *
 * The file is in WAL mode with foreign keys on; PRAGMA user_version is the schema version, upgraded forward on open
 * (a file made by a newer fusecheck is refused). Every statement is prepared; no SQL is built from strings a user
 * controls. A run is written in transactions: its row first (status `incomplete`), then each unit of work in its own
 * transaction, then its status — so a process killed at any moment leaves every committed row intact and the run
 * marked incomplete (a run stopped by a signal it caught ends `interrupted`, its status of its own). Writers wait for
 * each other (busy timeout), so parallel checks can share one file. The module knows only SQLite: callers pass plain
 * values. */
#ifndef FUSECHECK_DB_H
#define FUSECHECK_DB_H

#include <stdbool.h>
#include <stdint.h>

#define DB_ERR_LEN 512

/* The schema version this build writes. */
#define DB_SCHEMA_VERSION 9

struct db;

/* The schema's forward migrations: (*out)[k] takes a file from version k to k + 1; returns their count. */
int db_schema_migrations(const char *const **out);

/* Open (creating and upgrading as needed) the results file at path. The schema is made only in a new or empty file
 * (no table, view or index); another program's database (its own objects and no fusecheck schema) is refused before
 * anything is written to it, byte for byte as it was. 0 on success; else a message in err: a missing directory, a
 * file that is not a database, one holding no fusecheck results, one from a newer fusecheck, a read-only file for
 * writing. */
int db_open(const char *path, struct db **out, char err[DB_ERR_LEN]);
/* Open an existing results file for reading only (no creation, no upgrade). */
int db_open_readonly(const char *path, struct db **out, char err[DB_ERR_LEN]);
void db_close(struct db *db);
/* The schema version of the open file. */
int db_schema_version(struct db *db);

/* Start a write transaction (immediate: it waits for other writers), commit it, or roll it back. */
int db_begin(struct db *db, char err[DB_ERR_LEN]);
int db_commit(struct db *db, char err[DB_ERR_LEN]);
void db_rollback(struct db *db);

/* A run's identity, as the runs table keeps it. */
struct db_run_info {
    const char *kind;    /* "check", "prove", "fuzz", "tolerance", ... */
    const char *command; /* the command line */
    const char *git_rev; /* may be NULL */
    const char *host;    /* may be NULL */
    const char *version; /* fusecheck's version */
    /* The optimizer whose reports the run holds: NULL name for fusecheck's own, in process. Else what its greeting
     * said (name, version) and the command that started it. */
    const char *optimizer_name, *optimizer_version, *optimizer_command;
};

/* A run's configuration as runs.config keeps it: the command line without its program word, `--db FILE` and the
 * options that only say how the run shows itself (--progress, --no-progress, --json); malloc'd. Two runs are of one
 * configuration when their kind, this text and their optimizer's name and command are the same. */
char *db_run_config(const char *command);

/* Record a new run (status incomplete, started now) in its own transaction; *run receives its id. */
int db_run_begin(struct db *db, const struct db_run_info *info, int64_t *run, char err[DB_ERR_LEN]);
/* Mark a run in progress ended with status "complete", "failed" or "interrupted" (stopped by a signal before its
 * work was done: what it committed is whole, the rest was never done), in its own transaction; a run that ended
 * already is refused (its status never flips). */
int db_run_end(struct db *db, int64_t run, const char *status, char err[DB_ERR_LEN]);
/* Record how many of the rules' fixture cases a run ran (check --fixtures) and how many of them failed, in its own
 * transaction (runs.fixture_cases, runs.fixture_failures: NULL for a run that ran none). */
int db_run_fixtures(struct db *db, int64_t run, int64_t cases, int64_t failed, char err[DB_ERR_LEN]);

/* The id of the graph (name, family, mode, op count, sha256 of its canonical text), inserted if new. */
int db_graph(struct db *db, const char *name, const char *family, const char *mode, int64_t ops, const char *sha256,
             int64_t *id, char err[DB_ERR_LEN]);
/* The id of the shim (name, knobs text), inserted if new. */
int db_shim(struct db *db, const char *name, const char *knobs, int64_t *id, char err[DB_ERR_LEN]);
/* Record that the step `name` is at position seq in the table of `run` (for the rules-that-never-fired view). */
int db_step(struct db *db, int64_t run, int seq, const char *name, char err[DB_ERR_LEN]);

/* A report's summary: run, graph, shim, the digest naming its decisions (rules_report_digest), their counts. */
struct db_report {
    int64_t run, graph, shim;
    const char *digest;
    int64_t fired, refused, held;
    double optimize_ms;
    const char *rewritten; /* the sha256 of the rewritten graph's canonical text, or NULL */
};
/* Record a report. Its decisions are stored once per digest: *set receives the id of the decision set the digest
 * names, and *fresh says whether this report made it — then, and only then, its decisions follow (db_decisions with
 * .set = *set, in the same transaction). A report identical to one stored before adds one `reports` row. */
int db_report(struct db *db, const struct db_report *r, int64_t *set, bool *fresh, char err[DB_ERR_LEN]);

/* One decision of a decision set (its seq-th). outcome is "fired", "refused" or "held"; reason is NULL unless
 * refused. */
struct db_decision {
    int64_t set;
    int64_t seq;
    const char *rule, *cls, *covers, *outcome, *reason;
};
int db_decision(struct db *db, const struct db_decision *d, char err[DB_ERR_LEN]);
/* n decisions at once (several rows a statement: the fast path for a whole report). */
int db_decisions(struct db *db, const struct db_decision *d, int64_t n, char err[DB_ERR_LEN]);
/* db_decisions with each decision's refusal code (codes[i]: rules_decision.code, NULL for none; codes NULL: none
 * at all), kept in set_decisions.code: how two optimizers' decisions compare (optimizer_disagreements). */
int db_decisions_coded(struct db *db, const struct db_decision *d, const char *const *codes, int64_t n,
                       char err[DB_ERR_LEN]);

/* One diff check: identical, or the first tensor, index and values that differ. */
struct db_diff {
    int64_t run, graph, shim;
    bool identical;     /* the comparison passed */
    int64_t compared;
    const char *tensor; /* where it failed: NULL when identical, or when no one value is to blame (validity) */
    int64_t index;
    double lifted, rewritten;
    const char *kind;   /* "values" (NULL too), "valid" or "unquantized": which comparison */
    const char *reason; /* why it failed (a validator's message, a bound); NULL when it passed */
};
int db_diff(struct db *db, const struct db_diff *d, char err[DB_ERR_LEN]);

/* Why one part of a run could not be checked: the graph, mode and shim it concerns (NULL where none), the stage
 * (lift, optimize, compare, tolerance) and the reason printed. */
struct db_failure {
    int64_t run;
    const char *graph, *mode, *shim, *stage, *reason;
};
int db_failure(struct db *db, const struct db_failure *f, char err[DB_ERR_LEN]);

/* Record that a run held a graph's launches under a shim to their tolerances, finding the results the digest names
 * (the sha256 of their canonical text, as its writer computes it): *set receives that tolerance set's id, and *fresh
 * says whether this record made it — then, and only then, its rows and steps follow (db_tolerance and
 * db_tolerance_step with .set = *set, seq counting from 0, in the same transaction). */
int db_tolerance_set(struct db *db, int64_t run, int64_t graph, int64_t shim, const char *digest, int64_t *set,
                     bool *fresh, char err[DB_ERR_LEN]);

/* One tolerance result of a backend against the evaluator: the seq-th row of a tolerance set. */
struct db_tolerance {
    int64_t set, seq;
    const char *backend, *op, *tensor;
    int64_t elements;
    double max_abs, max_rel, nmse, bound;
    bool pass;
    /* the worst element (largest error over its bound): that ratio (1e308 past any bound), its index, both values */
    double ratio;
    int64_t worst;
    double lane, reference;
    double max_abs_bound; /* the bound at the element with the largest |error| (max_abs's own bound) */
};
int db_tolerance(struct db *db, const struct db_tolerance *t, char err[DB_ERR_LEN]);
/* One step of a tolerance run end to end: a backend's own chain of launches against the evaluator, on the step's
 * logits (`tensor`, `rows` rows): their NMSE, the largest KL divergence of a row's softmax, the rows whose top-1
 * agrees, the largest difference. */
struct db_tolerance_step {
    int64_t set, seq;
    const char *backend, *tensor;
    int64_t step, rows, top1_agree;
    double nmse, kl, max_abs;
};
int db_tolerance_step(struct db *db, const struct db_tolerance_step *t, char err[DB_ERR_LEN]);

/* One position of a token run of a GGUF file through the evaluator and through llama.cpp (fusecheck crosscheck). */
struct db_crosscheck {
    int64_t run;
    const char *model, *family, *file_sha256, *weights, *mode, *engine;
    int64_t position, token, top1_fusecheck, top1_llama;
    double max_abs, rel, nmse, bound;
    bool pass;
};
int db_crosscheck(struct db *db, const struct db_crosscheck *c, char err[DB_ERR_LEN]);

/* One proof obligation's verdict ("proved", "refuted", "unknown") by a solver ("z3"; NULL too, or "cvc5"). */
struct db_proof {
    int64_t run;
    const char *rule, *obligation;
    int64_t bound; /* 0: unbounded (quantified) */
    const char *verdict, *reason, *counterexample;
    double ms;
    const char *solver;
    const char *replay; /* the counterexample's replay: "fails", "passes", "unbuilt"; NULL: none tried */
    int replay_fired;   /* how often the rule fired in the replay (with replay "fails" or "passes") */
    bool seed_rules;    /* proved of the seed's rules (--seed-rules) */
};
int db_proof(struct db *db, const struct db_proof *p, char err[DB_ERR_LEN]);

/* One harness's statistics in a fuzz run. */
struct db_fuzz_stat {
    int64_t run;
    const char *harness;
    int64_t executions;
    double seconds;
    int64_t corpus, coverage;
};
int db_fuzz_stat(struct db *db, const struct db_fuzz_stat *s, char err[DB_ERR_LEN]);
/* A fuzz finding seen in a run: new (first and last seen this run, count 1) or seen again (last seen, count + 1). */
int db_fuzz_finding(struct db *db, int64_t run, const char *harness, const char *signature, const char *input_sha256,
                    char err[DB_ERR_LEN]);

/* One source-level mutant of a code-mutant campaign: its id (file:line:col:operator), where, the line before and
 * after, its outcome ("killed", "survived", "stillborn", "timeout"), the check that killed it (NULL unless killed
 * or timed out) and the checks' seconds up to the kill. */
struct db_code_mutant {
    int64_t run;
    const char *mutant, *file;
    int64_t line;
    const char *op, *original, *mutated, *outcome, *killed_by;
    double seconds;
};
int db_code_mutant(struct db *db, const struct db_code_mutant *m, char err[DB_ERR_LEN]);

/* ── Queries ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* Each run, oldest first: id, kind, started, ended (may be NULL), status, command, and its report count. */
typedef void (*db_run_fn)(int64_t id, const char *kind, const char *started, const char *ended, const char *status,
                          const char *command, int64_t reports, void *ctx);
int db_runs(struct db *db, db_run_fn fn, void *ctx, char err[DB_ERR_LEN]);

/* The decision changes from run a to run b, over the reports both made of one graph (its name, mode and content)
 * under one shim. */
typedef void (*db_change_fn)(const char *graph, const char *mode, const char *shim, const char *rule,
                             const char *cls, const char *covers, const char *before, const char *after, void *ctx);
int db_decision_changes(struct db *db, int64_t a, int64_t b, db_change_fn fn, void *ctx, char err[DB_ERR_LEN]);
/* The graphs (by name and mode) whose content differs between run a and run b: their reports are not paired. */
typedef void (*db_graph_change_fn)(const char *graph, const char *mode, int64_t ops_before, int64_t ops_after,
                                   const char *sha_before, const char *sha_after, void *ctx);
int db_graph_changes(struct db *db, int64_t a, int64_t b, db_graph_change_fn fn, void *ctx, char err[DB_ERR_LEN]);
/* A run's status ("complete", "incomplete", "failed", "interrupted"), or "" when there is no such run. */
int db_run_status(struct db *db, int64_t run, char status[16], char err[DB_ERR_LEN]);
/* Whether run id exists. */
int db_run_exists(struct db *db, int64_t run, bool *exists, char err[DB_ERR_LEN]);
/* The optimizer whose reports a run holds (runs.optimizer_*; "" for what is not recorded). */
struct db_optimizer {
    char name[128], version[128], command[1024];
    bool in_process; /* fusecheck's own, in process: no command */
};
int db_run_optimizer(struct db *db, int64_t run, struct db_optimizer *o, char err[DB_ERR_LEN]);
/* Whether two runs' optimizers are one (the same name and command; the version may differ): optimizer_pairs' test. */
bool db_same_optimizer(const struct db_optimizer *a, const struct db_optimizer *b);
/* How many reports of run a have a report of run b on the same graph (by content) and shim (what decision changes
 * compare). */
int db_runs_common(struct db *db, int64_t a, int64_t b, int64_t *n, char err[DB_ERR_LEN]);
/* What run a reported on that run b did not (the view run_pair_gaps): each graph by name and mode (`what` "graph",
 * shim NULL), then each shim by name (`what` "shim", graph and mode NULL), in order. */
typedef void (*db_gap_fn)(const char *what, const char *graph, const char *mode, const char *shim, void *ctx);
int db_run_gaps(struct db *db, int64_t a, int64_t b, db_gap_fn fn, void *ctx, char err[DB_ERR_LEN]);

/* One row of a read query: its n columns as text (NULL where the value is NULL), in the order selected. */
typedef void (*db_row_fn)(const char *const *cols, int n, void *ctx);
/* Run one read-only statement (at most DB_SELECT_COLUMNS columns), its numbered parameters ?1, ?2, ... bound to
 * params[0..nparams), calling fn on each row in the order SQLite returns them. A statement that would write is
 * refused. 0, or 1 with err. */
#define DB_SELECT_COLUMNS 24
int db_select(struct db *db, const char *sql, const int64_t *params, int nparams, db_row_fn fn, void *ctx,
              char err[DB_ERR_LEN]);

/* Make sure the temporary table changes_cache (the columns of the view decision_changes, on this connection only,
 * never in the file) holds the decision changes from run `before` to run `after`: computed from the view the first
 * time a pair is asked for, kept for the connection's life. A reader that asks several questions of one pair's
 * changes (the nightly page) reads them from changes_cache, always with its run_before and run_after in the WHERE.
 * Allowed on a read-only or immutable file. 0, or 1 with err. */
int db_changes_cache(struct db *db, int64_t after, int64_t before, char err[DB_ERR_LEN]);

/* How db_merge treats an output that exists: refuse it, replace it, or add the inputs to what it holds. */
enum db_merge_mode { DB_MERGE_NEW, DB_MERGE_FORCE, DB_MERGE_APPEND };
/* What a merge did: runs copied, and runs skipped because the output held them already (the same origin). */
struct db_merge_result {
    int runs, skipped;
};
/* Merge the runs of the input files into `out`, whole or not at all: every input checked first (its integrity, its
 * schema); the result built beside `out` (with APPEND from a copy of it) and renamed over it, a stale `-wal`/`-shm`
 * of `out` removed first, never left to pair with the new file. A run the output already holds (same origin: the
 * file and id it came from) is skipped. `out` existing is refused under NEW; anything at `out` but a regular file is
 * refused always, and so is another program's database (FORCE replaces only a results file, or a file that is no
 * database). 0, or 1 with err. */
int db_merge(const char *const *inputs, int ninputs, const char *out, enum db_merge_mode mode,
             struct db_merge_result *result, char err[DB_ERR_LEN]);

#endif
