# tests/external/lib.sh — what the hostile optimizers share: the greeting, and reading one request whole.
hdr=fusecheck-optimizer/1
# Greet as an optimizer named $1.
greet() { printf '%s hello 0 %d\nname %s\nversion 1\n' "$hdr" $((16 + ${#1})) "$1"; }
# Read one request's header and body; its id in $id.
read_request() {
  read -r proto kind id nbytes || exit 0
  head -c "$nbytes" >/dev/null
}
