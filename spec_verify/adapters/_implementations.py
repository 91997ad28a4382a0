"""Implementations under test: the adapter protocol, capabilities and result checks.

The adapters are the only code that knows how an implementation is called; tiers see only
``Implementation`` (its one batching path is ``call_many``, ``_calls.py``). Loading one from a
spec string is ``_loader.py``'s, which imports the adapters; this module imports none of them.
"""

from __future__ import annotations

import abc
import operator
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from types import ModuleType
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from spec_verify.adapters._calls import Call, CallOutcome, Draws
from spec_verify.adapters._generation_request import (
    GENERATION_TIMEOUT,
    GenerationRequest,
    draw_generation,
)
from spec_verify.adapters._guard import guarded_call
from spec_verify.errors import (
    BudgetExhausted,
    ImplementationError,
    InvalidArgument,
)
from spec_verify.uniforms import ScriptedUniforms, results_or_raised

T = TypeVar("T")

# One entry of ``verify_scripted_many``: the call's result, or what it raised.
ScriptedResult = tuple[list[int], int] | BaseException

__all__ = [
    "CAPABILITIES",
    "DECLARATION",
    "AbiImplementation",
    "Implementation",
    "ProposeRound",
    "PythonImplementation",
    "ScriptedResult",
    "TreeImplementation",
    "TreeRound",
    "VerifyRound",
    "apply_capabilities",
    "check_capabilities",
    "check_tree_result",
    "check_verify_result",
    "offered_capabilities",
]

# What an implementation may offer; tiers skip what is missing, and a check that needs what an
# implementation declares it does not do is NOT_APPLICABLE (spec_verify.profiles). Declared by a
# python: module as SPEC_VERIFY_CAPABILITIES = {name: bool} and overridden on the command line
# (--capability NAME, --no-capability NAME); see docs/profiles.md.
CAPABILITIES = (
    "verify_draft",  # verify_draft(target_logits, draft_ids, draft_probs, p, history, rng, prompt)
    "injected_uniforms",  # every decision comes from the uniform source passed in (False: own
    # randomness; the exact tier, parity and the edge-uniform check then do not apply)
    "greedy",  # temperature 0 is a greedy path (False: sampled-only; greedy checks do not apply)
    "float32",  # declares float32 arithmetic: the exact tier may be not provable (informational)
    "sampling_distribution",
    "prompt_lookup",  # PromptLookupDraft(max_ngram, min_ngram).propose(ctx, k, None)
    "pcg32",  # request_rng(seed).random()
    "generation",  # speculative_generate, generate and the bundled models (a Python module)
    "verify_tree",  # verify_tree(target_logits, parents, token_ids, draft_probs, p, history,
    #                 rng, prompt, rule) with an injected uniform source (CONTRACT.md section 6)
    "propose_and_verify",  # propose_and_verify(target_logits, draft_logits, p, history, rng,
    #                 prompt, draft_params): draws its own drafts (CONTRACT.md section 14)
    "uniforms_open_closed",  # its injected uniforms lie in (0, 1], not [0, 1) (curand_uniform's
    # convention; spec_verify.uniforms): the edge tier feeds it 1.0 and never 0.0
)

DECLARATION = "SPEC_VERIFY_CAPABILITIES"


def check_capabilities(declared: Any, argument: str = DECLARATION) -> dict[str, bool]:
    """A capability declaration ``{name: offered}`` checked against ``CAPABILITIES``.

    Raises:
        InvalidArgument: not a mapping of known names to booleans.
    """
    if not isinstance(declared, Mapping):
        raise InvalidArgument(
            argument, declared, "must be a mapping {capability: bool}",
            f"e.g. {{'injected_uniforms': False}}; capabilities: {', '.join(CAPABILITIES)}",
        )
    unknown = sorted(str(k) for k in declared if k not in CAPABILITIES)
    if unknown:
        raise InvalidArgument(
            argument, unknown, "unknown capability", f"choose from {', '.join(CAPABILITIES)}"
        )
    bad = {k: v for k, v in declared.items() if not isinstance(v, bool)}
    if bad:
        raise InvalidArgument(argument, bad, "each capability maps to True or False")
    return dict(declared)


