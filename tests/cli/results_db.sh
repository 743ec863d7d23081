#!/usr/bin/env bash
# End to end: results.db holds only fusecheck's results, and only true ones. Every writer refuses another program's
# SQLite database (exit 2, "holds no fusecheck results") and leaves it byte for byte as it was; every run records its
# git revision, or why there is none; a second solver's proof rows carry its own time, not z3's.
source "$(dirname "$0")/lib.bash"

# ── Another program's database: refused by every writer, unchanged ────────────────────────────────────────────────
foreign="$tmp/other.db"
sqlite3 "$foreign" "CREATE TABLE t (x); INSERT INTO t VALUES (42);"
sum=$(sha256sum "$foreign" | cut -d' ' -f1)
# unchanged NAME: the foreign file's bytes are what they were, and nothing was made beside it
unchanged() {
  [ "$(sha256sum "$foreign" | cut -d' ' -f1)" = "$sum" ] && ok || bad "$1: other.db changed"
  [ ! -e "$foreign-wal" ] && [ ! -e "$foreign-shm" ] && [ ! -e "$foreign-journal" ] && ok ||
    bad "$1: a file was made beside other.db"
}
# refused NAME -- COMMAND...: exit 2, named as holding no fusecheck results, the file unchanged
refused() {
  local name=$1
  shift
  expect 2 "$name on another program's database" "$@"
  contains "$tmp/err" "other.db holds no fusecheck results" "$name names the file and why"
  unchanged "$name"
}
refused "check" -- "$fc" check tiny-qwen3 --layers 1 --db "$foreign" --no-progress
refused "prove --db" -- "$fc" prove add_norm --db "$foreign"
refused "tolerance --db" -- "$fc" tolerance tiny-qwen3 --layers 1 --shim cuda-lane:h200:int8 --db "$foreign"
refused "fuzz begin --db" -- "$fc" fuzz begin --db "$foreign"
refused "fuzz stat --db" -- "$fc" fuzz stat 1 fuzz_db 1 1 1 1 --db "$foreign"
refused "fuzz end --db" -- "$fc" fuzz end 1 complete --db "$foreign"
refused "db runs" -- "$fc" db runs --db "$foreign"
if "$fc" crosscheck tiny-qwen3 --count 2 >/dev/null 2>&1; then
  refused "crosscheck --db" -- "$fc" crosscheck tiny-qwen3 --count 2 --db "$foreign"
fi
"$fc" check tiny-qwen3 --layers 1 --db "$tmp/shard.db" --no-progress >/dev/null 2>&1
refused "db merge --append" -- "$fc" db merge "$tmp/shard.db" -o "$foreign" --append
refused "db merge --force" -- "$fc" db merge "$tmp/shard.db" -o "$foreign" --force
refused "db merge" -- "$fc" db merge "$foreign" -o "$tmp/never.db"
[ ! -e "$tmp/never.db" ] && ok || bad "db merge of another program's database made its output"
# a file with a schema version of its own and no runs table is another program's too
sqlite3 "$tmp/versioned.db" "CREATE TABLE t (x); PRAGMA user_version = 3;"
expect 2 "check on a versioned foreign database" -- "$fc" check tiny-qwen3 --layers 1 --db "$tmp/versioned.db" --no-progress
contains "$tmp/err" "holds no fusecheck results" "named as such"
# a new file and an empty one take the schema
: > "$tmp/empty.db"
expect 0 "check on an empty file" -- "$fc" check tiny-qwen3 --layers 1 --db "$tmp/empty.db" --no-progress
expect 0 "check on a new file" -- "$fc" check tiny-qwen3 --layers 1 --db "$tmp/new.db" --no-progress
[ "$(sqlite3 "$tmp/empty.db" "SELECT status FROM runs")" = complete ] && ok || bad "the empty file holds the run"

