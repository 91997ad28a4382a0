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
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from spec_verify.adapters._codec import (
    RemoteAssertionError,
    RemoteAttributeError,
    RemoteError,
    decode_error,
)
from spec_verify.adapters._implementations import (
    DECLARATION,
    Implementation,
    apply_capabilities,
    check_capabilities,
    check_tree_result,
    offered_capabilities,
)
from spec_verify.adapters._process import WorkerProcess
from spec_verify.adapters._remote import INPUT_CHANGED, Handles, RemoteObject, answer
from spec_verify.adapters._wire import WireError, require
from spec_verify.errors import ImplementationError, InvalidArgument, UnknownImplementation

__all__ = ["DEFAULT_CALL_TIMEOUT", "WorkerImplementation", "check_verify_result"]

T = TypeVar("T")

DEFAULT_CALL_TIMEOUT = 10.0  # seconds per contract call (verify_draft, ...)
GENERIC_TIMEOUT = 60.0  # seconds per other request (speculative_generate, model passes)
_START_TIMEOUT = 60.0
_QUIT = {"kind": "quit"}


class _Session:
    """One live worker and the handle tables of both sides."""

    def __init__(self, owner: WorkerImplementation, worker: WorkerProcess) -> None:
        self.owner = owner
        self.worker = worker
        self.alive = True
        self.handles = Handles(self._send, self._on_error)

    def _serve(
        self, request: dict[str, Any], arrays: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        op = request.get("op")
        if op not in ("call", "getattr", "list"):
            raise WireError(f"a callback of kind {op!r:.40}")
        # Harness objects used by the implementation (uniform sources): a KeyboardInterrupt
        # here is the user's, so only Exceptions become answers.
        return answer(self.handles, {**request, "kind": op}, arrays, contain=(Exception,))

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
        try:
            return self.worker.exchange(header, arrays, call, self.owner.current_timeout,
                                        self._serve)  # fmt: skip
        except ImplementationError as exc:
            self.owner.lost(self, call, exc)
            raise

    def _on_error(self, error: Exception, header: dict[str, Any]) -> Exception:
        call = str(header.get("attr") or "call")
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
        name: the spec (``python:pkg.mod``, ``mutant:s03``, ``reference``).
        capabilities: what the module offers (from its public names).
        timeout: seconds per contract call.
    """

    def __init__(
        self, spec: str, kind: str, target: str, timeout: float = DEFAULT_CALL_TIMEOUT
    ) -> None:
        self.name = spec
        self.kind = kind
        self.target = target
        self.timeout = timeout
        self.current_timeout = timeout
        self.names: frozenset[str] = frozenset()
        self._session: _Session | None = None
        self._hung: dict[str, str] = {}
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
            worker = WorkerProcess(
                self.name, "spec_verify.adapters._python_worker", [self.kind, self.target]
            )
            try:
                reply, _ = worker.exchange(None, None, "load", _START_TIMEOUT)
                kind = reply.get("kind")
                if kind == "load_error":
                    error = decode_error(reply.get("error"))
                    worker.close(_QUIT)
                    raise error
                if kind != "ready":
                    raise WireError(f"the greeting is {kind!r:.40}, not 'ready'")
                names = require(reply, "names", list)
                if not all(isinstance(n, str) for n in names):
                    raise WireError("the module's names are not strings")
            except WireError as exc:
                worker.kill()
                raise UnknownImplementation(
                    "impl", self.name, f"its worker broke the protocol at load ({exc})"
                ) from None
            except ImplementationError as exc:
                worker.kill()
                raise UnknownImplementation(
                    "impl", self.name, f"it could not be loaded: it {exc.reason}"
                ) from None
            except BaseException:
                worker.kill()
                raise
            self.names = frozenset(names)
            session = _Session(self, worker)
            self._session = session
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _close_session, [session])
            return session

    def lost(self, session: _Session, call: str, exc: ImplementationError) -> None:
        """The worker of ``session`` died or hung during ``call``: forget it."""
        with self._lock:
            session.alive = False
            session.worker.kill()
            if self._session is session:
                self._session = None
            if "did not return within" in exc.reason:
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
                return self.module.SamplingParams(**fields)
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
        with self._limit("verify_draft", self.timeout):
            result = self.module.verify_draft(
                target_logits, [int(t) for t in draft_ids], draft_probs, p,
                [int(t) for t in history], rng, [int(t) for t in prompt],
            )  # fmt: skip
        return check_verify_result(self.name, result, m, V)

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
        with self._limit("verify_tree", self.timeout):
            result = self.module.verify_tree(
                target_logits, [int(t) for t in parents], [int(t) for t in token_ids], probs, p,
                [int(t) for t in history], rng, [int(t) for t in prompt], rule=rule,
            )  # fmt: skip
        return check_tree_result(self.name, result, parents, token_ids, V)

    def sampling_distribution(
        self,
        logits: NDArray[np.float64],
        p: Any,
        history: Sequence[int] = (),
        prompt: Sequence[int] = (),
    ) -> NDArray[np.float64]:
        with self._limit("sampling_distribution", self.timeout):
            result = self.module.sampling_distribution(
                logits, p, [int(t) for t in history], [int(t) for t in prompt]
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
            draft = self.module.PromptLookupDraft(max_ngram=max_ngram, min_ngram=min_ngram)
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
            values = self.toolbox.pcg32_uniforms(self.module, seed, n)
        return [float(v) for v in values]

    def request_rng(self, seed: int) -> Any | None:
        """The module's own ``request_rng(seed)`` (a proxy living in the worker), or None."""
        if "pcg32" not in self.capabilities:
            return None
        with self._limit("request_rng", self.timeout):
            return self.module.request_rng(seed)

    def generation_module(self) -> Any | None:
        """A proxy of the module when it offers ``generation``."""
        return self.module if "generation" in self.capabilities else None

    def own_attribute(self, name: str) -> Any | None:
        return getattr(self.module, name) if name in self.names else None

    def __repr__(self) -> str:
        return f"WorkerImplementation({self.name!r})"


def _close_session(holder: list[_Session | None]) -> None:
    for session in holder:
        if session is not None:
            session.alive = False
            session.worker.close(_QUIT)


def check_verify_result(name: str, result: Any, m: int, V: int) -> tuple[list[int], int]:
    """Turn garbage into an ``ImplementationError`` naming what was wrong."""
    try:
        emitted, n_accepted = result
        # operator.index, not int(): a float id (2.75, or inf) is garbage, not a token.
        emitted = [operator.index(t) for t in emitted]
        n_accepted = operator.index(n_accepted)
    except (TypeError, ValueError, ImplementationError) as exc:
        raise ImplementationError(
            name,
            "verify_draft",
            f"returned {result!r:.200}: {exc} (the contract returns a list of int token ids "
            "and an int n_accepted)",
        ) from None
    if not 0 <= n_accepted <= m or len(emitted) != n_accepted + 1:
        raise ImplementationError(
            name,
            "verify_draft",
            f"returned {len(emitted)} ids with n_accepted={n_accepted} for m={m} drafts; "
            "the contract is len(emitted) == n_accepted + 1 and 0 <= n_accepted <= m",
        )
    bad = [t for t in emitted if not 0 <= t < V]
    if bad:
        raise ImplementationError(name, "verify_draft", f"returned ids out of [0, {V}): {bad}")
    return emitted, n_accepted
