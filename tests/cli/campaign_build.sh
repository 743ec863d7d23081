#!/usr/bin/env bash
# fuzz/campaign's build on a tree that cannot build (a copy of the working tree, broken on purpose): the failure's
# own text is shown, the stage is named (`campaign: stage configure|build failed (exit N)`), and the campaign exits
# 2 before fuzzing or logging anything. Skipped (77) without clang-14 or ninja, which the fuzz build needs, or outside
# a git checkout.
. "$(dirname "$0")/lib.bash" "$1"
for tool in clang-14 ninja cmake git; do
  command -v "$tool" >/dev/null || { echo "cli_campaign_build: skipped: no $tool"; exit 77; }
done
git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
  { echo "cli_campaign_build: skipped: not a git checkout (the tree is copied by git ls-files)"; exit 77; }
# lacks FILE TEXT DESCRIPTION: the file does not hold the text.
lacks() {
  if grep -qF -- "$2" "$1"; then fail=$((fail + 1)); echo "FAIL: $3: '$2' in:"; head -5 "$1"; else pass=$((pass + 1)); fi
}
# The working tree's files (tracked and untracked, not ignored), as fuzz/code-mutants-run snapshots them.
src="$tmp/src"
mkdir -p "$src"
git ls-files -co --exclude-standard -z | xargs -0 -r ls -d 2>/dev/null | tar -cf - -T - | tar -xf - -C "$src"
campaign() { "$src/fuzz/campaign" --build "$tmp/build" --work "$tmp/work" --db "$tmp/r.db" --time 1 --jobs 1 \
  --harness fuzz_db; }

# A configure that fails: CMake's error shown, the stage named.
cp "$src/CMakeLists.txt" "$tmp/CMakeLists.txt"
{ echo 'message(FATAL_ERROR "planted configure error (tests/cli/campaign_build.sh)")'; cat "$tmp/CMakeLists.txt"; } \
  > "$src/CMakeLists.txt"
expect 2 "a configure error fails the campaign" -- campaign
contains "$tmp/err" "planted configure error" "CMake's error is shown"
contains "$tmp/err" "campaign: stage configure failed (exit 1)" "the configure stage is named"
lacks "$tmp/err" "campaign: building" "no build after a failed configure"

# A compile error: the compiler's message shown, the build stage named, nothing fuzzed or logged.
cp "$tmp/CMakeLists.txt" "$src/CMakeLists.txt"
echo '#error "planted compile error (tests/cli/campaign_build.sh)"' >> "$src/ir/ir.h"
expect 2 "a compile error fails the campaign" -- campaign
contains "$tmp/err" "campaign: building the harnesses and fusecheck in $tmp/build" "the build is announced"
contains "$tmp/err" "planted compile error" "the compiler's error is shown"
contains "$tmp/err" "FAILED: " "the build tool's failure is shown"
contains "$tmp/err" "campaign: stage build failed (exit 1)" "the build stage is named"
lacks "$tmp/err" "campaign: fuzz_db for" "nothing fuzzed"
if [ -e "$tmp/r.db" ]; then fail=$((fail + 1)); echo "FAIL: a campaign that did not build logged a run"; else pass=$((pass + 1)); fi

echo "cli_campaign_build: $pass passed, $fail failed"
[ "$fail" = 0 ]
