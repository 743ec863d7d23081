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
    "  killed_by TEXT," /* the first check failed: check:fail, check:fixture, check:digest, ... */ \
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

/* The steps from a source of run pairs (PAIRS, with columns run_before and run_after) to the decision changes of
 * each pair, each a view named by the caller: REPORT_PAIRS, the reports two runs made of the same graph (its content
 * too) and shim whose decision sets differ; BUCKETS, the buckets whose sums differ between such a pair's sets;
 * RULE_PAIRS, the rules whose summaries differ in them; CHANGES, the decisions whose line hash the other set lacks.
 * decision_changes (version 4, over every pair of runs) and latest_check_changes (version 9, over the latest check
 * pair alone, so that no view is read per row of another) are both made by it, word for word alike. */
#define CHANGE_VIEWS(PAIRS, REPORT_PAIRS, BUCKETS, RULE_PAIRS, CHANGES) \
    /* The reports two runs made of the same graph (its content too) and shim whose decision sets differ: the only \
     * ones whose decisions can. */ \
    "CREATE VIEW " REPORT_PAIRS " AS" \
    "  SELECT p.run_before, p.run_after, x.graph_id, x.shim_id, x.set_id AS set_before, y.set_id AS set_after" \
    "  FROM " PAIRS " p CROSS JOIN reports x ON x.run_id = p.run_before" \
    "  CROSS JOIN reports y ON y.run_id = p.run_after AND y.graph_id = x.graph_id AND y.shim_id = x.shim_id" \
    "  WHERE x.set_id <> y.set_id;" \
    /* The buckets whose sums differ between the two sets of a changed report pair, and whether the rules in them \
     * differ too (their names' sums). */ \
    "CREATE VIEW " BUCKETS " AS" \
    "  SELECT c.*, b.n AS bucket," \
    "         substr(sx.buckets, 8 * b.n + 129, 8) IS NOT substr(sy.buckets, 8 * b.n + 129, 8) AS rules_differ" \
    "  FROM " REPORT_PAIRS " c" \
    "  CROSS JOIN decision_sets sx ON sx.id = c.set_before CROSS JOIN decision_sets sy ON sy.id = c.set_after" \
    "  CROSS JOIN rule_buckets b ON substr(sx.buckets, 8 * b.n + 1, 8) IS NOT substr(sy.buckets, 8 * b.n + 1, 8);" \
    /* The rules whose decisions differ between the two sets of a changed report pair (their summaries differ, or \
     * one set has none of the rule's decisions): the only places a decision can have changed. */ \
    "CREATE VIEW " RULE_PAIRS " AS" \
    "  SELECT c.run_before, c.run_after, c.graph_id, c.shim_id, c.set_before, c.set_after, x.rule," \
    "         x.keys AS keys_before, y.keys AS keys_after" \
    "  FROM " BUCKETS " c CROSS JOIN set_rules x ON x.set_id = c.set_before AND x.bucket = c.bucket" \
    "  LEFT JOIN set_rules y ON y.set_id = c.set_after AND y.bucket = c.bucket AND y.rule = x.rule" \
    "  WHERE y.hash IS NOT x.hash OR y.decisions IS NOT x.decisions" \
    "  UNION ALL" \
    "  SELECT c.run_before, c.run_after, c.graph_id, c.shim_id, c.set_before, c.set_after, y.rule, NULL, y.keys" \
    "  FROM " BUCKETS " c CROSS JOIN set_rules y ON c.rules_differ AND y.set_id = c.set_after" \
    "       AND y.bucket = c.bucket" \
    "  WHERE NOT EXISTS (SELECT 1 FROM set_rules x WHERE x.set_id = c.set_before AND x.bucket = c.bucket" \
    "                    AND x.rule = y.rule);" \
    /* Decision changes between two runs, over the graphs (by content) and shims both reported on. Only the rules \
     * whose summaries differ are read, and in them only the decisions whose line hash the other set lacks: the \
     * same hash is taken for the same decision (64-bit). */ \
    "CREATE VIEW " CHANGES " AS" \
    "  SELECT c.run_before, c.run_after, g.name AS graph, g.mode AS mode, s.name AS shim, x.rule, x.class, x.covers," \
    "         x.outcome || CASE WHEN x.reason IS NULL THEN '' ELSE ': ' || x.reason END AS outcome_before," \
    "         y.outcome || CASE WHEN y.reason IS NULL THEN '' ELSE ': ' || y.reason END AS outcome_after" \
    "  FROM " RULE_PAIRS " c CROSS JOIN graphs g ON g.id = c.graph_id CROSS JOIN shims s ON s.id = c.shim_id" \
    "  CROSS JOIN set_decisions x ON x.set_id = c.set_before AND x.rule = c.rule" \
    "       AND NOT EXISTS (SELECT 1 FROM set_decisions z" \
    "                       WHERE z.set_id = c.set_after AND z.rule = c.rule AND z.line = x.line)" \
    "  LEFT JOIN set_decisions y ON y.set_id = c.set_after AND y.rule = c.rule" \
    "       AND y.class = x.class AND y.covers = x.covers" \
    "  WHERE y.outcome IS NULL OR y.outcome <> x.outcome OR y.reason IS NOT x.reason" \
    "  UNION ALL" \
    "  SELECT c.run_before, c.run_after, g.name, g.mode, s.name, y.rule, y.class, y.covers, NULL," \
    "         y.outcome || CASE WHEN y.reason IS NULL THEN '' ELSE ': ' || y.reason END" \
    "  FROM " RULE_PAIRS " c CROSS JOIN graphs g ON g.id = c.graph_id CROSS JOIN shims s ON s.id = c.shim_id" \
    "  CROSS JOIN set_decisions y ON c.keys_before IS NOT c.keys_after" \
    "       AND y.set_id = c.set_after AND y.rule = c.rule" \
    "  WHERE NOT EXISTS (SELECT 1 FROM set_decisions z" \
    "                    WHERE z.set_id = c.set_before AND z.rule = c.rule AND z.line = y.line)" \
    "    AND NOT EXISTS (SELECT 1 FROM set_decisions x" \
    "                    WHERE x.set_id = c.set_before AND x.rule = c.rule AND x.class = y.class" \
    "                    AND x.covers = y.covers);"

