/* db/schema.c — results.db's schema as forward migrations: migration k takes a file from version k to k+1. The
 * regression views are part of the schema (documented with example queries in docs/results-db.md). */
#include "db.h"

#include <stddef.h>

/* Version 0 → 1: every table, index and view. */
static const char migration_1[] =
    "CREATE TABLE runs ("
    "  id INTEGER PRIMARY KEY,"
    "  kind TEXT NOT NULL,"
    "  started TEXT NOT NULL,"
    "  ended TEXT,"
    "  status TEXT NOT NULL CHECK (status IN ('complete', 'incomplete', 'failed')),"
    "  git_rev TEXT, host TEXT, version TEXT NOT NULL, command TEXT NOT NULL,"
    "  origin TEXT"  /* merged runs: 'file#id' they came from */
    ");"
    "CREATE TABLE graphs ("
    "  id INTEGER PRIMARY KEY,"
    "  name TEXT NOT NULL, family TEXT, mode TEXT, ops INTEGER NOT NULL, sha256 TEXT NOT NULL,"
    "  UNIQUE (name, mode, sha256)"
    ");"
    "CREATE TABLE shims (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, knobs TEXT NOT NULL DEFAULT '');"
    "CREATE TABLE steps ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL, name TEXT NOT NULL, PRIMARY KEY (run_id, name)"
    ");"
    "CREATE TABLE reports ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  graph_id INTEGER NOT NULL REFERENCES graphs(id),"
    "  shim_id INTEGER NOT NULL REFERENCES shims(id),"
    "  digest TEXT NOT NULL, fired INTEGER NOT NULL, refused INTEGER NOT NULL, held INTEGER NOT NULL,"
    "  optimize_ms REAL NOT NULL"
    ");"
    "CREATE INDEX reports_run ON reports(run_id);"
    "CREATE INDEX reports_graph_shim ON reports(graph_id, shim_id);"
    /* Keyed by (report, sequence): decisions arrive in that order, so rows append and a report's decisions are
     * one range of the key. */
    "CREATE TABLE decisions ("
    "  report_id INTEGER NOT NULL REFERENCES reports(id) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL, rule TEXT NOT NULL, class TEXT NOT NULL, covers TEXT NOT NULL,"
    "  outcome TEXT NOT NULL CHECK (outcome IN ('fired', 'refused', 'held')), reason TEXT,"
    "  PRIMARY KEY (report_id, seq)"
    ") WITHOUT ROWID;"
    "CREATE TABLE diffs ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  graph_id INTEGER NOT NULL REFERENCES graphs(id), shim_id INTEGER NOT NULL REFERENCES shims(id),"
    "  identical INTEGER NOT NULL, compared INTEGER NOT NULL,"
    "  tensor TEXT, first_index INTEGER, lifted REAL, rewritten REAL"
    ");"
    "CREATE INDEX diffs_run ON diffs(run_id, identical);"
    "CREATE TABLE tolerances ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  graph_id INTEGER NOT NULL REFERENCES graphs(id), shim_id INTEGER NOT NULL REFERENCES shims(id),"
    "  backend TEXT NOT NULL, op TEXT NOT NULL, tensor TEXT NOT NULL, elements INTEGER NOT NULL,"
    "  max_abs REAL NOT NULL, max_rel REAL NOT NULL, nmse REAL NOT NULL, bound REAL NOT NULL, pass INTEGER NOT NULL"
    ");"
    "CREATE INDEX tolerances_key ON tolerances(graph_id, shim_id, backend, op, tensor, run_id);"
    "CREATE TABLE proofs ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  rule TEXT NOT NULL, obligation TEXT NOT NULL, bound INTEGER NOT NULL,"
    "  verdict TEXT NOT NULL CHECK (verdict IN ('proved', 'refuted', 'unknown')), reason TEXT,"
    "  ms REAL NOT NULL, counterexample TEXT"
    ");"
    "CREATE INDEX proofs_run ON proofs(run_id, verdict);"
    "CREATE TABLE fuzz_stats ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  harness TEXT NOT NULL, executions INTEGER NOT NULL, seconds REAL NOT NULL,"
    "  corpus INTEGER NOT NULL, coverage INTEGER NOT NULL"
    ");"
    "CREATE TABLE fuzz_findings ("
    "  id INTEGER PRIMARY KEY,"
    "  harness TEXT NOT NULL, signature TEXT NOT NULL, input_sha256 TEXT NOT NULL,"
    "  first_run INTEGER NOT NULL REFERENCES runs(id), last_run INTEGER NOT NULL REFERENCES runs(id),"
    "  count INTEGER NOT NULL, UNIQUE (harness, signature)"
    ");"
    "CREATE INDEX fuzz_findings_first ON fuzz_findings(first_run);"
    /* Every decision with its run, graph and shim by name. */
    "CREATE VIEW decision_rows AS"
    "  SELECT rep.run_id AS run, g.name AS graph, g.mode AS mode, s.name AS shim, d.seq, d.rule, d.class, d.covers,"
    "         d.outcome, d.reason,"
    "         d.outcome || CASE WHEN d.reason IS NULL THEN '' ELSE ': ' || d.reason END AS outcome_text"
    "  FROM decisions d JOIN reports rep ON rep.id = d.report_id"
    "  JOIN graphs g ON g.id = rep.graph_id JOIN shims s ON s.id = rep.shim_id;"
    /* Every report with its run, graph and shim by name. */
    "CREATE VIEW report_rows AS"
    "  SELECT rep.id AS report, rep.run_id AS run, g.name AS graph, g.mode AS mode, s.name AS shim, rep.digest,"
    "         rep.fired, rep.refused, rep.held, rep.optimize_ms"
    "  FROM reports rep JOIN graphs g ON g.id = rep.graph_id JOIN shims s ON s.id = rep.shim_id;"
    /* The latest report per graph and shim. */
    "CREATE VIEW latest_reports AS"
    "  SELECT r.* FROM report_rows r"
    "  WHERE r.report = (SELECT max(x.report) FROM report_rows x"
    "                    WHERE x.graph = r.graph AND x.mode IS r.mode AND x.shim = r.shim);"
    /* Every ordered pair of runs. */
    "CREATE VIEW run_pairs AS SELECT a.id AS run_before, b.id AS run_after FROM runs a JOIN runs b ON a.id < b.id;"
    /* The reports two runs made of the same graph and shim whose digests differ: the only ones whose decisions can. */
    "CREATE VIEW changed_report_pairs AS"
    "  SELECT p.run_before, p.run_after, x.graph, x.mode, x.shim, x.report AS report_before, y.report AS report_after"
    "  FROM run_pairs p JOIN report_rows x ON x.run = p.run_before"
    "  JOIN report_rows y ON y.run = p.run_after AND y.graph = x.graph AND y.mode IS x.mode AND y.shim = x.shim"
    "  WHERE x.digest <> y.digest;"
    /* Decision changes between two runs, over the graphs and shims both reported on. */
    "CREATE VIEW decision_changes AS"
    "  SELECT c.run_before, c.run_after, c.graph, c.mode, c.shim, x.rule, x.class, x.covers,"
    "         x.outcome || CASE WHEN x.reason IS NULL THEN '' ELSE ': ' || x.reason END AS outcome_before,"
    "         y.outcome || CASE WHEN y.reason IS NULL THEN '' ELSE ': ' || y.reason END AS outcome_after"
    "  FROM changed_report_pairs c JOIN decisions x ON x.report_id = c.report_before"
    "  LEFT JOIN decisions y ON y.report_id = c.report_after AND y.rule = x.rule AND y.class = x.class"
    "       AND y.covers = x.covers"
    "  WHERE y.outcome IS NULL OR y.outcome <> x.outcome OR y.reason IS NOT x.reason"
    "  UNION ALL"
    "  SELECT c.run_before, c.run_after, c.graph, c.mode, c.shim, y.rule, y.class, y.covers, NULL,"
    "         y.outcome || CASE WHEN y.reason IS NULL THEN '' ELSE ': ' || y.reason END"
    "  FROM changed_report_pairs c JOIN decisions y ON y.report_id = c.report_after"
    "  WHERE NOT EXISTS (SELECT 1 FROM decisions x WHERE x.report_id = c.report_before AND x.rule = y.rule"
    "                    AND x.class = y.class AND x.covers = y.covers);"
    /* Report digests that changed between two runs. */
    "CREATE VIEW digest_changes AS"
    "  SELECT p.run_before, p.run_after, x.graph, x.mode, x.shim, x.digest AS digest_before, y.digest AS digest_after"
    "  FROM run_pairs p JOIN report_rows x ON x.run = p.run_before"
    "  JOIN report_rows y ON y.run = p.run_after AND y.graph = x.graph AND y.mode IS x.mode AND y.shim = x.shim"
    "  WHERE x.digest <> y.digest;"
    /* Steps of a run's table that fired on no graph in that run. */
    "CREATE VIEW rules_never_fired AS"
    "  SELECT st.run_id AS run, st.seq, st.name AS rule FROM steps st"
    "  WHERE NOT EXISTS (SELECT 1 FROM decisions d JOIN reports rep ON rep.id = d.report_id"
    "                    WHERE rep.run_id = st.run_id AND d.rule = st.name AND d.outcome = 'fired');"
    /* Diff checks that found a mismatch. */
    "CREATE VIEW diff_mismatches AS"
    "  SELECT d.run_id AS run, g.name AS graph, g.mode AS mode, s.name AS shim, d.tensor, d.first_index,"
    "         d.lifted, d.rewritten"
    "  FROM diffs d JOIN graphs g ON g.id = d.graph_id JOIN shims s ON s.id = d.shim_id WHERE d.identical = 0;"
    /* Tolerance results worse than the same check's in the latest earlier run: failing now, or a larger NMSE. */
    "CREATE VIEW tolerance_regressions AS"
    "  SELECT t.run_id AS run, prev.run_id AS previous_run, g.name AS graph, g.mode AS mode, s.name AS shim,"
    "         t.backend, t.op, t.tensor, prev.nmse AS nmse_before, t.nmse AS nmse_after,"
    "         prev.pass AS pass_before, t.pass AS pass_after"
    "  FROM tolerances t JOIN graphs g ON g.id = t.graph_id JOIN shims s ON s.id = t.shim_id"
    "  JOIN tolerances prev ON prev.id = (SELECT p.id FROM tolerances p"
    "       WHERE p.graph_id = t.graph_id AND p.shim_id = t.shim_id AND p.backend = t.backend AND p.op = t.op"
    "       AND p.tensor = t.tensor AND p.run_id < t.run_id ORDER BY p.run_id DESC LIMIT 1)"
    "  WHERE (prev.pass = 1 AND t.pass = 0) OR t.nmse > prev.nmse;"
    /* Proof obligations not proved. */
    "CREATE VIEW proofs_not_proved AS"
    "  SELECT run_id AS run, rule, obligation, bound, verdict, reason, ms, counterexample FROM proofs"
    "  WHERE verdict <> 'proved';"
    /* Fuzz findings by the run that first saw them. */
    "CREATE VIEW fuzz_new_findings AS"
    "  SELECT first_run AS run, harness, signature, input_sha256, last_run, count FROM fuzz_findings;";

