#!/usr/bin/env bash
# End-to-end: the CLI's commands, their outputs and exit codes (0 ok, 1 a check failed, 2 bad usage or input).
. "$(dirname "$0")/lib.bash" "$1"

expect 0 version -- "$fc" --version
contains "$tmp/out" "fusecheck " "version text"
expect 0 help -- "$fc" help
contains "$tmp/out" "optimize" "help lists optimize"
expect 0 "help optimize" -- "$fc" help optimize
contains "$tmp/out" "--shim NAME" "optimize usage"
expect 2 "unknown command" -- "$fc" frobnicate
expect 2 "no command" -- "$fc"
expect 0 models -- "$fc" models
contains "$tmp/out" "qwen3-30b-a3b" "models lists the moe model"
expect 0 "lift tiny-llama" -- "$fc" lift tiny-llama -o "$tmp/g.fc"
expect 0 "validate lifted" -- "$fc" validate "$tmp/g.fc"
contains "$tmp/out" ": ok" "validate says ok"
expect 0 "print round trip" -- "$fc" print "$tmp/g.fc" -o "$tmp/g2.fc"
if cmp -s "$tmp/g.fc" "$tmp/g2.fc"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: print is not canonical"; fi
expect 2 "lift unknown model" -- "$fc" lift no-such-model
expect 2 "bad mode" -- "$fc" lift tiny-llama --mode sideways
expect 2 "bad weights" -- "$fc" lift tiny-llama --weights q9_9
printf 'tensor x f32 1x4 input\ntensor y f32 1x4 activation\nop y = silu(x) n=5\n' > "$tmp/bad.fc"
expect 1 "validate invalid graph" -- "$fc" validate "$tmp/bad.fc"
printf 'tensor x f32 1x4 input\nop y = sillu(x) n=4\n' > "$tmp/syntax.fc"
expect 2 "validate syntax error" -- "$fc" validate "$tmp/syntax.fc"
contains "$tmp/err" "syntax.fc:2:" "error names file:line"
expect 2 "print missing file" -- "$fc" print "$tmp/none.fc"
expect 0 "eval tiny-qwen3" -- "$fc" eval tiny-qwen3 --seed 3
contains "$tmp/out" "next 1x1" "eval prints the next token"
"$fc" eval tiny-qwen3 --seed 3 > "$tmp/e2" 2>/dev/null
if cmp -s "$tmp/out" "$tmp/e2"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: eval not deterministic"; fi
expect 0 "rules" -- "$fc" rules
contains "$tmp/out" "add_norm" "rules lists add_norm"
contains "$tmp/out" "fused_quant" "rules lists the numerics fold"
expect 0 "rules --guards" -- "$fc" rules --guards
contains "$tmp/out" "first_reader" "guards listed"
expect 0 shims -- "$fc" shims
contains "$tmp/out" "reference" "shims lists reference"
expect 0 "optimize with report" -- "$fc" optimize tiny-llama --shim reference --report -o "$tmp/opt.fc"
contains "$tmp/out" "digest " "report digest printed"
expect 0 "validate optimized" -- "$fc" validate "$tmp/opt.fc"
expect 2 "optimize without shim" -- "$fc" optimize tiny-llama
expect 2 "optimize unknown shim" -- "$fc" optimize tiny-llama --shim warp-drive
expect 0 "diff reference" -- "$fc" diff tiny-gemma2 --shim reference --mode prefill:8
contains "$tmp/out" "identical" "diff says identical"
expect 0 "diff none" -- "$fc" diff tiny-qwen3-moe --shim none --mode batch:4
expect 0 "diff under the lane int8" -- "$fc" diff tiny-qwen3 --shim cuda-lane:h200:int8 --mode prefill:8
contains "$tmp/out" "identical" "lane diff identical"
expect 0 "diff under the lane int8x2 without the fold" -- "$fc" diff tiny-llama --shim cuda-lane:a100:int8x2:fuse_quant=off
expect 2 "bad lane chip" -- "$fc" diff tiny-llama --shim cuda-lane:h900:int8
expect 0 "lane report" -- "$fc" optimize tiny-gemma2 --shim cuda-lane:h100:int8 --report -o "$tmp/lane.fc"
contains "$tmp/out" "refused: " "the lane refuses something, with its reason"
contains "$tmp/out" "fused_quant" "the numerics fold reports"
expect 0 "shims lists the lane" -- "$fc" shims
contains "$tmp/out" "cuda-lane:" "lane listed"
contains "$tmp/out" "rtx4090" "chips listed"
expect 0 "hold everything" -- "$fc" optimize tiny-llama --shim reference --hold add_norm,glu_pair --report
contains "$tmp/out" "glu_pair gemv_gate_up_glu" "held rule reported"
contains "$tmp/out" " held" "held outcome"
expect 0 "check into a db" -- "$fc" check tiny-llama --mode decode --db "$tmp/r.db" --no-progress
contains "$tmp/out" "0 mismatches" "check summary"
expect 0 "second check" -- "$fc" check tiny-llama --mode decode --db "$tmp/r.db" --no-progress
expect 0 "db runs" -- "$fc" db runs --db "$tmp/r.db"
contains "$tmp/out" "complete" "runs complete"
expect 0 "db diff" -- "$fc" db diff 1 2 --db "$tmp/r.db"
contains "$tmp/out" "0 decision changes" "no changes between identical runs"
expect 2 "db diff unknown run" -- "$fc" db diff 1 9 --db "$tmp/r.db"
# a changed decision makes db diff a failing gate (exit 1); so does comparing runs that share nothing
cp "$tmp/r.db" "$tmp/d.db"
sqlite3 "$tmp/d.db" "INSERT INTO decision_sets (digest, fired, refused, held) VALUES ('changed', 0, 0, 0);
  INSERT INTO set_decisions (set_id, seq, rule, class, covers, outcome, reason, line)
    SELECT (SELECT max(id) FROM decision_sets), seq, rule, class, covers,
    CASE seq WHEN 0 THEN 'held' ELSE outcome END, reason, CASE seq WHEN 0 THEN line + 1 ELSE line END
    FROM set_decisions WHERE set_id = (SELECT set_id FROM reports WHERE id = (SELECT max(id) FROM reports));
  UPDATE reports SET set_id = (SELECT max(id) FROM decision_sets) WHERE id = (SELECT max(id) FROM reports)"