/* Version 3 → 4, its decisions part: a report's decisions are stored once per distinct content. A decision set is
 * named by its report's digest (the sha256 of its decision lines), so a report identical to one already stored adds
 * a `reports` row and nothing else. Every existing report's set is the decisions of the first report with its digest;
 * `decisions` becomes a view with its former columns, and the views built on it are rebuilt over the sets: a run's
 * reports pair with another run's by graph (name, mode and content: one `graphs` row) and shim. */
#define MIGRATION_4_DECISION_SETS \
    "CREATE INDEX temp_reports_digest ON reports(digest, id);" \
    "CREATE TABLE decision_sets (" \
    "  id INTEGER PRIMARY KEY," \
    "  digest TEXT NOT NULL UNIQUE," \
    "  fired INTEGER NOT NULL, refused INTEGER NOT NULL, held INTEGER NOT NULL," \
    "  buckets BLOB" /* by the rules' 16 buckets: the sums of their hashes, then of their names' (set_rules) */ \
    ");" \
    "INSERT INTO decision_sets (digest, fired, refused, held)" \
    "  SELECT r.digest, r.fired, r.refused, r.held FROM reports r" \
    "  WHERE r.id = (SELECT min(x.id) FROM reports x WHERE x.digest = r.digest) ORDER BY r.id;" \
    /* Keyed by rule and line hash within a set (the key's columns first, in its order): a rule's decisions are one \
     * range, and whether another set holds the same decision is one seek. `line` is a 64-bit hash of the rule, \
     * class, covers, outcome and reason (db.c's decision_line). */ \
    "CREATE TABLE set_decisions (" \
    "  set_id INTEGER NOT NULL REFERENCES decision_sets(id) ON DELETE CASCADE," \
    "  rule TEXT NOT NULL, line INTEGER NOT NULL, seq INTEGER NOT NULL, class TEXT NOT NULL, covers TEXT NOT NULL," \
    "  outcome TEXT NOT NULL CHECK (outcome IN ('fired', 'refused', 'held')), reason TEXT," \
    "  PRIMARY KEY (set_id, rule, line, seq)" \
    ") WITHOUT ROWID;" \
    "INSERT INTO set_decisions (set_id, seq, rule, class, covers, outcome, reason, line)" \
    "  SELECT s.id, d.seq, d.rule, d.class, d.covers, d.outcome, d.reason," \
    "         fusecheck_decision_line(d.rule, d.class, d.covers, d.outcome, d.reason) FROM decision_sets s" \
    "  JOIN decisions d ON d.report_id = (SELECT min(x.id) FROM reports x WHERE x.digest = s.digest)" \
    "  ORDER BY s.id, d.seq;" \
    /* Each set's decisions summed up per rule: how many, how many fired, the sum of their line hashes and the sum \
     * of their keys' hashes (rule, class, covers) (mod 2^63, fusecheck_rule_hash): two sets' decisions of a rule \
     * differ only where the sums do, and one decides something the other does not only where the keys' sums do. A \
     * rule falls in one of 16 buckets by its name (fusecheck_rule_bucket); a set's `buckets` sums its rules' hashes \
     * and names by bucket, so two sets are compared rule by rule only in the buckets whose sums differ. */ \
    "CREATE TABLE set_rules (" \
    "  set_id INTEGER NOT NULL REFERENCES decision_sets(id) ON DELETE CASCADE, bucket INTEGER NOT NULL," \
    "  rule TEXT NOT NULL, decisions INTEGER NOT NULL, fired INTEGER NOT NULL, hash INTEGER NOT NULL," \
    "  keys INTEGER NOT NULL," \
    "  PRIMARY KEY (set_id, bucket, rule)" \
    ") WITHOUT ROWID;" \
    "INSERT INTO set_rules (set_id, bucket, rule, decisions, fired, hash, keys)" \
    "  SELECT set_id, fusecheck_rule_bucket(rule), rule, count(*), sum(outcome = 'fired')," \
    "         fusecheck_rule_hash(line), fusecheck_rule_hash(fusecheck_key_line(rule, class, covers))" \
    "  FROM set_decisions GROUP BY set_id, rule;" \
    "UPDATE decision_sets SET buckets = (SELECT fusecheck_buckets(bucket, hash, rule) FROM set_rules" \
    "                                    WHERE set_id = decision_sets.id);" \
    "CREATE TABLE rule_buckets (n INTEGER PRIMARY KEY);" \
    "INSERT INTO rule_buckets VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9), (10), (11), (12), (13), (14)," \
    "  (15);" \
    /* the sets in which a rule fired: what rules_never_fired asks */ \
    "CREATE INDEX set_rules_fired ON set_rules(rule, set_id) WHERE fired > 0;" \
    "CREATE TABLE reports_v4 (" \
    "  id INTEGER PRIMARY KEY," \
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE," \
    "  graph_id INTEGER NOT NULL REFERENCES graphs(id)," \
    "  shim_id INTEGER NOT NULL REFERENCES shims(id)," \
    "  set_id INTEGER NOT NULL REFERENCES decision_sets(id)," \
    "  optimize_ms REAL NOT NULL," \
    "  rewritten TEXT" \
    ");" \
    "INSERT INTO reports_v4 (id, run_id, graph_id, shim_id, set_id, optimize_ms, rewritten)" \
    "  SELECT r.id, r.run_id, r.graph_id, r.shim_id, s.id, r.optimize_ms, r.rewritten FROM reports r" \
    "  JOIN decision_sets s ON s.digest = r.digest ORDER BY r.id;" \
    "DROP VIEW decision_rows; DROP VIEW latest_reports; DROP VIEW report_rows; DROP VIEW decision_changes;" \
    "DROP VIEW changed_report_pairs; DROP VIEW digest_changes; DROP VIEW rules_never_fired;" \
    "DROP VIEW rewritten_changes;" \
    "DROP TABLE decisions; DROP TABLE reports;" \
    "ALTER TABLE reports_v4 RENAME TO reports;" \
    "CREATE INDEX reports_run ON reports(run_id, graph_id, shim_id);" \
    "CREATE INDEX reports_graph_shim ON reports(graph_id, shim_id);" \
    "CREATE INDEX reports_set ON reports(set_id, run_id);" \
    /* Every report's decisions, with the columns the table had before version 4. */ \
    "CREATE VIEW decisions AS" \
    "  SELECT rep.id AS report_id, d.seq, d.rule, d.class, d.covers, d.outcome, d.reason" \
    "  FROM reports rep JOIN set_decisions d ON d.set_id = rep.set_id;" \
    /* Every decision with its run, graph and shim by name. */ \
    "CREATE VIEW decision_rows AS" \
    "  SELECT rep.run_id AS run, g.name AS graph, g.mode AS mode, s.name AS shim, d.seq, d.rule, d.class," \
    "         d.covers, d.outcome, d.reason," \
    "         d.outcome || CASE WHEN d.reason IS NULL THEN '' ELSE ': ' || d.reason END AS outcome_text" \
    "  FROM reports rep JOIN set_decisions d ON d.set_id = rep.set_id" \
    "  JOIN graphs g ON g.id = rep.graph_id JOIN shims s ON s.id = rep.shim_id;" \
    /* Every report with its run, graph and shim by name, and its decisions' digest and counts. */ \
    "CREATE VIEW report_rows AS" \
    "  SELECT rep.id AS report, rep.run_id AS run, g.name AS graph, g.mode AS mode, s.name AS shim, ds.digest," \
    "         ds.fired, ds.refused, ds.held, rep.optimize_ms, rep.rewritten, g.sha256 AS graph_sha256" \
    "  FROM reports rep JOIN decision_sets ds ON ds.id = rep.set_id" \
    "  JOIN graphs g ON g.id = rep.graph_id JOIN shims s ON s.id = rep.shim_id;" \
    /* The latest report per graph name, mode and shim. */ \
    "CREATE VIEW latest_reports AS" \
    "  SELECT r.* FROM report_rows r" \
    "  WHERE r.report = (SELECT max(x.report) FROM report_rows x" \
    "                    WHERE x.graph = r.graph AND x.mode IS r.mode AND x.shim = r.shim);" \
    CHANGE_VIEWS("run_pairs", "changed_report_pairs", "changed_buckets", "changed_rule_pairs", "decision_changes") \
    /* Report digests that changed between two runs, on the same graph (by content) and shim. */ \
    "CREATE VIEW digest_changes AS" \
    "  SELECT c.run_before, c.run_after, g.name AS graph, g.mode AS mode, s.name AS shim," \
    "         x.digest AS digest_before, y.digest AS digest_after" \
    "  FROM changed_report_pairs c JOIN graphs g ON g.id = c.graph_id JOIN shims s ON s.id = c.shim_id" \
    "  JOIN decision_sets x ON x.id = c.set_before JOIN decision_sets y ON y.id = c.set_after;" \
    /* Graphs (by name and mode) whose content changed between two runs: their reports are not compared. */ \
    "CREATE VIEW graph_changes AS" \
    "  SELECT p.run_before, p.run_after, gx.name AS graph, gx.mode AS mode, gx.ops AS ops_before," \
    "         gy.ops AS ops_after, gx.sha256 AS sha256_before, gy.sha256 AS sha256_after" \
    "  FROM run_pairs p JOIN graphs gx JOIN graphs gy ON gy.name = gx.name AND gy.mode IS gx.mode" \
    "       AND gy.id <> gx.id" \
    "  WHERE EXISTS (SELECT 1 FROM reports x WHERE x.run_id = p.run_before AND x.graph_id = gx.id)" \
    "    AND EXISTS (SELECT 1 FROM reports y WHERE y.run_id = p.run_after AND y.graph_id = gy.id)" \
    "    AND NOT EXISTS (SELECT 1 FROM reports y WHERE y.run_id = p.run_after AND y.graph_id = gx.id);" \
    /* Steps of a run's table that fired on no graph in that run. */ \
    "CREATE VIEW rules_never_fired AS" \
    "  SELECT st.run_id AS run, st.seq, st.name AS rule FROM steps st" \
    "  WHERE NOT EXISTS (SELECT 1 FROM set_rules r INDEXED BY set_rules_fired JOIN reports rep ON rep.set_id = r.set_id" \
    "                    WHERE r.rule = st.name AND r.fired > 0 AND rep.run_id = st.run_id);" \
    /* Reports of one graph and shim whose rewritten graph changed between two runs. */ \
    "CREATE VIEW rewritten_changes AS" \
    "  SELECT p.run_before, p.run_after, g.name AS graph, g.mode AS mode, s.name AS shim," \
    "         x.rewritten AS rewritten_before, y.rewritten AS rewritten_after, x.set_id = y.set_id AS same_decisions" \
    "  FROM run_pairs p JOIN reports x ON x.run_id = p.run_before" \
    "  JOIN reports y ON y.run_id = p.run_after AND y.graph_id = x.graph_id AND y.shim_id = x.shim_id" \
    "  JOIN graphs g ON g.id = x.graph_id JOIN shims s ON s.id = x.shim_id" \
    "  WHERE x.rewritten <> y.rewritten;"

