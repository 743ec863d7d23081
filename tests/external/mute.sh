# Never greets.
exec sleep 60
