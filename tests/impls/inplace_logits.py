"""Rewrites the caller's -inf logits in place to a large finite value (a "sanitising" step an
engine may run on a logits buffer it owns), then verifies as the reference does. Its output is
the reference's (``exp(-1e30 - max)`` is 0), so only a check on the inputs can see it: before
issue 26 a worker passed it with exit 0 once the module made its read-only view writable, as
``torch.from_numpy`` does. Its caller's buffer is changed all the same."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec_verify.reference import SamplingParams
from spec_verify.reference import verify_draft as _reference_verify_draft

__all__ = ["SamplingParams", "verify_draft"]


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    logits = np.asarray(target_logits)
    logits[np.isneginf(logits)] = -1e30  # the bug: the caller's array, not a copy
    return _reference_verify_draft(logits, draft_ids, draft_probs, p, history, rng, prompt)
