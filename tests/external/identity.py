#!/usr/bin/env python3
"""The identity optimizer, speaking fusecheck-optimizer/1: every graph back as it came, no decision."""
import sys

HEAD = b"fusecheck-optimizer/1"
inp, out = sys.stdin.buffer, sys.stdout.buffer


def send(kind, ident, body):
    out.write(b"%s %s %d %d\n" % (HEAD, kind, ident, len(body)) + body)
    out.flush()


send(b"hello", 0, b"name identity\nversion 1.0\n")
while True:
    header = inp.readline()
    if not header:  # fusecheck closed our stdin: done
        break
    proto, kind, ident, nbytes = header.split()
    if proto != HEAD or kind != b"request":
        sys.exit("identity: not a request: %r" % header)
    head, _, graph = inp.read(int(nbytes)).partition(b"\n\n")  # request lines, a blank line, the graph
    fields = dict(line.split(b" ", 1) for line in head.split(b"\n") if not line.startswith(b"hold "))
    if fields.get(b"seed-rules") == b"yes":
        send(b"error", int(ident), b"identity has no seed rules")
    else:
        send(b"answer", int(ident), b"\n" + graph)  # no decision, a blank line, the graph