/* Version 3 → 4, its tolerance part: a tolerance run's rows and steps for one graph and shim are stored once per
 * distinct content (a set named by the sha256 its writer computes over them); `run_tolerances` says which set each
 * run found. Rows from before version 4 keep a set of their own each, named by no digest (NULL: never shared, never
 * merged with another). `tolerances`
 * and `tolerance_steps` become views with their former columns (`id` now the set row's position), and the
 * regression views compare a run's set with the latest earlier run's of the same graph and shim. */
#define MIGRATION_4_TOLERANCE_SETS \
    "CREATE TABLE tolerance_sets (id INTEGER PRIMARY KEY, digest TEXT UNIQUE);" \
    "CREATE TABLE run_tolerances (" \
    "  id INTEGER PRIMARY KEY," \
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE," \
    "  graph_id INTEGER NOT NULL REFERENCES graphs(id), shim_id INTEGER NOT NULL REFERENCES shims(id)," \
    "  set_id INTEGER NOT NULL REFERENCES tolerance_sets(id)" \
    ");" \
    "CREATE INDEX run_tolerances_key ON run_tolerances(graph_id, shim_id, run_id);" \
    "CREATE INDEX run_tolerances_run ON run_tolerances(run_id);" \
    "CREATE TABLE set_tolerances (" \
    "  set_id INTEGER NOT NULL REFERENCES tolerance_sets(id) ON DELETE CASCADE, seq INTEGER NOT NULL," \
    "  backend TEXT NOT NULL, op TEXT NOT NULL, tensor TEXT NOT NULL, elements INTEGER NOT NULL," \
    "  max_abs REAL NOT NULL, max_rel REAL NOT NULL, nmse REAL NOT NULL, bound REAL NOT NULL, pass INTEGER NOT NULL," \
    "  ratio REAL, worst INTEGER, lane REAL, reference REAL," \
    "  PRIMARY KEY (set_id, seq)" \
    ") WITHOUT ROWID;" \
    "CREATE TABLE set_tolerance_steps (" \
    "  set_id INTEGER NOT NULL REFERENCES tolerance_sets(id) ON DELETE CASCADE, seq INTEGER NOT NULL," \
    "  backend TEXT NOT NULL, step INTEGER NOT NULL, tensor TEXT NOT NULL, rows INTEGER NOT NULL," \
    "  nmse REAL NOT NULL, kl REAL NOT NULL, top1_agree INTEGER NOT NULL, max_abs REAL NOT NULL," \
    "  PRIMARY KEY (set_id, seq)" \
    ") WITHOUT ROWID;" \
    "INSERT INTO tolerance_sets (digest)" \
    "  SELECT printf('v3 run %d graph %d shim %d', run_id, graph_id, shim_id) FROM" \
    "  (SELECT run_id, graph_id, shim_id FROM tolerances UNION SELECT run_id, graph_id, shim_id FROM tolerance_steps)" \
    "  ORDER BY run_id, graph_id, shim_id;" \
    "INSERT INTO run_tolerances (run_id, graph_id, shim_id, set_id)" \
    "  SELECT k.run_id, k.graph_id, k.shim_id, s.id FROM" \
    "  (SELECT run_id, graph_id, shim_id FROM tolerances UNION SELECT run_id, graph_id, shim_id FROM tolerance_steps) k" \
    "  JOIN tolerance_sets s ON s.digest = printf('v3 run %d graph %d shim %d', k.run_id, k.graph_id, k.shim_id)" \
    "  ORDER BY s.id;" \
    "INSERT INTO set_tolerances (set_id, seq, backend, op, tensor, elements, max_abs, max_rel, nmse, bound, pass," \
    "  ratio, worst, lane, reference)" \
    "  SELECT rt.set_id, row_number() OVER (PARTITION BY rt.set_id ORDER BY t.id) - 1, t.backend, t.op, t.tensor," \
    "         t.elements, t.max_abs, t.max_rel, t.nmse, t.bound, t.pass, t.ratio, t.worst, t.lane, t.reference" \
    "  FROM tolerances t JOIN run_tolerances rt ON rt.run_id = t.run_id AND rt.graph_id = t.graph_id" \
    "       AND rt.shim_id = t.shim_id;" \
    "INSERT INTO set_tolerance_steps (set_id, seq, backend, step, tensor, rows, nmse, kl, top1_agree, max_abs)" \
    "  SELECT rt.set_id, row_number() OVER (PARTITION BY rt.set_id ORDER BY t.id) - 1, t.backend, t.step, t.tensor," \
    "         t.rows, t.nmse, t.kl, t.top1_agree, t.max_abs" \
    "  FROM tolerance_steps t JOIN run_tolerances rt ON rt.run_id = t.run_id AND rt.graph_id = t.graph_id" \
    "       AND rt.shim_id = t.shim_id;" \
    "UPDATE tolerance_sets SET digest = NULL;" /* only the sets carried over exist yet: none named by content */ \
    "DROP VIEW tolerance_regressions; DROP VIEW tolerance_step_regressions;" \
    "DROP TABLE tolerances; DROP TABLE tolerance_steps;" \
    /* Every tolerance row of every run, with the columns the table had before version 4. */ \
    "CREATE VIEW tolerances AS" \
    "  SELECT t.seq AS id, rt.run_id, rt.graph_id, rt.shim_id, t.backend, t.op, t.tensor, t.elements, t.max_abs," \
    "         t.max_rel, t.nmse, t.bound, t.pass, t.ratio, t.worst, t.lane, t.reference" \
    "  FROM run_tolerances rt JOIN set_tolerances t ON t.set_id = rt.set_id;" \
    "CREATE VIEW tolerance_steps AS" \
    "  SELECT t.seq AS id, rt.run_id, rt.graph_id, rt.shim_id, t.backend, t.step, t.tensor, t.rows, t.nmse, t.kl," \
    "         t.top1_agree, t.max_abs" \
    "  FROM run_tolerances rt JOIN set_tolerance_steps t ON t.set_id = rt.set_id;" \
    /* A run's tolerance set for a graph and shim beside the latest earlier run's, when they differ. */ \
    "CREATE VIEW tolerance_set_pairs AS" \
    "  SELECT rt.run_id AS run, prev.run_id AS previous_run, rt.graph_id, rt.shim_id, rt.set_id AS set_after," \
    "         prev.set_id AS set_before" \
    "  FROM run_tolerances rt JOIN run_tolerances prev ON prev.id = (SELECT x.id FROM run_tolerances x" \
    "       WHERE x.graph_id = rt.graph_id AND x.shim_id = rt.shim_id AND x.run_id < rt.run_id" \
    "       ORDER BY x.run_id DESC, x.id DESC LIMIT 1)" \
    "  WHERE prev.set_id <> rt.set_id;" \
    /* Tolerance results worse than the same launch's in the latest earlier run of that graph and shim: failing now, \
     * or a larger NMSE. */ \
    "CREATE VIEW tolerance_regressions AS" \
    "  SELECT c.run, c.previous_run, g.name AS graph, g.mode AS mode, s.name AS shim, t.backend, t.op, t.tensor," \
    "         p.nmse AS nmse_before, t.nmse AS nmse_after, p.pass AS pass_before, t.pass AS pass_after" \
    "  FROM tolerance_set_pairs c JOIN graphs g ON g.id = c.graph_id JOIN shims s ON s.id = c.shim_id" \
    "  JOIN set_tolerances t ON t.set_id = c.set_after" \
    "  JOIN set_tolerances p ON p.set_id = c.set_before AND p.backend = t.backend AND p.op = t.op" \
    "       AND p.tensor = t.tensor" \
    "  WHERE (p.pass = 1 AND t.pass = 0) OR t.nmse > p.nmse;" \
    /* End-to-end figures worse than the same step's in the latest earlier run of that graph and shim. */ \
    "CREATE VIEW tolerance_step_regressions AS" \
    "  SELECT c.run, c.previous_run, g.name AS graph, g.mode AS mode, s.name AS shim, t.backend, t.step, t.tensor," \
    "         p.nmse AS nmse_before, t.nmse AS nmse_after, p.kl AS kl_before, t.kl AS kl_after," \
    "         p.top1_agree AS top1_before, t.top1_agree AS top1_after, t.rows" \
    "  FROM tolerance_set_pairs c JOIN graphs g ON g.id = c.graph_id JOIN shims s ON s.id = c.shim_id" \
    "  JOIN set_tolerance_steps t ON t.set_id = c.set_after" \
    "  JOIN set_tolerance_steps p ON p.set_id = c.set_before AND p.backend = t.backend AND p.step = t.step" \
    "       AND p.tensor = t.tensor" \
    "  WHERE t.top1_agree < p.top1_agree OR t.nmse > p.nmse OR t.kl > p.kl;"

