"""The FFI worker process: loads one C-ABI library and serves calls over the data-only wire.

Run by ``_ffi_adapter`` through ``_process.WorkerProcess`` as ``python -m
spec_verify.adapters._ffi_worker FD PATH``; ``FD`` is its end of a socket pair carrying
``ipc.frames`` frames (JSON headers of the schema below, arrays as raw bytes; never pickle). If the
library segfaults, aborts or hangs, only this process dies (or is killed with every process it
started), and the parent turns that into an ``ImplementationError``.

Frames from the parent: ``{"kind": "call", "call": CALL}``, ``{"kind": "batch", "calls":
[CALL, ...]}``, ``{"kind": "quit"}``; a CALL is ``{"method", "kwargs", "source"}`` with the
arguments as ``_codec`` values. A ``source`` says where the uniforms of ``verify_draft``,
``verify_tree`` (the optional ``sv_verify_tree``) and ``propose_and_verify`` (the optional
``sv_propose_and_verify``) come from:
``["remote"]`` asks the parent for each one (a ``{"kind": "callback", "what": "uniform"}``
frame, answered ``{"kind": "u", "value": x}`` or ``{"kind": "u_fail"}``), so any uniform
source works across the boundary in the contract's draw order; ``["list", uniforms]`` reads a
scripted list (drawing past it is reported); ``["seed", s]`` is the library's own
``request_rng(s)``; ``["forbid"]`` fails any draw (a draw at temperature 0), and
``["missing"]`` reports the missing uniform source at the first draw (so the library's own
validation comes first, in the reference's order). A batch may carry ``"threads": n`` (2 to
``MAX_THREADS``): its calls then run on ``n`` threads released together by a barrier (ctypes
drops the GIL during a foreign call, so the library runs in parallel), the outcomes still in
call order: the thread-safety check. Each answer is an OUTCOME ``{"outcome":
"ok" | "err", "value": value or error, "drawn": n}``; the greeting is ``{"kind": "ready",
"abi_version", "pid", "optional"}`` (``optional``: the optional symbols the library exports,
e.g. ``["sv_verify_tree"]``) or ``{"kind": "load_error", "error"}``.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from spec_verify.adapters._codec import (
    NotData,
    decode_value,
    encode_error,
    encode_value,
)
from spec_verify.adapters._ffi import PARAM_FIELDS, CallbackFailed, Library, SvSamplingParams
from spec_verify.adapters._process import harden_worker
from spec_verify.errors import ImplementationError, UnknownImplementation
from spec_verify.ipc.errors import WireError
from spec_verify.ipc.frames import recv_message, require, send_message
from spec_verify.reference.errors import InvalidParams

__all__ = ["MAX_THREADS", "keep_freed_memory", "main", "run_batch", "run_call"]

MAX_THREADS = 16  # the most threads a batch may ask for

Outcome = tuple[str, Any, int]


class RemoteFailed(Exception):
    """The parent's uniform source raised; the parent holds the exception."""


class DrewPastScript(Exception):
    """The library drew more uniforms than the scripted list holds."""

    def __init__(self, scripted: int) -> None:
        super().__init__(scripted)
        self.scripted = scripted


class DrewWhenForbidden(Exception):
    """The library drew a uniform where none may be drawn (greedy, no source)."""


class TooManyScripted(Exception):
    """A scripted source's hard limit on draws was passed (the harness's ``TooManyDraws``)."""


class DrewWithoutSource(Exception):
    """Sampled verification without a uniform source reached its first draw."""


def _params(values: Any) -> SvSamplingParams:
    return SvSamplingParams(**dict(zip(PARAM_FIELDS, values, strict=True)))


def _scripted(source: Any, counter: list[int]) -> Callable[[], float]:
    """A ``ScriptedUniforms(script, then=then, limit=limit)`` that had drawn ``start``."""
    if len(source) != 5:
        raise WireError("a scripted source is [kind, script, then, limit, drawn]")
    _, script, then, limit, start = source
    if not (isinstance(script, list) and all(type(u) is float for u in script)):
        raise WireError("a scripted source's script is not a list of floats")
    if not (then is None or type(then) is float) or not (limit is None or type(limit) is int):
        raise WireError("a scripted source's then/limit are not a float/an int or null")
    if type(start) is not int or start < 0:
        raise WireError("a scripted source's drawn is not a non-negative int")

    def draw() -> float:
        i = start + counter[0]
        counter[0] += 1
        if limit is not None and i + 1 > limit:
            raise TooManyScripted
        if i < len(script):
            return float(script[i])
        if then is None:
            raise DrewPastScript(len(script))
        return float(then)

    return draw


