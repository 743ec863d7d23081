#!/usr/bin/env bash
# End-to-end: `fusecheck crosscheck` — every tiny zoo family exported (f32 and q8_0), loaded by llama.cpp as written,
# and run with 24 tokens through llama.cpp and through the evaluator, step by step and as one prefill chunk, every
# position held to its bound, the model's own seeded values too; results.db gets a row a position; the planted
# fault (the rotary base ignored) fails, naming the family and the first position off. Skipped (exit 77) when fusecheck was built without llama.cpp.
. "$(dirname "$0")/lib.bash" "$1"
if "$fc" crosscheck tiny-llama --count 1 2>&1 | grep -q "built without llama.cpp"; then
  echo "crosscheck: skipped: fusecheck was built without llama.cpp (ci/llamacpp, then configure with FUSECHECK_LLAMACPP)"
  exit 77
fi
db="$tmp/r.db"

# Every tiny family (no MODEL: the tiny zoo), both weight formats, both ways of running: one run, each check passes.
ntiny=$("$fc" models | awk '$1 ~ /^tiny-/' | wc -l)
expect 0 "every tiny family" -- "$fc" crosscheck --weights f32 --weights q8_0 --mode decode --mode prefill --db "$db"
contains "$tmp/out" "crosscheck: $((ntiny * 4)) checks, 0 off" "every check passes"
# Each exported model is also run as lifted from its config with the seed's own values (a tied head bound to the
# embedding), not only as read back from the file: both sides held to llama.cpp.
own=$(grep -c "^crosscheck: the model's own values agree too" "$tmp/out")
if [ "$own" -eq $((ntiny * 4)) ]; then ok; else bad "$own of $((ntiny * 4)) seeded runs agree"; fi
for m in $("$fc" models | awk '$1 ~ /^tiny-/ {print $1}'); do
  for w in f32 q8_0; do
    for mode in decode prefill; do
      contains "$tmp/out" "crosscheck: pass $m (" "$m passes"
      if grep -qE "^crosscheck: pass $m \([a-z0-9.-]+\) $w $mode: 24 positions" "$tmp/out"; then ok; else bad "$m $w $mode"; fi
    done
  done
done
rows=$(sqlite3 "$db" "SELECT count(*) FROM crosschecks")
if [ "$rows" -eq $((24 * 4 * ntiny)) ]; then ok; else bad "$rows rows in crosschecks"; fi
if [ "$(sqlite3 "$db" "SELECT count(DISTINCT run_id) FROM crosschecks")" -eq 1 ]; then ok; else bad "not one run"; fi
if [ "$(sqlite3 "$db" "SELECT kind || ' ' || status FROM runs")" = "crosscheck complete" ]; then ok; else bad "run not complete"; fi
if [ "$(sqlite3 "$db" "SELECT count(*) FROM crosscheck_failures")" -eq 0 ]; then ok; else bad "failures logged"; fi
if [ "$(sqlite3 "$db" "SELECT count(DISTINCT engine) FROM crosschecks WHERE engine LIKE 'llama.cpp %'")" -eq 1 ]; then ok; else bad "no engine"; fi
# f32 files are held to 1e-10 (gemma2, with ggml's f16 GELU table, to 1e-6), q8_0 files to 2e-3.
odd=$(sqlite3 "$db" "SELECT count(*) FROM crosschecks WHERE NOT ((weights = 'f32' AND family <> 'gemma2' AND bound = 1e-10)
  OR (weights = 'f32' AND family = 'gemma2' AND bound = 1e-6) OR (weights = 'q8_0' AND bound = 2e-3))")
if [ "$odd" -eq 0 ]; then ok; else bad "$odd rows held to another bound"; fi

# A bound no arithmetic meets fails every position: the check can fail, exit 1, logged.
expect 1 "an impossible bound" -- "$fc" crosscheck tiny-llama --weights f32 --bound 1e-30 --db "$db"
contains "$tmp/out" "crosscheck: FAIL tiny-llama (llama) f32 decode: 24 of 24 positions off, the first at position 0" "says where"
if [ "$(sqlite3 "$db" "SELECT count(*) FROM crosscheck_failures")" -eq 24 ]; then ok; else bad "failures not logged"; fi

# A GGUF file is run as it is; --keep keeps the exported one; the same file gives the same figures.
expect 0 "--keep" -- "$fc" crosscheck tiny-qwen3 --weights f32 --count 6 --keep "$tmp/q.gguf"
grep -E '^ +[0-9]' "$tmp/out" > "$tmp/a"
expect 0 "a GGUF file" -- "$fc" crosscheck "$tmp/q.gguf" --count 6
grep -E '^ +[0-9]' "$tmp/out" > "$tmp/b"
if [ -s "$tmp/a" ] && cmp -s "$tmp/a" "$tmp/b"; then ok; else bad "the kept file gives other figures"; fi
expect 0 "chosen tokens" -- "$fc" crosscheck "$tmp/q.gguf" --tokens 5,4,3
contains "$tmp/out" "       2        3" "position 2 runs token 3"

# The planted fault: the evaluator's rotary tables at base 10000 whatever the model's: fails, naming the family and
# the first position off (position 0 has angle 0 everywhere, so it agrees).
FUSECHECK_PLANT=rope_base "$fc" crosscheck tiny-qwen3 --weights f32 > "$tmp/out" 2>&1
code=$?
if [ "$code" -eq 1 ]; then ok; else bad "planted rope_base: exit $code, wanted 1"; fi
contains "$tmp/out" "crosscheck: FAIL tiny-qwen3 (qwen3) f32 decode" "names the family"
contains "$tmp/out" "the first at position 1" "names the first position off"

# Bad input: exit 2.
expect 2 "unknown model" -- "$fc" crosscheck no-such-model
expect 2 "bad --mode" -- "$fc" crosscheck tiny-llama --mode batch:2
expect 2 "bad --bound" -- "$fc" crosscheck tiny-llama --bound -1
expect 2 "token outside the vocabulary" -- "$fc" crosscheck tiny-llama --tokens 1,600
expect 2 "--weights on a file" -- "$fc" crosscheck "$tmp/q.gguf" --weights q8_0
expect 2 "--keep of two formats" -- "$fc" crosscheck tiny-llama --weights f32 --weights q8_0 --keep "$tmp/k.gguf"
expect 2 "unknown format" -- "$fc" crosscheck tiny-llama --weights q3_k
expect 2 "--tokens with --count" -- "$fc" crosscheck tiny-llama --tokens 1,2,3 --count 24
contains "$tmp/err" "not both" "says why"
printf 'not a gguf' > "$tmp/bad.gguf"
expect 2 "not a GGUF file" -- "$fc" crosscheck "$tmp/bad.gguf"

echo "crosscheck: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