# ── Every run records its git revision, or why there is none ──────────────────────────────────────────────────────
rev=$(git rev-parse --short=12 HEAD 2>/dev/null || true)
if [ -n "$rev" ]; then
  "$fc" prove add_norm --db "$tmp/rev.db" >/dev/null 2>&1
  "$fc" check tiny-qwen3 --layers 1 --db "$tmp/rev.db" --no-progress >/dev/null 2>&1
  "$fc" tolerance tiny-qwen3 --layers 1 --shim cuda-lane:h200:int8 --db "$tmp/rev.db" >/dev/null 2>&1
  run=$("$fc" fuzz begin --db "$tmp/rev.db")
  "$fc" fuzz end "$run" complete --db "$tmp/rev.db"
  got=$(sqlite3 "$tmp/rev.db" "SELECT group_concat(kind || '=' || coalesce(git_rev, 'NULL'), ' ') FROM runs")
  [ "$got" = "prove=$rev check=$rev tolerance=$rev fuzz=$rev" ] && ok || bad "runs' git revisions: $got (wanted $rev)"
else
  echo "note: not run from a git checkout: the revisions of a checkout not checked"
fi
# outside a checkout (git told not to look above the scratch folder), the run says why
mkdir -p "$tmp/outside"
fc_abs="$(cd "$(dirname "$fc")" && pwd)/$(basename "$fc")"
(cd "$tmp/outside" && GIT_CEILING_DIRECTORIES="$tmp" "$fc_abs" prove add_norm --db out.db >/dev/null 2>&1)
[ "$(sqlite3 "$tmp/outside/out.db" "SELECT git_rev FROM runs")" = "none: not a git checkout" ] && ok ||
  bad "a run outside a checkout: git_rev '$(sqlite3 "$tmp/outside/out.db" "SELECT git_rev FROM runs")'"
(cd "$tmp/outside" && FUSECHECK_GIT_REV=abc123 "$fc_abs" check tiny-qwen3 --layers 1 --db out.db --no-progress >/dev/null 2>&1)
[ "$(sqlite3 "$tmp/outside/out.db" "SELECT git_rev FROM runs WHERE kind = 'check'")" = abc123 ] && ok ||
  bad "FUSECHECK_GIT_REV is recorded as given"

# ── A second solver's proof times are its own ────────────────────────────────────────────────────────────────────
# A stand-in cvc5 that takes 0.4 s a query and decides nothing: every cvc5 row is at least 400 ms, and no z3 row
# carries its obligation's cvc5 time. Copied times would make the two rows equal.
mkdir -p "$tmp/bin"
cat > "$tmp/bin/cvc5" <<'EOF'
#!/bin/sh
[ "$1" = --version ] && { echo "cvc5 stand-in"; exit 0; }
sleep 0.4
echo unknown
EOF
chmod +x "$tmp/bin/cvc5"
expect 0 "prove --cross-check with a stand-in cvc5" -- env PATH="$tmp/bin:$PATH" "$fc" prove add_norm --cross-check cvc5 \
  --db "$tmp/cross.db"
q() { sqlite3 "$tmp/cross.db" "$1"; }
[ "$(q "SELECT count(*) FROM proofs WHERE solver = 'cvc5'")" -ge 2 ] && ok || bad "cvc5 rows logged"
[ "$(q "SELECT count(*) FROM proofs WHERE solver = 'cvc5' AND ms < 400")" = 0 ] && ok ||
  bad "a cvc5 row under the stand-in's 400 ms: $(q "SELECT group_concat(ms) FROM proofs WHERE solver = 'cvc5'")"
# row by row, no obligation's two rows carry the same time (a load-proof form of "the sums differ": z3 under a
# sanitizer on a loaded machine may take longer than the stand-in)
[ "$(q "SELECT count(*) FROM proofs a JOIN proofs b ON b.run_id = a.run_id AND b.rule = a.rule AND b.obligation = a.obligation AND b.solver = 'cvc5' WHERE a.solver = 'z3' AND a.ms = b.ms")" = 0 ] &&
  ok || bad "z3's rows carry cvc5's time: $(q "SELECT solver, sum(ms) FROM proofs GROUP BY solver")"
