#!/usr/bin/env bash
# End to end: `fusecheck tolerance` runs the lane's launches on the host lane, logs them, refuses bad input.
set -uo pipefail
fc="$1"
fail=0; pass=0
ok() { if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "failed: $*" >&2; fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$fc" tolerance tiny-qwen3 --shim cuda-lane:h200:int8 --steps 2 --db "$tmp/r.db" >"$tmp/out" 2>"$tmp/err"
ok test $? -eq 0
ok grep -q "outside their bound" "$tmp/out"
ok grep -q "0 outside their bound" "$tmp/out"
ok grep -q "step 1 end to end" "$tmp/out"
rows=$(sqlite3 "$tmp/r.db" "SELECT count(*) FROM tolerances WHERE backend = 'host' AND pass = 1")
ok test "$rows" -gt 20
ok test "$(sqlite3 "$tmp/r.db" "SELECT count(*) FROM tolerances WHERE pass = 0")" -eq 0
ok test "$(sqlite3 "$tmp/r.db" "SELECT count(*) FROM tolerance_steps WHERE top1_agree = rows AND nmse < 0.01")" -eq 2
ok test "$(sqlite3 "$tmp/r.db" "SELECT kind || ' ' || status FROM runs")" = "tolerance complete"
# Each row keeps its largest error's own bound (max_abs_bound): a passing row's largest error is within it, though
# not always within `bound` (the worst error/bound element's) — the contradiction max_abs against bound showed.
"$fc" check tiny-llama tiny-qwen3-moe --mode decode --shim cuda-lane:h100:int8 --shim cuda-lane:a100:dequant \
  --tolerance --db "$tmp/c.db" --no-progress >/dev/null 2>&1
ok test $? -eq 0
q() { sqlite3 "$tmp/c.db" "$1"; }
ok test "$(q "SELECT count(*) FROM tolerances WHERE max_abs_bound IS NULL")" -eq 0
ok test "$(q "SELECT count(*) FROM tolerances WHERE pass = 1 AND max_abs > max_abs_bound")" -eq 0
ok test "$(q "SELECT count(*) FROM tolerances WHERE pass = 1 AND max_abs > bound")" -gt 0
ok test "$(q "SELECT count(*) FROM tolerances WHERE max_abs_bound <> bound")" -gt 0
"$fc" tolerance tiny-qwen3 --shim reference >/dev/null 2>"$tmp/err"; ok test $? -eq 2
ok grep -q "not the CUDA lane" "$tmp/err"
"$fc" tolerance tiny-qwen3 --shim cuda-lane:h200:int8 --steps 0 >/dev/null 2>&1; ok test $? -eq 2
"$fc" tolerance tiny-qwen3 --shim cuda-lane:h200:int8 --device cuda >/dev/null 2>&1; ok test $? -eq 2
"$fc" tolerance "$tmp/missing.fc" --shim cuda-lane:h200:int8 >/dev/null 2>&1; ok test $? -eq 2
"$fc" tolerance tests/data/kernels/split_attention.fc --shim cuda-lane:h200:dequant >/dev/null 2>&1; ok test $? -eq 0
echo "tolerance: $pass passed, $fail failed"
test "$fail" -eq 0
