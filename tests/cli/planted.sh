#!/usr/bin/env bash
# The product's own checks catch the optimizer bugs the harness plants (FUSECHECK_PLANT, rules/rules.h RULES_PLANTS):
# each of check (with its fixture cases), diff, validate-run and tolerance fails on each bug it is meant to catch,
# naming what is wrong, logs the failure to results.db, and passes on the faithful optimizer.
. "$(dirname "$0")/lib.bash" "$1"
set -o pipefail

# says RC NEEDLE LABEL -- CMD...: CMD exits RC and its output (stdout and stderr) holds NEEDLE.
says() {
  local want=$1 needle=$2 label=$3
  shift 4
  "$@" >"$tmp/out" 2>&1
  local rc=$?
  if [ "$rc" -ne "$want" ]; then bad "$label: exit $rc, wanted $want"; sed 's/^/  /' "$tmp/out" | tail -5; return; fi
  if ! grep -qF -- "$needle" "$tmp/out"; then bad "$label: no '$needle' in:"; sed 's/^/  /' "$tmp/out" | tail -5; return; fi
  ok
}

lane=cuda-lane:h200:int8x2
# The faithful optimizer passes every check.
says 0 "0 mismatches" "faithful check" -- "$fc" check tiny-llama tiny-qwen3-moe --shim reference --shim "$lane" --db "$tmp/ok.db"
says 0 "identical" "faithful diff" -- "$fc" diff tiny-qwen3-moe --shim "$lane"
says 0 "the rewritten graph is valid" "faithful validate-run" -- "$fc" validate-run tiny-qwen3-moe --shim "$lane"

# A fused op forgetting a kept result: check, diff, validate-run and tolerance all name the read it breaks.
for plant in drop_keep wrong_operand; do
  case $plant in
    drop_keep) why="before it is written" ;;
    wrong_operand) why="from outside the op, which is no operand" ;;
  esac
  says 1 "$why" "$plant: check" -- env FUSECHECK_PLANT=$plant "$fc" check tiny-llama tiny-qwen3-moe --shim reference --shim "$lane" --db "$tmp/$plant.db"
  n=$(sqlite3 "$tmp/$plant.db" "SELECT count(*) FROM diff_mismatches WHERE kind = 'valid' AND reason LIKE '%$why%'" 2>/dev/null || echo 0)
  if [ "${n:-0}" -gt 0 ]; then ok; else bad "$plant: no valid row in diff_mismatches"; fi
  says 1 "$why" "$plant: diff" -- env FUSECHECK_PLANT=$plant "$fc" diff tiny-qwen3-moe --shim "$lane"
  says 1 "$why" "$plant: validate-run" -- env FUSECHECK_PLANT=$plant "$fc" validate-run tiny-qwen3-moe --shim "$lane"
  says 1 "the rewritten graph is invalid" "$plant: tolerance" -- env FUSECHECK_PLANT=$plant "$fc" tolerance tiny-qwen3-moe --shim "$lane"
done

# A fold quantizing in the wrong words: the reference built from the chip's answers differs bit for bit, and the
# values leave the mode's bound of what they quantize.
says 1 "beyond a/254^2" "quant_words: check" -- env FUSECHECK_PLANT=quant_words "$fc" check tiny-llama --shim "$lane" --db "$tmp/q.db"
n=$(sqlite3 "$tmp/q.db" "SELECT count(*) FROM diff_mismatches WHERE kind = 'unquantized'" 2>/dev/null || echo 0)
if [ "${n:-0}" -gt 0 ]; then ok; else bad "quant_words: no unquantized row in diff_mismatches"; fi
n=$(sqlite3 "$tmp/q.db" "SELECT count(*) FROM diff_mismatches WHERE kind = 'values'" 2>/dev/null || echo 0)
if [ "${n:-0}" -gt 0 ]; then ok; else bad "quant_words: no values row in diff_mismatches"; fi
says 1 "differs" "quant_words: diff under int8" -- env FUSECHECK_PLANT=quant_words "$fc" diff tiny-llama --shim cuda-lane:h200:int8

# A refusal reported again each time a rule asks about it in a row: no zoo graph asks twice, so the zoo passes; the
# fixture cases that do ask twice fail the report's contract, kept in results.db.
says 0 " 0 mismatches, 0 failures" "repeat_refusal: zoo check" -- env FUSECHECK_PLANT=repeat_refusal "$fc" check tiny-llama --shim "$lane" --db "$tmp/rz.db"
says 1 "the same refusal twice in a row" "repeat_refusal: check --fixtures" -- env FUSECHECK_PLANT=repeat_refusal "$fc" check tiny-llama --shim "$lane" --fixtures tests/rules --db "$tmp/r.db"
n=$(sqlite3 "$tmp/r.db" "SELECT count(*) FROM run_failures WHERE stage = 'fixture' AND reason LIKE '%twice in a row%'" 2>/dev/null || echo 0)
if [ "${n:-0}" -eq 2 ]; then ok; else bad "repeat_refusal: $n fixture failures for a repeated decision, wanted 2"; fi
says 0 " 0 failed" "faithful check --fixtures" -- "$fc" check tiny-llama --shim "$lane" --fixtures tests/rules --db "$tmp/rf.db"

# A fold listing a quantized read's source first where another part still reads it (issue 38): no zoo graph reads a
# product's activation in a second role, so the zoo passes; the fixture cases that do fail, one of them invalid.
says 0 " 0 failures" "source_first: zoo check" -- env FUSECHECK_PLANT=source_first "$fc" check tiny-llama --shim cuda-lane:h200:int8 --db "$tmp/sz.db"
says 1 "which is no operand" "source_first: check --fixtures" -- env FUSECHECK_PLANT=source_first "$fc" check tiny-llama --shim cuda-lane:h200:int8 --fixtures tests/rules --db "$tmp/s.db"
n=$(sqlite3 "$tmp/s.db" "SELECT count(*) FROM run_failures WHERE stage = 'fixture' AND reason LIKE '%activation_also%'" 2>/dev/null || echo 0)
if [ "${n:-0}" -ge 3 ]; then ok; else bad "source_first: $n fixture failures on the two-role cases, wanted 3 or more"; fi

says 2 "no planted bug" "unknown plant" -- env FUSECHECK_PLANT=nonsense "$fc" models
echo "planted: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
