#!/usr/bin/env bash
# End-to-end: `check --json` and `prove --json` — one JSON document on stdout, parsed back by python3 and held to
# what results.db and the text say.
. "$(dirname "$0")/lib.bash" "$1"
if ! command -v python3 >/dev/null; then
  echo "json_outputs: skipped: python3 is not installed"
  exit 77
fi
db="$tmp/j.db"
expect 0 "check --json" -- "$fc" check tiny-llama --shim reference --shim none --db "$db" --no-progress --json
python3 - "$tmp/out" "$db" <<'PY' && ok || bad "check --json: $(head -c 400 "$tmp/out")"
import json, sqlite3, sys
text = open(sys.argv[1]).read()
assert text.count("\n") == 1 and text.endswith("}\n"), "one document on one line"
d = json.loads(text)
keys = list(d)
assert keys[:3] == ["run", "db", "status"], keys
db = sqlite3.connect(sys.argv[2])
reports, = db.execute("SELECT count(*) FROM reports WHERE run_id = ?", (d["run"],)).fetchone()
assert d["run"] == 1 and d["status"] == "complete" and d["failed"] is False
assert d["reports"] == reports == 6 and d["graphs"] == 3 and d["mismatches"] == 0
assert d["fixtures"] is None and d["tolerance"] is None and d["differential"] is None
assert d["optimizer"] == {"name": "fusecheck", "version": d["optimizer"]["version"], "command": None, "unanswered": 0}
fired, = db.execute("SELECT sum(ds.fired) FROM reports r JOIN decision_sets ds ON ds.id = r.set_id WHERE r.run_id = 1").fetchone()
assert d["fired"] == fired, (d["fired"], fired)
PY
# with --fixtures: the cases run and failed, as results.db's run row keeps them
expect 0 "check --fixtures --json" -- "$fc" check tiny-llama --shim reference --db "$db" --no-progress --json \
  --fixtures tests/rules
python3 - "$tmp/out" "$db" <<'PY' && ok || bad "check --fixtures --json: $(head -c 400 "$tmp/out")"
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))
f = d["fixtures"]
assert f["dir"] == "tests/rules" and f["cases"] > 40 and f["failed"] == 0, f
row = sqlite3.connect(sys.argv[2]).execute("SELECT fixture_cases, fixture_failures FROM runs WHERE id = ?", (d["run"],)).fetchone()
assert row == (f["cases"], 0), row
PY
# a failing check: the JSON says so and the exit code is 1
expect 1 "check --json of a planted bug" -- env FUSECHECK_PLANT=drop_keep "$fc" check tiny-llama --shim reference \
  --db "$tmp/f.db" --no-progress --json
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["failed"] is True and d["status"] == "failed" and d["mismatches"] + d["failures"] > 0, d' "$tmp/out" &&
  ok || bad "a failed check's JSON: $(head -c 300 "$tmp/out")"

# prove --json: the table's rows, mutants, replays
expect 0 "prove --mutants --replay --json" -- "$fc" prove add_norm gemv_bias --mutants --replay "$tmp/replays" --db "$db" \
  --no-progress --json
python3 - "$tmp/out" "$db" <<'PY' && ok || bad "prove --json: $(head -c 400 "$tmp/out")"
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))
assert list(d)[:3] == ["run", "status", "rules"], list(d)
assert d["rules"] == 2 and d["obligations"] == len(d["table"]) == d["proved"] + d["refuted"] + d["unknown"]
rows = sqlite3.connect(sys.argv[2]).execute("SELECT rule, obligation, verdict FROM proofs WHERE run_id = ? ORDER BY id", (d["run"],)).fetchall()
assert [(r["rule"], r["obligation"], r["verdict"]) for r in d["table"]] == rows, "the table is results.db's rows"
m = d["mutants"]
assert m["atoms"] == sum(1 for r in d["table"] if r["dropped"]) and m["needed"] <= m["atoms"]
refuted = [r for r in d["table"] if r["verdict"] == "refuted"]
assert refuted and any(r["counterexample"] for r in refuted), "no refutation carries its counterexample"
assert d["replays"]["tried"] >= 1 and any(r["replay"] in ("fails", "passes", "unbuilt") for r in refuted)
PY
# the text is not mixed in: stdout is the document alone
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/out" && ok || bad "prove --json's stdout is not JSON alone"
expect 2 "prove --json --explain" -- "$fc" prove add_norm --json --explain
echo "json_outputs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
