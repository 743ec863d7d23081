# An optimizer that writes garbage where the greeting belongs, then waits.
echo "Welcome to my optimizer 2.0!"
exec sleep 60
