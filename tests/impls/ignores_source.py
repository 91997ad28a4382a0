"""Exact in distribution, but it never touches the injected source: every decision comes from a
generator of its own, seeded once at import (as a sampler with a global torch generator does)."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec_verify.reference import SamplingParams

from ._scaffold import contract_bonus, contract_step, verify

__all__ = ["SamplingParams", "verify_draft"]

_OWN = np.random.default_rng(20261201)


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    return verify(contract_step, contract_bonus, target_logits, draft_ids, draft_probs, p,
                  history, prompt, _OWN)
