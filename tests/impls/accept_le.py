"""Accepts a draft when ``u <= p(x)/q(x)`` (as transformers' ``_speculative_sampling`` does with
``r <= p/q``) instead of the contract's ``u * q(x) < p(x)``: exact in law, since ``u`` equals
the ratio with probability 0, but at ``u = 0.0`` (which float32 generators return with
probability 2^-24) it accepts a token the target rules out."""

from __future__ import annotations

from typing import Any

from spec_verify.reference import SamplingParams
from spec_verify.reference.sampling import sample_with

from ._scaffold import Row, contract_bonus, residual, verify

__all__ = ["SamplingParams", "verify_draft"]


def _step(p: Row, q: Row, x: int, rng: Any) -> tuple[int, bool]:
    u_accept = rng.random()
    u_resample = rng.random()
    if u_accept <= p[x] / q[x]:
        return x, True
    return sample_with(residual(p, q), u_resample), False


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    return verify(_step, contract_bonus, target_logits, draft_ids, draft_probs, p, history,
                  prompt, rng)
