"""The Python worker process: imports one implementation module and serves it as handles.

Run by ``_python_adapter`` through ``_process.WorkerProcess`` as ``python -m
spec_verify.adapters._python_worker FD KIND NAME`` (KIND ``python``, ``mutant`` or
``reference``). Everything the harness does with the module is a ``_remote`` request; every
harness object the module uses (a uniform source) is a callback. The implementation's crash,
``sys.exit``, ``KeyboardInterrupt`` or any ``BaseException`` is an error answer; its
``os._exit`` or a hang ends this process only (the harness kills it and its descendants).

Handle 0 is the module, handle 1 the ``Toolbox`` (loops the harness would otherwise make
one request per step of).
"""

from __future__ import annotations

import importlib
import os
import socket
import sys
from types import ModuleType
from typing import Any

from spec_verify.adapters._codec import encode_error
from spec_verify.adapters._process import harden_worker
from spec_verify.adapters._remote import Handles, answer
from spec_verify.adapters._wire import WireError, recv_message, send_message
from spec_verify.errors import UnknownImplementation

__all__ = ["Toolbox", "main"]

_REPLIES = ("return", "raise")


class Toolbox:
    """Helpers that run a loop inside the worker (one request instead of one per step)."""

    @staticmethod
    def draws(source: Any, n: int) -> list[float]:
        """``n`` values of ``source.random()``."""
        return [float(source.random()) for _ in range(int(n))]

    @staticmethod
    def pcg32_uniforms(module: Any, seed: int, n: int) -> list[float]:
        """The first ``n`` uniforms of ``module.request_rng(seed)``."""
        rng = module.request_rng(seed)
        return [float(rng.random()) for _ in range(int(n))]


def _load(kind: str, name: str) -> ModuleType:
    if kind == "reference":
        return importlib.import_module("spec_verify.reference")
    if kind == "mutant":
        from spec_verify.mutants._load import load_mutant

        module: ModuleType = load_mutant(f"mutant:{name}", name).module
        return module
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise UnknownImplementation(
            "impl",
            f"python:{name}",
            f"module {name!r} cannot be imported ({exc})",
            "check the name and that it is on sys.path",
        ) from exc


class _Peer:
    """The worker's end: answers requests; sends callbacks and serves nested requests while it
    waits for their answers."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.handles = Handles(self.callback)

    def callback(
        self, header: dict[str, Any], arrays: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        send_message(self.sock, {**header, "callback": True, "kind": "callback",
                                 "op": header["kind"]}, arrays)  # fmt: skip
        while True:
            message, message_arrays = recv_message(self.sock, None)
            if message.get("kind") in _REPLIES:
                return message, message_arrays
            self.serve_one(message, message_arrays)

    def serve_one(self, message: dict[str, Any], arrays: dict[str, Any]) -> None:
        reply, reply_arrays = answer(
            self.handles, message, arrays, contain=(BaseException,), check_inputs=True
        )
        send_message(self.sock, reply, reply_arrays)


def main(argv: list[str]) -> int:
    fd, kind, name = int(argv[1]), argv[2], argv[3]
    harden_worker()
    sock = socket.socket(fileno=fd)
    peer = _Peer(sock)
    try:
        module = _load(kind, name)
    except BaseException as exc:  # sys.exit at import, a crash at import: a load failure
        error = exc if isinstance(exc, UnknownImplementation) else UnknownImplementation(
            "impl", name, f"importing it raised {type(exc).__name__}: {exc}",
            "an implementation module must import cleanly (no exit, no error at import)",
        )  # fmt: skip
        send_message(sock, {"kind": "load_error", "error": encode_error(error)})
        return 0
    peer.handles.add(module, 0)
    peer.handles.add(Toolbox(), 1)
    names = sorted(n for n in dir(module) if not n.startswith("_"))
    send_message(sock, {"kind": "ready", "pid": os.getpid(), "names": names})
    while True:
        try:
            message, arrays = recv_message(sock, None)
        except WireError:
            return 0  # the harness closed the stream (or broke the protocol)
        if message.get("kind") == "quit":
            return 0
        peer.serve_one(message, arrays)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