def apply_capabilities(detected: frozenset[str], declared: Mapping[str, bool]) -> frozenset[str]:
    """``detected`` with what ``declared`` adds (True) or removes (False)."""
    return frozenset(
        {c for c in detected if declared.get(c, True)} | {c for c, on in declared.items() if on}
    )


def offered_capabilities(names: Iterable[str]) -> frozenset[str]:
    """What a Python module offers, from the public names it defines (before its own
    ``SPEC_VERIFY_CAPABILITIES`` and the command line add or remove any)."""
    has = set(names)
    offered = {
        "verify_draft": "verify_draft" in has,
        # a tree-only module (verify_tree, no verify_draft) takes injected uniforms and has a
        # greedy path through verify_tree; the tiers that need verify_draft skip with a reason
        "injected_uniforms": bool({"verify_draft", "verify_tree"} & has),
        "greedy": bool({"verify_draft", "verify_tree"} & has),
        "sampling_distribution": "sampling_distribution" in has,
        "prompt_lookup": "PromptLookupDraft" in has,
        "pcg32": "request_rng" in has,
        "generation": {"speculative_generate", "generate", "SamplingParams"} <= has,
        "verify_tree": "verify_tree" in has,
        "propose_and_verify": "propose_and_verify" in has,
    }
    return frozenset(k for k, v in offered.items() if v)


# One propose_and_verify round but for the parameters and the uniform source: (target_logits,
# draft_logits, history, prompt).
ProposeRound = tuple[NDArray[np.float64], NDArray[np.float64], Sequence[int], Sequence[int]]

# One verify_draft round but for the parameters and the uniform source: (target_logits,
# draft_ids, draft_probs, history, prompt).
VerifyRound = tuple[NDArray[np.float64], Sequence[int], "NDArray[np.float64] | None",
                    Sequence[int], Sequence[int]]  # fmt: skip
# one verify_tree call of a batch: (target_logits, parents, token_ids, draft_probs,
# history, prompt)
TreeRound = tuple[NDArray[np.float64], Sequence[int], Sequence[int], Any, Sequence[int],
                  Sequence[int]]  # fmt: skip


