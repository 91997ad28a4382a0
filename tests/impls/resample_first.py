"""Exact in distribution, another draw order: ``u_resample`` is drawn before ``u_accept``
(the seed's pitfall 4, mutant s04): a parity bug, never an exactness one."""

from __future__ import annotations

from typing import Any

from spec_verify.reference import SamplingParams
from spec_verify.reference.sampling import sample_with

from ._scaffold import Row, contract_bonus, residual, verify

__all__ = ["SamplingParams", "verify_draft"]


def _step(p: Row, q: Row, x: int, rng: Any) -> tuple[int, bool]:
    u_resample = rng.random()
    u_accept = rng.random()
    if u_accept * q[x] < p[x]:
        return x, True
    return sample_with(residual(p, q), u_resample), False


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    return verify(_step, contract_bonus, target_logits, draft_ids, draft_probs, p, history,
                  prompt, rng)
