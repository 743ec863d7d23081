#!/usr/bin/env python3
"""A planted optimizer for tests/cli/optimizer.sh, speaking fusecheck-optimizer/1: every graph back unchanged (so it
validates and evaluates bit for bit), with a report claiming one firing of add_norm over the lifted ops
$B_COVERS (default "0, 2": across op 1 of tests/external/b-chain.fc, which reads op 0 and is read by op 2 — a fusion
that makes a cycle). Only validate-run's cycle check can see what is wrong."""
import os
import sys

HEAD = b"fusecheck-optimizer/1"
inp, out = sys.stdin.buffer, sys.stdout.buffer
covers = os.environ.get("B_COVERS", "0, 2").encode()


def send(kind, ident, body):
    out.write(b"%s %s %d %d\n" % (HEAD, kind, ident, len(body)) + body)
    out.flush()


send(b"hello", 0, b"name b-cycle\nversion 1\n")
while True:
    header = inp.readline()
    if not header:  # fusecheck closed our stdin: done
        break
    proto, kind, ident, nbytes = header.split()
    if proto != HEAD or kind != b"request":
        sys.exit("b-cycle: not a request: %r" % header)
    _, _, graph = inp.read(int(nbytes)).partition(b"\n\n")
    send(b"answer", int(ident), b"add_norm add_norm [" + covers + b"] fired\n\n" + graph)
