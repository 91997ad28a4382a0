"""Driving an implementation from a tier: parameters, uniform sources, generation pieces.

The properties and the statistical tier see an implementation only through the
``Implementation`` protocol. What the protocol leaves open, they settle here, in one place:

- **Parameters**: ``impl.params(**fields)`` (the protocol's one builder).
- **Uniform sources**: for an implementation with its own ``request_rng``, its PCG32 stream;
  otherwise a numpy ``Generator`` (anything with ``random()`` is a uniform source).
- **Sampled rounds**: ``SampledVerifier`` runs i.i.d. ``verify_draft`` rounds for a sampling
  tier; the C ABI adapter gets them in batches (one message per batch, not one per round), each
  round from the library's own PCG32 stream under a fresh seed.
- **Generation**: the implementation's ``speculative_generate``, ``generate`` and drafts when
  its module has them, run on the reference's models, which check the cache on every pass and
  log every pass (they are the harness's instruments, not the implementation under test).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from types import FunctionType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.adapters._calls import Call, Draws, UniformPlan
from spec_verify.adapters._generation_request import GENERATION_TIMEOUT
from spec_verify.adapters._implementations import Implementation
from spec_verify.errors import InvalidArgument

__all__ = [
    "GuardedModule",
    "SampledVerifier",
    "VerifyRequest",
    "generation_module",
    "implementation_rng",
    "module_attr",
]




def implementation_rng(impl: Implementation, seed_sequence: np.random.SeedSequence) -> Any:
    """The uniform source ``impl`` draws from in a tier, seeded from ``seed_sequence``.

    An implementation with its own request stream (``impl.request_rng``) gets it, seeded with
    64 bits of the sequence; anything else gets a numpy ``Generator`` (its ``random()`` is a
    uniform source). Either way the run is reproducible from the root seed.
    """
    seed = int(seed_sequence.generate_state(1, dtype=np.uint64)[0])
    own = impl.request_rng(seed)
    return own if own is not None else np.random.Generator(np.random.PCG64(seed_sequence))


def generation_module(impl: Implementation) -> GuardedModule:
    """The module holding ``speculative_generate`` and ``generate`` for the generation checks,
    its functions under a time limit (``GuardedModule``).

    Raises:
        InvalidArgument: ``impl`` does not offer the ``generation`` capability.
    """
    module = impl.generation_module()
    if module is None:
        raise InvalidArgument(
            "impl",
            impl.name,
            "does not offer generation (speculative_generate, generate, SamplingParams)",
            "generation checks need a Python implementation module",
        )
    return GuardedModule(impl, module)


class GuardedModule:
    """An implementation's module whose plain functions run under ``guarded_call``: a hang,
    a crash or ``sys.exit`` in ``speculative_generate`` or ``generate`` is the
    implementation's failure with a time limit (``GENERATION_TIMEOUT``), not a hung harness;
    a function that hung once is not called again (the implementation keeps that record).
    Classes (drafts, models) are returned as they are: their methods run inside those calls.
    """

    def __init__(
        self, impl: Implementation, module: Any, timeout: float = GENERATION_TIMEOUT
    ) -> None:
        self.impl = impl
        self.module = module
        self.timeout = timeout

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.module, name)
        if not isinstance(value, FunctionType):
            return value
        from spec_verify.reference import (
            CacheMismatch,  # the instrument models' verdict, not a crash
        )

        @functools.wraps(value)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            bound = functools.partial(value, *args, **kwargs)
            return self.impl.call_guarded(
                name, self.timeout, bound, passthrough=(CacheMismatch,)
            )

        return guarded

    def __repr__(self) -> str:
        return f"GuardedModule({self.module.__name__!r})"


def module_attr(impl: Implementation, name: str) -> Any:
    """The implementation's own ``name`` (``impl.own_attribute``) if it has one, else the
    reference's.

    Drafts and the n-gram model come from the implementation when it has its own (their bugs
    are its bugs); the tiers take models and the tokenizer from the reference always, because
    they are the instruments that check the cache and log every pass.
    """
    own = impl.own_attribute(name)
    if own is not None:
        return own
    from spec_verify import reference

    return getattr(reference, name)


@dataclass(frozen=True)
class VerifyRequest:
    """The arguments of one ``verify_draft`` round, but for the parameters and the source."""

    target_logits: NDArray[np.float64]
    draft_ids: list[int]
    draft_probs: NDArray[np.float64] | None
    history: Sequence[int] = ()
    prompt: Sequence[int] = ()


# The largest seed handed to a library's own stream (the C ABI takes a uint64; staying below
# 2**63 keeps it a non-negative int64 too).
_SEED_BOUND = 2**63


class SampledVerifier:
    """Independent ``verify_draft`` rounds with one set of sampling parameters, for a tier that
    samples outcomes (the statistical checks).

    The rounds go to ``Implementation.call_many``. Planned ``LIVE`` (a Python
    implementation), every round draws from one uniform source (``implementation_rng``);
    planned ``SEEDED`` (``batch_stream``: the C ABI adapter), the rounds go in one message per
    call of this object, each round from the library's *own* PCG32 stream seeded with a fresh
    63-bit seed drawn from ``seeds``: that is the generator a port
    runs in production, and one message instead of one per round makes the tier about ten
    times faster across the process boundary. Rounds stay independent either way; a run is
    reproducible from ``seeds``.

    Raises (from ``__call__``): whatever one round raises, as a direct call would
    (``ValueError`` subclasses for rejected input, ``ImplementationError`` for a crash).
    """

    def __init__(self, impl: Implementation, params: Any, seeds: np.random.SeedSequence) -> None:
        self.impl = impl
        self.params = params
        self.seeded = impl.batch_stream is Draws.SEEDED
        if self.seeded:
            self._seeds = np.random.Generator(np.random.PCG64(seeds))
            self._rng: Any = None
        else:
            self._rng = implementation_rng(impl, seeds)

    def __call__(self, requests: Sequence[VerifyRequest]) -> list[tuple[list[int], int]]:
        """``(emitted_ids, n_accepted)`` of each round, in order."""
        plans: list[UniformPlan]
        if not self.seeded:
            plans = [UniformPlan.live()] * len(requests)
        elif float(self.params.temperature) == 0.0:
            plans = [UniformPlan.forbidden()] * len(requests)
        else:
            seeds = self._seeds.integers(0, _SEED_BOUND, size=len(requests), dtype=np.int64)
            plans = [UniformPlan.seeded(int(seed)) for seed in seeds]
        calls = [
            Call.verify(r.target_logits, r.draft_ids, r.draft_probs, self.params, r.history,
                        r.prompt, plan)
            for r, plan in zip(requests, plans, strict=True)
        ]  # fmt: skip
        outcomes = self.impl.call_many(calls, self._rng)
        return [o.unwrap(self.impl.name, "verify_draft") for o in outcomes]
