"""Exact in distribution, but driven by its own generator: one uniform from the injected source
seeds a numpy ``Generator``, and the contract's loop draws every decision from that. The output
is a function of the first uniform, yet it changes many times inside any one cell of it."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec_verify import reference
from spec_verify.reference import SamplingParams

from ._scaffold import contract_bonus, contract_step, verify

__all__ = ["SamplingParams", "verify_draft"]



def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    if p.temperature == 0:  # greedy: the reference's path, which draws nothing
        return reference.verify_draft(target_logits, draft_ids, draft_probs, p, history, rng,
                                      prompt)
    own = np.random.default_rng(int(rng.random() * 2**53))
    return verify(contract_step, contract_bonus, target_logits, draft_ids, draft_probs, p,
                  history, prompt, own)
