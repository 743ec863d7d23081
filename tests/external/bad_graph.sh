# Greets, then answers every request with an empty report and a graph that does not parse.
. tests/external/lib.sh
greet badgraph
while read_request; do printf '%s answer %s 13\n\nnot a graph\n' "$hdr" "$id"; done
