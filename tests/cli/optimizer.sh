#!/usr/bin/env bash
# Every check on any optimizer (--optimizer CMD, docs/optimizer-protocol.md): fusecheck's own optimizer run as a
# process of its own gives what it gives in process; each planted bug, planted only in the optimizer's process, is
# caught by a faithful fusecheck with the same checks as in process; validate-run's cycle check fails a hand-made
# answer fusing across a dependence; a broken optimizer is a finding (exit 1, its fault and stderr named), never a
# hang; the differential tells a planted optimizer from the faithful one.
. "$(dirname "$0")/lib.bash" "$1"
set -o pipefail
serve="$fc optimize --serve"

# says RC NEEDLE LABEL -- CMD...: CMD exits RC (within 120 s) and its output (stdout and stderr) holds NEEDLE.
says() {
  local want=$1 needle=$2 label=$3
  shift 4
  timeout 120 "$@" >"$tmp/out" 2>&1
  local rc=$?
  if [ "$rc" -ne "$want" ]; then bad "$label: exit $rc, wanted $want"; sed 's/^/  /' "$tmp/out" | tail -8; return; fi
  if ! grep -qF -- "$needle" "$tmp/out"; then bad "$label: no '$needle' in:"; sed 's/^/  /' "$tmp/out" | tail -8; return; fi
  ok
}
# same A B LABEL: the two texts are equal.
same() { if [ "$1" = "$2" ]; then ok; else bad "$3: '$1' is not '$2'"; fi; }

# ── fusecheck's own optimizer as a process: the same verdicts, reports and digests on the tiny zoo ────────────────
shims=(--shim reference --shim none --shim cuda-lane:h100:int8 --shim cuda-lane:a100:dequant
       --shim cuda-lane:rtx4090:int8x2:cache=f32)
modes=(--mode decode --mode prefill:8 --mode batch:4)
# check's output less what names the optimizer, the differential and the times
plain() {
  grep -v '^optimizer:\|^differential' "$1" |
    sed -E 's/ in [0-9.]+ s \(optimize [0-9.]+ s, evaluate [0-9.]+ s, db [0-9.]+ s\) -> .*/ -> DB/;
            s/host lane [0-9.]+ s, evaluator [0-9.]+ s/host lane T/'
}
"$fc" check --tolerance --no-progress "${modes[@]}" "${shims[@]}" --db "$tmp/in.db" >"$tmp/in.out" 2>&1
same "$?" 0 "zoo in process: exit"
start=$(date +%s%N)
"$fc" check --tolerance --no-progress "${modes[@]}" "${shims[@]}" --db "$tmp/ex.db" --optimizer "$serve" \
  >"$tmp/ex.out" 2>&1
same "$?" 0 "zoo through --optimizer: exit"
echo "zoo through --optimizer '$serve': $((($(date +%s%N) - start) / 1000000)) ms"
if [ "$(plain "$tmp/in.out")" = "$(plain "$tmp/ex.out")" ]; then ok; else
  bad "zoo: check's output differs"; diff <(plain "$tmp/in.out") <(plain "$tmp/ex.out") | head -10; fi
contains "$tmp/ex.out" "optimizer: fusecheck " "zoo: the optimizer named by its greeting"
contains "$tmp/ex.out" " 0 differ (0 reports differ)" "zoo: the differential agrees"
digests="SELECT g.name, g.mode, g.sha256, s.name, d.digest, r.rewritten FROM reports r JOIN graphs g ON g.id = r.graph_id
         JOIN shims s ON s.id = r.shim_id JOIN decision_sets d ON d.id = r.set_id ORDER BY 1, 2, 4"
a=$(sqlite3 "$tmp/in.db" "$digests") b=$(sqlite3 "$tmp/ex.db" "$digests")
same "$(echo "$a" | wc -l)" 420 "zoo: reports logged"
if [ -n "$a" ] && [ "$a" = "$b" ]; then ok; else bad "zoo: report digests or rewritten graphs differ in results.db"; fi
# the run names its optimizer where results.db has the columns (db/: optimizer_name, ...)
if sqlite3 "$tmp/ex.db" "SELECT optimizer_name FROM runs" >/dev/null 2>&1; then
  same "$(sqlite3 "$tmp/ex.db" "SELECT optimizer_name || ' ' || optimizer_command FROM runs")" "fusecheck $serve" \
    "zoo: the run records the optimizer"
  same "$(sqlite3 "$tmp/in.db" "SELECT coalesce(optimizer_command, 'in process') FROM runs")" "in process" \
    "zoo: in process, no optimizer command"
fi

