"""A correct sampler on (0, 1] uniforms (the passing control of ``flashinfer_chain``): accepts
iff ``u <= p(x)/q(x)`` (as ``u * q(x) <= p(x)``), so it accepts with probability
``min(1, p(x)/q(x))``, always where ``p(x) >= q(x)`` (``u = 1.0`` included) and never where
``p(x) = 0`` (``u > 0``); an all-zero residual (only by rounding) falls back to p."""

from __future__ import annotations

from typing import Any

from spec_verify.reference import SamplingParams

from ._open_closed import SPEC_VERIFY_CAPABILITIES, bonus, residual_or_none, sample_open_closed
from ._scaffold import Row, verify

__all__ = ["SPEC_VERIFY_CAPABILITIES", "SamplingParams", "verify_draft"]


def _step(p: Row, q: Row, x: int, rng: Any) -> tuple[int, bool]:
    u_accept = rng.random()
    u_resample = rng.random()
    if u_accept * q[x] <= p[x]:
        return x, True
    d = residual_or_none(p, q)
    return sample_open_closed(p if d is None else d, u_resample), False


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    return verify(_step, bonus, target_logits, draft_ids, draft_probs, p, history, prompt, rng)
