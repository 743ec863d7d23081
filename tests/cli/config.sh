#!/usr/bin/env bash
# End-to-end: a Hugging Face config.json where a command takes a MODEL — lift, eval, diff and check read it as the
# zoo row it describes (the same graph); a bad one is exit 2 naming file:line:col and the field.
. "$(dirname "$0")/lib.bash" "$1"
cfg=tests/data/configs

# Lifting the published qwen3-0.6b config.json gives the zoo's qwen3-0.6b graph, byte for byte, in every mode.
expect 0 "lift qwen3-0.6b.json" -- "$fc" lift "$cfg/qwen3-0.6b.json" -o "$tmp/cfg.fc"
expect 0 "lift qwen3-0.6b" -- "$fc" lift qwen3-0.6b -o "$tmp/zoo.fc"
if cmp -s "$tmp/cfg.fc" "$tmp/zoo.fc"; then ok; else bad "lift of the config differs from the zoo's"; fi
contains "$tmp/cfg.fc" "graph qwen3-0.6b family=qwen3 mode=decode" "the graph is named after the file"
for mode in prefill:8 batch:4; do
  "$fc" lift "$cfg/qwen3-0.6b.json" --mode "$mode" --layers 2 --ctx 512 > "$tmp/a" 2>&1
  "$fc" lift qwen3-0.6b --mode "$mode" --layers 2 --ctx 512 > "$tmp/b" 2>&1
  if [ -s "$tmp/a" ] && cmp -s "$tmp/a" "$tmp/b"; then ok; else bad "lift --mode $mode of the config differs"; fi
done
expect 0 "lift --weights" -- "$fc" lift "$cfg/qwen3-0.6b.json" --layers 1 --weights q4_0
contains "$tmp/out" "q4_0" "--weights applies to a config"

# Other commands that lift take it too: eval and diff of a tiny config match the zoo model's.
expect 0 "eval tiny-llama.json" -- "$fc" eval "$cfg/tiny-llama.json" --seed 5
"$fc" eval tiny-llama --seed 5 > "$tmp/e2" 2>/dev/null
if cmp -s "$tmp/out" "$tmp/e2"; then ok; else bad "eval of the config differs from the zoo's"; fi
expect 0 "diff tiny-gemma2.json" -- "$fc" diff "$cfg/tiny-gemma2.json" --shim reference --mode prefill:4
expect 0 "check a config" -- "$fc" check "$cfg/tiny-qwen3.json" --mode decode --db "$tmp/r.db" --no-progress
contains "$tmp/out" "1 graphs" "check lifted the config"
cp "$cfg/tiny-llama.json" "$tmp/tiny-llama-copy"
expect 0 "lift an existing file not named .json" -- "$fc" lift "$tmp/tiny-llama-copy"
contains "$tmp/out" "graph tiny-llama-copy family=llama" "named after the file"

# Refusals: exit 2, file:line:col and the field.
printf '{\n  "architectures": ["FooForCausalLM"]\n}\n' > "$tmp/unknown.json"
expect 2 "unknown architecture" -- "$fc" lift "$tmp/unknown.json"
contains "$tmp/err" "unknown.json:2:21: architectures: unknown architecture 'FooForCausalLM'" "names the architecture"
grep -v '"hidden_size"' "$cfg/qwen3-0.6b.json" > "$tmp/missing.json"
expect 2 "missing field" -- "$fc" lift "$tmp/missing.json"
contains "$tmp/err" "missing.json:1:1: hidden_size: missing; a qwen3 configuration needs it" "names the field"
sed 's/"num_attention_heads": 16/"num_attention_heads": "16"/' "$cfg/qwen3-0.6b.json" > "$tmp/type.json"
expect 2 "wrong type" -- "$fc" eval "$tmp/type.json"
contains "$tmp/err" "type.json:17:26: num_attention_heads: expected a whole number" "wrong type at line:col"
sed 's/"num_key_value_heads": 8/"num_key_value_heads": 5/' "$cfg/qwen3-0.6b.json" > "$tmp/kv.json"
expect 2 "impossible value" -- "$fc" lift "$tmp/kv.json"
contains "$tmp/err" "kv.json:19:26: num_key_value_heads: expected a divisor of num_attention_heads (16), got 5" "kv"
sed 's/"use_cache": true,/"use_cache": true/' "$cfg/qwen3-0.6b.json" > "$tmp/syntax.json"
expect 2 "bad JSON" -- "$fc" lift "$tmp/syntax.json"
contains "$tmp/err" "syntax.json:28:3: not JSON: expected ',' or '}', found '\"'" "syntax error at line:col"
: > "$tmp/empty.json"
expect 2 "empty file" -- "$fc" lift "$tmp/empty.json"
contains "$tmp/err" "empty.json:1:1: not JSON" "empty file at 1:1"
expect 2 "a directory" -- "$fc" lift "$cfg"
contains "$tmp/err" "$cfg:1:1: cannot read: Is a directory" "a directory refused"
expect 2 "check a bad config" -- "$fc" check "$tmp/kv.json" --db "$tmp/r2.db"
expect 2 "unknown model" -- "$fc" lift no-such-model
contains "$tmp/err" "or give a config.json" "the message offers a config.json"
expect 0 "help lift" -- "$fc" help lift
contains "$tmp/out" "config.json" "help lift mentions the config.json form"

echo "config: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