[ "$(q "SELECT count(*) FROM proofs a JOIN proofs b ON b.run_id = a.run_id AND b.rule = a.rule AND b.obligation = a.obligation AND b.solver = 'cvc5' WHERE a.solver = 'z3'")" -ge 2 ] &&
  ok || bad "z3 and cvc5 rows pair by obligation"
# with the real cvc5 (where installed): the two solvers' times differ, row by row
if command -v cvc5 >/dev/null; then
  expect 0 "prove --cross-check cvc5" -- "$fc" prove add_norm --cross-check cvc5 --db "$tmp/cvc5.db"
  same=$(sqlite3 "$tmp/cvc5.db" "SELECT count(*) FROM proofs a JOIN proofs b ON b.run_id = a.run_id AND b.rule = a.rule AND b.obligation = a.obligation AND b.solver = 'cvc5' WHERE a.solver = 'z3' AND a.ms = b.ms")
  [ "$same" = 0 ] && ok || bad "$same cvc5 rows carry z3's time"
else
  echo "note: cvc5 is not installed: its own times checked with the stand-in only"
fi

# ── Two optimizers: every run names its own; db diff across them says so and compares them as any two runs ───────
two="$tmp/two.db"
expect 0 "check, fusecheck's own" -- "$fc" check tiny-llama --layers 1 --shim reference --db "$two" --no-progress
expect 0 "check --optimizer (fusecheck optimize --serve)" -- "$fc" check tiny-llama --layers 1 --shim reference \
  --db "$two" --no-progress --optimizer "$fc optimize --serve"
expect 0 "fuzz begin --optimizer" -- "$fc" fuzz begin --db "$two" --optimizer "$fc optimize --serve"
[ "$(sqlite3 "$two" "SELECT group_concat(optimizer_name || ':' || (optimizer_command IS NULL), ',') FROM (SELECT * FROM runs ORDER BY id)")" = \
  "fusecheck:1,fusecheck:0,fusecheck:0" ] && ok || bad "runs' optimizers: $(sqlite3 "$two" "SELECT * FROM runs")"
[ "$(sqlite3 "$two" "SELECT count(*) FROM runs WHERE optimizer_version = version")" = 3 ] && ok ||
  bad "an optimizer's version is not the one it greeted with"
expect 0 "db diff across two optimizers" -- "$fc" db diff 1 2 --db "$two"
contains "$tmp/out" "two optimizers: run 1 by fusecheck" "db diff names both optimizers"
contains "$tmp/out" "(in process)" "db diff says which ran in process"
contains "$tmp/out" "0 decision changes from run 1 to run 2" "fusecheck's own, in process and served, decide alike"
[ "$(sqlite3 "$two" "SELECT count(*) FROM optimizer_disagreements")" = 0 ] && ok ||
  bad "fusecheck's own in process and served disagree: $(sqlite3 "$two" "SELECT * FROM optimizer_disagreements LIMIT 3")"
expect 2 "fuzz begin --optimizer that does not greet" -- "$fc" fuzz begin --db "$two" --optimizer "echo garbage"
[ "$(sqlite3 "$two" "SELECT count(*) FROM runs")" = 3 ] && ok || bad "a run begun for an optimizer that never greeted"
expect 0 "report over two optimizers" -- "$fc" report --db "$two" --run 2 -o "$tmp/two.html"
contains "$tmp/two.html" " ($fc optimize --serve)</td>" "the page names the run's optimizer and command"
contains "$tmp/two.html" "Disagreements with other optimizers" "the page compares the optimizers"
contains "$tmp/two.html" "no disagreement with the latest run of another optimizer" "and finds them agreeing"

echo "results_db: $pass passed, $fail failed"
test "$fail" -eq 0
