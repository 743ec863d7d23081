# ci/stage.bash — how ci/nightly runs its stages (sourced, not run; tests/cli/nightly_stages.sh tests it). Each stage
# is announced, with its time when it ends, and a failure is named: `ci/nightly: stage NAME failed (exit N)`.
#
# A stage that exits 1 found something (fusecheck's and the campaign's exit 1: a check failed, a new finding): the
# night goes on with its other stages, so its results file and page hold everything it checked, and ends with exit
# 1. Any other failure stops the night there with that exit code: 2 and others, it could not run (a compile error,
# a usage error, a file it could not write, a missing tool); 128+N, a signal.
#
# The caller's settings: set -eu (a stage's own failure is caught here, not by -e).

# The night's exit status so far (1 once a stage found something), and the stages that failed, for the last line.
# shellcheck disable=SC2034 # read by the script that sources this one
stage_status=0
stage_failed=()

# stage NAME COMMAND...: run one stage. Returns 0, its finding (exit 1) kept in stage_status; exits when it could not
# run.
stage() {
  local name=$1 rc=0 t0=$SECONDS cmd
  shift
  cmd="$*"
  [ ${#cmd} -le 160 ] || cmd="${cmd:0:160}..."
  echo "ci/nightly: stage $name: $cmd" >&2
  "$@" || rc=$?
  if [ "$rc" = 0 ]; then
    echo "ci/nightly: stage $name passed ($((SECONDS - t0)) s)" >&2
    return 0
  fi
  echo "ci/nightly: stage $name failed (exit $rc)" >&2
  stage_failed+=("$name (exit $rc)")
  if [ "$rc" != 1 ]; then
    stage_summary
    exit "$rc"
  fi
  stage_status=1
}

# Print the stages that failed, if any (the night's last word on them).
stage_summary() {
  local list="" s
  for s in ${stage_failed[@]+"${stage_failed[@]}"}; do list="${list:+$list, }$s"; done
  [ -z "$list" ] || echo "ci/nightly: stages failed: $list" >&2
}
