"""A lossless tree sampler that accepts nothing: whatever the tree, it emits one token drawn
from the target's root row with its own generator. Its output law is the target's (every law
check passes it) but it wastes every draft: the efficiency check ``tree.acceptance_b2_d2``
must fail it (``tests/tiers/test_statistical_trees.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spec_verify import reference
from spec_verify.reference import SamplingParams

from .own_tree import SPEC_VERIFY_CAPABILITIES, own_randomness, verify_draft

__all__ = ["SPEC_VERIFY_CAPABILITIES", "SamplingParams", "verify_draft", "verify_tree"]


def _root_only(target_logits: Any, parents: Sequence[int], token_ids: Sequence[int],
               draft_probs: Any, p: SamplingParams, history: Sequence[int], rng: Any,
               prompt: Sequence[int] = (), rule: str = "with_replacement",
               **thresholds: float) -> tuple[list[int], list[int]]:
    row = reference.sampling_distribution(target_logits[0], p, history, prompt)
    return [reference.sample(row, rng)], []


verify_tree = own_randomness(_root_only)
