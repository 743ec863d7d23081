#!/usr/bin/env bash
# Every exit honest (issue 32, "Output and exit codes"): standard output lost is exit 2 with `fusecheck: stdout: why`
# (a command that failed keeps its code); an empty graph file is refused unless --allow-empty; a flag without its
# value says so; one --layers rule; check --tolerance without a lane shim refused; a graph too large to evaluate is a
# resource refusal (exit 2, the bytes it needed); a read-only file system named; db merge names its output; the plant
# list whole; prove's table in columns; tolerance's header only above rows; help laid out and described.
. "$(dirname "$0")/lib.bash" "$1"
check() { if eval "$1"; then ok; else bad "$2"; fi; }
# says CODE TEXT DESCRIPTION -- COMMAND...: the exit code, and the text in stderr.
says() {
  local code=$1 text=$2 what=$3; shift 4
  expect "$code" "$what" -- "$@"
  contains "$tmp/err" "$text" "$what: the message"
}

"$fc" check tiny-llama --mode decode --shim reference --db "$tmp/r.db" --no-progress >/dev/null 2>&1
"$fc" export tiny-llama --layers 1 -o "$tmp/t.gguf" >/dev/null 2>&1
"$fc" lift tiny-llama -o "$tmp/g.fc" 2>/dev/null

# ── Standard output lost: every command that writes it, against /dev/full ───────────────────────────────────────
full() { # full DESCRIPTION -- COMMAND...: exit 2 and the message, stdout a full device
  local what=$1; shift 2
  "$@" >/dev/full 2>"$tmp/err"; local got=$?
  if [ "$got" -eq 2 ] && grep -qF "fusecheck: stdout: No space left on device" "$tmp/err"; then ok
  else bad "$what > /dev/full: exit $got, wanted 2 with 'fusecheck: stdout: ...'"; head -3 "$tmp/err"; fi
}
full "eval" -- "$fc" eval tiny-qwen3 --layers 1
full "models" -- "$fc" models
full "shims" -- "$fc" shims
full "rules" -- "$fc" rules
full "gguf" -- "$fc" gguf "$tmp/t.gguf"
full "validate-run" -- "$fc" validate-run tiny-qwen3 --shim reference --layers 1
full "coverage" -- "$fc" coverage --shim reference
full "launches" -- "$fc" launches --layers 1 --mode decode --shim cuda-lane:h100:int8
full "db runs" -- "$fc" db runs --db "$tmp/r.db"
full "db diff" -- "$fc" db diff 1 1 --db "$tmp/r.db"
full "tolerance --all" -- "$fc" tolerance tiny-qwen3 --shim cuda-lane:h100:int8 --layers 1 --all
full "diff" -- "$fc" diff tiny-qwen3 --shim reference --layers 1
full "prove add_norm" -- "$fc" prove add_norm
full "print" -- "$fc" print "$tmp/g.fc"
full "lift" -- "$fc" lift tiny-llama
full "optimize" -- "$fc" optimize tiny-llama --shim reference
full "dot" -- "$fc" dot tiny-llama --shim reference
full "report -o -" -- "$fc" report --db "$tmp/r.db" -o -
full "eval --logits -" -- "$fc" eval tiny-qwen3 --layers 1 --tokens 1,2 --logits -
full "check" -- "$fc" check tiny-llama --mode decode --shim reference --db "$tmp/full.db" --no-progress
full "validate" -- "$fc" validate "$tmp/g.fc"
full "golden" -- "$fc" golden tiny-llama
full "fuzz atoms" -- "$fc" fuzz atoms
full "help" -- "$fc" help
full "help eval" -- "$fc" help eval
full "--version" -- "$fc" --version
# a closed standard output is a loss too
"$fc" models >&- 2>"$tmp/err"
check '[ $? -eq 2 ] && grep -q "fusecheck: stdout: Bad file descriptor" "$tmp/err"' "models with stdout closed"
# a command that failed keeps its own code, the loss still said; one that wrote nothing to stdout loses nothing
FUSECHECK_PLANT=drop_keep "$fc" diff tiny-qwen3-moe --shim cuda-lane:h100:int8 >/dev/full 2>"$tmp/err"
check '[ $? -eq 1 ] && grep -q "fusecheck: stdout:" "$tmp/err"' "a failed diff keeps exit 1 with stdout lost"
"$fc" lift tiny-llama -o "$tmp/quiet.fc" >/dev/full 2>"$tmp/err"
check '[ $? -eq 0 ] && [ ! -s "$tmp/err" ]' "lift -o FILE writes nothing to stdout: exit 0"
mkdir -p "$tmp/replays/add_norm.first_reader.fc" # a replay's file that cannot be written (a directory in its place)
"$fc" prove --mutants add_norm --replay "$tmp/replays" >"$tmp/out" 2>"$tmp/err"
check '[ $? -eq 2 ] && grep -q "add_norm.first_reader.fc: Is a directory" "$tmp/err"' "prove: a replay not written is exit 2"
"$fc" eval no-such-model >/dev/full 2>"$tmp/err"
check '[ $? -eq 2 ] && ! grep -q "stdout:" "$tmp/err"' "a usage error with nothing written says nothing of stdout"

