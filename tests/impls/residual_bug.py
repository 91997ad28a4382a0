"""Pitfall 3 of the seed: after a rejection, resample from ``p`` instead of the residual."""

from __future__ import annotations

from typing import Any

from spec_verify.reference import SamplingParams
from spec_verify.reference.sampling import sample_with

from ._scaffold import Row, contract_bonus, verify

__all__ = ["SamplingParams", "verify_draft"]


def _step(p: Row, q: Row, x: int, rng: Any) -> tuple[int, bool]:
    u_accept = rng.random()
    u_resample = rng.random()
    if u_accept * q[x] < p[x]:
        return x, True
    return sample_with(p, u_resample), False  # the bug: p, not max(0, p - q) / Z


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    return verify(_step, contract_bonus, target_logits, draft_ids, draft_probs, p, history,
                  prompt, rng)
