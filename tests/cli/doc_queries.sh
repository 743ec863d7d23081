#!/usr/bin/env bash
# Every ```sql block of docs/results-db.md and the README runs, as written, on a results.db made as the quick nightly's
# check and prove stages make theirs (smaller: two tiny models, two modes, three shims, two rules), two nights of it:
# each must run, and return rows unless it is marked `-- may be empty`. No block may name a run by its id: they pick
# runs by kind through the views.
. "$(dirname "$0")/lib.bash" "$1"
db="$tmp/results.db"
night() {
  expect 0 "check, night $1" -- "$fc" check tiny-llama tiny-qwen3 --mode decode --mode prefill:8 --shim reference \
    --shim none --shim cuda-lane:h100:int8 --tolerance --fixtures tests/rules --db "$db" --no-progress
  expect 0 "prove, night $1" -- "$fc" prove add_norm gemv_bias --db "$db" --no-progress
}
night 1
# an ad-hoc run between the nights, of another configuration: not one of the pair the views pick
expect 0 "check --hold add_norm (ad hoc)" -- "$fc" check tiny-llama --mode decode --shim reference --hold add_norm \
  --db "$db" --no-progress
night 2
[ "$(sqlite3 "$db" "SELECT run_before || ' ' || run_after FROM latest_check_pair")" = "1 4" ] && ok ||
  bad "latest_check_pair is not the two nights (1 4): $(sqlite3 "$db" "SELECT * FROM latest_check_pair")"
[ "$(sqlite3 "$db" "SELECT previous_run FROM previous_runs WHERE run = 4")" = 1 ] && ok ||
  bad "night 2's previous run is not night 1"

# Extract the blocks: one file each, named after its document and line.
mkdir -p "$tmp/q"
for doc in docs/results-db.md README.md; do
  awk -v out="$tmp/q" -v name="$(basename "$doc" .md)" '
    /^```sql$/ { inside = 1; n++; file = sprintf("%s/%s-%03d.sql", out, name, NR); next }
    /^```$/ && inside { inside = 0; next }
    inside { print > file }' "$doc"
done
blocks=$(ls "$tmp/q" | wc -l)
[ "$blocks" -ge 30 ] && ok || bad "only $blocks sql blocks found in docs/results-db.md and the README"
answered=0 empty_allowed=0
for q in "$tmp/q"/*.sql; do
  where=$(basename "$q" .sql)
  if grep -Eiq '\b(run|run_id|run_before|run_after|id)[[:space:]]*(=|IN)[[:space:]]*\(?[0-9]' "$q"; then
    bad "$where names a run by its id: $(tr '\n' ' ' < "$q")"
  fi
  if ! sqlite3 -bail -readonly "$db" < "$q" > "$tmp/rows" 2> "$tmp/qerr"; then
    bad "$where does not run: $(cat "$tmp/qerr") — $(tr '\n' ' ' < "$q")"
    continue
  fi
  if [ -s "$tmp/rows" ]; then
    answered=$((answered + 1)); ok
  elif grep -q -- '-- may be empty' "$q"; then
    empty_allowed=$((empty_allowed + 1)); ok
  else
    bad "$where returns no row: $(tr '\n' ' ' < "$q")"
  fi
done
echo "doc_queries: $blocks blocks: $answered answered with rows, $empty_allowed empty where they may be"
echo "doc_queries: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
