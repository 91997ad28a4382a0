"""The contract's rule, except that the bonus token (all drafts kept) is drawn from the first
position's row instead of the row after the last draft (a vLLM-style bonus from the wrong
row). With one draft and a target whose rows agree it hides; the first token never shows it."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec_verify.reference import SamplingParams, sampling_distribution
from spec_verify.reference import verify_draft as reference_verify
from spec_verify.reference.sampling import sample_with

from ._scaffold import contract_step

__all__ = ["SamplingParams", "verify_draft"]


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    rows = np.asarray(target_logits, dtype=np.float64)
    V = rows.shape[1]
    kept: list[int] = []
    if p.temperature == 0.0:  # greedy is the contract's (the bug is in sampling)
        return reference_verify(target_logits, draft_ids, draft_probs, p, history, rng, prompt)
    for i, x in enumerate(draft_ids):
        p_i = sampling_distribution(rows[i], p, [*history, *kept], list(prompt))
        q_i = np.eye(V)[int(x)] if draft_probs is None else np.asarray(draft_probs)[i]
        token, accepted = contract_step(p_i, q_i, int(x), rng)
        if not accepted:
            return [*kept, token], len(kept)
        kept.append(token)
    wrong = sampling_distribution(rows[0], p, list(history), list(prompt))  # the bug: row 0
    return [*kept, int(sample_with(wrong, rng.random()))], len(kept)
