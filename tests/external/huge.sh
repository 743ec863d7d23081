# Greets, then answers with a body far over any small limit (and starts writing it).
. tests/external/lib.sh
greet huge
read_request
printf '%s answer %s 100000000\n' "$hdr" "$id"
exec yes "add_norm add_norm [1, 2] fired"
