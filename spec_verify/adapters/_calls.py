"""The one batching path's data: a call, the plan of its uniforms, and its outcome.

A tier describes each call it wants as a ``Call`` (the method, its arguments, a
``UniformPlan``) and hands a list of them to ``Implementation.call_many``; every adapter takes
the same list. The plan is data, so an adapter whose calls cross a process boundary sends the
calls together and rebuilds each source next to the implementation:

- ``SCRIPTED``: these uniforms, in order, then ``TooManyDraws`` (a ``ScriptedUniforms``);
- ``SEEDED``: the implementation's own request stream seeded with ``seed`` (the library's
  PCG32 in a C ABI port: the generator a port runs in production);
- ``FORBIDDEN``: no draw allowed (greedy verification);
- ``LIVE``: the uniform source given to ``call_many`` (one stream the calls share in order).

Each call comes back as a ``CallOutcome``: ``OK`` with its value (checked as the single call's
is) or ``ERR`` with the exception it raised, and how many uniforms it drew when that is known.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

METHODS = ("verify_draft", "verify_tree", "sampling_distribution", "prompt_lookup")

__all__ = ["METHODS", "Call", "CallOutcome", "Draws", "Outcome", "UniformPlan"]


class Draws(enum.Enum):
    """Where a call's uniforms come from (``UniformPlan``)."""

    SCRIPTED = "scripted"
    SEEDED = "seeded"
    FORBIDDEN = "forbidden"
    LIVE = "live"


@dataclass(frozen=True)
class UniformPlan:
    """Where one call's uniforms come from, as data: build one with ``scripted``, ``seeded``,
    ``forbidden`` or ``live``."""

    draws: Draws
    values: tuple[float, ...] = ()
    seed: int = 0

    @classmethod
    def scripted(cls, values: Sequence[float]) -> UniformPlan:
        return cls(Draws.SCRIPTED, tuple(float(u) for u in values))

    @classmethod
    def seeded(cls, seed: int) -> UniformPlan:
        return cls(Draws.SEEDED, seed=int(seed))

    @classmethod
    def forbidden(cls) -> UniformPlan:
        return cls(Draws.FORBIDDEN)

    @classmethod
    def live(cls) -> UniformPlan:
        return cls(Draws.LIVE)


class Outcome(enum.Enum):
    """How one call ended: ``OK`` with its value, or ``ERR`` with the exception it raised."""

    OK = "ok"
    ERR = "err"


@dataclass(frozen=True)
class CallOutcome:
    """One call's outcome: ``OK`` and its value, or ``ERR`` and the exception (or, from the
    C ABI worker, the name of a failure the adapter resolves); ``drawn`` is how many uniforms
    the call drew, ``None`` when not known."""

    outcome: Outcome
    value: Any
    drawn: int | None = None

    @classmethod
    def ok(cls, value: Any, drawn: int | None = None) -> CallOutcome:
        return cls(Outcome.OK, value, drawn)

    @classmethod
    def err(cls, error: Any, drawn: int | None = None) -> CallOutcome:
        return cls(Outcome.ERR, error, drawn)

    @property
    def is_ok(self) -> bool:
        return self.outcome is Outcome.OK

    def unwrap(self, impl: str, call: str) -> Any:
        """The value; the exception when the call raised (an ``ImplementationError`` naming
        ``impl`` and ``call`` when the failure is not an exception)."""
        if self.outcome is Outcome.OK:
            return self.value
        if isinstance(self.value, BaseException):
            raise self.value
        from spec_verify.errors import ImplementationError

        raise ImplementationError(impl, call, f"failed: {self.value!r}")


@dataclass(frozen=True)
class Call:
    """One call of a batch: ``method`` (``verify_draft``, ``verify_tree``,
    ``sampling_distribution``, ``prompt_lookup``), its keyword arguments by the contract's
    names (``p`` the implementation's sampling parameters; no uniform source) and the plan
    of its uniforms."""

    method: str
    args: Mapping[str, Any]
    plan: UniformPlan = field(default_factory=UniformPlan.forbidden)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            from spec_verify.errors import InvalidArgument

            raise InvalidArgument("method", self.method, f"must be one of {', '.join(METHODS)}",
                                  "batch another method's calls one by one")

    @classmethod
    def verify(
        cls,
        target_logits: Any,
        draft_ids: Sequence[int],
        draft_probs: Any,
        p: Any,
        history: Sequence[int],
        prompt: Sequence[int],
        plan: UniformPlan,
    ) -> Call:
        return cls("verify_draft", {
            "target_logits": target_logits, "draft_ids": draft_ids, "draft_probs": draft_probs,
            "p": p, "history": history, "prompt": prompt,
        }, plan)  # fmt: skip

    @classmethod
    def tree(
        cls,
        target_logits: Any,
        parents: Sequence[int],
        token_ids: Sequence[int],
        draft_probs: Any,
        p: Any,
        history: Sequence[int],
        prompt: Sequence[int],
        plan: UniformPlan,
        rule: str = "with_replacement",
    ) -> Call:
        return cls("verify_tree", {
            "target_logits": target_logits, "parents": parents, "token_ids": token_ids,
            "draft_probs": draft_probs, "p": p, "history": history, "prompt": prompt,
            "rule": rule,
        }, plan)  # fmt: skip

    @classmethod
    def distribution(
        cls, logits: Any, p: Any, history: Sequence[int], prompt: Sequence[int]
    ) -> Call:
        return cls("sampling_distribution",
                   {"logits": logits, "p": p, "history": history, "prompt": prompt})

    @classmethod
    def lookup(cls, ctx: Sequence[int], k: int, max_ngram: int, min_ngram: int) -> Call:
        return cls("prompt_lookup",
                   {"ctx": ctx, "k": k, "max_ngram": max_ngram, "min_ngram": min_ngram})