/* Version 1 → 2: each tolerance row's worst element (its index, its error over its bound, both values; NULL in rows
 * from version 1), the end-to-end figures of tolerance runs, a row per step, and their regression view. */
static const char migration_2[] =
    "ALTER TABLE tolerances ADD COLUMN ratio REAL;"
    "ALTER TABLE tolerances ADD COLUMN worst INTEGER;"
    "ALTER TABLE tolerances ADD COLUMN lane REAL;"
    "ALTER TABLE tolerances ADD COLUMN reference REAL;"
    "CREATE TABLE tolerance_steps ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  graph_id INTEGER NOT NULL REFERENCES graphs(id), shim_id INTEGER NOT NULL REFERENCES shims(id),"
    "  backend TEXT NOT NULL, step INTEGER NOT NULL, tensor TEXT NOT NULL, rows INTEGER NOT NULL,"
    "  nmse REAL NOT NULL, kl REAL NOT NULL, top1_agree INTEGER NOT NULL, max_abs REAL NOT NULL"
    ");"
    "CREATE INDEX tolerance_steps_key ON tolerance_steps(graph_id, shim_id, backend, step, run_id);"
    /* End-to-end figures worse than the same step's in the latest earlier run: fewer top-1 agreements, a larger
     * NMSE or KL divergence. */
    "CREATE VIEW tolerance_step_regressions AS"
    "  SELECT t.run_id AS run, prev.run_id AS previous_run, g.name AS graph, g.mode AS mode, s.name AS shim,"
    "         t.backend, t.step, t.tensor, prev.nmse AS nmse_before, t.nmse AS nmse_after, prev.kl AS kl_before,"
    "         t.kl AS kl_after, prev.top1_agree AS top1_before, t.top1_agree AS top1_after, t.rows"
    "  FROM tolerance_steps t JOIN graphs g ON g.id = t.graph_id JOIN shims s ON s.id = t.shim_id"
    "  JOIN tolerance_steps prev ON prev.id = (SELECT p.id FROM tolerance_steps p"
    "       WHERE p.graph_id = t.graph_id AND p.shim_id = t.shim_id AND p.backend = t.backend AND p.step = t.step"
    "       AND p.tensor = t.tensor AND p.run_id < t.run_id ORDER BY p.run_id DESC LIMIT 1)"
    "  WHERE t.top1_agree < prev.top1_agree OR t.nmse > prev.nmse OR t.kl > prev.kl;";

