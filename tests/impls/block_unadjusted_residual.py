"""Block verification with the token rule's unadjusted residual ``max(p - q, 0)`` where the
weighted one ``max(w_i p - q, 0)`` belongs (the vllm-ascend #7807/#7808 port). The first
token's law is unchanged when the round stops at 0; later positions lean."""

from typing import Any

from spec_verify.reference import SamplingParams

from ._block import verify_block_variant

__all__ = ["SamplingParams", "verify_draft"]


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    return verify_block_variant(target_logits, draft_ids, draft_probs, p, history, rng,
                                prompt, residual_weight=False)