# ── each plant, only in the optimizer's process, caught by a faithful fusecheck ──────────────────────────────────
lane=cuda-lane:h200:int8x2
says 0 "the rewritten graph is valid" "faithful validate-run" -- "$fc" validate-run tiny-qwen3-moe --shim "$lane" --optimizer "$serve"
contains "$tmp/out" "0 not, 0 failed" "faithful validate-run: every firing fusecheck's own, none failed"
for plant in drop_keep wrong_operand; do
  case $plant in
    drop_keep) why="before it is written" ;;
    wrong_operand) why="from outside the op, which is no operand" ;;
  esac
  planted="env FUSECHECK_PLANT=$plant $serve"
  env FUSECHECK_PLANT=$plant "$fc" check tiny-llama tiny-qwen3-moe --shim reference --shim "$lane" --no-progress \
    --db "$tmp/$plant-in.db" >"$tmp/$plant-in.out" 2>&1
  says 1 "$why" "$plant: check" -- "$fc" check tiny-llama tiny-qwen3-moe --shim reference --shim "$lane" --no-progress --db "$tmp/$plant.db" --optimizer "$planted"
  same "$(grep -c ': valid: ' "$tmp/out")" "$(grep -c ': valid: ' "$tmp/$plant-in.out")" "$plant: as many invalid graphs as in process"
  count="SELECT kind, count(*) FROM diff_mismatches GROUP BY kind ORDER BY kind"
  same "$(sqlite3 "$tmp/$plant.db" "$count")" "$(sqlite3 "$tmp/$plant-in.db" "$count")" "$plant: the same failed comparisons in results.db"
  says 1 "$why" "$plant: diff" -- "$fc" diff tiny-qwen3-moe --shim "$lane" --optimizer "$planted"
  says 1 "$why" "$plant: validate-run" -- "$fc" validate-run tiny-qwen3-moe --shim "$lane" --optimizer "$planted"
  says 1 "the rewritten graph is invalid" "$plant: tolerance" -- "$fc" tolerance tiny-qwen3-moe --shim "$lane" --optimizer "$planted"
done
planted="env FUSECHECK_PLANT=quant_words $serve"
says 1 "beyond a/254^2" "quant_words: check" -- "$fc" check tiny-llama --shim "$lane" --no-progress --db "$tmp/q.db" --optimizer "$planted"
n=$(sqlite3 "$tmp/q.db" "SELECT count(*) FROM diff_mismatches WHERE kind IN ('values', 'unquantized')" 2>/dev/null || echo 0)
if [ "${n:-0}" -ge 2 ]; then ok; else bad "quant_words: $n values/unquantized rows in diff_mismatches, wanted 2 or more"; fi
says 1 "differs" "quant_words: diff under int8" -- "$fc" diff tiny-llama --shim cuda-lane:h200:int8 --optimizer "$planted"
# The plants the fixture cases catch in process: check --fixtures runs fusecheck's own rules, so the cases go to the
# optimizer one by one through diff (the report's contract; the differential).
planted="env FUSECHECK_PLANT=repeat_refusal $serve"
says 1 "twice in a row" "repeat_refusal: diff on its fixture case" -- "$fc" diff tests/rules/gemv_norm_epilogue/refused_once_for_both_summands.fc --shim cuda-lane:h200:int8 --optimizer "$planted"
says 1 "twice in a row" "repeat_refusal: diff on its held fixture case" -- "$fc" diff tests/rules/mla_prologue/refused_once_for_two_attentions.fc --shim cuda-lane:h200:int8 --hold mla_prologue --optimizer "$planted"
planted="env FUSECHECK_PLANT=source_first $serve"
says 1 "which is no operand" "source_first: diff on its fixture case" -- "$fc" diff tests/rules/gemv_parts/activation_also_a_norm_weight.fc --shim cuda-lane:h100:int8 --optimizer "$planted"
says 0 "the optimizers disagree" "source_first: the differential sees a decision dropped" -- "$fc" diff tests/rules/gemv_norm_epilogue/activation_also_the_residual.fc --shim cuda-lane:h200:int8 --optimizer "$planted"
says 1 "a failed check (--expect-same)" "source_first: --expect-same fails it" -- "$fc" diff tests/rules/gemv_norm_epilogue/activation_also_the_residual.fc --shim cuda-lane:h200:int8 --optimizer "$planted" --expect-same
says 0 " 0 differ" "faithful: no disagreement on that case" -- "$fc" diff tests/rules/gemv_norm_epilogue/activation_also_the_residual.fc --shim cuda-lane:h200:int8 --optimizer "$serve" --expect-same

