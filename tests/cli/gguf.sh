#!/usr/bin/env bash
# An independent reader agrees: every file `fusecheck export` writes (every tiny zoo model, a block format each, and
# a config.json) read by the npm package @huggingface/gguf gives every metadata key (name, type, value; floats bit
# for bit), every tensor's name, shape, type and offset, the version and where the data section begins as
# `fusecheck gguf` reads them. The package is installed into a scratch folder; where node, npm or the registry is
# not there, the test skips (77), saying so.
. "$(dirname "$0")/lib.bash" "$1"
here=$(cd "$(dirname "$0")" && pwd)

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "cli_gguf: skipped: node or npm is not installed"; exit 77
fi
mkdir -p "$tmp/npm"
if ! (cd "$tmp/npm" && timeout 300 npm install --silent --no-audit --no-fund @huggingface/gguf >"$tmp/npm.log" 2>&1); then
  echo "cli_gguf: skipped: npm could not install @huggingface/gguf (no registry?):"; tail -3 "$tmp/npm.log"; exit 77
fi
cp "$here/gguf/read.mjs" "$tmp/npm/"

formats=(q8_0 q4_0 q4_k q6_k f16 bf16 f32)
i=0 files=()
for m in $("$fc" models | awk 'NR > 1 && $1 ~ /^tiny-/ {print $1}'); do
  w=${formats[$((i % ${#formats[@]}))]}; i=$((i + 1))
  expect 0 "export $m --weights $w" -- "$fc" export "$m" --weights "$w" --mode prefill:4 -o "$tmp/$m.gguf"
  files+=("$m")
done
expect 0 "export a config.json" -- "$fc" export tests/data/configs/tiny-qwen3.json -o "$tmp/cfg.gguf"
files+=(cfg)
keys=0 tensors=0
for m in "${files[@]}"; do
  "$fc" gguf "$tmp/$m.gguf" | grep -v '^alignment ' >"$tmp/ours" 2>&1
  (cd "$tmp/npm" && node read.mjs "$tmp/$m.gguf") >"$tmp/theirs" 2>&1
  if [ -s "$tmp/ours" ] && cmp -s "$tmp/ours" "$tmp/theirs"; then ok; else bad "$m: the readers differ"; diff "$tmp/ours" "$tmp/theirs" | head -10; fi
  keys=$((keys + $(grep -c '^kv ' "$tmp/ours"))) tensors=$((tensors + $(grep -c '^tensor ' "$tmp/ours")))
done
echo "cli_gguf: ${#files[@]} files, $keys keys (name, type, value) and $tensors tensors (name, shape, type, offset) compared"
[ "$keys" -gt 100 ] && [ "$tensors" -gt 100 ] && ok || bad "too little compared"
echo "cli_gguf: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
