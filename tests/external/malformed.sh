# Greets, then answers every request with a report line naming no rule fusecheck knows.
. tests/external/lib.sh
greet malformed
line="no_such_rule add_norm [1, 2] fired"
while read_request; do printf '%s answer %s %d\n%s\n\n' "$hdr" "$id" $((${#line} + 2)) "$line"; done
