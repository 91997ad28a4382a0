"""Block verification (the reference rule, reference/block.py), correct: lossless, and it
accepts more than the token rule (its round-length law is not the contract's)."""

from typing import Any

from spec_verify.reference import SamplingParams
from spec_verify.reference.block import verify_block

__all__ = ["SamplingParams", "verify_draft"]


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    return verify_block(target_logits, draft_ids, draft_probs, p, history, rng, prompt)