/* Version 3 → 4, its proofs part: which solver gave a verdict (`z3`, the oracle's; `cvc5` re-deciding the same
 * query from its SMT-LIB text under prove --cross-check), and the queries two solvers decided differently. */
#define MIGRATION_4_SOLVERS \
    "ALTER TABLE proofs ADD COLUMN solver TEXT NOT NULL DEFAULT 'z3';" \
    "DROP VIEW proofs_not_proved;" \
    "CREATE VIEW proofs_not_proved AS" \
    "  SELECT run_id AS run, rule, obligation, bound, verdict, reason, ms, counterexample FROM proofs" \
    "  WHERE verdict <> 'proved' AND solver = 'z3';" \
    "CREATE VIEW proof_disagreements AS" \
    "  SELECT a.run_id AS run, a.rule, a.obligation, a.verdict AS z3, b.solver, b.verdict AS other" \
    "  FROM proofs a JOIN proofs b ON b.run_id = a.run_id AND b.rule = a.rule AND b.obligation = a.obligation" \
    "       AND b.solver <> a.solver" \
    "  WHERE a.solver = 'z3' AND a.verdict <> b.verdict AND a.verdict <> 'unknown' AND b.verdict <> 'unknown';"

/* Version 3 → 4: the parts above, in order. */
static const char migration_4[] = MIGRATION_4_DECISION_SETS MIGRATION_4_TOLERANCE_SETS MIGRATION_4_SOLVERS;

