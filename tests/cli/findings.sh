#!/usr/bin/env bash
# End-to-end: every finding of docs/findings.md with a reproducer breaks under the seed's rules (--seed-rules: diff
# fails, exit 1) and holds under fusecheck's own (exit 0); the seed's rules carry their own digest and shim name.
. "$(dirname "$0")/lib.bash" "$1"

# finding, reproducer (a graph under tests/rules/), shim
while read -r finding file shim; do
  [ -z "$finding" ] && continue
  expect 1 "$finding $file under --seed-rules" -- "$fc" diff "tests/rules/$file" --shim "$shim" --seed-rules
  expect 0 "$finding $file" -- "$fc" diff "tests/rules/$file" --shim "$shim"
done <<'CASES'
F1 add_norm/near_untouched_result.fc reference
F1 sandwich_norm/near_untouched_result.fc reference
F1 slice_read/near_untouched_result.fc reference
F1 row_write/near_untouched_result.fc reference
F1 join_in_place/near_untouched_a.fc reference
F1 join_in_place/near_untouched_b.fc reference
F1 recompute_fanout/near_untouched_result.fc reference
F1 strided_values/near_untouched_result.fc reference
F3 row_write/not_observed.fc reference
F3 join_in_place/not_observed_a.fc reference
F3 join_in_place/not_observed_b.fc reference
F4 sandwich_norm/near_not_carried.fc reference
F5 add_norm/near_untouched_a.fc reference
F5 add_norm/near_untouched_b.fc reference
F6 gemv_bias/near_no_cross.fc reference
F7 head_norm_rope/near_no_sink_past.fc reference
F8 slice_read/not_observed.fc reference
F8 strided_values/not_observed.fc reference
F9 row_write/index_untouched.fc reference
F10 conv_silu/near_no_cross.fc reference
F10 conv_silu_l2/near_no_cross.fc reference
F11 gates/near_no_sink_past.fc reference
F12 act_gate/near_no_sink_past.fc reference
F13 gather_scale/near_no_cross.fc reference
F14 latent_expanded/near_no_sink_past.fc cuda-lane:h200:int8
F18 latent_expanded/near_no_cross.fc cuda-lane:h200:int8
F17 slice_read/quiet_state_read_before_slice.fc reference
F17 strided_values/quiet_state_read_before_slice.fc reference
F17 row_write/quiet_state_written_after_set.fc reference
F17 recompute_fanout/quiet_state_read_before_producer.fc reference
F20 attn_output_gate/quiet_set_after_gate.fc reference
F21 moe_rows/quiet_table_partly_filled.fc reference
F22 join_in_place/quiet_state_half_after_join.fc reference
F23 act_gate/fires_square.fc reference
F25 slice_read/quiet_strided_slice.fc reference
F25 slice_read/quiet_reads_slice_strided.fc reference
F25 strided_values/quiet_strided_slice.fc reference
CASES

# F2: the seed's matchers take a producer after its reader (or a norm with a written weight): the rewrite's values
# agree here, but validate-run finds the firing outside its motion's premises.
for file in add_norm/quiet_state_read_before_sum.fc sandwich_norm/quiet_written_weight.fc \
            act_gate/quiet_state_read_before_activation.fc; do
  expect 1 "F2 $file under --seed-rules" -- "$fc" validate-run "tests/rules/$file" --shim reference --seed-rules
  contains "$tmp/out" "a premise of sink_to_consumer does not hold" "F2 $file: the premise named"
  expect 0 "F2 $file" -- "$fc" validate-run "tests/rules/$file" --shim reference
done

# F19: the seed's latent_expanded asks no admission and fuses a soft-capped latent attention the lane refuses;
# validate-run re-asks the shim for every op a firing built.
expect 1 "F19 under --seed-rules" -- "$fc" validate-run tests/rules/latent_expanded/refused_softcap.fc \
  --shim cuda-lane:h200:int8 --seed-rules
contains "$tmp/out" "fired an op the chip refuses: the lane's attention kernels put no soft cap on their logits" \
  "F19: the refusal named"
expect 0 "F19" -- "$fc" validate-run tests/rules/latent_expanded/refused_softcap.fc --shim cuda-lane:h200:int8

# F15: under the seed's rules a chain links the next slot only, so it does not reach past another op at all.
expect 0 "F15 default reaches past" -- "$fc" optimize tests/rules/elementwise_chains/past_other.fc --shim reference \
  --report -o "$tmp/o.fc"