class Implementation(abc.ABC):
    """The one interface a tier calls: every method a tier may use is here, as a real method.

    Like Hypothesis's ``PrimitiveProvider``, an adapter subclasses this and overrides what it
    offers; the rest keep their defaults (a call that is not offered raises, ``params`` builds
    the reference's ``SamplingParams``, the optional hooks answer ``None``), so tiers never
    probe an implementation by attribute. ``capabilities`` says what is offered (``CAPABILITIES``)
    and tiers skip what is missing. Every call raises ``ImplementationError`` if the
    implementation crashes, hangs or returns garbage, and the contract's ``ValueError`` on bad
    input.

    Attributes:
        name: the spec string (``reference``, ``python:pkg.mod``, ``ffi:/abs/lib.so``, ...).
        capabilities: what the implementation offers, from ``CAPABILITIES``.
        timeout: seconds allowed per call, for adapters that enforce a limit.
    """

    name: str = "implementation"
    capabilities: frozenset[str] = frozenset()
    timeout: float = 10.0
    # When the run's whole-time budget ends (``time.monotonic()``), set by ``run_checks``;
    # adapters with a worker cut a call's limit to it (``call_limit``).
    budget_deadline: float | None = None
    budget: float | None = None
    # How a tier plans independent sampled rounds: ``LIVE`` (one harness-seeded source the
    # rounds share, ``tiers._drive.implementation_rng``) or ``SEEDED`` (each round its own seed
    # on the implementation's own stream, next to it: the C ABI adapter's).
    batch_stream: Draws = Draws.LIVE

    @abc.abstractmethod
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
        """``(emitted_ids, n_accepted)`` of one verification (docs/implementing.md)."""

    def call_many(
        self,
        calls: Sequence[Call],
        rng: Any = None,
        while_waiting: Callable[[], None] | None = None,
    ) -> list[CallOutcome]:
        """The one batching path: each ``Call`` (``_calls.py``: the method, its arguments,
        the plan of its uniforms) in order, one ``CallOutcome`` each. ``rng`` is the source
        of the ``LIVE`` calls, shared in order; ``while_waiting()`` runs in this process
        while the implementation computes (the reference's side of the same cases). An
        adapter whose calls cross a process boundary sends them together.

        A call that raises the contract's ``ValueError`` or an ``ImplementationError`` is an
        ``ERR`` outcome and the next call runs; except a ``LIVE`` call: the calls share one
        stream, so the first that raises ends the batch with its exception.

        Raises:
            ImplementationError: the batch as a whole failed (a worker crashed, hung or broke
                the protocol), so which call did it is unknown: make the calls one by one.
            BudgetExhausted: the run's budget ran out.
        """
        if while_waiting is not None:
            while_waiting()
        return [self._call_one(call, rng) for call in calls]

    def _call_one(self, call: Call, rng: Any) -> CallOutcome:
        """One call of ``call_many`` in this process, its source built from its plan."""
        plan = call.plan
        if plan.draws is Draws.LIVE:
            return CallOutcome.ok(self._dispatch(call, rng))
        source: Any
        if plan.draws is Draws.SEEDED:
            source = self.request_rng(plan.seed)
            if source is None:
                from spec_verify.reference.pcg32 import request_rng

                source = request_rng(plan.seed)
        else:
            source = ScriptedUniforms(plan.values if plan.draws is Draws.SCRIPTED else ())

        def count() -> int | None:
            return source.drawn if isinstance(source, ScriptedUniforms) else None

        try:
            value = self._dispatch(call, source)
        except (ValueError, ImplementationError) as exc:
            return CallOutcome.err(exc, count())
        except Exception as exc:  # an implementation object that does not guard its calls
            error = ImplementationError(
                self.name, call.method, f"raised {type(exc).__name__}: {exc}"
            )
            return CallOutcome.err(error, count())
        return CallOutcome.ok(value, count())

    def _dispatch(self, call: Call, source: Any) -> Any:
        """``call``'s method on this implementation with ``source`` as its uniforms."""
        a = call.args
        if call.method == "verify_draft":
            result = self.verify_draft(
                a["target_logits"], list(a["draft_ids"]), a["draft_probs"], a["p"],
                list(a["history"]), source, list(a["prompt"]),
            )  # fmt: skip
            try:
                return (list(result[0]), int(result[1]))
            except (TypeError, ValueError, IndexError) as exc:
                raise ImplementationError(
                    self.name, "verify_draft", f"returned {result!r} ({exc})"
                ) from None
        if call.method == "verify_tree":
            if not isinstance(self, TreeImplementation) or "verify_tree" not in self.capabilities:
                raise self._not_offered("verify_tree")
            return self.verify_tree(
                a["target_logits"], a["parents"], a["token_ids"], a["draft_probs"], a["p"],
                a["history"], source, a["prompt"], rule=a["rule"],
            )  # fmt: skip
        if call.method == "sampling_distribution":
            return self.sampling_distribution(a["logits"], a["p"], a["history"], a["prompt"])
        return self.prompt_lookup(a["ctx"], a["k"], a["max_ngram"], a["min_ngram"])

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
        """``verify_draft`` on one input once per scripted source, in order (the exact
        engine's probes of one round): each entry is the call's checked result or the
        exception it raised (``TooManyDraws`` included), and each source's ``drawn`` ends as
        the call left it. An adapter whose calls cross a process boundary sends the input once
        and the sources together.

        Raises:
            ImplementationError: the batch as a whole failed (a worker crashed, hung or broke
                the protocol), so which call did it is unknown: make the calls one by one.
            BudgetExhausted: the run's budget ran out.
        """
        return results_or_raised(
            lambda source: self.verify_draft(
                target_logits, draft_ids, draft_probs, p, history, source, prompt
            ),
            sources,
        )

    def propose_many(
        self, rounds: Sequence[ProposeRound], p: Any, draft_p: Any, rng: Any
    ) -> list[tuple[list[int], int]]:
        """``propose_and_verify`` on each round ``(target_logits, draft_logits, history,
        prompt)`` with one ``p``, ``draft_p`` and uniform source, in order (capability
        ``propose_and_verify``: the implementation draws its own drafts); each result is
        checked as ``verify_draft``'s. An adapter whose calls cross a process boundary sends
        them together."""
        fn = self.own_attribute("propose_and_verify")
        if "propose_and_verify" not in self.capabilities or fn is None:
            raise self._not_offered("propose_and_verify")
        results = []
        for target, draft, history, prompt in rounds:
            raw = self.call_guarded(
                "propose_and_verify", self.timeout, fn, target, draft, p, list(history), rng,
                list(prompt), draft_p,
            )  # fmt: skip
            shape = np.shape(target)
            results.append(check_verify_result(self.name, raw, shape[0] - 1, shape[-1]))
        return results

    def sampling_distribution(
        self,
        logits: NDArray[np.float64],
        p: Any,
        history: Sequence[int] = (),
        prompt: Sequence[int] = (),
    ) -> NDArray[np.float64]:
        """The processed distribution of one row (capability ``sampling_distribution``)."""
        raise self._not_offered("sampling_distribution")

    def prompt_lookup(
        self, ctx: Sequence[int], k: int, max_ngram: int = 3, min_ngram: int = 1
    ) -> list[int]:
        """``PromptLookupDraft(max_ngram, min_ngram).propose(ctx, k)`` (``prompt_lookup``)."""
        raise self._not_offered("prompt_lookup")

    def pcg32_uniforms(self, seed: int, n: int) -> list[float]:
        """The first ``n`` uniforms of ``request_rng(seed)`` (capability ``pcg32``)."""
        raise self._not_offered("pcg32")

    def pcg32_u32(self, initstate: int, initseq: int, n: int) -> list[int] | None:
        """The raw 32-bit PCG32 outputs for ``(initstate, initseq)``, or None when the
        implementation exposes only uniforms (then the parity tier checks those)."""
        return None

    def params(self, **fields: Any) -> Any:
        """The implementation's sampling parameters from the contract's field names: the one
        builder every tier uses. Default: the reference's ``SamplingParams``.

        Raises:
            ValueError: the fields break the contract's ranges.
        """
        from spec_verify.reference import SamplingParams

        return SamplingParams(**fields)

    def request_rng(self, seed: int) -> Any | None:
        """The implementation's own request stream seeded with ``seed`` (its ``request_rng``),
        or None when it has none (tiers then inject a numpy ``Generator``)."""
        return None

    def generation_module(self) -> Any | None:
        """The module (or a worker's proxy of it) holding ``speculative_generate``,
        ``generate`` and ``SamplingParams`` when the implementation offers ``generation``,
        else None."""
        return None

    def generate_many(
        self, request: GenerationRequest, seeds: Sequence[int]
    ) -> list[list[int]]:
        """The ids of one generation of ``request`` per seed (``draw_generation``), each under
        the generation time limit (capability ``generation``); the first that raises ends it.
        An adapter whose calls cross a process boundary runs them next to the module."""
        module = self.generation_module()
        if module is None:
            raise self._not_offered("generation")
        return [
            self.call_guarded(
                "speculative_generate", GENERATION_TIMEOUT, draw_generation, module, request,
                int(seed),
            )
            for seed in seeds
        ]  # fmt: skip

    def own_attribute(self, name: str) -> Any | None:
        """The implementation's own contract class or function ``name`` (a draft, the n-gram
        model), or None: tiers then use the reference's."""
        return None

    def sandbox(self) -> dict[str, Any] | None:
        """Which protections held around the implementation's code (``_sandbox.Protections``
        as JSON, for the report), or None when it runs in the harness's process."""
        return None

    def use_rule(self, rule: str) -> str | None:
        """Make ``verify_draft`` the verification rule ``rule`` (``check --rule``); None when
        it is, else why not. A Python module's ``verify_draft`` is whatever rule it has: the
        checks judge it against ``rule``; the FFI adapter routes to the rule's C symbol."""
        return None

    def breakpoint_hints(self, rnd: Any) -> list[Fraction]:
        """Exact thresholds of the implementation's rule on the exact engine's round ``rnd``
        (the enumerator snaps located breakpoints to them); none by default."""
        return []

    def call_guarded(
        self,
        call: str,
        timeout: float,
        fn: Callable[..., T],
        *args: Any,
        passthrough: tuple[type[BaseException], ...] = (),
    ) -> T:
        """``fn(*args)`` (code of the implementation) under a time limit, a crash or
        ``sys.exit`` in it turned into ``ImplementationError``."""
        return guarded_call(self.name, call, timeout, fn, *args, passthrough=passthrough)

    def call_limit(self, call: str, timeout: float) -> tuple[float, bool]:
        """The time limit of one call: ``timeout``, or what is left of the run's budget when
        that is less (then ``True``: running out is the budget's doing, not a hang).

        Raises:
            BudgetExhausted: nothing is left of the budget.
        """
        if self.budget_deadline is None:
            return timeout, False
        left = self.budget_deadline - time.monotonic()
        if left <= 0:
            raise BudgetExhausted(self.name, call, self.budget)
        return (left, True) if left < timeout else (timeout, False)

    def close(self) -> None:  # noqa: B027 -- a hook with a no-op default, not abstract
        """Release what the implementation holds (a worker process); a later call may start
        it again."""

    def _not_offered(self, capability: str) -> ImplementationError:
        return ImplementationError(
            self.name,
            capability,
            f"is not offered (capabilities: {sorted(self.capabilities)}); a tier must check "
            "the capability before calling",
        )