/* Version 4 → 5: what became of a refutation's replay (`replay`: `fails` when the counterexample, run through the
 * optimizer as a graph, makes diff fail; `passes` when it does not; `unbuilt` when no graph could be made; NULL
 * when none was tried) and how often the rule fired there; which rules were proved (`ruleset`: `fusecheck`, or
 * `seed` under --seed-rules); and the obligations whose verdict or replay changed since the previous run that
 * asked the same one of the same solver and rules. */
static const char migration_5[] =
    "ALTER TABLE proofs ADD COLUMN replay TEXT CHECK (replay IN ('fails', 'passes', 'unbuilt'));"
    "ALTER TABLE proofs ADD COLUMN replay_fired INTEGER;"
    "ALTER TABLE proofs ADD COLUMN ruleset TEXT NOT NULL DEFAULT 'fusecheck' CHECK (ruleset IN ('fusecheck', 'seed'));"
    "CREATE INDEX proofs_obligation ON proofs(rule, obligation, solver, ruleset, run_id);"
    "CREATE VIEW proof_changes AS"
    "  SELECT b.run_id AS run, a.run_id AS previous_run, b.rule, b.obligation, b.solver, b.ruleset,"
    "         a.verdict AS verdict_before, b.verdict AS verdict_after, a.replay AS replay_before,"
    "         b.replay AS replay_after, a.replay_fired AS fired_before, b.replay_fired AS fired_after"
    "  FROM proofs b JOIN proofs a ON a.rule = b.rule AND a.obligation = b.obligation AND a.solver = b.solver"
    "       AND a.ruleset = b.ruleset"
    "       AND a.run_id = (SELECT max(c.run_id) FROM proofs c WHERE c.rule = b.rule AND c.obligation = b.obligation"
    "                       AND c.solver = b.solver AND c.ruleset = b.ruleset AND c.run_id < b.run_id)"
    "  WHERE a.verdict <> b.verdict"
    "     OR (a.replay IS NOT NULL AND b.replay IS NOT NULL"
    "         AND (a.replay <> b.replay OR a.replay_fired IS NOT b.replay_fired));";

