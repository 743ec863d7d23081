#!/usr/bin/env bash
# End-to-end: `db diff` at scale and `db runs`/`db diff --json` — the runs it compares named first, the totals, a
# summary by rule and by graph, then the raw rows (covers in numeric order, at most --limit), --rule; the JSON parsed
# back by python3 and held to the text.
. "$(dirname "$0")/lib.bash" "$1"
db="$tmp/d.db"
models=(tiny-llama tiny-qwen3 --shim reference --shim none --db "$db" --no-progress)
expect 0 "check" -- "$fc" check "${models[@]}"
expect 0 "check --hold add_norm" -- "$fc" check "${models[@]}" --hold add_norm

# ── The text: runs, totals, summary, rows — in that order ────────────────────────────────────────────────────────
expect 1 "db diff of the held rule" -- "$fc" db diff 1 2 --db "$db" --limit 0
cp "$tmp/out" "$tmp/all"
contains "$tmp/all" "db diff: run 1 (check, complete, started " "the earlier run named"
contains "$tmp/all" "against run 2 (check, complete, started " "the later run named"
contains "$tmp/all" "  run 2: check --shim reference --shim none --hold add_norm tiny-llama tiny-qwen3" "each run's configuration"
contains "$tmp/all" "note: the runs are of different configurations" "another configuration said"
line_of() { grep -nF -- "$1" "$tmp/all" | head -1 | cut -d: -f1; }
total=$(line_of "decision changes from run 1 to run 2 over 12 reports both made")
by_rule=$(line_of "by rule:")
by_graph=$(line_of "by graph:")
rows=$(line_of "changes:")
first_row=$(grep -n ': fired -> ' "$tmp/all" | head -1 | cut -d: -f1)
[ -n "$total" ] && [ -n "$by_rule" ] && [ -n "$by_graph" ] && [ -n "$rows" ] && [ -n "$first_row" ] &&
  [ "$total" -lt "$by_rule" ] && [ "$by_rule" -lt "$by_graph" ] && [ "$by_graph" -lt "$rows" ] &&
  [ "$rows" -lt "$first_row" ] && ok || bad "totals ($total), by rule ($by_rule), by graph ($by_graph), rows ($rows, first $first_row) out of order"
n=$(sed -n "${total}p" "$tmp/all" | cut -d' ' -f1)
[ "$n" -gt 0 ] && [ "$(grep -c ': fired -> \|: (none) -> \|: refused\(: [^>]*\)\? -> \|: held -> ' "$tmp/all")" = "$n" ] && ok ||
  bad "the totals' $n changes are not the rows printed"
contains "$tmp/all" "  add_norm: " "add_norm summarised"
grep -q "^  add_norm.* stopped firing on [0-9]* graphs under 1 shim" "$tmp/all" && ok ||
  bad "no by-graph line says add_norm stopped firing on N graphs: $(sed -n "${by_graph},$((by_graph + 3))p" "$tmp/all")"

# ── --limit and --rule ───────────────────────────────────────────────────────────────────────────────────────────
expect 1 "db diff --limit 3" -- "$fc" db diff 1 2 --db "$db" --limit 3
contains "$tmp/out" "changes (the first 3 of $n; --limit 0 shows all):" "the limit said"
[ "$(grep -c ' -> ' "$tmp/out")" = 3 ] && ok || bad "--limit 3 printed $(grep -c ' -> ' "$tmp/out") rows"
expect 1 "db diff (the default limit)" -- "$fc" db diff 1 2 --db "$db"
[ "$(grep -c ' -> ' "$tmp/out")" -le 100 ] && ok || bad "the default limit printed more than 100 rows"
expect 1 "db diff --rule add_norm" -- "$fc" db diff 1 2 --db "$db" --rule add_norm --limit 0
contains "$tmp/out" "(rule add_norm only): 1 rule," "the rule named in the totals"
[ "$(grep ' -> ' "$tmp/out" | grep -vc ' add_norm add_norm ')" = 0 ] && ok || bad "--rule add_norm shows other rules"
[ "$(grep -c ' add_norm add_norm ' "$tmp/out")" -gt 0 ] && ok || bad "--rule add_norm shows none of its changes"
expect 0 "db diff --rule of a rule that did not change" -- "$fc" db diff 1 2 --db "$db" --rule glu_pair
contains "$tmp/out" "0 decision changes from run 1 to run 2" "no change in glu_pair"
expect 2 "db diff --limit -1" -- "$fc" db diff 1 2 --db "$db" --limit -1
contains "$tmp/err" "--limit -1: expected a count" "a bad limit named"
expect 2 "db runs --rule" -- "$fc" db runs --db "$db" --rule add_norm

