"""Exact in distribution, with no greedy path (as samplers that only verify sampled drafts
are): temperature 0 is refused. It declares so; the greedy checks then do not apply."""

from __future__ import annotations

from typing import Any

from spec_verify import reference
from spec_verify.reference import SamplingParams

__all__ = ["SPEC_VERIFY_CAPABILITIES", "SamplingParams", "verify_draft"]

SPEC_VERIFY_CAPABILITIES = {"greedy": False}


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    if p.temperature == 0:
        raise ValueError("temperature: this sampler has no greedy path (sampled only)")
    return reference.verify_draft(target_logits, draft_ids, draft_probs, p, history, rng, prompt)
