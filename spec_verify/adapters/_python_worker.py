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
import importlib.util
import os
import socket
import sys
from types import ModuleType
from typing import Any

from spec_verify.adapters._codec import encode_error
from spec_verify.adapters._generation_request import GenerationRequest, draw_generation
from spec_verify.adapters._process import harden_worker
from spec_verify.adapters._remote import Handles, answer, call_checked
from spec_verify.errors import UnknownImplementation
from spec_verify.ipc.errors import WireError
from spec_verify.ipc.frames import recv_message, send_message
from spec_verify.uniforms import DrewPastScript, ScriptedUniforms, TooManyDraws

__all__ = ["Toolbox", "main"]

_REPLIES = ("return", "raise")
_TOOLBOX = 1  # the handle of the Toolbox (0 is the module)


class Toolbox:
    """Helpers that run a loop inside the worker (one request instead of one per step)."""

    @staticmethod
    def draws(source: Any, n: int) -> list[float]:
        """``n`` values of ``source.random()``."""
        return [float(source.random()) for _ in range(int(n))]

    @staticmethod
    def verify_many(module: Any, rounds: list[Any], p: Any, rng: Any) -> list[Any]:
        """``module.verify_draft`` on each round ``[target_logits, draft_ids, draft_probs,
        history, prompt]`` with the same ``p`` and ``rng``, in order; the first round that
        raises ends the batch with its error (as the same loop in the harness would). Inputs
        are checked after each round as for a single call."""
        results = []
        for number, item in enumerate(rounds):
            target_logits, draft_ids, draft_probs, history, prompt = item
            args = [target_logits, draft_ids, draft_probs, p, history, rng, prompt]
            results.append(
                call_checked(module.verify_draft, args, {}, f"verify_draft (round {number})")
            )
        return results

    @staticmethod
    def propose_many(module: Any, rounds: list[Any], p: Any, draft_p: Any, rng: Any) -> list[Any]:
        """``module.propose_and_verify`` on each round ``[target_logits, draft_logits,
        history, prompt]`` with the same ``p``, ``draft_p`` and ``rng``, as ``verify_many``."""
        results = []
        for number, item in enumerate(rounds):
            target_logits, draft_logits, history, prompt = item
            args = [target_logits, draft_logits, p, history, rng, prompt, draft_p]
            results.append(call_checked(module.propose_and_verify, args, {},
                                        f"propose_and_verify (round {number})"))
        return results

    @staticmethod
    def verify_tree_many(module: Any, rounds: list[Any], p: Any, rng: Any, rule: str) -> list[Any]:
        """``module.verify_tree`` on each round ``[target_logits, parents, token_ids,
        draft_probs, history, prompt]`` with the same ``p``, ``rng`` and ``rule``, in order, as
        ``verify_many``."""
        results = []
        for number, item in enumerate(rounds):
            target_logits, parents, token_ids, draft_probs, history, prompt = item
            args = [target_logits, parents, token_ids, draft_probs, p, history, rng, prompt]
            results.append(
                call_checked(module.verify_tree, args, {"rule": rule},
                             f"verify_tree (round {number})")
            )
        return results

    @staticmethod
    def call_scripted(
        module: Any,
        method: str,
        args: list[Any],
        kwargs: dict[str, Any],
        slot: int,
        script: list[Any],
    ) -> list[Any]:
        """``module.<method>(*args, **kwargs)`` with ``args[slot]`` a ``ScriptedUniforms``
        built here (the uniform source's position in the contract's signature): the
        harness's scripted source sent as data (``[script, then, limit, drawn]``) instead of
        one callback per draw. Returns ``["ok", value, drawn]``, ``["past_script", message,
        drawn]`` (the source's ``DrewPastScript``), ``["too_many", None, drawn]`` or
        ``["err", error, drawn]`` (anything else the call raised, as ``_codec`` error data)."""
        values, then, limit, drawn = script
        source = ScriptedUniforms(values, then=then, limit=limit)
        source.drawn = int(drawn)
        try:
            args = [*args[:slot], source, *args[slot + 1 :]]
            value = call_checked(getattr(module, method), args, kwargs, method)
        except DrewPastScript as exc:
            return ["past_script", str(exc), source.drawn]
        except TooManyDraws:
            return ["too_many", None, source.drawn]
        except BaseException as exc:  # the implementation's failure, reported with its draws
            return ["err", encode_error(exc), source.drawn]
        return ["ok", value, source.drawn]

    @staticmethod
    def verify_scripted(module: Any, args: list[Any], scripts: list[list[Any]]) -> list[Any]:
        """``module.verify_draft(*args)`` once per scripted source (``call_scripted``'s data,
        in the source's slot), each answered as ``call_scripted`` answers; list arguments are
        copied per call, so a call that changes one (reported) leaves the next its input."""
        answers = []
        for script in scripts:
            fresh = [list(a) if isinstance(a, list) else a for a in args]
            answers.append(Toolbox.call_scripted(module, "verify_draft", fresh, {}, 5, script))
        return answers

    @staticmethod
    def generate_many(module: Any, request: Any, seeds: list[int]) -> list[list[int]]:
        """``draw_generation`` of the request (as data) for each seed, in order."""
        parsed = GenerationRequest.from_data(request)
        return [draw_generation(module, parsed, int(seed)) for seed in seeds]

    @staticmethod
    def pcg32_uniforms(module: Any, seed: int, n: int) -> list[float]:
        """The first ``n`` uniforms of ``module.request_rng(seed)``."""
        rng = module.request_rng(seed)
        return [float(rng.random()) for _ in range(int(n))]


