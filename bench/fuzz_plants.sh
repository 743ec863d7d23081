#!/usr/bin/env bash
# bench/fuzz_plants.sh — whether fuzz_optimize finds each optimizer bug FUSECHECK_PLANT plants, and how soon: in
# process (the harness's own optimizer planted), and external (a faithful harness checking `env FUSECHECK_PLANT=P
# fusecheck optimize --serve` by the optimizer protocol). Each run at most S seconds (default 60) on one core from a
# fresh copy of the committed corpus (FROM corpus, the default) or from nothing (FROM empty: only what the generator
# and the mutator make), libFuzzer seed 1; prints "plant mode found|missed seconds signature".
#
#   bench/fuzz_plants.sh FUZZ_BUILD PLAIN_BUILD [SECONDS] [IGNORE] [FROM]
#
# IGNORE (FUSECHECK_FUZZ_IGNORE of the external runs): signatures the faithful external optimizer already has.
set -euo pipefail
fuzz=$(cd "${1:?FUZZ_BUILD}" && pwd); plain=$(cd "${2:?PLAIN_BUILD}" && pwd); secs=${3:-60}; ignore=${4:-}; from=${5:-corpus}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
plants=$("$plain/fusecheck" help 2>&1 | sed -nE 's/.*in the optimizer: ([^;]*);.*/\1/p' | tr -d ',')
# One run: found|missed, seconds, signature.
one() {
  rm -rf "$work/corpus" "$work"/crash-*; mkdir "$work/corpus"
  [ "$from" = empty ] || cp "$root/fuzz/corpus/fuzz_optimize"/* "$work/corpus/"
  local start end
  start=$(date +%s.%N)
  ( cd "$work" && env "$@" -seed=1 -max_len=8192 -dict="$root/fuzz/fc.dict" -max_total_time="$secs" corpus \
      > log 2>&1 || true )
  end=$(date +%s.%N)
  local sig
  sig=$(grep -m1 '^fusecheck-finding: ' "$work/log" | cut -d' ' -f3 || true)
  printf '%s %.1f %s\n' "$([ -n "$sig" ] && echo found || echo missed)" "$(echo "$end - $start" | bc)" "${sig:--}"
}
for p in $plants; do
  echo "$p in-process $(one FUSECHECK_FUZZ_IGNORE= FUSECHECK_PLANT="$p" "$fuzz/fuzz_optimize")"
  echo "$p external $(one FUSECHECK_FUZZ_IGNORE="$ignore" "$fuzz/fuzz_optimize" \
    --optimizer="env FUSECHECK_PLANT=$p $plain/fusecheck optimize --serve")"
done