expect 1 "db diff with a change" -- "$fc" db diff 1 2 --db "$tmp/d.db"
contains "$tmp/out" "1 decision change from run 1 to run 2" "the change is counted"
"$fc" check tiny-qwen3 --mode decode --shim none --db "$tmp/d.db" --no-progress >/dev/null 2>&1
expect 1 "db diff of runs sharing nothing" -- "$fc" db diff 1 3 --db "$tmp/d.db"
contains "$tmp/out" "nothing to compare: runs 1 and 3 share no graph (by content) and shim" "nothing in common is said"
# a graph whose content changed (fewer layers) is reported as changed, its reports not compared decision by decision
"$fc" check tiny-llama --mode decode --layers 1 --db "$tmp/d.db" --no-progress >/dev/null 2>&1
expect 1 "db diff of a changed graph" -- "$fc" db diff 1 4 --db "$tmp/d.db"
contains "$tmp/out" "tiny-llama decode: graph changed:" "the changed graph is named"
contains "$tmp/out" "nothing else to compare" "no decision changes claimed for a changed graph"
if grep -q "fired ->" "$tmp/out"; then fail=$((fail+1)); echo "FAIL: decisions of a changed graph compared"; else pass=$((pass+1)); fi
# the same file twice: its runs once, the second copy's skipped as held already
expect 0 "db merge" -- "$fc" db merge "$tmp/r.db" "$tmp/r.db" -o "$tmp/m.db"
contains "$tmp/out" "2 runs added, 2 skipped" "merge skips the runs it holds"
"$fc" db runs --db "$tmp/m.db" > "$tmp/runs"
if [ "$(grep -c complete "$tmp/runs")" -eq 2 ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: merge keeps 2 runs"; fi
expect 2 "db merge onto an existing file" -- "$fc" db merge "$tmp/r.db" -o "$tmp/m.db"
contains "$tmp/err" "exists; --append adds to it, --force replaces it" "merge refuses an existing output"
expect 0 "db merge --append" -- "$fc" db merge "$tmp/r.db" -o "$tmp/m.db" --append
contains "$tmp/out" "0 runs added, 2 skipped" "appending what it holds adds nothing"
expect 2 "check into a missing directory" -- "$fc" check tiny-llama --db "$tmp/no/such/dir/r.db" --no-progress
echo "not a database at all, just text that is long enough to be a header......................." > "$tmp/junk.db"
expect 2 "check into a non-db" -- "$fc" check tiny-llama --db "$tmp/junk.db" --no-progress
contains "$tmp/err" "not a database" "non-db message"

# every command's --help (or -h) shows its usage and exits 0
expect 0 "check --help" -- "$fc" check --help
contains "$tmp/out" "fusecheck check [MODEL...]" "check --help shows its usage"
expect 0 "db merge -h" -- "$fc" db merge -h
contains "$tmp/out" "[--append | --force]" "db's usage names merge's options"
# a mode past a model's context is refused before anything runs, and nothing is written
expect 2 "a mode past the context" -- "$fc" check tiny-llama --mode prefill:65 --db "$tmp/ctx.db" --no-progress
contains "$tmp/err" "65 rows exceed the context of tiny-llama, 64 rows" "the context is named"
if [ ! -e "$tmp/ctx.db" ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: a refused check wrote a db"; fi
# prove's output directories must be writable, and replays need their fixtures
expect 2 "prove --smt2 into nowhere" -- "$fc" prove add_norm --smt2 /proc/fusecheck-nowhere
contains "$tmp/err" "not a directory fusecheck can write into" "the unwritable directory is named"
expect 2 "prove --replay without fixtures" -- "$fc" prove add_norm --replay "$tmp/rp" --fixtures "$tmp/no-fixtures"
contains "$tmp/err" "--fixtures $tmp/no-fixtures: no such directory" "the missing fixtures are named"
# a lift option with a file is refused, not ignored
"$fc" lift tiny-llama -o "$tmp/lifted.fc" 2>/dev/null
expect 2 "--mode with a file" -- "$fc" optimize "$tmp/lifted.fc" --mode decode --shim reference
contains "$tmp/err" "--mode applies to a zoo MODEL, not to the file" "the option and the file are named"
# a Z3 timeout in validate-run is unknown, as prove calls it, not a failure; the run still does not pass (whether Z3
# times out in 1 ms depends on the machine: the checks hold whenever it does)
"$fc" validate-run tiny-llama --shim reference --timeout-ms 1 >"$tmp/out" 2>&1
vr=$?
if grep -q "UNKNOWN: named row: unknown (z3:" "$tmp/out"; then
  contains "$tmp/out" ": 22 rewrites, 22 checked, 0 failed," "a timeout is not counted as failed"
  if [ "$vr" -eq 1 ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: an unknown run exits $vr, wanted 1"; fi
fi
# a part of the run that cannot be checked is a failure kept in results.db too, not only printed
expect 1 "a graph too large to evaluate" -- "$fc" check qwen3-30b-a3b --mode decode --shim none --eval-real --db "$tmp/f.db" --no-progress
n=$(sqlite3 "$tmp/f.db" "SELECT count(*) FROM run_failures WHERE graph = 'qwen3-30b-a3b' AND stage = 'lift' AND reason LIKE '%evaluator''s limit%'")
if [ "$n" = 1 ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: the failure is not in run_failures ($n)"; fi
# values that cannot be right are refused, never clamped or ignored; a name given twice runs once
expect 2 "an unknown held step" -- "$fc" optimize tiny-llama --shim reference --hold nonsense
contains "$tmp/err" "'nonsense' is no step under reference" "the unknown step is named"
expect 2 "an empty held step" -- "$fc" diff tiny-llama --shim reference --hold ''
expect 2 "a seed past 2^64" -- "$fc" diff tiny-llama --shim reference --seed 18446744073709551616
expect 0 "a seed of 2^64-1" -- "$fc" diff tiny-llama --shim reference --seed 18446744073709551615
expect 0 "duplicates run once" -- "$fc" check tiny-llama tiny-llama --mode decode --mode decode --shim none --shim none --db "$tmp/dup.db" --no-progress
contains "$tmp/out" "1 graphs, 1 reports" "one graph, one report"
# a regression staged on purpose: the same check with a rule held shows in decision_changes and fails db diff
expect 0 "check, nothing held" -- "$fc" check tiny-llama --mode decode --shim reference --db "$tmp/h.db" --no-progress
expect 0 "check, add_norm held" -- "$fc" check tiny-llama --mode decode --shim reference --hold add_norm --db "$tmp/h.db" --no-progress
expect 1 "db diff of the staged regression" -- "$fc" db diff 1 2 --db "$tmp/h.db"
contains "$tmp/out" "add_norm add_norm" "the held rule's decisions are listed"
contains "$tmp/out" "fired -> held" "as held"
n=$(sqlite3 "$tmp/h.db" "SELECT count(*) FROM decision_changes WHERE run_before = 1 AND run_after = 2 AND rule = 'add_norm' AND outcome_after = 'held'")
if [ "$n" -gt 0 ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: decision_changes lacks the held rule"; fi
expect 2 "check --hold of no step" -- "$fc" check tiny-llama --mode decode --shim reference --hold nonsense --db "$tmp/h2.db" --no-progress
contains "$tmp/err" "fusecheck: check: --hold: 'nonsense' is no step" "the unknown hold is named"
if [ -e "$tmp/h2.db" ]; then fail=$((fail+1)); echo "FAIL: a refused check wrote a db"; else pass=$((pass+1)); fi
# the rules' fixture cases beside the zoo: all pass; a case whose directive the optimizer does not meet fails the
# run (exit 1), named on stderr and kept in run_failures; a folder that is not there is refused before any db
expect 0 "check --fixtures" -- "$fc" check tiny-llama --mode decode --shim none --fixtures tests/rules --db "$tmp/fx.db" --no-progress
contains "$tmp/out" "fixtures: " "the fixture cases are counted"
contains "$tmp/out" " 0 failed" "no fixture case fails"
mkdir -p "$tmp/fx/row_write"
sed 's/fires: row_write row_write \[0, 1\] fired/fires: row_write row_write [0, 2] fired/' tests/rules/row_write/fixed_rows.fc > "$tmp/fx/row_write/fixed_rows.fc"
cp tests/rules/row_write/fixed_rows.expected "$tmp/fx/row_write/"
expect 1 "check --fixtures with a case the optimizer misses" -- "$fc" check tiny-llama --mode decode --shim none --fixtures "$tmp/fx" --db "$tmp/fx.db" --no-progress
contains "$tmp/err" "fixed_rows.fc: no report line 'row_write row_write [0, 2] fired'" "the missed directive is named"
n=$(sqlite3 "$tmp/fx.db" "SELECT count(*) FROM run_failures WHERE run = 2 AND stage = 'fixture' AND graph LIKE '%fixed_rows.fc' AND shim = 'reference'")
if [ "$n" -gt 0 ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: the fixture failure is not in run_failures"; fi
expect 2 "check --fixtures of no folder" -- "$fc" check tiny-llama --mode decode --fixtures "$tmp/no-such" --db "$tmp/fx2.db" --no-progress
contains "$tmp/err" "no such folder" "the missing folder is named"
if [ -e "$tmp/fx2.db" ]; then fail=$((fail+1)); echo "FAIL: a refused check wrote a db"; else pass=$((pass+1)); fi
expect 2 "check --fixtures under the seed's rules" -- "$fc" check tiny-llama --mode decode --fixtures tests/rules --seed-rules --db "$tmp/fx2.db" --no-progress
# the lane's hold knob and --hold mean the same: the same report, the same shim name
lane=cuda-lane:h100:int8
expect 0 "knob hold" -- "$fc" optimize tiny-llama --shim "$lane:hold=gemv_parts" --report
cp "$tmp/out" "$tmp/knob"
expect 0 "--hold of a lane rule" -- "$fc" optimize tiny-llama --shim "$lane" --hold gemv_parts --report
if cmp -s "$tmp/out" "$tmp/knob"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: hold=gemv_parts and --hold gemv_parts differ"; fi
expect 0 "check --hold of a lane rule" -- "$fc" check tiny-llama --mode decode --shim "$lane" --hold gemv_parts --db "$tmp/k.db" --no-progress
n=$(sqlite3 "$tmp/k.db" "SELECT count(*) FROM shims WHERE name = '$lane:hold=gemv_parts'")
if [ "$n" = 1 ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: the held lane's shim name lacks :hold="; fi
# every holdable thing is listed, the kernel fact rows_a_warp too, and holds
expect 0 "rules under the lane" -- "$fc" rules --shim "$lane"
contains "$tmp/out" "rows_a_warp" "rows_a_warp listed"
expect 0 "--hold rows_a_warp" -- "$fc" optimize tiny-llama --shim "$lane" --hold rows_a_warp
# one message form, fusecheck: <what>: <why>; a directory or an empty file is no results file
expect 2 "a directory as a db" -- "$fc" db runs --db "$tmp"
contains "$tmp/err" "fusecheck: db: $tmp: is a directory, not a results file" "a directory is named as such"
: > "$tmp/empty.db"
expect 2 "an empty file as a db" -- "$fc" db runs --db "$tmp/empty.db"
contains "$tmp/err" "holds no fusecheck results" "an empty file is named as such"
# --ctx: the context a MODEL lifts with — its caches and rotary tables that many rows; a chunk past it refused
expect 0 "lift --ctx 128" -- "$fc" lift tiny-llama --ctx 128
contains "$tmp/out" "tensor rope.cos f32 128x32 constant" "the rotary tables take the context"
contains "$tmp/out" "tensor blk.0.k_cache f32 128x128 state carried" "the caches take the context"
expect 0 "lift, the model's context" -- "$fc" lift tiny-llama
contains "$tmp/out" "tensor blk.0.k_cache f32 64x128 state carried" "the default is the model's context"
expect 2 "a chunk past --ctx" -- "$fc" lift tiny-llama --mode prefill:16 --ctx 8
contains "$tmp/err" "fusecheck: tiny-llama: " "the model is named"
contains "$tmp/err" "16 rows exceed the context of 8 rows" "the context is named"
expect 2 "--ctx 0" -- "$fc" lift tiny-llama --ctx 0
expect 2 "--ctx past 2^24" -- "$fc" lift tiny-llama --ctx 16777217
"$fc" lift tiny-llama -o "$tmp/ctxfile.fc" 2>/dev/null
expect 2 "--ctx with a file" -- "$fc" print "$tmp/ctxfile.fc" --ctx 8
expect 0 "check past the model's context, within --ctx" -- "$fc" check tiny-llama --mode prefill:100 --ctx 128 --shim reference --db "$tmp/ctx.db" --no-progress
contains "$tmp/out" "0 mismatches" "the long chunk checks"
for cmd in eval diff validate-run tolerance; do
  "$fc" help "$cmd" >"$tmp/out" 2>&1
  contains "$tmp/out" "--ctx N" "$cmd takes --ctx"
done
contains "$tmp/out" "default the model's" "help states the default"
# proofs any SMT solver reads: standard SMT-LIB 2.6 (a logic, plain symbols), re-decided by a second solver
expect 0 "prove --smt2" -- "$fc" prove add_norm glu_pair --smt2 "$tmp/smt2"
n=$(cat "$tmp"/smt2/*.smt2 | grep -cE '[A-Za-z_][A-Za-z0-9_]*![0-9]')
if [ "$n" = 0 ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: $n lines with Z3's own symbols (x!N)"; fi
if grep -L "^(set-logic ALL)" "$tmp"/smt2/*.smt2 | grep -q .; then fail=$((fail+1)); echo "FAIL: a query without its logic"; else pass=$((pass+1)); fi
expect 2 "--cross-check of an unknown solver" -- "$fc" prove add_norm --cross-check yices
# a second solver that decides otherwise, or cannot read the query, fails the run (stand-ins on PATH)
mkdir -p "$tmp/bin-sat" "$tmp/bin-err"
printf '#!/bin/sh\n[ "$1" = --version ] && exit 0\necho sat\n' > "$tmp/bin-sat/cvc5"
printf '#!/bin/sh\n[ "$1" = --version ] && exit 0\necho "(error \\"Parse Error\\")"\n' > "$tmp/bin-err/cvc5"
chmod +x "$tmp/bin-sat/cvc5" "$tmp/bin-err/cvc5"
expect 1 "a solver that disagrees" -- env PATH="$tmp/bin-sat:$PATH" "$fc" prove add_norm --cross-check cvc5 --db "$tmp/x.db"
contains "$tmp/out" "1 disagree, 0 undecided by one of them; first: add_norm.dataflow.any: z3 proved, cvc5 refuted" "the disagreement is named"
n=$(sqlite3 "$tmp/x.db" "SELECT count(*) FROM proof_disagreements WHERE solver = 'cvc5' AND z3 = 'proved' AND other = 'refuted'")
if [ "$n" -ge 1 ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: proof_disagreements lacks the disagreement"; fi
expect 1 "a solver that cannot read the query" -- env PATH="$tmp/bin-err:$PATH" "$fc" prove add_norm --cross-check cvc5
contains "$tmp/out" "cvc5 could not read the query" "the unreadable query is named"
if command -v cvc5 >/dev/null; then
  expect 0 "cvc5 agrees with z3" -- "$fc" prove add_norm glu_pair row_write --cross-check cvc5
  contains "$tmp/out" "0 disagree" "no disagreement"
else
  echo "cli: skipping the real cvc5 cross-check (cvc5 not installed)"
fi
# pictures: the optimization as Graphviz text, fused ops as clusters by rule, refusals as dashed notes
expect 0 "dot" -- "$fc" dot tiny-llama --layers 1 --shim cuda-lane:h100:int8 -o "$tmp/g.dot"
contains "$tmp/g.dot" "digraph fusecheck {" "a digraph"
contains "$tmp/g.dot" 'label="merged_qkv by gemv_parts"' "a cluster names its class and rule"
contains "$tmp/g.dot" "style=dashed" "refusals drawn dashed"
contains "$tmp/g.dot" "refused: products of one activation" "with the chip's reason"
n=$(grep -c "^  op[0-9]* -> op" "$tmp/g.dot")
if [ "$n" -ge 20 ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: $n dataflow edges"; fi
expect 2 "--svg elsewhere" -- "$fc" optimize tiny-llama --shim reference --svg
if command -v dot >/dev/null; then
  expect 0 "dot --svg" -- "$fc" dot tiny-llama --layers 1 --shim reference --svg -o "$tmp/g.svg"
  contains "$tmp/g.svg" "<svg" "an SVG"
  contains "$tmp/g.svg" "embed_norm by embed_norm" "the clusters in it"
else
  echo "cli: skipping dot --svg (Graphviz's dot not installed)"
fi
echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
