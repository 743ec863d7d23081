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