/* Version 2 → 3, its code-mutant part: each source-level mutant of a code-mutant campaign (fuzz/campaign
 * --code-mutants, docs/mutants.md) with its fate under the product's checks, and the survivors' view. Other parts of
 * migration 3 are separate constants, concatenated below. */
#define MIGRATION_3_CODE_MUTANTS \
    "CREATE TABLE code_mutants (" \
    "  id INTEGER PRIMARY KEY," \
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE," \
    "  mutant TEXT NOT NULL," /* file:line:col:operator (fuzz/code-mutants) */ \
    "  file TEXT NOT NULL, line INTEGER NOT NULL, operator TEXT NOT NULL," \
    "  original TEXT NOT NULL, mutated TEXT NOT NULL," \
    "  outcome TEXT NOT NULL CHECK (outcome IN ('killed', 'survived', 'stillborn', 'timeout'))," \
    "  killed_by TEXT," /* the first check that failed: check:fail, check:digest, validate-run, prove, ... */ \
    "  seconds REAL NOT NULL," /* the checks' time up to the kill (all of them for a survivor) */ \
    "  UNIQUE (run_id, mutant)" \
    ");" \
    "CREATE INDEX code_mutants_run ON code_mutants(run_id, outcome);" \
    /* The mutants no check killed, for a look at the code: equivalent, or a blind spot of the checks. */ \
    "CREATE VIEW code_mutant_survivors AS" \
    "  SELECT run_id AS run, mutant, file, line, operator, original, mutated, seconds FROM code_mutants" \
    "  WHERE outcome = 'survived';"