# ── Covers in numeric order: [42, 43] before [102, 103] ──────────────────────────────────────────────────────────
expect 1 "db diff --json" -- "$fc" db diff 1 2 --db "$db" --json --limit 0
cp "$tmp/out" "$tmp/diff.json"
if command -v python3 >/dev/null; then
  python3 - "$tmp/diff.json" "$n" <<'EOF' && ok || bad "db diff --json"
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
assert list(d)[:3] == ["run_before", "run_after", "two_optimizers"], list(d)
assert d["run_before"]["id"] == 1 and d["run_after"]["id"] == 2 and d["run_after"]["kind"] == "check"
assert "--hold add_norm" in d["run_after"]["config"] and d["run_before"]["optimizer"]["command"] is None
assert d["changes_total"] == n == d["changes_shown"] == len(d["changes"]), (d["changes_total"], n)
assert sum(r["changes"] for r in d["rules"]) == n
assert sum(g["changes"] for g in d["graph_groups"]) == n
assert any(r["rule"] == "add_norm" and r["kinds"].get("stopped firing") for r in d["rules"])
assert d["failed"] is True and d["partial"] is False and d["reports_compared"] == 12
key = lambda c: (c["graph"], c["mode"], c["shim"], c["rule"])
rows = d["changes"]
numeric = all(key(a) != key(b) or a["covers"] <= b["covers"] for a, b in zip(rows, rows[1:]))
as_text = any(key(a) == key(b) and str(a["covers"]) > str(b["covers"]) for a, b in zip(rows, rows[1:]))
assert numeric, "covers not in numeric order"
assert as_text, "no two rows whose numeric order differs from their order as text: the check proves nothing"
EOF
  expect 1 "db diff --json --limit 2" -- "$fc" db diff 1 2 --db "$db" --json --limit 2
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["changes_shown"] == 2 == len(d["changes"]) and d["changes_total"] > 2' "$tmp/out" && ok || bad "--json --limit 2"
  expect 0 "db runs --json" -- "$fc" db runs --db "$db" --json
  python3 - "$tmp/out" <<'EOF' && ok || bad "db runs --json"
import json, sys
runs = json.load(open(sys.argv[1]))
assert [r["id"] for r in runs] == [1, 2]
assert all(r["kind"] == "check" and r["status"] == "complete" and r["reports"] == 12 for r in runs), runs
assert runs[0]["config"] == "check --shim reference --shim none tiny-llama tiny-qwen3", runs[0]["config"]
assert "--hold add_norm" in runs[1]["config"] and "--db" not in runs[1]["config"]
assert runs[0]["optimizer_command"] is None
assert runs[0]["fixture_cases"] is None
EOF
  # the same run against itself: nothing changed, the gate passes
  expect 0 "db diff --json of a run with itself" -- "$fc" db diff 1 1 --db "$db" --json
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["changes_total"] == 0 and d["failed"] is False and d["changes"] == []' "$tmp/out" && ok || bad "db diff 1 1 --json"
else
  echo "note: python3 is not installed: the JSON not parsed"
fi

# the text orders the same rows alike (the JSON's first row is the text's first row)
first_text=$(sed -n "${first_row}p" "$tmp/all")
case "$first_text" in
  "tiny-llama batch:4 "*) ok ;;
  *) bad "the first raw row is not tiny-llama batch:4's: $first_text" ;;
esac
echo "db_diff: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
