#!/usr/bin/env bash
# The nightly's stages (ci/stage.bash, what ci/nightly runs each job through): each announced; one that found
# something (exit 1) named and the night goes on, exiting 1 at the end; one that could not run (exit 2, 3, a
# signal's 130) named with its exit code, and the night stops there with that code.
. "$(dirname "$0")/lib.bash" "$1"
stage_lib="$(pwd)/ci/stage.bash"
# night STAGES...: a night of the given stages, each "NAME:EXIT" (a stage exiting EXIT, saying "ran NAME" on stdout).
night() {
  {
    echo "set -eu; . '$stage_lib'"
    echo 'job() { echo "ran $1"; return "$2"; }'
    for s in "$@"; do echo "stage ${s%%:*} job ${s%%:*} ${s#*:}"; done
    echo 'stage_summary; exit "$stage_status"'
  } > "$tmp/night"
  bash "$tmp/night"
}
# lacks FILE TEXT DESCRIPTION: the file does not hold the text.
lacks() {
  if grep -qF -- "$2" "$1"; then fail=$((fail + 1)); echo "FAIL: $3: '$2' in:"; head -5 "$1"; else pass=$((pass + 1)); fi
}

expect 0 "a night whose stages pass" -- night build:0 check:0
contains "$tmp/err" "ci/nightly: stage build: job build 0" "a stage is announced with its command"
contains "$tmp/err" "ci/nightly: stage check passed (" "a stage that passes says so, with its time"
lacks "$tmp/err" "failed" "no failure named"

expect 1 "a stage finds something: the night goes on and exits 1" -- night check:1 prove:0 report:0
contains "$tmp/err" "ci/nightly: stage check failed (exit 1)" "the stage that found something is named"
contains "$tmp/out" "ran report" "the stages after it still run"
contains "$tmp/err" "ci/nightly: stages failed: check (exit 1)" "the last line lists it"

expect 2 "a stage that cannot run stops the night with its exit code" -- night check:1 build:2 prove:0
contains "$tmp/err" "ci/nightly: stage build failed (exit 2)" "the stage that could not run is named"
lacks "$tmp/out" "ran prove" "no stage after it runs"
contains "$tmp/err" "ci/nightly: stages failed: check (exit 1), build (exit 2)" "every failed stage listed"

expect 130 "an interrupted stage stops the night with 130" -- night fuzz:130 report:0
contains "$tmp/err" "ci/nightly: stage fuzz failed (exit 130)" "the interrupted stage is named"
lacks "$tmp/out" "ran report" "nothing runs after it"

expect 3 "exit 3 is passed on" -- night setup:3
contains "$tmp/err" "ci/nightly: stage setup failed (exit 3)" "any exit code is named"

# ci/nightly itself runs every job through a stage and exits with the stages' status.
contains ci/nightly ". ci/stage.bash" "ci/nightly sources the stages"
contains ci/nightly 'exit "$stage_status"' "ci/nightly exits with the stages' status"
lacks ci/nightly "|| status=" "no job's failure folded into a status unnamed"
lacks ci/nightly " >/dev/null" "no job's output thrown away"

echo "cli_nightly_stages: $pass passed, $fail failed"
[ "$fail" = 0 ]