# ── the differential on check ─────────────────────────────────────────────────────────────────────────────────────
says 1 "differential: first disagreement: tiny-qwen3-moe decode under $lane" "wrong_operand: check's differential" -- "$fc" check tiny-qwen3-moe --mode decode --shim "$lane" --no-progress --db "$tmp/w.db" --optimizer "env FUSECHECK_PLANT=wrong_operand $serve"
contains "$tmp/out" "differential:   theirs: " "wrong_operand: the two decision lines shown"
if grep -qE '^differential: [0-9]+ reports beside fusecheck.s own: [0-9]+ decisions agree, [1-9][0-9]* differ' "$tmp/out"; then ok; else bad "wrong_operand: no disagreement counted"; fi
if grep -qE '^differential: gemv_parts +[0-9]+ agree +[1-9][0-9]* differ' "$tmp/out"; then ok; else bad "wrong_operand: no count for gemv_parts"; fi
says 0 " 0 differ (0 reports differ)" "faithful: check's differential agrees" -- "$fc" check tiny-qwen3-moe --mode decode --shim "$lane" --no-progress --db "$tmp/f.db" --optimizer "$serve" --expect-same

# ── validate-run's cycle check, on a hand-made answer that no fusecheck optimizer gives ──────────────────────────
if command -v python3 >/dev/null; then
  cyc="python3 tests/external/b-optimizer-cycle.py"
  says 1 "fusing its covers makes a cycle: lifted op 1" "cycle: validate-run" -- "$fc" validate-run tests/external/b-chain.fc --shim reference --optimizer "$cyc"
  contains "$tmp/out" "the rewritten graph is valid" "cycle: only the cycle check sees it"
  says 0 "not fusecheck's" "no cycle: listed, not failed" -- env B_COVERS="0, 1" "$fc" validate-run tests/external/b-chain.fc --shim reference --optimizer "$cyc"
  says 1 "lifted op 1 (writing \`u\`)" "cycle through a state written in place: validate-run" -- "$fc" validate-run tests/external/b-state.fc --shim reference --optimizer "$cyc"
  says 0 "1 not, 0 failed" "no cycle through the state: listed, not failed" -- env B_COVERS="1, 2" "$fc" validate-run tests/external/b-state.fc --shim reference --optimizer "$cyc"
  says 0 "identical" "cycle: diff cannot see it" -- "$fc" diff tests/external/b-chain.fc --shim reference --optimizer "$cyc"
else
  echo "optimizer: no python3: the cycle check's fake optimizer skipped"
fi

# ── a broken optimizer: a finding, exit 1, never a hang ───────────────────────────────────────────────────────────
one=(tiny-llama --mode decode --shim reference --no-progress --optimizer-timeout-ms 400)
says 1 "handshake" "garbage: check" -- "$fc" check "${one[@]}" --db "$tmp/b1.db" --optimizer "sh tests/external/garbage.sh"
says 1 "exit_mid: out of patience" "exit mid-answer: check shows its stderr" -- "$fc" check "${one[@]}" --db "$tmp/b2.db" --optimizer "sh tests/external/exit_mid.sh"
contains "$tmp/out" "optimizer exit: " "exit mid-answer: the fault named"
says 1 "optimizer timeout: " "no answer: check" -- "$fc" check "${one[@]}" --db "$tmp/b3.db" --optimizer "sh tests/external/silent.sh"
n=$(sqlite3 "$tmp/b3.db" "SELECT count(*) FROM run_failures WHERE stage = 'optimizer' AND reason LIKE '%timeout%'" 2>/dev/null || echo 0)
if [ "${n:-0}" -eq 1 ]; then ok; else bad "no answer: $n optimizer failures in results.db, wanted 1"; fi
says 1 "stderr-noise" "stderr forever: check" -- "$fc" check "${one[@]}" --db "$tmp/b4.db" --optimizer "sh tests/external/stderr_forever.sh"
says 1 "start (the command could not be started)" "no such command: check" -- "$fc" check "${one[@]}" --db "$tmp/b5.db" --optimizer "no-such-optimizer-anywhere"
says 1 "optimizer exit: " "exit mid-answer: diff" -- "$fc" diff tiny-llama --shim reference --optimizer "sh tests/external/exit_mid.sh"
says 1 "optimizer timeout: " "no answer: validate-run" -- "$fc" validate-run tiny-llama --shim reference --optimizer-timeout-ms 400 --optimizer "sh tests/external/silent.sh"
says 1 "malformed" "malformed: tolerance" -- "$fc" tolerance tiny-llama --shim "$lane" --optimizer "sh tests/external/malformed.sh"

# ── usage ─────────────────────────────────────────────────────────────────────────────────────────────────────────
says 2 "--expect-same compares" "--expect-same alone" -- "$fc" diff tiny-llama --shim reference --expect-same
says 2 "--optimizer-timeout-ms expects" "a timeout of 0" -- "$fc" check tiny-llama --optimizer "$serve" --optimizer-timeout-ms 0
says 2 "--fixtures holds fusecheck's own rules" "--fixtures with --optimizer" -- "$fc" check --fixtures tests/rules --optimizer "$serve" --db "$tmp/u.db"
says 2 "needs --optimizer CMD" "--optimizer-timeout-ms alone" -- "$fc" validate-run tiny-llama --shim reference --optimizer-timeout-ms 5
echo "optimizer: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
