"""Writes its own well-formed 'return' frame claiming the right answer shape, then returns
garbage: the harness must judge the data, and a second reply desynchronises nothing it
trusts."""

import socket
import sys
from typing import Any

from spec_verify.ipc.frames import send_message

from ._wrong import *  # noqa: F403


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    sock = socket.socket(fileno=int(sys.argv[1]))
    send_message(sock, {"kind": "return", "value": {"$t": [[0], 0]}})
    sock.detach()
    return "not an answer"
