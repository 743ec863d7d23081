#!/usr/bin/env bash
# End-to-end: source-level mutants — `fusecheck fuzz code-mutant` logging a mutant's fate to results.db (read back
# with sqlite3, the survivors' view among it), and the generator fuzz/code-mutants: the same sample for the same
# seed, spread over the files, never a comment, string or preprocessor line, applied one line at a time.
. "$(dirname "$0")/lib.bash" "$1"
# same GOT WANT DESCRIPTION: two strings are equal.
same() {
  if [ "$1" = "$2" ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: $3: got '$1', wanted '$2'"; fi
}
db="$tmp/r.db"
q() { sqlite3 "$db" "$1"; }

# Logging.
expect 0 "fuzz begin" -- "$fc" fuzz begin --db "$db" --command "fuzz/campaign --code-mutants 2"
run=$(cat "$tmp/out")
expect 0 "a killed mutant" -- "$fc" fuzz code-mutant --db "$db" --run "$run" --id rules/guards.c:12:9:ror-le \
  --outcome killed --killed-by check:digest --seconds 2.5 --original "if (i < n)" --mutated "if (i <= n)"
expect 0 "a survivor" -- "$fc" fuzz code-mutant --db "$db" --run "$run" --id shim/lane.c:7:3:drop-call \
  --outcome survived --seconds 70 --original "f(x);" --mutated "{}"
same "$(q "SELECT file, line, operator, outcome, killed_by, seconds FROM code_mutants WHERE operator = 'ror-le'")" \
  "rules/guards.c|12|ror-le|killed|check:digest|2.5" "the killed mutant's row"
same "$(q "SELECT mutant || ' ' || original FROM code_mutant_survivors WHERE run = $run")" \
  "shim/lane.c:7:3:drop-call f(x);" "the survivors' view"
expect 2 "an unknown outcome" -- "$fc" fuzz code-mutant --db "$db" --run "$run" --id a.c:1:1:x --outcome maimed
expect 2 "killed without the check" -- "$fc" fuzz code-mutant --db "$db" --run "$run" --id a.c:1:1:x --outcome killed
expect 2 "a survivor with a check" -- "$fc" fuzz code-mutant --db "$db" --run "$run" --id a.c:1:1:x \
  --outcome survived --killed-by prove
expect 2 "an id without its operator" -- "$fc" fuzz code-mutant --db "$db" --run "$run" --id a.c:1:1 --outcome stillborn
expect 2 "no run" -- "$fc" fuzz code-mutant --db "$db" --id a.c:1:1:x --outcome stillborn
same "$(q "SELECT count(*) FROM code_mutants")" 2 "refused rows left nothing"

# The generator (python3's standard library only; skipped where there is no python3).
if command -v python3 >/dev/null; then
  gen=fuzz/code-mutants
  expect 2 "the generator without a command" -- "$gen"
  expect 2 "sample without a count" -- "$gen" sample
  expect 0 "a sample" -- "$gen" sample 24 --seed 7
  cp "$tmp/out" "$tmp/s1"
  expect 0 "the same sample again" -- "$gen" sample 24 --seed 7
  same "$(cmp -s "$tmp/s1" "$tmp/out" && echo same)" same "a seed draws the same sample"
  same "$(wc -l < "$tmp/s1")" 24 "24 mutants"
  # The default files: rules/*.c, shim/*.c but shim/quantized.c, ir/facts.c.
  nfiles=$(ls rules/*.c shim/*.c ir/facts.c | grep -vc '^shim/quantized\.c$')
  same "$(cut -f2 "$tmp/s1" | sort -u | wc -l)" "$nfiles" "spread over all $nfiles files"
  expect 0 "another seed" -- "$gen" sample 24 --seed 8
  same "$(cmp -s "$tmp/s1" "$tmp/out" || echo differs)" differs "another seed, another sample"
  same "$(awk -F'\t' '$1 != $2 ":" $3 ":" $4 ":" $5' "$tmp/s1" | wc -l)" 0 "ids are file:line:col:operator"
  # Never in a comment, a string, a character literal or a preprocessor line.
  mkdir -p "$tmp/src/rules"
  cat > "$tmp/src/rules/t.c" <<'EOF'
#define LIMIT (1 < 2)
/* a < b && c */
static int f(int a, int b)
{
    const char *s = "x < y"; // a == b
    if (a < b && s[0] != 'q')
        a = g(a, b);
    return a;
}
EOF
  expect 0 "the mutants of a small file" -- bash -c "cd '$tmp/src' && python3 '$PWD/$gen' list rules/t.c"
  same "$(cut -f5 "$tmp/out" | tr '\n' ' ')" \
    "ror-le lcr-or lit-inc ror-eq drop-assign swap-args " "only the code's mutants"
  same "$(grep -c '^rules/t.c:[1-5]:' "$tmp/out")" 0 "nothing in the comments, the string or the #define"
  id=$(grep ':ror-le' "$tmp/out" | cut -f1)
  mkdir -p "$tmp/dst/rules"
  expect 0 "apply" -- bash -c "cd '$tmp/src' && python3 '$PWD/$gen' apply '$id' '$tmp/src' '$tmp/dst'"
  same "$(diff "$tmp/src/rules/t.c" "$tmp/dst/rules/t.c" | grep -c '^[<>]')" 2 "one line changed"
  same "$(grep -c 'if (a <= b' "$tmp/dst/rules/t.c")" 1 "the comparison moved to its neighbour"
  expect 2 "apply an unknown mutant" -- python3 "$gen" apply rules/t.c:1:1:ror-le "$tmp/src" "$tmp/dst"
fi

echo "code_mutants: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
