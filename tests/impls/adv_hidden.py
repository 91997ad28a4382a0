"""Hides a rule in an *unused* draw: ``u_resample[0]`` (draw 1), which the contract draws and
ignores after an acceptance. When every draft is kept, the bonus is the last token ``T`` and
``u_resample[0] < 1/4``, it emits ``T - 1``: wrong by ``(1/4) a_0 ... a_(m-1) p_m(T)``."""

from __future__ import annotations

from typing import Any

from spec_verify.reference import SamplingParams

from ._hidden import verify_hiding

__all__ = ["SamplingParams", "verify_draft"]


def _rule(draws: list[float]) -> bool:
    return draws[1] < 0.25


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    return verify_hiding(_rule, 1, target_logits, draft_ids, draft_probs, p, history, rng,
                         prompt)