/* Version 5 → 6: the evaluator held to llama.cpp (fusecheck crosscheck): a row a position of a token run of one GGUF
 * file through both — the file's digest and matrices' format, decode or prefill, the llama.cpp release, the largest
 * difference, the largest difference over the largest llama.cpp logit, the NMSE and the bound it is held to, both
 * arg-maxes, and whether the position passed — with the failures' view and the regressions' (a position whose NMSE
 * grew, or whose top-1 stopped agreeing, since the latest earlier run of the same model, format and mode). */
static const char migration_6[] =
    "CREATE TABLE crosschecks ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  model TEXT NOT NULL, family TEXT NOT NULL, file_sha256 TEXT NOT NULL, weights TEXT NOT NULL,"
    "  mode TEXT NOT NULL CHECK (mode IN ('decode', 'prefill')),"
    "  engine TEXT NOT NULL, position INTEGER NOT NULL, token INTEGER NOT NULL,"
    "  max_abs REAL NOT NULL, rel REAL NOT NULL, nmse REAL NOT NULL, bound REAL NOT NULL,"
    "  top1_fusecheck INTEGER NOT NULL, top1_llama INTEGER NOT NULL, pass INTEGER NOT NULL"
    ");"
    "CREATE INDEX crosschecks_key ON crosschecks(model, weights, mode, position, run_id);"
    "CREATE VIEW crosscheck_failures AS"
    "  SELECT run_id AS run, model, family, weights, mode, position, token, max_abs, rel, nmse, bound,"
    "         top1_fusecheck, top1_llama FROM crosschecks WHERE pass = 0;"
    "CREATE VIEW crosscheck_regressions AS"
    "  SELECT c.run_id AS run, p.run_id AS previous_run, c.model, c.weights, c.mode, c.position,"
    "         p.nmse AS nmse_before, c.nmse AS nmse_after,"
    "         p.top1_fusecheck = p.top1_llama AS top1_before, c.top1_fusecheck = c.top1_llama AS top1_after"
    "  FROM crosschecks c JOIN crosschecks p ON p.id = (SELECT q.id FROM crosschecks q"
    "       WHERE q.model = c.model AND q.weights = c.weights AND q.mode = c.mode AND q.position = c.position"
    "       AND q.run_id < c.run_id ORDER BY q.run_id DESC LIMIT 1)"
    "  WHERE c.nmse > p.nmse OR (p.top1_fusecheck = p.top1_llama AND c.top1_fusecheck <> c.top1_llama);";

/* Version 6 → 7: a run stopped by a signal it caught (SIGINT, SIGTERM) ends `interrupted` — what it committed is
 * whole, the rest was never done — apart from `incomplete` (still running, or killed before it could say). SQLite
 * cannot change a CHECK constraint in place: the runs table is rebuilt, every row kept under its id (db.c runs the
 * migrations with foreign keys off, so the rows that refer to runs stay). And two views for comparing runs: each
 * pair's statuses (a comparison is of partial results unless both are complete), and what the later run of a pair
 * lacks of the earlier's — the graphs (by name and mode) and the shims the earlier reported on and the later did
 * not. */
static const char migration_7[] =
    "CREATE TABLE runs_v6 AS SELECT * FROM runs;"
    "DROP TABLE runs;"
    "CREATE TABLE runs ("
    "  id INTEGER PRIMARY KEY,"
    "  kind TEXT NOT NULL,"
    "  started TEXT NOT NULL,"
    "  ended TEXT,"
    "  status TEXT NOT NULL CHECK (status IN ('complete', 'incomplete', 'failed', 'interrupted')),"
    "  git_rev TEXT, host TEXT, version TEXT NOT NULL, command TEXT NOT NULL,"
    "  origin TEXT"
    ");"
    "INSERT INTO runs (id, kind, started, ended, status, git_rev, host, version, command, origin)"
    "  SELECT id, kind, started, ended, status, git_rev, host, version, command, origin FROM runs_v6 ORDER BY id;"
    "DROP TABLE runs_v6;"
    "CREATE VIEW run_pair_status AS"
    "  SELECT p.run_before, p.run_after, a.status AS status_before, b.status AS status_after,"
    "         a.status = 'complete' AND b.status = 'complete' AS both_complete"
    "  FROM run_pairs p JOIN runs a ON a.id = p.run_before JOIN runs b ON b.id = p.run_after;"
    "CREATE VIEW run_pair_gaps AS"
    "  SELECT p.run_before, p.run_after, 'graph' AS what, g.name AS graph, g.mode AS mode, NULL AS shim"
    "  FROM run_pairs p JOIN reports x ON x.run_id = p.run_before JOIN graphs g ON g.id = x.graph_id"
    "  WHERE x.id = (SELECT min(x2.id) FROM reports x2 JOIN graphs g2 ON g2.id = x2.graph_id"
    "                WHERE x2.run_id = p.run_before AND g2.name = g.name AND g2.mode IS g.mode)"
    "    AND NOT EXISTS (SELECT 1 FROM reports y JOIN graphs gy ON gy.id = y.graph_id"
    "                    WHERE y.run_id = p.run_after AND gy.name = g.name AND gy.mode IS g.mode)"
    "  UNION ALL"
    "  SELECT p.run_before, p.run_after, 'shim', NULL, NULL, s.name"
    "  FROM run_pairs p JOIN shims s"
    "  WHERE EXISTS (SELECT 1 FROM reports x WHERE x.run_id = p.run_before AND x.shim_id = s.id)"
    "    AND NOT EXISTS (SELECT 1 FROM reports y WHERE y.run_id = p.run_after AND y.shim_id = s.id);";

