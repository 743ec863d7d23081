#!/usr/bin/env bash
# End-to-end: `fusecheck fuzz` — the seed corpora it writes (every harness's directory, cases the committed corpus's
# replay driver accepts), the guard atoms it lists, and a campaign logged to results.db (a run of kind fuzz with
# statistics, findings seen once and again, mutants killed and not) that sqlite3 reads back.
. "$(dirname "$0")/lib.bash" "$1"
# same GOT WANT DESCRIPTION: two strings are equal.
same() {
  if [ "$1" = "$2" ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: $3: got '$1', wanted '$2'"; fi
}
db="$tmp/r.db"
q() { sqlite3 "$db" "$1"; }

expect 0 "help fuzz" -- "$fc" help fuzz
expect 2 "fuzz without a subcommand" -- "$fc" fuzz
expect 2 "fuzz unknown subcommand" -- "$fc" fuzz frobnicate

# Seeds: one directory per harness, the zoo's families and the rule cases among them.
expect 0 "fuzz seeds" -- "$fc" fuzz seeds "$tmp/corpus"
same "$(cat "$tmp/err")" "" "every tiny family's shrunk model lifts (nothing on stderr)"
ntiny=$("$fc" models | grep -c '^tiny-')
same "$(ls "$tmp/corpus/fuzz_format" | grep -c '^zoo-')" "$((ntiny * 3))" "a zoo seed per tiny model and mode"
for h in fuzz_format fuzz_optimize fuzz_facts fuzz_db fuzz_gguf; do
  n=$(ls "$tmp/corpus/$h" | wc -l)
  if [ "$n" -gt 0 ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: no seeds for $h"; fi
done
same "$(ls "$tmp/corpus/fuzz_format" | grep -c '^zoo-qwen3-moe-')" 3 "a zoo seed per mode of qwen3-moe"
expect 0 "a zoo seed validates" -- "$fc" validate "$tmp/corpus/fuzz_format/zoo-gemma2-prefill.fc"
expect 2 "seeds from a missing rules directory" -- "$fc" fuzz seeds "$tmp/c2" --rules "$tmp/none"
# A rule case's seed runs under the case's shim and holds: control byte 0 odd picks a lane point, byte 1 says one
# hold; a case with neither runs under reference (byte 0 zero) holding nothing.
ctl() { od -An -tu1 -N2 "$tmp/corpus/fuzz_optimize/$1" | tr -s ' ' | sed 's/^ //'; }
read -r b0 b1 <<<"$(ctl rule-mla_prologue-refused_once_for_two_attentions)"
same "$((b0 % 2)) $b1" "1 3" "a lane case held: a lane shim byte and one hold"
same "$(ctl rule-add_norm-fires)" "0 0" "a reference case: reference, nothing held"
# A case the harness cannot run as it says is refused, not fuzzed under another shim.
mkdir -p "$tmp/badrules/add_norm"
{ echo "# rule: add_norm"; echo "# shim: no-such-chip"; cat tests/rules/add_norm/fires.fc; } > "$tmp/badrules/add_norm/x.fc"
expect 2 "seeds from a case under a shim the harness does not offer" -- "$fc" fuzz seeds "$tmp/c3" --rules "$tmp/badrules"
contains "$tmp/err" "offers no shim 'no-such-chip'" "the shim is named"

# Atoms: rule:atom, one a line, row_write's among them.
expect 0 "fuzz atoms" -- "$fc" fuzz atoms
same "$(grep -cvE '^[a-z0-9_]+:[a-z0-9_]+$' "$tmp/out")" 0 "every line is rule:atom"
same "$(grep -c '^row_write:not_observed$' "$tmp/out")" 1 "row_write's not_observed is listed"
expect 2 "atoms of an unknown shim" -- "$fc" fuzz atoms --shim no-such-shim

# A campaign's log.
expect 0 "fuzz begin" -- "$fc" fuzz begin --db "$db" --command "fuzz/campaign --time 1"
run=$(cat "$tmp/out")
same "$(q "SELECT kind || ' ' || status || ' ' || command FROM runs WHERE id = $run")" \
  "fuzz incomplete fuzz/campaign --time 1" "the run's row"
expect 0 "fuzz stat" -- "$fc" fuzz stat "$run" fuzz_optimize 12345 60.5 210 17000 --db "$db"
same "$(q "SELECT harness, executions, seconds, corpus, coverage FROM fuzz_stats WHERE run_id = $run")" \
  "fuzz_optimize|12345|60.5|210|17000" "the statistics row"
expect 2 "fuzz stat with a bad count" -- "$fc" fuzz stat "$run" fuzz_optimize lots 60 1 1 --db "$db"
expect 0 "fuzz finding" -- "$fc" fuzz finding "$run" fuzz_optimize diff:row_write abababababababababababababababababababababababababababababababab --db "$db"
expect 0 "fuzz finding again" -- "$fc" fuzz finding "$run" fuzz_optimize diff:row_write abababababababababababababababababababababababababababababababab --db "$db"
same "$(q "SELECT harness, signature, input_sha256, count FROM fuzz_new_findings WHERE run = $run")" \
  "fuzz_optimize|diff:row_write|abababababababababababababababababababababababababababababababab|2" "a finding seen twice"
expect 0 "fuzz mutant killed" -- "$fc" fuzz mutant "$run" row_write:not_observed killed 1.5 60 unwritten:row_write f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0 --db "$db"
expect 0 "fuzz mutant survived" -- "$fc" fuzz mutant "$run" add_norm:first_reader survived 60 60 --db "$db"
same "$(q "SELECT rule, obligation, verdict, bound, ms, reason, counterexample FROM proofs WHERE run_id = $run ORDER BY id LIMIT 1")" \
  "row_write|fuzz-kill:not_observed|proved|60|1500.0|unwritten:row_write|f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0" "a killed mutant"
same "$(q "SELECT rule || ' ' || obligation FROM proofs_not_proved WHERE run = $run")" \
  "add_norm fuzz-kill:first_reader" "a surviving mutant is not proved"
expect 2 "fuzz mutant with no atom" -- "$fc" fuzz mutant "$run" row_write killed 1 60 --db "$db"
# what cannot be right is refused, not logged: an unknown atom, a non-hash, an unknown run, an impossible number
expect 2 "fuzz mutant of an unknown atom" -- "$fc" fuzz mutant "$run" row_write:no_such_atom killed 1 60 --db "$db"
expect 2 "fuzz finding with a non-hash" -- "$fc" fuzz finding "$run" fuzz_optimize diff:x abc123 --db "$db"
expect 2 "fuzz stat of an unknown run" -- "$fc" fuzz stat 999 fuzz_optimize 1 1 1 1 --db "$db"
expect 2 "fuzz stat past int64" -- "$fc" fuzz stat "$run" fuzz_optimize 99999999999999999999 1 1 1 --db "$db"
same "$(q "SELECT count(*) FROM proofs WHERE obligation = 'fuzz-kill:no_such_atom'")" "0" "nothing logged for them"
expect 0 "fuzz end" -- "$fc" fuzz end "$run" complete --db "$db"
same "$(q "SELECT status FROM runs WHERE id = $run")" "complete" "the run ended"
expect 2 "fuzz end with a bad status" -- "$fc" fuzz end "$run" sideways --db "$db"
# a run's status never flips, and nothing is logged to a run that ended
expect 2 "fuzz end of an ended run" -- "$fc" fuzz end "$run" failed --db "$db"
same "$(q "SELECT status FROM runs WHERE id = $run")" "complete" "the status stays"
expect 2 "fuzz stat to an ended run" -- "$fc" fuzz stat "$run" fuzz_optimize 1 1 1 1 --db "$db"
contains "$tmp/err" "ended already (complete)" "the ended run is named as such"
same "$(q "SELECT count(*) FROM fuzz_stats WHERE run_id = $run")" "1" "nothing logged after the end"
expect 2 "fuzz begin on a directory that is missing" -- "$fc" fuzz begin --db "$tmp/no/such/dir/r.db"

echo "fuzz_replay: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
