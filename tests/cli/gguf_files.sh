#!/usr/bin/env bash
# End-to-end: GGUF files where a command takes a MODEL. `fusecheck export` writes a zoo model or a config.json; lift
# reads it back to the same graph text and eval to the same bytes; diff, optimize, validate-run, check and
# tolerance take it; a hostile or incomplete file is exit 2 naming the byte or the tensor.
. "$(dirname "$0")/lib.bash" "$1"

# Round trip: the same graph text and the same evaluation, bit for bit, in every mode. A tied model's file has no
# head of its own (the head is the embedding), so its evaluation is compared with the zoo's only through a file:
# the file exported again from itself evaluates alike.
for m in tiny-qwen3-next:q4_k tiny-deepseek:q8_0 tiny-gemma2:bf16; do
  name=${m%%:*} w=${m##*:}
  expect 0 "export $name" -- "$fc" export "$name" --weights "$w" --seed 3 -o "$tmp/$name.gguf"
  for mode in decode prefill:8 batch:4; do
    a=$("$fc" lift "$name" --weights "$w" --mode "$mode" | sha256sum) b=$("$fc" lift "$tmp/$name.gguf" --mode "$mode" | sha256sum)
    if [ "$a" = "$b" ]; then ok; else bad "$name $mode: lift of the file differs"; fi
    if [ "$name" = tiny-gemma2 ]; then continue; fi
    "$fc" eval "$name" --weights "$w" --mode "$mode" --seed 3 >"$tmp/e1" 2>&1
    "$fc" eval "$tmp/$name.gguf" --mode "$mode" --seed 3 >"$tmp/e2" 2>&1
    if [ -s "$tmp/e1" ] && cmp -s "$tmp/e1" "$tmp/e2"; then ok; else bad "$name $mode: eval of the file differs"; fi
  done
done
expect 0 "export a file" -- "$fc" export "$tmp/tiny-gemma2.gguf" -o "$tmp/again.gguf"
"$fc" eval "$tmp/tiny-gemma2.gguf" --mode prefill:8 >"$tmp/e1" 2>&1
"$fc" eval "$tmp/again.gguf" --mode prefill:8 >"$tmp/e2" 2>&1
if [ -s "$tmp/e1" ] && cmp -s "$tmp/e1" "$tmp/e2"; then ok; else bad "the tied file exported again evaluates otherwise"; fi
# deepseek's per-head matrices at q6_k: a head's row is narrower than a block, so the file keeps them f32; the
# values, and so the evaluation, are the zoo's.
expect 0 "export deepseek q6_k" -- "$fc" export tiny-deepseek --weights q6_k --seed 3 -o "$tmp/ds6.gguf"
"$fc" eval tiny-deepseek --weights q6_k --mode prefill:8 --seed 3 >"$tmp/e1" 2>&1
"$fc" eval "$tmp/ds6.gguf" --mode prefill:8 --seed 3 >"$tmp/e2" 2>&1
if [ -s "$tmp/e1" ] && cmp -s "$tmp/e1" "$tmp/e2"; then ok; else bad "deepseek q6_k: eval of the file differs"; fi
# --layers N: a file of N layers, read back.
expect 0 "export --layers 1" -- "$fc" export tiny-qwen3-next --layers 1 -o "$tmp/l1.gguf"
"$fc" gguf "$tmp/l1.gguf" >"$tmp/out"
contains "$tmp/out" "kv qwen3next.block_count u32 1" "one layer written"
a=$("$fc" lift tiny-qwen3-next --layers 1 | sed 1d | sha256sum) b=$("$fc" lift "$tmp/l1.gguf" | sed 1d | sha256sum)
if [ "$a" = "$b" ]; then ok; else bad "the one-layer file lifts to another graph"; fi
# The file's weights, not the seed's: another seed changes only the inputs.
"$fc" eval tiny-qwen3-next --weights q4_k --seed 4 >"$tmp/e1" 2>&1
"$fc" eval "$tmp/tiny-qwen3-next.gguf" --seed 4 >"$tmp/e2" 2>&1
if ! cmp -s "$tmp/e1" "$tmp/e2"; then ok; else bad "seed 4 gave the zoo's weights, not the file's"; fi
expect 0 "export a config.json" -- "$fc" export tests/data/configs/tiny-llama.json -o "$tmp/cfg.gguf"
a=$("$fc" lift tiny-llama | sha256sum) b=$("$fc" lift "$tmp/cfg.gguf" | sha256sum)
if [ "$a" = "$b" ]; then ok; else bad "the config's file lifts to another graph"; fi

# Every command that takes a MODEL takes the file.
expect 0 "diff" -- "$fc" diff "$tmp/tiny-qwen3-next.gguf" --shim cuda-lane:h200:int8 --mode prefill:8
contains "$tmp/out" "bit for bit" "diff compared"
expect 0 "optimize" -- "$fc" optimize "$tmp/tiny-deepseek.gguf" --shim reference -o "$tmp/o.fc"
expect 0 "validate-run" -- "$fc" validate-run "$tmp/tiny-gemma2.gguf" --shim cuda-lane:h100:int8
expect 0 "check" -- "$fc" check "$tmp/tiny-deepseek.gguf" --mode decode --shim reference --db "$tmp/r.db" --no-progress
contains "$tmp/out" "1 graphs" "check lifted the file"
expect 0 "tolerance" -- "$fc" tolerance "$tmp/tiny-gemma2.gguf" --shim cuda-lane:h200:dequant --db "$tmp/t.db"

# Hostile and incomplete files: exit 2, the byte or the tensor named.
printf 'GGUF\003\000\000\000\377\377\377\377\377\377\377\377\000\000\000\000\000\000\000\000' >"$tmp/bad.gguf"
expect 2 "a huge tensor count" -- "$fc" lift "$tmp/bad.gguf"
contains "$tmp/err" "bad.gguf: byte 8: expected a tensor count" "the count's byte named"
head -c 100 "$tmp/cfg.gguf" >"$tmp/cut.gguf"
expect 2 "a truncated file" -- "$fc" eval "$tmp/cut.gguf"
contains "$tmp/err" "cut.gguf: byte " "the byte named"
python3 - "$tmp/cfg.gguf" "$tmp/miss.gguf" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(b.replace(b"blk.1.attn_v.weight", b"blk.1.attn_X.weight"))
PY
expect 2 "a missing tensor" -- "$fc" lift "$tmp/miss.gguf"
contains "$tmp/err" "miss.gguf: tensor blk.1.attn_v.weight: expected it in the file" "the tensor named"
expect 2 "--weights on a GGUF file" -- "$fc" lift "$tmp/cfg.gguf" --weights q4_0
contains "$tmp/err" "--weights does not apply to a GGUF file" "refused, saying why"
expect 2 "gguf on a hostile file" -- "$fc" gguf "$tmp/bad.gguf"
mkdir "$tmp/dir.gguf"
expect 2 "export over a directory" -- "$fc" export tiny-llama -o "$tmp/dir.gguf"
expect 2 "export without -o" -- "$fc" export tiny-llama
expect 0 help -- "$fc" help
contains "$tmp/out" "export" "help lists export"
contains "$tmp/out" "GGUF file" "help names the .gguf form"

echo "gguf_files: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