def _load(kind: str, name: str, search: str = "") -> ModuleType:
    """The module to serve: the reference, a mutant, or a ``python:`` module by its dotted
    name or its absolute file path (``_implementations.resolve_python`` found it, and the
    folder it was found from, ``search``, is appended to ``sys.path`` as the harness saw it)."""
    if kind == "reference":
        return importlib.import_module("spec_verify.reference")
    if kind == "mutant":
        from spec_verify.mutants._load import load_mutant

        module: ModuleType = load_mutant(f"mutant:{name}", name).module
        return module
    if search and search not in sys.path:
        sys.path.append(search)  # after sys.path: an installed package still wins, as there
    try:
        if os.path.isabs(name) and name.endswith(".py"):
            return _load_file(name)
        return importlib.import_module(name)
    except ImportError as exc:
        own = exc.name is not None and name.split(".", maxsplit=1)[0] == exc.name
        fix = ("check the name, or give the path of the .py file" if own
               else f"fix the import it makes (python {name} shows it)" if os.path.isabs(name)
               else f"fix the import it makes (python -c 'import {name}' shows it)")  # fmt: skip
        raise UnknownImplementation(
            "impl", f"python:{name}", f"importing {name!r} failed ({type(exc).__name__}: {exc})",
            fix,
        ) from exc  # fmt: skip


def _load_file(path: str) -> ModuleType:
    """Run a ``.py`` file as a module named by its stem (registered in ``sys.modules``, so
    its dataclasses and pickles work), or by a private name when the stem is taken."""
    stem = os.path.splitext(os.path.basename(path))[0]
    name = stem if stem.isidentifier() and stem not in sys.modules else f"_spec_verify_impl_{stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} cannot be loaded as Python source", path=path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


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
        # The toolbox checks each call it makes into the module (call_checked); checking its
        # own arguments too would copy and compare a batch of 256 rounds a second time (it
        # cost more than the 256 calls' own checks).
        toolbox = message.get("target") == _TOOLBOX
        reply, reply_arrays = answer(
            self.handles, message, arrays, contain=(BaseException,), check_inputs=not toolbox
        )
        send_message(self.sock, reply, reply_arrays)


def main(argv: list[str]) -> int:
    fd, kind, name = int(argv[1]), argv[2], argv[3]
    search = argv[4] if len(argv) > 4 else ""
    harden_worker()
    sock = socket.socket(fileno=fd)
    peer = _Peer(sock)
    try:
        module = _load(kind, name, search)
    except BaseException as exc:  # sys.exit at import, a crash at import: a load failure
        error = exc if isinstance(exc, UnknownImplementation) else UnknownImplementation(
            "impl", name, f"importing it raised {type(exc).__name__}: {exc}",
            "an implementation module must import cleanly (no exit, no error at import)",
        )  # fmt: skip
        send_message(sock, {"kind": "load_error", "error": encode_error(error)})
        return 0
    peer.handles.add(module, 0)
    peer.handles.add(Toolbox(), _TOOLBOX)
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
