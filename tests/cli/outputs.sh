#!/usr/bin/env bash
# What `-o PATH` does to what is at PATH: a regular file is replaced whole and keeps its permissions; a FIFO (like a
# device) is written in place, never replaced; a symbolic link is written through (and said so), one to nothing is
# refused; a directory is refused. `-` reads standard input.
. "$(dirname "$0")/lib.bash" "$1"
set -o pipefail
check() { if eval "$1"; then ok; else bad "$2"; fi; }

"$fc" lift tiny-llama -o "$tmp/want.fc" 2>/dev/null
check '[ -s "$tmp/want.fc" ]' "lift writes a new file"

# A regular file keeps its mode (0600 stays 0600) and gets the new text whole.
echo old >"$tmp/reg"
chmod 600 "$tmp/reg"
"$fc" lift tiny-llama -o "$tmp/reg" 2>/dev/null
check '[ "$(stat -c %a "$tmp/reg")" = 600 ]' "a 0600 file stays 0600"
check 'cmp -s "$tmp/reg" "$tmp/want.fc"' "the file holds the new text"
check '[ -z "$(ls "$tmp" | grep "\.tmp\.")" ]' "no temporary file is left"

# A FIFO is written into, not replaced.
mkfifo "$tmp/fifo"
cat "$tmp/fifo" >"$tmp/fifo.out" &
reader=$!
"$fc" lift tiny-llama -o "$tmp/fifo" 2>/dev/null
wait "$reader"
check '[ -p "$tmp/fifo" ]' "the FIFO is still a FIFO"
check 'cmp -s "$tmp/fifo.out" "$tmp/want.fc"' "the reader got the text"

# A symbolic link is written through: the link stays, its target gets the text, stderr says so.
echo old >"$tmp/target"
ln -s target "$tmp/link"
"$fc" lift tiny-llama -o "$tmp/link" 2>"$tmp/err"
check '[ -L "$tmp/link" ]' "the link is still a link"
check 'cmp -s "$tmp/target" "$tmp/want.fc"' "the link's target holds the text"
check 'grep -q "symbolic link: writing through it" "$tmp/err"' "writing through a link is said"

# A link to nothing and a directory are refused, nothing written.
ln -s missing "$tmp/dangling"
"$fc" lift tiny-llama -o "$tmp/dangling" 2>"$tmp/err"
check '[ $? -ne 0 ] && [ ! -e "$tmp/missing" ]' "a link to nothing is refused, nothing created"
check 'grep -q "a symbolic link to nothing" "$tmp/err"' "the refusal says why"
mkdir "$tmp/dir"
"$fc" lift tiny-llama -o "$tmp/dir" 2>"$tmp/err"
check '[ $? -ne 0 ] && grep -q "Is a directory" "$tmp/err"' "a directory is refused"

# `-` is standard input for a FILE argument, named stdin in messages.
"$fc" validate - <"$tmp/want.fc" >"$tmp/out" 2>&1
check 'grep -q "^stdin: ok" "$tmp/out"' "validate - reads standard input"
printf 'tensor x f32 1x8 inptu\n' | "$fc" validate - >"$tmp/out" 2>&1
check '[ $? -eq 2 ] && grep -q "^stdin:1:18: unknown role" "$tmp/out"' "an error in standard input is stdin:line:col"
"$fc" print - <"$tmp/want.fc" >"$tmp/out" 2>&1
check 'cmp -s "$tmp/out" "$tmp/want.fc"' "print - prints standard input canonically"
# a results file in a directory the user cannot write: the reading commands read it, the writing ones refuse it
# (exit 2, nothing printed as if a run were made). As root, the commands run as nobody (root writes anywhere).
ro="$tmp/ro"
mkdir "$ro" && chmod 755 "$tmp"
"$fc" check tiny-llama --mode decode --shim reference --db "$ro/r.db" --no-progress >/dev/null 2>&1
chmod 555 "$ro" && chmod 444 "$ro/r.db"
as_reader() { if [ "$(id -u)" = 0 ]; then setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; else "$@"; fi; }
if [ "$(id -u)" != 0 ] || command -v setpriv >/dev/null; then
  as_reader "$fc" db runs --db "$ro/r.db" >"$tmp/out" 2>&1
  check '[ $? -eq 0 ] && grep -q "complete" "$tmp/out"' "db runs reads a file in a read-only directory"
  as_reader "$fc" db diff 1 1 --db "$ro/r.db" >"$tmp/out" 2>&1
  check '[ $? -eq 0 ] && grep -q "0 decision changes" "$tmp/out"' "db diff reads it too"
  as_reader "$fc" check tiny-llama --mode decode --shim reference --db "$ro/r.db" --no-progress >"$tmp/out" 2>"$tmp/err"
  check '[ $? -eq 2 ] && ! grep -q "check: run" "$tmp/out" && grep -q "^fusecheck: check: " "$tmp/err"' \
    "check on a read-only results file: exit 2, no run summary"
  as_reader "$fc" prove add_norm --db "$ro/r.db" >"$tmp/out" 2>"$tmp/err"
  check '[ $? -eq 2 ] && grep -q "^fusecheck: prove: " "$tmp/err"' "prove on a read-only results file: exit 2"
else
  echo "outputs: skipping the read-only directory checks (running as root without setpriv)"
fi
chmod 755 "$ro"
echo "outputs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