contains "$tmp/out" "elementwise_chains" "F15 fires by default"
expect 0 "F15 seed links adjacent" -- "$fc" optimize tests/rules/elementwise_chains/past_other.fc --shim reference \
  --report --seed-rules -o "$tmp/o.fc"
if grep -q "elementwise_chains" "$tmp/out"; then bad "F15: the seed's chain reached past another op"; else ok; fi

# Issue 33, item 1 (a drift made faithful): act_gate takes a square, as the seed does, in both modes; the default's
# op reads x alone, the seed's names s, which it computes itself (F23).
for mode in "" --seed-rules; do
  expect 0 "act_gate square ${mode:-default}" -- "$fc" optimize tests/rules/act_gate/fires_square.fc --shim reference \
    --report $mode -o "$tmp/sq.fc"
  contains "$tmp/out" "act_gate glu_act_mul [0, 1] fired" "act_gate fires on s·s ${mode:-default}"
done
contains "$tmp/sq.fc" "fused glu_act_mul y = (s, x)" "F23: the seed's operands name s"
"$fc" optimize tests/rules/act_gate/fires_square.fc --shim reference -o "$tmp/sq.fc" >/dev/null 2>&1
contains "$tmp/sq.fc" "fused glu_act_mul y = (x)" "act_gate square: the default's one operand"

# F22: the seed places a half whose producer follows the join; validate-run finds the firing outside place_units.
expect 1 "F22 validate-run under --seed-rules" -- "$fc" validate-run tests/rules/join_in_place/quiet_state_half_after_join.fc \
  --shim reference --seed-rules
contains "$tmp/out" "a premise of place_units does not hold" "F22: the premise named"

# F23: on a zoo chunk the seed's last_layer_rows lists the residual sum its add_norm part computes; the rewritten
# graph is invalid (the report is the same). fusecheck's list leaves it out.
tl=(tiny-llama --layers 1 --mode prefill:4 --shim reference)
"$fc" optimize "${tl[@]}" --seed-rules -o "$tmp/seed.fc" >/dev/null 2>&1
"$fc" optimize "${tl[@]}" -o "$tmp/own.fc" >/dev/null 2>&1
if grep '^fused last_layer_rows' "$tmp/seed.fc" | grep -q 'blk.0.attn_res) covers' &&
   ! grep '^fused last_layer_rows' "$tmp/own.fc" | grep -q 'blk.0.attn_res'; then ok; else bad "F23: operand lists"; fi
expect 1 "F23 diff under --seed-rules" -- "$fc" diff "${tl[@]}" --seed-rules
cat "$tmp/out" "$tmp/err" > "$tmp/all"
contains "$tmp/all" "reads 'blk.0.attn_res' before it is written" "F23: the operand named"
expect 0 "F23 diff" -- "$fc" diff "${tl[@]}"

# F24: the seed's lane reads 48-wide rows quantized; the fold quantizes blocks across the rows and the lane's kernels
# compute the product outside the contract's bound (tolerance on the seed's rewrite fails). diff agrees: the
# reference quantizes the same.
q48=tests/rules/fused_quant/quiet_rows_of_48.fc
expect 0 "F24 under --seed-rules" -- "$fc" optimize "$q48" --shim cuda-lane:h200:int8 --report --seed-rules -o "$tmp/q.fc"
contains "$tmp/out" "fused_quant norm_quant [0] fired" "F24: the seed quantizes"
expect 1 "F24 tolerance of the seed's rewrite" -- "$fc" tolerance "$tmp/q.fc" --shim cuda-lane:h200:int8
contains "$tmp/err" "in 3 blocks of 32; 2 rows of 48 read 4 blocks" "F24: the lane refuses rows that start inside a block"
expect 0 "F24 diff under --seed-rules" -- "$fc" diff "$q48" --shim cuda-lane:h200:int8 --seed-rules
expect 0 "F24" -- "$fc" optimize "$q48" --shim cuda-lane:h200:int8 --report -o "$tmp/q.fc"
if grep -q "fused_quant" "$tmp/out"; then bad "F24: fusecheck quantized 48-wide rows"; else ok; fi
expect 0 "F24 tolerance" -- "$fc" tolerance "$tmp/q.fc" --shim cuda-lane:h200:int8

# F25: a row set whose access the value's length pins to the identity: the seed's rules take it (values agree),
# fusecheck's leave it.
rs=tests/rules/row_write/quiet_strided_set.fc
expect 0 "F25 strided set under --seed-rules" -- "$fc" diff "$rs" --shim reference --seed-rules
contains "$tmp/out" "1 decisions, 1 fired" "F25: the seed writes the rows"
expect 0 "F25 strided set" -- "$fc" diff "$rs" --shim reference
contains "$tmp/out" "0 decisions, 0 fired" "F25: fusecheck leaves the set"

