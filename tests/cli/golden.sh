#!/usr/bin/env bash
# The optimizer's decisions on every zoo graph are what tests/golden/ pins: any change fails here until it is meant
# and rewritten (fusecheck golden --update), so a review shows it. Then the command's own checks: a planted change
# is found and printed, --update restores the file byte for byte, a symbolic link, an unknown file, a missing file
# and bad usage are each answered as they should be.
. "$(dirname "$0")/lib.bash" "$1"
# same A B DESCRIPTION: the two files are byte for byte the same.
same() {
  if cmp -s "$1" "$2"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: $3"; fi
}

# The committed files are what the optimizer decides now: a file for each zoo model in each of three modes, and the
# rule table's.
files=$(( ($("$fc" models | tail -n +2 | wc -l)) * 3 + 1 ))
expect 0 "golden" -- "$fc" golden
contains "$tmp/out" "golden: $files files" "golden checks every zoo graph in every mode, and the rule table"
contains "$tmp/out" "$files the same" "every golden file is the same"
if [ "$fail" -ne 0 ]; then
  echo "golden: the optimizer's decisions changed; if that is meant, run fusecheck golden --update and commit tests/golden/"
  cat "$tmp/out"
fi

# A decision flipped in a copy is found and printed, under its shim, both ways.
name=tiny-llama.decode.txt
cp -r tests/golden "$tmp/g"
at=$(grep -n '\] fired$' "$tmp/g/$name" | head -1 | cut -d: -f1)
orig=$(sed -n "${at}p" "$tmp/g/$name")
planted=${orig% fired}" refused: planted by the test"
sed -i "${at}s/ fired\$/ refused: planted by the test/" "$tmp/g/$name"
expect 1 "a flipped decision fails" -- "$fc" golden --dir "$tmp/g"
contains "$tmp/out" "$tmp/g/$name: the optimizer's decisions changed" "the changed file is named"
contains "$tmp/out" "  under reference:" "the change is under its shim"
contains "$tmp/out" "    - $planted" "the golden decision is printed as removed"
contains "$tmp/out" "    + $orig" "the decision made now is printed as added"
contains "$tmp/out" "$((files - 1)) the same, 0 rewritten, 1 differ" "only the one file differs"

# A guard atom changed in the rule table is found too, though no zoo decision changes.
cp tests/golden/rules.txt "$tmp/rules.txt"
sed -i '0,/atom add_norm.first_reader first_reader/s//atom add_norm.first_reader only_reader/' "$tmp/g/rules.txt"
expect 1 "a changed rule table fails" -- "$fc" golden --dir "$tmp/g"
contains "$tmp/out" "$tmp/g/rules.txt: the rule table changed" "the rule table's file is named"
contains "$tmp/out" "    +   atom add_norm.first_reader first_reader" "the atom as it is now is printed"
cp "$tmp/rules.txt" "$tmp/g/rules.txt"

# --update rewrites that file (and only it) back to the committed bytes.
expect 0 "update" -- "$fc" golden --update --dir "$tmp/g"
contains "$tmp/out" "rewrote $tmp/g/$name" "update names the file it rewrote"
contains "$tmp/out" "1 rewritten" "update rewrote one file"
same "$tmp/g/$name" "tests/golden/$name" "update restores the committed file byte for byte"
expect 0 "golden after update" -- "$fc" golden --dir "$tmp/g" tiny-llama

# A missing file and an unknown one are named; update writes the missing one.
rm "$tmp/g/$name"
echo stray >"$tmp/g/notes.txt"
expect 1 "missing and unknown files fail" -- "$fc" golden --dir "$tmp/g" tiny-llama
contains "$tmp/out" "$tmp/g/$name: missing" "the missing file is named"
contains "$tmp/out" "$tmp/g/notes.txt: an unknown file" "the unknown file is named"
rm "$tmp/g/notes.txt"
expect 0 "update writes a missing file" -- "$fc" golden --update --dir "$tmp/g" tiny-llama
same "$tmp/g/$name" "tests/golden/$name" "the written file is the committed one"

# A golden file that is a symbolic link is refused, and neither it nor what it points to is touched.
cp "tests/golden/$name" "$tmp/target"
sed -i "${at}s/ fired\$/ held/" "$tmp/target"
cp "$tmp/target" "$tmp/target.before"
rm "$tmp/g/$name"
ln -s "$tmp/target" "$tmp/g/$name"
expect 2 "a symbolic link is refused" -- "$fc" golden --dir "$tmp/g" tiny-llama
contains "$tmp/err" "a symbolic link" "the refusal says why"
expect 2 "update refuses a symbolic link" -- "$fc" golden --update --dir "$tmp/g" tiny-llama
if [ -L "$tmp/g/$name" ] && cmp -s "$tmp/target" "$tmp/target.before"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: the link or its target was changed"; fi
if ls -A "$tmp/g" | grep -q '\.tmp\.'; then fail=$((fail+1)); echo "FAIL: a temporary file was left"; else pass=$((pass+1)); fi

# Bad usage.
expect 2 "unknown option" -- "$fc" golden --frobnicate
expect 2 "unknown model" -- "$fc" golden no-such-model
expect 2 "--dir without a value" -- "$fc" golden --dir
expect 2 "no such directory" -- "$fc" golden --dir "$tmp/none"
expect 0 "help golden" -- "$fc" help golden
contains "$tmp/out" "--update" "golden's usage"

echo "golden: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