# ── An empty graph file ────────────────────────────────────────────────────────────────────────────────────────
: >"$tmp/e.fc"
printf '# a comment, no tensor, no op\n\n' >"$tmp/c.fc"
says 2 "e.fc:1:1: empty graph" "validate an empty file" -- "$fc" validate "$tmp/e.fc"
says 2 "c.fc:1:1: empty graph" "validate a file of comments" -- "$fc" validate "$tmp/c.fc"
says 2 "stdin:1:1: empty graph" "validate - (empty)" -- "$fc" validate - <"$tmp/e.fc"
says 2 "e.fc:1:1: empty graph" "print an empty file" -- "$fc" print "$tmp/e.fc"
says 2 "e.fc:1:1: empty graph" "eval an empty file" -- "$fc" eval "$tmp/e.fc"
says 2 "e.fc:1:1: empty graph" "optimize an empty file" -- "$fc" optimize "$tmp/e.fc" --shim reference
says 2 "e.fc:1:1: empty graph" "diff an empty file" -- "$fc" diff "$tmp/e.fc" --shim reference
says 2 "e.fc:1:1: empty graph" "dot an empty file" -- "$fc" dot "$tmp/e.fc" --shim reference
says 2 "e.fc:1:1: empty graph" "validate-run an empty file" -- "$fc" validate-run "$tmp/e.fc" --shim reference
says 2 "e.fc:1:1: empty graph" "tolerance an empty file" -- "$fc" tolerance "$tmp/e.fc" --shim cuda-lane:h100:int8
contains "$tmp/err" "--allow-empty" "the refusal names the flag"
expect 0 "validate --allow-empty" -- "$fc" validate --allow-empty "$tmp/e.fc"
contains "$tmp/out" "ok (0 tensors, 0 ops)" "validate --allow-empty says ok"
expect 0 "diff --allow-empty" -- "$fc" diff "$tmp/e.fc" --shim reference --allow-empty
contains "$tmp/out" "identical" "diff --allow-empty compares"
expect 0 "print --allow-empty" -- "$fc" print "$tmp/c.fc" --allow-empty
says 2 "lift lifts a MODEL" "lift --allow-empty" -- "$fc" lift tiny-llama --allow-empty
expect 0 "a graph file with a tensor is no empty graph" -- "$fc" validate "$tmp/g.fc"

# ── A flag without its value ───────────────────────────────────────────────────────────────────────────────────
needs() { # needs OPTION -- COMMAND...: exit 2, "OPTION needs a value"
  local opt=$1; shift 2
  says 2 "$opt needs a value" "$* (no value)" -- "$@"
  check '! grep -q "unknown option" "$tmp/err"' "$*: not 'unknown option'"
}
needs --layers -- "$fc" lift tiny-qwen3 --layers
needs --mode -- "$fc" print tiny-llama --mode
needs -o -- "$fc" print tiny-llama -o
needs --ctx -- "$fc" export tiny-llama --ctx
needs --seed -- "$fc" eval tiny-qwen3 --seed
needs --tokens -- "$fc" eval tiny-qwen3 --tokens
needs --shim -- "$fc" rules --shim
needs --shim -- "$fc" optimize tiny-llama --shim
needs --hold -- "$fc" diff tiny-llama --shim reference --hold
needs --shim -- "$fc" dot tiny-llama --shim
needs --shim -- "$fc" coverage --shim
needs --db -- "$fc" check tiny-llama --db
needs --db -- "$fc" db runs --db
needs --db -- "$fc" db diff 1 2 --db
needs -o -- "$fc" db merge "$tmp/r.db" -o
needs --rules -- "$fc" fuzz seeds "$tmp/seeds" --rules
needs --shim -- "$fc" fuzz atoms --shim
needs --db -- "$fc" fuzz begin --db
needs --db -- "$fc" fuzz end 1 complete --db
needs --seconds -- "$fc" fuzz code-mutant --run 1 --id a.c:1:1:op --outcome survived --seconds
needs --timeout-ms -- "$fc" prove add_norm --timeout-ms
needs --shim -- "$fc" validate-run tiny-llama --shim
needs --steps -- "$fc" tolerance tiny-llama --shim cuda-lane:h100:int8 --steps
needs --layers -- "$fc" launches --layers
needs --dir -- "$fc" golden --dir
needs --run -- "$fc" report --db "$tmp/r.db" --run
needs -o -- "$fc" report --db "$tmp/r.db" -o
needs --tokens -- "$fc" crosscheck tiny-llama --tokens
says 2 "--no-progress takes no value" "a flag given a value" -- "$fc" check --no-progress=1
says 2 "unknown option '--frobnicate'" "an unknown option is still unknown" -- "$fc" eval tiny-qwen3 --frobnicate

