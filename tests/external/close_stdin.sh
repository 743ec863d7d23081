# Greets, closes its stdin unread and waits: fusecheck's write of the request meets a closed pipe (EPIPE, and a
# SIGPIPE that must not reach fusecheck).
. tests/external/lib.sh
greet brief
exec <&-
exec sleep 60
