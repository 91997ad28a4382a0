"""The ``ffi:path/to/lib.so`` adapter: a C-ABI library driven from a worker process.

The library is loaded only in a worker (``spec_verify.adapters._ffi_worker``, started by
``_process.WorkerProcess`` and spoken to in ``ipc.frames`` frames), never in the harness: a
segfault, an abort, an ``exit()`` or a hang in it ends the worker, and the call raises
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

import copy
import os
import pathlib
import random
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.adapters._calls import Call, CallOutcome, Draws
from spec_verify.adapters._codec import ArrayTable, decode_error, decode_value, encode_value
from spec_verify.adapters._ffi import PARAM_FIELDS, params_struct
from spec_verify.adapters._implementations import (
    Implementation,
    ProposeRound,
    ScriptedResult,
    apply_capabilities,
    check_capabilities,
    check_tree_result,
    check_verify_result,
)
from spec_verify.adapters._process import WorkerProcess, with_sandbox
from spec_verify.errors import (
    BudgetExhausted,
    ImplementationError,
    InvalidArgument,
    UnknownImplementation,
)
from spec_verify.ipc.errors import WireError
from spec_verify.ipc.frames import require
from spec_verify.reference.pcg32 import Pcg32
from spec_verify.reference.sampling import SamplingParams
from spec_verify.uniforms import ScriptedUniforms, TooManyDraws, results_or_raised

__all__ = ["DEFAULT_TIMEOUT", "SHARED_ABOVE", "FfiImplementation", "WireCall", "load_ffi"]

DEFAULT_TIMEOUT = 10.0  # seconds of library time per call
_BATCH_SECONDS_PER_CALL = 0.05  # added to a batch's time limit per call in it
_SCRIPTS_PER_BATCH = 512  # verify_scripted_many calls per batch (the input crosses once)
# A batch message's arrays at most (the wire refuses frames over 256 MB: a batch of large
# calls goes as several messages) and how many arrays one message carries.
_FRAME_BYTES = 64 << 20
_FRAME_ARRAYS = 4096
_START_TIMEOUT = 60.0  # a worker that is not ready by then is reported as hung at load
# Arrays of at least this many bytes cross to the worker in a sealed memfd it maps read-only
# (no stream copy, no input copy there: a store into one faults); smaller ones on the stream.
SHARED_ABOVE = 256 << 10

# One raw call of the worker's wire: (method, kwargs, uniform source), the source as
# ("list", [u, ...]), ("seed", s), ("forbid",), ("remote",) or ("missing",); its answer is a
# ``CallOutcome``.
WireCall = tuple[str, dict[str, Any], Any]

_QUIT = {"kind": "quit"}
# The optional symbols that give a library a capability when it exports them.
_SYMBOL_CAPABILITIES = {
    "sv_verify_tree": "verify_tree",
    "sv_propose_and_verify": "propose_and_verify",
}
_COPYABLE_SOURCES = (Pcg32, random.Random, np.random.Generator)


def _encode_call(call: WireCall, arrays: dict[str, Any]) -> dict[str, Any]:
    method, kwargs, source = call
    return {
        "method": method,
        "kwargs": encode_value(kwargs, arrays),
        "source": encode_value(source, arrays),
    }


def _decode_outcome(impl: str, data: Any, arrays: dict[str, Any]) -> CallOutcome:
    """One outcome frame entry; anything else is the worker's protocol breach
    (``WireError``). A failure that is no exception here (``too_many``: a scripted source
    ran out; ``remote_failed``: the caller's source raised) is ``ERR`` with its name."""
    if not isinstance(data, dict):
        raise WireError("an outcome is not a dict")
    kind = require(data, "outcome", str)
    drawn = require(data, "drawn", int)
    if kind == "ok":
        return CallOutcome.ok(decode_value(data.get("value"), arrays), drawn)
    if kind == "err":
        return CallOutcome.err(decode_error(data.get("value")), drawn)
    if kind in ("remote_failed", "too_many"):
        return CallOutcome.err(kind, drawn)
    raise WireError(f"an outcome of kind {kind!r:.40}")


class FfiImplementation(Implementation):
    """An implementation given as a shared library exporting ``spec_verify.h`` (ABI v2).

    Attributes:
        name: ``ffi:<absolute path>``.
        timeout: seconds of library time allowed per call (a batch gets more).
        last_uniforms_drawn: how many uniforms the last ``verify_draft`` or ``verify_tree``
            drew.
    """

    batch_stream = Draws.SEEDED  # sampled rounds on the library's own PCG32, in the worker

    def __init__(self, path: str | os.PathLike[str], timeout: float = DEFAULT_TIMEOUT) -> None:
        self.path = str(pathlib.Path(path).expanduser().resolve())
        self.name = f"ffi:{self.path}"
        self.timeout = timeout
        self.shared_above: int | None = SHARED_ABOVE  # None: every array on the stream
        self.rule = "token"  # whose chain symbol verify_draft calls (use_rule)
        self.optional_symbols: frozenset[str] = frozenset()
        self.capabilities = frozenset(
            {"verify_draft", "injected_uniforms", "greedy", "sampling_distribution",
             "prompt_lookup", "pcg32"}
        )
        self.last_uniforms_drawn: int | None = None
        self.declared: dict[str, bool] | None = None  # sv_capabilities, when exported
        self.abi_version = 0
        self._worker: WorkerProcess | None = None
        self._hung: dict[str, str] = {}
        self._protections: dict[str, Any] | None = None  # what the sandbox held, once started
        self._lock = threading.RLock()
        self._finalizer = weakref.finalize(self, _close_worker, [None])

    # ---- the worker -----------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker and load the library (raises UnknownImplementation if it is not
        a spec-verify ABI v2 library, ImplementationError if loading crashes or hangs)."""
        with self._lock:
            if self._worker is not None:
                return
            worker = WorkerProcess(self.name, "spec_verify.adapters._ffi_worker", [self.path])
            worker.shared_above = self.shared_above
            try:
                reply, _ = worker.exchange(None, None, "load", _START_TIMEOUT)
                kind = reply.get("kind")
                if kind == "load_error":
                    raise decode_error(reply.get("error"))
                if kind != "ready":
                    raise WireError(f"the greeting is {kind!r:.40}, not 'ready'")
                self.abi_version = require(reply, "abi_version", int)
                optional = reply.get("optional", [])
                if not (isinstance(optional, list) and all(isinstance(o, str) for o in optional)):
                    raise WireError("the greeting's optional symbols are not a list of names")
                self.optional_symbols = frozenset(optional)
                # the optional symbols that are a capability (spec_verify.h)
                self.capabilities = self.capabilities | {
                    capability for symbol, capability in _SYMBOL_CAPABILITIES.items()
                    if symbol in optional
                }  # fmt: skip
                declared = reply.get("declared")
                if declared is not None:  # sv_capabilities: what the library says it offers
                    try:
                        self.declared = check_capabilities(declared, "sv_capabilities")
                    except InvalidArgument as exc:
                        raise WireError(f"malformed declared capabilities ({exc})") from None
                    self.capabilities = apply_capabilities(self.capabilities, self.declared)
            except WireError as exc:
                failure = ImplementationError(
                    self.name, "load", f"broke the worker protocol ({exc})")
                raise with_sandbox(failure, worker) from None
            except BaseException as exc:
                with_sandbox(exc, worker)
                raise
            self._worker = worker
            self._protections = worker.read_protections().to_json()
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _close_worker, [worker])

    def close(self) -> None:
        """Stop the worker and every process it started (a later call starts a new one)."""
        with self._lock:
            if self._worker is not None:
                self._worker.close(_QUIT)
                self._worker = None

    def _request(
        self,
        call: str,
        header: dict[str, Any],
        arrays: dict[str, Any],
        timeout: float,
        rng: Any = None,
        while_waiting: Callable[[], None] | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any], list[BaseException]]:
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

            def serve(
                request: dict[str, Any], _arrays: dict[str, Any]
            ) -> tuple[dict[str, Any], dict[str, Any]]:
                if request.get("what") != "uniform" or rng is None:
                    raise WireError(f"an unexpected callback {request!r:.80}")
                try:
                    value = float(rng.random())
                except BaseException as exc:
                    failures.append(exc)
                    return {"kind": "u_fail"}, {}
                return {"kind": "u", "value": value}, {}

            limit, by_budget = self.call_limit(call, timeout)
            try:
                reply, reply_arrays = worker.exchange(
                    header, arrays, call, limit, serve, while_waiting
                )
            except ImplementationError as exc:
                self._worker = None
                worker.kill()
                timed_out = "did not return within" in exc.reason
                if timed_out and by_budget:
                    raise BudgetExhausted(self.name, call, self.budget) from None
                if timed_out:
                    self._hung[call] = exc.reason
                raise
            return reply, reply_arrays, failures

    def _protocol_error(self, call: str, exc: WireError) -> ImplementationError:
        with self._lock:
            if self._worker is not None:
                self._worker.kill()
                self._worker = None
        return ImplementationError(
            self.name, call, f"broke the worker protocol ({exc}); the worker was killed"
        )

    def _call(
        self, method: str, kwargs: dict[str, Any], source: Any = None, rng: Any = None
    ) -> Any:
        arrays: dict[str, Any] = {}
        header = {"kind": "call", "call": _encode_call((method, kwargs, source), arrays)}
        reply, reply_arrays, failures = self._request(method, header, arrays, self.timeout, rng)
        try:
            if reply.get("kind") != "done":
                raise WireError(f"the answer to a call is {reply.get('kind')!r:.40}")
            outcome = _decode_outcome(self.name, reply, reply_arrays)
        except WireError as exc:
            raise self._protocol_error(method, exc) from None
        if method in ("verify_draft", "verify_tree"):
            self.last_uniforms_drawn = outcome.drawn
        return self._value_of(method, outcome, failures)

    def _value_of(
        self, method: str, outcome: CallOutcome, failures: list[BaseException]
    ) -> Any:
        """The value of one decoded outcome, or the exception it stands for (``failures``:
        what the caller's uniform source raised during the call)."""
        value = outcome.value
        if outcome.is_ok:
            return value
        if value == "too_many":
            raise TooManyDraws  # the scripted source's hard limit, as in this process
        if value == "remote_failed":
            # the caller's uniform source raised: as a Python implementation would
            if not failures:
                raise self._protocol_error(method, WireError("a uniform failure never asked for"))
            failure = failures[0]
            if isinstance(failure, ValueError):
                raise failure
            raise ImplementationError(
                self.name, method, f"raised {type(failure).__name__}: {failure}"
            ) from failure
        raise value

    def batch(
        self,
        calls: Sequence[WireCall],
        while_waiting: Callable[[], None] | None = None,
        threads: int = 1,
    ) -> list[CallOutcome]:
        """Run many raw calls in one message, one ``CallOutcome`` each. Uniform sources
        must be ``("list", [...])``, ``("seed", s)`` or ``("forbid",)``. ``while_waiting()``
        runs in this process while the worker computes (e.g. the reference's side of the same
        cases). ``threads > 1`` runs the calls on that many of the worker's threads at once
        (outcomes still in call order): the thread-safety check.

        Raises:
            ImplementationError: the worker crashed, hung or broke the protocol during the
                batch (which call is unknown: run them one by one to find it).
        """
        outcomes: list[CallOutcome] = []
        for chunk in _frames(calls):  # a frame's arrays stay well under the wire's limit
            outcomes += self._batch_frame(chunk, while_waiting, threads)
        return outcomes

    def call_many(
        self,
        calls: Sequence[Call],
        rng: Any = None,
        while_waiting: Callable[[], None] | None = None,
    ) -> list[CallOutcome]:
        """The calls in one message per frame (``batch``), each source rebuilt in the worker
        from its plan; ``LIVE`` calls ask ``rng`` from this process, one call at a time.
        A call's value is as the worker returned it (the ABI's buffers shape it), a tree
        call's checked by ``check_tree_result``."""
        if any(c.plan.draws is Draws.LIVE for c in calls):
            return super().call_many(calls, rng, while_waiting)
        outcomes = self.batch([self._wire_call(c) for c in calls], while_waiting=while_waiting)
        return [self._checked(c, o) for c, o in zip(calls, outcomes, strict=True)]

    def _wire_call(self, call: Call) -> WireCall:
        """One ``Call`` as the worker's raw call (its plan as a wire source)."""
        a, plan = call.args, call.plan
        source: Any
        if plan.draws is Draws.SCRIPTED:
            source = ("list", list(plan.values))
        elif plan.draws is Draws.SEEDED:
            source = ("seed", plan.seed)
        else:
            source = ("forbid",)
        if call.method == "verify_draft":
            return self.verify_call(a["target_logits"], a["draft_ids"], a["draft_probs"],
                                    a["p"], a["history"], a["prompt"], source)  # fmt: skip
        if call.method == "verify_tree":
            return self.tree_call(a["target_logits"], a["parents"], a["token_ids"],
                                  a["draft_probs"], a["p"], a["history"], a["prompt"], source,
                                  a["rule"])  # fmt: skip
        if call.method == "sampling_distribution":
            kwargs = {"logits": a["logits"], "params": self.params_tuple(a["p"]),
                      "history": list(a["history"]), "prompt": list(a["prompt"])}  # fmt: skip
            return ("sampling_distribution", kwargs, None)
        kwargs = {"ctx": list(a["ctx"]), "k": a["k"], "max_ngram": a["max_ngram"],
                  "min_ngram": a["min_ngram"]}  # fmt: skip
        return ("prompt_lookup", kwargs, None)

    def _checked(self, call: Call, outcome: CallOutcome) -> CallOutcome:
        if not outcome.is_ok:
            return outcome
        if call.method == "verify_draft":
            emitted, accepted = outcome.value
            return CallOutcome.ok((list(emitted), int(accepted)), outcome.drawn)
        if call.method == "verify_tree":
            a = call.args
            try:
                value = check_tree_result(self.name, outcome.value, list(a["parents"]),
                                          list(a["token_ids"]),
                                          np.shape(a["target_logits"])[-1])  # fmt: skip
            except ImplementationError as exc:
                return CallOutcome.err(exc, outcome.drawn)
            return CallOutcome.ok(value, outcome.drawn)
        return outcome

    def _batch_frame(
        self, calls: Sequence[WireCall], while_waiting: Callable[[], None] | None, threads: int
    ) -> list[CallOutcome]:
        """One batch message and its outcomes (``batch``)."""
        timeout = self.timeout + _BATCH_SECONDS_PER_CALL * len(calls)
        arrays = ArrayTable()  # an input shared by many calls crosses once
        encoded = [_encode_call(c, arrays) for c in calls]
        header: dict[str, Any] = {"kind": "batch", "calls": encoded}
        if threads != 1:
            header["threads"] = threads
        reply, reply_arrays, _ = self._request(
            "batch", header, arrays, timeout, None, while_waiting
        )
        try:
            entries = reply.get("outcomes")
            if reply.get("kind") != "batch_done" or not isinstance(entries, list):
                raise WireError(f"the answer to a batch is {reply.get('kind')!r:.40}")
            if len(entries) != len(calls):
                raise WireError(f"{len(entries)} outcomes for {len(calls)} calls")
            return [_decode_outcome(self.name, e, reply_arrays) for e in entries]
        except WireError as exc:
            raise self._protocol_error("batch", exc) from None

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
    ) -> WireCall:
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
        if self.rule != "token":  # the chain symbol of another rule (use_rule)
            kwargs["rule"] = self.rule
        return ("verify_draft", kwargs, source)

    def use_rule(self, rule: str) -> str | None:
        """Route ``verify_draft`` to ``rule``'s chain symbol (``sv_verify_block``,
        ``sv_verify_sampler_match``); why not, when the library does not export it."""
        from spec_verify.adapters._ffi import RULE_SYMBOLS

        symbol = RULE_SYMBOLS[rule]
        if rule != "token" and symbol not in self.optional_symbols:
            return (f"--rule {rule}: the library does not export {symbol} (an optional symbol "
                    "of spec_verify.h); export it, or check the token rule without --rule")
        self.rule = rule
        return None

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
        if rng is None or not callable(getattr(rng, "random", None)):
            # the library validates first; its first draw is then the error
            result = self._call("verify_draft", kwargs, ("forbid",) if greedy else ("missing",))
        else:
            result = self._call_with_source("verify_draft", kwargs, rng, 2 * len(draft_ids) + 1)
        return check_verify_result(self.name, result, len(draft_ids), np.shape(target_logits)[-1])

    def verify_scripted_many(
        self,
        target_logits: NDArray[np.float64],
        draft_ids: Sequence[int],
        draft_probs: NDArray[np.float64] | None,
        p: Any,
        history: Sequence[int],
        prompt: Sequence[int],
        sources: Sequence[ScriptedUniforms],
    ) -> list[ScriptedResult]:
        """Batches of up to ``_SCRIPTS_PER_BATCH`` calls whose input arrays cross once per
        batch and whose sources cross as data (see ``Implementation.verify_scripted_many``)."""
        _, kwargs, _ = self.verify_call(
            target_logits, draft_ids, draft_probs, p, history, prompt, None
        )
        m, V = len(draft_ids), np.shape(target_logits)[-1]
        results: list[ScriptedResult] = []
        for begin in range(0, len(sources), _SCRIPTS_PER_BATCH):
            chunk = sources[begin : begin + _SCRIPTS_PER_BATCH]
            calls = [("verify_draft", kwargs, _scripted_source(s)) for s in chunk]
            outcomes = self.batch(calls)
            for source, outcome in zip(chunk, outcomes, strict=True):
                source.drawn += outcome.drawn or 0
            results += results_or_raised(
                lambda outcome: check_verify_result(
                    self.name, self._value_of("verify_draft", outcome, []), m, V
                ),
                outcomes,
            )
        return results

    def _call_with_source(
        self, method: str, kwargs: dict[str, Any], rng: Any, most: int
    ) -> Any:
        """``method`` with uniforms from ``rng`` in the library's draw order, in one request
        where ``rng`` allows: a ``ScriptedUniforms`` crosses as data (its script, ``then``,
        ``limit`` and count, which it ends with as a direct call would leave it); a copyable
        generator is pre-drawn ``most`` values from a copy and advanced by what was drawn;
        anything else is asked one uniform at a time."""
        self.last_uniforms_drawn = None
        if type(rng) is ScriptedUniforms:
            try:
                return self._call(method, kwargs, _scripted_source(rng))
            finally:
                rng.drawn += self.last_uniforms_drawn or 0
        if type(rng) in _COPYABLE_SOURCES:
            twin = copy.deepcopy(rng)
            script = [float(twin.random()) for _ in range(most)]
            try:
                return self._call(method, kwargs, ("list", script))
            finally:
                for _ in range(min(self.last_uniforms_drawn or 0, len(script))):
                    rng.random()
        return self._call(method, kwargs, ("remote",), rng)

    def tree_call(
        self,
        target_logits: NDArray[np.float64],
        parents: Sequence[int],
        token_ids: Sequence[int],
        draft_probs: Sequence[Any] | None,
        p: Any,
        history: Sequence[int],
        prompt: Sequence[int],
        source: Any,
        rule: str = "with_replacement",
    ) -> WireCall:
        """``verify_tree``'s arguments as one call for ``batch`` (raises InvalidParams for bad
        sampling parameters); its value is ``(emitted_ids, accepted_nodes)``, unchecked."""
        kwargs: dict[str, Any] = {
            "target_logits": np.asarray(target_logits, dtype=np.float64),
            "parents": list(parents),
            "token_ids": list(token_ids),
            "draft_probs": None if draft_probs is None else [
                None if row is None else np.asarray(row, dtype=np.float64)
                for row in draft_probs
            ],
            "params": self.params_tuple(p),
            "history": list(history),
            "prompt": list(prompt),
            "rule": rule,
        }
        return ("verify_tree", kwargs, source)

    def verify_tree(
        self,
        target_logits: NDArray[np.float64],
        parents: Sequence[int],
        token_ids: Sequence[int],
        draft_probs: Sequence[Any] | None,
        p: Any,
        history: Sequence[int],
        rng: Any,
        prompt: Sequence[int] = (),
        rule: str = "with_replacement",
    ) -> tuple[list[int], list[int]]:
        """``sv_verify_tree`` (libraries exporting it have the ``verify_tree`` capability).

        Uniforms reach the library in its draw order as for ``verify_draft``: pre-drawn from
        a copy of a deterministic generator (at most ``2n + 1`` for ``n`` nodes: two per
        examined child and the last draw), else asked from ``rng`` one by one.
        """
        _, kwargs, _ = self.tree_call(
            target_logits, parents, token_ids, draft_probs, p, history, prompt, None, rule
        )
        greedy = kwargs["params"][0] == 0.0
        if rng is None or not callable(getattr(rng, "random", None)):
            source = ("forbid",) if greedy else ("missing",)
            result = self._call("verify_tree", kwargs, source)
        else:
            result = self._call_with_source("verify_tree", kwargs, rng, 2 * len(parents) + 1)
        return check_tree_result(
            self.name, result, kwargs["parents"], kwargs["token_ids"], np.shape(target_logits)[-1]
        )

    def propose_call(
        self,
        target_logits: NDArray[np.float64],
        draft_logits: NDArray[np.float64],
        p: Any,
        draft_p: Any,
        history: Sequence[int],
        prompt: Sequence[int],
        source: Any,
    ) -> WireCall:
        """``propose_and_verify``'s arguments as one call for ``batch`` (raises InvalidParams
        for bad sampling parameters); its value is ``(emitted_ids, n_accepted)``, unchecked."""
        kwargs = {
            "target_logits": np.asarray(target_logits, dtype=np.float64),
            "draft_logits": np.asarray(draft_logits, dtype=np.float64),
            "params": self.params_tuple(p),
            "draft_params": None if draft_p is None else self.params_tuple(draft_p),
            "history": [int(t) for t in history],
            "prompt": [int(t) for t in prompt],
        }
        return ("propose_and_verify", kwargs, source)

    def propose_many(
        self, rounds: Sequence[ProposeRound], p: Any, draft_p: Any, rng: Any
    ) -> list[tuple[list[int], int]]:
        """``sv_propose_and_verify`` on each round, in one batch: each round on the library's
        *own* stream ``request_rng(seed)``, its 63-bit seed built from two uniforms of ``rng``
        (``floor(u * 2^31)`` and ``floor(u * 2^32)``), so the run is reproducible from ``rng``
        while the draws are the library's (CONTRACT.md section 14: its randomness is its own)."""
        if "propose_and_verify" not in self.capabilities:
            raise self._not_offered("propose_and_verify")
        if "sv_propose_and_verify" not in self.optional_symbols:
            raise ImplementationError(
                self.name, "propose_and_verify", "is not exported by the library "
                "(sv_propose_and_verify, an optional symbol of spec_verify.h): export it, or "
                "drop --capability propose_and_verify",
            )  # fmt: skip
        calls = []
        for target, draft, history, prompt in rounds:
            seed = int(float(rng.random()) * 2**31) << 32 | int(float(rng.random()) * 2**32)
            calls.append(self.propose_call(target, draft, p, draft_p, history, prompt,
                                           ("seed", seed)))  # fmt: skip
        results = []
        for (target, *_), outcome in zip(rounds, self.batch(calls), strict=True):
            value = self._value_of("propose_and_verify", outcome, [])
            shape = np.shape(target)
            results.append(check_verify_result(self.name, value, shape[0] - 1, shape[-1]))
        return results

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

    def sandbox(self) -> dict[str, Any] | None:
        """What the worker's sandbox held (``_sandbox.Protections``), from its start."""
        return self._protections

    def __repr__(self) -> str:
        return f"FfiImplementation({self.path!r})"


