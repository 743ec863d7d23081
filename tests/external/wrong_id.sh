# Greets, then answers every request with another request's id (an empty report and an empty graph).
. tests/external/lib.sh
greet wrong
while read_request; do printf '%s answer %d 1\n\n' "$hdr" $((id + 1000)); done
