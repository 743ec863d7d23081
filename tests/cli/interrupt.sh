#!/usr/bin/env bash
# End to end: every long command (check, prove --mutants, tolerance, crosscheck, fuzz/campaign) stops on SIGINT and
# SIGTERM, sent early, mid-run and during its db writes: it exits 130 or 143, its run is marked `interrupted` (a
# command that finished before the signal came: `complete` with exit 0, and only then), results.db passes its
# integrity check; a second signal ends it at once (its run `incomplete`, the file sound); `db diff` against an
# interrupted run, or a run lacking the earlier's graphs, is a failed check unless --allow-partial. No timing is
# asserted but a generous bound on how long a stop takes.
source "$(dirname "$0")/lib.bash"
set -m  # background jobs as a terminal has them: SIGINT not ignored (a script's background jobs ignore it)
root=$(pwd)

# The run's status in a results file (its only run, or the one given), or "none".
status_of() { sqlite3 "$1" "SELECT status FROM runs WHERE id = ${2:-(SELECT max(id) FROM runs)}" 2>/dev/null || echo none; }
# Whether a results file holds a run in progress (read only once the writer has made it: sqlite3 would make it empty).
run_begun() { [ -s "$1" ] && [ "$(status_of "$1")" = incomplete ]; }
# Whether a results file passes SQLite's integrity check (a file never made passes too: nothing was written).
sound() { [ ! -s "$1" ] || [ "$(sqlite3 "$1" 'PRAGMA integrity_check')" = ok ]; }

# interrupt NAME SIG DELAY DB -- COMMAND...: run it in the background, send SIG after DELAY seconds (or, with DELAY
# "until:CONDITION", once the shell condition holds, so a loaded machine cannot signal it before the point meant), wait. Checks:
# the stop took under 20 s; exit 128+SIG with the run interrupted, or (the command done before the signal) exit 0
# with the run complete; the file sound. With DB "-" only the exit code is checked.
interrupt() {
  local name=$1 sig=$2 delay=$3 db=$4 code
  shift 5
  code=$(($(kill -l "$sig") + 128))
  "$@" >"$tmp/out" 2>"$tmp/err" &
  local pid=$!
  if [[ $delay == until:* ]]; then
    local waited=0
    until eval "${delay#until:}" || [ "$waited" -ge 1200 ] || ! kill -0 "$pid" 2>/dev/null; do
      sleep 0.1
      waited=$((waited + 1))
    done
  else
    sleep "$delay"
  fi
  kill -"$sig" "$pid" 2>/dev/null
  local t0=$SECONDS
  wait "$pid"
  local got=$? took=$((SECONDS - t0))
  [ "$took" -lt 20 ] && ok || bad "$name: took $took s to stop"
  local st=complete
  [ "$db" = - ] || st=$(status_of "$db")
  if [ "$got" -eq "$code" ] && { [ "$db" = - ] || [ "$st" = interrupted ]; }; then
    ok
  elif [ "$got" -eq 0 ] && [ "$st" = complete ]; then
    ok  # it ended before the signal came
  else
    bad "$name: exit $got, run $st; wanted $code and interrupted (or 0 and complete)"
    head -5 "$tmp/out" "$tmp/err"
  fi
  [ "$db" = - ] || { sound "$db" && ok || bad "$name: $db fails its integrity check"; }
  [ "$got" -ne "$code" ] || grep -q "interrupted (SIG$sig)" "$tmp/err" && ok || bad "$name: no word on stderr"
}

# check over the zoo, signalled early (as soon as its run is in results.db: a fixed delay that short may come before
# the handler is installed on a loaded machine), mid-run, late; SIGINT and SIGTERM
n=0
for case in "INT early" "INT 0.4" "TERM 1" "INT 2" "TERM 3"; do
  set -- $case
  n=$((n + 1))
  delay=$2
  [ "$delay" != early ] || delay="until:run_begun $tmp/c$n.db"
  interrupt "check $case" "$1" "$delay" "$tmp/c$n.db" -- "$fc" check --db "$tmp/c$n.db" --no-progress
  # every committed report is whole: its decisions' set exists, its diffs logged with it
  if [ -s "$tmp/c$n.db" ]; then
    orphans=$(sqlite3 "$tmp/c$n.db" "SELECT count(*) FROM reports r WHERE NOT EXISTS (SELECT 1 FROM decision_sets s WHERE s.id = r.set_id) OR NOT EXISTS (SELECT 1 FROM diffs d WHERE d.run_id = r.run_id AND d.graph_id = r.graph_id AND d.shim_id = r.shim_id)")
    [ "$orphans" = 0 ] && ok || bad "check $case: $orphans reports without their decisions or diffs"
  fi