def _frames(calls: Sequence[WireCall]) -> list[Sequence[WireCall]]:
    """``calls`` cut into runs whose arrays (each array object counted once, as
    ``ArrayTable`` sends it) add up to at most ``_FRAME_BYTES`` and ``_FRAME_ARRAYS``; a call
    larger than that alone makes a frame of its own."""
    frames: list[Sequence[WireCall]] = []
    start = 0
    held: dict[int, int] = {}  # id -> bytes of the arrays in the frame being filled
    for end, call in enumerate(calls):
        new = {id(a): a.nbytes for a in _arrays_in(call) if id(a) not in held}
        if end > start and (sum(held.values()) + sum(new.values()) > _FRAME_BYTES
                            or len(held) + len(new) > _FRAME_ARRAYS):
            frames.append(calls[start:end])
            start, held = end, {}
            new = {id(a): a.nbytes for a in _arrays_in(call)}
        held.update(new)
    if start < len(calls):
        frames.append(calls[start:])
    return frames


def _arrays_in(value: Any) -> list[NDArray[Any]]:
    """The numpy arrays inside a call's arguments (dicts, lists and tuples walked)."""
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, dict):
        return [a for v in value.values() for a in _arrays_in(v)]
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in _arrays_in(v)]
    return []


def _scripted_source(source: ScriptedUniforms) -> tuple[Any, ...]:
    """A ``ScriptedUniforms`` as the worker's ``scripted`` source (its state as data)."""
    return ("scripted", *source.as_data())


def _close_worker(holder: list[WorkerProcess | None]) -> None:
    for worker in holder:
        if worker is not None:
            worker.close(_QUIT)


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
