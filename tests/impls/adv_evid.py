"""Hides a rule in an *evidenced* draw: ``u_accept[0]`` (draw 0), whose keep and reject cells
give different outcomes at its node. When every draft is kept, the bonus is the last token
``T`` and ``u_accept[0] < 1/20``, it emits ``T - 1``: wrong by
``(1/20) a_1 ... a_(m-1) p_m(T)`` (with ``a_0 >= 1/20``; ``a_i`` the acceptance probabilities).
A check that audits only the draws that showed no effect at their node passes it."""

from __future__ import annotations

from typing import Any

from spec_verify.reference import SamplingParams

from ._hidden import verify_hiding

__all__ = ["SamplingParams", "verify_draft"]


def _rule(draws: list[float]) -> bool:
    return draws[0] < 0.05


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    return verify_hiding(_rule, 1, target_logits, draft_ids, draft_probs, p, history, rng,
                         prompt)