/* Version 7 → 8: every run names the optimizer whose reports it holds — `optimizer_name` and `optimizer_version`
 * from its greeting, `optimizer_command` the command that started it; fusecheck's own optimizer in process is
 * ('fusecheck', the run's version, NULL), which every run before version 8 was — and every decision keeps its
 * refusal's stable code (`code`, NULL where none was recorded: rows before version 8, firings, holds). Two runs are
 * of different optimizers when their names or commands differ (fusecheck's own in process and `fusecheck optimize
 * --serve` are two); `optimizer_disagreements` lists, for each such pair of runs, the decisions of their reports of
 * the same graph (by content) and shim that differ by rule, class, covers, outcome or code: a decision of the
 * earlier run with no like one in the later run (decision_after the later's decision at the same rule, class and
 * covers, or NULL), then a decision of the later run at a rule, class and covers the earlier never decided. The
 * reason's words are each optimizer's own and are not compared. */
static const char migration_8[] =
    "ALTER TABLE runs ADD COLUMN optimizer_name TEXT NOT NULL DEFAULT 'fusecheck';"
    "ALTER TABLE runs ADD COLUMN optimizer_version TEXT;"
    "ALTER TABLE runs ADD COLUMN optimizer_command TEXT;"
    "UPDATE runs SET optimizer_version = version;"
    "ALTER TABLE set_decisions ADD COLUMN code TEXT;"
    "CREATE VIEW optimizer_pairs AS"
    "  SELECT p.run_before, p.run_after, a.optimizer_name AS optimizer_before, a.optimizer_command AS command_before,"
    "         b.optimizer_name AS optimizer_after, b.optimizer_command AS command_after"
    "  FROM run_pairs p JOIN runs a ON a.id = p.run_before JOIN runs b ON b.id = p.run_after"
    "  WHERE a.optimizer_name <> b.optimizer_name OR a.optimizer_command IS NOT b.optimizer_command;"
    "CREATE VIEW optimizer_report_pairs AS"
    "  SELECT o.*, x.graph_id, x.shim_id, x.set_id AS set_before, y.set_id AS set_after"
    "  FROM optimizer_pairs o JOIN reports x ON x.run_id = o.run_before"
    "  JOIN reports y ON y.run_id = o.run_after AND y.graph_id = x.graph_id AND y.shim_id = x.shim_id"
    "  WHERE x.set_id <> y.set_id;"
    "CREATE VIEW optimizer_disagreements AS"
    "  SELECT c.run_before, c.run_after, c.optimizer_before, c.optimizer_after, g.name AS graph, g.mode AS mode,"
    "         s.name AS shim, x.rule, x.class, x.covers,"
    "         x.outcome || CASE WHEN x.code IS NULL THEN '' ELSE ' {' || x.code || '}' END AS decision_before,"
    "         (SELECT y.outcome || CASE WHEN y.code IS NULL THEN '' ELSE ' {' || y.code || '}' END"
    "          FROM set_decisions y WHERE y.set_id = c.set_after AND y.rule = x.rule AND y.class = x.class"
    "          AND y.covers = x.covers ORDER BY y.seq LIMIT 1) AS decision_after"
    "  FROM optimizer_report_pairs c JOIN graphs g ON g.id = c.graph_id JOIN shims s ON s.id = c.shim_id"
    "  JOIN set_decisions x ON x.set_id = c.set_before"
    "  WHERE NOT EXISTS (SELECT 1 FROM set_decisions y WHERE y.set_id = c.set_after AND y.rule = x.rule"
    "                    AND y.class = x.class AND y.covers = x.covers AND y.outcome = x.outcome"
    "                    AND y.code IS x.code)"
    "  UNION ALL"
    "  SELECT c.run_before, c.run_after, c.optimizer_before, c.optimizer_after, g.name, g.mode, s.name, y.rule,"
    "         y.class, y.covers, NULL,"
    "         y.outcome || CASE WHEN y.code IS NULL THEN '' ELSE ' {' || y.code || '}' END"
    "  FROM optimizer_report_pairs c JOIN graphs g ON g.id = c.graph_id JOIN shims s ON s.id = c.shim_id"
    "  JOIN set_decisions y ON y.set_id = c.set_after"
    "  WHERE NOT EXISTS (SELECT 1 FROM set_decisions x WHERE x.set_id = c.set_before AND x.rule = y.rule"
    "                    AND x.class = y.class AND x.covers = y.covers);";

/* Version 8 → 9, its runs part: each run's configuration (`config`: its command line without the program, the
 * results file and the options that change nothing it finds — db.c's run_config, the SQL function
 * fusecheck_run_config — so two nights of one job have one configuration whatever file they write), and how many of
 * the rules' fixture cases it ran and how many failed (check --fixtures; NULL when it ran none, and in runs before
 * version 9). A run's configuration is its kind, this text, its optimizer's name and command: models, modes, shims
 * (holds and seed rules are in their names), lift options and the optimizer are all in it. */
#define MIGRATION_9_RUNS \
    "ALTER TABLE runs ADD COLUMN config TEXT;" \
    "UPDATE runs SET config = fusecheck_run_config(command);" \
    "ALTER TABLE runs ADD COLUMN fixture_cases INTEGER;" \
    "ALTER TABLE runs ADD COLUMN fixture_failures INTEGER;" \
    "CREATE INDEX runs_config ON runs(kind, config, optimizer_name, optimizer_command, status, id);"

/* Version 8 → 9, its tolerance part: each row's largest absolute error's own bound (`max_abs_bound`: the bound at
 * the element whose |error| is largest; `bound` stays the bound of the worst error/bound element), NULL in rows
 * before version 9. */