def _uniform_source(
    source: Any, sock: socket.socket | None, counter: list[int]
) -> tuple[Callable[[], float] | None, int]:
    if not (isinstance(source, (list, tuple)) and source and isinstance(source[0], str)):
        raise WireError(f"not a uniform source: {source!r:.80}")
    kind = source[0]
    if kind == "seed":
        return None, int(source[1])
    if kind == "list":
        script = list(source[1])

        def scripted() -> float:
            if counter[0] >= len(script):
                counter[0] += 1
                raise DrewPastScript(len(script))
            counter[0] += 1
            return float(script[counter[0] - 1])

        return scripted, 0
    if kind == "scripted":  # the harness's ScriptedUniforms as data: script, then, limit, drawn
        return _scripted(source, counter), 0
    if kind == "remote" and sock is not None:

        def remote() -> float:
            counter[0] += 1
            send_message(sock, {"kind": "callback", "what": "uniform"})
            reply, _ = recv_message(sock, None)
            if reply.get("kind") != "u":
                raise RemoteFailed
            return require(reply, "value", float)  # type: ignore[no-any-return]

        return remote, 0

    def forbidden() -> float:
        counter[0] += 1
        raise DrewWithoutSource if kind == "missing" else DrewWhenForbidden

    return forbidden, 0


def run_call(  # noqa: PLR0911 -- one return per kind of outcome
    lib: Library, method: str, kwargs: dict[str, Any], source: Any, sock: socket.socket | None
) -> Outcome:
    """One library call; every failure comes back as a value, never as a raise."""
    counter = [0]
    impl = f"ffi:{lib.path}"
    try:
        if method == "verify_draft":
            uniform, seed = _uniform_source(source or ("forbid",), sock, counter)
            value: Any = lib.verify_draft(
                kwargs["target_logits"],
                kwargs["draft_ids"],
                kwargs.get("draft_probs"),
                _params(kwargs["params"]),
                kwargs.get("history", ()),
                kwargs.get("prompt", ()),
                uniform,
                seed,
                kwargs.get("rule", "token"),
            )
        elif method == "verify_tree":
            uniform, seed = _uniform_source(source or ("forbid",), sock, counter)
            value = lib.verify_tree(
                kwargs["target_logits"],
                kwargs["parents"],
                kwargs["token_ids"],
                kwargs.get("draft_probs"),
                _params(kwargs["params"]),
                kwargs.get("history", ()),
                kwargs.get("prompt", ()),
                kwargs.get("rule", "with_replacement"),
                uniform,
                seed,
            )
        elif method == "propose_and_verify":  # the optional sv_propose_and_verify
            uniform, seed = _uniform_source(source or ("forbid",), sock, counter)
            draft_params = kwargs.get("draft_params")
            value = lib.propose_and_verify(
                kwargs["target_logits"], kwargs["draft_logits"], _params(kwargs["params"]),
                None if draft_params is None else _params(draft_params),
                kwargs.get("history", ()), kwargs.get("prompt", ()), uniform, seed,
            )  # fmt: skip
        elif method == "sampling_distribution":
            value = lib.sampling_distribution(
                kwargs["logits"],
                _params(kwargs["params"]),
                kwargs.get("history", ()),
                kwargs.get("prompt", ()),
            )
        elif method == "prompt_lookup":
            value = lib.prompt_lookup(
                kwargs["ctx"], kwargs["k"], kwargs["max_ngram"], kwargs["min_ngram"]
            )
        elif method == "pcg32_uniforms":
            value = lib.pcg32_uniforms(kwargs["initstate"], kwargs["initseq"], kwargs["n"])
        elif method == "pcg32_u32":
            value = lib.pcg32_u32(kwargs["initstate"], kwargs["initseq"], kwargs["n"])
        elif method == "sample":
            value = lib.sample(kwargs["dist"], kwargs["u"])
        elif method == "status_name":
            value = lib.status_name(int(kwargs["status"]))
        elif method == "speculative_step":
            value = lib.speculative_step(
                kwargs["p"], kwargs["q"], kwargs["x"], kwargs["u_accept"], kwargs["u_resample"]
            )
        else:
            raise ImplementationError(impl, method, "is not a method of the C ABI adapter")
    except CallbackFailed as exc:
        cause = exc.__cause__
        if isinstance(cause, RemoteFailed):
            return ("err", "remote_failed", counter[0])
        if isinstance(cause, TooManyScripted):
            return ("err", "too_many", counter[0])
        if isinstance(cause, DrewPastScript):
            reason = (
                f"drew uniform #{counter[0]} but only {cause.scripted} were scripted: the "
                "contract's draw order allows 2 per verified position and 1 for the bonus"
            )
        elif isinstance(cause, DrewWithoutSource):  # the caller's error, as in the reference
            missing = InvalidParams("rng", None, "sampled verification needs a uniform source")
            return ("err", missing, 0)
        elif isinstance(cause, DrewWhenForbidden):
            reason = "drew a uniform at temperature 0; greedy verification draws none"
        else:
            reason = f"failed in the uniform source: {cause!r}"
        return ("err", ImplementationError(impl, method, reason), counter[0])
    except (ValueError, ImplementationError) as exc:
        return ("err", exc, counter[0])
    except WireError:
        raise  # the parent broke the protocol: this worker ends
    except Exception as exc:  # a harness bug must not look like a crash of the library
        error = ImplementationError(
            impl, method, f"failed in the adapter's worker: {type(exc).__name__}: {exc}"
        )
        return ("err", error, counter[0])
    return ("ok", value, counter[0])