# Issue 33, item 6 (drifts made faithful): the seed's readers of a gated attention's result, of a batch's table and
# of a mixture's view; fusecheck's atoms asked them within the group. No decision under either rule set.
for file in attn_output_gate/quiet_attention_reads_own_result.fc attn_output_gate/quiet_attention_reads_table.fc \
            moe_rows/quiet_view_read_by_another_row.fc; do
  for mode in "" --seed-rules; do
    expect 0 "item 6 $file ${mode:-default}" -- "$fc" optimize "tests/rules/$file" --shim reference --report $mode \
      -o "$tmp/i6.fc"
    if grep -q "fired" "$tmp/out"; then
      if grep "fired" "$tmp/out" | grep -qv "^act_gate "; then bad "item 6 $file ${mode:-default}: fired"; else ok; fi
    else ok; fi
  done
done

# F26: one list of holds. `--hold gemv_parts` holds the lane's own list too (its name says hold=gemv_parts), so
# merged_projections is refused the products the GEMV takes in parts, under either rule set; the seed's compile,
# holding its optimizer's list alone, merges them (test_lane's test_hold_lists pins both).
for mode in "" --seed-rules; do
  expect 0 "F26 ${mode:-default}" -- "$fc" optimize tiny-llama --mode decode --shim cuda-lane:h200:int8 \
    --hold gemv_parts --report $mode -o "$tmp/h.fc"
  n=$(grep -c "^merged_projections merged_qkv .* refused: .* {lane.merged_qkv.in_parts}$" "$tmp/out")
  if [ "$n" -eq 13 ] && ! grep -q "^merged_projections .* fired" "$tmp/out"; then ok; else
    bad "F26 ${mode:-default}: $n merged_projections refusals with their code"; fi
done

# Issue 33, item 10: every refusal's line ends with its code; the digest is the sha256 of the lines without them.
"$fc" optimize tiny-qwen3 --mode decode --shim cuda-lane:h200:int8x2 --hold gemv_parts --report -o "$tmp/c.fc" \
  > "$tmp/c.txt" 2>/dev/null
if grep " refused: " "$tmp/c.txt" | grep -qv " {[a-z_.0-9]*}$"; then bad "item 10: a refusal without a code"
else ok; fi
want=$(grep '^digest ' "$tmp/c.txt" | cut -d' ' -f2)
got=$(grep -v '^digest ' "$tmp/c.txt" | sed 's/ {[a-z_.0-9]*}$//' | head -c -1 | sha256sum | cut -d' ' -f1)
if [ -n "$want" ] && [ "$want" = "$got" ]; then ok; else bad "item 10: digest $want, lines without codes $got"; fi

# A report of the seed's rules has its own digest, even where its lines are the default's.
"$fc" optimize tests/rules/gemm_scale/fires.fc --shim reference --report -o "$tmp/a.fc" > "$tmp/d1" 2>/dev/null
"$fc" optimize tests/rules/gemm_scale/fires.fc --shim reference --report --seed-rules -o "$tmp/b.fc" > "$tmp/d2" 2>/dev/null
if [ "$(grep -v '^digest' "$tmp/d1")" = "$(grep -v '^digest' "$tmp/d2")" ] &&
   [ "$(grep '^digest' "$tmp/d1")" != "$(grep '^digest' "$tmp/d2")" ]; then ok; else bad "seed-rules digest"; fi

# validate-run and prove take the switch; prove under it refutes a rule whose added atom it needs.
expect 0 "validate-run --seed-rules" -- "$fc" validate-run tests/rules/gemm_scale/fires.fc --shim reference --seed-rules
expect 1 "prove gemv_bias --seed-rules" -- "$fc" prove gemv_bias --seed-rules
expect 0 "prove gemv_bias" -- "$fc" prove gemv_bias

# check logs the seed's rules under a shim name of their own.
expect 0 "check --seed-rules" -- "$fc" check tiny-llama --mode decode --shim reference --db "$tmp/r.db" --no-progress \
  --seed-rules
if command -v sqlite3 >/dev/null; then
  contains <(sqlite3 "$tmp/r.db" "SELECT name FROM shims") "reference+seed-rules" "check logs the seed's shim name"
fi

echo "findings: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
