"""``python:pkg.mod``, ``mutant:sNN`` and ``reference``: a Python module in a worker process.

The harness never imports the implementation: ``WorkerImplementation`` starts
``_python_worker`` (its own session, limits, subreaper; ``_process``) and holds a proxy of the
module (``module``, a ``_remote.RemoteObject``), so the tiers drive it as before. A crash, an
exit, a hang (the per-call timeout, enforced from outside by killing the worker's process
tree), or a reply that breaks the protocol is ``ImplementationError``; the next call starts a
fresh worker (objects from the old one are gone: their calls say so), and a call that hung
once is not made again in the run.
"""

from __future__ import annotations

import contextlib
import operator
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from spec_verify.adapters._calls import Call, CallOutcome, Draws
from spec_verify.adapters._codec import (
    RemoteAssertionError,
    RemoteAttributeError,
    RemoteError,
    decode_error,
    encode_error,
)
from spec_verify.adapters._generation_request import GENERATION_TIMEOUT, GenerationRequest
from spec_verify.adapters._implementations import (
    DECLARATION,
    Implementation,
    ProposeRound,
    ScriptedResult,
    TreeRound,
    VerifyRound,
    apply_capabilities,
    check_capabilities,
    check_tree_result,
    check_verify_result,
    offered_capabilities,
)
from spec_verify.adapters._process import WorkerProcess, with_sandbox
from spec_verify.adapters._remote import (
    INPUT_CHANGED,
    Handles,
    RemoteObject,
    answer,
    call_method,
)
from spec_verify.errors import (
    BudgetExhausted,
    ImplementationError,
    InvalidArgument,
    UnknownImplementation,
)
from spec_verify.ipc.errors import WireError
from spec_verify.ipc.frames import require
from spec_verify.uniforms import DrewPastScript, ScriptedUniforms, TooManyDraws, results_or_raised

__all__ = ["DEFAULT_CALL_TIMEOUT", "WorkerImplementation"]

T = TypeVar("T")

DEFAULT_CALL_TIMEOUT = 10.0  # seconds per contract call (verify_draft, ...)
GENERIC_TIMEOUT = 60.0  # seconds per other request (speculative_generate, model passes)
_START_TIMEOUT = 60.0  # seconds for the worker to import its module, unless lifted:
START_TIMEOUT_VARIABLE = "SPEC_VERIFY_START_TIMEOUT"  # a module whose import takes longer
_ROUNDS_PER_REQUEST = 256  # LIVE rounds of call_many per request (bounds a frame's size)
_SECONDS_PER_ROUND = 0.05  # added to a request's time limit per round in it
_SEEDS_PER_REQUEST = 64  # generate_many generations per request
_SCRIPTS_PER_REQUEST = 512  # verify_scripted_many sources per request (the input crosses once)
_QUIT = {"kind": "quit"}


def worker_start_timeout() -> float:
    """The worker's import limit in seconds: ``SPEC_VERIFY_START_TIMEOUT`` when set, else 60.

    Raises:
        InvalidArgument: the variable is not a positive number of seconds.
    """
    text = os.environ.get(START_TIMEOUT_VARIABLE, "")
    if not text:
        return _START_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0.0 < seconds < float("inf"):
        raise InvalidArgument(
            START_TIMEOUT_VARIABLE, text, "must be a positive number of seconds",
            f"{START_TIMEOUT_VARIABLE}=300",
        )
    return seconds