/* Version 2 → 3, its comparison part: a diff row says which comparison it records — `values` (the rewritten graph's
 * observed and carried values against the reference, bit for bit: every row before version 3), `valid` (the
 * rewritten graph passes the validator) or `unquantized` (each quantized value within its mode's bound of the value
 * it quantizes) — and, when it failed, why. */
#define MIGRATION_3_DIFF_KINDS \
    "ALTER TABLE diffs ADD COLUMN kind TEXT NOT NULL DEFAULT 'values'" \
    "  CHECK (kind IN ('values', 'valid', 'unquantized'));" \
    "ALTER TABLE diffs ADD COLUMN reason TEXT;" \
    "DROP VIEW diff_mismatches;" \
    "CREATE VIEW diff_mismatches AS" \
    "  SELECT d.run_id AS run, g.name AS graph, g.mode AS mode, s.name AS shim, d.kind, d.tensor, d.first_index," \
    "         d.lifted, d.rewritten, d.reason" \
    "  FROM diffs d JOIN graphs g ON g.id = d.graph_id JOIN shims s ON s.id = d.shim_id WHERE d.identical = 0;"

/* Version 2 → 3, its rewritten-graph part: each report's rewritten graph by the sha256 of its canonical text (NULL
 * in older rows), and the reports of one lifted graph and shim whose rewritten graph changed between two runs —
 * with the decisions' digest the same or not: a rewrite that changes the graph without changing a decision (a kept
 * result more or less, another operand) shows here and nowhere else. */
#define MIGRATION_3_REWRITTEN \
    "ALTER TABLE reports ADD COLUMN rewritten TEXT;" \
    "CREATE VIEW rewritten_changes AS" \
    "  SELECT p.run_before, p.run_after, g.name AS graph, g.mode AS mode, s.name AS shim," \
    "         x.rewritten AS rewritten_before, y.rewritten AS rewritten_after, x.digest = y.digest AS same_decisions" \
    "  FROM run_pairs p JOIN reports x ON x.run_id = p.run_before" \
    "  JOIN reports y ON y.run_id = p.run_after AND y.graph_id = x.graph_id AND y.shim_id = x.shim_id" \
    "  JOIN graphs g ON g.id = x.graph_id JOIN shims s ON s.id = x.shim_id" \
    "  WHERE x.rewritten <> y.rewritten;"

/* Version 2 → 3, its failures part: why a run's check could not be made (a graph that does not lift, a compile that
 * fails, a tolerance run that cannot be made), kept beside what was printed. */
#define MIGRATION_3_FAILURES \
    "CREATE TABLE failures (" \
    "  id INTEGER PRIMARY KEY," \
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE," \
    "  graph TEXT, mode TEXT, shim TEXT, stage TEXT NOT NULL, reason TEXT NOT NULL" \
    ");" \
    "CREATE INDEX failures_run ON failures(run_id);" \
    "CREATE VIEW run_failures AS SELECT run_id AS run, graph, mode, shim, stage, reason FROM failures;"

/* Version 2 → 3: the parts above, in order. */
static const char migration_3[] =
    MIGRATION_3_CODE_MUTANTS MIGRATION_3_DIFF_KINDS MIGRATION_3_REWRITTEN MIGRATION_3_FAILURES;

/* The migrations in order: migrations[k] takes a file from version k to k + 1. */
static const char *const migrations[] = {migration_1, migration_2, migration_3};

/* The number of migrations (the schema version this build writes). */
int db_schema_migrations(const char *const **out)
{
    *out = migrations;
    return (int)(sizeof migrations / sizeof migrations[0]);
}
