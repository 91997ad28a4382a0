"""Hides a rule in an *evidenced* draw: ``u_accept[0]`` (draw 0), whose keep and reject cells
give different outcomes at its node. When every draft is kept, the bonus is the last token
``T`` and ``u_accept[0] < 1/20``, it emits ``T - 1``: wrong by
``(1/20) a_1 ... a_(m-1) p_m(T)`` (with ``a_0 >= 1/20``; ``a_i`` the acceptance probabilities).
A check that audits only the draws that showed no effect at their node passes it."""

from __future__ import annotations

from spec_verify.reference import SamplingParams

from ._hidden import hiding_verify_draft

__all__ = ["SamplingParams", "verify_draft"]


def _rule(draws: list[float]) -> bool:
    return draws[0] < 0.05


verify_draft = hiding_verify_draft(_rule, 1)
