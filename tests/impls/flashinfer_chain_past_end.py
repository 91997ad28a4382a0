"""``flashinfer_chain`` whose uninitialised id from an all-zero residual is V (one past the
vocabulary: a search that found no cumulative sum reaching u)."""

from __future__ import annotations

from typing import Any

from spec_verify.reference import SamplingParams

from ._open_closed import SPEC_VERIFY_CAPABILITIES, bonus
from ._scaffold import verify
from .flashinfer_chain import strict_step

__all__ = ["SPEC_VERIFY_CAPABILITIES", "SamplingParams", "verify_draft"]

_STEP = strict_step(lambda V: V)


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    return verify(_STEP, bonus, target_logits, draft_ids, draft_probs, p, history, prompt, rng)