done

# check --eval-real on a real-size graph (minutes of seeding, gigabytes, were it not stopped), signalled while it seeds
# the weights (its memory past 300 MB): the evaluator asks between rows, so it stops at once, an interruption and no
# failure of the graph's
seeding="[ \"\$(awk '/VmRSS/ {print \$2}' /proc/\$pid/status 2>/dev/null || echo 0)\" -gt 300000 ]"
interrupt "check --eval-real while seeding" TERM "until:$seeding" "$tmp/real.db" -- "$fc" check qwen3-next-80b-a3b \
  --eval-real --layers 4 --weights q8_0 --db "$tmp/real.db" --no-progress
[ "$(sqlite3 "$tmp/real.db" "SELECT count(*) FROM failures")" = 0 ] && ok || bad "check --eval-real stopped: failures logged"
grep -q "stopped on request" "$tmp/err" "$tmp/out" && bad "check --eval-real stopped: the stop reported as a failure" || ok

# a second signal ends it at once: the run stays incomplete (or interrupted, if the first was acted on in time)
"$fc" check --db "$tmp/twice.db" --no-progress >/dev/null 2>&1 &
pid=$!
sleep 1
kill -INT "$pid"; kill -INT "$pid" 2>/dev/null
wait "$pid"; got=$?
[ "$got" -eq 130 ] || [ "$got" -eq 0 ] && ok || bad "check signalled twice: exit $got"
st=$(status_of "$tmp/twice.db")
case "$st" in incomplete | interrupted | complete) ok ;; *) bad "check signalled twice: run $st" ;; esac
sound "$tmp/twice.db" && ok || bad "check signalled twice: the file fails its integrity check"

# db diff against an interrupted run is a failed check, said so; --allow-partial passes it, still saying so
"$fc" check --db "$tmp/d.db" --no-progress >/dev/null 2>&1
"$fc" check --db "$tmp/d.db" --no-progress >/dev/null 2>&1 &
pid=$!
sleep 1
kill -INT "$pid"; wait "$pid"; got=$?
if [ "$got" -eq 130 ]; then
  expect 1 "db diff against an interrupted run" -- "$fc" db diff 1 2 --db "$tmp/d.db"
  contains "$tmp/out" "run 2 is interrupted, not complete" "db diff says the run is interrupted"
  contains "$tmp/out" "partial comparison: a failed check" "db diff says it fails for that"
  expect 0 "db diff --allow-partial" -- "$fc" db diff 1 2 --db "$tmp/d.db" --allow-partial
  contains "$tmp/out" "run 2 is interrupted" "--allow-partial still says so"
  expect 0 "the nightly page of the interrupted run" -- "$fc" report --db "$tmp/d.db" --run 2 -o "$tmp/page.html"
  contains "$tmp/page.html" "is interrupted" "the page says the run is interrupted"
else
  echo "note: the second check ended before its signal (exit $got): db diff's interrupted case not run"
fi
# a complete run over fewer models lacks the earlier one's graphs: a failed check too
"$fc" check tiny-qwen3 --db "$tmp/d.db" --no-progress >/dev/null 2>&1
last=$(sqlite3 "$tmp/d.db" "SELECT max(id) FROM runs")
expect 1 "db diff against a run of fewer graphs" -- "$fc" db diff 1 "$last" --db "$tmp/d.db"
contains "$tmp/out" "partial: run $last lacks" "db diff names what the later run lacks"
expect 0 "the same, --allow-partial" -- "$fc" db diff 1 "$last" --db "$tmp/d.db" --allow-partial
contains "$tmp/out" "partial comparison: accepted (--allow-partial)" "--allow-partial says it accepted it"
[ "$(sqlite3 "$tmp/d.db" "SELECT count(*) FROM run_pair_gaps WHERE run_before = 1 AND run_after = $last AND what = 'graph'")" -gt 0 ] &&
  ok || bad "run_pair_gaps lists the graphs the later run lacks"

# prove --mutants: SIGINT early and mid-run, SIGTERM; the obligations logged are whole rows
interrupt "prove --mutants INT" INT 0.2 "$tmp/p1.db" -- "$fc" prove --mutants --db "$tmp/p1.db"
interrupt "prove --mutants INT mid-run" INT 2 "$tmp/p2.db" -- "$fc" prove --mutants --db "$tmp/p2.db"
interrupt "prove --mutants TERM" TERM 1 "$tmp/p3.db" -- "$fc" prove --mutants --db "$tmp/p3.db"
interrupt "prove without --db" INT 1 - -- "$fc" prove --mutants

