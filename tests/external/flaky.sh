# The first run (no $FUSECHECK_TEST_FLAG file yet) greets, reads a request and exits; every later run is fusecheck's
# own server ($FUSECHECK_TEST_BINARY optimize --serve).
if [ ! -e "$FUSECHECK_TEST_FLAG" ]; then
  : >"$FUSECHECK_TEST_FLAG"
  . tests/external/lib.sh
  greet flaky
  read_request
  exit 1
fi
exec "$FUSECHECK_TEST_BINARY" optimize --serve
