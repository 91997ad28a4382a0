"""Block verification read as a contiguous prefix: the forward scan stops at its
first failed position instead of keeping the longest block whose stop test passes (the
misreading a review demanded)."""

from typing import Any

from spec_verify.reference import SamplingParams

from ._block import verify_block_variant

__all__ = ["SamplingParams", "verify_draft"]


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    return verify_block_variant(target_logits, draft_ids, draft_probs, p, history, rng,
                                prompt, stop_at_first_failure=True)
