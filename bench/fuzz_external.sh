#!/usr/bin/env bash
# bench/fuzz_external.sh — the throughput of fuzz_optimize checking fusecheck's own optimizer in process against the
# same harness checking it run as its own process (`fusecheck optimize --serve`, spoken to by the optimizer
# protocol): each for S seconds (default 60) on one core, from a fresh copy of the committed corpus, libFuzzer seeds
# 1..N (default 3); prints each run's exec/s and CPU seconds (the harness's, and its children's: the server's), then
# the medians and their ratio.
#
#   bench/fuzz_external.sh FUZZ_BUILD PLAIN_BUILD [SECONDS] [RUNS]
#
# FUZZ_BUILD holds the libFuzzer fuzz_optimize (the `fuzz` preset); PLAIN_BUILD a plain fusecheck (no sanitizers):
# the optimizer under test is a normal build, only the harness is the fuzz build.
set -euo pipefail
fuzz=$(cd "${1:?FUZZ_BUILD}" && pwd); plain=$(cd "${2:?PLAIN_BUILD}" && pwd); secs=${3:-60}; runs=${4:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
# One run: its exec/s and CPU seconds (user+sys, children included), as "rate cpu".
one() {
  local seed=$1; shift
  rm -rf "$work/corpus"; cp -r "$root/fuzz/corpus/fuzz_optimize" "$work/corpus"
  ( cd "$work" && FUSECHECK_FUZZ_KEEP_GOING=1 /usr/bin/time -f 'cpu %U %S' "$fuzz/fuzz_optimize" "$@" -seed="$seed" \
      -max_len=8192 -dict="$root/fuzz/fc.dict" -max_total_time="$secs" -print_final_stats=1 -close_fd_mask=0 corpus \
      > log 2>&1 || true )
  awk '/stat::number_of_executed_units/ { n = $2 } /^cpu / { c = $2 + $3 }
       END { printf "%.0f %.1f\n", n / '"$secs"', c }' "$work/log"
}
median() { sort -g | awk '{a[NR]=$1} END { print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2 }'; }
: > "$work/in"; : > "$work/ex"
for s in $(seq 1 "$runs"); do
  r=$(one "$s"); echo "in-process seed $s: exec/s cpu-s: $r"; echo "$r" >> "$work/in"
  r=$(one "$s" --optimizer="$plain/fusecheck optimize --serve")
  echo "external   seed $s: exec/s cpu-s: $r"; echo "$r" >> "$work/ex"
done
a=$(cut -d' ' -f1 "$work/in" | median); b=$(cut -d' ' -f1 "$work/ex" | median)
echo "median exec/s: in-process $a, external $b, ratio $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a ? b / a : 0 }')"