# tolerance over many steps, stopped between steps
interrupt "tolerance TERM" TERM 1 "$tmp/t.db" -- "$fc" tolerance tiny-qwen3 --shim cuda-lane:h200:int8 --steps 200 \
  --ctx 4096 --db "$tmp/t.db"
interrupt "tolerance INT early" INT 0.1 "$tmp/t2.db" -- "$fc" tolerance tiny-qwen3 --shim cuda-lane:h200:int8 \
  --steps 200 --ctx 4096 --db "$tmp/t2.db"

# crosscheck (where fusecheck was built with llama.cpp)
if "$fc" crosscheck tiny-qwen3 --count 2 >/dev/null 2>&1; then
  interrupt "crosscheck INT" INT 0.5 "$tmp/x.db" -- "$fc" crosscheck --db "$tmp/x.db" --no-progress --count 48 \
    --mode decode --mode prefill --weights q8_0 --weights f32
else
  echo "note: crosscheck not run (fusecheck built without llama.cpp)"
fi

# fuzz/campaign over stand-in harnesses (each fuzzes for its time, printing libFuzzer's status lines): the run ends
# interrupted with the time it fuzzed, exit 130/143 — not complete with exit 0
fake="$tmp/fakebuild"
mkdir -p "$fake"
ln -s "$(cd "$(dirname "$fc")" && pwd)/$(basename "$fc")" "$fake/fusecheck"
cat > "$fake/fake_harness" <<'EOF'
#!/usr/bin/env bash
t=0
for a in "$@"; do case "$a" in -max_total_time=*) t=${a#*=} ;; -merge=1 | -runs=*) exit 0 ;; esac; done
n=0 end=$((SECONDS + t))
while [ "$SECONDS" -lt "$end" ]; do n=$((n + 100)); echo "#$n: cov: 7 ft: 7 corp: 1 exec/s: 100"; sleep 0.2; done
EOF
chmod +x "$fake/fake_harness"
for h in fuzz_format fuzz_db; do ln -s fake_harness "$fake/$h"; done
# each signalled once its first stand-in harness runs (then 1 or 3 s more), not at a time a loaded machine may not reach
for case in "INT 1" "TERM 3"; do
  set -- $case
  harness_running="pgrep -f '$fake/fuzz_' >/dev/null && sleep $2"
  interrupt "fuzz/campaign $case" "$1" "until:$harness_running" "$tmp/f$1.db" -- "$root/fuzz/campaign" --no-build --build "$fake" \
    --work "$tmp/work$1" --db "$tmp/f$1.db" --harness fuzz_format,fuzz_db --time 40 --jobs 1 --fuzz-seed 1
  [ "$(status_of "$tmp/f$1.db")" = interrupted ] && ok || bad "fuzz/campaign $case: run $(status_of "$tmp/f$1.db")"
  # the stand-in harnesses are gone with it
  sleep 0.5
  pgrep -f "$fake/fuzz_" >/dev/null && bad "fuzz/campaign $case: a harness outlived it" || ok
done
[ "$(sqlite3 "$tmp/fINT.db" "SELECT count(*) FROM fuzz_stats WHERE harness = 'fuzz_format' AND seconds < 40")" = 1 ] &&
  ok || bad "the interrupted campaign logs the time it fuzzed"
# the mutant sweep, stopped while its oracle runs (prove --mutants, one signal: its own run interrupted too)
ln -s fake_harness "$fake/fuzz_optimize"
mutants_prove_running="[ -s '$tmp/m.db' ] && [ \"\$(sqlite3 '$tmp/m.db' \"SELECT count(*) FROM runs WHERE kind = 'prove'\" 2>/dev/null)\" = 1 ]"
interrupt "fuzz/campaign --mutants INT" INT "until:$mutants_prove_running" "$tmp/m.db" -- "$root/fuzz/campaign" --no-build --build "$fake" \
  --work "$tmp/workm" --db "$tmp/m.db" --mutants 30 --atoms '^add_norm:' --jobs 2
kinds=$(sqlite3 "$tmp/m.db" "SELECT group_concat(kind || ' ' || status, ', ') FROM (SELECT * FROM runs ORDER BY id)")
case "$kinds" in
  "fuzz interrupted, prove interrupted" | "fuzz interrupted, prove complete" | "fuzz complete, prove complete") ok ;;
  *) bad "fuzz/campaign --mutants interrupted: runs $kinds" ;;
esac

echo "interrupt: $pass passed, $fail failed"
test "$fail" -eq 0
