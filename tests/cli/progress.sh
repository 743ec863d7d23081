#!/usr/bin/env bash
# Progress in a log (stderr no terminal, as in CI): `check`, `prove` and `crosscheck` print a line of their own when
# they start and when they end (and between, every 10 s or tenth: tests/test_progress.c decides that with a fake
# clock), never a carriage return; `--no-progress` silences them; on a terminal (where `script` gives one) check's
# line is rewritten in place with its ETA.
. "$(dirname "$0")/lib.bash" "$1"
# lacks FILE TEXT DESCRIPTION: the file does not hold the text.
lacks() {
  if grep -qF -- "$2" "$1"; then fail=$((fail + 1)); echo "FAIL: $3: '$2' in:"; head -5 "$1"; else pass=$((pass + 1)); fi
}
# no_cr FILE DESCRIPTION: the file holds no carriage return.
no_cr() {
  if grep -q $'\r' "$1"; then fail=$((fail + 1)); echo "FAIL: $2: a carriage return in a log"; else pass=$((pass + 1)); fi
}

expect 0 "check in a log" -- "$fc" check tiny-llama --shim reference --shim none --db "$tmp/c.db"
contains "$tmp/err" "check: 0/6 (0%); next: tiny-llama decode" "the first line: the work counted (graphs × shims)"
contains "$tmp/err" "check: 6/6 (100%) in " "the last line: all done, with the time and rate"
grep -E '^check: [0-9]+/6 \([0-9]+%\) in [0-9]+s, [0-9.]+/(s|min), ETA [0-9]' "$tmp/err" >/dev/null \
  && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: no line with the rate and ETA:"; cat "$tmp/err"; }
no_cr "$tmp/err" "check's log"
contains "$tmp/out" "check: run 1:" "the summary on stdout as before"
expect 0 "check --no-progress" -- "$fc" check tiny-llama --shim reference --db "$tmp/c.db" --no-progress
lacks "$tmp/err" "check: 0/" "--no-progress silences check"

expect 0 "prove in a log" -- "$fc" prove add_norm sandwich_norm
contains "$tmp/err" "prove: 0/2 (0%); next: add_norm" "prove counts the rules it proves"
contains "$tmp/err" "prove: 2/2 (100%) in " "prove's last line"
no_cr "$tmp/err" "prove's log"
expect 0 "prove --no-progress" -- "$fc" prove add_norm --no-progress
lacks "$tmp/err" "prove: 0/" "--no-progress silences prove"

if "$fc" crosscheck tiny-llama --count 1 2>&1 | grep -q "built without llama.cpp"; then
  echo "progress: crosscheck's lines not checked: fusecheck was built without llama.cpp"
else
  expect 0 "crosscheck in a log" -- "$fc" crosscheck tiny-llama --count 2 --weights f32 --mode decode --mode prefill
  contains "$tmp/err" "crosscheck: 0/5 (0%); next: tiny-llama f32 export" "crosscheck counts its steps"
  contains "$tmp/err" "crosscheck: 5/5 (100%) in " "crosscheck's last line"
  no_cr "$tmp/err" "crosscheck's log"
  expect 0 "crosscheck --no-progress" -- "$fc" crosscheck tiny-llama --count 1 --no-progress
  lacks "$tmp/err" "crosscheck: 0/" "--no-progress silences crosscheck"
fi

# On a terminal (util-linux's script gives the command one): check's line in place, its ETA once a unit is done.
if command -v script >/dev/null; then
  script -qec "'$fc' check tiny-llama --shim reference --db '$tmp/t.db' >/dev/null" /dev/null > "$tmp/tty" 2>&1
  contains "$tmp/tty" $'\r[1/3] tiny-llama decode' "a terminal's line, rewritten in place"
  contains "$tmp/tty" "  ETA " "a terminal's line gains an ETA"
  lacks "$tmp/tty" "check: 0/" "no log lines on a terminal"
  script -qec "'$fc' check tiny-llama --shim reference --db '$tmp/t.db' --no-progress >/dev/null" /dev/null \
    > "$tmp/tty" 2>&1
  lacks "$tmp/tty" "[1/3]" "--no-progress silences the terminal's line"
else
  echo "progress: the terminal's line not checked: no script(1)"
fi

echo "cli_progress: $pass passed, $fail failed"
[ "$fail" = 0 ]
