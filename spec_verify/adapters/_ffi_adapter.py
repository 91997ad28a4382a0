"""The ``ffi:path/to/lib.so`` adapter: a C-ABI library driven from a worker process.

The library is loaded only in a worker (``spec_verify.adapters._ffi_worker``), never in the
harness: a segfault, an abort, an ``exit()`` or a hang in it ends the worker, and the call raises
``ImplementationError`` saying what happened (signal, exit status, the time limit, the tail of
its stderr). The next call starts a fresh worker; a function that hung once is not called again
in the same run (each further hang would cost a full time limit).

Uniforms cross the process boundary in the contract's draw order. For an arbitrary uniform
source the worker asks the harness for each one as the library draws it, so any object with
``random()`` works, scripted or not, and exactly as many values are taken as the library drew
(``last_uniforms_drawn``). For the deterministic generators of the standard library, numpy and
the reference (``random.Random``, ``numpy.random.Generator``, ``Pcg32``), a copy pre-draws the
most the contract allows (``2m + 1``) and the original is then advanced by the count drawn:
the same values, the same final state, without a round trip per uniform.

``batch(calls)`` sends many calls in one message (scripted uniforms or the library's own PCG32
stream): the parity tier pushes 10,000 cases through it in seconds.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import pathlib
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.adapters._ffi import PARAM_FIELDS, params_struct
from spec_verify.adapters._implementations import Implementation
from spec_verify.errors import ImplementationError, UnknownImplementation
from spec_verify.reference.pcg32 import Pcg32
from spec_verify.reference.sampling import SamplingParams

__all__ = ["DEFAULT_TIMEOUT", "Call", "FfiImplementation", "Outcome", "load_ffi"]

DEFAULT_TIMEOUT = 10.0  # seconds of library time per call
_BATCH_SECONDS_PER_CALL = 0.05  # added to a batch's time limit per call in it
_START_TIMEOUT = 60.0  # a worker that is not ready by then is reported as hung at load

# (method, kwargs, uniform source) -> (outcome "ok" | "err", value or exception, n_drawn)
Call = tuple[str, dict[str, Any], Any]
Outcome = tuple[str, Any, int]

_COPYABLE_SOURCES = (Pcg32, random.Random, np.random.Generator)


def _describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "stopped answering"
    if returncode < 0:
        signum = -returncode
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        what = {
            "SIGSEGV": "a segmentation fault: the library touched memory it does not own",
            "SIGBUS": "a bus error: a misaligned or unmapped access",
            "SIGABRT": "an abort (abort(), a failed assert or a panic that aborts)",
            "SIGFPE": "an arithmetic trap",
            "SIGILL": "an illegal instruction",
            "SIGKILL": "SIGKILL (out of memory, or killed from outside)",
        }.get(name, name)
        return f"crashed with {name} ({what})"
    return f"exited with status {returncode} (the library ended the process)"


# The worker imports spec_verify from where this process did. Started with ``-m``, its first
# path entry would be the working directory, where a source checkout's ``spec_verify/`` (which
# lacks the installed ``spec_verify.reference``) would shadow an installed package.
_BOOTSTRAP = (
    "import json, runpy, sys; sys.path[:] = json.loads(sys.argv[1]); sys.argv = sys.argv[1:]; "
    "runpy.run_module('spec_verify.adapters._ffi_worker', run_name='__main__')"
)


class _Worker:
    """One worker process and its socket; every wait is bounded."""

    def __init__(self, impl: str, path: str) -> None:
        self.impl = impl
        self.path = path
        parent_sock, child_sock = socket.socketpair()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 -- lives as long as the worker
        child_fd = child_sock.fileno()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _BOOTSTRAP, json.dumps(sys.path), str(child_fd), path],
                pass_fds=(child_fd,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
                close_fds=True,
            )
        finally:
            child_sock.close()
        self.conn = Connection(parent_sock.detach())

    def stderr_tail(self, limit: int = 600) -> str:
        try:
            self._stderr.seek(0)
            text = self._stderr.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""
        return text[-limit:]

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        with contextlib.suppress(OSError):
            self.conn.close()

    def release(self) -> None:
        """Close the stderr file (after its tail went into an error message)."""
        with contextlib.suppress(OSError):
            self._stderr.close()

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(("quit",))
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.kill()
        with contextlib.suppress(OSError):
            self.conn.close()
        with contextlib.suppress(OSError):
            self._stderr.close()

    def died(self, call: str) -> ImplementationError:
        """The worker is gone: say how, with its stderr."""
        try:
            returncode: int | None = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            returncode = None
        reason = f"{_describe_exit(returncode)} in the worker process"
        tail = self.stderr_tail()
        if tail:
            reason += f"; its stderr ends with: {tail!r}"
        return ImplementationError(self.impl, call, reason)

    def exchange(
        self,
        message: Any,
        call: str,
        timeout: float,
        rng: Any = None,
        failures: Any = None,
        while_waiting: Callable[[], None] | None = None,
    ) -> Any:
        """Send ``message`` and wait for its answer, serving uniform requests from ``rng``.

        ``timeout`` bounds the library's time: time spent in ``rng.random()`` and in
        ``while_waiting()`` (the caller's own work, overlapped with the worker's) is not
        counted. Raises ImplementationError when the worker dies or runs out of time (it is
        killed).
        """
        if message is not None:  # None: only wait (for the worker's greeting)
            try:
                self.conn.send(message)
            except (OSError, ValueError) as exc:
                raise self.died(call) from exc
        deadline = time.monotonic() + timeout
        if while_waiting is not None:
            started = time.monotonic()
            while_waiting()
            deadline += time.monotonic() - started
        while True:
            remaining = deadline - time.monotonic()
            try:
                ready = remaining > 0 and self.conn.poll(remaining)
                if not ready:
                    self.kill()
                    raise ImplementationError(
                        self.impl,
                        call,
                        f"did not return within {timeout:g} s (a hang or an endless loop); "
                        "the worker was killed",
                    )
                reply = self.conn.recv()
            except (EOFError, OSError) as exc:
                raise self.died(call) from exc
            if reply[0] != "uniform":
                return reply
            started = time.monotonic()
            try:
                value = float(rng.random())
            except BaseException as exc:
                failures.append(exc)
                answer: tuple[Any, ...] = ("u_fail",)
            else:
                answer = ("u", value)
            deadline += time.monotonic() - started
            try:
                self.conn.send(answer)
            except (OSError, ValueError) as exc:
                raise self.died(call) from exc


class FfiImplementation(Implementation):
    """An implementation given as a shared library exporting ``spec_verify.h`` (ABI v2).

    Attributes:
        name: ``ffi:<absolute path>``.
        timeout: seconds of library time allowed per call (a batch gets more).
        last_uniforms_drawn: how many uniforms the last ``verify_draft`` drew.
    """

    def __init__(self, path: str | os.PathLike[str], timeout: float = DEFAULT_TIMEOUT) -> None:
        self.path = str(pathlib.Path(path).expanduser().resolve())
        self.name = f"ffi:{self.path}"
        self.timeout = timeout
        self.capabilities = frozenset(
            {"verify_draft", "injected_uniforms", "greedy", "sampling_distribution",
             "prompt_lookup", "pcg32"}
        )
        self.last_uniforms_drawn: int | None = None
        self.abi_version = 0
        self._worker: _Worker | None = None
        self._hung: dict[str, str] = {}
        self._lock = threading.RLock()
        self._finalizer = weakref.finalize(self, _close_worker, [None])

    # ---- the worker -----------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker and load the library (raises UnknownImplementation if it is not
        a spec-verify ABI v2 library, ImplementationError if loading crashes or hangs)."""
        with self._lock:
            if self._worker is not None:
                return
            worker = _Worker(self.name, self.path)
            try:
                reply = worker.exchange(None, "load", _START_TIMEOUT)
            except ImplementationError:
                worker.kill()
                worker.release()
                raise
            if reply[0] == "load_error":
                worker.close()
                raise reply[1]
            if reply[0] != "ready":
                worker.kill()
                worker.release()
                raise ImplementationError(self.name, "load", f"unexpected answer {reply[0]!r}")
            self.abi_version = int(reply[1]["abi_version"])
            self._worker = worker
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _close_worker, [worker])

    def close(self) -> None:
        """Stop the worker (a later call starts a new one)."""
        with self._lock:
            if self._worker is not None:
                self._worker.close()
                self._worker = None

    def _request(
        self,
        call: str,
        message: Any,
        timeout: float,
        rng: Any = None,
        while_waiting: Callable[[], None] | None = None,
    ) -> Any:
        if call in self._hung:
            raise ImplementationError(
                self.name,
                call,
                f"is not called again: it hung earlier in this run ({self._hung[call]})",
            )
        with self._lock:
            if self._worker is None:
                self.start()
            worker = self._worker
            assert worker is not None
            failures: list[BaseException] = []
            try:
                reply = worker.exchange(message, call, timeout, rng, failures, while_waiting)
            except ImplementationError as exc:
                self._worker = None
                worker.kill()
                worker.release()
                if "did not return within" in exc.reason:
                    self._hung[call] = exc.reason
                raise
            if failures and reply[0] == "done" and reply[1][1] == "remote_failed":
                reply = ("raised", failures[0], reply[1][2])
            return reply

    def _call(
        self, method: str, kwargs: dict[str, Any], source: Any = None, rng: Any = None
    ) -> Any:
        reply = self._request(method, ("call", method, kwargs, source), self.timeout, rng)
        if reply[0] == "raised":  # the caller's uniform source raised: as a Python impl would
            self.last_uniforms_drawn = reply[2]
            exc = reply[1]
            if isinstance(exc, ValueError):
                raise exc
            raise ImplementationError(
                self.name, method, f"raised {type(exc).__name__}: {exc}"
            ) from exc
        outcome, value, drawn = reply[1]
        if method == "verify_draft":
            self.last_uniforms_drawn = drawn
        if outcome == "err":
            raise value
        return value

    def batch(
        self,
        calls: Sequence[Call],
        while_waiting: Callable[[], None] | None = None,
        threads: int = 1,
    ) -> list[Outcome]:
        """Run many calls in one message; each outcome is ``("ok", value, n_drawn)`` or
        ``("err", exception, n_drawn)``. Uniform sources must be ``("list", [...])``,
        ``("seed", s)`` or ``("forbid",)``. ``while_waiting()`` runs in this process while
        the worker computes (e.g. the reference's side of the same cases). ``threads > 1``
        runs the calls on that many of the worker's threads at once (outcomes still in call
        order): the thread-safety check.

        Raises:
            ImplementationError: the worker crashed or hung during the batch (which call is
                unknown: run them one by one to find it).
        """
        timeout = self.timeout + _BATCH_SECONDS_PER_CALL * len(calls)
        message = ("batch", list(calls)) if threads == 1 else ("batch", list(calls), threads)
        reply = self._request("batch", message, timeout, None, while_waiting)
        outcomes: list[Outcome] = reply[1]
        return outcomes

    # ---- the contract ---------------------------------------------------------------------

    def verify_call(
        self,
        target_logits: NDArray[np.float64],
        draft_ids: Sequence[int],
        draft_probs: NDArray[np.float64] | None,
        p: Any,
        history: Sequence[int],
        prompt: Sequence[int],
        source: Any,
    ) -> Call:
        """``verify_draft``'s arguments as one call for ``batch`` (``source`` as it says;
        raises InvalidParams for bad sampling parameters)."""
        kwargs = {
            "target_logits": target_logits,
            "draft_ids": list(draft_ids) if not isinstance(draft_ids, np.ndarray) else draft_ids,
            "draft_probs": draft_probs,
            "params": self.params_tuple(p),
            "history": list(history),
            "prompt": list(prompt),
        }
        return ("verify_draft", kwargs, source)

    def params(self, **fields: Any) -> SamplingParams:
        """Sampling parameters (the reference's ``SamplingParams``, validated)."""
        return SamplingParams(**fields)

    @staticmethod
    def params_tuple(p: Any) -> tuple[Any, ...]:
        """The seven ``sv_sampling_params`` fields of ``p`` (raises InvalidParams)."""
        struct = params_struct(p)
        return tuple(getattr(struct, name) for name in PARAM_FIELDS)

    def verify_draft(
        self,
        target_logits: NDArray[np.float64],
        draft_ids: Sequence[int],
        draft_probs: NDArray[np.float64] | None,
        p: Any,
        history: Sequence[int],
        rng: Any,
        prompt: Sequence[int] = (),
    ) -> tuple[list[int], int]:
        _, kwargs, _ = self.verify_call(
            target_logits, draft_ids, draft_probs, p, history, prompt, None
        )
        greedy = kwargs["params"][0] == 0.0
        has_source = rng is not None and callable(getattr(rng, "random", None))
        if not has_source:  # the library validates first; its first draw is then the error
            source = ("forbid",) if greedy else ("missing",)
            result: tuple[list[int], int] = self._call("verify_draft", kwargs, source)
            return result
        if type(rng) in _COPYABLE_SOURCES:
            twin = copy.deepcopy(rng)
            script = [float(twin.random()) for _ in range(2 * len(draft_ids) + 1)]
            try:
                result = self._call("verify_draft", kwargs, ("list", script))
            finally:
                for _ in range(min(self.last_uniforms_drawn or 0, len(script))):
                    rng.random()
            return result
        result = self._call("verify_draft", kwargs, ("remote",), rng)
        return result

    def sampling_distribution(
        self,
        logits: NDArray[np.float64],
        p: Any,
        history: Sequence[int] = (),
        prompt: Sequence[int] = (),
    ) -> NDArray[np.float64]:
        kwargs = {
            "logits": logits,
            "params": self.params_tuple(p),
            "history": list(history),
            "prompt": list(prompt),
        }
        result: NDArray[np.float64] = self._call("sampling_distribution", kwargs)
        return result

    def prompt_lookup(
        self, ctx: Sequence[int], k: int, max_ngram: int = 3, min_ngram: int = 1
    ) -> list[int]:
        kwargs = {"ctx": list(ctx), "k": k, "max_ngram": max_ngram, "min_ngram": min_ngram}
        result: list[int] = self._call("prompt_lookup", kwargs)
        return result

    def pcg32_uniforms(self, seed: int, n: int) -> list[float]:
        kwargs = {"initstate": seed, "initseq": 54, "n": n}
        values: NDArray[np.float64] = self._call("pcg32_uniforms", kwargs)
        return [float(u) for u in values]

    def pcg32_u32(self, initstate: int, initseq: int, n: int) -> list[int] | None:
        kwargs = {"initstate": initstate, "initseq": initseq, "n": n}
        values: NDArray[np.uint32] = self._call("pcg32_u32", kwargs)
        return [int(v) for v in values]

    def __repr__(self) -> str:
        return f"FfiImplementation({self.path!r})"


def _close_worker(holder: list[_Worker | None]) -> None:
    for worker in holder:
        if worker is not None:
            worker.close()


def load_ffi(spec: str, path: str) -> FfiImplementation:
    """Load ``ffi:path``: start its worker, check the symbols and the ABI version.

    Raises:
        UnknownImplementation: no path, no such file, not a library, symbols missing, another
            ABI version, or the library crashed or hung while loading.
    """
    if not path:
        raise UnknownImplementation("impl", spec, "ffi: needs a path", "ffi:path/to/lib.so")
    impl = FfiImplementation(path)
    if not os.path.exists(impl.path):
        raise UnknownImplementation(
            "impl", spec, f"no such file: {impl.path}", "build the library, or fix the path"
        )
    try:
        impl.start()
    except ImplementationError as exc:
        raise UnknownImplementation(
            "impl", spec, f"the library could not be loaded: it {exc.reason}"
        ) from exc
    return impl