@runtime_checkable
class TreeImplementation(Protocol):
    """An implementation that also verifies draft trees (capability ``verify_tree``); a second
    protocol, so implementations without trees need no stub method."""

    name: str
    capabilities: frozenset[str]

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
    ) -> tuple[list[int], list[int]]: ...


@runtime_checkable
class AbiImplementation(Protocol):
    """An implementation behind the C ABI (the FFI adapter), for the checks of the ABI itself
    (its one-step functions, status names, thread safety): raw calls by the ABI's names.
    Every other check goes through ``Implementation.call_many``."""

    def batch(
        self,
        calls: Sequence[Any],
        while_waiting: Callable[[], None] | None = None,
        threads: int = 1,
    ) -> list[CallOutcome]:
        """Each raw ``(method, kwargs, source)`` call's ``CallOutcome``."""
        ...

    def params_tuple(self, p: Any) -> tuple[Any, ...]:
        """The C ABI's parameter fields of ``p``."""
        ...


class PythonImplementation(Implementation):
    """An implementation given as a Python module with the contract's names.

    ``module`` is kept so the generation tier can reach ``speculative_generate``, ``generate``
    and the models when the module offers them.
    """

    def __init__(self, name: str, module: ModuleType, timeout: float = 10.0) -> None:
        self.name = name
        self.module = module
        self.timeout = timeout
        self._hung: dict[str, str] = {}  # call -> how it hung
        declared = check_capabilities(getattr(module, DECLARATION, {}), f"{name}: {DECLARATION}")
        self.capabilities = apply_capabilities(offered_capabilities(dir(module)), declared)

    def params(self, **fields: Any) -> Any:
        """The module's own ``SamplingParams`` (tiers build parameters through this), or the
        reference's when the module has none (it then takes the reference's params object)."""
        from spec_verify.reference import SamplingParams

        return getattr(self.module, "SamplingParams", SamplingParams)(**fields)

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

        def call() -> tuple[list[int], int]:
            result = self._owning_inputs(
                "verify_draft", self.module.verify_draft,
                target_logits, list(draft_ids), draft_probs, p, list(history), rng, list(prompt),
            )  # fmt: skip
            # Read the result under the same time limit: an endless iterable is a hang too.
            return check_verify_result(self.name, result, m, V)

        return self._guarded("verify_draft", call)

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
        are the emitted ones) under the time limit."""
        V = np.shape(target_logits)[-1]

        def call() -> tuple[list[int], list[int]]:
            result = self._owning_inputs(
                "verify_tree", self.module.verify_tree,
                target_logits, list(parents), list(token_ids), draft_probs, p, list(history),
                rng, list(prompt), rule=rule,
            )  # fmt: skip
            return check_tree_result(self.name, result, parents, token_ids, V)

        return self._guarded("verify_tree", call)

    def sampling_distribution(
        self,
        logits: NDArray[np.float64],
        p: Any,
        history: Sequence[int] = (),
        prompt: Sequence[int] = (),
    ) -> NDArray[np.float64]:
        result = self._guarded(
            "sampling_distribution",
            self._owning_inputs,
            "sampling_distribution",
            self.module.sampling_distribution,
            logits,
            p,
            list(history),
            list(prompt),
        )
        return np.asarray(result, dtype=np.float64)

    def prompt_lookup(
        self, ctx: Sequence[int], k: int, max_ngram: int = 3, min_ngram: int = 1
    ) -> list[int]:
        draft = self.module.PromptLookupDraft(max_ngram=max_ngram, min_ngram=min_ngram)
        ids, _ = self._guarded("prompt_lookup", draft.propose, list(ctx), k, None)
        return [int(i) for i in ids]

    def pcg32_uniforms(self, seed: int, n: int) -> list[float]:
        def call() -> list[float]:
            rng = self.module.request_rng(seed)
            return [float(rng.random()) for _ in range(n)]

        return self._guarded("request_rng", call)

    def request_rng(self, seed: int) -> Any | None:
        if "pcg32" not in self.capabilities:
            return None
        return self._guarded("request_rng", self.module.request_rng, seed)

    def generation_module(self) -> Any | None:
        return self.module if "generation" in self.capabilities else None

    def own_attribute(self, name: str) -> Any | None:
        return getattr(self.module, name, None)

    def _guarded(self, call: str, fn: Callable[..., T], *args: Any) -> T:
        return self.call_guarded(call, self.timeout, fn, *args)

    def _owning_inputs(self, call: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` on the implementation's own copies of the array and list
        arguments, compared with the caller's after the call (``_remote.call_checked``, as in
        a worker): a write into an input is its ``ImplementationError`` naming the argument,
        and the harness's arrays are never changed."""
        from spec_verify.adapters._remote import _InputChanged, call_checked

        try:
            value: T = call_checked(fn, list(args), kwargs, call)
        except _InputChanged as exc:
            raise ImplementationError(self.name, call, str(exc)) from None
        return value

    def call_guarded(
        self,
        call: str,
        timeout: float,
        fn: Callable[..., T],
        *args: Any,
        passthrough: tuple[type[BaseException], ...] = (),
    ) -> T:
        """``fn(*args)`` under ``guarded_call`` with ``timeout``; a call that hung once is not
        made again in this run (each further hang would cost the whole limit again)."""
        if call in self._hung:
            raise ImplementationError(
                self.name,
                call,
                f"is not called again: it hung earlier in this run ({self._hung[call]})",
            )
        limit, by_budget = self.call_limit(call, timeout)
        try:
            return guarded_call(self.name, call, limit, fn, *args, passthrough=passthrough)
        except ImplementationError as exc:
            if "did not return within" in exc.reason:
                if by_budget:
                    raise BudgetExhausted(self.name, call, self.budget) from None
                self._hung[call] = exc.reason
            raise

    def __repr__(self) -> str:
        return f"PythonImplementation({self.name!r})"


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


