#!/usr/bin/env bash
# End to end: `fusecheck report` writes one self-contained HTML page of runs in results.db, each against the newest
# earlier run of the same kind and configuration: the verdict first (a line a stage, green or red, each a link), the
# trends, the run identities, changes summarised by rule and by graph before their raw rows in pages, the tolerance
# table labelled, a first night without a compared run; text escaped, the same bytes every time, whole or not at all,
# bad input refused (exit 2, no file). The page in a real browser: tests/cli/report_browser.sh.
. "$(dirname "$0")/lib.bash"

# grep-free checks on a file: it lacks the text.
lacks() {
  if ! grep -qF -- "$2" "$1"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: $3: '$2' found"; fi
}
# no_output PATH DESCRIPTION: nothing was written there, nor any temporary file beside it.
no_output() {
  if [ ! -e "$1" ] && [ -z "$(ls -A "$(dirname "$1")")" ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: $2: a file was left"; ls -la "$(dirname "$1")"; fi
}
# line_of FILE TEXT: the number of the first line holding the text (0: none).
line_of() { grep -nF -m1 -- "$2" "$1" | cut -d: -f1 | grep . || echo 0; }
# before FILE A B DESCRIPTION: A's first line comes before B's, both there.
before() {
  local a b; a=$(line_of "$1" "$2"); b=$(line_of "$1" "$3")
  if [ "$a" -gt 0 ] && [ "$b" -gt "$a" ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: $4: '$2' (line $a) before '$3' (line $b)"; fi
}

# results.db as two nights and an ad-hoc run between them: a nightly-like check (run 1), the same check holding
# add_norm (run 2, ad hoc), the nightly-like check again (run 3); then a prove run and a fuzz run with a finding whose
# signature needs escaping
db="$tmp/results.db"
models=(tiny-llama tiny-qwen3 --mode decode --mode prefill:4 --mode batch:2 --shim reference --shim cuda-lane:h200:int8
        --tolerance --fixtures tests/rules --no-progress)
expect 0 "first night's check" -- "$fc" check "${models[@]}" --db "$db"
expect 0 "an ad-hoc check, add_norm held" -- "$fc" check "${models[@]}" --hold add_norm --db "$db"
expect 0 "second night's check" -- "$fc" check "${models[@]}" --db "$db"
expect 0 "prove" -- "$fc" prove add_norm --db "$db" --no-progress
"$fc" fuzz begin --db "$db" --command "fuzz/campaign --time 1" >"$tmp/run" 2>&1
fuzz_run=$(cat "$tmp/run")
expect 0 "fuzz stat" -- "$fc" fuzz stat "$fuzz_run" fuzz_optimize 12345 60.5 210 17000 --db "$db"
expect 0 "fuzz finding" -- "$fc" fuzz finding "$fuzz_run" fuzz_optimize 'diff:<script>&"x"' \
  abababababababababababababababababababababababababababababababab --db "$db"
expect 0 "fuzz end" -- "$fc" fuzz end "$fuzz_run" complete --db "$db"
test "$fuzz_run" = 5 && ok || bad "the fuzz run is run 5, not '$fuzz_run'"
mkdir -p "$tmp/pages"

# ── The second night: compared with the first, not with the ad-hoc run between ─────────────────────────────────
night="$tmp/pages/night.html"
expect 0 "the second night's page" -- "$fc" report --db "$db" --run 3 --run 4 --run 5 -o "$night"
contains "$night" "fusecheck report: runs 3 (a check run), 4 (a prove run) and 5 (a fuzz run)" "each run once, in order"
contains "$night" '<a href="#run-3">check run 3</a>: compared with run 1, the previous check run of the same configuration (run 2, newer, ran another)' \
  "the run compared with is named, and the ad-hoc run passed over"
contains "$night" "<h3 id=\"part-changes-3\">run 3 (check) against run 1</h3>" "the changes are against run 1"
contains "$night" '<li class="ok"><a href="#part-changes-3">0 decision changes in 0 rules since run 1</a></li>' \
  "no change since the first night"
lacks "$night" "run_before = 2" "nothing read against the ad-hoc run"
# the verdict: the first section, a line a stage, each a link to the run's part or to the failing rows
before "$night" '<section id="verdict">' '<section id="trends">' "the verdict first"
before "$night" '<section id="trends">' '<section id="run">' "the trends before the run identities"
comparisons=$(sqlite3 "$db" "SELECT count(*) FROM diffs WHERE run_id = 3")
contains "$night" "<li class=\"ok\"><a href=\"#part-checks-3\">0 mismatches in $comparisons comparisons</a></li>" "the comparisons"
contains "$night" '<li class="ok"><a href="#part-checks-3">0 other failures (lift, optimize, report, tolerance)</a></li>' "the failures"
tolerances=$(sqlite3 "$db" "SELECT count(*) FROM tolerances WHERE run_id = 3")
contains "$night" "<li class=\"ok\"><a href=\"#part-tolerance-3\">0 tolerance rows outside their bound, of $tolerances</a></li>" \
  "the tolerance rows"
proved=$(sqlite3 "$db" "SELECT count(*) FROM proofs WHERE run_id = 4 AND verdict = 'proved'")
test "$proved" -gt 0 && ok || bad "the prove run proved something"
contains "$night" "<li class=\"ok\"><a href=\"#part-proofs-4\">proved $proved/$proved</a></li>" "the proofs"
contains "$night" '<li class="bad"><a href="#fuzz-findings-5">1 new fuzz findings</a></li>' \
  "a new finding is red, linking to the findings"
contains "$night" '<table id="fuzz-findings-5">' "the link's target"
# the trends: each headline figure of the configuration's runs as an inline SVG chart
contains "$night" "The last 2 runs of this configuration: runs 1 to 3" "the check's trend spans its configuration's runs"
for figure in "decisions fired" "decision changes" "worst error / bound" "run time (s)" "obligations proved" "exec/s"; do
  contains "$night" "<figcaption>$figure: <b>" "a trend of $figure"
done
test "$(grep -o '<svg class="spark"' "$night" | wc -l)" -ge 6 && ok || bad "a chart a figure"
# the proofs: what changed or is not as it should be, the rest counted
proofs=$(sqlite3 "$db" "SELECT count(*) FROM proofs WHERE run_id = 4")
contains "$night" "none: every obligation is what it should be, and none changed." "no proof row listed"
contains "$night" "$proofs other obligations: as they should be (no earlier run to compare them with)." "the rest counted"
lacks "$night" '<table id="proofs-4">' "not every obligation"
# the tolerance table: the worst element's error beside its own bound, the largest error beside its own
contains "$night" '<th colspan="3">the worst element (error / bound)</th><th colspan="2">the largest error</th>' \
  "the two errors labelled"
contains "$night" "<th>its error</th><th>its own bound</th><th>error / bound</th><th>error</th><th>its own bound</th>" \
  "each beside its own bound"
lacks "$night" '(not kept)' "each largest error's own bound, as the file keeps it"
row=$(sed -n '/<table id="tolerance-3"/,/<\/table>/p' "$night" | grep -m1 '^<tr><td>')
echo "$row" | grep -qE '^<tr><td>[a-z_0-9]+</td><td>[a-z:]+</td>(<td>[0-9.e+-]+</td>){8}</tr>$' && ok || bad "a row of numbers: $row"
# a file whose rows predate the largest error's own bound (schema 8): a lower bound, labelled as such
cp "$db" "$tmp/old-rows.db"
sqlite3 "$tmp/old-rows.db" "UPDATE set_tolerances SET max_abs_bound = NULL"
expect 0 "a page of rows without the largest error's bound" -- "$fc" report --db "$tmp/old-rows.db" --run 3 -o "$tmp/pages/old-rows.html"
contains "$tmp/pages/old-rows.html" "title=\"not kept in this results file (before schema 9): at least the largest error over its row's worst error / bound\">≥ " \
  "the bound not kept: at least, labelled"
lacks "$night" "run 0" "no run 0"
lacks "$night" "<script" "no script"
lacks "$night" "src=" "nothing fetched"
lacks "$night" "https:" "no link out"
lacks "$night" 'href="http' "no link out"
contains "$night" "diff:&lt;script&gt;&amp;&quot;x&quot;" "a finding's text escaped"
contains "$night" "<td>fuzz_optimize</td><td>12345</td><td>60.5</td><td>204</td>" "executions and exec/s"

# ── The ad-hoc run: no earlier run of its configuration, said where it shows ────────────────────────────────────
expect 0 "the ad-hoc run's page" -- "$fc" report --db "$db" --run 2 -o "$tmp/pages/adhoc.html"
adhoc="$tmp/pages/adhoc.html"
contains "$adhoc" '<strong class="warning">no earlier check run has this configuration, so nothing is compared: the newest, run 1, lacked --hold add_norm</strong>' \
  "a visible warning naming the newest run and how it differs"
contains "$adhoc" '<li class="warn"><a href="#part-changes-2">not compared: no earlier run of this configuration</a></li>' \
  "the verdict's changes line warns"
contains "$adhoc" "against none: no earlier run of its configuration" "the run's headings say so"
lacks "$adhoc" '<table id="change-summary-2">' "no changes against another configuration"

# ── A configuration is a set of options: their order and where results go do not count ──────────────────────────
cdb="$tmp/configs.db"
for command in "fuzz/campaign --time 60 --jobs 2 --db a.db" "fuzz/campaign --jobs 2 --db b.db --time 60" \
               "fuzz/campaign --time 60 --jobs 4 --db a.db"; do
  run=$("$fc" fuzz begin --db "$cdb" --command "$command" 2>/dev/null)
  "$fc" fuzz stat "$run" fuzz_optimize 1000 10 5 100 --db "$cdb" >/dev/null 2>&1
  "$fc" fuzz end "$run" complete --db "$cdb" >/dev/null 2>&1
done
expect 0 "the page of options in another order" -- "$fc" report --db "$cdb" --run 2 -o "$tmp/pages/order.html"
contains "$tmp/pages/order.html" "compared with run 1, the previous fuzz run, of the same configuration" \
  "the same options in another order, another results file: one configuration"
expect 0 "the page of another option" -- "$fc" report --db "$cdb" --run 3 -o "$tmp/pages/jobs.html"
contains "$tmp/pages/jobs.html" "no earlier fuzz run has this configuration, so nothing is compared: the newest, run 2, had --jobs 2 and lacked --jobs 4" \
  "another value: another configuration, the difference named"

# ── A night whose decisions changed: summarised by rule and by graph, raw rows last and paged ───────────────────
# (run 2 given run 1's command line and configuration: the same configuration, as a night after a change to the optimizer would be)
cp "$db" "$tmp/changed.db"
sqlite3 "$tmp/changed.db" "UPDATE runs SET command = (SELECT command FROM runs WHERE id = 1), config = (SELECT config FROM runs WHERE id = 1) WHERE id = 2"
changed="$tmp/pages/changed.html"
expect 0 "the changed night's page" -- "$fc" report --db "$tmp/changed.db" --run 2 -o "$changed"
changes=$(sqlite3 "$db" "SELECT count(*) FROM decision_changes WHERE run_before = 1 AND run_after = 2")
rules=$(sqlite3 "$db" "SELECT count(DISTINCT rule) FROM decision_changes WHERE run_before = 1 AND run_after = 2")
test "$changes" -gt 100 && ok || bad "more than a page of changes: $changes"
contains "$changed" "compared with run 1, the previous check run, of the same configuration" "compared with run 1"
contains "$changed" "<li class=\"bad\"><a href=\"#change-summary-2\">$changes decision changes in $rules rules since run 1</a></li>" \
  "the verdict's line is red and links to the summary"
contains "$changed" '<tr class="changed"><td>add_norm</td><td>stopped firing (held)</td>' "by rule: add_norm held"
contains "$changed" "<li>add_norm stopped firing (held); fused_quant, prefill_norm_epilogues stopped firing (no decision); " \
  "by graph: the rules that stopped firing first"
contains "$changed" " on <b>4 graphs</b>: tiny-llama batch:2, tiny-llama prefill:4, tiny-qwen3 batch:2, tiny-qwen3 prefill:4</li>" \
  "the graphs where the same rules moved alike, counted and named"
graphs=$(sqlite3 "$db" "SELECT count(DISTINCT graph || mode) FROM decision_changes WHERE run_before = 1 AND run_after = 2")
lined=$(sed -n '/<ul id="change-graphs-2"/,/<\/ul>/p' "$changed" | grep -o 'on <b>[0-9]* graph' | grep -o '[0-9]*' | awk '{ s += $1 } END { print s + 0 }')
test "$lined" = "$graphs" && ok || bad "every changed graph on one line: $lined of $graphs"
before "$changed" '<table id="change-summary-2">' '<ul id="change-graphs-2"' "by rule, then by graph"
before "$changed" '<ul id="change-graphs-2"' "<details>" "the summaries before the raw rows"
pages=$(grep -c "^<details><summary>rows " "$changed")
test "$pages" -eq $(( (changes + 99) / 100 )) && ok || bad "the raw rows in pages of 100: $pages pages for $changes rows"
contains "$changed" "<details><summary>rows 101 to " "the second page"
raw=$(sed -n '/<table id="decision-changes-2-1"/,/<\/section>/p' "$changed" | grep -c '^<tr><td>')
test "$raw" -eq "$changes" && ok || bad "every change a raw row: $raw of $changes"
moved=$(grep -o '<td class="h[0-7] moved"' "$changed" | wc -l)
test "$moved" -gt 0 && ok || bad "heat map cells that changed marked"
contains "$changed" "$moved cells changed since run 1." "and counted"
contains "$changed" "a framed cell: its count changed since run 1, the compared run" "the legend says so"

# ── The first night: nothing to compare with, and no "run 0" ─────────────────────────────────────────────────────
first="$tmp/pages/first.html"
expect 0 "the first night's page" -- "$fc" report --db "$db" --run 1 -o "$first"
contains "$first" "the first check run in this file: nothing to compare it with" "the verdict says so"
contains "$first" '<li class="first"><a href="#part-changes-1">not compared: the first run of its kind in this file</a></li>' \
  "a neutral line, not a warning"
contains "$first" "run 1 is the first check run in this file" "the changes say so"
contains "$first" "No check run ended before run 1 in this file." "the identity says so"
contains "$night" "<tr><th>configuration</th><td>check --mode decode --mode prefill:4 --mode batch:2 --shim reference" "and names the configuration"
cases=$(sqlite3 "$db" "SELECT fixture_cases FROM runs WHERE id = 1")
test "$cases" -gt 100 && ok || bad "the first night held the rules' fixture cases: $cases"
contains "$first" "<li class=\"ok\"><a href=\"#part-checks-1\">$cases/$cases fixture cases held</a></li>" \
  "the rules' fixture cases in the verdict"
contains "$first" "<tr><td>the rules&#39; fixture cases</td><td>$cases</td><td>0</td></tr>" \
  "and in the comparisons and failures"
contains "$first" "<tr><th>fixture cases (failed)</th><td>$cases (0)</td></tr>" "the identity counts the fixture cases"
lacks "$first" "run 0" "no run 0"
lacks "$first" '<p>a framed cell' "no marked heat map without a compared run"

# every in-page link names an id the page has (the browser checks it too: report_browser.sh)
for page in "$night" "$adhoc" "$changed" "$first"; do
  missing=$(grep -o 'href="#[^"]*"' "$page" | sed 's/href="#//; s/"$//' | sort -u | while read -r id; do
    grep -qF "id=\"$id\"" "$page" || echo "$id"; done)
  links=$(grep -o 'href="#' "$page" | wc -l)
  test -z "$missing" && test "$links" -gt 10 && ok || bad "every link of $(basename "$page") resolves ($links links): missing $missing"
done

# by default the newest ended run
expect 0 "report of the newest run" -- "$fc" report --db "$db" -o "$tmp/pages/newest.html"
contains "$tmp/pages/newest.html" "fusecheck report: run 5 (a fuzz run)" "the newest ended run"
contains "$tmp/pages/newest.html" "no decision reports were recorded in run 5 (a fuzz run)." "the heat map says why"

# the same bytes every time, to a file or to stdout; a regular file is replaced, keeping its permissions
expect 0 "the night again" -- "$fc" report --db "$db" --run 3 --run 4 --run 5 --run 3 -o "$tmp/pages/again.html"
cmp -s "$night" "$tmp/pages/again.html" && ok || bad "the same db gives the same bytes"
expect 0 "to stdout" -- "$fc" report --db "$db" --run 3 --run 4 --run 5 -o -
cmp -s "$night" "$tmp/out" && ok || bad "-o - writes the same page"
chmod 640 "$tmp/pages/again.html"
expect 0 "over a regular file" -- "$fc" report --db "$db" --run 1 -o "$tmp/pages/again.html"
cmp -s "$first" "$tmp/pages/again.html" && ok || bad "the file was replaced"
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
test "$fail" -eq 0
