#!/usr/bin/env bash
# `fusecheck report`'s page in a real browser (Debian's chromium, headless; ci/setup installs it): at 1400 × 900 the
# first screen holds the verdict (its bottom edge above 900 px), nothing is wider than the window (the document's
# scrollWidth ≤ 1400), every in-page link (`href="#…"`) names an id the page has, and the screenshot is a PNG, not
# blank. The page holds no script; a copy given a measuring script (and no Content-Security-Policy) is what is
# measured. Without chromium the test is skipped, saying so (exit 77, ctest's SKIP_RETURN_CODE).
. "$(dirname "$0")/lib.bash"
chromium=${FUSECHECK_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  echo "report_browser: skipped: $chromium is not installed (ci/setup installs Debian's chromium)"
  exit 77
fi

# A night as the nightly makes it: two checks of one configuration with an ad-hoc one between, the second night's
# decisions changed (run 4 given run 1's command line, as a night after a change to the optimizer would be), a prove
# run and a fuzz run with a finding.
db="$tmp/results.db"
models=(tiny-llama tiny-qwen3 --mode decode --mode prefill:4 --shim reference --shim cuda-lane:h200:int8
        --tolerance --fixtures tests/rules --no-progress)
expect 0 "first night's check" -- "$fc" check "${models[@]}" --db "$db"
expect 0 "an ad-hoc check" -- "$fc" check "${models[@]}" --hold add_norm --db "$db"
expect 0 "second night's check" -- "$fc" check "${models[@]}" --hold add_norm --db "$db"
sqlite3 "$db" "UPDATE runs SET command = (SELECT command FROM runs WHERE id = 1), config = (SELECT config FROM runs WHERE id = 1) WHERE id = 3"
expect 0 "prove" -- "$fc" prove add_norm head_norm_rope --db "$db" --no-progress
"$fc" fuzz begin --db "$db" --command "fuzz/campaign --time 1" >"$tmp/run" 2>&1
fuzz_run=$(cat "$tmp/run")
expect 0 "fuzz stat" -- "$fc" fuzz stat "$fuzz_run" fuzz_optimize 12345 60.5 210 17000 --db "$db"
expect 0 "fuzz finding" -- "$fc" fuzz finding "$fuzz_run" fuzz_optimize 'diff:<b>x</b>' \
  abababababababababababababababababababababababababababababababab --db "$db"
expect 0 "fuzz end" -- "$fc" fuzz end "$fuzz_run" complete --db "$db"
page="$tmp/night.html"
expect 0 "the night's page" -- "$fc" report --db "$db" --run 3 --run 4 --run 5 -o "$page"
changes=$(sqlite3 "$db" "SELECT count(*) FROM decision_changes WHERE run_before = 1 AND run_after = 3")
test "$changes" -gt 0 && ok || bad "the night has decision changes to show"

# The copy measured: the page's policy dropped, a script that writes what it measures into the page once laid out.
measure='<script>
addEventListener("load", function () {
  var v = document.getElementById("verdict").getBoundingClientRect(), missing = [], links = 0;
  document.querySelectorAll("a[href^=\"#\"]").forEach(function (a) {
    links++;
    var id = decodeURIComponent(a.getAttribute("href").slice(1));
    if (!document.getElementById(id)) missing.push(id);
  });
  var out = document.createElement("pre");
  out.id = "measured";
  out.textContent = "window=" + innerWidth + "x" + innerHeight + " verdict-top=" + Math.floor(v.top) +
    " verdict-bottom=" + Math.ceil(v.bottom) + " scroll-width=" + document.documentElement.scrollWidth +
    " links=" + links + " missing=[" + missing.join(" ") + "]";
  document.body.appendChild(out);
});
</script>'
grep -v 'http-equiv="Content-Security-Policy"' "$page" | sed 's#</body></html>##' >"$tmp/measured.html"
printf '%s\n</body></html>\n' "$measure" >>"$tmp/measured.html"
grep -q 'http-equiv="Content-Security-Policy"' "$page" && ok || bad "the page keeps its policy (only the copy drops it)"

mkdir -p "$tmp/home"
browse() { HOME="$tmp/home" timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --user-data-dir="$tmp/chrome" --window-size=1400,900 "$@" 2>>"$tmp/chromium.log"; }
browse --virtual-time-budget=5000 --dump-dom "file://$tmp/measured.html" >"$tmp/dom.html" && ok || bad "chromium loads the page"
line=$(grep -o '<pre id="measured">window=[^<]*' "$tmp/dom.html" | sed 's/.*">//')
echo "report_browser: $line"
num() { echo "$line" | grep -o "$1=[0-9]*" | cut -d= -f2; }
test "$(num window)" = 1400 && ok || bad "the window is 1400 px wide: $line"
bottom=$(num verdict-bottom)
test -n "$bottom" && test "$bottom" -gt 0 && test "$bottom" -lt 900 && ok || bad "the verdict on the first screen (bottom < 900 px): $line"
width=$(num scroll-width)
test -n "$width" && test "$width" -le 1400 && ok || bad "no horizontal overflow at 1400 px (scrollWidth ≤ 1400): $line"
links=$(num links)
test -n "$links" && test "$links" -ge 15 && ok || bad "the page's in-page links counted: $line"
echo "$line" | grep -qF 'missing=[]' && ok || bad "every in-page link resolves: $line"
# the measure itself sees an overflow: the same copy with a block wider than the window
sed 's#<body>#<body><div style="width:2000px">wide</div>#' "$tmp/measured.html" >"$tmp/wide.html"
browse --virtual-time-budget=5000 --dump-dom "file://$tmp/wide.html" >"$tmp/wide-dom.html" || true
wide=$(grep -o '<pre id="measured">window=[^<]*' "$tmp/wide-dom.html" | grep -o 'scroll-width=[0-9]*' | cut -d= -f2)
test -n "$wide" && test "$wide" -gt 1400 && ok || bad "a page wider than the window measures so (scroll-width $wide)"
for id in 'section id="verdict"' 'table id="run-3"' 'table id="heatmap-3"' 'table id="change-summary-3"' \
          'ul id="change-graphs-3"' 'table id="proof-counts-4"' 'table id="fuzz-stats-5"' 'table id="fuzz-findings-5"' \
          'svg id="tolerance-plot-3"' 'table id="tolerance-3"' 'svg class="spark"'; do
  grep -qF "<$id" "$tmp/dom.html" && ok || bad "the rendered DOM holds <$id>"
done

# The screenshot of the first screen: a PNG, not blank (many times a blank page's bytes at the same size).
printf '<!DOCTYPE html><html><body></body></html>' >"$tmp/blank.html"
browse --screenshot="$tmp/blank.png" "file://$tmp/blank.html" >/dev/null && ok || bad "a blank page's screenshot"
browse --screenshot="$tmp/shot.png" "file://$page" >/dev/null && ok || bad "the page's screenshot"
magic=$(od -An -tx1 -N8 "$tmp/shot.png" 2>/dev/null | tr -d ' \n')
test "$magic" = 89504e470d0a1a0a && ok || bad "the screenshot is a PNG ($magic)"
blank=$(stat -c %s "$tmp/blank.png" 2>/dev/null || echo 0)
shot=$(stat -c %s "$tmp/shot.png" 2>/dev/null || echo 0)
test "$blank" -gt 0 && test "$shot" -gt $((4 * blank)) && ok || bad "the screenshot is not blank: $shot bytes, a blank page's $blank"
echo "report_browser: $pass passed, $fail failed (screenshot $shot bytes, a blank page's $blank)"
test "$fail" -eq 0
