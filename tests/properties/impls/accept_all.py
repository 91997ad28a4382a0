"""The reference with a planted bug: the draft treated as if it sampled from the target.

Every drafted token is kept (greedy and sampled, whatever ``p(x)`` is), as if the draft were a
sample of the target; the draw order is kept (two uniforms per position, one for the bonus),
so only the decisions are wrong. Loaded as ``python:tests.properties.impls.accept_all``; the
properties and the statistical tier must fail on it, naming what broke.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Any

from spec_verify.reference import *  # noqa: F403 (the rest of the contract, unchanged)
from spec_verify.reference import SamplingParams, sample, sampling_distribution
from spec_verify.reference import propose_and_verify as _reference_propose_and_verify
from spec_verify.reference import speculative_generate as _reference_speculative_generate


def verify_draft(
    target_logits: Any,
    draft_ids: Sequence[int],
    draft_probs: Any,
    p: SamplingParams,
    history: Sequence[int],
    rng: Any,
    prompt: Sequence[int] = (),
) -> tuple[list[int], int]:
    kept = [int(x) for x in draft_ids]
    if not p.greedy:
        for _ in kept:
            rng.random()  # u_accept, ignored: the bug
            rng.random()  # u_resample
    dist = sampling_distribution(target_logits[len(kept)], p, [*history, *kept], prompt)
    bonus = sample(dist, None if p.greedy else rng)
    return [*kept, bonus], len(kept)


def _with_this_verify(function: Any) -> Any:
    """The reference's generation loop (or own-stream round), calling this module's
    ``verify_draft``."""
    scope = {**function.__globals__, "verify_draft": verify_draft}
    return types.FunctionType(
        function.__code__, scope, function.__name__, function.__defaults__, function.__closure__
    )


speculative_generate = _with_this_verify(_reference_speculative_generate)
propose_and_verify = _with_this_verify(_reference_propose_and_verify)
