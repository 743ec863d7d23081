# Greets, then answers with a header whose length is not a decimal.
. tests/external/lib.sh
greet badheader
read_request
printf '%s answer %s 0x10\n' "$hdr" "$id"
exec sleep 60