# ── --layers: one rule, one message, the range stated ──────────────────────────────────────────────────────────
rule="expected a count of 1..1024 (at most the model's layers) or 'all'"
says 2 "--layers: $rule, got '0'" "lift --layers 0" -- "$fc" lift tiny-llama --layers 0
says 2 "--layers: $rule, got '0'" "launches --layers 0" -- "$fc" launches --layers 0
says 2 "--layers: $rule, got '1025'" "check --layers 1025" -- "$fc" check tiny-llama --layers 1025 --db "$tmp/l.db"
says 2 "model 'tiny-llama' has 2 layers (a count of 1..2, or all)" "lift --layers past the model's" -- "$fc" lift tiny-llama --layers 3
expect 0 "lift --layers all" -- "$fc" lift tiny-llama --layers all -o "$tmp/all.fc"
check 'cmp -s "$tmp/all.fc" "$tmp/g.fc"' "--layers all lifts every layer"
expect 0 "lift --layers 1" -- "$fc" lift tiny-llama --layers 1
for cmd in lift eval check launches; do
  "$fc" help "$cmd" >"$tmp/out" 2>&1
  contains "$tmp/out" "--layers N|all" "help $cmd states --layers N|all"
done
"$fc" help eval >"$tmp/out"; "$fc" help >>"$tmp/out"
contains "$tmp/out" "a MODEL's first N layers: a count of 1..the model's layers" "help eval states the range"
contains "$tmp/out" "--layers N|all (N of 1..the model's layers; default" "help states the range"
"$fc" lift tiny-llama --layers 9 2>>"$tmp/out"
check '! grep -qE "0 = all|positive count" "$tmp/out"' "no message says (0 = all) or a positive count"

# ── check --tolerance needs a lane shim ────────────────────────────────────────────────────────────────────────
says 2 "it needs a lane shim, --shim cuda-lane:" "check --tolerance under reference" -- "$fc" check tiny-llama --tolerance --shim reference --db "$tmp/t1.db"
check '[ ! -e "$tmp/t1.db" ]' "the refused run writes no results file"
says 2 "it needs a lane shim" "check --tolerance under the default shims" -- "$fc" check tiny-llama --tolerance --db "$tmp/t2.db"
expect 0 "check --tolerance under a lane shim" -- "$fc" check tiny-llama --mode decode --tolerance --shim cuda-lane:h100:int8 --db "$tmp/t3.db" --no-progress
check 'grep -q "^tolerance: 1 graphs, [1-9]" "$tmp/out"' "the lane's launches are compared"

# ── A graph too large to evaluate: a resource refusal ──────────────────────────────────────────────────────────
need="the graph's values need 38656284684 bytes (36.0 GiB), more than the evaluator's limit of 17179869184 bytes"
says 2 "fusecheck: eval: $need" "eval --ctx 16777216" -- "$fc" eval tiny-qwen3 --ctx 16777216
says 2 "fusecheck: diff: $need" "diff --ctx 16777216" -- "$fc" diff tiny-qwen3 --ctx 16777216 --shim reference
says 2 "fusecheck: tolerance: the graph's values need" "tolerance --ctx 16777216" -- "$fc" tolerance tiny-qwen3 --ctx 16777216 --shim cuda-lane:h100:int8
check '[ ! -s "$tmp/out" ]' "tolerance refused prints no table"

