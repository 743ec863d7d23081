# Greets, then refuses every request with an error message.
. tests/external/lib.sh
greet refuser
while read_request; do printf '%s error %s 19\nno graphs on Sunday' "$hdr" "$id"; done
