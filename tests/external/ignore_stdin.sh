# Greets and never reads its stdin.
. tests/external/lib.sh
greet deaf
exec sleep 60
