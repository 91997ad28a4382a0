"""The FFI worker process: loads one C-ABI library and serves calls over a socket.

Run as ``python -m spec_verify.adapters._ffi_worker FD PATH`` by ``_ffi_adapter``; ``FD`` is its
end of
a socket pair carrying pickled messages (``multiprocessing.connection.Connection``). If the
library segfaults, aborts or hangs, only this process dies (or is killed), and the parent turns
that into an ``ImplementationError``.

Messages from the parent: ``("call", method, kwargs, source)``, ``("batch", [(method, kwargs,
source), ...])``, ``("quit",)``. A ``source`` says where ``verify_draft``'s uniforms come from:
``("remote",)`` asks the parent for each one (``("uniform",)`` → ``("u", value)`` or
``("u_fail",)``), so any uniform source works across the boundary in the contract's draw
order; ``("list", uniforms)`` reads a scripted list (drawing past it is reported);
``("seed", s)`` is the library's own ``request_rng(s)``; ``("forbid",)`` fails any draw (a
draw at temperature 0), and ``("missing",)`` reports the missing uniform source at the first
draw (so the library's own validation comes first, in the reference's order).
``("batch", calls, threads)`` runs the calls on ``threads`` threads at once (2 to
``MAX_THREADS``), released together by a barrier (ctypes drops the GIL during a foreign call,
so the library runs in parallel); the outcomes still come back in call order: the
thread-safety check.
Each answer is ``(outcome, value, n_drawn)`` with outcome ``"ok"`` or ``"err"`` (value is then
the exception).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from spec_verify.adapters._ffi import PARAM_FIELDS, CallbackFailed, Library, SvSamplingParams
from spec_verify.errors import ImplementationError, UnknownImplementation
from spec_verify.reference.errors import InvalidParams

__all__ = ["MAX_THREADS", "main", "run_batch", "run_call"]

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


class DrewWithoutSource(Exception):
    """Sampled verification without a uniform source reached its first draw."""


def _params(values: Any) -> SvSamplingParams:
    return SvSamplingParams(**dict(zip(PARAM_FIELDS, values, strict=True)))


def _uniform_source(
    source: tuple[Any, ...], conn: Connection | None, counter: list[int]
) -> tuple[Callable[[], float] | None, int]:
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
    if kind == "remote" and conn is not None:

        def remote() -> float:
            counter[0] += 1
            conn.send(("uniform",))
            reply = conn.recv()
            if reply[0] != "u":
                raise RemoteFailed
            return float(reply[1])

        return remote, 0

    def forbidden() -> float:
        counter[0] += 1
        raise DrewWithoutSource if kind == "missing" else DrewWhenForbidden

    return forbidden, 0


def run_call(
    lib: Library, method: str, kwargs: dict[str, Any], source: Any, conn: Connection | None
) -> Outcome:
    """One library call; every failure comes back as a value, never as a raise."""
    counter = [0]
    impl = f"ffi:{lib.path}"
    try:
        if method == "verify_draft":
            uniform, seed = _uniform_source(source or ("forbid",), conn, counter)
            value: Any = lib.verify_draft(
                kwargs["target_logits"],
                kwargs["draft_ids"],
                kwargs.get("draft_probs"),
                _params(kwargs["params"]),
                kwargs.get("history", ()),
                kwargs.get("prompt", ()),
                uniform,
                seed,
            )
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


def _harden() -> None:
    """No core dumps from a crashing library; die with the parent (Linux) so a hung library
    never outlives the harness."""
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None)
            pr_set_pdeathsig = 1
            libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
        except (OSError, AttributeError):
            pass


def main(argv: list[str]) -> int:
    fd, path = int(argv[1]), argv[2]
    _harden()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; Ctrl-C reaches it
    conn = Connection(fd)
    try:
        lib = Library(path)
    except UnknownImplementation as exc:
        conn.send(("load_error", exc))
        return 0
    conn.send(("ready", {"abi_version": lib.abi_version, "pid": os.getpid()}))
    np.seterr(all="ignore")
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return 0
        kind = message[0]
        if kind == "quit":
            return 0
        if kind == "call":
            _, method, kwargs, source = message
            conn.send(("done", run_call(lib, method, kwargs, source, conn)))
        elif kind == "batch":
            threads = message[2] if len(message) > 2 else 1
            if type(threads) is not int or not 1 <= threads <= MAX_THREADS:
                threads = 1
            conn.send(("batch_done", run_batch(lib, list(message[1]), threads)))
        else:
            conn.send(("done", ("err", ImplementationError(path, "worker", f"bad {kind}"), 0)))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
