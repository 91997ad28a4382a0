"""The reference's decisions, plus one uniform drawn and ignored at the end of every call."""

from __future__ import annotations

from typing import Any

from spec_verify.reference import SamplingParams
from spec_verify.reference import verify_draft as _reference

__all__ = ["SamplingParams", "verify_draft"]


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    emitted, n_accepted = _reference(target_logits, draft_ids, draft_probs, p, history, rng,
                                     prompt)
    rng.random()
    return list(emitted), int(n_accepted)
