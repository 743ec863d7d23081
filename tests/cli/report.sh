#!/usr/bin/env bash
# End to end: `fusecheck report` writes one self-contained HTML page of runs in results.db, each against the run
# before it of its kind: the sections it should hold, text escaped, the same bytes every time, whole or not at all,
# bad input refused (exit 2, no file). Then, where Debian's chromium is installed, the page is loaded in headless
# Chromium: its rendered DOM holds the tables and the plot, and its screenshot is not blank. Without chromium that
# part is skipped, saying so (exit 77, ctest's SKIP_RETURN_CODE), after the rest has passed.
. "$(dirname "$0")/lib.bash"

# grep-free checks on a file: it lacks the text.
lacks() {
  if ! grep -qF -- "$2" "$1"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: $3: '$2' found"; fi
}
# no_output PATH DESCRIPTION: nothing was written there, nor any temporary file beside it.
no_output() {
  if [ ! -e "$1" ] && [ -z "$(ls -A "$(dirname "$1")")" ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: $2: a file was left"; ls -la "$(dirname "$1")"; fi
}

# results.db: two check runs (the second holds add_norm, so decisions and digests change), a prove run, a fuzz run
# with a finding whose signature needs escaping
db="$tmp/results.db"
models=(tiny-llama tiny-qwen3 --mode decode --shim reference --shim cuda-lane:h200:int8 --tolerance --no-progress)
expect 0 "first check" -- "$fc" check "${models[@]}" --db "$db"
expect 0 "second check, add_norm held" -- "$fc" check "${models[@]}" --hold add_norm --db "$db"
expect 0 "prove" -- "$fc" prove add_norm --db "$db"
"$fc" fuzz begin --db "$db" --command "fuzz/campaign --time 1" >"$tmp/run" 2>&1
fuzz_run=$(cat "$tmp/run")
expect 0 "fuzz stat" -- "$fc" fuzz stat "$fuzz_run" fuzz_optimize 12345 60.5 210 17000 --db "$db"
expect 0 "fuzz finding" -- "$fc" fuzz finding "$fuzz_run" fuzz_optimize 'diff:<script>&"x"' \
  abababababababababababababababababababababababababababababababab --db "$db"
expect 0 "fuzz end" -- "$fc" fuzz end "$fuzz_run" complete --db "$db"
test "$fuzz_run" = 4 && ok || bad "the fuzz run is run 4, not '$fuzz_run'"

# the check run against the one before it
html="$tmp/pages/check.html"
mkdir -p "$tmp/pages"
expect 0 "report of the second check" -- "$fc" report --db "$db" --run 2 -o "$html"
contains "$html" "<!DOCTYPE html>" "an HTML page"
contains "$html" '<table id="run-2" class="run">' "the run's identity"
contains "$html" "<th>previous check run</th>" "beside the previous check run"
contains "$html" '<table id="heatmap-2" class="heat">' "the heat map"
contains "$html" 'title="head_norm_rope on tiny-qwen3 decode: ' "a heat map cell names its rule and graph"
contains "$html" '<table id="decision-changes-2">' "the decision changes"
contains "$html" "<td>add_norm</td><td>add_norm</td>" "add_norm's decisions changed"
contains "$html" "<td>held</td>" "to held"
contains "$html" '<table id="digest-changes-2">' "the digest changes"
contains "$html" "no graph&#39;s content changed." "the graph changes say why they are empty"
contains "$html" '<table id="comparisons-2">' "the comparisons"
contains "$html" "every comparison passed." "none failed"
contains "$html" '<svg id="tolerance-plot-2" class="plot"' "the tolerance plot"
contains "$html" '<table id="tolerance-2">' "the tolerance table"
contains "$html" "<td>matmul</td><td>host</td>" "a launch class"
contains "$html" "no proofs were recorded in run 2 (a check run)." "the empty proofs section says why"
contains "$html" "no fuzz figures or findings were recorded in run 2 (a check run)." "so does the fuzz section"
lacks "$html" "<script" "no script"
lacks "$html" "src=" "nothing fetched"
lacks "$html" "https:" "no link out"
heat_rows=$(sed -n '/<table id="heatmap-2"/,/<\/table>/p' "$html" | grep -c '<th class="rule">')
steps=$(sqlite3 "$db" "SELECT count(*) FROM steps WHERE run_id = 2")
test "$heat_rows" -ge "$steps" && test "$steps" -gt 20 && ok || bad "a heat map row for each of the $steps steps: $heat_rows"
changes=$(sqlite3 "$db" "SELECT count(*) FROM decision_changes WHERE run_before = 1 AND run_after = 2")
shown=$(sed -n '/<table id="decision-changes-2"/,/<\/table>/p' "$html" | grep -c '^<tr>')
test "$changes" -gt 0 && test "$shown" -eq "$changes" && ok || bad "every decision change shown: $shown of $changes"

# the first run has nothing before it
expect 0 "report of the first check" -- "$fc" report --db "$db" --run 1 -o "$tmp/pages/first.html"
contains "$tmp/pages/first.html" "run 1 is the first check run in this file" "no earlier run to compare"
contains "$tmp/pages/first.html" "No check run ended before run 1 in this file." "the header says so"

# several runs on one page; by default the newest ended run
expect 0 "report of a night" -- "$fc" report --db "$db" --run 4 --run 2 --run 3 --run 2 -o "$tmp/pages/night.html"
night="$tmp/pages/night.html"
contains "$night" "fusecheck report: runs 2 (a check run), 3 (a prove run) and 4 (a fuzz run)" "each run once, in order"
contains "$night" '<table id="proofs-3">' "the proofs"
contains "$night" "<td>add_norm</td><td>dataflow</td><td>0</td><td>z3</td><td>proved</td>" "a proof with its verdict"
contains "$night" '<table id="fuzz-stats-4">' "the fuzz figures"
contains "$night" "<td>fuzz_optimize</td><td>12345</td><td>60.5</td><td>204</td>" "executions and exec/s"
contains "$night" '<table id="fuzz-findings-4">' "the new findings"
contains "$night" "diff:&lt;script&gt;&amp;&quot;x&quot;" "a finding's text escaped"
lacks "$night" "<script" "no unescaped markup from the file"
expect 0 "report of the newest run" -- "$fc" report --db "$db" -o "$tmp/pages/newest.html"
contains "$tmp/pages/newest.html" "fusecheck report: run 4 (a fuzz run)" "the newest ended run"
contains "$tmp/pages/newest.html" "no decision reports were recorded in run 4 (a fuzz run)." "the heat map says why"

# the same bytes every time, to a file or to stdout; a regular file is replaced, keeping its permissions
expect 0 "the night again" -- "$fc" report --db "$db" --run 2 --run 3 --run 4 -o "$tmp/pages/again.html"
cmp -s "$night" "$tmp/pages/again.html" && ok || bad "the same db gives the same bytes"
expect 0 "to stdout" -- "$fc" report --db "$db" --run 2 --run 3 --run 4 -o -
cmp -s "$night" "$tmp/out" && ok || bad "-o - writes the same page"
chmod 640 "$tmp/pages/again.html"
expect 0 "over a regular file" -- "$fc" report --db "$db" --run 1 -o "$tmp/pages/again.html"
cmp -s "$tmp/pages/first.html" "$tmp/pages/again.html" && ok || bad "the file was replaced"
test "$(stat -c %a "$tmp/pages/again.html")" = 640 && ok || bad "its permissions kept"
chmod 444 "$db"
expect 0 "a read-only results file" -- "$fc" report --db "$db" --run 1 -o "$tmp/pages/ro.html"
chmod 644 "$db"

# bad input: exit 2, a message, no file
mkdir -p "$tmp/e"
expect 2 "a missing db" -- "$fc" report --db "$tmp/none.db" -o "$tmp/e/r.html"
contains "$tmp/err" "fusecheck: report: " "the message's form"
no_output "$tmp/e/r.html" "a missing db"
expect 2 "no such run" -- "$fc" report --db "$db" --run 99 -o "$tmp/e/r.html"
contains "$tmp/err" "fusecheck: report: no run 99 in" "the run is named"
no_output "$tmp/e/r.html" "no such run"
expect 2 "a run that is no number" -- "$fc" report --db "$db" --run two -o "$tmp/e/r.html"
expect 2 "no output named" -- "$fc" report --db "$db"
expect 2 "an argument too many" -- "$fc" report --db "$db" extra -o "$tmp/e/r.html"
printf 'not a database at all, just text that goes on long enough to fill a header' >"$tmp/junk.db"
expect 2 "a file that is no database" -- "$fc" report --db "$tmp/junk.db" -o "$tmp/e/r.html"
sqlite3 "$tmp/other.db" "CREATE TABLE t (x); INSERT INTO t VALUES (1);"
expect 2 "another program's database" -- "$fc" report --db "$tmp/other.db" -o "$tmp/e/r.html"
contains "$tmp/err" "holds no fusecheck results" "named as such"
sqlite3 "$tmp/old.db" "CREATE TABLE runs (id INTEGER PRIMARY KEY); PRAGMA user_version = 3;"
expect 2 "an older schema" -- "$fc" report --db "$tmp/old.db" -o "$tmp/e/r.html"
contains "$tmp/err" "schema version 3, not 9" "the schema named"
no_output "$tmp/e/r.html" "bad results files"
"$fc" fuzz begin --db "$tmp/open.db" --command "a run still going" >/dev/null 2>&1
expect 2 "no ended run" -- "$fc" report --db "$tmp/open.db" -o "$tmp/e/r.html"
contains "$tmp/err" "holds no ended run" "said so"
no_output "$tmp/e/r.html" "no ended run"
echo "kept" >"$tmp/target"
ln -s "$tmp/target" "$tmp/e/link.html"
expect 2 "onto a symbolic link" -- "$fc" report --db "$db" -o "$tmp/e/link.html"
contains "$tmp/err" "is a symbolic link, not a regular file" "the link named"
test -L "$tmp/e/link.html" && test "$(cat "$tmp/target")" = kept && ok || bad "the link and its target untouched"
rm "$tmp/e/link.html"
ln -s "$tmp/nowhere" "$tmp/e/dangling.html"
expect 2 "onto a link to nothing" -- "$fc" report --db "$db" -o "$tmp/e/dangling.html"
test ! -e "$tmp/nowhere" && ok || bad "nothing written through a dangling link"
rm "$tmp/e/dangling.html"
mkdir "$tmp/e/dir.html"
expect 2 "onto a directory" -- "$fc" report --db "$db" -o "$tmp/e/dir.html"
test -z "$(ls -A "$tmp/e/dir.html")" && ok || bad "nothing written into the directory"
rmdir "$tmp/e/dir.html"
expect 2 "onto a device" -- "$fc" report --db "$db" -o /dev/null
no_output "$tmp/e/r.html" "refused outputs"

echo "report: $pass passed, $fail failed"
[ "$fail" -eq 0 ] || exit 1

# ── In a real browser ─────────────────────────────────────────────────────────────────────────────────────────
chromium=${FUSECHECK_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  echo "report: skipped the browser checks: $chromium is not installed (ci/setup installs Debian's chromium)"
  exit 77
fi
browse() { HOME="$tmp/home" timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --user-data-dir="$tmp/chrome" --window-size=1280,2000 "$@" 2>>"$tmp/chromium.log"; }
mkdir -p "$tmp/home"
browse --dump-dom "file://$night" >"$tmp/dom.html" && ok || bad "chromium loads the page"
for id in 'table id="run-2"' 'table id="heatmap-2"' 'table id="decision-changes-2"' 'table id="digest-changes-2"' \
          'table id="proofs-3"' 'table id="fuzz-stats-4"' 'table id="fuzz-findings-4"' 'svg id="tolerance-plot-2"' \
          'table id="tolerance-2"'; do
  contains "$tmp/dom.html" "<$id" "the rendered DOM holds <$id>"
done
rects=$(grep -o '<rect ' "$tmp/dom.html" | wc -l)
classes=$(sqlite3 "$db" "SELECT count(DISTINCT substr(op, instr(op, ' ') + 1) || backend) FROM tolerances WHERE run_id = 2")
test "$rects" -eq "$classes" && test "$classes" -gt 4 && ok || bad "a bar a launch class in the DOM: $rects of $classes"
# not blank: many times the bytes of a blank page's screenshot of the same size
printf '<!DOCTYPE html><html><body></body></html>' >"$tmp/blank.html"
browse --screenshot="$tmp/blank.png" "file://$tmp/blank.html" >/dev/null && ok || bad "a blank page's screenshot"
browse --screenshot="$tmp/shot.png" "file://$night" >/dev/null && ok || bad "the page's screenshot"
magic=$(od -An -tx1 -N8 "$tmp/shot.png" 2>/dev/null | tr -d ' \n')
test "$magic" = 89504e470d0a1a0a && ok || bad "the screenshot is a PNG ($magic)"
blank=$(stat -c %s "$tmp/blank.png" 2>/dev/null || echo 0)
shot=$(stat -c %s "$tmp/shot.png" 2>/dev/null || echo 0)
test "$blank" -gt 0 && test "$shot" -gt $((4 * blank)) && ok || bad "the screenshot is not blank: $shot bytes, a blank page's $blank"
echo "report in chromium: $pass passed, $fail failed (screenshot $shot bytes, a blank page's $blank)"
test "$fail" -eq 0
