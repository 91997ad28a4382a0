"""Block verification stopping with probability ``w_i`` (the token rule's) instead of
``R_i / (R_i + 1 - w_i)``: a wrong stopping probability."""

from typing import Any

from spec_verify.reference import SamplingParams

from ._block import verify_block_variant

__all__ = ["SamplingParams", "verify_draft"]


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    return verify_block_variant(target_logits, draft_ids, draft_probs, p, history, rng,
                                prompt, stop_weight_rule=False)
