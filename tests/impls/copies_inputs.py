"""The honest control of ``inplace_logits`` and ``inplace_draft_probs``: the same in-place work
(-inf logits to a large finite value, draft rows renormalised), done on copies of its own.
The contract tier's ``inputs`` check must pass it: writing is fine, into the caller's arrays
is not."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec_verify.reference import SamplingParams
from spec_verify.reference import verify_draft as _reference_verify_draft

__all__ = ["SamplingParams", "verify_draft"]


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    logits = np.array(target_logits, dtype=np.float64)  # a copy of its own
    if logits.ndim == 2 and np.isfinite(logits).any(axis=1).all():  # all -inf must still raise
        logits[np.isneginf(logits)] = -np.inf  # -inf stays -inf: only the write is shown
        logits /= 1.0
    q = draft_probs
    if draft_probs is not None:
        q = np.array(draft_probs, dtype=np.float64)  # a copy of its own
        if q.ndim == 2 and q.size:
            sums = q.sum(axis=1, keepdims=True)
            if np.all(np.abs(sums - 1.0) <= 1e-6):
                q /= sums
    return _reference_verify_draft(logits, draft_ids, q, p, history, rng, prompt)