def check_tree_result(
    name: str, result: Any, parents: Sequence[int], token_ids: Sequence[int], V: int
) -> tuple[list[int], list[int]]:
    """``(emitted_ids, accepted_nodes)`` from ``verify_tree``, or ``ImplementationError``: the
    nodes must be a path down from the root and carry the emitted tokens before the last."""
    try:
        emitted, nodes = result
        emitted = [operator.index(t) for t in emitted]
        nodes = [operator.index(i) for i in nodes]
    except (TypeError, ValueError) as exc:
        raise ImplementationError(
            name, "verify_tree", f"returned {result!r}: {exc} (the contract returns a list of "
            "int token ids and a list of int node indices)",
        ) from exc
    if len(emitted) != len(nodes) + 1:
        raise ImplementationError(name, "verify_tree", f"returned {len(emitted)} ids for "
                                  f"{len(nodes)} accepted nodes; it must be one more")
    parent = -1
    for i, node in enumerate(nodes):
        if not 0 <= node < len(parents) or parents[node] != parent:
            raise ImplementationError(
                name, "verify_tree", f"accepted nodes {nodes}: node {node} is not a child of "
                f"{'the root' if parent == -1 else f'node {parent}'}; they must be a path down "
                "from the root")
        if token_ids[node] != emitted[i]:
            raise ImplementationError(
                name, "verify_tree", f"emitted {emitted[i]} at position {i} for node {node}, "
                f"which carries token {token_ids[node]}")
        parent = node
    bad = [t for t in emitted if not 0 <= t < V]
    if bad:
        raise ImplementationError(name, "verify_tree", f"returned ids out of [0, {V}): {bad}")
    return emitted, nodes
