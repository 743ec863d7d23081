#!/usr/bin/env bash
# End-to-end: `fusecheck dot`'s legend — a cluster of its own naming each colour the picture's clusters use with its
# class (every class shown, no other), an unfused op, an activation edge and a refusal's note; Graphviz renders it.
. "$(dirname "$0")/lib.bash" "$1"
for shim in cuda-lane:h100:int8 reference; do
  expect 0 "dot under $shim" -- "$fc" dot tiny-qwen3-moe --layers 1 --shim "$shim" -o "$tmp/g.dot"
  contains "$tmp/g.dot" "subgraph cluster_legend {" "a legend cluster under $shim"
  [ "$(grep -c "subgraph cluster_legend" "$tmp/g.dot")" = 1 ] && ok || bad "more than one legend under $shim"
  # the colour each cluster's class is filled with, and what the legend says of each class
  grep -o 'label="[a-z0-9_]* by [a-z0-9_]*"; style=filled; fillcolor="#[0-9a-f]*"' "$tmp/g.dot" |
    sed 's/label="\([a-z0-9_]*\) by [^"]*"; style=filled; fillcolor="\(#[0-9a-f]*\)"/\1 \2/' | sort -u > "$tmp/clusters"
  grep -o 'legend_class[0-9]* \[label="[a-z0-9_ ]*: [^"]*", style=filled, fillcolor="#[0-9a-f]*"' "$tmp/g.dot" |
    sed 's/.*label="\([a-z0-9_ ]*\): [^"]*", style=filled, fillcolor="\(#[0-9a-f]*\)"/\1 \2/' | sort -u > "$tmp/legend"
  [ -s "$tmp/clusters" ] && ok || bad "no cluster under $shim: the legend check proves nothing"
  cmp -s "$tmp/clusters" "$tmp/legend" && ok ||
    bad "under $shim the legend's classes and colours are not the clusters': $(diff "$tmp/clusters" "$tmp/legend" | head -6 | tr '\n' ' ')"
  contains "$tmp/g.dot" 'legend_op [label="lifted op left as it is' "the unfused op explained under $shim"
  contains "$tmp/g.dot" 'legend_refused [shape=note, style=dashed' "the refusal's note explained under $shim"
  if command -v dot >/dev/null; then
    dot -Tsvg "$tmp/g.dot" -o "$tmp/g.svg" 2>"$tmp/doterr" && grep -q ">legend<" "$tmp/g.svg" && ok ||
      bad "Graphviz does not render the legend under $shim: $(head -3 "$tmp/doterr")"
  fi
done
echo "dot_legend: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
