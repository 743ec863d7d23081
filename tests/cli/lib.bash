# tests/cli/lib.bash — what the end-to-end CLI tests share (sourced, not a test itself): the fusecheck binary as
# $fc, a scratch directory $tmp removed on exit, pass/fail counters, and the checks that count.
set -u
fc="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
# ok / bad DESCRIPTION: count one check passed, or failed (said so).
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# expect CODE DESCRIPTION -- COMMAND...: run it (output in $tmp/out and $tmp/err), check its exit code.
expect() {
  local code=$1 what=$2; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"; local got=$?
  if [ "$got" -eq "$code" ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: $what: exit $got, wanted $code"; head -40 "$tmp/out" "$tmp/err"; fi
}
# contains FILE TEXT DESCRIPTION: the file holds the text.
contains() {
  if grep -qF -- "$2" "$1"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: $3: no '$2' in:"; head -5 "$1"; fi
}
