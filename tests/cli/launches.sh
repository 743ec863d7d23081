#!/usr/bin/env bash
# The launch list the tests walk (kernels/launches.txt) is what `fusecheck launches` finds the optimizer emitting
# now (each model's first 8 layers; ci/nightly checks that every layer finds the same): a new kind of launch, or one
# gone, fails here until the list is regenerated (and its stages run on the host lane, which test_kernels checks).
set -uo pipefail
fc="$1"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$fc" launches >"$out" 2>/dev/null
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "launches: fusecheck launches exited $rc"
  echo "launches: 0 passed, 1 failed"
  exit 1
fi
if ! diff -u kernels/launches.txt "$out"; then
  echo "launches: kernels/launches.txt is not what the optimizer emits now (regenerate: fusecheck launches > kernels/launches.txt)"
  echo "launches: 0 passed, 1 failed"
  exit 1
fi
"$fc" launches --shim reference >/dev/null 2>&1
if [ $? -ne 2 ]; then
  echo "launches: a shim that is not the lane was not refused"
  echo "launches: 1 passed, 1 failed"
  exit 1
fi
"$fc" launches --layers 0 >/dev/null 2>&1
if [ $? -ne 2 ]; then
  echo "launches: --layers 0 was not refused"
  echo "launches: 2 passed, 1 failed"
  exit 1
fi
echo "launches: 3 passed, 0 failed"