# ── A read-only file system, named as such (needs a mount: root in a container that allows it) ─────────────────
ro="$tmp/ro"
mkdir "$ro"
if [ "$(id -u)" = 0 ] && mount -t tmpfs tmpfs "$ro" 2>/dev/null; then
  trap 'umount "$ro" 2>/dev/null; rm -rf "$tmp"' EXIT
  "$fc" check tiny-llama --mode decode --shim reference --db "$ro/r.db" --no-progress >/dev/null 2>&1
  mount -o remount,ro "$ro"
  says 2 "r.db: on a read-only file system" "check into a results file on a read-only file system" -- "$fc" check tiny-llama --mode decode --shim reference --db "$ro/r.db" --no-progress
  says 2 "new.db: cannot open: on a read-only file system" "check making a results file on a read-only file system" -- "$fc" check tiny-llama --mode decode --shim reference --db "$ro/new.db" --no-progress
  says 2 "on a read-only file system" "fuzz begin on a read-only file system" -- "$fc" fuzz begin --db "$ro/r.db"
  says 2 "writing $ro/x.fc: Read-only file system" "lift -o onto a read-only file system" -- "$fc" lift tiny-llama -o "$ro/x.fc"
  says 2 "db merge: $ro/m.db: cannot open: on a read-only file system" "db merge -o onto a read-only file system" -- "$fc" db merge "$tmp/r.db" -o "$ro/m.db"
  check '! grep -q "\.merge\." "$tmp/err"' "db merge names its output, not its temporary file"
  expect 0 "db runs reads a results file on a read-only file system" -- "$fc" db runs --db "$ro/r.db"
  umount "$ro"
else
  echo "note: no read-only mount here (not root, or mounts refused): the read-only file system checks skipped"
fi
says 2 "db merge: $tmp/none/m.db: cannot open" "db merge -o DIR/m.db names its output" -- "$fc" db merge "$tmp/r.db" -o "$tmp/none/m.db"
check '! grep -q "\.merge\." "$tmp/err"' "db merge's message names no temporary file"

# ── The small ones ─────────────────────────────────────────────────────────────────────────────────────────────
# FUSECHECK_PLANT: help and the refusal name every plant, the optimizer's and the evaluator's
"$fc" help >"$tmp/help"
env FUSECHECK_PLANT=nonsense "$fc" models 2>"$tmp/plant"
for p in drop_keep wrong_operand quant_words repeat_refusal source_first rope_base; do
  contains "$tmp/help" "$p" "help names the plant $p"
  contains "$tmp/plant" "$p" "FUSECHECK_PLANT's refusal names $p"
done
contains "$tmp/help" "130/143" "help states the exit codes of an interruption"
contains "$tmp/help" "a resource refusal" "help states a resource refusal's exit code"
# prove's table keeps its columns with long obligation names (index obligations, atoms dropped)
"$fc" prove slice_read row_write join_in_place >"$tmp/prove" 2>&1
"$fc" prove --mutants add_norm 2>&1 | grep -E " (proved|refuted|unknown) " >>"$tmp/prove"
cols=$(awk 'match($0, / (proved|refuted|unknown) +(windows|a window|-)/) { print RSTART }' "$tmp/prove" | sort -u | wc -l)
rows=$(grep -cE " (proved|refuted|unknown) " "$tmp/prove")
check '[ "$cols" = 1 ] && [ "$rows" -gt 10 ]' "prove's verdicts in one column ($cols columns over $rows rows)"
# tolerance prints its table's header only above rows: none without --all when every row passes
expect 0 "tolerance without --all" -- "$fc" tolerance tiny-qwen3 --shim cuda-lane:h100:int8 --layers 1
check '! grep -q "^step launch kernel" "$tmp/out"' "tolerance without --all prints no empty header"
expect 0 "tolerance --all" -- "$fc" tolerance tiny-qwen3 --shim cuda-lane:h100:int8 --layers 1 --all
check '[ "$(grep -c "^step launch kernel" "$tmp/out")" = 1 ]' "tolerance --all heads its table once"
# every command's help is laid out alike: each form of its usage on a line of its own, no line past 120 columns
for cmd in $("$fc" help | awk '/^  [a-z-]+ / { print $1 }'); do
  "$fc" help "$cmd" >"$tmp/h" 2>&1
  check '[ "$(awk "length > 120" "$tmp/h" | wc -l)" = 0 ]' "help $cmd: no line past 120 columns"
done
"$fc" fuzz --help >"$tmp/h"
check '[ "$(grep -c "^  fusecheck fuzz " "$tmp/h")" = 8 ]' "fuzz --help: each subcommand's form on a line of its own"
# every option prove's usage names has its description
"$fc" prove --help >"$tmp/h"
for opt in $(sed '/^options:/,$d' "$tmp/h" | grep -oE -- '--[a-z0-9-]+' | sort -u); do
  check 'grep -qE "^  $opt( |$)" "$tmp/h"' "prove --help describes $opt"
done
# no doubled quote in a message ('output.weight''s)
check '[ "$(strings "$fc" | grep -c "'"''"'s")" = 0 ]' "no message format writes a doubled quote"

echo "exits: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
