"""vLLM's rejection sampler's test as the issue 23 notes quote it: accept iff
``target_prob / draft_prob >= uniform`` on [0, 1) uniforms. Exact in law (the ratio equals u
with probability 0), but at ``u = 0.0`` (``torch.rand`` on float32: probability 2^-24 per
draw) it accepts a drafted token the target rules out (``p(x) = 0``, ratio 0 >= 0)."""

from __future__ import annotations

from typing import Any

from spec_verify.reference import SamplingParams
from spec_verify.reference.sampling import sample_with

from ._scaffold import Row, contract_bonus, residual, verify

__all__ = ["SamplingParams", "verify_draft"]


def _step(p: Row, q: Row, x: int, rng: Any) -> tuple[int, bool]:
    uniform = rng.random()
    u_resample = rng.random()
    if p[x] / q[x] >= uniform:
        return x, True
    return sample_with(residual(p, q), u_resample), False


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    return verify(_step, contract_bonus, target_logits, draft_ids, draft_probs, p, history,
                  prompt, rng)