#define MIGRATION_9_TOLERANCES \
    "ALTER TABLE set_tolerances ADD COLUMN max_abs_bound REAL;" \
    "DROP VIEW tolerances;" \
    "CREATE VIEW tolerances AS" \
    "  SELECT t.seq AS id, rt.run_id, rt.graph_id, rt.shim_id, t.backend, t.op, t.tensor, t.elements, t.max_abs," \
    "         t.max_rel, t.nmse, t.bound, t.pass, t.ratio, t.worst, t.lane, t.reference, t.max_abs_bound" \
    "  FROM run_tolerances rt JOIN set_tolerances t ON t.set_id = rt.set_id;"

/* Version 8 → 9: the decision changes of the latest check pair, by the steps decision_changes takes (report pairs
 * whose sets differ, the buckets whose sums differ, the rules whose summaries differ, the decisions whose line hash
 * the other set lacks), each step joined on the pair's two run ids: a view over run_pairs filtered afterwards would
 * read every pair of runs. */
#define LATEST_CHECK_CHANGES \
    CHANGE_VIEWS("latest_check_pair", "latest_check_report_pairs", "latest_check_buckets", "latest_check_rule_pairs", \
                 "latest_check_changes")

/* Version 8 → 9: what the later run of the latest check pair lacks of the earlier's (run_pair_gaps' rows for that
 * pair): each graph by name and mode, then each shim, each an index seek on the pair's run ids. */
#define LATEST_CHECK_GAPS \
    "CREATE INDEX reports_run_shim ON reports(run_id, shim_id);" \
    "CREATE VIEW latest_check_gaps AS" \
    "  SELECT p.run_before, p.run_after, 'graph' AS what, g.name AS graph, g.mode AS mode, NULL AS shim" \
    "  FROM latest_check_pair p CROSS JOIN graphs g" \
    "  WHERE EXISTS (SELECT 1 FROM reports x WHERE x.run_id = p.run_before AND x.graph_id = g.id)" \
    "    AND NOT EXISTS (SELECT 1 FROM graphs gy CROSS JOIN reports y ON y.run_id = p.run_after" \
    "                    AND y.graph_id = gy.id WHERE gy.name = g.name AND gy.mode IS g.mode)" \
    "  GROUP BY g.name, g.mode" \
    "  UNION ALL" \
    "  SELECT p.run_before, p.run_after, 'shim', NULL, NULL, s.name" \
    "  FROM latest_check_pair p CROSS JOIN shims s" \
    "  WHERE EXISTS (SELECT 1 FROM reports x WHERE x.run_id = p.run_before AND x.shim_id = s.id)" \
    "    AND NOT EXISTS (SELECT 1 FROM reports y WHERE y.run_id = p.run_after AND y.shim_id = s.id);"

/* Version 8 → 9, its views that pick runs by kind, so a query needs no run id: each run with the previous run of its
 * configuration (any status, and the latest complete one), the latest run of each kind, each kind's latest pair (its
 * newest complete run that has an earlier complete run of the same configuration, and that earlier run), and for
 * check runs that pair, its decision changes and its gaps. The changes and gaps join the pair's two run ids to
 * the reports' (run, graph, shim) index: no view is read per row of another. */
#define MIGRATION_9_PICKS \
    "CREATE VIEW previous_runs AS" \
    "  SELECT r.id AS run, r.kind, r.status, r.config," \
    "         (SELECT max(x.id) FROM runs x WHERE x.kind = r.kind AND x.config IS r.config" \
    "          AND x.optimizer_name = r.optimizer_name AND x.optimizer_command IS r.optimizer_command" \
    "          AND x.id < r.id) AS previous_run," \
    "         (SELECT max(x.id) FROM runs x WHERE x.kind = r.kind AND x.config IS r.config" \
    "          AND x.optimizer_name = r.optimizer_name AND x.optimizer_command IS r.optimizer_command" \
    "          AND x.status = 'complete' AND x.id < r.id) AS previous_complete" \
    "  FROM runs r;" \
    "CREATE VIEW latest_runs AS" \
    "  SELECT r.kind, r.id AS run, r.status, r.started, r.ended, r.config," \
    "         (SELECT max(x.id) FROM runs x WHERE x.kind = r.kind AND x.status = 'complete') AS latest_complete" \
    "  FROM runs r WHERE r.id = (SELECT max(x.id) FROM runs x WHERE x.kind = r.kind);" \
    "CREATE VIEW latest_pairs AS" \
    "  SELECT p.kind, p.previous_complete AS run_before, p.run AS run_after, p.config" \
    "  FROM previous_runs p" \
    "  WHERE p.run = (SELECT max(q.run) FROM previous_runs q WHERE q.kind = p.kind AND q.status = 'complete'" \
    "                 AND q.previous_complete IS NOT NULL);" \
    "CREATE VIEW latest_check_pair AS" \
    "  SELECT p.run_before, p.run_after, a.started AS started_before, b.started AS started_after, p.config" \
    "  FROM latest_pairs p JOIN runs a ON a.id = p.run_before JOIN runs b ON b.id = p.run_after" \
    "  WHERE p.kind = 'check';" \
    LATEST_CHECK_CHANGES LATEST_CHECK_GAPS

/* Version 8 → 9: the parts above, in order. */
static const char migration_9[] = MIGRATION_9_RUNS MIGRATION_9_TOLERANCES MIGRATION_9_PICKS;

/* The migrations in order: migrations[k] takes a file from version k to k + 1. */
static const char *const migrations[] = {migration_1, migration_2, migration_3, migration_4, migration_5,
                                         migration_6, migration_7, migration_8, migration_9};

/* The number of migrations (the schema version this build writes). */
int db_schema_migrations(const char *const **out)
{
    *out = migrations;
    return (int)(sizeof migrations / sizeof migrations[0]);
}
