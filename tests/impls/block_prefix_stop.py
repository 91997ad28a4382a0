"""Block verification read as a contiguous prefix: the backward search stops at its first
failed position instead of going on to shorter blocks (the misreading a review demanded)."""

from typing import Any

from spec_verify.reference import SamplingParams

from ._block import verify_block

__all__ = ["SamplingParams", "verify_draft"]


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    return verify_block(target_logits, draft_ids, draft_probs, p, history, rng, prompt,
                        stop_at_first_failure=True)
