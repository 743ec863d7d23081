# Greets, reads a request, writes half an answer and exits.
. tests/external/lib.sh
greet half
read_request
printf '%s answer %s 1000\nadd_norm add_norm [1, 2] fired\n' "$hdr" "$id"
echo "half_answer: giving up" >&2
exit 3