class _Session:
    """One live worker and the handle tables of both sides."""

    def __init__(self, owner: WorkerImplementation, worker: WorkerProcess) -> None:
        # weak: the owner's finalizer holds this session, so a strong reference back would
        # keep every implementation dropped without close() alive, and its worker running,
        # until the interpreter exits (the calibration held one worker per run)
        self._owner = weakref.ref(owner)
        self._owner_name = owner.name
        self.worker = worker
        self.alive = True
        self.handles = Handles(self._send, self._on_error)
        # What the harness's own objects raised in callbacks during the current request (a
        # model's CacheMismatch): when the implementation lets one through, the harness gets
        # its own exception back, not a copy by name.
        self.callback_errors: list[Exception] = []
        self._depth = 0  # requests in flight (a callback may make one of its own)

    @property
    def owner(self) -> WorkerImplementation:
        owner = self._owner()
        if owner is None:
            raise ImplementationError(
                self._owner_name, "call", "was asked of an object whose implementation has "
                "been garbage-collected (keep the implementation while its objects are used)"
            )
        return owner

    def _serve(
        self, request: dict[str, Any], arrays: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        op = request.get("op")
        if op not in ("call", "getattr", "list"):
            raise WireError(f"a callback of kind {op!r:.40}")
        # Harness objects used by the implementation (uniform sources): a KeyboardInterrupt
        # here is the user's, so only Exceptions become answers.
        try:
            return answer(self.handles, {**request, "kind": op}, arrays, contain=())
        except WireError:
            raise
        except Exception as exc:
            self.callback_errors.append(exc)
            return {"kind": "raise", "error": encode_error(exc)}, {}

    def _send(
        self, header: dict[str, Any], arrays: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        call = str(header.get("attr") or "call")
        if not self.alive:
            raise ImplementationError(
                self.owner.name,
                call,
                "was asked of an object of a worker that has since ended (a crash or a hang "
                "earlier in this run)",
            )
        limit, by_budget = self.owner.call_limit(call, self.owner.current_timeout)
        if self._depth == 0:
            self.callback_errors = []
        self._depth += 1
        try:
            return self.worker.exchange(header, arrays, call, limit, self._serve)
        except ImplementationError as exc:
            timed_out = "did not return within" in exc.reason
            self.owner.lost(self, call, exc, record_hang=not (timed_out and by_budget))
            if timed_out and by_budget:
                raise BudgetExhausted(self.owner.name, call, self.owner.budget) from None
            raise
        finally:
            self._depth -= 1

    def _on_error(self, error: Exception, header: dict[str, Any]) -> Exception:
        return self.error_of(error, str(header.get("attr") or "call"))

    def error_of(self, error: Exception, call: str) -> Exception:  # noqa: PLR0911 -- one per kind
        """What the harness raises for an error the worker answered with."""
        for own in reversed(self.callback_errors):
            if str(own) and str(own) in str(error):
                return own
        if isinstance(error, RemoteError) and error.type_name == INPUT_CHANGED:
            return ImplementationError(self.owner.name, call, error.message)
        if isinstance(error, (ValueError, RemoteAssertionError, RemoteAttributeError)):
            return error
        if isinstance(error, ImplementationError):
            return error
        if isinstance(error, RemoteError) and error.type_name == "SystemExit":
            return ImplementationError(
                self.owner.name,
                call,
                f"called sys.exit({error.message}); an implementation must not exit",
            )
        if isinstance(error, RemoteError):
            return ImplementationError(
                self.owner.name, call, f"raised {error.type_name}: {error.message}"
            )
        return error


class WorkerImplementation(Implementation):
    """A Python implementation module served from a worker process (see the module doc).

    Attributes:
        name: the spec (``python:pkg.mod``, ``python:path/to/file.py``, ``mutant:s03``,
            ``reference``).
        capabilities: what the module offers (from its public names).
        timeout: seconds per contract call.
        search: a folder the worker appends to ``sys.path`` (where the module was found).
    """

    def __init__(
        self,
        spec: str,
        kind: str,
        target: str,
        timeout: float = DEFAULT_CALL_TIMEOUT,
        *,
        search: str = "",
        start_timeout: float = _START_TIMEOUT,
    ) -> None:
        self.name = spec
        self.start_timeout = max(start_timeout, worker_start_timeout())
        self.kind = kind
        self.target = target
        self.search = search
        self.timeout = timeout
        self.current_timeout = timeout
        self.names: frozenset[str] = frozenset()
        self._session: _Session | None = None
        self._hung: dict[str, str] = {}
        self._protections: dict[str, Any] | None = None  # what the sandbox held, once started
        self._lock = threading.RLock()
        self._finalizer = weakref.finalize(self, _close_session, [None])
        self._start()
        declared: Any = {}
        if DECLARATION in self.names:
            with self._limit(DECLARATION, self.timeout):
                declared = self.module.SPEC_VERIFY_CAPABILITIES
        try:
            overrides = check_capabilities(declared, f"{spec}: {DECLARATION}")
        except InvalidArgument:
            self.close()
            raise
        self.capabilities = apply_capabilities(offered_capabilities(self.names), overrides)

    # ---- the worker -----------------------------------------------------------------------

    def _start(self) -> _Session:
        with self._lock:
            if self._session is not None:
                return self._session
            args = [self.kind, self.target] + ([self.search] if self.search else [])
            worker = WorkerProcess(self.name, "spec_verify.adapters._python_worker", args)
            try:
                reply, _ = worker.exchange(None, None, "load", self.start_timeout)
                kind = reply.get("kind")
                if kind == "load_error":
                    error = decode_error(reply.get("error"))
                    if isinstance(error, InvalidArgument):  # named by the spec as given
                        raise UnknownImplementation("impl", self.name, error.rule, error.fix)
                    raise error
                if kind != "ready":
                    raise WireError(f"the greeting is {kind!r:.40}, not 'ready'")
                names = require(reply, "names", list)
                if not all(isinstance(n, str) for n in names):
                    raise WireError("the module's names are not strings")
            except WireError as exc:
                failure: BaseException = UnknownImplementation(
                    "impl", self.name, f"its worker broke the protocol at load ({exc})")
                raise with_sandbox(failure, worker) from None
            except ImplementationError as exc:
                failure = UnknownImplementation(
                    "impl", self.name, f"it could not be loaded: it {exc.reason}",
                    f"if its import is only slow (limit {self.start_timeout:g} s), set "
                    f"{START_TIMEOUT_VARIABLE}=SECONDS")
                raise with_sandbox(failure, worker) from None
            except BaseException as exc:
                with_sandbox(exc, worker)
                raise
            self.names = frozenset(names)
            self._protections = worker.read_protections().to_json()
            session = _Session(self, worker)
            self._session = session
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _close_session, [session])
            return session

    def lost(
        self, session: _Session, call: str, exc: ImplementationError, record_hang: bool = True
    ) -> None:
        """The worker of ``session`` died or hung during ``call``: forget it (and, for a hang,
        do not make that call again)."""
        with self._lock:
            session.alive = False
            session.worker.kill()
            if self._session is session:
                self._session = None
            if record_hang and "did not return within" in exc.reason:
                self._hung[call] = exc.reason

    def close(self) -> None:
        """Stop the worker and every process it started."""
        with self._lock:
            if self._session is not None:
                self._session.alive = False
                self._session.worker.close(_QUIT)
                self._session = None

    @property
    def module(self) -> RemoteObject:
        """A proxy of the implementation's module (in the current worker)."""
        return RemoteObject(self._start().handles, 0)

    @property
    def toolbox(self) -> RemoteObject:
        return RemoteObject(self._start().handles, 1)

    @contextlib.contextmanager
    def _limit(self, call: str, timeout: float) -> Iterator[None]:
        if call in self._hung:
            raise ImplementationError(
                self.name,
                call,
                f"is not called again: it hung earlier in this run ({self._hung[call]})",
            )
        previous = self.current_timeout
        self.current_timeout = timeout
        try:
            yield
        finally:
            self.current_timeout = previous

    def call_guarded(
        self,
        call: str,
        timeout: float,
        fn: Callable[..., T],
        *args: Any,
        passthrough: tuple[type[BaseException], ...] = (),
    ) -> T:
        """``fn(*args)`` with ``timeout`` seconds per request to the worker (the same hook as
        the in-process adapter's; ``passthrough`` has nothing to do here: the worker's errors
        arrive as ``ValueError``, ``AssertionError`` or ``ImplementationError``)."""
        with self._limit(call, timeout):
            return fn(*args)

    # ---- the contract ---------------------------------------------------------------------

    def params(self, **fields: Any) -> Any:
        """The module's own ``SamplingParams`` (a proxy), or the reference's when it has none."""
        if "SamplingParams" in self.names:
            with self._limit("SamplingParams", self.timeout):
                return call_method(self.module, "SamplingParams", **fields)
        from spec_verify.reference import SamplingParams

        return SamplingParams(**fields)

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
        m, V = len(draft_ids), np.shape(target_logits)[-1]
        args = [target_logits, [int(t) for t in draft_ids], draft_probs, p,
                [int(t) for t in history], rng, [int(t) for t in prompt]]  # fmt: skip
        result = self._call_with_source("verify_draft", args, {}, 5)
        return check_verify_result(self.name, result, m, V)

    def _call_with_source(
        self, method: str, args: list[Any], kwargs: dict[str, Any], slot: int
    ) -> Any:
        """``module.<method>(*args, **kwargs)`` whose uniform source is ``args[slot]``.

        A ``ScriptedUniforms`` crosses as data (its script, ``then``, ``limit`` and count) and
        is rebuilt next to the module: one round trip instead of one per draw. The worker
        reports how many values were drawn, as it reports the implementation's output (see
        docs/threat-model.md); the harness's source is left as a direct call would leave it.
        Any other source is a handle, each draw a callback.
        """
        source = args[slot]
        if type(source) is not ScriptedUniforms:
            with self._limit(method, self.timeout):
                return call_method(self.module, method, *args, **kwargs)
        sent = [*args[:slot], None, *args[slot + 1 :]]
        with self._limit(method, self.timeout):
            answer = call_method(
                self.toolbox, "call_scripted", self.module, method, sent, kwargs, slot,
                source.as_data(),
            )
        return self._scripted_answer(method, answer, source)

    def _scripted_answer(self, method: str, answer: Any, source: ScriptedUniforms) -> Any:
        """The value of one ``Toolbox.call_scripted`` answer, or the exception it reports;
        ``source.drawn`` is set to the count the worker reports (never less than before)."""
        try:
            status, value, drawn = answer
            if type(drawn) is not int or not source.drawn <= drawn:
                raise TypeError(f"drawn={drawn!r}")
        except (TypeError, ValueError) as exc:
            raise ImplementationError(
                self.name, method, f"its worker answered {answer!r:.100} ({exc})"
            ) from None
        source.drawn = drawn
        if status == "ok":
            return value
        if status == "past_script" and isinstance(value, str):
            raise DrewPastScript(value)
        if status == "too_many":
            raise TooManyDraws
        if status == "err":
            raise self._start().error_of(decode_error(value), method)
        raise ImplementationError(self.name, method, f"its worker answered {status!r:.40}")

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
        """The input crosses once per request of up to ``_SCRIPTS_PER_REQUEST`` sources, each
        source as data (see ``Implementation.verify_scripted_many``)."""
        m, V = len(draft_ids), np.shape(target_logits)[-1]
        args = [target_logits, [int(t) for t in draft_ids], draft_probs, p,
                [int(t) for t in history], None, [int(t) for t in prompt]]  # fmt: skip
        results: list[ScriptedResult] = []
        for begin in range(0, len(sources), _SCRIPTS_PER_REQUEST):
            chunk = sources[begin : begin + _SCRIPTS_PER_REQUEST]
            limit = self.timeout + _SECONDS_PER_ROUND * len(chunk)
            with self._limit("verify_draft", limit):
                raw = call_method(
                    self.toolbox, "verify_scripted", self.module, args,
                    [s.as_data() for s in chunk],
                )  # fmt: skip
            if not isinstance(raw, list) or len(raw) != len(chunk):
                raise ImplementationError(
                    self.name, "verify_draft", f"its worker answered {len(chunk)} scripted "
                    f"calls with {raw!r:.100}",
                )  # fmt: skip
            results += results_or_raised(
                lambda pair: check_verify_result(
                    self.name, self._scripted_answer("verify_draft", pair[1], pair[0]), m, V
                ),
                zip(chunk, raw, strict=True),
            )
        return results

    def call_many(
        self,
        calls: Sequence[Call],
        rng: Any = None,
        while_waiting: Callable[[], None] | None = None,
    ) -> list[CallOutcome]:
        """``LIVE`` rounds of one method and one ``p`` (a sampling tier's i.i.d. rounds) in
        requests of up to ``_ROUNDS_PER_REQUEST``, ``rng`` crossing once per request; any
        other batch one call at a time (``Implementation.call_many``)."""
        live = _live_rounds(calls)
        if live is None:
            return super().call_many(calls, rng, while_waiting)
        if while_waiting is not None:
            while_waiting()
        method, p = live
        if method == "verify_draft":
            rounds = [(a["target_logits"], a["draft_ids"], a["draft_probs"], a["history"],
                       a["prompt"]) for a in (c.args for c in calls)]  # fmt: skip
            return [CallOutcome.ok(r) for r in self._verify_live(rounds, p, rng)]
        trees = [(a["target_logits"], a["parents"], a["token_ids"], a["draft_probs"],
                  a["history"], a["prompt"]) for a in (c.args for c in calls)]  # fmt: skip
        rule = calls[0].args["rule"]
        return [CallOutcome.ok(r) for r in self._tree_live(trees, p, rng, rule)]

    def _verify_live(
        self, rounds: Sequence[VerifyRound], p: Any, rng: Any
    ) -> list[tuple[list[int], int]]:
        """The rounds in requests of up to ``_ROUNDS_PER_REQUEST`` (one round trip each, not
        one per round); the time limit grows with the rounds in a request."""
        results: list[tuple[list[int], int]] = []
        for begin in range(0, len(rounds), _ROUNDS_PER_REQUEST):
            chunk = rounds[begin : begin + _ROUNDS_PER_REQUEST]
            sent = [
                [logits, [int(t) for t in ids], probs, [int(t) for t in history],
                 [int(t) for t in prompt]]
                for logits, ids, probs, history, prompt in chunk
            ]  # fmt: skip
            limit = self.timeout + _SECONDS_PER_ROUND * len(chunk)
            with self._limit("verify_draft", limit):
                raw = call_method(self.toolbox, "verify_many", self.module, sent, p, rng)
            if not isinstance(raw, list) or len(raw) != len(chunk):
                raise ImplementationError(
                    self.name, "verify_draft", f"its worker answered {len(chunk)} rounds with "
                    f"{raw!r:.100}",
                )  # fmt: skip
            for (logits, ids, *_), result in zip(chunk, raw, strict=True):
                results.append(
                    check_verify_result(self.name, result, len(ids), np.shape(logits)[-1])
                )
        return results

    def propose_many(
        self, rounds: Sequence[ProposeRound], p: Any, draft_p: Any, rng: Any
    ) -> list[tuple[list[int], int]]:
        """The rounds in requests of up to ``_ROUNDS_PER_REQUEST``, as ``_verify_live``."""
        if "propose_and_verify" not in self.capabilities:
            raise self._not_offered("propose_and_verify")
        results: list[tuple[list[int], int]] = []
        for begin in range(0, len(rounds), _ROUNDS_PER_REQUEST):
            chunk = rounds[begin : begin + _ROUNDS_PER_REQUEST]
            sent = [[target, draft, [int(t) for t in history], [int(t) for t in prompt]]
                    for target, draft, history, prompt in chunk]  # fmt: skip
            limit = self.timeout + _SECONDS_PER_ROUND * len(chunk)
            with self._limit("propose_and_verify", limit):
                raw = call_method(self.toolbox, "propose_many", self.module, sent, p, draft_p,
                                  rng)  # fmt: skip
            if not isinstance(raw, list) or len(raw) != len(chunk):
                raise ImplementationError(
                    self.name, "propose_and_verify", f"its worker answered {len(chunk)} "
                    f"rounds with {raw!r:.100}",
                )  # fmt: skip
            for (target, *_), result in zip(chunk, raw, strict=True):
                shape = np.shape(target)
                results.append(check_verify_result(self.name, result, shape[0] - 1, shape[-1]))
        return results

    def _tree_live(
        self, rounds: Sequence[TreeRound], p: Any, rng: Any, rule: str
    ) -> list[tuple[list[int], list[int]]]:
        """The tree rounds in requests of up to ``_ROUNDS_PER_REQUEST``, as ``_verify_live``."""
        if "verify_tree" not in self.capabilities:
            raise self._not_offered("verify_tree")
        results: list[tuple[list[int], list[int]]] = []
        for begin in range(0, len(rounds), _ROUNDS_PER_REQUEST):
            chunk = rounds[begin : begin + _ROUNDS_PER_REQUEST]
            sent = [
                [logits, [int(t) for t in parents], [int(t) for t in tokens],
                 None if probs is None else list(probs), [int(t) for t in history],
                 [int(t) for t in prompt]]
                for logits, parents, tokens, probs, history, prompt in chunk
            ]  # fmt: skip
            limit = self.timeout + _SECONDS_PER_ROUND * len(chunk)
            with self._limit("verify_tree", limit):
                raw = call_method(self.toolbox, "verify_tree_many", self.module, sent, p, rng, rule)
            if not isinstance(raw, list) or len(raw) != len(chunk):
                raise ImplementationError(
                    self.name, "verify_tree", f"its worker answered {len(chunk)} rounds with "
                    f"{raw!r:.100}",
                )  # fmt: skip
            for (logits, parents, tokens, *_), result in zip(chunk, raw, strict=True):
                results.append(
                    check_tree_result(self.name, result, parents, tokens, np.shape(logits)[-1])
                )
        return results

    def generate_many(self, request: GenerationRequest, seeds: Sequence[int]) -> list[list[int]]:
        """The generations run next to the module, ``_SEEDS_PER_REQUEST`` per request (one
        round trip each instead of some thirty per generation)."""
        if "generation" not in self.capabilities:
            raise self._not_offered("generation")
        data = request.to_data()
        results: list[list[int]] = []
        for begin in range(0, len(seeds), _SEEDS_PER_REQUEST):
            chunk = [int(s) for s in seeds[begin : begin + _SEEDS_PER_REQUEST]]
            limit = GENERATION_TIMEOUT + _SECONDS_PER_ROUND * len(chunk)
            with self._limit("speculative_generate", limit):
                raw = call_method(self.toolbox, "generate_many", self.module, data, chunk)
            if not (
                isinstance(raw, list)
                and len(raw) == len(chunk)
                and all(isinstance(ids, list) and all(type(t) is int for t in ids) for ids in raw)
            ):
                raise ImplementationError(
                    self.name, "speculative_generate",
                    f"its worker answered {len(chunk)} generations with {raw!r:.100}",
                )  # fmt: skip
            results.extend(raw)
        return results

    def verify_tree(
        self,
        target_logits: NDArray[np.float64],
        parents: Sequence[int],
        token_ids: Sequence[int],
        draft_probs: Sequence[NDArray[np.float64] | None] | None,
        p: Any,
        history: Sequence[int],
        rng: Any,
        prompt: Sequence[int] = (),
        rule: str = "with_replacement",
    ) -> tuple[list[int], list[int]]:
        """The module's ``verify_tree``, its result checked (a path from the root whose tokens
        are the emitted ones)."""
        V = np.shape(target_logits)[-1]
        probs = None if draft_probs is None else list(draft_probs)
        args = [target_logits, [int(t) for t in parents], [int(t) for t in token_ids], probs, p,
                [int(t) for t in history], rng, [int(t) for t in prompt]]  # fmt: skip
        result = self._call_with_source("verify_tree", args, {"rule": rule}, 6)
        return check_tree_result(self.name, result, parents, token_ids, V)

    def sampling_distribution(
        self,
        logits: NDArray[np.float64],
        p: Any,
        history: Sequence[int] = (),
        prompt: Sequence[int] = (),
    ) -> NDArray[np.float64]:
        with self._limit("sampling_distribution", self.timeout):
            result = call_method(
                self.module,
                "sampling_distribution",
                logits,
                p,
                [int(t) for t in history],
                [int(t) for t in prompt],
            )
        try:
            return np.asarray(result, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ImplementationError(
                self.name, "sampling_distribution", f"returned {result!r:.200}: {exc}"
            ) from None

    def prompt_lookup(
        self, ctx: Sequence[int], k: int, max_ngram: int = 3, min_ngram: int = 1
    ) -> list[int]:
        with self._limit("prompt_lookup", self.timeout):
            draft = call_method(
                self.module, "PromptLookupDraft", max_ngram=max_ngram, min_ngram=min_ngram
            )
            result = draft.propose([int(t) for t in ctx], k, None)
        try:
            ids, _ = result
            return [operator.index(i) for i in ids]
        except (TypeError, ValueError) as exc:
            raise ImplementationError(
                self.name, "prompt_lookup", f"returned {result!r:.200}: {exc}"
            ) from None

    def pcg32_uniforms(self, seed: int, n: int) -> list[float]:
        with self._limit("request_rng", self.timeout):
            values = call_method(self.toolbox, "pcg32_uniforms", self.module, seed, n)
        return [float(v) for v in values]

    def request_rng(self, seed: int) -> Any | None:
        """The module's own ``request_rng(seed)`` (a proxy living in the worker), or None."""
        if "pcg32" not in self.capabilities:
            return None
        with self._limit("request_rng", self.timeout):
            return call_method(self.module, "request_rng", seed)

    def generation_module(self) -> Any | None:
        """A proxy of the module when it offers ``generation``."""
        return self.module if "generation" in self.capabilities else None

    def own_attribute(self, name: str) -> Any | None:
        return getattr(self.module, name) if name in self.names else None

    def sandbox(self) -> dict[str, Any] | None:
        """What the worker's sandbox held (``_sandbox.Protections``), from its start."""
        return self._protections

    def __repr__(self) -> str:
        return f"WorkerImplementation({self.name!r})"


def _close_session(holder: list[_Session | None]) -> None:
    for session in holder:
        if session is not None:
            session.alive = False
            session.worker.close(_QUIT)


def _live_rounds(calls: Sequence[Call]) -> tuple[str, Any] | None:
    """``(method, p)`` when every call is a ``LIVE`` ``verify_draft`` (or every one a
    ``LIVE`` ``verify_tree`` of one rule) with the same ``p``, else None."""
    if not calls:
        return None
    first = calls[0]
    if first.method not in ("verify_draft", "verify_tree"):
        return None
    p, rule = first.args["p"], first.args.get("rule")
    for call in calls:
        if (call.plan.draws is not Draws.LIVE or call.method != first.method
                or call.args["p"] is not p or call.args.get("rule") != rule):  # fmt: skip
            return None
    return first.method, p
