"""A forged reply on the worker's socket (its descriptor is argv[1]) carrying a shared-memory
descriptor: the attacks on the harness's side of ``ipc.frames``' shared arrays."""

from __future__ import annotations

import array
import json
import os
import socket
import struct
import sys
import time

from spec_verify.ipc.frames import MAGIC


def send_forged(fd: int, declared: int, then_truncate: bool = False) -> None:
    """A ``return`` frame declaring ``declared`` shared bytes, with descriptor ``fd``; the
    worker then waits (the harness must judge the frame, not time out on it)."""
    envelope = {"header": {"kind": "return", "value": {"$a": "x"}},
                "arrays": [["x", "<f8", [declared // 8], 0]], "shared": declared}
    text = json.dumps(envelope).encode()
    sock = socket.socket(fileno=int(sys.argv[1]))
    rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))]
    sock.sendmsg([struct.pack("<4sIQ", MAGIC, len(text), 0) + text], rights)
    if then_truncate:  # the harness would fault reading it, had it mapped an unsealed file
        os.ftruncate(fd, 0)
    sock.detach()
    time.sleep(30)