def run_batch(
    lib: Library, calls: list[tuple[str, dict[str, Any], Any]], threads: int
) -> list[Outcome]:
    """The calls in order, or spread over ``threads`` threads that start together."""
    if threads == 1:
        return [run_call(lib, method, kwargs, source, None) for method, kwargs, source in calls]
    results: list[Outcome | None] = [None] * len(calls)
    barrier = threading.Barrier(threads)

    def serve(first: int) -> None:
        barrier.wait()
        for i in range(first, len(calls), threads):
            method, kwargs, source = calls[i]
            results[i] = run_call(lib, method, kwargs, source, None)

    pool = [threading.Thread(target=serve, args=(k,), daemon=True) for k in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    lost = ImplementationError(f"ffi:{lib.path}", "batch", "a worker thread ended early")
    return [outcome if outcome is not None else ("err", lost, 0) for outcome in results]


def _encode_outcome(outcome: Outcome, arrays: dict[str, Any]) -> dict[str, Any]:
    kind, value, drawn = outcome
    if kind == "err" and value in ("remote_failed", "too_many"):
        return {"outcome": value, "value": None, "drawn": drawn}
    if kind == "err":
        if isinstance(value, BaseException):
            return {"outcome": "err", "value": encode_error(value), "drawn": drawn}
        value = ImplementationError("ffi", "worker", f"failed: {value!r}")
        return {"outcome": "err", "value": encode_error(value), "drawn": drawn}
    try:
        return {"outcome": "ok", "value": encode_value(value, arrays), "drawn": drawn}
    except NotData as exc:
        error = ImplementationError("ffi", "worker", f"returned a value that is not data ({exc})")
        return {"outcome": "err", "value": encode_error(error), "drawn": drawn}


def _decode_call(call: Any, arrays: dict[str, Any]) -> tuple[str, dict[str, Any], Any]:
    if not isinstance(call, dict):
        raise WireError("a call is not a dict")
    method = require(call, "method", str)
    kwargs = decode_value(call.get("kwargs"), arrays)
    if not isinstance(kwargs, dict):
        raise WireError("a call's kwargs are not a dict")
    source = decode_value(call.get("source"), arrays)
    return method, kwargs, source


# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_KEEP_FREED = 1 << 30  # bytes: allocations below this come from the heap, which keeps them


def keep_freed_memory() -> bool:
    """Let freed memory stay in this process's heap (glibc ``mallopt``), so that a library's
    per-call buffers of a large vocabulary (a row of V = 128,000 is 1 MB, above glibc's mmap
    threshold) are reused instead of mapped and faulted in, page by page, on every call: at
    V = 128k page faults were half of the Rust port's time per call. What the heap keeps is
    bounded by the peak of one call, within the worker's ``RLIMIT_AS``. False where there is
    no glibc ``mallopt`` (another libc: nothing changes)."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):
        return False
    return bool(mallopt(_M_TRIM_THRESHOLD, _KEEP_FREED) and
                mallopt(_M_MMAP_THRESHOLD, _KEEP_FREED))


def main(argv: list[str]) -> int:
    fd, path = int(argv[1]), argv[2]
    harden_worker()
    keep_freed_memory()
    sock = socket.socket(fileno=fd)
    try:
        lib = Library(path)
    except UnknownImplementation as exc:
        send_message(sock, {"kind": "load_error", "error": encode_error(exc)})
        return 0
    send_message(sock, {"kind": "ready", "abi_version": lib.abi_version, "pid": os.getpid(),
                        "optional": sorted(lib.optional), "declared": lib.declared})
    np.seterr(all="ignore")
    while True:
        try:
            message, arrays = recv_message(sock, None)
        except WireError:
            return 0  # the parent closed the stream (or broke the protocol): nothing to serve
        kind = message.get("kind")
        out_arrays: dict[str, Any] = {}
        if kind == "quit":
            return 0
        if kind == "call":
            method, kwargs, source = _decode_call(message.get("call"), arrays)
            outcome = _encode_outcome(run_call(lib, method, kwargs, source, sock), out_arrays)
            send_message(sock, {"kind": "done", **outcome}, out_arrays)
        elif kind == "batch":
            calls = message.get("calls")
            if not isinstance(calls, list):
                return 2
            threads = message.get("threads", 1)
            if type(threads) is not int or not 1 <= threads <= MAX_THREADS:
                return 2
            decoded = [_decode_call(call, arrays) for call in calls]
            outcomes = [_encode_outcome(r, out_arrays) for r in run_batch(lib, decoded, threads)]
            send_message(sock, {"kind": "batch_done", "outcomes": outcomes}, out_arrays)
        else:
            return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
