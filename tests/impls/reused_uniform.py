"""The contract's rule with one acceptance uniform for every position of a round (a uniform
reused across a request's positions): each position alone is right, so the first token's law
is the target's; the positions' decisions are correlated, which moves the joint law."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec_verify.reference import SamplingParams, sampling_distribution
from spec_verify.reference import verify_draft as reference_verify
from spec_verify.reference.sampling import sample_with

from ._scaffold import residual

__all__ = ["SamplingParams", "verify_draft"]


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    rows = np.asarray(target_logits, dtype=np.float64)
    V = rows.shape[1]
    kept: list[int] = []
    if p.temperature == 0.0:  # greedy is the contract's (the bug is in sampling)
        return reference_verify(target_logits, draft_ids, draft_probs, p, history, rng, prompt)
    u_accept = rng.random()  # the bug: drawn once, used at every position
    for i, x in enumerate(draft_ids):
        p_i = sampling_distribution(rows[i], p, [*history, *kept], list(prompt))
        q_i = np.eye(V)[int(x)] if draft_probs is None else np.asarray(draft_probs)[i]
        u_resample = rng.random()
        if u_accept * q_i[int(x)] < p_i[int(x)]:
            kept.append(int(x))
            continue
        return [*kept, int(sample_with(residual(p_i, q_i), u_resample))], len(kept)
    last = sampling_distribution(rows[len(kept)], p, [*history, *kept], list(prompt))
    return [*kept, int(sample_with(last, rng.random()))], len(kept)
