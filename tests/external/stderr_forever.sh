# Greets, reads a request, then floods stderr and never answers; the flood's pid into $FUSECHECK_TEST_PIDS.
. tests/external/lib.sh
greet noisy
read_request
yes "stderr-noise" >&2 &
[ -n "$FUSECHECK_TEST_PIDS" ] && echo $! >"$FUSECHECK_TEST_PIDS"
wait
