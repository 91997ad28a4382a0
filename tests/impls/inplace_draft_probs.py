"""Renormalises the caller's draft probabilities in place (``draft_probs.div_(sums)``, the
in-place ``div_`` of vLLM PR #16952, fixed there by dividing a clone), then verifies as the
reference does. The rows it is given sum to 1 within the contract's tolerance, so its output
is the reference's on them; the caller's draft buffer is changed all the same."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec_verify.reference import SamplingParams
from spec_verify.reference import verify_draft as _reference_verify_draft

__all__ = ["SamplingParams", "verify_draft"]


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    if draft_probs is not None:
        q = np.asarray(draft_probs)
        sums = q.sum(axis=1, keepdims=True)
        if np.all(np.abs(sums - 1.0) <= 1e-6):  # bad rows are left for the reference to refuse
            q /= sums  # the bug: the caller's array, not a copy
    return _reference_verify_draft(target_logits, draft_ids, draft_probs, p, history, rng,
                                   prompt)
