"""Accepts with probability ``0.9 * min(1, p(x)/q(x))``: breakpoints off every exact cell."""

from __future__ import annotations

from typing import Any

from spec_verify.reference import SamplingParams
from spec_verify.reference.sampling import sample_with

from ._scaffold import Row, contract_bonus, residual, verify

__all__ = ["SamplingParams", "verify_draft"]


def _step(p: Row, q: Row, x: int, rng: Any) -> tuple[int, bool]:
    u_accept = rng.random()
    u_resample = rng.random()
    if u_accept < 0.9 * min(1.0, float(p[x] / q[x])):
        return x, True
    return sample_with(residual(p, q), u_resample), False


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    return verify(_step, contract_bonus, target_logits, draft_ids, draft_probs, p, history,
                  prompt, rng)
