# Greets, reads a request and never answers.
. tests/external/lib.sh
greet silent
read_request
exec sleep 60
