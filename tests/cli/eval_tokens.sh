#!/usr/bin/env bash
# End-to-end: `fusecheck eval MODEL --tokens` — a chosen sequence run step by step (caches carried) or as one prefill
# chunk whose every row reaches the LM head; both give the same logits; --logits writes them raw or as .npy; bad
# sequences are exit 2.
. "$(dirname "$0")/lib.bash" "$1"
toks=3,1,4,1,5,9,2,6

# Every tiny family: decode step by step and one prefill chunk print the same top-k and the same digest of all logits.
for m in $("$fc" models | awk '$1 ~ /^tiny-/ {print $1}'); do
  "$fc" eval "$m" --tokens "$toks" --weights f32 > "$tmp/d" 2>&1
  "$fc" eval "$m" --tokens "$toks" --weights f32 --mode prefill:8 > "$tmp/p" 2>&1
  if grep -q '^logits 8x' "$tmp/d" && cmp -s "$tmp/d" "$tmp/p"; then ok; else bad "$m: decode and prefill differ"; diff "$tmp/d" "$tmp/p" | head -5; fi
done

# A step's logits depend on what came before: token 7 after token 5 is not token 7 alone.
expect 0 "eval --tokens" -- "$fc" eval tiny-qwen3 --tokens 5,7 --top 1
l1=$(sed -n 2p "$tmp/out" | awk '{print $6}')
contains "$tmp/out" "position 1 token 7 top" "a line a position"
expect 0 "eval --tokens alone" -- "$fc" eval tiny-qwen3 --tokens 7 --top 1
l0=$(sed -n 1p "$tmp/out" | awk '{print $6}')
if [ -n "$l0" ] && [ "$l0" != "$l1" ]; then ok; else bad "the second step ignored the first ($l0, $l1)"; fi

# --logits: raw little-endian f32 (n × vocab × 4 bytes), or .npy with its shape.
expect 0 "--logits raw" -- "$fc" eval tiny-llama --tokens 1,2,3 --logits "$tmp/l.f32"
if [ "$(stat -c %s "$tmp/l.f32")" -eq $((3 * 512 * 4)) ]; then ok; else bad "raw logits of the wrong size"; fi
expect 0 "--logits npy" -- "$fc" eval tiny-llama --tokens 1,2,3 --logits "$tmp/l.npy"
if head -c 6 "$tmp/l.npy" | tail -c 5 | grep -q NUMPY && grep -aq "'shape': (3, 512)" "$tmp/l.npy"; then ok; else bad "no .npy header"; fi
if cmp -s <(tail -c $((3 * 512 * 4)) "$tmp/l.npy") "$tmp/l.f32"; then ok; else bad ".npy data differs from raw"; fi
if [ $(( $(stat -c %s "$tmp/l.npy") % 64 )) -eq 0 ]; then ok; else bad ".npy header not padded to 64 bytes"; fi

# --activations q8_0: products by q8_0 rows take q8_0 activations (llama.cpp's CPU arithmetic): other logits for q8_0
# weights, the same for f32 weights (no such product).
"$fc" eval tiny-llama --tokens 1,2 --weights q8_0 > "$tmp/a" 2>&1
"$fc" eval tiny-llama --tokens 1,2 --weights q8_0 --activations q8_0 > "$tmp/b" 2>&1
if grep -q '^logits 2x' "$tmp/b" && ! cmp -s "$tmp/a" "$tmp/b"; then ok; else bad "--activations q8_0 changed nothing"; fi
"$fc" eval tiny-llama --tokens 1,2 --weights f32 > "$tmp/a" 2>&1
"$fc" eval tiny-llama --tokens 1,2 --weights f32 --activations q8_0 > "$tmp/b" 2>&1
if grep -q '^logits 2x' "$tmp/b" && cmp -s "$tmp/a" "$tmp/b"; then ok; else bad "--activations q8_0 changed f32 products"; fi
expect 2 "--activations bad" -- "$fc" eval tiny-llama --tokens 1 --activations q4_0
expect 2 "--activations alone" -- "$fc" eval tiny-llama --activations q8_0

# --last: a prefill's head over its last row alone (as llama.cpp runs a prompt): that position's line, the same
# logits as the full chunk's last row; --threads N changes no bit; a bad count is exit 2.
"$fc" eval tiny-qwen3-moe --tokens "$toks" --mode prefill:8 > "$tmp/all" 2>&1
expect 0 "eval --last" -- "$fc" eval tiny-qwen3-moe --tokens "$toks" --mode prefill:8 --last
if grep -q '^logits 1x' "$tmp/out" && [ "$(head -1 "$tmp/out")" = "$(grep '^position 7 ' "$tmp/all")" ]; then ok
else bad "--last is not the chunk's last row"; fi
expect 0 "eval --threads 3" -- "$fc" eval tiny-qwen3-moe --tokens "$toks" --mode prefill:8 --threads 3
if cmp -s "$tmp/out" "$tmp/all"; then ok; else bad "--threads 3 changed the logits"; fi
FUSECHECK_THREADS=2 "$fc" eval tiny-qwen3-moe --tokens "$toks" --mode prefill:8 > "$tmp/t2" 2>&1
if cmp -s "$tmp/t2" "$tmp/all"; then ok; else bad "FUSECHECK_THREADS=2 changed the logits"; fi
expect 2 "--threads 0" -- "$fc" eval tiny-llama --threads 0
contains "$tmp/err" "--threads expects a thread count in 1..64, got '0'" "says why"
expect 2 "--last alone" -- "$fc" eval tiny-llama --last

# Bad input: exit 2, nothing written.
expect 2 "token outside the vocabulary" -- "$fc" eval tiny-llama --tokens 1,512 --logits "$tmp/bad.f32"
contains "$tmp/err" "token 512 (position 1) is outside the vocabulary of 512" "names the token"
if [ ! -e "$tmp/bad.f32" ]; then ok; else bad "a refused run wrote its logits"; fi
expect 2 "empty item" -- "$fc" eval tiny-llama --tokens 1,,2
expect 2 "sign" -- "$fc" eval tiny-llama --tokens -1
expect 2 "--logits alone" -- "$fc" eval tiny-llama --logits "$tmp/x"
expect 2 "--top alone" -- "$fc" eval tiny-llama --top 3
expect 2 "prefill of another length" -- "$fc" eval tiny-llama --tokens 1,2 --mode prefill:3
contains "$tmp/err" "--mode prefill:3 takes 3 tokens, --tokens gives 2" "says why"
expect 2 "batch" -- "$fc" eval tiny-llama --tokens 1,2 --mode batch:2

echo "eval_tokens: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
