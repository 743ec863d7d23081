# Greets, reads a request, says why on stderr and exits.
. tests/external/lib.sh
greet quitter
read_request
echo "exit_mid: out of patience" >&2
exit 1
